//===- OpTimes.h - Ops timed on this machine, as colo run computes them ---===//
//
// The cost model charges matrix products at a measured rate. Convolutions on
// a CPU run far from any one rate: oneDNN reorders their operands into
// blocked layouts, and small feature maps fill its register blocks poorly
// (ResNet-18's on 64 x 64 images ran at half the GEMM rate). For `local-cpu`,
// which is this machine, the planner times each convolution of the model
// through the runtime instead.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_PLANNER_OPTIMES_H
#define COLO_PLANNER_OPTIMES_H

#include <cstdint>
#include <functional>
#include <tuple>

namespace colo::runtime {
class Conv2d; // Program.proto
} // namespace colo::runtime

namespace colo::planner {

/// A 2-D convolution of colo.conv2d, without its batch: NCHW input, OIHW
/// filter, padding top, left, bottom, right.
struct ConvShape {
  int64_t c = 1, h = 1, w = 1, k = 1, r = 1, s = 1, oh = 1, ow = 1;
  int64_t strideH = 1, strideW = 1, padT = 0, padL = 0, padB = 0, padR = 0;
  int64_t dilH = 1, dilW = 1, groups = 1;
  bool bias = false;
  /// The backward computes the input's gradient (not for the model's input).
  bool inputGradient = true;

  auto fields() const {
    return std::tie(c, h, w, k, r, s, oh, ow, strideH, strideW, padT, padL, padB, padR,
                    dilH, dilW, groups, bias, inputGradient);
  }
  bool operator<(const ConvShape &o) const { return fields() < o.fields(); }
};

/// Best seconds of `run` on this machine: one warm-up run (a library's
/// first run creates its kernels, the buffers' first touch faults their
/// pages), then the fastest of 2 to 5 runs, stopping once `budget` seconds
/// have passed.
double bestSeconds(const std::function<void()> &run, double budget);

/// The threads a rank of `local-cpu` with `ranksPerNode` ranks gets, as colo
/// run gives them: max(1, cores / ranks); and the share of them it has when
/// there are more ranks than cores (they time-share). `cores` 0: this
/// machine's logical CPUs.
struct RankCores {
  int threads = 1;
  double timeShare = 1;
};
RankCores localCpuRankCores(int64_t ranksPerNode, int64_t cores = 0);

/// Seconds of `conv` (its mode, on its geometry; buffer ids ignored) as colo
/// run computes it on this machine with `threads` threads: the runtime's
/// oneDNN convolution in float32, bestSeconds with a quarter of a second. 0
/// if oneDNN cannot run it.
double measureConv(const runtime::Conv2d &conv, int threads);

/// Seconds that one training step spends in this convolution on `n` samples
/// with `threads` threads, as colo run computes it on this machine (the
/// runtime's oneDNN convolutions, float32): its forward, its weights' (and
/// bias') gradient and, where it is computed, its input's gradient; each the
/// best of a few runs (measureConv). 0 if oneDNN cannot run it.
double measureConvStep(const ConvShape &shape, int64_t n, int threads);

} // namespace colo::planner

#endif // COLO_PLANNER_OPTIMES_H
