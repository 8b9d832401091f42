// planLtMatmuls (runtime/CudaGemm.cpp): each Gemm step's cuBLASLt matmuls,
// executed here by a naive column-major loop written from cuBLASLt's
// definition (D = alpha op(A) op(B) + beta C, strided batches), must compute
// what the CPU's Gemm (OpenBLAS) computes for the same step: transposes,
// padded leading dimensions, batches that broadcast an operand or sum into
// one C, outer batches, alpha and beta, and the bias and residual epilogues.
#include "colo/Runtime/CpuGemm.h"
#include "colo/Runtime/CudaDevice.h"
#include "colo/Runtime/CudaGemm.h"
#include "colo/Runtime/Program.pb.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace colo::runtime;

namespace {

std::vector<float> randomValues(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(size_t(std::max<int64_t>(n, 1)));
  for (float &x : v)
    x = dist(rng);
  return v;
}

/// Runs `mms` on column-major data: a is cuBLASLt's A (the Gemm's B), b its B
/// (the Gemm's A), d the Gemm's C.
void runColumnMajor(const std::vector<LtMatmul> &mms, const float *a, const float *b, float *d,
                    const float *bias, const float *residual) {
  for (const LtMatmul &mm : mms)
    for (int64_t e = 0; e < mm.batch; ++e) {
      const float *A = a + mm.offsetA + e * mm.strideA;
      const float *B = b + mm.offsetB + e * mm.strideB;
      float *D = d + mm.offsetC + e * mm.strideC;
      const float *C = mm.residualAsC ? residual + mm.offsetC + e * mm.strideC : D;
      for (int64_t i = 0; i < mm.m; ++i)
        for (int64_t j = 0; j < mm.n; ++j) {
          double sum = 0;
          for (int64_t p = 0; p < mm.k; ++p) {
            double x = mm.transA ? A[p + i * mm.lda] : A[i + p * mm.lda];
            double y = mm.transB ? B[j + p * mm.ldb] : B[p + j * mm.ldb];
            sum += x * y;
          }
          double v = mm.alpha * sum;
          if (mm.beta != 0)
            v += mm.beta * C[i + j * mm.ldc];
          if (mm.bias)
            v += bias[i];
          D[i + j * mm.ldc] = float(v);
        }
    }
}

/// The Gemm through planLtMatmuls and through the CPU; returns the number of
/// matmuls planned.
size_t expectSameAsCpu(const Gemm &gemm, bool bias = false, bool residual = false) {
  GemmGeometry g = geometryOf(gemm);
  EXPECT_EQ(checkGeometry(g), "");
  std::vector<float> a = randomValues(g.elementsA(), 1), b = randomValues(g.elementsB(), 2);
  std::vector<float> c0 = randomValues(g.elementsC(), 3);
  std::vector<float> biasValues = randomValues(g.n, 4),
                     residualValues = randomValues(g.elementsC(), 5);
  std::vector<float> cpu = c0, lt = c0;
  GemmEpilogue epilogue{bias ? biasValues.data() : nullptr,
                        residual ? residualValues.data() : nullptr};
  prepareGemm(gemm, F32, a.data(), b.data(), cpu.data(), epilogue, std::make_shared<Scratch>(),
              GemmLibrary::OpenBlas)
      .run();
  std::vector<LtMatmul> mms = planLtMatmuls(g, bias, residual);
  runColumnMajor(mms, b.data(), a.data(), lt.data(), biasValues.data(), residualValues.data());
  for (size_t i = 0; i < cpu.size(); ++i)
    EXPECT_NEAR(lt[i], cpu[i], 1e-5 * (1 + std::fabs(cpu[i]))) << "element " << i;
  return mms.size();
}

Gemm gemmOf(int64_t m, int64_t n, int64_t k, bool transA = false, bool transB = false) {
  Gemm g;
  g.set_m(m);
  g.set_n(n);
  g.set_k(k);
  g.set_trans_a(transA);
  g.set_trans_b(transB);
  return g;
}

TEST(CudaGemmPlan, OneProductEveryTransposeAndPaddedRows) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Gemm g = gemmOf(5, 7, 3, ta, tb);
      EXPECT_EQ(expectSameAsCpu(g), 1u);
      g.set_lda(ta ? 9 : 4);
      g.set_ldb(tb ? 6 : 11);
      g.set_ldc(8);
      EXPECT_EQ(expectSameAsCpu(g), 1u);
    }
}

