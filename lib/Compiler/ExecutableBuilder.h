//===- ExecutableBuilder.h - From train steps to step programs --*- C++ -*-===//
#ifndef COLO_LIB_COMPILER_EXECUTABLEBUILDER_H
#define COLO_LIB_COMPILER_EXECUTABLEBUILDER_H

#include "colo/Dialect/Exec/ExecOps.h"
#include "colo/Runtime/Program.pb.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/DenseMap.h"

namespace colo {

/// The kernels that the step programs call, each distinct one once:
/// repeated layers, microbatches and pipeline stages call the same symbols.
class KernelLibrary {
public:
  explicit KernelLibrary(mlir::MLIRContext *context);
  /// Where kernels are built before add() takes them.
  mlir::ModuleOp module() { return *kernels; }
  /// Keeps `kernel` (built in module()), or erases it where a kernel
  /// identical up to locations was added before; returns the symbol to call.
  std::string add(mlir::func::FuncOp kernel);

private:
  mlir::OwningOpRef<mlir::ModuleOp> kernels;
  llvm::DenseMap<llvm::hash_code, llvm::SmallVector<mlir::func::FuncOp>> byHash;
};

/// Fills the empty `program` with `func`'s steps: library steps (GEMM,
/// convolution, pooling), kernel calls (every other op, grouped between
/// library steps, added to `kernels`), copies (global stores) and
/// communication, each followed by its wait. STATE buffers are named after
/// their colo.global. New kernel symbols start with `symbolPrefix`
/// (pipeline stages share one library).
mlir::LogicalResult buildStepProgram(mlir::func::FuncOp func, KernelLibrary &kernels,
                                     exec::ProgramOp program, llvm::StringRef symbolPrefix,
                                     int64_t kernelPieces);

/// The runtime's program for the exec.programs of `steps`: one, or one per
/// pipeline stage (ordered by `stage`) under a mesh whose "pp" axis picks
/// the stage. Reports what the runtime cannot run on the op.
mlir::FailureOr<runtime::Program> serializeExecutable(mlir::ModuleOp steps);

/// The runtime's element type for `t`, if it has one.
std::optional<runtime::DType> runtimeDType(mlir::Type t);

/// colo compile --target cuda: compiles `kernels` for CUDA (sm_80, sm_90)
/// and writes their CudaKernels message to `path` (CudaExecutable.cpp); with
/// a `dumpDir`, each module's PTX also to dumpDir/ptx/<module>.<chip>.ptx.
mlir::LogicalResult writeCudaKernels(mlir::ModuleOp kernels, llvm::StringRef path,
                                     llvm::StringRef dumpDir);

} // namespace colo

#endif
