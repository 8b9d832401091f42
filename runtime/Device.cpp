//===- Device.cpp - Memory spaces with capacities; the CPU device ---------===//

#include "colo/Runtime/Device.h"
#include "colo/Runtime/CpuOps.h"
#include "colo/Runtime/Error.h"

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

class CpuDevice final : public Device {
public:
  std::string name() const override { return "cpu"; }
  void copy(void *dst, const void *src, int64_t bytes) override {
    std::memmove(dst, src, size_t(bytes));
  }

protected:
  void *allocateIn(MemorySpace, int64_t bytes) override { return allocateBuffer(bytes); }
  void freeIn(MemorySpace, void *p) override { std::free(p); }
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

std::unique_ptr<Device> createCpuDevice() { return std::make_unique<CpuDevice>(); }

} // namespace colo::runtime
