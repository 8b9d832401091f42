//===- Device.cpp - Memory spaces with capacities; the CPU device ---------===//

#include "colo/Runtime/Device.h"
#include "colo/Runtime/CpuOps.h"
#include "colo/Runtime/Error.h"
#include "Workers.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include <sys/mman.h>

namespace colo::runtime {

namespace {
std::string megabytes(int64_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f MB", double(bytes) / 1e6);
  return s;
}

/// Work that ran when it was launched.
class CompleteEvent final : public Device::Event {
public:
  bool complete() const override { return true; }
};

/// The CPU's copy queue: one thread that runs the copies in order, each
/// taking at least its bytes over the link's bandwidth.
class CopyEngine {
public:
  ~CopyEngine() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable())
      thread_.join();
  }
  void setBandwidth(double bytesPerSecond) {
    std::lock_guard<std::mutex> lock(mutex_);
    bandwidth_ = bytesPerSecond;
  }
  /// The copy's position in the queue: complete(position) once it has run.
  uint64_t submit(void *dst, const void *src, int64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!thread_.joinable())
      thread_ = std::thread([this] { work(); });
    jobs_.push_back({dst, src, bytes});
    wake_.notify_all();
    return ++submitted_;
  }
  uint64_t submitted() {
    std::lock_guard<std::mutex> lock(mutex_);
    return submitted_;
  }
  bool complete(uint64_t position) {
    std::lock_guard<std::mutex> lock(mutex_);
    return done_ >= position;
  }
  double busySeconds() {
    std::lock_guard<std::mutex> lock(mutex_);
    return busy_;
  }
  void waitFor(uint64_t position) {
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return done_ >= position; });
  }

private:
  struct Job {
    void *dst;
    const void *src;
    int64_t bytes;
  };
  void work() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty())
        return; // stopping
      Job job = jobs_.front();
      jobs_.pop_front();
      double bandwidth = bandwidth_;
      lock.unlock();
      auto start = std::chrono::steady_clock::now();
      std::memmove(job.dst, job.src, size_t(job.bytes));
      if (bandwidth > 0) {
        // The link's own clock: a copy ends its bytes' time after the
        // previous one ended, or after it started if the link was idle, so
        // that oversleeping one copy does not slow the next ones down.
        linkFree_ = std::max(linkFree_, start) +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(double(job.bytes) / bandwidth));
        std::this_thread::sleep_until(linkFree_);
      }
      lock.lock();
      busy_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ++done_;
      finished_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  std::deque<Job> jobs_;
  uint64_t submitted_ = 0, done_ = 0;
  double bandwidth_ = 0, busy_ = 0;
  std::chrono::steady_clock::time_point linkFree_;
  bool stop_ = false;
  std::thread thread_;
};

/// A point in the copy queue.
class CopyEvent final : public Device::Event {
public:
  CopyEvent(CopyEngine &engine, uint64_t position) : engine_(engine), position_(position) {}
  bool complete() const override { return engine_.complete(position_); }
  void waitFor() const { engine_.waitFor(position_); }

private:
  CopyEngine &engine_;
  uint64_t position_;
};

class CpuDevice final : public Device {
public:
  CpuDevice(GemmLibrary gemm, bool guard) : gemm_(gemm), guard_(guard) {}
  ~CpuDevice() override {
    for (auto &[p, bytes] : guarded_)
      ::munmap(p, bytes);
  }
  std::string name() const override { return "cpu"; }
  bool hostReaches(MemorySpace space) const override {
    return !guard_ || space != MemorySpace::Device;
  }

  PreparedOp prepareKernel(KernelFn fn, std::vector<void *> args, int64_t pieces,
                           std::vector<int64_t> pieceBytes) override {
    if (pieces <= 1)
      return [fn, args = std::move(args)]() mutable { fn(args.data()); };
    return [fn, args = std::move(args), bytes = std::move(pieceBytes), pieces] {
      parallelFor(threadCount(), pieces, [&](int64_t p) {
        std::vector<void *> at(args.size());
        for (size_t a = 0; a < args.size(); ++a)
          at[a] = static_cast<char *>(args[a]) + p * bytes[a];
        fn(at.data());
      });
    };
  }
  PreparedGemm prepareGemm(const Gemm &gemm, DType dtype, const void *a, const void *b,
                           void *c, GemmEpilogue epilogue,
                           std::shared_ptr<Scratch> scratch) override {
    return runtime::prepareGemm(gemm, dtype, a, b, c, epilogue, std::move(scratch), gemm_);
  }
  PreparedOp prepareConv(const Conv2d &conv, float *x, float *weight, float *bias, float *y,
                         std::shared_ptr<Scratch> scratch) override {
    return runtime::prepareConv(conv, x, weight, bias, y, std::move(scratch));
  }
  PreparedOp preparePool(const Pool2d &pool, float *x, float *y, float *dx,
                         float *dy) override {
    return runtime::preparePool(pool, x, y, dx, dy);
  }

  PreparedOp prepareCopy(void *dst, const void *src, int64_t bytes) override {
    return [=] { std::memmove(dst, src, size_t(bytes)); };
  }

