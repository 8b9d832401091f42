// The planner's cost model against published accounting (ZeRO, alpha-beta
// collectives, pipeline bubbles) and its plan format and search.
#include "colo/Models/SyntheticModels.h"
#include "colo/Planner/Search.h"
#include "colo/Planner/StepTimes.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FormatVariadic.h"

#include <gtest/gtest.h>

using namespace colo;
using namespace colo::planner;

namespace {
ModelProfile gpt2Small(mlir::MLIRContext &ctx) {
  TransformerConfig c = cantFail(modelPreset("gpt2-small"));
  auto m = buildSyntheticModel(c, ctx);
  return *profileModel(*m);
}

ClusterSpec cluster(const char *spec) { return cantFail(resolveCluster(spec)); }

/// Eight identical layers and nothing else, costed by hand: a layer's forward
/// is `flops` matmul FLOPs per sample, and it holds `params` parameters.
ModelProfile handModel(double flops, double params) {
  ModelProfile m;
  m.layers = 8;
  m.seq = m.hidden = 1024;
  m.heads = 8;
  m.layer.matmulFlops = flops;
  m.layer.params = params;
  return m;
}
} // namespace

// ZeRO paper (Rajbhandari et al. 2020), Figure 1: 7.5B parameters, dp = 64.
TEST(PlannerMemory, ZeroPaperExample) {
  const double psi = 7.5e9;
  EXPECT_NEAR(modelStateMemory(psi, 0, 64, Offload::None).total() / 1e9, 120.0, 0.05);
  EXPECT_NEAR(modelStateMemory(psi, 1, 64, Offload::None).total() / 1e9, 31.4, 0.05);
  EXPECT_NEAR(modelStateMemory(psi, 2, 64, Offload::None).total() / 1e9, 16.6, 0.05);
  EXPECT_NEAR(modelStateMemory(psi, 3, 64, Offload::None).total() / 1e9, 1.9, 0.05);
  // 16 bytes per parameter: 2 + 2 + 12.
  MemoryBreakdown plain = modelStateMemory(1, 0, 1, Offload::None);
  EXPECT_EQ(plain.params, 2);
  EXPECT_EQ(plain.grads, 2);
  EXPECT_EQ(plain.optimizer, 12);
  EXPECT_EQ(modelStateMemory(1, 0, 1, Offload::Optimizer).optimizer, 0);
  EXPECT_EQ(modelStateMemory(1, 0, 1, Offload::OptimizerParams).params, 0);
}

// Full precision (fp32 Adam, as colo trains on the CPU): the parameters are
// the master weights, 4 + 4 + 8 bytes, the optimizer's 8 split by ZeRO-1.
TEST(PlannerMemory, Fp32AdamState) {
  MemoryBreakdown m = modelStateMemory(1, 0, 1, Offload::None, /*elementBytes=*/4);
  EXPECT_EQ(m.params, 4);
  EXPECT_EQ(m.grads, 4);
  EXPECT_EQ(m.optimizer, 8);
  MemoryBreakdown z1 = modelStateMemory(1, 1, 2, Offload::None, 4);
  EXPECT_EQ(z1.params, 4);
  EXPECT_EQ(z1.optimizer, 4);
  EXPECT_EQ(modelStateMemory(1, 3, 4, Offload::None, 4).params, 1);
}

// The bytes a plan sends per step: ring all-reduces of b*s*h per layer for
// tp, of the fp32 gradients for dp; ZeRO-3 adds two all-gathers.
TEST(PlannerPredict, CommunicationBytes) {
  mlir::MLIRContext ctx;
  TransformerConfig cfg = cantFail(modelPreset("gpt2-small"));
  cfg.dtype = "f32";
  auto module = buildSyntheticModel(cfg, ctx);
  ModelProfile m = *profileModel(*module);
  ASSERT_EQ(m.elementBytes, 4);
  Prediction tp = cantFail(predict(m, cluster("a100-80g:1x2"),
                                   cantFail(parsePlan("dp=1,tp=2,mbs=2,micro=1"))));
  double boundary = 2.0 * m.seq * m.hidden * 4;
  // An all-reduce of S over 2 ranks sends S from each.
  EXPECT_NEAR(tp.commBytesDevice, m.layers * 4 * boundary, 1);
  EXPECT_NEAR(tp.commBytesAll, 2 * tp.commBytesDevice, 1);
  Prediction dp = cantFail(predict(m, cluster("a100-80g:1x4"),
                                   cantFail(parsePlan("dp=4,mbs=1,micro=1"))));
  EXPECT_NEAR(dp.commBytesDevice, 2 * 3.0 / 4 * 4 * m.totalParams(), 1);
  Prediction z3 = cantFail(predict(m, cluster("a100-80g:1x4"),
                                   cantFail(parsePlan("dp=4,zero=3,mbs=1,micro=1"))));
  EXPECT_NEAR(z3.commBytesDevice, 1.5 * dp.commBytesDevice, 1);
}

// colo's tensor parallelism splits the layers and keeps the embedding and the
// LM head whole on every rank: their parameters are not divided by tp.
TEST(PlannerPredict, TensorParallelReplicatesEmbeddingAndHead) {
  mlir::MLIRContext ctx;
  ModelProfile m = gpt2Small(ctx);
  Prediction r = cantFail(predict(m, cluster("a100-80g:1x2"),
                                  cantFail(parsePlan("dp=1,tp=2,mbs=1,micro=1"))));
  double params = m.layers * m.layer.params / 2 + m.pre.params + m.post.params;
  EXPECT_NEAR(r.memory.params, 2 * params, 1);
}

