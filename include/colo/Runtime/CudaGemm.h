//===- CudaGemm.h - A Gemm step as cuBLASLt matmuls ---------------*- C++ -*-===//
//
// cuBLASLt multiplies column-major matrices; colo's Gemm step (Program.proto)
// is row-major, with batches that may broadcast an operand (stride 0) or sum
// their products into one C (stride_c 0), and an outer batch around them.
// planLtMatmuls turns one Gemm into the column-major matmuls that compute it:
// a row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T, so
// the row-major B is cuBLASLt's A and the row-major A its B; a batch whose
// products are summed runs as one product over k * batch when its entries
// lie one after another along k (a weight's gradient over the batch), else
// as one matmul per entry, the first with the step's beta and the rest
// adding to C (beta 1) in the batch's order. This is plain code without CUDA,
// so that the mapping is tested on machines without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_CUDAGEMM_H
#define COLO_RUNTIME_CUDAGEMM_H

#include "colo/Runtime/CpuOps.h"

#include <cstdint>
#include <vector>

namespace colo::runtime {

/// One cuBLASLt matmul, column-major: D = alpha op(A) op(B) + beta C over
/// `batch` strided entries, D m x n. Offsets (elements) are from the
/// operands' base pointers: A's from the Gemm's B, B's from the Gemm's A, C's
/// and D's from the Gemm's C (C reads the residual instead where
/// `residualAsC`).
struct LtMatmul {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0;
  int64_t offsetA = 0, offsetB = 0, offsetC = 0;
  double alpha = 1, beta = 0;
  bool bias = false;        ///< the bias epilogue: one value per row of D
  bool residualAsC = false; ///< C is the residual, beta 1
  /// Rows and columns of the stored A, B (as cuBLASLt's layouts take them).
  int64_t rowsA() const { return transA ? k : m; }
  int64_t colsA() const { return transA ? m : k; }
  int64_t rowsB() const { return transB ? n : k; }
  int64_t colsB() const { return transB ? k : n; }
};

/// The matmuls that compute `g`, in order (none where m or n is 0).
/// `bias`, `residual`: whether the Gemm has that epilogue.
std::vector<LtMatmul> planLtMatmuls(const GemmGeometry &g, bool bias, bool residual);

} // namespace colo::runtime

#endif
