#ifndef COLO_PASSES_PASSES_H
#define COLO_PASSES_PASSES_H

#include "colo/Dialect/Exec/ExecOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Pass/Pass.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/PassManager.h"
#include <string>
#include <vector>

#include "colo/Passes/PassEnums.h"

namespace colo {

#define GEN_PASS_DECL
#include "colo/Passes/Passes.h.inc"

/// colo.attention as matmul, masks, softmax and matmul (colo-decompose-attention).
void populateDecomposeAttentionPatterns(mlir::RewritePatternSet &patterns);

/// Replaces each training-mode colo.batch_norm with `sync_grid` under `root`
/// by sums over the batch, their all_reduce over the grid axes and the
/// normalization (colo-build-train-step, before differentiating).
mlir::LogicalResult expandSyncBatchNorms(mlir::Operation *root);

/// The cleanup every imported graph goes through: canonicalization, raising
/// of decomposed norms, activations and attention, CSE. The CLI, colo-opt
/// (`--colo-import-pipeline`) and Python all call this one function.
void buildImportPipeline(mlir::OpPassManager &pm);

/// What colo compile does to the step programs (exec.program ops of a
/// module) before it serializes them: colo-overlap-collectives,
/// colo-insert-frees, colo-plan-memory (`--colo-step-program-pipeline`).
void buildStepProgramPipeline(mlir::OpPassManager &pm);

/// How a step is spread over ranks: the parts of a parallel plan that the
/// plan passes apply.
struct ParallelOptions {
  int64_t dp = 1;        ///< data-parallel ranks
  int64_t tp = 1;        ///< tensor-parallel ranks (colo-tensor-parallel)
  int64_t tp2d = 1;      ///< 2-D tensor parallelism's grid side (colo-tensor-parallel-2d)
  int64_t tp2dDepth = 1; ///< 2.5-D tensor parallelism's copies of the grid (its depth)
  int64_t tp3d = 1;      ///< 3-D tensor parallelism's cube side (colo-tensor-parallel-3d)
  double bucketMb = 25;  ///< gradient bytes per all-reduce
  int64_t zero = 0;      ///< ZeRO stage (1, 2: colo-zero instead of colo-data-parallel)
  bool sequenceParallel = false; ///< colo-sequence-parallel (needs tp > 1)
  bool vocabParallel = false; ///< colo-vocab-parallel (needs tp > 1)
  int64_t pp = 1;        ///< pipeline ranks (colo-pipeline-stages, colo-pipeline)
  int64_t virtualStages = 1; ///< stages per pipeline rank (interleaved schedule)
  /// Where each pipeline stage ends, in layers (a plan's `stages`); empty:
  /// colo-pipeline-stages balances the stages' cost.
  std::vector<int64_t> stageLayerEnds;
  int64_t micro = 1;     ///< microbatches per step (gradient accumulation)
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  int64_t ulysses = 1;   ///< Ulysses sequence-parallel ranks (colo-ulysses, axis "sp")
  int64_t ring = 1;      ///< ring-attention ranks (colo-ring-attention, axis "sp")
  bool zigzag = true;    ///< ring attention's balanced order of positions
  RecomputePolicy recompute = RecomputePolicy::None; ///< colo-recompute
  double recomputeBudgetMb = 0; ///< colo-recompute's budget-mb (policy budget)
  bool offloadOptimizer = false; ///< colo-offload: optimizer state and update on the host
  bool offloadParams = false;    ///< colo-offload: parameters on the host, fetched in chunks
  bool offloadActivations = false; ///< colo-offload-activations
  double chunkMb = 32;           ///< colo-offload's and colo-offload-activations' chunk-mb
  double residentMb = -1;        ///< colo-offload's resident-mb (negative: one chunk)
  /// Batch norm statistics per data-parallel rank, not over the dp group
  /// (colo-split-batch's sync-ranks=1).
  bool localBatchNorm = false;
};

/// The training step, typed: colo-build-train-step's options and the
/// precision (colo-autocast).
struct TrainStepOptions {
  ColoBuildTrainStepOptions step;
  Precision precision = Precision::Fp32;
};

/// Parses the training step as `colo compile --train` writes it: `key=value`
/// pairs separated by commas (or spaces), e.g. "loss=lm,lr=3e-4,precision=bf16",
/// the keys colo-build-train-step's options and `precision`. fp16 without a
/// loss-scale gets dynamic loss scaling (its gradients overflow and underflow
/// without it; bf16 has f32's range). Errors are described on `errors`.
mlir::FailureOr<TrainStepOptions> parseTrainStepOptions(llvm::StringRef text,
                                                        llvm::raw_ostream &errors);

/// Parses colo-build-train-step's options in pass-option syntax (`key=value`
/// separated by spaces) with the pass's own parser.
mlir::LogicalResult
parseBuildTrainStepOptions(llvm::StringRef text, ColoBuildTrainStepOptions &options,
                           llvm::function_ref<mlir::LogicalResult(const llvm::Twine &)> error);

/// The train-step pipeline: the plan's mesh (colo-create-mesh), the batch
/// split for data parallelism (colo-split-batch), tensor and sequence
/// parallelism of the forward (colo-vocab-parallel, colo-tensor-parallel,
/// colo-sequence-parallel),
/// mixed precision (colo-autocast, for bf16 and fp16),
/// colo-build-train-step with `train.step`, the plan passes
/// (colo-data-parallel, or colo-zero for ZeRO), canonicalize, CSE.
/// Invalid options are described on `errors`.
mlir::LogicalResult buildTrainStepPipeline(mlir::OpPassManager &pm,
                                           const TrainStepOptions &train,
                                           const ParallelOptions &parallel,
                                           llvm::raw_ostream &errors);

/// Registers every colo pass and the colo pipelines with the global registry.
void registerPassesAndPipelines();

} // namespace colo

#endif
