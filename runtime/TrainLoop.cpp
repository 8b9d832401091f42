// The loop of training steps shared by `colo run` and colo.run (TrainLoop.h).
#include "colo/Runtime/TrainLoop.h"

#include "colo/Runtime/Communicator.h"
#include "colo/Runtime/DataSource.h"
#include "colo/Runtime/Session.h"

#include <chrono>
#include <cmath>
#include <sstream>

namespace colo::runtime {

std::string TrainLoopResult::message() const {
  std::ostringstream os;
  int64_t step = stepsRun + 1;
  switch (stop) {
  case TrainStop::Done:
    break;
  case TrainStop::LossNotFinite:
    os << "loss is " << (std::isnan(badLoss) ? "nan" : badLoss > 0 ? "inf" : "-inf")
       << " at step " << step;
    break;
  case TrainStop::ParameterNotFinite:
    os << "the update of step " << step << " made parameter '" << badParameter
       << "' not finite (lower the learning rate or clip gradients)";
    break;
  }
  return os.str();
}

TrainLoopResult runTrainLoop(Session &session, DataSource *data, int64_t steps,
                             Communicator *comm,
                             const std::function<void(int64_t, double)> &onStep,
                             const std::function<void(int64_t)> &afterGoodStep) {
  using clock = std::chrono::steady_clock;
  TrainLoopResult result;
  result.stepsRun = session.stepsRun();
  bool hasLoss = session.executable().program().loss_size() > 0;
  clock::time_point start = clock::now();
  for (int64_t k = result.stepsRun + 1, last = result.stepsRun + steps; k <= last; ++k) {
    clock::time_point t0 = clock::now();
    if (data)
      data->next(session);
    int64_t sentBefore = comm ? comm->stats().bytesSent : 0;
    session.step();
    if (comm)
      result.bytesSent += comm->stats().bytesSent - sentBefore;
    if (onStep)
      onStep(k, std::chrono::duration<double, std::milli>(clock::now() - t0).count());
    double loss = hasLoss ? session.loss() : 0.0;
    if (!std::isfinite(loss)) {
      result.stop = TrainStop::LossNotFinite;
      result.badLoss = loss;
      break;
    }
    if (session.snapshots() && !session.parametersFinite(&result.badParameter)) {
      result.stop = TrainStop::ParameterNotFinite;
      break;
    }
    result.losses.push_back(loss);
    result.stepsRun = k;
    if (afterGoodStep)
      afterGoodStep(result.stepsRun);
  }
  result.seconds = std::chrono::duration<double>(clock::now() - start).count();
  return result;
}

GoodWeights keepLastGoodWeights(Session &session, std::string *badParameter) {
  if (!session.snapshots() || !session.restoreSnapshot())
    return GoodWeights::NoSnapshot;
  return session.parametersFinite(badParameter) ? GoodWeights::Restored
                                                : GoodWeights::NotFinite;
}

} // namespace colo::runtime
