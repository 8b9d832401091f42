//===- ExecutableBuilder.h - Splitting a train step into steps --*- C++ -*-===//
#ifndef COLO_LIB_COMPILER_EXECUTABLEBUILDER_H
#define COLO_LIB_COMPILER_EXECUTABLEBUILDER_H

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

/// Splits `func` into library steps (GEMM, convolution, pooling), kernel calls
/// (every other op, grouped between library steps, added to `kernels`) and
/// copies (global stores), then assigns the temporaries arena offsets by
/// their lifetimes. STATE buffers are named after their colo.global. New
/// kernel symbols start with `symbolPrefix` (pipeline stages share one
/// library).
mlir::FailureOr<runtime::Program> buildExecutablePlan(mlir::func::FuncOp func,
                                                      KernelLibrary &kernels,
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