// Only what backward reads is kept: per GPT-2 layer and token about 17
// hidden-sized vectors (norm inputs, matmul inputs, q/k/v, the GELU input),
// not every intermediate result; and the attention probabilities, heads x s
// per token, in f32 for the softmax and in bf16 for the second matmul
// (Korthikanti et al.'s 5as/h term, for colo's decomposed attention).
TEST(PlannerMemory, SavedActivationsAreWhatBackwardReads) {
  mlir::MLIRContext ctx;
  ModelProfile m = gpt2Small(ctx);
  ASSERT_EQ(m.elementBytes, 2);
  double vector = m.seq * m.hidden * m.elementBytes;
  double perToken =
      (m.layer.savedReplicated + m.layer.savedSplit - m.layer.savedScores) / vector;
  EXPECT_GT(perToken, 14);
  EXPECT_LT(perToken, 20);
  EXPECT_DOUBLE_EQ(m.layer.savedScores, m.heads * m.seq * m.seq * (4.0 + 2.0));
}

// Selective recompute (Korthikanti et al.) keeps no attention probabilities;
// nor does fused attention (a GPU preset's), where selective saves nothing
// more and the step's time is the same.
TEST(PlannerMemory, SelectiveRecomputeDropsTheScores) {
  mlir::MLIRContext ctx;
  ModelProfile m = gpt2Small(ctx);
  ClusterSpec c = cluster("a100-80g:1x1");
  ASSERT_EQ(c.fusedAttention, 1);
  auto with = [&](const ClusterSpec &on, const char *plan) {
    return cantFail(predict(m, on, cantFail(parsePlan(plan))));
  };
  ClusterSpec unfused = c;
  unfused.fusedAttention = 0;
  Prediction none = with(unfused, "dp=1,mbs=2,micro=1");
  Prediction sel = with(unfused, "dp=1,mbs=2,micro=1,recompute=selective");
  EXPECT_NEAR(none.memory.activations - sel.memory.activations,
              2 * m.layers * m.layer.savedScores, 1);
  Prediction fused = with(c, "dp=1,mbs=2,micro=1");
  EXPECT_NEAR(fused.memory.activations, sel.memory.activations, 1);
  EXPECT_EQ(with(c, "dp=1,mbs=2,micro=1,recompute=selective").memory.activations,
            fused.memory.activations);
  // Unfused, the scores pass through memory four times a forward (written,
  // softmaxed, read), and its products run at the matmuls' efficiency on
  // every score; fused, the kernel skips the causal mask's tiles and runs at
  // its own efficiency. Three forwards' worth a step.
  EXPECT_GT(m.layer.scoreBytes, 0);
  // GPT-2's attention is causal: of n x n tiles of 128 the kernel computes
  // n (n + 1) / 2.
  double n = std::ceil(m.seq / 128.0);
  EXPECT_NEAR(m.layer.fusedAttentionFlops, m.layer.attentionFlops * (n + 1) / (2 * n), 1);
  double attention = m.layer.attentionFlops / (c.peakFlops16 * c.matmulEfficiency) -
                     m.layer.fusedAttentionFlops / (c.peakFlops16 * c.attentionEfficiency);
  EXPECT_NEAR(none.stepTime - fused.stepTime,
              3 * 2 * m.layers *
                  (m.layer.scoreBytes / (c.memoryBandwidth * c.memoryEfficiency) + attention),
              1e-9 * none.stepTime);
}

// recompute=budget chooses per layer with colo-recompute's solver: nothing
// on a device that holds every activation, some layers (less than full's
// recompute) on one between none and full, and everything where even full
// does not fit.
TEST(PlannerPredict, BudgetRecomputesTheLeastThatFits) {
  mlir::MLIRContext ctx;
  ModelProfile m = gpt2Small(ctx);
  ClusterSpec c = cluster("a100-80g:1x1");
  c.fusedAttention = 0; // the attention cores are a choice too
  auto with = [&](const char *recompute) {
    return cantFail(predict(
        m, c, cantFail(parsePlan(std::string("dp=1,mbs=16,micro=1,recompute=") + recompute))));
  };
  Prediction none = with("none"), full = with("full");
  ASSERT_GT(none.memory.total(), full.memory.total() * 1.5);

  c.deviceMemory = 2 * none.memory.total();
  Prediction roomy = with("budget");
  EXPECT_TRUE(roomy.fits);
  EXPECT_EQ(roomy.time.recompute, 0);
  EXPECT_NEAR(roomy.memory.total(), none.memory.total(), 64);

  c.deviceMemory = (none.memory.total() + full.memory.total()) / 2 / 0.92;
  Prediction between = with("budget");
  EXPECT_TRUE(between.fits);
  EXPECT_LE(between.memory.total(), 0.92 * c.deviceMemory);
  EXPECT_GT(between.memory.total(), full.memory.total());
  EXPECT_GT(between.time.recompute, 0);
  EXPECT_LT(between.time.recompute, full.time.recompute);
  EXPECT_EQ(between.plan.recompute, Recompute::Budget);

  c.deviceMemory = 0.5 * full.memory.total();
  EXPECT_FALSE(with("budget").fits);
}

// The compute split adds up to compute + recompute.
TEST(PlannerPredict, ComputeSplitAddsUp) {
  mlir::MLIRContext ctx;
  ModelProfile m = gpt2Small(ctx);
  Prediction r = cantFail(predict(m, cluster("a100-80g:1x8"),
                                  cantFail(parsePlan("dp=2,tp=2,pp=2,mbs=1,micro=4"))));
  EXPECT_NEAR(r.computeMatmul + r.computeMemory + r.computeLaunch,
              r.time.compute + r.time.recompute, 1e-9 * r.time.compute);
}

