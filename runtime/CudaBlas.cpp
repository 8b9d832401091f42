//===- CudaBlas.cpp - cuBLASLt descriptors of a planned matmul ------------===//

#include "CudaBlas.h"
#include "colo/Runtime/Error.h"

#include <cstdint>

namespace colo::runtime {

void checkCublas(cublasStatus_t status, const char *call, const std::string &what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(what + ": " + call + " failed: " + cublasLt().cublasLtGetStatusName(status) + " (" +
                cublasLt().cublasLtGetStatusString(status) + ")");
}

cudaDataType_t cudaTypeOf(DType dtype) {
  switch (dtype) {
  case F32:
    return CUDA_R_32F;
  case F64:
    return CUDA_R_64F;
  case BF16:
    return CUDA_R_16BF;
  case F16:
    return CUDA_R_16F;
  default:
    throw Error(std::string("cuBLASLt multiplies f32, f64, bf16 and f16, not ") + dtypeName(dtype));
  }
}

namespace {
cublasLtMatrixLayout_t layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld,
                              int64_t batch, int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  const char *what = "a cuBLASLt matrix layout";
  checkCublas(cublasLt().cublasLtMatrixLayoutCreate(&l, type, uint64_t(rows), uint64_t(cols), ld),
              "cublasLtMatrixLayoutCreate", what);
  if (batch > 1) {
    int32_t count = int32_t(batch);
    checkCublas(cublasLt().cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                            &count, sizeof count),
                "cublasLt().cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)", what);
    checkCublas(cublasLt().cublasLtMatrixLayoutSetAttribute(
                    l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
                "cublasLt().cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)", what);
  }
  return l;
}

template <typename T>
void setOp(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t attribute, T value,
           const char *call) {
  checkCublas(cublasLt().cublasLtMatmulDescSetAttribute(op, attribute, &value, sizeof value), call,
              "a cuBLASLt matmul descriptor");
}
} // namespace

LtDescriptors::LtDescriptors(const LtMatmul &mm, DType dtype, const float *bias) {
  cudaDataType_t type = cudaTypeOf(dtype);
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  if (dtype == F64) {
    compute = CUBLAS_COMPUTE_64F;
    scaleType = CUDA_R_64F;
  }
  try {
    checkCublas(cublasLt().cublasLtMatmulDescCreate(&op, compute, scaleType),
                "cublasLtMatmulDescCreate", "a cuBLASLt matmul descriptor");
    setOp(op, CUBLASLT_MATMUL_DESC_TRANSA, mm.transA ? CUBLAS_OP_T : CUBLAS_OP_N,
          "cublasLt().cublasLtMatmulDescSetAttribute(TRANSA)");
    setOp(op, CUBLASLT_MATMUL_DESC_TRANSB, mm.transB ? CUBLAS_OP_T : CUBLAS_OP_N,
          "cublasLt().cublasLtMatmulDescSetAttribute(TRANSB)");
    if (mm.bias) {
      setOp(op, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS,
            "cublasLt().cublasLtMatmulDescSetAttribute(EPILOGUE)");
      setOp(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void *>(bias),
            "cublasLt().cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
      setOp(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, int32_t(CUDA_R_32F),
            "cublasLt().cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)");
    }
    a = layout(type, mm.rowsA(), mm.colsA(), mm.lda, mm.batch, mm.strideA);
    b = layout(type, mm.rowsB(), mm.colsB(), mm.ldb, mm.batch, mm.strideB);
    c = layout(type, mm.m, mm.n, mm.ldc, mm.batch, mm.strideC);
    d = layout(type, mm.m, mm.n, mm.ldc, mm.batch, mm.strideC);
  } catch (...) {
    this->~LtDescriptors();
    throw;
  }
}

LtDescriptors::~LtDescriptors() {
  for (cublasLtMatrixLayout_t l : {a, b, c, d})
    if (l)
      cublasLt().cublasLtMatrixLayoutDestroy(l);
  if (op)
    cublasLt().cublasLtMatmulDescDestroy(op);
  op = nullptr;
  a = b = c = d = nullptr;
}

} // namespace colo::runtime
