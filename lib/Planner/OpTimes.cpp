//===- OpTimes.cpp - Ops timed on this machine, as colo run computes them -===//

#include "colo/Planner/OpTimes.h"
#include "colo/Runtime/CpuOps.h"
#include "colo/Runtime/Error.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

using namespace colo::planner;
namespace rt = colo::runtime;

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

} // namespace

double colo::planner::bestSeconds(const std::function<void()> &run, double budget) {
  run();
  double best = 0;
  Clock::time_point start = Clock::now();
  for (int rep = 0; rep < 5 && (rep < 2 || secondsSince(start) < budget); ++rep) {
    Clock::time_point t = Clock::now();
    run();
    double s = secondsSince(t);
    if (best == 0 || s < best)
      best = s;
  }
  return best;
}

RankCores colo::planner::localCpuRankCores(int64_t ranksPerNode, int64_t coreCount) {
  double cores = coreCount > 0 ? double(coreCount)
                               : double(std::max(1u, std::thread::hardware_concurrency()));
  double ranks = double(std::max<int64_t>(1, ranksPerNode));
  return {int(std::max(1.0, std::floor(cores / ranks))), std::min(1.0, cores / ranks)};
}

double colo::planner::measureConv(const rt::Conv2d &conv, int threads) {
  rt::WindowGeometry g = rt::geometryOf(conv);
  if (!rt::checkGeometry(g, /*isConv=*/true).empty())
    return 0;
  // Small values: no denormals, no infinities. x is the input (its gradient
  // for BACKWARD_DATA), y the output (its gradient for the backward).
  std::vector<float> x(g.n * g.c * g.h * g.w, 0.01f), y(g.n * g.k * g.oh * g.ow, 0.01f);
  std::vector<float> weight(g.k * (g.c / g.groups) * g.r * g.s, 0.01f), bias(g.k, 0.01f);
  try {
    rt::ScopedThreads scoped(threads);
    return bestSeconds(rt::prepareConv(conv, x.data(), weight.data(),
                                       conv.has_bias() && conv.bias() >= 0 ? bias.data()
                                                                           : nullptr,
                                       y.data(), std::make_shared<rt::Scratch>()),
                       0.25);
  } catch (const rt::Error &) {
    return 0;
  }
}

double colo::planner::measureConvStep(const ConvShape &shape, int64_t n, int threads) {
  rt::Conv2d conv;
  conv.set_n(n), conv.set_c(shape.c), conv.set_h(shape.h), conv.set_w(shape.w);
  conv.set_k(shape.k), conv.set_r(shape.r), conv.set_s(shape.s);
  conv.set_oh(shape.oh), conv.set_ow(shape.ow);
  conv.set_stride_h(shape.strideH), conv.set_stride_w(shape.strideW);
  conv.set_pad_t(shape.padT), conv.set_pad_l(shape.padL);
  conv.set_pad_b(shape.padB), conv.set_pad_r(shape.padR);
  conv.set_dil_h(shape.dilH), conv.set_dil_w(shape.dilW), conv.set_groups(shape.groups);
  if (shape.bias)
    conv.set_bias(0);
  double seconds = 0;
  for (auto mode : {rt::Conv2d::FORWARD, rt::Conv2d::BACKWARD_WEIGHTS, rt::Conv2d::BACKWARD_DATA}) {
    if (mode == rt::Conv2d::BACKWARD_DATA && !shape.inputGradient)
      continue;
    conv.set_mode(mode);
    double s = measureConv(conv, threads);
    if (s <= 0)
      return 0;
    seconds += s;
  }
  return seconds;
}
