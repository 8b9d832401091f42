#ifndef COLO_PLANNER_COSTMODEL_H
#define COLO_PLANNER_COSTMODEL_H

#include "colo/Planner/Cluster.h"
#include "colo/Planner/OpTimes.h"
#include "colo/Planner/Plan.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace colo::planner {

/// Costs of one part of the model for one sample, forward, unpartitioned,
/// read off the IR through the ops' cost interface.
/// One matrix product of a part, per sample: `batch` products of a
/// `rows` x `depth` by a `depth` x `cols` matrix. With a weight operand the
/// samples are rows (tokens); between activations they are in the batch.
struct Gemm {
  double rows = 0, depth = 0, cols = 0, batch = 1;
  bool ofWeight = false;
  /// A product with a weight whose input an earlier one multiplies too
  /// (Llama's k and v after q): 3-D tensor parallelism gathers it once.
  bool sharesInput = false;
};

/// One convolution of a part: its FLOPs per sample (among matmulFlops) and,
/// where timeConvolutions timed it, the seconds a training step spends in it
/// on b samples: fixedSeconds + b * perSampleSeconds.
struct ConvCost {
  ConvShape shape;
  double flops = 0;
  bool timed = false;
  double fixedSeconds = 0, perSampleSeconds = 0;
};

struct PartCost {
  /// The colo.matmul products among matmulFlops, for the wave quantization
  /// of ClusterSpec::gemmWaveTiles.
  std::vector<Gemm> gemms;
  std::vector<ConvCost> convs;
  double matmulFlops = 0;  // matmul/conv/attention FLOPs
  double otherFlops = 0;   // elementwise, norms, reductions
  double memoryBytes = 0;  // bytes read + written by memory-bound ops, per sample
  /// Bytes read + written by memory-bound ops of the parameters alone
  /// (transposed or cast weights), once per microbatch.
  double weightBytes = 0;
  double attentionFlops = 0; // colo.attention's, among matmulFlops
  /// What a fused (FlashAttention-style) kernel computes of attentionFlops:
  /// under a causal mask it skips the key tiles wholly after its query tile
  /// (ClusterSpec::fusedAttention).
  double fusedAttentionFlops = 0;
  double params = 0;
  /// Parameter tensors (globals) read: colo-zero's stage 3 gathers each
  /// with an all-gather of its own.
  double paramTensors = 0;
  double ops = 0;          // kernels launched
  /// Bytes kept for backward: tensors of the hidden size (replicated by
  /// tensor parallelism unless sequence parallel) and the rest (split).
  double savedReplicated = 0, savedSplit = 0;
  /// Of the rest, the attention probabilities (heads x s x s per sample):
  /// colo's training step differentiates attention as the ops it stands for,
  /// so its softmax output is kept, unless selective recompute recomputes
  /// the attention core (Korthikanti et al.'s 5as/h term).
  double savedScores = 0;
  /// Of the kept bytes, the inputs of products with weights that nothing
  /// else reads backward: 2-D and 3-D tensor parallelism keep the blocks
  /// the product received instead. And the inputs of layer and RMS norms,
  /// with their statistics (4 bytes per normalized row): a grid's norms,
  /// written as the ops they stand for, keep one more block each and their
  /// statistics.
  double savedProductInputs = 0, savedNormInputs = 0, normStats = 0;
  /// Memory-bound bytes per sample as fused kernels move them: only the
  /// operands a matrix product, a parameter or an input produced, and the
  /// results something other than a memory-bound op reads
  /// (ClusterSpec::fusedElementwise).
  double fusedBytes = 0;
  /// Bytes per sample attention moves when it is not one fused kernel: its
  /// heads x s x s scores written by the first product, read and written by
  /// the softmax, read by the second (ClusterSpec::fusedAttention = 0).
  double scoreBytes = 0;

  PartCost &operator+=(const PartCost &o);
};

/// The model as the planner sees it: embedding (pre), `layers` identical
/// blocks, and head + loss (post).
struct ModelProfile {
  int64_t layers = 0, seq = 1, hidden = 1, heads = 1, vocab = 0;
  int64_t elementBytes = 2;
  PartCost pre, layer, post;
  /// The layer in the pieces a pipeline stage boundary may fall between
  /// (where colo-pipeline-stages may cut: between a pre-norm transformer's
  /// attention and MLP blocks too); they add up to `layer`.
  std::vector<PartCost> segments;
  /// How tensor parallelism treats the embedding and the LM head. colo's
  /// colo-tensor-parallel keeps them whole on every rank (false). Megatron-LM
  /// splits them over the vocabulary (true: parameters, FLOPs and logits
  /// divided by tp, plus an all-reduce of b*s*h after the embedding's forward
  /// and one before the head's input gradient); `colo plan --vocab-parallel`
  /// predicts a run of that kind.
  bool vocabParallel = false;
  /// Parameters the head shares with the embedding (GPT-2's wte, tied to the
  /// LM head), counted once in `pre`. With pipeline stages the last stage
  /// keeps a copy, and the two exchange their gradients every step.
  double tiedParams = 0;
  double totalParams() const;
  /// Forward FLOPs per sample (the model FLOPs MFU counts are 3x this).
  double forwardFlops() const;
};

