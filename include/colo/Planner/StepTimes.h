#ifndef COLO_PLANNER_STEPTIMES_H
#define COLO_PLANNER_STEPTIMES_H

#include "colo/Planner/Cluster.h"
#include "colo/Runtime/PredictedSteps.h"
#include "colo/Runtime/Program.pb.h"

#include <vector>

namespace colo::planner {

/// When each step of one rank's program starts and how long the compute
/// queue spends on it, as the cost model predicts on `c`: a step's time is
/// its matrix FLOPs at the achievable peak plus its memory-bound bytes at
/// the achievable bandwidth plus a kernel launch (what the compiler wrote
/// into Step.flops and Step.bytes); a transfer runs on the copy queue at
/// the host link's bandwidth and an overlapped all-reduce on the network,
/// each beside the later steps, and the step that waits for one takes
/// whatever of it is not done yet. `seconds[i]` is step i's share of the
/// compute queue (the timeline's width of it), `start[i]` when it begins;
/// their sum is the predicted step time.
using StepTimes = runtime::PredictedSteps;

StepTimes predictStepTimes(const runtime::Program &rank, const ClusterSpec &c);

} // namespace colo::planner

#endif