  // Compute runs on the calling thread when it is launched; copies on the
  // copy queue run on its thread.
  void launch(Queue queue, const PreparedOp &work) override {
    if (queue == Queue::Copy) {
      // Ordered after the copies before it.
      synchronize(Queue::Copy);
    }
    Opened open(*this);
    work();
  }
  void copyAsync(Queue queue, void *dst, const void *src, int64_t bytes) override {
    if (queue == Queue::Copy && !guard_) {
      copies_.submit(dst, src, bytes);
      return;
    }
    Opened open(*this);
    std::memmove(dst, src, size_t(bytes));
  }
  std::shared_ptr<Event> record(Queue queue) override {
    if (queue == Queue::Copy)
      return std::make_shared<CopyEvent>(copies_, copies_.submitted());
    return std::make_shared<CompleteEvent>();
  }
  // The copy queue starts each copy after everything launched before it on
  // the compute queue, which has run by then; compute waiting for a copy
  // waits on this thread.
  void wait(Queue queue, const Event &event) override {
    if (queue == Queue::Compute)
      synchronize(event);
  }
  void synchronize(Queue queue) override {
    if (queue == Queue::Copy)
      copies_.waitFor(copies_.submitted());
  }
  void synchronize(const Event &event) override {
    if (auto *copy = dynamic_cast<const CopyEvent *>(&event))
      copy->waitFor();
  }
  void setLinkBandwidth(double bytesPerSecond) override {
    copies_.setBandwidth(bytesPerSecond);
  }
  double copyQueueBusySeconds() override { return copies_.busySeconds(); }

protected:
  void *allocateIn(MemorySpace space, int64_t bytes) override {
    if (!guard_ || space != MemorySpace::Device)
      return allocateBuffer(bytes);
    // Closed to the host but while the device works (Opened); zero.
    void *p = ::mmap(nullptr, size_t(bytes), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      return nullptr;
    guarded_[p] = size_t(bytes);
    return p;
  }
  void zeroIn(MemorySpace space, void *p, int64_t bytes) override {
    if (!guarded_.count(p))
      Device::zeroIn(space, p, bytes);
  }
  void freeIn(MemorySpace, void *p) override {
    auto it = guarded_.find(p);
    if (it == guarded_.end()) {
      std::free(p);
      return;
    }
    ::munmap(p, it->second);
    guarded_.erase(it);
  }

private:
  /// With `guard`, opens the device memory to the host while the device
  /// works, as a GPU's memory is open to its own work only.
  struct Opened {
    explicit Opened(CpuDevice &d) : device(d) { device.protect(PROT_READ | PROT_WRITE); }
    ~Opened() { device.protect(PROT_NONE); }
    CpuDevice &device;
  };
  void protect(int access) {
    if (guard_ && (access == PROT_NONE ? --opened_ == 0 : opened_++ == 0))
      for (auto &[p, bytes] : guarded_)
        ::mprotect(p, bytes, access);
  }

  GemmLibrary gemm_;
  bool guard_;
  int opened_ = 0;
  std::map<void *, size_t> guarded_;
  CopyEngine copies_;
};
} // namespace

const char *spaceName(MemorySpace space) {
  switch (space) {
  case MemorySpace::Device:
    return "device";
  case MemorySpace::Host:
    return "host";
  case MemorySpace::PinnedHost:
    return "pinned host";
  }
  return "?";
}

Device::~Device() = default;
Device::Event::~Event() = default;

PreparedOp Device::prepareCudaKernel(const CudaKernels &, const CudaKernel &kernel,
                                     std::vector<void *>) {
  throw Error("kernel '" + kernel.name() + "' is a CUDA kernel and the " + name() +
              " device runs none");
}

void Device::copy(void *dst, const void *src, int64_t bytes) {
  copyAsync(Queue::Copy, dst, src, bytes);
  synchronize(Queue::Copy);
}

void *Device::allocate(MemorySpace space, int64_t bytes, const std::string &what) {
  bytes = std::max<int64_t>(bytes, 1);
  SpaceUsage &u = usage_[space];
  if (u.capacity > 0 && u.used + bytes > u.capacity)
    throw Error(std::string(spaceName(space)) + " memory: " + what + " needs " +
                megabytes(bytes) + ", but " + megabytes(u.used) + " of the " +
                megabytes(u.capacity) + " capacity are in use (" +
                megabytes(u.capacity - u.used) + " free)");
  void *p = allocateIn(space, bytes);
  if (!p)
    throw Error("out of memory: cannot allocate " + std::to_string(bytes) + " bytes of " +
                spaceName(space) + " memory for " + what);
  zeroIn(space, p, bytes);
  blocks_[p] = {space, bytes};
  u.used += bytes;
  u.peak = std::max(u.peak, u.used);
  return p;
}

void Device::zeroIn(MemorySpace, void *p, int64_t bytes) { std::memset(p, 0, size_t(bytes)); }

void Device::free(void *p) {
  auto it = blocks_.find(p);
  if (it == blocks_.end())
    return;
  usage_[it->second.space].used -= it->second.bytes;
  freeIn(it->second.space, p);
  blocks_.erase(it);
}

void Device::setCapacity(MemorySpace space, int64_t bytes) { usage_[space].capacity = bytes; }

SpaceUsage Device::usage(MemorySpace space) const {
  auto it = usage_.find(space);
  return it == usage_.end() ? SpaceUsage{} : it->second;
}

std::unique_ptr<Device> createCpuDevice(GemmLibrary gemm, bool guardDeviceMemory) {
  return std::make_unique<CpuDevice>(gemm, guardDeviceMemory);
}

} // namespace colo::runtime
