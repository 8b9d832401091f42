//===- Session.h - Runs a compiled training step -----------------*- C++ -*-===//
//
// A Session owns the memory of one running executable: the 64-byte aligned
// arena of TEMP buffers, the STATE and CONSTANT buffers (loaded from
// state.safetensors when the session starts) and the INPUT buffers. Each
// step() runs the program's steps in order; inputs are set before it (by
// setInput or a DataSource) and losses read after it. Weights go in and out as
// safetensors with PyTorch names. With profiling on, every step is timed and
// can be written as a Chrome trace (chrome://tracing, Perfetto).
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_SESSION_H
#define COLO_RUNTIME_SESSION_H

#include "colo/Runtime/Communicator.h"
#include "colo/Runtime/CpuGemm.h"
#include "colo/Runtime/CpuOps.h"
#include "colo/Runtime/DataSource.h"
#include "colo/Runtime/Device.h"
#include "colo/Runtime/Executable.h"
#include "colo/Runtime/PredictedSteps.h"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace colo::runtime {

/// What loadWeights matched.
struct LoadReport {
  std::vector<std::string> loaded;  ///< file names of the tensors loaded
  std::vector<std::string> unused;  ///< file tensors that match no buffer
  std::vector<std::string> missing; ///< parameters (PyTorch names) not in the file
};

/// Time spent in one step of the program, over all iterations profiled.
struct StepTime {
  int index;        ///< position in Program.steps
  std::string name; ///< Step.name, or the kernel symbol
  std::string kind; ///< stepKind(): "kernel", "gemm", ..., "collective"
  int64_t calls = 0;
  double seconds = 0;
};

/// Communication time over the profiled steps, seconds: the time steps spent
/// in collectives and waits (exposed), and the time collectives were in
/// flight, from their start until they finished (blocking ones: their step).
struct CommunicationTime {
  double exposed = 0, inFlight = 0;
};

/// Copies between memory spaces (Transfer steps), seconds over the steps
/// run: the time the steps waited for them (exposed) and the time the copy
/// queue spent copying (busy); and the bytes moved per iteration.
struct CopyTime {
  double exposed = 0, busy = 0;
  int64_t bytesPerStep = 0;
};

/// Host memory a session holds, bytes. The program plans the arena and the
/// state and input block; the runtime adds the rest, and reports the most it
/// held at once (peakExtra) besides the breakdown of each part's largest.
struct MemoryReport {
  int64_t arena = 0;          ///< TEMP buffers (Program.arena_bytes)
  int64_t stateAndInputs = 0; ///< STATE, CONSTANT and INPUT buffers
  int64_t snapshot = 0;       ///< the copy of the parameters (setSnapshots)
  int64_t scratch = 0;        ///< operand scratch (convolutions, 16-bit GEMMs)
  int64_t communication = 0;  ///< the communicator's staging, at its peak
  int64_t saving = 0;         ///< saveWeights' staging, at its peak
  int64_t peakExtra = 0;      ///< the most of the four above held at once
  int64_t planned() const { return arena + stateAndInputs; }
  int64_t peak() const { return planned() + peakExtra; }
};

class Session : public InputSink {
public:
  /// Allocates the memory, loads the initial state and prepares every step.
  /// A program for several ranks needs `comm` (this rank's communicator, with
  /// the program's world size); it must outlive the session.
  /// The steps run on `device` (a CPU device of the session's own, with
  /// oneDNN GEMMs, if null) and its memory is the device's device space;
  /// the device must outlive the session.
  explicit Session(std::shared_ptr<const Executable> executable,
                   Communicator *comm = nullptr, Device *device = nullptr);
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  const Executable &executable() const { return *exe_; }
  const Device &device() const { return *device_; }

