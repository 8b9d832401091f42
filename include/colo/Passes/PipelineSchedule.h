//===- PipelineSchedule.h - The order of a pipeline's work -------*- C++ -*-===//
//
// Each pipeline rank runs its stages' forwards and backwards, microbatch by
// microbatch, in an order the schedule fixes. colo-pipeline builds each
// rank's function in that order; the planner times the same order.
//
// Zero-bubble schedules (Qi et al. 2024) split a backward in two: the
// input-gradient part, which the previous stage waits for, and the
// weight-gradient part, which nothing but the optimizer reads and which can
// therefore run later, in what would otherwise be the pipeline's bubble.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_PASSES_PIPELINESCHEDULE_H
#define COLO_PASSES_PIPELINESCHEDULE_H

#include "colo/Passes/PassEnums.h"

#include "llvm/ADT/ArrayRef.h"

#include <optional>
#include <vector>

namespace colo {

/// What one action of a schedule runs of a stage's work on a microbatch:
/// the forward, the whole backward, or one of its two parts.
enum class PipelinePhase : uint8_t { Forward, Backward, InputGrad, WeightGrad };

struct PipelineAction {
  PipelinePhase phase;
  int64_t stage, micro;
  bool operator==(const PipelineAction &o) const {
    return phase == o.phase && stage == o.stage && micro == o.micro;
  }
};

/// The order in which pipeline rank `rank` of `pp` runs its (virtual)
/// stages' work over `micro` microbatches (`v` virtual stages per rank; stage
/// s lives on rank s mod pp).
std::vector<PipelineAction> pipelineOrder(int64_t rank, int64_t pp, int64_t v, int64_t micro,
                                          PipelineSchedule kind);

/// How long one microbatch's phases take on one stage.
struct PhaseTimes {
  double forward = 0, inputGrad = 0, weightGrad = 0;
};

/// The pipeline's orders run with given durations.
struct PipelineTimeline {
  double makespan = 0;
  std::vector<double> busy, idle; // per rank, idle = makespan - busy
};

/// Runs every rank's pipelineOrder with `times[s]` for stage s (pp * v of
/// them): an action starts when its rank is free and what it needs is done
/// (the stage before's forward; the stage after's input gradient), `hop`
/// seconds later where that was on another rank. nullopt where the orders
/// would wait for each other forever (a schedule error).
std::optional<PipelineTimeline> simulatePipeline(int64_t pp, int64_t v, int64_t micro,
                                                 PipelineSchedule kind,
                                                 llvm::ArrayRef<PhaseTimes> times, double hop);

} // namespace colo

#endif // COLO_PASSES_PIPELINESCHEDULE_H
