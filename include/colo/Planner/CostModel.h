#ifndef COLO_PLANNER_COSTMODEL_H
#define COLO_PLANNER_COSTMODEL_H

#include "colo/Planner/Cluster.h"
#include "colo/Planner/Plan.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace colo::planner {

/// Costs of one part of the model for one sample, forward, unpartitioned,
/// read off the IR through the ops' cost interface.
struct PartCost {
  double matmulFlops = 0;  // matmul/conv/attention FLOPs
  double otherFlops = 0;   // elementwise, norms, reductions
  double memoryBytes = 0;  // bytes read + written by memory-bound ops
  double attentionFlops = 0;
  double params = 0;
  double ops = 0;          // kernels launched
  /// Bytes kept for backward: tensors of the hidden size (replicated by
  /// tensor parallelism unless sequence parallel) and the rest (split).
  double savedReplicated = 0, savedSplit = 0;
};

/// The model as the planner sees it: embedding (pre), `layers` identical
/// blocks, and head + loss (post).
struct ModelProfile {
  int64_t layers = 0, seq = 1, hidden = 1, heads = 1, vocab = 0;
  int64_t elementBytes = 2;
  PartCost pre, layer, post;
  double totalParams() const;
  /// Forward FLOPs per sample (the model FLOPs MFU counts are 3x this).
  double forwardFlops() const;
};

/// Reads the profile from an imported or synthetic module: the repeated
/// blocks found by the model summary are the layers.
mlir::FailureOr<ModelProfile> profileModel(mlir::ModuleOp module);

/// Per-device memory of a plan, bytes.
struct MemoryBreakdown {
  double params = 0, grads = 0, optimizer = 0, activations = 0, buffers = 0;
  double total() const { return params + grads + optimizer + activations + buffers; }
};

/// Step time of a plan, seconds, as the critical path sees it.
struct TimeBreakdown {
  double compute = 0, recompute = 0, tensorParallel = 0, pipelineComm = 0,
         bubble = 0, dataParallel = 0, optimizer = 0, offload = 0;
  double total() const {
    return compute + recompute + tensorParallel + pipelineComm + bubble +
           dataParallel + optimizer + offload;
  }
};

struct Prediction {
  Plan plan;
  TimeBreakdown time;
  MemoryBreakdown memory;   // of the device that needs most (first stage)
  double stepTime = 0, tokensPerSecond = 0, tflopsPerDevice = 0, mfu = 0;
  bool fits = false;
  /// Layers per stage (the balanced or given partition).
  std::vector<int64_t> stageLayers;
};

/// Predicts time and memory of `plan` for `global batch = plan.globalBatch()`
/// on `cluster`. Fails with a message if the plan cannot apply to the model
/// (tp not dividing the heads, more stages than layers, ...).
llvm::Expected<Prediction> predict(const ModelProfile &model, const ClusterSpec &cluster,
                                   const Plan &plan);

/// Mixed-precision Adam state in bytes per device for `params` parameters
/// (ZeRO's accounting: 2 + 2 + 12 bytes, partitioned by stage over `dp`).
MemoryBreakdown modelStateMemory(double params, int zeroStage, int64_t dp,
                                 bool offloadOptimizer);

/// Time of a collective over `n` ranks moving a `bytes` buffer (alpha-beta,
/// ring), on a group whose members are `stride` ranks apart.
enum class Collective { AllReduce, AllGather, ReduceScatter, AllToAll, SendRecv };
double collectiveTime(Collective kind, double bytes, int64_t n, int64_t stride,
                      const ClusterSpec &cluster);

void printExplanation(const ModelProfile &model, const ClusterSpec &cluster,
                      const Prediction &p, llvm::raw_ostream &os);

} // namespace colo::planner

#endif
