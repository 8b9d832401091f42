// The planner and the compiler share one plan space (planner::checkCompilable):
// the search emits only plans that colo compile builds, and each of them does.
#include "colo/Compiler/Compiler.h"
#include "colo/Models/SyntheticModels.h"
#include "colo/Planner/Search.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <set>

using namespace colo;
using namespace colo::planner;

namespace {
/// Every plan the search can emit for `family` (2 layers, vocabulary 256,
/// 8 sequences of 16 tokens, float32) on one node of 4 devices (`cluster`),
/// with vocabulary parallelism asked for or not, compiled as colo compile
/// would (passes, step programs, memory plan; no kernels); with `only`, the
/// plans it accepts. Plans that differ only in the microbatch size are
/// compiled once per microbatch count (1 or more).
void compileEverySearchedPlan(const char *family, bool vocab, const char *cluster = "a100-80g:1x4",
                              bool (*only)(const Plan &) = nullptr) {
  mlir::MLIRContext ctx;
  TransformerConfig config;
  config.family = family;
  config.layers = 2, config.hidden = 32, config.heads = 4, config.vocab = 256;
  config.seq = 16, config.batch = 8, config.dtype = "f32";
  auto model = buildSyntheticModel(config, ctx);
  ASSERT_TRUE(model) << family;
  ModelProfile profile = *profileModel(*model);
  profile.vocabParallel = vocab;

  SearchOptions options;
  options.globalBatch = config.batch;
  options.topK = 1 << 20;
  options.allowActivationOffload = true;
  // The widest plan space: without fused attention the search tries
  // selective recomputation too.
  ClusterSpec spec = cantFail(resolveCluster(cluster));
  spec.fusedAttention = 0;
  SearchResult result = cantFail(searchPlans(profile, spec, options));
  ASSERT_FALSE(result.best.empty());

  TrainStepOptions train = cantFail(
      [&]() -> llvm::Expected<TrainStepOptions> {
        std::string errors;
        llvm::raw_string_ostream os(errors);
        mlir::FailureOr<TrainStepOptions> t = parseTrainStepOptions("loss=lm,optimizer=adamw", os);
        if (failed(t))
          return llvm::createStringError(errors);
        return *t;
      }());
  std::set<std::string> compiled;
  int64_t grids = 0;
  for (const Prediction &p : result.best) {
    if (only && !only(p.plan))
      continue;
    grids += p.plan.tp2d > 1 || p.plan.tp3d > 1;
    EXPECT_FALSE(static_cast<bool>(checkCompilable(p.plan))) << p.plan.str();
    Plan shape = p.plan;
    shape.microBatches = std::min<int64_t>(shape.microBatches, 2);
    shape.microBatch = 0;
    if (!compiled.insert(shape.str()).second)
      continue;
    std::string diagnostics;
    mlir::ScopedDiagnosticHandler capture(&ctx, [&](mlir::Diagnostic &d) {
      diagnostics += d.str() + "\n";
      return mlir::success();
    });
    mlir::OwningOpRef<mlir::ModuleOp> module(model->clone());
    CompileOptions compile;
    compile.train = train;
    compile.plan = p.plan;
    EXPECT_TRUE(succeeded(compileStepFootprint(*module, compile)))
        << family << " " << p.plan.str() << ": " << diagnostics;
  }
  // 2-D tensor parallelism's 2 x 2 grid (or 3-D's cube) is among them.
  EXPECT_GT(grids, 0) << family << " " << cluster;
  std::printf("%s%s: %zu plans searched (%lld on a 2-D grid or a 3-D cube), %zu compiled\n", family,
              vocab ? " (vocab)" : "", result.best.size(), (long long)grids, compiled.size());
}
} // namespace

TEST(PlanSpace, TheTableRefusesWhatColoDoesNotBuild) {
  auto refused = [](const char *text) {
    llvm::Error e = checkCompilable(cantFail(parsePlan(text)));
    std::string message = e ? toString(std::move(e)) : "";
    return message;
  };
  EXPECT_EQ(refused("dp=2,tp=2,zero=3"), "");
  EXPECT_EQ(refused("dp=2,pp=2,zero=3"), "ZeRO stage 3 with pipeline parallelism");
  EXPECT_EQ(refused("tp=2,vocab,pp=2,micro=2"), "");
  EXPECT_EQ(refused("ulysses=2,tp=2"), "");
  EXPECT_EQ(refused("ulysses=2,pp=2,micro=2"), "");
  EXPECT_EQ(refused("dp=2,pp=2,zero=2,micro=2"), "");
  EXPECT_EQ(refused("dp=2,zero=3,recompute=full,offload=optimizer+params"), "");
  EXPECT_EQ(refused("ring=2,tp=2,dp=2,zero=1"), "");
  EXPECT_EQ(refused("ring=2,pp=2,micro=2"), "ring attention with pipeline parallelism");
  EXPECT_EQ(refused("ring=2,micro=2"), "");
  EXPECT_EQ(refused("ring=2,tp=2,vocab"), "ring attention with vocabulary parallelism");
  EXPECT_EQ(refused("dp=2,tp2d=2,zero=3,micro=2"), "");
  EXPECT_EQ(refused("tp2d=2,pp=2,micro=2,schedule=zb-h1"), "");
  EXPECT_EQ(refused("tp2d=2,ulysses=2"),
            "2-D or 2.5-D tensor parallelism with Ulysses or ring attention");
  EXPECT_EQ(refused("tp2p5d=2,2,zero=1"), "");
  EXPECT_EQ(refused("dp=2,tp3d=2,zero=3"), "");
  EXPECT_EQ(refused("tp3d=2,ring=2"), "3-D tensor parallelism with Ulysses or ring attention");
}

TEST(PlanSpace, EveryPlanTheSearchEmitsCompilesGpt) { compileEverySearchedPlan("gpt", false); }
// 2.5-D's smallest grid, 2 x 2 x 2, needs 8 devices; of their plans, those.
TEST(PlanSpace, EveryTwoAndAHalfDimensionalPlanTheSearchEmitsCompiles) {
  for (const char *family : {"gpt", "llama"})
    compileEverySearchedPlan(family, false, "a100-80g:1x8",
                             [](const Plan &p) { return p.tp2dDepth > 1; });
}
// 3-D's smallest cube, 2 x 2 x 2, needs 8 devices; of their plans, those.
TEST(PlanSpace, EveryThreeDimensionalPlanTheSearchEmitsCompiles) {
  for (const char *family : {"gpt", "llama"})
    compileEverySearchedPlan(family, false, "a100-80g:1x8",
                             [](const Plan &p) { return p.tp3d > 1; });
}
TEST(PlanSpace, EveryPlanTheSearchEmitsCompilesGptVocab) {
  compileEverySearchedPlan("gpt", true);
}
TEST(PlanSpace, EveryPlanTheSearchEmitsCompilesLlama) {
  compileEverySearchedPlan("llama", false);
}