/// Reads the profile from an imported or synthetic module: the repeated
/// blocks found by the model summary are the layers.
mlir::FailureOr<ModelProfile> profileModel(mlir::ModuleOp module);

/// Where `cluster` is this machine (`device.timed_here`, as on `local-cpu`):
/// times each convolution of `model` as colo run computes it, on the threads
/// a rank of the cluster gets (measureConvStep, on 1 and 8 samples: a fixed
/// cost and one per sample), so that predict charges the measured seconds
/// instead of their FLOPs at the GEMM rate. Elsewhere, and for a model
/// without convolutions, nothing.
void timeConvolutions(ModelProfile &model, const ClusterSpec &cluster);

/// Per-device memory of a plan, bytes.
struct MemoryBreakdown {
  double params = 0, grads = 0, optimizer = 0, activations = 0, buffers = 0;
  /// The communicator's staging of received chunks (ClusterSpec::
  /// collectiveStaging): one chunk of the largest reduction.
  double staging = 0;
  /// Of the gradients, the bytes written where the backward has freed
  /// activations: the two peak together below their sum.
  double reused = 0;
  double total() const {
    return params + grads + optimizer + activations + buffers + staging - reused;
  }
};

/// Step time of a plan, seconds, as the critical path sees it.
struct TimeBreakdown {
  double compute = 0, recompute = 0, tensorParallel = 0, ulysses = 0, pipelineComm = 0,
         bubble = 0, dataParallel = 0, optimizer = 0, offload = 0;
  double total() const {
    return compute + recompute + tensorParallel + ulysses + pipelineComm + bubble +
           dataParallel + optimizer + offload;
  }
};

struct Prediction {
  Plan plan;
  TimeBreakdown time;
  MemoryBreakdown memory;   // of the device that needs most (first stage)
  /// Host memory per device for what is offloaded: the optimizer's state
  /// and gradients, with the parameters also the fp32 parameters it holds.
  double hostMemory = 0;
  double stepTime = 0, tokensPerSecond = 0, tflopsPerDevice = 0, mfu = 0;
  bool fits = false;
  /// Bytes sent per step by the device that sends most, and by all devices
  /// together (ring collectives: an all-reduce of S bytes over n sends
  /// 2(n-1)/n S from each member, an all-gather or reduce-scatter half that).
  double commBytesDevice = 0, commBytesAll = 0;
  /// How compute + recompute divide on the slowest device: matmul-class ops
  /// at the peak, memory-bound ops at the bandwidth, kernel launches.
  double computeMatmul = 0, computeMemory = 0, computeLaunch = 0;
  /// Layers per stage (the balanced or given partition), in fractions where
  /// a stage ends inside a layer.
  std::vector<double> stageLayers;
};

/// What colo-sequence-parallel splits each value's tokens along, which tp
/// must divide: the microbatch, or the sequence when the microbatch is one
/// sample (its first dimension larger than 1).
inline int64_t sequenceParallelSplit(const ModelProfile &m, int64_t microBatch) {
  return microBatch > 1 ? microBatch : m.seq;
}

/// Predicts time and memory of `plan` for `global batch = plan.globalBatch()`
/// on `cluster`. Fails with a message if the plan cannot apply to the model
/// (tp not dividing the heads, more stages than layers, ...).
llvm::Expected<Prediction> predict(const ModelProfile &model, const ClusterSpec &cluster,
                                   const Plan &plan);

/// Adam state in bytes per device for `params` parameters, partitioned by
/// ZeRO stage over `dp`. Mixed precision (`elementBytes` 2, ZeRO's
/// accounting): 2 + 2 + 12 bytes (bf16 parameters and gradients; fp32 master
/// weights, momentum and variance). Full precision (`elementBytes` 4): 4 + 4
/// + 8 (no master copy). Offloaded optimizer state, and offloaded parameters,
/// are in host memory (the parameters' working set on the device is a
/// buffer: bufferMemory).
MemoryBreakdown modelStateMemory(double params, int zeroStage, int64_t dp, Offload offload,
                                 int64_t elementBytes = 2);

/// Time of a collective over `n` ranks moving a `bytes` buffer (alpha-beta,
/// ring), on a group whose members are `stride` ranks apart.
enum class Collective { AllReduce, AllGather, ReduceScatter, AllToAll, SendRecv };
double collectiveTime(Collective kind, double bytes, int64_t n, int64_t stride,
                      const ClusterSpec &cluster);

void printExplanation(const ModelProfile &model, const ClusterSpec &cluster,
                      const Prediction &p, llvm::raw_ostream &os);

/// The step-time terms of TimeBreakdown by name ("compute", "bubble", ...),
/// in TimeBreakdown's order; they add up to its total.
std::vector<std::pair<const char *, double>> timeTerms(const TimeBreakdown &t);

/// Why `best` beats `other`, term by term: `other`'s step-time terms minus
/// `best`'s, those that differ, largest first (they add up to the step
/// times' difference).
std::vector<std::pair<const char *, double>> termsBetween(const Prediction &best,
                                                          const Prediction &other);

} // namespace colo::planner

#endif
