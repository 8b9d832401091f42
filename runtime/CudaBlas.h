//===- CudaBlas.h - cuBLASLt descriptors of a planned matmul ------*- C++ -*-===//
//
// Built only with the CUDA toolkit. The descriptors need no GPU, so their
// construction is unit-tested on machines without one; choosing an
// algorithm (cublasLtMatmulAlgoGetHeuristic) and running it need the GPU.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_CUDABLAS_H
#define COLO_RUNTIME_CUDABLAS_H

#include "LazyLibrary.h"
#include "colo/Runtime/CudaGemm.h"
#include "colo/Runtime/DType.h"

#include <cublasLt.h>

#include <string>

namespace colo::runtime {

// clang-format off
#define COLO_CUBLASLT_FUNCTIONS(X)                                                           \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetStatusName) X(cublasLtGetStatusString)   \
  X(cublasLtGetVersion) X(cublasLtMatmul) X(cublasLtMatmulAlgoGetHeuristic)                  \
  X(cublasLtMatmulDescCreate) X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) \
  X(cublasLtMatmulDescGetAttribute) X(cublasLtMatmulPreferenceCreate)                        \
  X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute)                 \
  X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy)                               \
  X(cublasLtMatrixLayoutSetAttribute) X(cublasLtMatrixLayoutGetAttribute)
// clang-format on
/// cuBLASLt, loaded when first used (LazyLibrary.h).
COLO_LAZY_LIBRARY(CublasLt, cublasLt, "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR),
                  COLO_CUBLASLT_FUNCTIONS)

/// Throws Error naming `call` and `what` unless `status` is success.
void checkCublas(cublasStatus_t status, const char *call, const std::string &what);

/// The operation and the four layouts of one LtMatmul on `dtype` operands:
/// 16-bit operands accumulate and scale in float, F32 in float (not TF32:
/// the CPU's numerics), F64 in double.
struct LtDescriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cudaDataType_t scaleType = CUDA_R_32F;

  LtDescriptors(const LtMatmul &mm, DType dtype, const float *bias);
  ~LtDescriptors();
  LtDescriptors(const LtDescriptors &) = delete;
  LtDescriptors &operator=(const LtDescriptors &) = delete;
};

/// CUDA's type for `dtype` (F32, F64, BF16, F16); throws Error otherwise.
cudaDataType_t cudaTypeOf(DType dtype);

} // namespace colo::runtime

#endif
