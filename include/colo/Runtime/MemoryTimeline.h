#ifndef COLO_RUNTIME_MEMORYTIMELINE_H
#define COLO_RUNTIME_MEMORYTIMELINE_H

#include "colo/Runtime/Program.pb.h"

#include <string>
#include <vector>

namespace colo::runtime {

/// What a timeline draws: one rank's program, and the seconds each of its
/// steps takes, measured (the profiled steps' mean) and predicted (the cost
/// model's share of the compute queue); either may be empty.
struct TimelineInput {
  const Program *program = nullptr;
  int64_t scratchBytes = 0; ///< the CPU device's operand scratch, on the device
  std::vector<double> measured, predicted;
  std::string title;
};

/// Draws the device and host memory the program holds over one step as SVG:
/// its parts stacked (parameters, optimizer state, inputs and constants,
/// operand scratch, and each temporary from the first step that touches it
/// to the last) over the measured step times, and the total over the
/// predicted ones as a dashed line on the same axes (the areas are drawn
/// over the predicted times when nothing was measured, over step indices
/// when neither is given). Ticks mark the transfers to the host (offload),
/// to the device (fetches, prefetches) and the recomputed steps.
void writeMemoryTimeline(const TimelineInput &input, const std::string &path);

} // namespace colo::runtime

#endif
