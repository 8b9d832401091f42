//===- Device.h - Where a session's memory lives ------------------*- C++ -*-===//
//
// A device holds the memory of a session in memory spaces (the device's own,
// the host's, pinned host memory that a GPU can copy from asynchronously),
// each with a capacity, and copies between them; it prepares the program's
// steps (generated kernels, GEMMs, convolutions, pooling) in its own way and
// runs them on queues: work on one queue runs in order, work on two queues
// may overlap unless an event orders it. `CpuDevice` is colo's CPU backend:
// all three spaces are host memory, compute runs when it is launched, the
// copy queue is a worker thread (its copies throttled to a link's bandwidth
// if asked, so that a plan's overlap of copies and compute is tried, not
// assumed), GEMMs go to oneDNN or OpenBLAS, and the capacity of the device
// space is what `colo run --device-memory` caps, so that a plan's device
// budget can be tried on a CPU.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_DEVICE_H
#define COLO_RUNTIME_DEVICE_H

#include "colo/Runtime/CpuGemm.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

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
  /// The compute queue runs the steps; the copy queue moves bytes between
  /// spaces beside it (offload, prefetch).
  enum class Queue { Compute, Copy };
  /// A point in a queue's work: complete once everything launched on the
  /// queue before it was recorded has run.
  class Event {
  public:
    virtual ~Event();
    virtual bool complete() const = 0;
  };
  /// A generated kernel: `void symbol(void **args)`.
  using KernelFn = void (*)(void **args);

  virtual ~Device();
  /// "cpu", or the GPU's name ("NVIDIA H200").
  virtual std::string name() const = 0;

  /// The steps, prepared for this device; the returned work runs the step
  /// when launched. Pointers are the buffers' data in device memory.
  /// A kernel in `pieces` > 1 parts runs piece p with argument i advanced
  /// by p * pieceBytes[i] bytes.
  virtual PreparedOp prepareKernel(KernelFn fn, std::vector<void *> args, int64_t pieces,
                                   std::vector<int64_t> pieceBytes) = 0;
  /// A kernel of an executable compiled for CUDA (kernels.cuda.pb, `all`):
  /// its launches in order on `args` (the KernelCall's buffers) and on
  /// temporaries of the device's own. This base throws Error: only a CUDA
  /// device runs them.
  virtual PreparedOp prepareCudaKernel(const CudaKernels &all, const CudaKernel &kernel,
                                       std::vector<void *> args);
  virtual PreparedGemm prepareGemm(const Gemm &gemm, DType dtype, const void *a,
                                   const void *b, void *c, GemmEpilogue epilogue,
                                   std::shared_ptr<Scratch> scratch) = 0;
  virtual PreparedOp prepareConv(const Conv2d &conv, float *x, float *weight, float *bias,
                                 float *y, std::shared_ptr<Scratch> scratch) = 0;
  virtual PreparedOp preparePool(const Pool2d &pool, float *x, float *y, float *dx,
                                 float *dy) = 0;
  /// `bytes` from `src` to `dst` (which may overlap), in one space.
  virtual PreparedOp prepareCopy(void *dst, const void *src, int64_t bytes) = 0;

  /// Runs `work` on `queue` after the work launched there before it.
  virtual void launch(Queue queue, const PreparedOp &work) = 0;
  /// Copies `bytes` between any two spaces on `queue`.
  virtual void copyAsync(Queue queue, void *dst, const void *src, int64_t bytes) = 0;
  /// An event after the work launched on `queue` so far.
  virtual std::shared_ptr<Event> record(Queue queue) = 0;
  /// Work launched on `queue` from now on starts after `event`.
  virtual void wait(Queue queue, const Event &event) = 0;
  /// Returns when the work launched on `queue` so far has run (before the
  /// host reads what it wrote, e.g. a collective on the host's side).
  virtual void synchronize(Queue queue) = 0;
  /// Returns when `event` is complete (before the host reads a transfer's
  /// bytes, or runs a step on them).
  virtual void synchronize(const Event &event) = 0;
  /// Copies between memory spaces take at least bytes / `bytesPerSecond`
  /// (0: as fast as the memory goes): a link such as PCIe, emulated.
  virtual void setLinkBandwidth(double bytesPerSecond) = 0;
  /// Seconds the copy queue has spent copying since the device was created.
  virtual double copyQueueBusySeconds() = 0;

  /// `bytes` (at least one) of zeroed memory in `space`, 64-byte aligned, for
  /// `what` (errors name it). Throws Error if the space's capacity would be
  /// exceeded or the memory cannot be had.
  void *allocate(MemorySpace space, int64_t bytes, const std::string &what);
  /// Returns memory from allocate (null: nothing).
  void free(void *p);
  /// Copies `bytes` between any two spaces; complete when it returns.
  void copy(void *dst, const void *src, int64_t bytes);

  /// Whether the host reads and writes `space`'s memory through its pointers
  /// (the CPU's spaces, pinned host memory); where not (a GPU's own memory),
  /// the session copies what the host reads or writes there.
  virtual bool hostReaches(MemorySpace space) const { return true; }

  /// The most `space` may hold; 0: no limit. Lowering it below what is held
  /// makes the next allocation fail.
  void setCapacity(MemorySpace space, int64_t bytes);
  SpaceUsage usage(MemorySpace space) const;

protected:
  virtual void *allocateIn(MemorySpace space, int64_t bytes) = 0;
  /// Zeroes `bytes` at `p`, fresh memory of `space` (memset where the host
  /// reaches it).
  virtual void zeroIn(MemorySpace space, void *p, int64_t bytes);
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
/// transparent huge pages, allocateBuffer); float and 16-bit GEMMs by
/// `gemm`; kernels in pieces on the run's threads (parallelFor). With
/// `guardDeviceMemory` the device space is closed to the host (mprotect)
/// but while the device works, as a GPU's memory is: a session that reads or
/// writes it other than through the device's copies faults (a test of the
/// session's staging, hostReaches).
std::unique_ptr<Device> createCpuDevice(GemmLibrary gemm = GemmLibrary::OneDnn,
                                        bool guardDeviceMemory = false);

} // namespace colo::runtime

#endif