TEST(CudaGemmPlan, AlphaAndBetaScaleTheProductAndC) {
  Gemm g = gemmOf(4, 6, 5, false, true);
  g.set_alpha(0.5);
  g.set_beta(-2);
  EXPECT_EQ(expectSameAsCpu(g), 1u);
}

TEST(CudaGemmPlan, StridedAndBroadcastBatchesAreOneMatmul) {
  Gemm g = gemmOf(3, 4, 5);
  g.set_batch(3);
  g.set_stride_a(15);
  g.set_stride_b(20);
  g.set_stride_c(12);
  EXPECT_EQ(expectSameAsCpu(g), 1u);
  g.set_stride_b(0); // every product reads the same B (a shared weight)
  EXPECT_EQ(expectSameAsCpu(g), 1u);
}

TEST(CudaGemmPlan, SummedBatchAlongKIsOneLongProduct) {
  // dW = sum_i X_i^T dY_i with X [3, 5, 4] and dY [3, 5, 6]: k runs on.
  Gemm g = gemmOf(4, 6, 5, true, false);
  g.set_batch(3);
  g.set_stride_a(20);
  g.set_stride_b(30);
  g.set_stride_c(0);
  g.set_beta(1);
  EXPECT_EQ(expectSameAsCpu(g), 1u);
  EXPECT_EQ(planLtMatmuls(geometryOf(g), false, false)[0].k, 15);
}

TEST(CudaGemmPlan, SummedBatchElsewhereIsOneMatmulPerEntry) {
  Gemm g = gemmOf(4, 6, 5, false, false);
  g.set_batch(3);
  g.set_stride_a(20);
  g.set_stride_b(30);
  g.set_stride_c(0);
  EXPECT_EQ(expectSameAsCpu(g), 3u);
  // A gap between entries breaks the run along k.
  g = gemmOf(4, 6, 5, true, false);
  g.set_lda(5);
  g.set_batch(2);
  g.set_stride_a(30);
  g.set_stride_b(30);
  g.set_stride_c(0);
  EXPECT_EQ(expectSameAsCpu(g), 2u);
}

TEST(CudaGemmPlan, OuterBatchesReadHeadsInPlace) {
  // Attention's scores from [batch 2, seq 3, heads 2, dim 4]: Q K^T per
  // (batch, head), rows heads * dim apart.
  Gemm g = gemmOf(3, 3, 4, false, true);
  g.set_lda(8);
  g.set_ldb(8);
  g.set_batch(2);
  g.set_stride_a(4);
  g.set_stride_b(4);
  g.set_stride_c(9);
  g.set_batch_outer(2);
  g.set_outer_stride_a(24);
  g.set_outer_stride_b(24);
  g.set_outer_stride_c(18);
  EXPECT_EQ(expectSameAsCpu(g), 2u);
  // Both levels summed into one C: 4 matmuls, the first with beta.
  g.set_stride_c(0);
  g.set_outer_stride_c(0);
  g.set_beta(0.5);
  EXPECT_EQ(expectSameAsCpu(g), 4u);
}

TEST(CudaGemmPlan, BiasAndResidualEpilogues) {
  Gemm g = gemmOf(5, 6, 7, false, true);
  EXPECT_EQ(expectSameAsCpu(g, /*bias=*/true), 1u);
  EXPECT_EQ(expectSameAsCpu(g, false, /*residual=*/true), 1u);
  EXPECT_EQ(expectSameAsCpu(g, true, true), 1u);
}

TEST(CudaGemmPlan, EmptyProductsPlanNothing) {
  EXPECT_TRUE(planLtMatmuls(geometryOf(gemmOf(0, 4, 3)), false, false).empty());
}

} // namespace

#ifdef COLO_HAVE_CUDA
// The cuBLASLt descriptors colo builds from a plan (runtime/CudaBlas.cpp),
// read back through cuBLASLt's own getters: they need the library, not a GPU.
#include "CudaBlas.h"
#include "colo/Runtime/Error.h"

