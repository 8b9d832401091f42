// Recomputation under a memory budget (RecomputeSolver.h): the exact dynamic
// program over the chain of blocks.
#include "colo/Analysis/RecomputeSolver.h"

#include <algorithm>
#include <set>

namespace colo {

int64_t recomputePeak(const std::vector<std::vector<RecomputeChoice>> &blocks,
                      const std::vector<int> &choices) {
  int64_t kept = 0, working = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const RecomputeChoice &c = blocks[i][size_t(choices[i])];
    kept += c.kept;
    working = std::max(working, c.working);
  }
  return kept + working;
}

namespace {

/// A point of a block's frontier: the least FLOPs for its kept bytes, and
/// how it was reached (the point of the block before and this block's
/// choice).
struct Point {
  int64_t kept;
  double flops;
  int parent, choice;
};

/// The best choice set whose working sets are all at most `working`, with
/// at most `keptBudget` kept bytes.
std::optional<RecomputeSolution>
solveWithin(const std::vector<std::vector<RecomputeChoice>> &blocks, int64_t working,
            int64_t keptBudget) {
  std::vector<std::vector<Point>> frontiers;
  std::vector<Point> frontier = {{0, 0.0, -1, -1}};
  for (const std::vector<RecomputeChoice> &choices : blocks) {
    // The frontier shifted by each choice is sorted by kept bytes: merge.
    auto byKept = [](const Point &a, const Point &b) {
      return a.kept != b.kept ? a.kept < b.kept : a.flops < b.flops;
    };
    std::vector<Point> next;
    for (int c = 0; c < int(choices.size()); ++c) {
      const RecomputeChoice &choice = choices[size_t(c)];
      if (choice.working > working)
        continue;
      size_t middle = next.size();
      for (int p = 0; p < int(frontier.size()); ++p) {
        int64_t kept = frontier[size_t(p)].kept + choice.kept;
        if (kept > keptBudget)
          break;
        next.push_back({kept, frontier[size_t(p)].flops + choice.flops, p, c});
      }
      std::inplace_merge(next.begin(), next.begin() + long(middle), next.end(), byKept);
    }
    if (next.empty())
      return std::nullopt;
    // Pareto: by kept bytes, each point with fewer FLOPs than all before it.
    std::vector<Point> pruned;
    for (const Point &point : next)
      if (pruned.empty() || point.flops < pruned.back().flops)
        pruned.push_back(point);
    frontiers.push_back(frontier);
    frontier = std::move(pruned);
  }
  // The fewest FLOPs is the last point (FLOPs fall along the frontier).
  RecomputeSolution solution;
  solution.flops = frontier.back().flops;
  solution.choices.resize(blocks.size());
  int index = int(frontier.size()) - 1;
  for (size_t b = blocks.size(); b-- > 0;) {
    const Point &point = b + 1 == blocks.size() ? frontier[size_t(index)]
                                                : frontiers[b + 1][size_t(index)];
    solution.choices[b] = point.choice;
    index = point.parent;
  }
  solution.peak = recomputePeak(blocks, solution.choices);
  return solution;
}

} // namespace

std::optional<RecomputeSolution>
solveRecompute(const std::vector<std::vector<RecomputeChoice>> &blocks, int64_t budget) {
  std::set<int64_t> workingSets = {0};
  for (const std::vector<RecomputeChoice> &choices : blocks)
    for (const RecomputeChoice &c : choices)
      workingSets.insert(c.working);
  // Chains of repeated layers have a few working sets; others up to one per
  // choice, each a program of its own. Beyond kExactWorkingSets the
  // candidates are the largest working set at or below each step of a 10%
  // grid: the peak stays within the budget, the FLOPs can be a little above
  // the optimum.
  constexpr size_t kExactWorkingSets = 32;
  if (workingSets.size() > kExactWorkingSets) {
    std::set<int64_t> grid = {0};
    for (double step = double(*std::next(workingSets.begin())); step <= double(budget);
         step *= 1.1)
      grid.insert(*std::prev(workingSets.upper_bound(int64_t(step))));
    if (int64_t largest = *std::prev(workingSets.upper_bound(budget)); largest > 0)
      grid.insert(largest);
    workingSets = std::move(grid);
  }
  std::optional<RecomputeSolution> best;
  for (int64_t working : workingSets) {
    if (working > budget)
      break;
    std::optional<RecomputeSolution> s = solveWithin(blocks, working, budget - working);
    if (s && (!best || s->flops < best->flops ||
              (s->flops == best->flops && s->peak < best->peak)))
      best = std::move(s);
  }
  return best;
}

} // namespace colo
