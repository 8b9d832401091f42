// colo-recompute's budget solver (analysis/RecomputeSolver.cpp) against
// exhaustive search over every choice set.
#include "colo/Analysis/RecomputeSolver.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>

using namespace colo;

namespace {

using Chain = std::vector<std::vector<RecomputeChoice>>;

/// Blocks of three choices like a transformer layer's: keep all; recompute
/// the attention core (less kept, a small working set, few FLOPs); recompute
/// all from the input (nothing kept, the whole working set, many FLOPs).
Chain randomChain(int blocks, std::mt19937 &rng) {
  std::uniform_int_distribution<int64_t> bytes(100, 1000);
  std::uniform_real_distribution<double> flops(1, 100);
  Chain chain;
  for (int i = 0; i < blocks; ++i) {
    int64_t all = bytes(rng), core = bytes(rng) % all;
    double f = flops(rng);
    chain.push_back({{all, 0, 0}, {all - core, core, f * 0.2}, {0, all, f}});
  }
  return chain;
}

/// The least FLOPs of any choice set within `budget`, by trying them all.
std::optional<double> exhaustive(const Chain &chain, int64_t budget) {
  std::optional<double> best;
  std::vector<int> choices(chain.size(), 0);
  while (true) {
    if (recomputePeak(chain, choices) <= budget) {
      double f = 0;
      for (size_t i = 0; i < chain.size(); ++i)
        f += chain[i][size_t(choices[i])].flops;
      if (!best || f < *best)
        best = f;
    }
    size_t i = 0;
    while (i < chain.size() && ++choices[i] == int(chain[i].size()))
      choices[i++] = 0;
    if (i == chain.size())
      return best;
  }
}

TEST(RecomputeSolver, MatchesExhaustiveSearchOnTwelveBlocks) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    Chain chain = randomChain(12, rng);
    int64_t all = recomputePeak(chain, std::vector<int>(12, 0));
    for (double fraction : {0.05, 0.2, 0.4, 0.7, 1.0}) {
      int64_t budget = int64_t(double(all) * fraction);
      std::optional<double> want = exhaustive(chain, budget);
      std::optional<RecomputeSolution> got = solveRecompute(chain, budget);
      ASSERT_EQ(want.has_value(), got.has_value()) << trial << " " << fraction;
      if (!want)
        continue;
      EXPECT_DOUBLE_EQ(got->flops, *want) << trial << " " << fraction;
      EXPECT_LE(got->peak, budget);
      EXPECT_EQ(got->peak, recomputePeak(chain, got->choices));
    }
  }
}

TEST(RecomputeSolver, KeepsEverythingWhenItFitsAndRefusesWhatCannotFit) {
  std::mt19937 rng(3);
  Chain chain = randomChain(5, rng);
  int64_t all = recomputePeak(chain, std::vector<int>(5, 0));
  std::optional<RecomputeSolution> s = solveRecompute(chain, all);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->flops, 0);
  EXPECT_EQ(s->choices, std::vector<int>(5, 0));
  // Full recomputation of every block still holds the largest block.
  int64_t largest = 0;
  for (const auto &choices : chain)
    largest = std::max(largest, choices[2].working);
  EXPECT_TRUE(solveRecompute(chain, largest));
  EXPECT_FALSE(solveRecompute(chain, largest - 1));
}

TEST(RecomputeSolver, SolvesLongChainsNeverAboveFullRecomputation) {
  // 96 identical GPT layers (the 175B model's), then 200 random blocks.
  Chain gpt(96, {{34, 0, 0}, {10, 24, 2}, {0, 34, 24}});
  std::mt19937 rng(11);
  for (const Chain &chain : {gpt, randomChain(200, rng)}) {
    int64_t all = recomputePeak(chain, std::vector<int>(chain.size(), 0));
    double full = 0;
    for (const auto &choices : chain)
      full += choices[2].flops;
    for (double fraction : {0.1, 0.3, 0.6}) {
      auto start = std::chrono::steady_clock::now();
      std::optional<RecomputeSolution> s =
          solveRecompute(chain, int64_t(double(all) * fraction));
      double ms = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - start).count();
      std::printf("%zu blocks, budget %.0f%% of keeping all: %.1f ms\n", chain.size(),
                  fraction * 100, ms);
      ASSERT_TRUE(s);
      EXPECT_LE(s->flops, full);
    }
  }
}

} // namespace
