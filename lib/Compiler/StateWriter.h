//===- StateWriter.h - Initial state of an executable -----------*- C++ -*-===//
#ifndef COLO_LIB_COMPILER_STATEWRITER_H
#define COLO_LIB_COMPILER_STATEWRITER_H

#include "ExecutableBuilder.h"
#include "colo/Dialect/Colo/ColoOps.h"

#include <optional>

namespace colo {

/// The initial value of `global` as a runtime Initializer, where the
/// runtime makes exactly the interpreter's values: a splat, or a #colo.init
/// spec of a float type that `dtype`, the buffer's, matches. None for data.
std::optional<runtime::Initializer> initializerOf(GlobalOp global, runtime::DType dtype);

/// Gives the STATE buffers of `program` (and of its pipeline stages) whose
/// globals start as a fill or a #colo.init spec their Initializer, and
/// writes the initial value of every other one to the safetensors file
/// `path`.
mlir::LogicalResult writeInitialState(runtime::Program &program, mlir::ModuleOp module,
                                      const std::string &path);

} // namespace colo

#endif
