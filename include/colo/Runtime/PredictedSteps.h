#ifndef COLO_RUNTIME_PREDICTEDSTEPS_H
#define COLO_RUNTIME_PREDICTEDSTEPS_H

#include <string>
#include <vector>

namespace colo::runtime {

/// The cost model's timeline of one iteration of a rank's program
/// (planner::predictStepTimes), which `colo run --profile` writes beside the
/// measured one: when each step starts on the compute queue and how long it
/// holds it, and for a transfer or an overlapped collective when it runs on
/// its own queue (the copy queue, the network). Seconds from the start of
/// the iteration.
struct PredictedSteps {
  std::vector<double> start, seconds;
  /// [queuedBegin[i], queuedEnd[i]): a transfer on the copy queue, an
  /// overlapped collective on the network; empty for the other steps.
  std::vector<double> queuedBegin, queuedEnd;
  double total = 0; ///< the iteration: the sum of `seconds`
  /// Bytes the rank's collectives send on their rings per iteration.
  double bytesSent = 0;
};

} // namespace colo::runtime

#endif