// ZeRO-3 gathers a layer's parameters before its forward and again before its
// backward, and reduce-scatters its gradients during the backward of every
// microbatch (it keeps only 1/dp of them): per layer and microbatch the links
// carry two gathers and a reduce-scatter, of which the layer's forward and
// backward can hide at most their own time. (The search once put a ZeRO-3
// plan for GPT-3 175B at 66% MFU, hiding the gradients' reduction once per
// step behind the last microbatch while the backward's gathers used the same
// links.)
TEST(PlannerPredict, ZeroThreeGatherAndReduceShareTheLinks) {
  ClusterSpec c = cluster("a100-80g:2x8");
  double params = 1e9, bytes = 2 * params;
  double gather = collectiveTime(Collective::AllGather, bytes, 16, 1, c);
  double reduce = collectiveTime(Collective::ReduceScatter, bytes, 16, 1, c);
  ASSERT_DOUBLE_EQ(gather, reduce);
  // A layer's forward takes 3/4 of a gather: the backward (twice the forward)
  // hides the gather alone, not the gather and the reduce-scatter.
  double forward = 0.75 * gather;
  ModelProfile m = handModel(forward * c.peakFlops16 * c.matmulEfficiency, params);
  Prediction r = cantFail(predict(m, c, cantFail(parsePlan("dp=16,zero=3,mbs=1,micro=4"))));
  double links = 4 * m.layers * (2 * gather + reduce), compute = 4 * m.layers * 3 * forward;
  EXPECT_NEAR(r.time.compute, compute, 1e-9 * compute);
  EXPECT_GE(r.time.dataParallel, (links - compute) * (1 - 1e-9));
  EXPECT_NEAR(r.time.dataParallel, 4 * m.layers * 0.75 * gather, 1e-9 * links);
  // Bytes: per microbatch, a reduce-scatter and two gathers, each sending
  // 15/16 of the layers' parameters.
  EXPECT_NEAR(r.commBytesDevice, 4 * 3 * 15.0 / 16 * m.layers * bytes, 1);
  // ZeRO-3 holds whole parameters beyond its block: the layer computing, the
  // one prefetched, and the gradient being reduce-scattered.
  EXPECT_NEAR(r.memory.buffers, c.workspace + 3 * bytes, 1);
}

// ZeRO-2 keeps 1/dp of the gradients: each microbatch's are reduce-scattered
// during its backward, and what the backward cannot hide is exposed.
TEST(PlannerPredict, ZeroTwoReducesEveryMicrobatch) {
  ClusterSpec c = cluster("a100-80g:2x8");
  double params = 1e9, bytes = 2 * params * 8;
  double reduce = collectiveTime(Collective::ReduceScatter, bytes, 16, 1, c);
  double allReduce = collectiveTime(Collective::AllReduce, bytes, 16, 1, c);
  // A microbatch's backward takes half a reduce-scatter.
  double backward = 0.5 * reduce;
  ModelProfile m = handModel(backward / 2 / 8 * c.peakFlops16 * c.matmulEfficiency, params);
  Prediction r = cantFail(predict(m, c, cantFail(parsePlan("dp=16,zero=2,mbs=1,micro=4"))));
  EXPECT_NEAR(r.time.dataParallel, 3 * (reduce - backward) + (allReduce - backward),
              1e-9 * allReduce);
  Prediction z1 = cantFail(predict(m, c, cantFail(parsePlan("dp=16,zero=1,mbs=1,micro=4"))));
  EXPECT_NEAR(z1.time.dataParallel, allReduce - backward, 1e-9 * allReduce);
}

// A fused kernel pads the sequence to whole 128 x 128 tiles and the head
// size to a multiple of 32 (FlashAttention-2): 200 causal positions are 2
// tile rows, 3 of the 4 tiles; a head of 112 runs as 128.
TEST(PlannerProfile, FusedAttentionComputesWholeTiles) {
  mlir::MLIRContext ctx;
  TransformerConfig c;
  c.family = "gpt";
  c.layers = 1, c.hidden = 448, c.heads = 4, c.vocab = 256, c.seq = 200;
  ModelProfile m = *profileModel(*buildSyntheticModel(c, ctx));
  EXPECT_NEAR(m.layer.fusedAttentionFlops,
              m.layer.attentionFlops * 3 * 128 * 128 / (200.0 * 200) * 128 / 112,
              1e-9 * m.layer.attentionFlops);
}

// A collective the backward hides still slows it: by the cluster's
// overlap_slowdown of the time they overlap (a GPU preset's 18.9%).
TEST(PlannerPredict, CollectivesBesideComputeSlowIt) {
  ClusterSpec c = cluster("a100-80g:2x8");
  ASSERT_DOUBLE_EQ(c.overlapSlowdown, 0.189);
  double params = 1e9, bytes = 2 * params * 8;
  double allReduce = collectiveTime(Collective::AllReduce, bytes, 16, 1, c);
  // The last microbatch's backward takes twice the all-reduce.
  double backward = 2 * allReduce;
  ModelProfile m = handModel(backward / 2 / 8 * c.peakFlops16 * c.matmulEfficiency, params);
  Plan plan = cantFail(parsePlan("dp=16,zero=1,mbs=1,micro=4"));
  EXPECT_NEAR(cantFail(predict(m, c, plan)).time.dataParallel, 0.189 * allReduce,
              1e-9 * allReduce);
  c.overlapSlowdown = 0;
  EXPECT_EQ(cantFail(predict(m, c, plan)).time.dataParallel, 0);
}

