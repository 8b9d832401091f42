// The order of each pipeline rank's work (PipelineSchedule.h): Megatron-LM's
// GPipe, 1F1B, interleaved 1F1B and zero-bubble H1 in closed form; and a
// timeline of any of them with given durations.
#include "colo/Passes/PipelineSchedule.h"

#include <algorithm>

using namespace colo;

namespace {

/// Qi et al.'s ZB-H1 on rank r of pp (one stage each): 1F1B's forwards,
/// each input gradient where 1F1B runs the whole backward, and the weight
/// gradient of microbatch k - r after input gradient k; the last r + 1 weight
/// gradients end the step, where 1F1B's rank r waits for the others. Rank r
/// holds at most pp - r microbatches between forward and input gradient (as
/// 1F1B) and pp between forward and weight gradient (1F1B's first rank's
/// activations). With forward, input and weight gradient one unit each, the
/// bubble is pp - 1 units against 1F1B's 3 (pp - 1).
std::vector<PipelineAction> zeroBubbleH1(int64_t r, int64_t pp, int64_t micro) {
  std::vector<PipelineAction> actions;
  int64_t warmup = std::min(pp - r, micro);
  for (int64_t k = 0; k < warmup; ++k)
    actions.push_back({PipelinePhase::Forward, r, k});
  int64_t weightGrads = 0;
  for (int64_t k = 0; k < micro; ++k) {
    actions.push_back({PipelinePhase::InputGrad, r, k});
    if (k >= r)
      actions.push_back({PipelinePhase::WeightGrad, r, weightGrads++});
    if (k + warmup < micro)
      actions.push_back({PipelinePhase::Forward, r, k + warmup});
  }
  for (; weightGrads < micro; ++weightGrads)
    actions.push_back({PipelinePhase::WeightGrad, r, weightGrads});
  return actions;
}

} // namespace

std::vector<PipelineAction> colo::pipelineOrder(int64_t r, int64_t pp, int64_t v, int64_t micro,
                                                PipelineSchedule kind) {
  std::vector<PipelineAction> actions;
  if (kind == PipelineSchedule::ZeroBubbleH1)
    return zeroBubbleH1(r, pp, micro);
  if (kind == PipelineSchedule::GPipe) {
    for (int64_t c = 0; c < v; ++c)
      for (int64_t m = 0; m < micro; ++m)
        actions.push_back({PipelinePhase::Forward, c * pp + r, m});
    for (int64_t c = v - 1; c >= 0; --c)
      for (int64_t m = 0; m < micro; ++m)
        actions.push_back({PipelinePhase::Backward, c * pp + r, m});
    return actions;
  }
  // 1F1B; interleaved: forward k runs chunk (k / pp) mod v on microbatch
  // (k / (pp v)) pp + k mod pp, backward k the chunks in reverse.
  int64_t total = micro * v;
  auto microOf = [&](int64_t k) { return (k / (pp * v)) * pp + k % pp; };
  auto forward = [&](int64_t k) {
    return PipelineAction{PipelinePhase::Forward, ((k / pp) % v) * pp + r, v == 1 ? k : microOf(k)};
  };
  auto backward = [&](int64_t k) {
    return PipelineAction{PipelinePhase::Backward, (v - 1 - (k / pp) % v) * pp + r,
                          v == 1 ? k : microOf(k)};
  };
  int64_t warmup =
      v == 1 ? std::min(pp - r - 1, micro) : std::min((pp - r - 1) * 2 + (v - 1) * pp, total);
  for (int64_t k = 0; k < warmup; ++k)
    actions.push_back(forward(k));
  for (int64_t i = 0; i < total - warmup; ++i) {
    actions.push_back(forward(warmup + i));
    actions.push_back(backward(i));
  }
  for (int64_t k = total - warmup; k < total; ++k)
    actions.push_back(backward(k));
  return actions;
}

std::optional<PipelineTimeline> colo::simulatePipeline(int64_t pp, int64_t v, int64_t micro,
                                                       PipelineSchedule kind,
                                                       llvm::ArrayRef<PhaseTimes> times,
                                                       double hop) {
  int64_t stages = pp * v;
  if (int64_t(times.size()) != stages)
    return std::nullopt;
  std::vector<std::vector<PipelineAction>> orders;
  for (int64_t r = 0; r < pp; ++r)
    orders.push_back(pipelineOrder(r, pp, v, micro, kind));
  // Finish times; negative: not yet run.
  std::vector<std::vector<double>> forwardDone(stages, std::vector<double>(micro, -1)),
      inputGradDone = forwardDone;
  PipelineTimeline out;
  out.busy.assign(pp, 0);
  std::vector<double> freeAt(pp, 0);
  std::vector<size_t> next(pp, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t r = 0; r < pp; ++r) {
      for (; next[r] < orders[r].size(); ++next[r]) {
        const PipelineAction &a = orders[r][next[r]];
        const PhaseTimes &t = times[a.stage];
        // What the action waits for, on which stage.
        double ready = 0;
        auto after = [&](const std::vector<std::vector<double>> &done, int64_t stage) {
          double at = done[stage][a.micro];
          if (at < 0)
            return false;
          ready = std::max(ready, at + (stage % pp == r ? 0 : hop));
          return true;
        };
        double duration = 0;
        bool blocked = false;
        switch (a.phase) {
        case PipelinePhase::Forward:
          blocked = a.stage > 0 && !after(forwardDone, a.stage - 1);
          duration = t.forward;
          break;
        case PipelinePhase::Backward:
        case PipelinePhase::InputGrad:
          blocked = a.stage + 1 < stages && !after(inputGradDone, a.stage + 1);
          duration = t.inputGrad + (a.phase == PipelinePhase::Backward ? t.weightGrad : 0);
          break;
        case PipelinePhase::WeightGrad:
          duration = t.weightGrad;
          break;
        }
        if (blocked)
          break;
        double end = std::max(freeAt[r], ready) + duration;
        freeAt[r] = end;
        out.busy[r] += duration;
        if (a.phase == PipelinePhase::Forward)
          forwardDone[a.stage][a.micro] = end;
        else if (a.phase != PipelinePhase::WeightGrad)
          inputGradDone[a.stage][a.micro] = end;
        progress = true;
      }
    }
  }
  for (int64_t r = 0; r < pp; ++r)
    if (next[r] < orders[r].size())
      return std::nullopt;
  out.makespan = *std::max_element(freeAt.begin(), freeAt.end());
  for (double b : out.busy)
    out.idle.push_back(out.makespan - b);
  return out;
}
