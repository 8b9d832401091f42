//===- Device.h - Where a session's memory lives ------------------*- C++ -*-===//
//
// A device holds the memory of a session in memory spaces (the device's own,
// the host's, pinned host memory that a GPU can copy from asynchronously),
// each with a capacity, and copies between them. `CpuDevice` is colo's CPU
// backend: all three spaces are host memory, and the capacity of the device
// space is what `colo run --device-memory` caps, so that a plan's device
// budget can be tried on a CPU.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_DEVICE_H
#define COLO_RUNTIME_DEVICE_H

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace colo::runtime {

enum class MemorySpace { Device, Host, PinnedHost };

/// "device", "host" or "pinned host".
const char *spaceName(MemorySpace space);

/// A memory space's bytes: held now and at most since the device was
/// created, and its capacity (0: no limit but the machine's).
struct SpaceUsage {
  int64_t used = 0, peak = 0, capacity = 0;
};

class Device {
public:
  virtual ~Device();
  /// "cpu".
  virtual std::string name() const = 0;

  /// `bytes` (at least one) of zeroed memory in `space`, 64-byte aligned, for
  /// `what` (errors name it). Throws Error if the space's capacity would be
  /// exceeded or the memory cannot be had.
  void *allocate(MemorySpace space, int64_t bytes, const std::string &what);
  /// Returns memory from allocate (null: nothing).
  void free(void *p);
  /// Copies `bytes` between any two spaces; complete when it returns.
  virtual void copy(void *dst, const void *src, int64_t bytes) = 0;

  /// The most `space` may hold; 0: no limit. Lowering it below what is held
  /// makes the next allocation fail.
  void setCapacity(MemorySpace space, int64_t bytes);
  SpaceUsage usage(MemorySpace space) const;

protected:
  virtual void *allocateIn(MemorySpace space, int64_t bytes) = 0;
  virtual void freeIn(MemorySpace space, void *p) = 0;

private:
  std::map<MemorySpace, SpaceUsage> usage_;
  struct Block {
    MemorySpace space;
    int64_t bytes;
  };
  std::map<void *, Block> blocks_;
};

/// The CPU: every space is host memory (buffers of 2 MiB and more on
/// transparent huge pages, allocateBuffer).
std::unique_ptr<Device> createCpuDevice();

} // namespace colo::runtime

#endif
