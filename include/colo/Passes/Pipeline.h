//===- Pipeline.h - Pipeline stages of a training step ----------*- C++ -*-===//
//
// Pipeline parallelism cuts the forward into consecutive stages
// (colo-pipeline-stages labels each op with `colo.stage = s`), keeps the
// labels through the backward (colo-build-train-step gives every gradient op
// the stage of the op it differentiates) and then splits the step into one
// function per pipeline rank that runs its stages' microbatches in the
// schedule's order, with sends and receives between ranks (colo-pipeline).
//
//===----------------------------------------------------------------------===//

#ifndef COLO_PASSES_PIPELINE_H
#define COLO_PASSES_PIPELINE_H

#include "colo/Dialect/Colo/ColoDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

#include <optional>
#include <vector>

namespace colo {

/// An op's `colo.stage`, where it has one.
inline std::optional<int64_t> getStage(mlir::Operation *op) {
  if (mlir::IntegerAttr attr = ColoDialect::StageAttrHelper(op->getContext()).getAttr(op))
    return attr.getInt();
  return std::nullopt;
}

inline void setStage(mlir::Operation *op, int64_t stage) {
  ColoDialect::StageAttrHelper(op->getContext())
      .setAttr(op, mlir::IntegerAttr::get(mlir::IntegerType::get(op->getContext(), 64), stage));
}

/// Labels every op that a builder inserts with `stage` while it is set (and
/// the op has no label yet): the gradient ops of a labeled op belong to its
/// stage.
struct StageLabeler : mlir::OpBuilder::Listener {
  std::optional<int64_t> stage;
  void notifyOperationInserted(mlir::Operation *op,
                               mlir::OpBuilder::InsertPoint) override {
    if (stage && !getStage(op))
      setStage(op, *stage);
  }
};

/// Gives the ops of `block` that lack a stage (made by rewrites after the
/// stages were chosen) one: the latest stage among the producers of their
/// operands that depend on the block's arguments, else the earliest among
/// their users, else 0.
void inferMissingStages(mlir::Block &block);

/// Where a forward function can be cut into pipeline stages.
struct PipelineCutPoints {
  /// The ops that depend on the inputs, in order: what the stages run (the
  /// rest, parameter loads and constants, is copied where it is used).
  llvm::SmallVector<mlir::Operation *> ops;
  /// prefix[i]: the cost of ops[0, i) (FLOPs, plus one per op).
  std::vector<double> prefix;
  /// Indices i such that a cut may go after ops[i]: where the fewest values
  /// cross (between transformer layers and their sub-blocks, the residual
  /// stream alone).
  llvm::SmallVector<int64_t> candidates;
  int64_t fewestCrossing = 0;
};
PipelineCutPoints findPipelineCutPoints(mlir::Block &body);

/// The cuts among `candidates` (cut after op i is position i + 1) that split
/// the costs `prefix` into `stages` consecutive segments with the smallest
/// largest segment (dynamic programming; ties go to the earliest cut). Both
/// colo-pipeline-stages and the planner cut with it, so that the planner
/// predicts the stages the compiler makes.
llvm::SmallVector<int64_t> balanceStageCuts(llvm::ArrayRef<double> prefix,
                                            llvm::ArrayRef<int64_t> candidates,
                                            int64_t stages);

} // namespace colo

#endif
