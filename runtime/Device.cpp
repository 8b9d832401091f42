//===- Device.cpp - Memory spaces with capacities; the CPU device ---------===//

#include "colo/Runtime/Device.h"
#include "colo/Runtime/CpuOps.h"
#include "colo/Runtime/Error.h"
#include "Workers.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

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

class CpuDevice final : public Device {
public:
  explicit CpuDevice(GemmLibrary gemm) : gemm_(gemm) {}
  std::string name() const override { return "cpu"; }

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

  void launch(Queue, const PreparedOp &work) override { work(); }
  void copyAsync(Queue, void *dst, const void *src, int64_t bytes) override {
    std::memmove(dst, src, size_t(bytes));
  }
  std::shared_ptr<Event> record(Queue) override { return std::make_shared<CompleteEvent>(); }
  void wait(Queue, const Event &) override {}
  void synchronize(Queue) override {}

protected:
  void *allocateIn(MemorySpace, int64_t bytes) override { return allocateBuffer(bytes); }
  void freeIn(MemorySpace, void *p) override { std::free(p); }

private:
  GemmLibrary gemm_;
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
  std::memset(p, 0, size_t(bytes));
  blocks_[p] = {space, bytes};
  u.used += bytes;
  u.peak = std::max(u.peak, u.used);
  return p;
}

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

std::unique_ptr<Device> createCpuDevice(GemmLibrary gemm) {
  return std::make_unique<CpuDevice>(gemm);
}

} // namespace colo::runtime