// Megatron-LM splits the embedding and the LM head over the vocabulary
// (--vocab-parallel); colo keeps them whole (TensorParallelReplicates...).
TEST(PlannerPredict, VocabParallelSplitsEmbeddingAndHead) {
  mlir::MLIRContext ctx;
  ModelProfile m = gpt2Small(ctx);
  m.vocabParallel = true;
  ClusterSpec c = cluster("a100-80g:1x2");
  Prediction r = cantFail(predict(m, c, cantFail(parsePlan("dp=1,tp=2,mbs=2,micro=1"))));
  double params = (m.layers * m.layer.params + m.pre.params + m.post.params) / 2;
  EXPECT_NEAR(r.memory.params, 2 * params, 1);
  // Four all-reduces per layer, one after the embedding, one in the head's
  // backward.
  double bytes = 2.0 * m.seq * m.hidden * m.elementBytes;
  EXPECT_NEAR(r.time.tensorParallel,
              (m.layers * 4 + 2) * collectiveTime(Collective::AllReduce, bytes, 2, 1, c),
              1e-12);
  EXPECT_NEAR(r.commBytesDevice, (m.layers * 4 + 2) * bytes, 1);
  // The logits' gradient is split too: in the training precision, as the
  // GPU presets' fused loss writes it, and in float32 where the loss is not
  // fused, which also keeps the float32 logits (an activation).
  EXPECT_NEAR(r.memory.buffers, c.workspace + 2.0 * m.seq * m.vocab * m.elementBytes / 2, 1);
  c.fusedLoss = 0;
  Prediction unfused = cantFail(predict(m, c, cantFail(parsePlan("dp=1,tp=2,mbs=2,micro=1"))));
  EXPECT_NEAR(unfused.memory.buffers, c.workspace + 2.0 * m.seq * m.vocab * 4 / 2, 1);
  EXPECT_NEAR(unfused.memory.activations - r.memory.activations, 2.0 * m.seq * m.vocab * 4 / 2, 1);
}

// An A100 computes 108 output tiles of 256 x 128 at once: a product of 109
// tiles takes two waves, the second nearly empty, and one of 108 one; tensor
// parallelism splits a widening product's columns and a narrowing one's
// depth (NVIDIA's tile and wave quantization).
TEST(PlannerPredict, MatrixProductsRunInWaves) {
  ClusterSpec c = cluster("a100-80g:1x2");
  auto matmulTime = [&](Gemm g, const char *plan) {
    ModelProfile m = handModel(2 * g.rows * g.depth * g.cols, 1e6);
    m.layer.gemms = {g};
    return cantFail(predict(m, c, cantFail(parsePlan(plan)))).computeMatmul;
  };
  double peak = c.peakFlops16 * c.matmulEfficiency;
  auto ideal = [&](Gemm g, double split) {
    return 3 * 8 * 2 * g.rows * g.depth * g.cols / split / peak;
  };
  Gemm full{256, 1024, 128 * 108, 1, true}, oneMore{256, 1024, 128 * 109, 1, true};
  EXPECT_NEAR(matmulTime(full, "dp=2,mbs=1"), ideal(full, 1), 1e-12);
  EXPECT_NEAR(matmulTime(oneMore, "dp=2,mbs=1"), ideal(oneMore, 1) * 216 / 109, 1e-12);
  // tp = 2 halves the widening product's columns (55 of 108 slots used, the
  // last tile half empty) but leaves a narrowing one's tiles whole.
  Gemm widens{256, 1024, 128 * 109, 1, true}, narrows{256, 128 * 109, 1024, 1, true};
  EXPECT_NEAR(matmulTime(widens, "tp=2,mbs=1"), ideal(widens, 2) * 108 / 54.5, 1e-12);
  EXPECT_NEAR(matmulTime(narrows, "tp=2,mbs=1"), ideal(narrows, 2) * 108 / 8, 1e-12);
}

// A convolution timed on this machine is charged the seconds measured (a
// fixed part and one per sample), not its FLOPs at the GEMM rate; compute
// is three forwards, so its step costs what was measured.
TEST(PlannerPredict, TimedConvolutionsCostWhatWasMeasured) {
  ClusterSpec c = cluster("a100-80g:1x2");
  ModelProfile m = handModel(1e9, 1e6);
  ConvCost conv;
  conv.flops = 1e9; // all of the layer's matmul FLOPs
  conv.timed = true;
  conv.fixedSeconds = 0.003;
  conv.perSampleSeconds = 0.002;
  m.layer.convs = {conv};
  Prediction p = cantFail(predict(m, c, cantFail(parsePlan("dp=2,mbs=4"))));
  EXPECT_NEAR(p.computeMatmul, 8 * (0.003 + 4 * 0.002), 1e-12);
  m.layer.convs[0].timed = false;
  p = cantFail(predict(m, c, cantFail(parsePlan("dp=2,mbs=4"))));
  EXPECT_NEAR(p.computeMatmul, 3 * 8 * 4 * 1e9 / (c.peakFlops16 * c.matmulEfficiency), 1e-12);
}

// local-cpu is this machine: its convolutions are timed there, as colo run
// computes them; a preset of another machine leaves them to the FLOP rate.
TEST(PlannerProfile, LocalCpuTimesConvolutions) {
  ConvCost conv;
  conv.shape = {/*c=*/8, /*h=*/16, /*w=*/16, /*k=*/16, /*r=*/3, /*s=*/3, /*oh=*/16, /*ow=*/16,
                1, 1, 1, 1, 1, 1, 1, 1, 1};
  conv.flops = 2.0 * 8 * 9 * 16 * 16 * 16;
  ModelProfile m = handModel(conv.flops, 1e3);
  m.layer.convs = {conv};
  timeConvolutions(m, cluster("a100-80g"));
  EXPECT_FALSE(m.layer.convs[0].timed);
  timeConvolutions(m, cluster("local-cpu:1x1"));
  const ConvCost &timed = m.layer.convs[0];
  ASSERT_TRUE(timed.timed);
  EXPECT_GT(timed.fixedSeconds + timed.perSampleSeconds, 0);
  EXPECT_GE(timed.perSampleSeconds, 0);
}

