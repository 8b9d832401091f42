#ifndef COLO_PLANNER_PLAN_H
#define COLO_PLANNER_PLAN_H

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <string>
#include <utility>
#include <vector>

namespace colo::planner {

enum class Schedule { None, GPipe, OneFOneB, Interleaved, ZeroBubbleH1 };
/// Budget: as little as fits the device, chosen per layer (keep, recompute
/// the attention core, recompute from the input) by the same solver in
/// colo-recompute (for colo compile --device-memory) and the cost model.
enum class Recompute { None, Selective, Full, Budget };
/// What lives in host memory: the optimizer's state (its update runs there),
/// and with it the parameters, fetched in chunks (ZeRO-Infinity's and
/// Gemini's placement; parameters need their update on the host).
enum class Offload { None, Optimizer, OptimizerParams };

/// A parallel training plan: the mesh, how state is partitioned, how the batch
/// is cut and scheduled, and what is recomputed or offloaded. Plans are data:
/// written as JSON (docs/plan-format.md) and read back by `colo compile`.
struct Plan {
  int64_t dp = 1, tp = 1, pp = 1;
  int64_t tp2d = 1; // 2-D tensor parallelism: a tp2d x tp2d grid (mesh axes "row", "col")
  /// 2.5-D tensor parallelism (`tp2p5d=q,d`): tp2dDepth copies of the grid
  /// (mesh axis "depth"), each on its part of the batch.
  int64_t tp2dDepth = 1;
  int64_t tp3d = 1; // 3-D tensor parallelism: a tp3d^3 cube (mesh axes "x", "y", "z")
  bool sequenceParallel = false;
  bool vocabParallel = false; // Megatron's vocab-parallel embedding, LM head and loss
  int64_t ulysses = 1; // DeepSpeed-Ulysses sequence-parallel ranks (mesh axis "sp")
  int64_t ring = 1;    // ring-attention ranks (mesh axis "sp")
  bool zigzag = true;  // ring attention's balanced order of positions
  int zero = 0;
  int64_t microBatch = 1;   // samples per microbatch
  int64_t microBatches = 1; // microbatches per step and data-parallel rank
  Schedule schedule = Schedule::None;
  int64_t virtualStages = 1;
  Recompute recompute = Recompute::None;
  Offload offload = Offload::None;
  /// The activations the backward reads from the forward wait in host memory.
  bool offloadActivations = false;
  /// Batch norm statistics per data-parallel rank (DistributedDataParallel
  /// without SyncBatchNorm) instead of over the whole batch.
  bool localBatchNorm = false;
  /// The device memory (bytes) a recompute=budget plan fits its
  /// recomputation to when colo compile gets no --device-memory: what the
  /// planner's search left the step of the cluster's device (0: none).
  int64_t deviceMemory = 0;
  /// Layer ranges [begin, end) per pipeline stage (empty: balanced by cost).
  std::vector<std::pair<int64_t, int64_t>> stages;

  int64_t worldSize() const {
    return dp * tp * pp * ulysses * ring * tp2d * tp2d * tp2dDepth * tp3d * tp3d * tp3d;
  }
  /// The ranks of the sequence-parallel mesh axis "sp" (Ulysses' or the
  /// ring's).
  int64_t sequenceRanks() const { return ulysses * ring; }
  int64_t globalBatch() const { return dp * microBatch * microBatches; }
  /// Short form: dp=16,tp=8,pp=8,sp,vocab,zero=1,mbs=1,micro=96,schedule=interleaved,v=2
  std::string str() const;
};

llvm::StringRef scheduleName(Schedule s);
llvm::StringRef recomputeName(Recompute r);
/// The `offload=` value: what lives in host memory, joined by '+'
/// ("optimizer+params+activations"), or "none".
std::string offloadName(Offload o, bool activations);

/// What colo compile does not build yet: the one table of compositions that
/// the search leaves out and the compiler refuses. An error names the first
/// one `plan` combines ("ZeRO stage 3 with tensor parallelism"); success when
/// colo compiles the plan.
llvm::Error checkCompilable(const Plan &plan);

/// Parses the inline form (`dp=2,tp=2,pp=2,zero=1,micro=4,schedule=1f1b`) or,
/// if `text` names a file, the JSON plan file.
llvm::Expected<Plan> parsePlan(llvm::StringRef text);
llvm::Expected<Plan> parsePlanJSON(llvm::StringRef json, llvm::StringRef what);
llvm::json::Value toJSON(const Plan &plan);

} // namespace colo::planner

#endif