namespace {

template <typename T>
T layoutAttribute(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t a) {
  T value{};
  size_t written = 0;
  EXPECT_EQ(cublasLt().cublasLtMatrixLayoutGetAttribute(l, a, &value, sizeof value, &written),
            CUBLAS_STATUS_SUCCESS);
  return value;
}
template <typename T> T opAttribute(cublasLtMatmulDesc_t op, cublasLtMatmulDescAttributes_t a) {
  T value{};
  size_t written = 0;
  EXPECT_EQ(cublasLt().cublasLtMatmulDescGetAttribute(op, a, &value, sizeof value, &written),
            CUBLAS_STATUS_SUCCESS);
  return value;
}

bool haveCublasLt() {
  try {
    cublasLt();
    return true;
  } catch (const Error &) {
    return false;
  }
}

TEST(CudaGemmDescriptors, BatchedBf16ProductOfAttention) {
  if (!haveCublasLt())
    GTEST_SKIP() << "libcublasLt cannot be loaded";
  // Scores Q K^T over 2 x 3 heads, [seq 16, dim 8] each, rows 24 apart.
  Gemm gemm = gemmOf(16, 16, 8, false, true);
  gemm.set_lda(24);
  gemm.set_ldb(24);
  gemm.set_batch(3);
  gemm.set_stride_a(8);
  gemm.set_stride_b(8);
  gemm.set_stride_c(256);
  std::vector<LtMatmul> mms = planLtMatmuls(geometryOf(gemm), false, false);
  ASSERT_EQ(mms.size(), 1u);
  LtDescriptors d(mms[0], BF16, nullptr);
  // cuBLASLt's A is K: stored [16, 8] row-major, read transposed.
  EXPECT_EQ(opAttribute<int32_t>(d.op, CUBLASLT_MATMUL_DESC_TRANSA), CUBLAS_OP_T);
  EXPECT_EQ(opAttribute<int32_t>(d.op, CUBLASLT_MATMUL_DESC_TRANSB), CUBLAS_OP_N);
  EXPECT_EQ(opAttribute<int32_t>(d.op, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE), CUBLAS_COMPUTE_32F);
  EXPECT_EQ(opAttribute<int32_t>(d.op, CUBLASLT_MATMUL_DESC_SCALE_TYPE), CUDA_R_32F);
  EXPECT_EQ(layoutAttribute<uint32_t>(d.a, CUBLASLT_MATRIX_LAYOUT_TYPE), uint32_t(CUDA_R_16BF));
  EXPECT_EQ(layoutAttribute<uint64_t>(d.a, CUBLASLT_MATRIX_LAYOUT_ROWS), 8u);
  EXPECT_EQ(layoutAttribute<uint64_t>(d.a, CUBLASLT_MATRIX_LAYOUT_COLS), 16u);
  EXPECT_EQ(layoutAttribute<int64_t>(d.a, CUBLASLT_MATRIX_LAYOUT_LD), 24);
  EXPECT_EQ(layoutAttribute<int32_t>(d.a, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT), 3);
  EXPECT_EQ(layoutAttribute<int64_t>(d.a, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET), 8);
  EXPECT_EQ(layoutAttribute<int64_t>(d.d, CUBLASLT_MATRIX_LAYOUT_LD), 16);
  EXPECT_EQ(layoutAttribute<int64_t>(d.d, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET), 256);
}

TEST(CudaGemmDescriptors, BiasEpilogueAndDoublePrecision) {
  if (!haveCublasLt())
    GTEST_SKIP() << "libcublasLt cannot be loaded";
  std::vector<float> bias(6);
  LtDescriptors withBias(planLtMatmuls(geometryOf(gemmOf(4, 6, 5)), true, false)[0], F32,
                         bias.data());
  EXPECT_EQ(opAttribute<uint32_t>(withBias.op, CUBLASLT_MATMUL_DESC_EPILOGUE),
            uint32_t(CUBLASLT_EPILOGUE_BIAS));
  EXPECT_EQ(opAttribute<const void *>(withBias.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER), bias.data());
  // Not TF32: float products keep the CPU's float numerics.
  EXPECT_EQ(opAttribute<int32_t>(withBias.op, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE),
            CUBLAS_COMPUTE_32F);
  LtDescriptors wide(planLtMatmuls(geometryOf(gemmOf(4, 6, 5)), false, false)[0], F64, nullptr);
  EXPECT_EQ(opAttribute<int32_t>(wide.op, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE), CUBLAS_COMPUTE_64F);
  EXPECT_EQ(wide.scaleType, CUDA_R_64F);
  EXPECT_THROW(
      LtDescriptors(planLtMatmuls(geometryOf(gemmOf(4, 6, 5)), false, false)[0], I64, nullptr),
      Error);
}

// On a machine with a GPU (bench/gpu_check.sh): the CUDA device computes what
// the CPU device computes. Skipped without one.

/// Device copies of host vectors, read back after the device ran.
struct OnDevice {
  Device &device;
  std::vector<std::pair<void *, std::vector<float> *>> blocks;
  float *put(std::vector<float> &host) {
    auto *p = static_cast<float *>(
        device.allocate(MemorySpace::Device, int64_t(host.size() * 4), "a test operand"));
    device.copy(p, host.data(), int64_t(host.size() * 4));
    blocks.push_back({p, &host});
    return p;
  }
  void run(const PreparedOp &op) {
    device.launch(Device::Queue::Compute, op);
    device.synchronize(Device::Queue::Compute);
    for (auto &[p, host] : blocks) {
      device.copy(host->data(), p, int64_t(host->size() * 4));
      device.free(p);
    }
    blocks.clear();
  }
};

std::unique_ptr<Device> gpuOrSkip() {
  if (std::string problem = cudaGpuProblem(); !problem.empty())
    return nullptr;
  return createCudaDevice(0);
}

TEST(CudaDeviceOps, GemmsMatchTheCpu) {
  std::unique_ptr<Device> gpu = gpuOrSkip();
  if (!gpu)
    GTEST_SKIP() << cudaGpuProblem();
  std::vector<Gemm> gemms = {gemmOf(65, 33, 17), gemmOf(40, 24, 96, true, true)};
  Gemm batched = gemmOf(16, 16, 8, false, true);
  batched.set_lda(24);
  batched.set_ldb(24);
  batched.set_batch(3);
  batched.set_stride_a(8);
  batched.set_stride_b(8);
  batched.set_stride_c(256);
  gemms.push_back(batched);
  Gemm summed = gemmOf(4, 6, 5, true, false);
  summed.set_batch(3);
  summed.set_stride_a(20);
  summed.set_stride_b(30);
  summed.set_stride_c(0);
  gemms.push_back(summed);
  for (size_t i = 0; i < gemms.size() + 1; ++i) {
    bool epilogue = i == gemms.size();
    Gemm gemm = epilogue ? gemmOf(32, 48, 64, false, true) : gemms[i];
    GemmGeometry g = geometryOf(gemm);
    std::vector<float> a = randomValues(g.elementsA(), 1), b = randomValues(g.elementsB(), 2);
    std::vector<float> c = randomValues(g.elementsC(), 3), bias = randomValues(g.n, 4);
    std::vector<float> residual = randomValues(g.elementsC(), 5), cpu = c;
    GemmEpilogue host{epilogue ? bias.data() : nullptr, epilogue ? residual.data() : nullptr};
    prepareGemm(gemm, F32, a.data(), b.data(), cpu.data(), host, std::make_shared<Scratch>(),
                GemmLibrary::OpenBlas)
        .run();
    OnDevice d{*gpu, {}};
    float *da = d.put(a), *db = d.put(b), *dc = d.put(c);
    GemmEpilogue dev{epilogue ? d.put(bias) : nullptr, epilogue ? d.put(residual) : nullptr};
    d.run(gpu->prepareGemm(gemm, F32, da, db, dc, dev, std::make_shared<Scratch>()).run);
    for (size_t j = 0; j < cpu.size(); ++j)
      ASSERT_NEAR(c[j], cpu[j], 1e-4 * (1 + std::fabs(cpu[j]))) << "gemm " << i << " at " << j;
  }
}

TEST(CudaDeviceOps, ConvolutionsAndPoolingMatchTheCpu) {
  std::unique_ptr<Device> gpu = gpuOrSkip();
  if (!gpu)
    GTEST_SKIP() << cudaGpuProblem();
  Conv2d conv;
  conv.set_n(2);
  conv.set_c(4);
  conv.set_h(9);
  conv.set_w(9);
  conv.set_k(6);
  conv.set_r(3);
  conv.set_s(3);
  conv.set_stride_h(2);
  conv.set_stride_w(2);
  for (auto set : {&Conv2d::set_pad_t, &Conv2d::set_pad_b, &Conv2d::set_pad_l, &Conv2d::set_pad_r})
    (conv.*set)(1);
  conv.set_oh(5);
  conv.set_ow(5);
  for (Conv2d::Mode mode : {Conv2d::FORWARD, Conv2d::BACKWARD_DATA, Conv2d::BACKWARD_WEIGHTS}) {
    conv.set_mode(mode);
    std::vector<float> x = randomValues(2 * 4 * 81, 1), w = randomValues(6 * 4 * 9, 2),
                       bias = randomValues(6, 3), y = randomValues(2 * 6 * 25, 4);
    std::vector<float> cx = x, cw = w, cb = bias, cy = y;
    prepareConv(conv, cx.data(), cw.data(), cb.data(), cy.data(), std::make_shared<Scratch>())();
    OnDevice d{*gpu, {}};
    float *dx = d.put(x), *dw = d.put(w), *dbias = d.put(bias), *dy = d.put(y);
    d.run(gpu->prepareConv(conv, dx, dw, dbias, dy, std::make_shared<Scratch>()));
    for (auto [gpuOut, cpuOut] : {std::pair{&x, &cx}, {&w, &cw}, {&bias, &cb}, {&y, &cy}})
      for (size_t j = 0; j < cpuOut->size(); ++j)
        ASSERT_NEAR((*gpuOut)[j], (*cpuOut)[j], 1e-4 * (1 + std::fabs((*cpuOut)[j])))
            << "mode " << mode << " at " << j;
  }
  Pool2d pool;
  pool.set_n(2);
  pool.set_c(3);
  pool.set_h(8);
  pool.set_w(8);
  pool.set_r(2);
  pool.set_s(2);
  pool.set_stride_h(2);
  pool.set_stride_w(2);
  pool.set_oh(4);
  pool.set_ow(4);
  for (Pool2d::Mode mode :
       {Pool2d::MAX_FORWARD, Pool2d::AVG_FORWARD, Pool2d::MAX_BACKWARD, Pool2d::AVG_BACKWARD}) {
    pool.set_mode(mode);
    std::vector<float> x = randomValues(2 * 3 * 64, 5), y = randomValues(2 * 3 * 16, 6),
                       dx = randomValues(2 * 3 * 64, 7), dy = randomValues(2 * 3 * 16, 8);
    std::vector<float> cx = x, cy = y, cdx = dx, cdy = dy;
    preparePool(pool, cx.data(), cy.data(), cdx.data(), cdy.data())();
    OnDevice d{*gpu, {}};
    float *gx = d.put(x), *gy = d.put(y), *gdx = d.put(dx), *gdy = d.put(dy);
    d.run(gpu->preparePool(pool, gx, gy, gdx, gdy));
    for (auto [gpuOut, cpuOut] : {std::pair{&y, &cy}, {&dx, &cdx}})
      for (size_t j = 0; j < cpuOut->size(); ++j)
        ASSERT_NEAR((*gpuOut)[j], (*cpuOut)[j], 1e-5 * (1 + std::fabs((*cpuOut)[j])))
            << "pool mode " << mode << " at " << j;
  }
}

TEST(CudaDeviceOps, TheCopyQueueOverlapsAndOrders) {
  std::unique_ptr<Device> gpu = gpuOrSkip();
  if (!gpu)
    GTEST_SKIP() << cudaGpuProblem();
  int64_t n = 1 << 20;
  auto *src = static_cast<float *>(gpu->allocate(MemorySpace::PinnedHost, n * 4, "source"));
  auto *dst = static_cast<float *>(gpu->allocate(MemorySpace::Device, n * 4, "target"));
  for (int64_t i = 0; i < n; ++i)
    src[i] = float(i);
  gpu->copyAsync(Device::Queue::Copy, dst, src, n * 4);
  std::shared_ptr<Device::Event> copied = gpu->record(Device::Queue::Copy);
  gpu->wait(Device::Queue::Compute, *copied);
  auto *back = static_cast<float *>(gpu->allocate(MemorySpace::Host, n * 4, "copy back"));
  gpu->launch(Device::Queue::Compute, gpu->prepareCopy(back, dst, n * 4));
  gpu->synchronize(Device::Queue::Compute);
  EXPECT_TRUE(copied->complete());
  EXPECT_EQ(back[n - 1], float(n - 1));
  EXPECT_GT(gpu->copyQueueBusySeconds(), 0);
  for (void *p : {static_cast<void *>(src), static_cast<void *>(dst), static_cast<void *>(back)})
    gpu->free(p);
}

} // namespace
#endif