// A compiled program's convolution: on local-cpu timed as the runtime runs
// it, elsewhere its FLOPs at the achievable peak plus a launch.
TEST(PlannerStepTimes, LocalCpuTimesConvolutionSteps) {
  runtime::Program p;
  runtime::Step *step = p.add_steps();
  step->set_flops(2 * 8 * 16 * 9 * 16 * 16 * 16);
  runtime::Conv2d *conv = step->mutable_conv();
  conv->set_mode(runtime::Conv2d::FORWARD);
  conv->set_n(8), conv->set_c(8), conv->set_h(16), conv->set_w(16), conv->set_k(16);
  conv->set_r(3), conv->set_s(3), conv->set_oh(16), conv->set_ow(16);
  conv->set_pad_t(1), conv->set_pad_l(1), conv->set_pad_b(1), conv->set_pad_r(1);
  ClusterSpec gpu = cluster("a100-80g:1x1");
  EXPECT_NEAR(predictStepTimes(p, gpu).total,
              double(step->flops()) / (gpu.peakFlops32 * gpu.matmulEfficiency) +
                  kKernelLaunchSeconds,
              1e-15);
  double local = predictStepTimes(p, cluster("local-cpu:1x1")).total;
  EXPECT_GT(local, kKernelLaunchSeconds);
  EXPECT_LT(local, 1.0);
}

// Fused elementwise kernels (colo's on a CPU) move only what comes from a
// matrix product, a parameter or an input, and what something other than a
// memory-bound op reads: fewer bytes than the ops one by one.
TEST(PlannerProfile, FusedKernelsMoveLessThanTheirOps) {
  mlir::MLIRContext ctx;
  ModelProfile m = gpt2Small(ctx);
  EXPECT_GT(m.layer.fusedBytes, 0);
  EXPECT_LT(m.layer.fusedBytes, m.layer.memoryBytes);
  ClusterSpec c = cluster("a100-80g:1x1");
  auto memoryTime = [&](const ClusterSpec &on) {
    return cantFail(predict(m, on, cantFail(parsePlan("mbs=1,micro=1")))).computeMemory;
  };
  ClusterSpec fused = c;
  fused.fusedElementwise = 1;
  double perSample = m.pre.memoryBytes + m.layers * m.layer.memoryBytes + m.post.memoryBytes;
  double fusedPerSample = m.pre.fusedBytes + m.layers * m.layer.fusedBytes + m.post.fusedBytes;
  EXPECT_NEAR(memoryTime(c) - memoryTime(fused),
              3 * (perSample - fusedPerSample) / (c.memoryBandwidth * c.memoryEfficiency),
              1e-9 * memoryTime(c));
}

// GPT-2's head reads the token embedding transposed: an op of the weights
// alone, which moves the table once per microbatch however many samples it
// holds, and parameter loads move nothing.
TEST(PlannerProfile, WeightOnlyOpsCostOncePerMicrobatch) {
  mlir::MLIRContext ctx;
  ModelProfile m = gpt2Small(ctx);
  double table = double(m.vocab) * m.hidden * m.elementBytes;
  EXPECT_NEAR(m.post.weightBytes, 2 * table, 1);
  EXPECT_LT(m.post.memoryBytes, table / 8);
  EXPECT_EQ(m.layer.weightBytes, 0);
  // Twice the samples: twice the per-sample bytes, the table's once.
  ClusterSpec c = cluster("a100-80g:1x1");
  auto memoryTime = [&](const char *plan) {
    return cantFail(predict(m, c, cantFail(parsePlan(plan)))).computeMemory;
  };
  double one = memoryTime("mbs=1,micro=1"), two = memoryTime("mbs=2,micro=1");
  double weightOps = m.pre.weightBytes + m.layers * m.layer.weightBytes + m.post.weightBytes;
  double tableTime = 3 * weightOps / (c.memoryBandwidth * c.memoryEfficiency);
  EXPECT_NEAR(two - one, one - tableTime, 1e-9 * one);
}

// GPT-2's wte is tied to the LM head: with pipeline stages the last one keeps a
// copy, and the two exchange their gradients once per step.
TEST(PlannerPredict, PipelineStagesShareTiedWeights) {
  ModelProfile m = handModel(1e9, 1e6);
  m.elementBytes = 4;
  m.pre.params = 3e6;
  ClusterSpec c = cluster("a100-80g:1x2");
  Plan plan = cantFail(parsePlan("pp=2,mbs=1,micro=2,schedule=1f1b"));
  Prediction untied = cantFail(predict(m, c, plan));
  m.tiedParams = 3e6;
  Prediction tied = cantFail(predict(m, c, plan));
  // Stage 1: 4 layers and the copy, 7e6 parameters like stage 0.
  EXPECT_NEAR(tied.memory.params, 4 * 7e6, 1);
  double boundary = 1.0 * m.seq * m.hidden * 4;
  EXPECT_NEAR(untied.commBytesDevice, 2 * boundary, 1);
  EXPECT_NEAR(tied.commBytesDevice, 2 * boundary + 4 * 3e6, 1);
  EXPECT_NEAR(tied.commBytesAll, 2 * (2 * boundary + 4 * 3e6), 1);
  EXPECT_GT(tied.time.pipelineComm, untied.time.pipelineComm);
}

