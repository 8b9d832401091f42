//===- ExecutableBuilder.h - Splitting a train step into steps --*- C++ -*-===//
#ifndef COLO_LIB_COMPILER_EXECUTABLEBUILDER_H
#define COLO_LIB_COMPILER_EXECUTABLEBUILDER_H

#include "colo/Runtime/Program.pb.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"


namespace colo {

/// The executable of one function before it is written: the step list and
/// the module of kernels to generate. STATE buffers are named after their
/// colo.global.
struct ExecutablePlan {
  runtime::Program program;
  mlir::OwningOpRef<mlir::ModuleOp> kernels;
};

/// Splits `func` into library steps (GEMM, convolution, pooling), kernel calls
/// (every other op, grouped between library steps) and copies (global stores),
/// then assigns the temporaries arena offsets by their lifetimes.
/// Kernel symbols start with `symbolPrefix` (pipeline stages share one
/// kernels library).
mlir::FailureOr<ExecutablePlan> buildExecutablePlan(mlir::func::FuncOp func,
                                                    llvm::StringRef symbolPrefix = "",
                                                    int64_t kernelPieces = 1);

/// The buffer whose storage buffer `id` uses: the one it aliases (the
/// compiler aliases only buffers with storage of their own), or itself.
int storageOf(const runtime::Program &program, int id);

/// Makes each all-reduce that no step touches right after it overlapped
/// (Collective.overlap), with a Wait step before the first one that does.
void overlapCollectives(runtime::Program &program);

/// Assigns TEMP buffers (not aliases) offsets in one arena so that buffers
/// whose lifetimes (first and last step that touches them) overlap never
/// share bytes; sets program.arena_bytes.
void planMemory(runtime::Program &program);

} // namespace colo

#endif
