//===- CpuGemm.h - The library behind each Gemm step ------------*- C++ -*-===//
//
// A Gemm step (batched, strided, transposed, broadcast or summed products;
// Program.proto) runs through oneDNN's matmul primitive by default: oneDNN
// picks its kernels by the instructions the processor has (AVX2, AVX-512,
// AVX512-BF16, AMX), where Debian's OpenBLAS 0.3.21 falls back to generic
// kernels on processors newer than it. OpenBLAS runs f64 products (oneDNN has
// no f64 matmul) and, when asked for, the float ones. The choice is fixed,
// never timed at start-up, so two runs of a program compute the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_CPUGEMM_H
#define COLO_RUNTIME_CPUGEMM_H

#include "colo/Runtime/CpuOps.h"

#include <string>

namespace colo::runtime {

enum class GemmLibrary { OneDnn, OpenBlas };

/// Parses "onednn" or "openblas"; throws Error naming the choices otherwise.
GemmLibrary parseGemmLibrary(const std::string &name);

/// A prepared Gemm and what computes it: the library and the kernel it
/// chose, e.g. "oneDNN 2.6.3 matmul brg:avx512_core" or "OpenBLAS 0.3.21
/// Prescott (generic kernels)".
struct PreparedGemm {
  PreparedOp run;
  std::string path;
};

/// What a float Gemm adds to its product before C is written (Gemm.bias and
/// Gemm.residual in Program.proto; F32, beta 0 and one product only): a bias
/// of n elements to every row, then a residual laid out like C.
struct GemmEpilogue {
  const float *bias = nullptr;
  const float *residual = nullptr;
  explicit operator bool() const { return bias || residual; }
};

/// Prepares C = alpha op(A) op(B) + beta C on F32, F64, BF16 or F16 buffers
/// (A, B and C of one dtype), with `epilogue`. 16-bit products accumulate in
/// float and round once: oneDNN's 16-bit matmul on AMX, else operands widened
/// to float in `scratch`. Throws Error if the dtype is not one of these.
PreparedGemm prepareGemm(const Gemm &gemm, DType dtype, const void *a, const void *b,
                         void *c, GemmEpilogue epilogue, std::shared_ptr<Scratch> scratch,
                         GemmLibrary library);

/// OpenBLAS's kernel family for this processor (openblas_get_corename) and
/// whether it is one of the generic ones it falls back to on processors it
/// does not know.
std::string openBlasCore();
bool openBlasIsGeneric();

/// The instruction set oneDNN dispatches to on this processor, e.g.
/// "avx512_core_bf16" (dnnl::get_effective_cpu_isa).
std::string oneDnnIsa();

} // namespace colo::runtime

#endif
