// The pipeline schedules' orders (PipelineSchedule.h): every rank runs each
// of its stages' phases once per microbatch, dependencies first; zero-bubble
// H1 keeps 1F1B's activation memory and leaves a third of its bubble.
#include "colo/Passes/PipelineSchedule.h"

#include <gtest/gtest.h>

#include <map>
#include <tuple>

using namespace colo;

namespace {

using Key = std::tuple<PipelinePhase, int64_t, int64_t>; // phase, stage, micro

/// Each phase of each microbatch once, on its stage's rank.
void expectEveryPhaseOnce(int64_t pp, int64_t micro, PipelineSchedule kind) {
  for (int64_t r = 0; r < pp; ++r) {
    std::map<Key, int> seen;
    for (const PipelineAction &a : pipelineOrder(r, pp, 1, micro, kind)) {
      EXPECT_EQ(a.stage, r);
      ++seen[{a.phase, a.stage, a.micro}];
    }
    bool split = kind == PipelineSchedule::ZeroBubbleH1;
    for (int64_t m = 0; m < micro; ++m) {
      EXPECT_EQ((seen[{PipelinePhase::Forward, r, m}]), 1);
      EXPECT_EQ((seen[{PipelinePhase::Backward, r, m}]), split ? 0 : 1);
      EXPECT_EQ((seen[{PipelinePhase::InputGrad, r, m}]), split ? 1 : 0);
      EXPECT_EQ((seen[{PipelinePhase::WeightGrad, r, m}]), split ? 1 : 0);
    }
  }
}

TEST(PipelineSchedule, EveryPhaseOfEveryMicrobatchRunsOnce) {
  for (int64_t pp : {2, 4, 8})
    for (int64_t micro : {1, 3, 8, 16})
      for (PipelineSchedule kind :
           {PipelineSchedule::GPipe, PipelineSchedule::OneFOneB, PipelineSchedule::ZeroBubbleH1})
        expectEveryPhaseOnce(pp, micro, kind);
}

TEST(PipelineSchedule, ZeroBubbleH1KeepsOneFOneBsActivations) {
  // 1F1B's rank r holds at most pp - r microbatches between forward and
  // backward, its first rank pp. ZB-H1's rank r holds pp - r between forward
  // and input gradient, and at most pp (what 1F1B's first rank holds) until
  // the weight gradient frees the rest.
  int64_t pp = 4, micro = 8;
  for (int64_t r = 0; r < pp; ++r) {
    int64_t forwards = 0, inputGrads = 0, weightGrads = 0, mostInput = 0, mostWeight = 0;
    for (const PipelineAction &a : pipelineOrder(r, pp, 1, micro, PipelineSchedule::ZeroBubbleH1)) {
      if (a.phase == PipelinePhase::Forward) {
        EXPECT_EQ(a.micro, forwards++);
        mostInput = std::max(mostInput, forwards - inputGrads);
        mostWeight = std::max(mostWeight, forwards - weightGrads);
      } else if (a.phase == PipelinePhase::InputGrad) {
        EXPECT_EQ(a.micro, inputGrads++);
        EXPECT_LT(a.micro, forwards);
      } else {
        EXPECT_EQ(a.micro, weightGrads++);
        EXPECT_LT(a.micro, inputGrads);
      }
    }
    EXPECT_EQ(mostInput, pp - r);
    EXPECT_EQ(mostWeight, pp);
  }
}

TEST(PipelineSchedule, ZeroBubbleH1LeavesAThirdOfOneFOneBsBubble) {
  // Qi et al.: with forward, input and weight gradient of one unit each,
  // 1F1B idles 3 (pp - 1) units per rank and ZB-H1 pp - 1.
  int64_t pp = 4, micro = 8;
  std::vector<PhaseTimes> unit(pp, PhaseTimes{1, 1, 1});
  auto oneFOneB = simulatePipeline(pp, 1, micro, PipelineSchedule::OneFOneB, unit, 0);
  auto zb = simulatePipeline(pp, 1, micro, PipelineSchedule::ZeroBubbleH1, unit, 0);
  ASSERT_TRUE(oneFOneB && zb);
  EXPECT_DOUBLE_EQ(oneFOneB->makespan, 3 * micro + 3 * (pp - 1));
  EXPECT_DOUBLE_EQ(zb->makespan, 3 * micro + (pp - 1));
  for (int64_t r = 0; r < pp; ++r) {
    EXPECT_DOUBLE_EQ(oneFOneB->idle[r], 3 * (pp - 1));
    EXPECT_DOUBLE_EQ(zb->idle[r], pp - 1);
  }
}

TEST(PipelineSchedule, TimelinesWaitForTheOtherRanks) {
  // GPipe on 2 ranks, 2 microbatches, forward 1 and backward 2, messages
  // 0.5: rank 1's forwards end at 2.5 and 3.5, its backwards at 5.5 and 7.5;
  // rank 0's backwards start at 6 and 8, the step ends at 10.
  std::vector<PhaseTimes> times(2, PhaseTimes{1, 1, 1});
  auto run = simulatePipeline(2, 1, 2, PipelineSchedule::GPipe, times, 0.5);
  ASSERT_TRUE(run);
  EXPECT_DOUBLE_EQ(run->makespan, 10);
  EXPECT_DOUBLE_EQ(run->busy[0], 6);
  EXPECT_DOUBLE_EQ(run->idle[0], 4);
  // The wrong number of stages is no timeline.
  EXPECT_FALSE(simulatePipeline(2, 1, 2, PipelineSchedule::GPipe, {PhaseTimes{}}, 0));
}

} // namespace
