//===- StateWriter.h - Initial state of an executable -----------*- C++ -*-===//
#ifndef COLO_LIB_COMPILER_STATEWRITER_H
#define COLO_LIB_COMPILER_STATEWRITER_H

#include "ExecutableBuilder.h"

namespace colo {

/// Writes the initial value of every STATE buffer of `program` (and of its
/// pipeline stages) to the safetensors file `path`.
mlir::LogicalResult writeInitialState(const runtime::Program &program, mlir::ModuleOp module,
                                      const std::string &path);

} // namespace colo

#endif
