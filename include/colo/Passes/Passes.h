#ifndef COLO_PASSES_PASSES_H
#define COLO_PASSES_PASSES_H

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Pass/Pass.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/PassManager.h"

namespace colo {

#define GEN_PASS_DECL
#include "colo/Passes/Passes.h.inc"

/// colo.attention as matmul, masks, softmax and matmul (colo-decompose-attention).
void populateDecomposeAttentionPatterns(mlir::RewritePatternSet &patterns);

/// The cleanup every imported graph goes through: canonicalization, raising
/// of decomposed norms, activations and attention, CSE. The CLI, colo-opt
/// (`--colo-import-pipeline`) and Python all call this one function.
void buildImportPipeline(mlir::OpPassManager &pm);

/// How a step is spread over ranks: the parts of a parallel plan that the
/// plan passes apply.
struct ParallelOptions {
  int64_t dp = 1;        ///< data-parallel ranks
  double bucketMb = 25;  ///< gradient bytes per all-reduce
};

/// The train-step pipeline: the batch split for data parallelism
/// (colo-split-batch), colo-build-train-step with `options` (its pass options
/// as `key=value` separated by commas or spaces), the plan passes
/// (colo-data-parallel), canonicalize, CSE. Invalid options are described on
/// `errors`.
mlir::LogicalResult buildTrainStepPipeline(mlir::OpPassManager &pm,
                                           llvm::StringRef options,
                                           const ParallelOptions &parallel,
                                           llvm::raw_ostream &errors);

/// Registers every colo pass and the colo pipelines with the global registry.
void registerPassesAndPipelines();

} // namespace colo

#endif