// colo's MPI rings on local-cpu receive into one chunk of the largest
// reduction (runtime/MpiCommunicator.cpp); NCCL's buffers on a GPU are in the
// workspace.
TEST(PlannerMemory, CollectiveStagingIsOneChunk) {
  ModelProfile m = handModel(1e9, 1e6);
  m.elementBytes = 4;
  ClusterSpec gpu = cluster("a100-80g:1x8");
  EXPECT_EQ(gpu.collectiveStaging, 0);
  EXPECT_EQ(cantFail(predict(m, gpu, cantFail(parsePlan("dp=8,mbs=1,micro=1")))).memory.staging,
            0);
  ClusterSpec c = gpu;
  c.collectiveStaging = 1;
  auto staging = [&](const char *plan) {
    Plan p = cantFail(parsePlan(plan));
    c.devicesPerNode = p.worldSize();
    return cantFail(predict(m, c, p)).memory.staging;
  };
  double grads = 4.0 * 8 * 1e6; // fp32, 8 layers: 32 MB, one 25 MiB bucket
  double bucket = 25.0 * (1 << 20);
  EXPECT_NEAR(staging("dp=4,mbs=1,micro=1"), bucket / 4, 1);
  EXPECT_NEAR(staging("dp=2,zero=2,mbs=1,micro=1"), bucket / 2, 1);
  EXPECT_NEAR(staging("dp=4,zero=2,mbs=1,micro=1"), 2 * bucket / 4, 1);
  // Tensor parallelism: 1/tp of a layer output's all-reduce; the gradients'
  // bucket of each dp group is 1/tp of the parameters.
  EXPECT_NEAR(staging("tp=2,mbs=2,micro=1"), 2.0 * m.seq * m.hidden * 4 / 2, 1);
  EXPECT_NEAR(staging("dp=2,tp=4,mbs=1,micro=1"), std::min(grads / 4, bucket) / 2, 1);
  EXPECT_EQ(staging("dp=1,mbs=1,micro=1"), 0);
}

// Ring all-reduce: 2(n-1)/n S/B + 2(n-1) alpha (REFERENCES.md).
TEST(PlannerComm, RingWithinANode) {
  ClusterSpec c = cluster("a100-80g");
  double S = 1e9, n = 8;
  double expected = 2 * (n - 1) / n * S / c.intraBandwidth + 2 * (n - 1) * c.intraLatency;
  EXPECT_DOUBLE_EQ(collectiveTime(Collective::AllReduce, S, 8, 1, c), expected);
  double gather = (n - 1) / n * S / c.intraBandwidth + (n - 1) * c.intraLatency;
  EXPECT_DOUBLE_EQ(collectiveTime(Collective::AllGather, S, 8, 1, c), gather);
  EXPECT_EQ(collectiveTime(Collective::AllReduce, S, 1, 1, c), 0);
}

TEST(PlannerComm, HierarchicalAcrossNodes) {
  ClusterSpec c = cluster("a100-80g:4x8");
  double S = 1e9;
  // 32 ranks, 8 per node: inside each node, then 4 nodes on 1/8 of the data.
  double intra = 2.0 * 7 / 8 * S / c.intraBandwidth + 2 * 7 * c.intraLatency;
  double inter = 2.0 * 3 / 4 * (S / 8) / c.interBandwidth + 2 * 3 * c.interLatency;
  EXPECT_NEAR(collectiveTime(Collective::AllReduce, S, 32, 1, c), intra + inter, 1e-12);
  // Members one node apart use only the inter-node links.
  double spread = 2.0 * 3 / 4 * S / c.interBandwidth + 2 * 3 * c.interLatency;
  EXPECT_NEAR(collectiveTime(Collective::AllReduce, S, 4, 8, c), spread, 1e-12);
}

TEST(PlannerPredict, PipelineBubbleIsPMinusOneOverM) {
  mlir::MLIRContext ctx;
  ModelProfile m = gpt2Small(ctx);
  ClusterSpec c = cluster("a100-80g:1x4");
  Plan p = cantFail(parsePlan("dp=1,tp=1,pp=4,mbs=1,micro=8,schedule=1f1b"));
  Prediction r = cantFail(predict(m, c, p));
  // No tensor parallelism: a microbatch is its forward and backward.
  EXPECT_NEAR(r.time.bubble / r.time.compute, 3.0 / 8, 1e-9);
  double layers = 0;
  for (double l : r.stageLayers)
    layers += l;
  EXPECT_EQ(layers, 12);
  Plan v = cantFail(parsePlan("dp=1,tp=1,pp=4,mbs=1,micro=8,schedule=interleaved,v=3"));
  Prediction ri = cantFail(predict(m, c, v));
  EXPECT_NEAR(ri.time.bubble / ri.time.compute, 3.0 / 8 / 3, 1e-9);
}

TEST(PlannerPredict, TensorParallelMovesFourAllReducesPerLayer) {
  mlir::MLIRContext ctx;
  ModelProfile m = gpt2Small(ctx);
  ClusterSpec c = cluster("a100-80g:1x2");
  Prediction r = cantFail(predict(m, c, cantFail(parsePlan("dp=1,tp=2,mbs=2,micro=1"))));
  double bytes = 2.0 * m.seq * m.hidden * m.elementBytes; // b s h, bf16
  EXPECT_NEAR(r.time.tensorParallel,
              m.layers * 4 * collectiveTime(Collective::AllReduce, bytes, 2, 1, c), 1e-12);
}

TEST(PlannerPredict, RejectsPlansTheModelCannotTake) {
  mlir::MLIRContext ctx;
  ModelProfile m = gpt2Small(ctx); // 12 heads, 12 layers, hidden 768
  auto error = [&](const char *cl, const char *plan) {
    auto r = predict(m, cluster(cl), cantFail(parsePlan(plan)));
    EXPECT_FALSE(static_cast<bool>(r));
    return r ? std::string() : toString(r.takeError());
  };
  EXPECT_NE(error("a100-80g:1x8", "dp=1,tp=8").find("does not divide the 12"),
            std::string::npos);
  EXPECT_NE(error("a100-80g:2x8", "dp=1,pp=16").find("exceeds the 12 layers"),
            std::string::npos);
  EXPECT_NE(error("a100-80g:1x8", "dp=2").find("the cluster has 8"), std::string::npos);
}

