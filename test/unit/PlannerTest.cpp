// The planner's cost model against published accounting (ZeRO, alpha-beta
// collectives, pipeline bubbles) and its plan format and search.
#include "colo/Models/SyntheticModels.h"
#include "colo/Planner/Search.h"

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
} // namespace

// ZeRO paper (Rajbhandari et al. 2020), Figure 1: 7.5B parameters, dp = 64.
TEST(PlannerMemory, ZeroPaperExample) {
  const double psi = 7.5e9;
  EXPECT_NEAR(modelStateMemory(psi, 0, 64, false).total() / 1e9, 120.0, 0.05);
  EXPECT_NEAR(modelStateMemory(psi, 1, 64, false).total() / 1e9, 31.4, 0.05);
  EXPECT_NEAR(modelStateMemory(psi, 2, 64, false).total() / 1e9, 16.6, 0.05);
  EXPECT_NEAR(modelStateMemory(psi, 3, 64, false).total() / 1e9, 1.9, 0.05);
  // 16 bytes per parameter: 2 + 2 + 12.
  MemoryBreakdown plain = modelStateMemory(1, 0, 1, false);
  EXPECT_EQ(plain.params, 2);
  EXPECT_EQ(plain.grads, 2);
  EXPECT_EQ(plain.optimizer, 12);
  EXPECT_EQ(modelStateMemory(1, 0, 1, /*offload=*/true).optimizer, 0);
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
  int64_t layers = 0;
  for (int64_t l : r.stageLayers)
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

TEST(PlannerPlan, InvalidPlansNameTheConstraint) {
  auto message = [](const char *text) {
    auto p = parsePlan(text);
    EXPECT_FALSE(static_cast<bool>(p)) << text;
    return p ? std::string() : toString(p.takeError());
  };
  EXPECT_NE(message("dp=2,bogus=1").find("unknown plan field 'bogus'"), std::string::npos);
  EXPECT_NE(message("zero=4").find("ZeRO stage"), std::string::npos);
  EXPECT_NE(message("tp=0").find("'tp'"), std::string::npos);
  EXPECT_NE(message("pp=2,zero=2").find("pipeline"), std::string::npos);
  EXPECT_NE(message("pp=4,micro=6,schedule=interleaved,v=2").find("multiple of pp"),
            std::string::npos);
  EXPECT_NE(message("sp").find("tp > 1"), std::string::npos);
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
