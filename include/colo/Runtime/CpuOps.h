//===- CpuOps.h - Library calls behind Gemm, Conv2d and Pool2d ---*- C++ -*-===//
//
// Each step of a program is prepared once per session into a closure over the
// session's (stable) buffer pointers, so running a step is a plain call:
// oneDNN primitives (created once) for Conv2d and pooling (Gemm: CpuGemm.h),
// and a direct loop for max-pooling backward, which must route the gradient
// exactly like PyTorch. The geometry helpers are shared with the validator.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_CPUOPS_H
#define COLO_RUNTIME_CPUOPS_H

#include "colo/Runtime/DType.h"

#include <functional>
#include <memory>
#include <string>

namespace colo::runtime {

using PreparedOp = std::function<void()>;

/// A Gemm with the schema's defaults applied (batch, leading dims, alpha,
/// beta).
struct GemmGeometry {
  bool transA, transB;
  int64_t m, n, k, batch, lda, ldb, ldc, strideA, strideB, strideC;
  int64_t batchOuter, outerStrideA, outerStrideB, outerStrideC;
  double alpha, beta;
  /// Elements of A, B, C the batch touches (0 if a size is not positive).
  int64_t elementsA() const;
  int64_t elementsB() const;
  int64_t elementsC() const;
};
GemmGeometry geometryOf(const Gemm &gemm);
/// Empty if valid, else what is wrong ("lda 3 < k 4").
std::string checkGeometry(const GemmGeometry &g);
/// Empty if a Gemm of this geometry on `dtype` operands may have an
/// epilogue (Gemm.bias, Gemm.residual), else why not.
std::string checkEpilogue(const GemmGeometry &g, DType dtype);

/// Conv2d or Pool2d geometry with defaults applied (strides, dilations and
/// groups of 0 read as 1). For pooling k = c and groups = 1.
struct WindowGeometry {
  int64_t n, c, h, w, k, r, s, oh, ow, strideH, strideW, padT, padL, padB, padR, dilH,
      dilW, groups;
};
WindowGeometry geometryOf(const Conv2d &conv);
WindowGeometry geometryOf(const Pool2d &pool);
/// Empty if valid, else what is wrong ("oh is 5 but the input gives 6").
std::string checkGeometry(const WindowGeometry &g, bool isConv);

/// `bytes` (at least one), 64-byte aligned, for std::free; null if out of
/// memory. Buffers of 2 MiB and more are 2 MiB aligned and marked for
/// transparent huge pages (madvise): the products read their operands with
/// strides that touch a new 4 KiB page at every row, and a TLB miss on each.
void *allocateBuffer(int64_t bytes);

/// Memory that the steps of a session share because they run one at a time:
/// the blocked-layout copies that oneDNN convolutions work on and the float
/// copies of 16-bit GEMM operands. Each step
/// reserves what it needs; the buffer (the largest reservation) is allocated
/// when a step first runs.
class Scratch {
public:
  Scratch() = default;
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  ~Scratch();
  void reserve(int64_t bytes) { need_ = bytes > need_ ? bytes : need_; }
  int64_t size() const { return need_; }
  /// 64-byte aligned, at least size() bytes.
  char *base();
  /// Memory of at least size() bytes that the caller owns (a session's
  /// device memory), used instead of allocating it.
  void provide(char *data, int64_t bytes);

private:
  int64_t need_ = 0, have_ = 0;
  char *data_ = nullptr;
  bool owned_ = true;
};

/// Prepares a convolution; `bias` may be null. oneDNN chooses the layouts it
/// computes in; operands in other layouts are reordered through `scratch`.
/// Throws Error if oneDNN cannot build the primitive.
PreparedOp prepareConv(const Conv2d &conv, float *x, float *weight, float *bias, float *y,
                       std::shared_ptr<Scratch> scratch);
/// Prepares a pooling step; unused pointers may be null.
PreparedOp preparePool(const Pool2d &pool, float *x, float *y, float *dx, float *dy);

/// PyTorch's max_pool2d backward on NCHW data: dx = 0, then each output
/// position adds dy to the first maximal element of its window (a NaN wins).
void maxPoolBackward(const WindowGeometry &g, const float *x, const float *dy, float *dx);

/// Sets the threads of OpenBLAS and of oneDNN (OpenMP). n <= 0: leave as is.
void setThreads(int n);
/// The threads of the run: BLAS's, and those of parallelFor (Workers.h).
int threadCount();

/// setThreads(n) for its lifetime; then the run's, OpenBLAS's and OpenMP's
/// thread counts as they were (threadCount() alone does not say OpenMP's
/// before the first setThreads).
class ScopedThreads {
public:
  explicit ScopedThreads(int n);
  ~ScopedThreads();
  ScopedThreads(const ScopedThreads &) = delete;
  ScopedThreads &operator=(const ScopedThreads &) = delete;

private:
  int run_, blas_, omp_;
};

} // namespace colo::runtime

#endif
