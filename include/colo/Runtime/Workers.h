//===- Workers.h - The run's threads for independent work -------*- C++ -*-===//
//
// Kernel pieces and attention's per-head products are independent calls;
// they run side by side on a pool of threads kept for the whole process, so
// that a call costs a wake-up, not a thread start. Idle workers spin briefly
// (calls come in runs) and then sleep, leaving the core to BLAS.
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