TEST(PlannerPlan, InlineAndJsonRoundTrip) {
  Plan p = cantFail(parsePlan("dp=4,tp=2,pp=2,sp,zero=1,mbs=2,micro=8,schedule=interleaved,v=2"
                              ",recompute=selective,offload=optimizer"));
  EXPECT_EQ(p.worldSize(), 16);
  EXPECT_EQ(p.globalBatch(), 64);
  std::string json = llvm::formatv("{0}", toJSON(p)).str();
  Plan q = cantFail(parsePlanJSON(json, "test"));
  EXPECT_EQ(p.str(), q.str());
}

TEST(PlannerPlan, VocabInlineAndJson) {
  Plan p = cantFail(parsePlan("dp=2,tp=2,vocab"));
  EXPECT_TRUE(p.vocabParallel);
  EXPECT_EQ(p.str(), "dp=2,tp=2,pp=1,vocab,zero=0,mbs=1,micro=1");
  Plan q = cantFail(parsePlanJSON(R"({"mesh": {"tp": 2}, "vocab": true})", "test"));
  EXPECT_TRUE(q.vocabParallel);
  EXPECT_EQ(cantFail(parsePlanJSON(llvm::formatv("{0}", toJSON(p)).str(), "test")).str(),
            p.str());
  EXPECT_FALSE(cantFail(parsePlan("tp=2")).vocabParallel);
}

TEST(PlannerPlan, BatchNormStatisticsInlineAndJson) {
  Plan p = cantFail(parsePlan("dp=2,bn=local"));
  EXPECT_TRUE(p.localBatchNorm);
  EXPECT_EQ(p.str(), "dp=2,tp=1,pp=1,zero=0,mbs=1,micro=1,bn=local");
  EXPECT_EQ(cantFail(parsePlanJSON(llvm::formatv("{0}", toJSON(p)).str(), "test")).str(),
            p.str());
  EXPECT_FALSE(cantFail(parsePlan("dp=2,bn=sync")).localBatchNorm);
  EXPECT_FALSE(cantFail(parsePlan("dp=2")).localBatchNorm);
  auto error = parsePlan("dp=2,bn=global");
  ASSERT_FALSE(static_cast<bool>(error));
  EXPECT_NE(toString(error.takeError()).find("unknown batch norm statistics 'global'"),
            std::string::npos);
}

TEST(PlannerPlan, TwoAndAHalfDimensionalInlineAndJson) {
  Plan p = cantFail(parsePlan("dp=2,tp2p5d=2,4,zero=1,mbs=8"));
  EXPECT_EQ(p.tp2d, 2);
  EXPECT_EQ(p.tp2dDepth, 4);
  EXPECT_EQ(p.worldSize(), 32);
  EXPECT_EQ(p.str(), "dp=2,tp=1,pp=1,tp2p5d=2,4,zero=1,mbs=8,micro=1");
  EXPECT_EQ(cantFail(parsePlanJSON(llvm::formatv("{0}", toJSON(p)).str(), "test")).str(), p.str());
  EXPECT_EQ(cantFail(parsePlan(p.str())).str(), p.str());
  EXPECT_EQ(cantFail(parsePlan("tp2p5d=2,1")).str(), cantFail(parsePlan("tp2d=2")).str());
}

TEST(PlannerPlan, ThreeDimensionalInlineAndJson) {
  Plan p = cantFail(parsePlan("dp=2,tp3d=2,zero=1,mbs=8"));
  EXPECT_EQ(p.tp3d, 2);
  EXPECT_EQ(p.worldSize(), 16);
  EXPECT_EQ(p.str(), "dp=2,tp=1,pp=1,tp3d=2,zero=1,mbs=8,micro=1");
  EXPECT_EQ(cantFail(parsePlanJSON(llvm::formatv("{0}", toJSON(p)).str(), "test")).str(), p.str());
  EXPECT_EQ(cantFail(parsePlan(p.str())).str(), p.str());
  auto error = parsePlan("tp3d=2,tp2d=2");
  ASSERT_FALSE(static_cast<bool>(error));
  EXPECT_NE(toString(error.takeError()).find("choose one tensor parallelism"), std::string::npos);
}

TEST(PlannerPlan, InvalidPlansNameTheConstraint) {
  auto message = [](const char *text) {
    auto p = parsePlan(text);
    EXPECT_FALSE(static_cast<bool>(p)) << text;
    return p ? std::string() : toString(p.takeError());
  };
  EXPECT_NE(message("dp=2,bogus=1").find("unknown plan field 'bogus'"), std::string::npos);
  EXPECT_NE(message("zero=4").find("ZeRO stage"), std::string::npos);
  EXPECT_NE(message("tp=0").find("'tp'"), std::string::npos);
  EXPECT_NE(message("pp=4,micro=6,schedule=interleaved,v=2").find("multiple of pp"),
            std::string::npos);
  EXPECT_NE(message("sp").find("tp > 1"), std::string::npos);
  EXPECT_NE(message("dp=2,vocab").find("vocab parallelism needs tp > 1"), std::string::npos);
  EXPECT_NE(message("tp2p5d=2").find("tp2p5d=q,d"), std::string::npos);
  EXPECT_NE(message("tp2p5d=2,dp=2").find("tp2p5d=q,d"), std::string::npos);
  EXPECT_NE(message("tp2p5d=2,0").find("'depth'"), std::string::npos);
  EXPECT_NE(message("depth=2").find("needs a grid of side q >= 2"), std::string::npos);
  EXPECT_NE(message("tp2p5d=2,2,tp=2").find("choose one tensor parallelism"), std::string::npos);
  EXPECT_NE(toString(parsePlanJSON("{\"mesh\": {\"dp\": \"x\"}}", "f").takeError())
                .find("integer"),
            std::string::npos);
}

