//===- Workers.h - The run's threads for independent work -------*- C++ -*-===//
//
// Kernel pieces (and the per-head products of OpenBLAS GEMMs) are
// independent calls; they run side by side on OpenMP's threads, the ones
// oneDNN's matmuls and convolutions run on. One set of threads serves both:
// with a pool of its own next to OpenMP's, each pool's idle threads spun on
// the cores the other needed (GPT-2 bench step 472 -> 410-440 ms).
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_WORKERS_H
#define COLO_RUNTIME_WORKERS_H

#include <cstdint>
#include <functional>

namespace colo::runtime {

/// Runs work(0) ... work(n - 1), each once, on up to `threads` threads (the
/// calling one among them), and returns when all have returned. Which
/// thread runs which index is not fixed: the calls must be independent.
void parallelFor(int threads, int64_t n, const std::function<void(int64_t)> &work);

} // namespace colo::runtime

#endif
