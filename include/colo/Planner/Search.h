#ifndef COLO_PLANNER_SEARCH_H
#define COLO_PLANNER_SEARCH_H

#include "colo/Planner/CostModel.h"

#include <functional>

namespace colo::planner {

struct SearchOptions {
  int64_t globalBatch = 0;
  int64_t topK = 10;
  bool allowOffload = true;
  /// Activation offload too: its copies hold each device's host link through
  /// the whole forward and backward, at the rate one device alone gets.
  bool allowActivationOffload = false;
  bool allowRecompute = true;
  unsigned threads = 0; // 0: all cores
  /// Called with (done, total) as points are evaluated.
  std::function<void(int64_t, int64_t)> progress;
};

struct SearchResult {
  std::vector<Prediction> best;   // feasible plans, fastest first
  int64_t evaluated = 0, pruned = 0;
  /// When nothing fits: the plan closest to fitting and what would fit.
  std::optional<Prediction> closest;
  std::vector<std::string> suggestions;
};

/// Enumerates mesh factorizations (dp x tp x pp), ZeRO stages, microbatch
/// sizes, schedules (with interleaving), sequence parallelism, recompute and
/// offload; prunes points whose model state alone cannot fit; predicts the
/// rest in parallel. Deterministic: ties break on the plan's text.
llvm::Expected<SearchResult> searchPlans(const ModelProfile &model,
                                         const ClusterSpec &cluster,
                                         const SearchOptions &options);

} // namespace colo::planner

#endif
