//===- Compiler.h - From a train step to an executable ----------*- C++ -*-===//
//
// `colo compile`: a module with @forward becomes an executable directory that
// the runtime runs without MLIR (docs/program-format.md):
//   program.pb          the step list (colo.runtime.Program)
//   kernels.so          the generated kernels (linalg -> LLVM)
//   state.safetensors   initial parameters, buffers and optimizer state
//
//===----------------------------------------------------------------------===//
#ifndef COLO_COMPILER_COMPILER_H
#define COLO_COMPILER_COMPILER_H

#include "colo/Passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace colo {

struct CompileOptions {
  /// Options of colo-build-train-step, as `key=value` pairs separated by
  /// commas or spaces, e.g. "loss=lm,optimizer=adamw,lr=3e-4".
  std::string train;
  /// Write the IR after each stage into this directory (empty: don't).
  std::string dumpIrDir;
  /// How the step is spread over ranks (default: one rank).
  ParallelOptions parallel;
  /// Kernels whose rows are independent compute 1/kernelPieces of them per
  /// call (or 1/2, 1/4 ... where that does not divide), and the runtime
  /// runs the calls on its threads; 1 keeps every kernel whole.
  int64_t kernelPieces = 8;
};

/// Builds @train_step (colo-build-train-step, canonicalize, CSE), splits it
/// into library calls (GEMM, convolution, pooling) and generated kernels,
/// plans the temporaries' memory and writes the executable into `exeDir`.
/// Errors are reported through the context's diagnostics.
mlir::LogicalResult compileTrainStep(mlir::ModuleOp module, llvm::StringRef exeDir,
                                     const CompileOptions &options);

} // namespace colo

#endif
