//===- VocabParallel.h - Megatron's vocabulary parallelism ------*- C++ -*-===//
//
// colo-vocab-parallel leaves @forward returning each tp rank's block of the
// logits and marks it with `colo.vocab_parallel = tp` (the tensor grids
// leave theirs split over samples and classes, marked with their axes);
// colo-build-train-step then builds the loss with buildSplitCrossEntropy,
// before differentiating, so the backward follows from the ops' gradient
// rules.
//
//===----------------------------------------------------------------------===//
#ifndef COLO_PASSES_VOCABPARALLEL_H
#define COLO_PASSES_VOCABPARALLEL_H

#include "Parallel/Mesh.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace colo {

/// How the loss's input (@forward's first result) is split: its classes
/// (last dimension) over `classes` (colo.vocab_parallel's tp, or
/// colo.loss_class_axis), its samples (first dimension) over `samples`
/// (colo.loss_sample_axes), `sampleParts` ways.
struct LossSplit {
  mlir::shard::GridOp grid;
  std::optional<MeshAxis> classes;
  llvm::SmallVector<mlir::shard::GridAxis, 2> samples;
  int64_t sampleParts = 1;
  bool any() const { return classes || !samples.empty(); }
};
mlir::FailureOr<LossSplit> lossSplitOf(mlir::func::FuncOp func);

/// The loss's input gathered whole.
mlir::Value gatherLossInput(mlir::OpBuilder &b, mlir::Location loc, const LossSplit &split,
                            mlir::Value v);

/// The mean cross-entropy (colo.cross_entropy's semantics, ignore_index and
/// label smoothing included) of logits that are the rank's block as `split`
/// says, the same on every rank, without gathering them: log-sum-exp and the
/// target's logit are summed over the classes' ranks, the losses and their
/// count over the samples' ranks. `labels` are whole (every sample).
mlir::FailureOr<mlir::Value> buildSplitCrossEntropy(mlir::OpBuilder &b, mlir::Location loc,
                                                    mlir::func::FuncOp func, const LossSplit &split,
                                                    mlir::Value logits, mlir::Value labels,
                                                    int64_t ignoreIndex, double labelSmoothing);

} // namespace colo

#endif // COLO_PASSES_VOCABPARALLEL_H
