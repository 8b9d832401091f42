//===- SessionTrace.cpp - A session's step times and profile trace --------===//

#include "colo/Runtime/Session.h"
#include "colo/Runtime/Files.h"
#include "colo/Runtime/MemoryTimeline.h"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace colo::runtime {

CommunicationTime Session::communicationTime() const {
  CommunicationTime t;
  t.inFlight = inFlightSeconds_;
  t.exposed = progressSeconds_;
  for (int i = 0; i < exe_->program().steps_size(); ++i) {
    const Step &step = exe_->program().steps(i);
    bool copyWait =
        step.has_wait() && exe_->program().steps(step.wait().collective_step()).has_transfer();
    if (step.has_collective() || (step.has_wait() && !copyWait))
      t.exposed += stepSeconds_[i];
    if (step.has_collective() && !overlapped_[i])
      t.inFlight += stepSeconds_[i];
  }
  return t;
}

CopyTime Session::copyTime() const {
  CopyTime t;
  t.exposed = copyWaitSeconds_;
  t.busy = device_->copyQueueBusySeconds();
  for (const Step &step : exe_->program().steps())
    if (step.has_transfer())
      t.bytesPerStep += exe_->byteSize(step.transfer().src());
  return t;
}

std::vector<StepTime> Session::stepTimes() const {
  std::vector<StepTime> times;
  for (int i = 0; i < exe_->program().steps_size(); ++i) {
    const Step &step = exe_->program().steps(i);
    StepTime t;
    t.index = i;
    t.name = !step.name().empty() ? step.name()
             : step.has_kernel()  ? step.kernel().symbol()
                                  : stepKind(step);
    t.kind = stepKind(step);
    t.calls = stepCalls_[i];
    t.seconds = stepSeconds_[i];
    times.push_back(std::move(t));
  }
  return times;
}

namespace {
/// The cost model's iteration as process 1 of the trace: the compute
/// queue's steps, and the transfers and overlapped collectives on their own
/// queues.
void writePredicted(std::ostream &out, const PredictedSteps &p, const std::string &on,
                    const std::vector<StepTime> &times,
                    const std::vector<std::string> &names, const Program &program) {
  out << ",\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"args\": {\"name\": "
      << nlohmann::json("predicted: the cost model on " + on).dump() << "}}";
  const char *tracks[] = {"compute", "copy queue", "network"};
  for (int tid = 0; tid < 3; ++tid)
    out << ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": " << tid
        << ", \"args\": {\"name\": \"" << tracks[tid] << "\"}}";
  char buf[160];
  auto event = [&](size_t i, int tid, double begin, double seconds) {
    out << ",\n{\"name\": " << names[i] << ", \"cat\": \"" << times[i].kind << "\"";
    std::snprintf(buf, sizeof buf,
                  ", \"ph\": \"X\", \"pid\": 1, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, "
                  "\"args\": {\"index\": %zu}}",
                  tid, begin * 1e6, seconds * 1e6, i);
    out << buf;
  };
  for (size_t i = 0; i < names.size() && i < p.seconds.size(); ++i) {
    if (p.seconds[i] > 0)
      event(i, 0, p.start[i], p.seconds[i]);
    if (i < p.queuedEnd.size() && p.queuedEnd[i] > p.queuedBegin[i])
      event(i, program.steps(int(i)).has_transfer() ? 1 : 2, p.queuedBegin[i],
            p.queuedEnd[i] - p.queuedBegin[i]);
  }
}
} // namespace

void Session::writeTrace(const std::string &path, const PredictedSteps *predicted,
                         const std::string &predictedOn) const {
  std::vector<StepTime> times = stepTimes();
  std::vector<std::string> names;
  for (const StepTime &t : times)
    names.push_back(nlohmann::json(t.name).dump());
  writeFileAtomically(path, [&](std::ostream &out) {
    out << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
    out << "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"args\": {\"name\": "
        << nlohmann::json(exe_->directory()).dump() << "}}";
    // The steps on one track, overlapped collectives in flight on another.
    if (!commEvents_.empty())
      out << ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": 0, "
             "\"args\": {\"name\": \"steps\"}},\n{\"name\": \"thread_name\", \"ph\": "
             "\"M\", \"pid\": 0, \"tid\": 1, \"args\": {\"name\": \"communication in "
             "flight\"}}";
    char buf[160];
    for (const Event &e : events_) {
      if (e.step < 0) {
        std::snprintf(
            buf, sizeof buf,
            ",\n{\"name\": \"step %lld\", \"cat\": \"iteration\", \"ph\": \"X\", "
            "\"pid\": 0, \"tid\": 0, \"ts\": %.3f, \"dur\": %.3f}",
            static_cast<long long>(e.iteration + 1), e.start, e.duration);
        out << buf;
        continue;
      }
      out << ",\n{\"name\": " << names[e.step] << ", \"cat\": \"" << times[e.step].kind
          << "\"";
      std::snprintf(
          buf, sizeof buf,
          ", \"ph\": \"X\", \"pid\": 0, \"tid\": 0, \"ts\": %.3f, \"dur\": %.3f, "
          "\"args\": {\"index\": %d, \"iteration\": %lld}}",
          e.start, e.duration, e.step, static_cast<long long>(e.iteration + 1));
      out << buf;
    }
    for (const Event &e : commEvents_) {
      out << ",\n{\"name\": " << names[e.step] << ", \"cat\": \"communication\"";
      std::snprintf(
          buf, sizeof buf,
          ", \"ph\": \"X\", \"pid\": 0, \"tid\": 1, \"ts\": %.3f, \"dur\": %.3f, "
          "\"args\": {\"index\": %d, \"iteration\": %lld}}",
          e.start, e.duration, e.step, static_cast<long long>(e.iteration + 1));
      out << buf;
    }
    if (predicted)
      writePredicted(out, *predicted, predictedOn, times, names, exe_->program());
    out << "\n]}\n";
  });
}

void Session::writeMemoryTimeline(const std::string &path,
                                  const std::vector<double> &predicted) const {
  TimelineInput in;
  in.program = &exe_->program();
  in.scratchBytes = scratch_ ? int64_t(scratch_->size()) : 0;
  in.title = exe_->directory();
  in.predicted = predicted;
  int steps = in.program->steps_size();
  bool profiled = false;
  for (int i = 0; i < steps; ++i)
    profiled |= stepCalls_[i] > 0;
  if (profiled)
    for (int i = 0; i < steps; ++i)
      in.measured.push_back(stepCalls_[i] ? stepSeconds_[i] / double(stepCalls_[i]) : 0);
  colo::runtime::writeMemoryTimeline(in, path);
}

} // namespace colo::runtime