TEST(PlannerSearch, DeterministicAndFeasible) {
  mlir::MLIRContext ctx;
  ModelProfile m = gpt2Small(ctx);
  ClusterSpec c = cluster("a100-80g:2x8");
  SearchOptions o;
  o.globalBatch = 64;
  SearchResult a = cantFail(searchPlans(m, c, o));
  o.threads = 1;
  SearchResult b = cantFail(searchPlans(m, c, o));
  ASSERT_FALSE(a.best.empty());
  ASSERT_EQ(a.best.size(), b.best.size());
  for (size_t i = 0; i < a.best.size(); ++i) {
    EXPECT_EQ(a.best[i].plan.str(), b.best[i].plan.str());
    EXPECT_TRUE(a.best[i].fits);
    EXPECT_EQ(a.best[i].plan.globalBatch(), 64);
    if (i)
      EXPECT_LE(a.best[i - 1].stepTime, a.best[i].stepTime);
  }
}

// Where keeping every activation does not fit, the search offers
// recompute=budget: the solver's least recomputation per layer and stage,
// faster than recomputing every layer, with the device memory it was fitted
// to recorded for colo compile.
TEST(PlannerSearch, BudgetWhereKeepingEverythingDoesNotFit) {
  mlir::MLIRContext ctx;
  ModelProfile m = gpt2Small(ctx);
  ClusterSpec c = cluster("a100-80g:1x1");
  c.fusedAttention = 0;
  auto with = [&](const char *recompute) {
    return cantFail(predict(
        m, c, cantFail(parsePlan(std::string("dp=1,mbs=16,micro=1,recompute=") + recompute))));
  };
  c.deviceMemory = (with("none").memory.total() + with("full").memory.total()) / 2 / 0.92;
  SearchOptions o;
  o.globalBatch = 16;
  o.topK = 1 << 20;
  o.allowOffload = false;
  SearchResult r = cantFail(searchPlans(m, c, o));
  auto find = [&](const char *text) -> const Prediction * {
    for (const Prediction &p : r.best)
      if (p.plan.str() == text)
        return &p;
    return nullptr;
  };
  EXPECT_EQ(find("dp=1,tp=1,pp=1,zero=0,mbs=16,micro=1"), nullptr);
  const Prediction *budget = find("dp=1,tp=1,pp=1,zero=0,mbs=16,micro=1,recompute=budget");
  const Prediction *full = find("dp=1,tp=1,pp=1,zero=0,mbs=16,micro=1,recompute=full");
  ASSERT_NE(budget, nullptr);
  ASSERT_NE(full, nullptr);
  EXPECT_LT(budget->stepTime, full->stepTime);
  EXPECT_EQ(budget->plan.deviceMemory, int64_t(0.92 * c.deviceMemory));
  Plan back = cantFail(parsePlanJSON(llvm::formatv("{0}", toJSON(budget->plan)).str(), "plan"));
  EXPECT_EQ(back.deviceMemory, budget->plan.deviceMemory);
}

TEST(PlannerSearch, InfeasibleRequestIsExplained) {
  mlir::MLIRContext ctx;
  TransformerConfig cfg = cantFail(modelPreset("llama2-70b"));
  auto module = buildSyntheticModel(cfg, ctx);
  ModelProfile m = *profileModel(*module);
  SearchOptions o;
  o.globalBatch = 16;
  o.allowOffload = false;
  SearchResult r = cantFail(searchPlans(m, cluster("rtx2060:1x2"), o));
  EXPECT_TRUE(r.best.empty());
  ASSERT_TRUE(r.closest.has_value());
  EXPECT_GT(r.closest->memory.total(), cluster("rtx2060").deviceMemory);
  EXPECT_FALSE(r.suggestions.empty());
}

// Ulysses over 2 ranks: each runs the embedding and the layers on half of
// every sample's positions and the head whole; per layer 8 all-to-alls of
// its b*s/2*h block (half of it sent), the gather before the head, and the
// gradients' all-reduce over sp once per step (colo-ulysses, colo-pipeline).
TEST(PlannerPredict, UlyssesSplitsTheLayersAndExchangesHeads) {
  mlir::MLIRContext ctx;
  ModelProfile m = gpt2Small(ctx);
  ClusterSpec c = cluster("a100-80g:1x2");
  Prediction one = cantFail(predict(m, cluster("a100-80g:1x1"),
                                    cantFail(parsePlan("mbs=2,micro=1"))));
  Prediction r = cantFail(predict(m, c, cantFail(parsePlan("ulysses=2,mbs=2,micro=1"))));
  EXPECT_LT(r.time.compute, one.time.compute);
  EXPECT_GT(r.time.compute, one.time.compute / 2); // the head runs whole
  EXPECT_LT(r.memory.activations, one.memory.activations);
  double block = 2.0 * m.seq * m.hidden * m.elementBytes / 2;
  double params = m.layers * m.layer.params + m.pre.params + m.post.params;
  EXPECT_NEAR(r.commBytesDevice,
              m.layers * 8 * block / 2 + 2 * block / 2 + 2.0 * params * 2 / 2, 1);
  EXPECT_GT(r.time.ulysses, m.layers * 8 * collectiveTime(Collective::AllToAll, block, 2, 1, c));
  // The same FLOPs: MFU counts the model's, not a rank's.
  EXPECT_NEAR(r.mfu * r.stepTime * 2, one.mfu * one.stepTime, 1e-9);
}
