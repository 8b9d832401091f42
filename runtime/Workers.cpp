// The worker pool behind parallelFor (Workers.h).
#include "colo/Runtime/Workers.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include <immintrin.h>

namespace colo::runtime {
namespace {
/// How long an idle worker spins before it sleeps: longer than the gap
/// between consecutive kernels, shorter than a GEMM it would slow down.
constexpr auto kSpin = std::chrono::microseconds(50);

class Pool {
public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread &t : threads_)
      t.join();
  }

  void run(int threads, int64_t n, const std::function<void(int64_t)> &work) {
    int helpers = static_cast<int>(std::min<int64_t>(threads, n)) - 1;
    if (helpers < 1) {
      for (int64_t i = 0; i < n; ++i)
        work(i);
      return;
    }
    while (static_cast<int>(threads_.size()) < helpers)
      threads_.emplace_back([this, id = static_cast<int>(threads_.size())] { serve(id); });
    {
      std::lock_guard<std::mutex> lock(mutex_);
      work_ = &work;
      count_ = n;
      next_.store(0, std::memory_order_relaxed);
      helpers_ = helpers;
      busy_.store(helpers, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    drain();
    // The helpers read work_ until they check out; it lives on the caller's
    // stack.
    while (busy_.load(std::memory_order_acquire) != 0)
      _mm_pause();
  }

private:
  void drain() {
    for (int64_t i; (i = next_.fetch_add(1, std::memory_order_relaxed)) < count_;)
      (*work_)(i);
  }

  void serve(int id) {
    uint64_t seen = 0;
    for (;;) {
      auto until = std::chrono::steady_clock::now() + kSpin;
      while (generation_.load(std::memory_order_acquire) == seen &&
             std::chrono::steady_clock::now() < until)
        for (int i = 0; i < 64; ++i)
          _mm_pause();
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] {
          return stop_ || generation_.load(std::memory_order_acquire) != seen;
        });
        if (stop_)
          return;
        seen = generation_.load(std::memory_order_acquire);
        if (id >= helpers_)
          continue; // this call asked for fewer threads
      }
      drain();
      busy_.fetch_sub(1, std::memory_order_release);
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  const std::function<void(int64_t)> *work_ = nullptr;
  int64_t count_ = 0;
  int helpers_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<int> busy_{0};
  std::atomic<uint64_t> generation_{0};
};
} // namespace

void parallelFor(int threads, int64_t n, const std::function<void(int64_t)> &work) {
  static Pool pool;
  pool.run(threads, n, work);
}

} // namespace colo::runtime