  /// The storage of buffer `id` (an alias's is its target's): device
  /// memory, which the host reaches only where the device says so
  /// (Device::hostReaches); read and write it with readBuffer/writeBuffer.
  void *data(int32_t id);
  const void *data(int32_t id) const;
  /// Copies buffer `id`'s bytes to `dst` / from `src` (byteSize(id) bytes).
  void readBuffer(int32_t id, void *dst) const;
  void writeBuffer(int32_t id, const void *src);
  /// Buffer `id`'s bytes for the host to read: its storage where the host
  /// reaches it, else `staging`, filled with a copy.
  const void *hostBytes(int32_t id, std::vector<char> &staging) const;

  /// Copies `bytes` bytes into INPUT `name`; the size must be the buffer's.
  void setInput(const std::string &name, const void *data, int64_t bytes);
  /// Same, checking dtype and shape first.
  void setInput(const std::string &name, DType dtype, const Shape &shape,
                const void *data);
  /// INPUT `id`'s storage, counted as set for the next step (InputSink).
  void *inputStorage(int32_t id) override;

  /// Runs one training step. Throws Error if an INPUT was never set.
  void step();
  /// Steps run so far (counting those of the checkpoint it resumed from).
  int64_t stepsRun() const { return steps_; }
  void setStepsRun(int64_t steps) { steps_ = steps; }

  /// Reads scalar buffer `id` (any dtype) as a double.
  double scalar(int32_t id) const;
  /// The first of Program.loss; throws Error if the program has none.
  double loss() const;
  /// The value of Program.step_counter, or -1 if there is none.
  int64_t stepCounter() const;

  /// Writes the parameters (Program.param_names) under their PyTorch names,
  /// whole, in name order: with several ranks every rank calls it, the blocks
  /// of sharded parameters are gathered and rank 0 writes the file. Whole
  /// tensors are written from their buffers; rank 0 stages one tensor that
  /// it puts together and one block it receives at a time.
  void saveWeights(const std::string &path) const;
  /// Writes every STATE buffer under its buffer name (a resumable checkpoint;
  /// loadWeights reads it back).
  void saveState(const std::string &path) const;
  /// Loads tensors named by PyTorch names or buffer names into STATE and
  /// CONSTANT buffers; dtypes and shapes must match exactly. Throws Error on a
  /// mismatch or if the file matches nothing.
  LoadReport loadWeights(const std::string &path);

  /// When on, each step() first copies the parameters, so that after a step
  /// that went wrong (a NaN loss) restoreSnapshot() brings back the ones from
  /// before it. Costs a copy of the parameters per step.
  void setSnapshots(bool on);
  bool snapshots() const { return snapshots_; }
  /// Restores the parameters saved before the last step; false if there is no
  /// snapshot.
  bool restoreSnapshot();
  /// Bytes a snapshot copies (the parameters).
  int64_t snapshotBytes() const;
  /// The memory this session has held so far (this rank's).
  MemoryReport memory() const;
  /// True if every floating-point parameter is finite (on every rank: with
  /// several, all call it); otherwise `firstBad` gets the PyTorch name of the
  /// first one that is not.
  bool parametersFinite(std::string *firstBad = nullptr) const;
  /// What runs the Gemm steps, one entry per dtype in dtype order: the
  /// dtype, then each library and kernel (PreparedGemm::path) with the number
  /// of steps it runs, e.g. "f32: oneDNN 2.6.3 matmul brg:avx512_core (86)".
  std::vector<std::string> gemmPaths() const;
  /// This process's rank (0 without a communicator).
  int rank() const { return comm_ ? comm_->rank() : 0; }

  /// When off, an overlapped collective (Collective.overlap) finishes in its
  /// own step instead of while the steps up to its wait run; the bits are
  /// the same.
  void setOverlap(bool on) { overlap_ = on; }

