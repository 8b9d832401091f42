//===- TrainLoop.h - the loop of training steps -------------------*- C++ -*-===//
//
// The loop around Session::step() that `colo run` and Python's colo.run
// share: the next batch, the step, the check that the loss and the updated
// parameters are finite, and, when a step fails, the parameters from before
// it brought back, so that a run that goes wrong never writes its broken
// weights.
//
//===----------------------------------------------------------------------===//
#ifndef COLO_RUNTIME_TRAINLOOP_H
#define COLO_RUNTIME_TRAINLOOP_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace colo::runtime {

class Communicator;
class DataSource;
class Session;

/// Snapshots are on by default below this size (a copy of the parameters per
/// step is cheap next to the step itself, which reads them several times).
constexpr int64_t kSnapshotLimit = int64_t(2) << 30;

/// Why a loop stopped.
enum class TrainStop { Done, LossNotFinite, ParameterNotFinite };

struct TrainLoopResult {
  TrainStop stop = TrainStop::Done;
  int64_t stepsRun = 0;      ///< the last step that completed and passed the checks
  double badLoss = 0;        ///< the loss that stopped it (LossNotFinite)
  std::string badParameter;  ///< the parameter that stopped it (ParameterNotFinite)
  std::vector<double> losses;
  int64_t bytesSent = 0;     ///< what the program's collectives sent, this rank
  double seconds = 0;
  /// One line for people: "loss is nan at step 3", empty when Done.
  std::string message() const;
};

/// Runs `steps` more steps of `session`, feeding each a batch from `data`
/// (when the program has inputs). Steps are numbered on from
/// Session::stepsRun() (a run resumed from a checkpoint goes on counting).
/// After each step, `onStep(k, milliseconds)` (before the checks, so that a
/// failing step is reported too), and after each that passes them,
/// `afterGoodStep(k)` (checkpoints). Stops at the first step whose loss is
/// not finite or, when the session keeps snapshots, whose update made a
/// parameter not finite. `comm` (optional) counts the bytes sent.
TrainLoopResult runTrainLoop(Session &session, DataSource *data, int64_t steps,
                             Communicator *comm,
                             const std::function<void(int64_t, double)> &onStep = {},
                             const std::function<void(int64_t)> &afterGoodStep = {});

/// What keepLastGoodWeights did.
enum class GoodWeights { NoSnapshot, NotFinite, Restored };

/// After a stopped loop: brings back the parameters from before the failed
/// step when the session kept a finite copy (collective on every rank), and
/// names the first bad parameter otherwise.
GoodWeights keepLastGoodWeights(Session &session, std::string *badParameter = nullptr);

} // namespace colo::runtime

#endif
