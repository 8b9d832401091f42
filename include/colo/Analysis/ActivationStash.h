#ifndef COLO_ANALYSIS_ACTIVATIONSTASH_H
#define COLO_ANALYSIS_ACTIVATIONSTASH_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace colo {

/// A forward value that the backward of one pipeline stage reads: the
/// activation that stage keeps between them.
struct StashedActivation {
  mlir::Value value;
  std::optional<int64_t> stage;
  int64_t bytes = 0;
  /// Positions (in `step`'s op order, ascending) of its backward readers.
  std::vector<int64_t> uses;
};

/// The activations @train_step keeps for its backward: results of forward
/// ops (before `lossOp`) that depend on the batch (not parameters,
/// constants or their casts) and that backward ops read, other than the
/// loss's operands (read again by the first backward op, so held across no
/// work) and transfers; one per stage whose backward reads it (a stage that
/// did not compute it receives it from the pipeline's send with its
/// forward). `colo-offload-activations` moves them to the host;
/// `colo plan --explain --train` reports their bytes beside the planner's.
std::vector<StashedActivation> stashedActivations(mlir::func::FuncOp step, mlir::Operation *lossOp);

/// The op that computes the loss @train_step returns first, or null.
mlir::Operation *returnedLoss(mlir::func::FuncOp step);

} // namespace colo

#endif