  /// Times every step of each following step() call.
  void setProfiling(bool on) { profiling_ = on; }
  /// Over the profiled steps.
  CommunicationTime communicationTime() const;
  CopyTime copyTime() const;
  /// Totals per program step, in program order.
  std::vector<StepTime> stepTimes() const;
  /// Writes the profiled steps as Chrome trace JSON: one event per iteration
  /// and one per step inside it (the first 1,000,000 step events); with
  /// `predicted`, the cost model's iteration as a process of its own
  /// (compute, copy queue and network tracks), named `predictedOn`.
  void writeTrace(const std::string &path, const PredictedSteps *predicted = nullptr,
                  const std::string &predictedOn = "") const;
  /// Draws the device and host memory the program holds over one step
  /// (writeMemoryTimeline in MemoryTimeline.h) over the profiled steps' mean
  /// times and the `predicted` ones (seconds per step; either may be
  /// missing), as SVG.
  void writeMemoryTimeline(const std::string &path,
                           const std::vector<double> &predicted = {}) const;

private:
  struct Prepared;
  /// Launches a device step, or runs a host step once the device is done.
  void run(const Prepared &p);
  struct Event {
    int32_t step; // -1: the whole iteration
    int64_t iteration;
    double start, duration; // microseconds since the session started
  };
  void allocate();
  void prepare();
  void checkInputs() const;

  std::function<void()> prepareCollective(const Collective &c, int stepIndex);
  /// The overlapped collective of step `index`, started.
  void started(int index, std::unique_ptr<Work> work);
  /// Advances the collectives in flight; forgets those that finished.
  void progressCommunication();
  /// Finishes the collective of step `index` if it is still in flight.
  void finish(int index);
  /// Forgets the finished collective at `position` of inFlight_.
  void finished(size_t position);
  /// Sets STATE/CONSTANT buffer `id` from the whole tensor (its block, if
  /// sharded).
  void fill(int32_t id, const void *whole);
  /// Whether the host reaches buffer `id`'s memory (Device::hostReaches).
  bool hostReaches(int32_t id) const;
  bool localParametersFinite(std::string *firstBad) const;
  /// Updates the peak of the runtime's extra memory: the snapshot and the
  /// scratch, with `communication` and `saving` bytes of staging held now.
  void noteExtra(int64_t communication, int64_t saving = 0) const;

  std::shared_ptr<const Executable> exe_;
  Communicator *comm_;
  std::unique_ptr<Device> ownedDevice_;
  Device *device_;
  bool sends_ = false; // the program has point-to-point sends to complete
  std::vector<void *> pointers_; // per buffer id
  std::vector<void *> blocks_;   // owned allocations
  std::vector<char> inputSet_;
  /// Per INPUT the host cannot reach: what the data was written into, and
  /// whether step() has yet to copy it in.
  std::map<int32_t, std::vector<char>> inputStaging_;
  std::set<int32_t> inputsToCopy_;
  std::vector<Prepared> prepared_;
  std::shared_ptr<Scratch> scratch_;
  std::map<std::pair<DType, std::string>, int> gemmPaths_; // (dtype, path) -> steps
  std::vector<std::pair<int32_t, std::vector<char>>> snapshot_;
  bool snapshots_ = false, haveSnapshot_ = false;
  bool profiling_ = false;
  bool overlap_ = true;
  /// Per step, the overlapped collective it started, while in flight; the
  /// steps in flight, and when each started.
  std::vector<std::unique_ptr<Work>> works_;
  std::vector<int> inFlight_;
  std::vector<std::chrono::steady_clock::time_point> workStart_;
  std::vector<char> overlapped_; // per step: its collective may overlap
  std::set<Group> groups_; // of the collectives, of more than one rank
  double inFlightSeconds_ = 0, progressSeconds_ = 0;
  /// Per Transfer step, the copy queue's event after it, until its wait.
  std::vector<std::shared_ptr<Device::Event>> transfers_;
  double copyWaitSeconds_ = 0;
  std::vector<double> stepSeconds_;
  std::vector<int64_t> stepCalls_;
  std::vector<Event> events_;
  std::vector<Event> commEvents_; // overlapped collectives, start to finish
  int64_t steps_ = 0;
  std::chrono::steady_clock::time_point start_;
  int64_t plannedBlock_ = 0;             // bytes of the state and input block
  mutable int64_t peakExtra_ = 0, peakSaving_ = 0;
};

} // namespace colo::runtime

#endif
