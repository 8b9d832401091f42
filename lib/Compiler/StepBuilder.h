//===- StepBuilder.h - From @train_step to an exec.program ------*- C++ -*-===//
//
// One walk over a train step (a func.func of colo ops) that emits its
// exec.program. What the walk does is split by concern:
//   StepBuilder.cpp         the walk, buffers, global loads and stores, views
//   LibraryCalls.cpp        matrix products, convolutions, pooling
//   CollectiveLowering.cpp  shard collectives and pipeline messages
//   KernelOutlining.cpp     the ops between library steps as kernels
//
//===----------------------------------------------------------------------===//
#ifndef COLO_LIB_COMPILER_STEPBUILDER_H
#define COLO_LIB_COMPILER_STEPBUILDER_H

#include "ExecutableBuilder.h"

#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Dialect/Exec/ExecOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

namespace colo {

class StepBuilder {
public:
  StepBuilder(mlir::func::FuncOp func, KernelLibrary &kernels, exec::ProgramOp program,
              llvm::StringRef symbolPrefix, int64_t kernelPieces);
  mlir::LogicalResult build();

private:
  // StepBuilder.cpp
  mlir::LogicalResult describeMesh();
  mlir::FailureOr<int> meshAxis(mlir::Operation *user, llvm::StringRef name);
  mlir::FailureOr<mlir::Value> newBuffer(mlir::RankedTensorType t, llvm::StringRef name,
                                         exec::BufferKind kind,
                                         exec::MemorySpace space = exec::MemorySpace::device);
  mlir::FailureOr<mlir::Value> newBuffer(mlir::Value v, llvm::StringRef name,
                                         exec::BufferKind kind);
  /// A temporary for result `i` of `op`.
  mlir::FailureOr<mlir::Value> result(mlir::Operation *op, unsigned i = 0);
  /// The valid values of an integer input: [0, max) and `ignored`.
  struct IntRange {
    int64_t max = 0; // 0: unknown
    std::optional<int64_t> ignored;
  };
  IntRange intRange(mlir::Value v);
  /// The buffer holding `v`, emitting the kernel group that computes it if
  /// it has not run yet.
  mlir::FailureOr<mlir::Value> materialize(mlir::Value v);
  mlir::LogicalResult visit(mlir::Operation *op);
  mlir::FailureOr<mlir::Value> stateBuffer(mlir::Operation *user, llvm::StringRef global);
  mlir::LogicalResult visitLoad(GlobalLoadOp load);
  mlir::LogicalResult aliasReshape(ReshapeOp reshape);
  /// Where `v` lives: in host memory if colo-offload put it there (a host
  /// op's result, a transfer to the host, a load of a host global).
  exec::MemorySpace spaceOf(mlir::Value v);
  /// A transfer between the memory spaces, on the copy queue; deferred
  /// while its source is computed by the kernel being collected.
  mlir::LogicalResult visitTransfer(TransferOp transfer);
  mlir::LogicalResult emitTransfer(TransferOp transfer);
  /// "<location name or op name>[#result].<position>", e.g. "fc1.matmul.5".
  std::string stepName(mlir::Operation *op, unsigned result = 0);
  /// Writes what the cost model charges `sources` on `step` (exec.flops,
  /// exec.bytes, exec.recomputed), unless the step has it already.
  void annotateCost(mlir::Operation *step, llvm::ArrayRef<mlir::Operation *> sources);

  // LibraryCalls.cpp
  mlir::LogicalResult visitLibrary(mlir::Operation *op);
  mlir::LogicalResult visitMatmul(MatmulOp mm);

  // CollectiveLowering.cpp
  mlir::LogicalResult visitCollective(mlir::Operation *op);
  mlir::LogicalResult visitPointToPoint(mlir::Operation *op, llvm::ArrayRef<int16_t> axes,
                                        llvm::ArrayRef<int64_t> peer);
  /// Communication finishes right after it starts until
  /// colo-overlap-collectives moves the wait.
  void waitFor(mlir::Value token, llvm::StringRef name);

  // KernelOutlining.cpp
  /// Emits the collected kernels, then the transfers waiting for them.
  mlir::LogicalResult flush();
  mlir::LogicalResult flushKernels();
  mlir::FailureOr<bool> emitKernel(llvm::ArrayRef<mlir::Operation *> ops,
                                   const llvm::DenseSet<mlir::Operation *> &flushed,
                                   bool onlyInPieces);
  std::optional<mlir::Value> updatedInPlace(mlir::Value v,
                                            const llvm::DenseSet<mlir::Operation *> &flushed);

  mlir::func::FuncOp func;
  mlir::SymbolTable symbols;
  KernelLibrary &kernels;
  exec::ProgramOp program;
  /// Appends to the program's body.
  mlir::OpBuilder b;
  llvm::DenseMap<mlir::Operation *, int> order;
  /// Each global's loads and stores, in block order.
  llvm::StringMap<llvm::SmallVector<mlir::Operation *>> accessesOf;
  /// The buffer holding each tensor value computed so far.
  llvm::DenseMap<mlir::Value, mlir::Value> bufferOf;
  /// Ops whose values a Gemm step writes, or which it absorbs on the way.
  llvm::DenseSet<mlir::Operation *> computedByGemm;
  llvm::StringMap<mlir::Value> stateOf;
  llvm::SetVector<mlir::Operation *> group;
  /// Transfers of values the group computes, emitted after it.
  llvm::SmallVector<TransferOp> pendingTransfers;
  /// Global stores whose transfer wrote the state buffer directly.
  llvm::DenseSet<mlir::Operation *> storedByTransfer;
  int kernelCount = 0;
  std::string symbolPrefix;
  llvm::SmallVector<int64_t> pieceCounts; // tried in order
  int32_t shiftTags = 0;                  // the next shift step's message tag
};

/// Shared by the parts of the walk.
inline mlir::RankedTensorType tensorType(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}
bool isCollective(mlir::Operation *op);
bool isLibraryOp(mlir::Operation *op);
/// A transpose that GEMM steps read in place.
bool feedsOnlyGemms(TransposeOp t);

} // namespace colo

#endif
