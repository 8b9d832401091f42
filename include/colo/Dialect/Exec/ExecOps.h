//===- ExecOps.h - The step program dialect ---------------------*- C++ -*-===//
#ifndef COLO_DIALECT_EXEC_EXECOPS_H
#define COLO_DIALECT_EXEC_EXECOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "colo/Dialect/Exec/ExecDialect.h.inc"
#include "colo/Dialect/Exec/ExecEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "colo/Dialect/Exec/ExecAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "colo/Dialect/Exec/ExecTypes.h.inc"

#define GET_OP_CLASSES
#include "colo/Dialect/Exec/ExecOps.h.inc"

namespace colo::exec {
/// The storage that `buffer` uses: the source of a view, or itself.
mlir::Value storageOf(mlir::Value buffer);

/// Whether `op` is a step of the program (everything but buffer
/// declarations, frees and the terminator).
bool isStep(mlir::Operation *op);

/// Bytes of a buffer of type `t` (booleans take a byte).
int64_t byteSize(mlir::MemRefType t);

/// The buffer type of `shape` x `element` in `space`.
mlir::MemRefType bufferType(llvm::ArrayRef<int64_t> shape, mlir::Type element,
                            MemorySpace space = MemorySpace::device);
} // namespace colo::exec

#endif
