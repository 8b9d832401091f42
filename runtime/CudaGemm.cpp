//===- CudaGemm.cpp - A Gemm step as cuBLASLt matmuls ---------------------===//

#include "colo/Runtime/CudaGemm.h"

namespace colo::runtime {

namespace {
/// The product (o, i) of `g` alone, column-major, with its beta.
LtMatmul entry(const GemmGeometry &g, int64_t o, int64_t i, double beta) {
  LtMatmul mm;
  mm.transA = g.transB;
  mm.transB = g.transA;
  mm.m = g.n;
  mm.n = g.m;
  mm.k = g.k;
  mm.lda = g.ldb;
  mm.ldb = g.lda;
  mm.ldc = g.ldc;
  mm.offsetA = o * g.outerStrideB + i * g.strideB;
  mm.offsetB = o * g.outerStrideA + i * g.strideA;
  mm.offsetC = o * g.outerStrideC + i * g.strideC;
  mm.alpha = g.alpha;
  mm.beta = beta;
  return mm;
}
} // namespace

std::vector<LtMatmul> planLtMatmuls(const GemmGeometry &g, bool bias, bool residual) {
  std::vector<LtMatmul> out;
  if (g.m <= 0 || g.n <= 0)
    return out;
  bool summed = g.batch > 1 && g.strideC == 0;
  // Entries one after another along k: A stored k x m (transposed) and B
  // stored k x n, each entry's k rows right after the previous entry's.
  bool alongK =
      summed && g.transA && !g.transB && g.strideA == g.k * g.lda && g.strideB == g.k * g.ldb;
  for (int64_t o = 0; o < g.batchOuter; ++o) {
    // An outer level with C stride 0 sums into the C of its first entry.
    double beta = (o > 0 && g.outerStrideC == 0) ? 1.0 : g.beta;
    if (alongK) {
      LtMatmul mm = entry(g, o, 0, beta);
      mm.k = g.k * g.batch;
      out.push_back(mm);
    } else if (summed) {
      for (int64_t i = 0; i < g.batch; ++i)
        out.push_back(entry(g, o, i, i == 0 ? beta : 1.0));
    } else {
      LtMatmul mm = entry(g, o, 0, beta);
      mm.batch = g.batch;
      mm.strideA = g.strideB;
      mm.strideB = g.strideA;
      mm.strideC = g.strideC;
      out.push_back(mm);
    }
  }
  // Epilogues come with one product, alpha 1 and beta 0 (checkEpilogue).
  for (LtMatmul &mm : out) {
    mm.bias = bias;
    if (residual) {
      mm.residualAsC = true;
      mm.beta = 1;
    }
  }
  return out;
}

} // namespace colo::runtime
