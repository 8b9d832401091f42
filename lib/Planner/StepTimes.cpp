// The cost model on a compiled program: each step timed from what the
// compiler charged it, the copy and communication queues beside the compute.
#include "colo/Planner/StepTimes.h"
#include "colo/Planner/OpTimes.h"
#include "colo/Runtime/DType.h"

#include <algorithm>
#include <map>
#include <string>

namespace colo::planner {

namespace {

int64_t bytesOf(const runtime::Program &p, int32_t id) {
  if (id < 0 || id >= p.buffers_size())
    return 0;
  int64_t n = runtime::dtypeSize(p.buffers(id).dtype());
  for (int64_t d : p.buffers(id).shape())
    n *= d;
  return n;
}

/// The members of the group a collective runs in.
int64_t groupSize(const runtime::Program &p, const runtime::Collective &c) {
  int64_t n = 1;
  for (int32_t axis : c.mesh_axes())
    if (axis >= 0 && axis < p.mesh().shape_size())
      n *= p.mesh().shape(axis);
  return n;
}

/// The bytes a member of a collective's group sends on its ring: twice
/// (n-1)/n of the buffer for an all-reduce, once for the others, a
/// message's buffer; what it receives (a RECV, an ALL_SLICE) sends nothing.
double bytesSent(const runtime::Program &p, const runtime::Collective &c) {
  using K = runtime::Collective;
  int64_t n = groupSize(p, c);
  double bytes = double(bytesOf(p, c.input()));
  switch (c.kind()) {
  case K::RECV:
  case K::ALL_SLICE:
    return 0;
  case K::SEND:
    return bytes;
  case K::SHIFT:
    return n > 1 ? bytes : 0;
  case K::ALL_REDUCE:
    return 2.0 * (n - 1) / n * bytes;
  case K::ALL_GATHER:
    return double(n - 1) * bytes; // the input is one member's block
  default: // a broadcast's or a reduce's chain: all members but one send it once
    return double(n - 1) / n * bytes;
  }
}

/// A collective's time: its ring's bytes over the link (a receive waits
/// for its message's), a slice a local copy.
double collectiveSeconds(const runtime::Program &p, const runtime::Collective &c,
                         const ClusterSpec &spec) {
  using K = runtime::Collective;
  if (c.kind() == K::ALL_SLICE)
    return double(bytesOf(p, c.input())) / (spec.memoryBandwidth * spec.memoryEfficiency);
  double sent = c.kind() == K::RECV ? double(bytesOf(p, c.output())) : bytesSent(p, c);
  return spec.intraLatency + sent / spec.intraBandwidth;
}

bool sixteenBit(const runtime::Program &p, int32_t id) {
  if (id < 0 || id >= p.buffers_size())
    return false;
  auto t = p.buffers(id).dtype();
  return t == runtime::BF16 || t == runtime::F16;
}
} // namespace

StepTimes predictStepTimes(const runtime::Program &p, const ClusterSpec &c) {
  StepTimes t;
  int steps = p.steps_size();
  t.start.assign(steps, 0);
  t.seconds.assign(steps, 0);
  t.queuedBegin.assign(steps, 0);
  t.queuedEnd.assign(steps, 0);
  std::vector<double> done(steps, 0); // when an asynchronous step finishes
  double now = 0, copyQueue = 0, network = 0;
  // Convolutions timed on this machine, once per geometry and mode.
  RankCores rank = localCpuRankCores(c.devicesPerNode);
  std::map<std::string, double> timed;
  auto convSeconds = [&](runtime::Conv2d conv) {
    conv.clear_x(), conv.clear_weight(), conv.clear_y();
    if (conv.has_bias())
      conv.set_bias(0);
    auto [it, inserted] = timed.try_emplace(conv.SerializeAsString());
    if (inserted)
      it->second = measureConv(conv, rank.threads) / rank.timeShare;
    return it->second;
  };
  for (int i = 0; i < steps; ++i) {
    const runtime::Step &s = p.steps(i);
    t.start[i] = now;
    double seconds = 0;
    if (s.has_collective())
      t.bytesSent += bytesSent(p, s.collective());
    if (s.has_transfer()) {
      t.queuedBegin[i] = std::max(copyQueue, now);
      copyQueue = t.queuedBegin[i] + double(s.bytes()) / c.pcieBandwidth;
      done[i] = t.queuedEnd[i] = copyQueue;
    } else if (s.has_collective() && s.collective().overlap()) {
      t.queuedBegin[i] = std::max(network, now);
      network = t.queuedBegin[i] + collectiveSeconds(p, s.collective(), c);
      done[i] = t.queuedEnd[i] = network;
    } else if (s.has_collective()) {
      seconds = collectiveSeconds(p, s.collective(), c);
    } else if (s.has_wait()) {
      int32_t started = s.wait().collective_step();
      if (started >= 0 && started < i)
        seconds = std::max(0.0, done[started] - now);
    } else if (s.has_copy()) {
      seconds = 2.0 * double(bytesOf(p, s.copy().src())) /
                (c.memoryBandwidth * c.memoryEfficiency);
    } else if (s.has_conv() && c.timedHere > 0) {
      // This machine: the convolution as the runtime computes it
      // (timeConvolutions does the same for the analytic model).
      seconds = convSeconds(s.conv()) + kKernelLaunchSeconds;
    } else {
      bool half = s.has_gemm() && sixteenBit(p, s.gemm().a());
      double peak = (half ? c.peakFlops16 : c.peakFlops32) * c.matmulEfficiency;
      seconds = double(s.flops()) / peak +
                double(s.bytes()) / (c.memoryBandwidth * c.memoryEfficiency) +
                kKernelLaunchSeconds;
    }
    t.seconds[i] = seconds;
    now += seconds;
  }
  t.total = now;
  return t;
}

} // namespace colo::planner
