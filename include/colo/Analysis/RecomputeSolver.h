//===- RecomputeSolver.h - Recomputation under a memory budget --*- C++ -*-===//
//
// Which blocks of a chain (a model's layers) to keep and which to recompute,
// and how much of each, so that the activations fit a budget at the least
// extra compute: the solver of colo-recompute's `budget` policy, and of the
// planner's costing of it.
//
// Each block has choices (keep everything, recompute its attention core,
// recompute all of it from its input, ...), each with the bytes it keeps
// from its forward to its backward, the bytes its recomputation holds again
// while its backward runs, and the FLOPs it repeats. Blocks' backwards run
// one at a time, so a choice set needs
//
//   peak = sum of the kept bytes + the largest recomputed working set
//
// For every candidate largest working set W the solver solves the
// multiple-choice knapsack over the blocks' choices with at most W working
// bytes, by a dynamic program over the chain that keeps the Pareto frontier
// of (kept bytes, FLOPs) after each block: exact for chains with at most 32
// distinct working sets (a model's repeated layers have a few), and for
// others over working sets on a 10% grid (within the budget, possibly a
// little more recompute than the optimum).
//
//===----------------------------------------------------------------------===//

#ifndef COLO_ANALYSIS_RECOMPUTESOLVER_H
#define COLO_ANALYSIS_RECOMPUTESOLVER_H

#include <cstdint>
#include <optional>
#include <vector>

namespace colo {

struct RecomputeChoice {
  int64_t kept = 0;    ///< bytes kept from the forward to the backward
  int64_t working = 0; ///< bytes recomputed during the block's backward
  double flops = 0;    ///< FLOPs of the recomputation
};

struct RecomputeSolution {
  std::vector<int> choices; ///< per block, an index into its choices
  double flops = 0;         ///< recomputed FLOPs
  int64_t peak = 0;         ///< kept bytes + the largest working set
};

/// The choice per block with the least recomputed FLOPs whose peak is at most
/// `budget` bytes (ties: the smaller peak); nullopt when no choice set fits.
/// Every block needs at least one choice.
std::optional<RecomputeSolution>
solveRecompute(const std::vector<std::vector<RecomputeChoice>> &blocks, int64_t budget);

/// The peak of `choices` (one index per block).
int64_t recomputePeak(const std::vector<std::vector<RecomputeChoice>> &blocks,
                      const std::vector<int> &choices);

} // namespace colo

#endif
