// parallelFor (Workers.h) on OpenMP's threads.
#include "Workers.h"

#include <algorithm>

namespace colo::runtime {

void parallelFor(int threads, int64_t n, const std::function<void(int64_t)> &work) {
  int t = static_cast<int>(std::min<int64_t>(threads, n));
  if (t < 2) {
    for (int64_t i = 0; i < n; ++i)
      work(i);
    return;
  }
#pragma omp parallel for num_threads(t) schedule(dynamic, 1)
  for (int64_t i = 0; i < n; ++i)
    work(i);
}

} // namespace colo::runtime
