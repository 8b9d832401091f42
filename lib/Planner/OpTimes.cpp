//===- OpTimes.cpp - Ops timed on this machine, as colo run computes them -===//

#include "colo/Planner/OpTimes.h"
#include "colo/Runtime/CpuOps.h"
#include "colo/Runtime/Error.h"

#include <chrono>
#include <vector>

using namespace colo::planner;
namespace rt = colo::runtime;

namespace {

using Clock = std::chrono::steady_clock;

/// Best seconds of `op` after a warm-up run (oneDNN's first run creates its
/// kernels, the buffers' first touch faults their pages): up to 5 runs, at
/// least 2, stopping after a quarter of a second.
double bestOf(const rt::PreparedOp &op) {
  op();
  double best = 0;
  Clock::time_point start = Clock::now();
  for (int rep = 0; rep < 5; ++rep) {
    Clock::time_point t = Clock::now();
    op();
    double s = std::chrono::duration<double>(Clock::now() - t).count();
    if (best == 0 || s < best)
      best = s;
    if (rep >= 1 && std::chrono::duration<double>(Clock::now() - start).count() > 0.25)
      break;
  }
  return best;
}

} // namespace

double colo::planner::measureConvStep(const ConvShape &shape, int64_t n, int threads) {
  rt::Conv2d conv;
  conv.set_n(n), conv.set_c(shape.c), conv.set_h(shape.h), conv.set_w(shape.w);
  conv.set_k(shape.k), conv.set_r(shape.r), conv.set_s(shape.s);
  conv.set_oh(shape.oh), conv.set_ow(shape.ow);
  conv.set_stride_h(shape.strideH), conv.set_stride_w(shape.strideW);
  conv.set_pad_t(shape.padT), conv.set_pad_l(shape.padL);
  conv.set_pad_b(shape.padB), conv.set_pad_r(shape.padR);
  conv.set_dil_h(shape.dilH), conv.set_dil_w(shape.dilW), conv.set_groups(shape.groups);
  if (!rt::checkGeometry(rt::geometryOf(conv), /*isConv=*/true).empty())
    return 0;
  // Small values: no denormals, no infinities.
  std::vector<float> x(n * shape.c * shape.h * shape.w, 0.01f), dx(x.size());
  std::vector<float> weight(shape.k * (shape.c / shape.groups) * shape.r * shape.s, 0.01f);
  std::vector<float> bias(shape.k, 0.01f), y(n * shape.k * shape.oh * shape.ow, 0.01f);
  float *b = shape.bias ? bias.data() : nullptr;
  auto scratch = std::make_shared<rt::Scratch>();
  double seconds = 0;
  try {
    rt::ScopedThreads scoped(threads);
    conv.set_mode(rt::Conv2d::FORWARD);
    rt::PreparedOp forward = rt::prepareConv(conv, x.data(), weight.data(), b, y.data(), scratch);
    conv.set_mode(rt::Conv2d::BACKWARD_WEIGHTS);
    rt::PreparedOp weights =
        rt::prepareConv(conv, x.data(), weight.data(), b, y.data(), scratch);
    rt::PreparedOp input;
    if (shape.inputGradient) {
      conv.set_mode(rt::Conv2d::BACKWARD_DATA);
      input = rt::prepareConv(conv, dx.data(), weight.data(), nullptr, y.data(), scratch);
    }
    seconds = bestOf(forward) + bestOf(weights) + (input ? bestOf(input) : 0);
  } catch (const rt::Error &) {
    return 0;
  }
  return seconds;
}
