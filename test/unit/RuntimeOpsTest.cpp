// The runtime's library calls (Gemm through oneDNN and OpenBLAS, Conv2d and pooling
// through oneDNN, max-pooling backward by the runtime), each run as a
// one-step program and compared with a naive loop written here from the
// schema's definition. Where PyTorch is installed, max-pooling backward with
// ties is also compared with torch itself.
#include "RuntimeTestUtil.h"
#include "colo/Runtime/Error.h"
#include "colo/Runtime/Files.h"
#include "ProgramBuilder.h"
#include "colo/Runtime/Session.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sys/wait.h>

using namespace colo::runtime;

namespace {

template <typename T> std::vector<T> randomValues(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<T> v(n);
  for (T &x : v)
    x = T(dist(rng));
  return v;
}

/// A one-step program whose operands are INPUT buffers (set before the step)
/// or STATE buffers (initial values in state.safetensors), read back after.
class OpProgram {
public:
  ProgramBuilder builder;

  template <typename T>
  int32_t input(const std::string &name, DType dtype, const std::vector<T> &values) {
    int32_t id = builder.input(name, dtype, {int64_t(values.size())});
    inputs[name] = bytesOf(values);
    return id;
  }
  template <typename T>
  int32_t state(const std::string &name, DType dtype, const std::vector<T> &values) {
    int32_t id = builder.state(name, dtype, {int64_t(values.size())});
    states.push_back({name, dtype, {int64_t(values.size())}, bytesOf(values)});
    return id;
  }

  Session &run(GemmLibrary gemm = GemmLibrary::OneDnn) {
    std::vector<TensorView> views;
    for (const auto &s : states)
      views.push_back({s.name, s.dtype, s.shape, s.bytes.data()});
    writeExecutable(dir.path, builder.program(), views);
    session.reset(); // before the device it runs on
    device = createCpuDevice(gemm);
    session = std::make_unique<Session>(Executable::load(dir.path), nullptr, device.get());
    for (const auto &[name, bytes] : inputs)
      session->setInput(name, bytes.data(), int64_t(bytes.size()));
    session->step();
    return *session;
  }

  template <typename T> std::vector<T> read(int32_t id) const {
    const Executable &exe = session->executable();
    std::vector<T> v(size_t(exe.numElements(id)));
    std::memcpy(v.data(), session->data(id), v.size() * sizeof(T));
    return v;
  }

private:
  struct StateInit {
    std::string name;
    DType dtype;
    Shape shape;
    std::string bytes;
  };
  template <typename T> static std::string bytesOf(const std::vector<T> &v) {
    return std::string(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(T));
  }
  TempDir dir;
  std::map<std::string, std::string> inputs;
  std::vector<StateInit> states;
  std::unique_ptr<Device> device; // outlives the session
  std::unique_ptr<Session> session;
};

template <typename T>
void expectNear(const std::vector<T> &got, const std::vector<T> &want, double tol,
                const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(double(want[i]))))
        << what << " at " << i;
}

//===----------------------------------------------------------------------===//
// Gemm
//===----------------------------------------------------------------------===//

/// Every Gemm test runs on each library (CpuGemm.h).
class RuntimeGemm : public testing::TestWithParam<GemmLibrary> {};
INSTANTIATE_TEST_SUITE_P(Libraries, RuntimeGemm,
                         testing::Values(GemmLibrary::OneDnn, GemmLibrary::OpenBlas),
                         [](const testing::TestParamInfo<GemmLibrary> &info) {
                           return info.param == GemmLibrary::OneDnn ? "oneDNN" : "OpenBLAS";
                         });

struct GemmCase {
  bool ta = false, tb = false;
  int64_t m = 3, n = 4, k = 5, batch = 1;
  int64_t lda = 0, ldb = 0, ldc = 0; // 0: packed
  int64_t sa = 0, sb = 0, sc = 0;
  int64_t outer = 1, osa = 0, osb = 0, osc = 0; // the outer batch level
  double alpha = 1, beta = 0;
  bool setAlphaBeta = false;
};

template <typename T>
void naiveGemm(const GemmCase &g, const std::vector<T> &A, const std::vector<T> &B,
               std::vector<T> &C) {
  int64_t lda = g.lda ? g.lda : (g.ta ? g.m : g.k);
  int64_t ldb = g.ldb ? g.ldb : (g.tb ? g.k : g.n);
  int64_t ldc = g.ldc ? g.ldc : g.n;
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t i = 0; i < g.batch; ++i)
      for (int64_t r = 0; r < g.m; ++r)
        for (int64_t c = 0; c < g.n; ++c) {
          int64_t pa = o * g.osa + i * g.sa, pb = o * g.osb + i * g.sb;
          double acc = 0;
          for (int64_t kk = 0; kk < g.k; ++kk) {
            double a = g.ta ? A[pa + kk * lda + r] : A[pa + r * lda + kk];
            double b = g.tb ? B[pb + c * ldb + kk] : B[pb + kk * ldb + c];
            acc += a * b;
          }
          T &out = C[o * g.osc + i * g.sc + r * ldc + c];
          // A C stride of 0 on a level sums that level's products into one C.
          bool again = (g.sc == 0 && i > 0) || (g.osc == 0 && o > 0);
          out = T(g.alpha * acc + (again ? 1.0 : g.beta) * out);
        }
}

/// Runs `g` on random A, B and C; returns (the C it computed, the inputs).
template <typename T>
std::pair<std::vector<T>, std::array<std::vector<T>, 3>>
runGemm(const GemmCase &g, DType dtype, GemmLibrary library) {
  int64_t lda = g.lda ? g.lda : (g.ta ? g.m : g.k);
  int64_t ldb = g.ldb ? g.ldb : (g.tb ? g.k : g.n);
  int64_t ldc = g.ldc ? g.ldc : g.n;
  auto extent = [&](int64_t outerStride, int64_t stride, int64_t rows, int64_t ld,
                    int64_t cols) {
    return size_t((g.outer - 1) * outerStride + (g.batch - 1) * stride + (rows - 1) * ld +
                  cols);
  };
  std::array<std::vector<T>, 3> in = {
      randomValues<T>(extent(g.osa, g.sa, g.ta ? g.k : g.m, lda, g.ta ? g.m : g.k), 1),
      randomValues<T>(extent(g.osb, g.sb, g.tb ? g.n : g.k, ldb, g.tb ? g.k : g.n), 2),
      randomValues<T>(extent(g.osc, g.sc, g.m, ldc, g.n), 3)};
  OpProgram p;
  int32_t a = p.input("a", dtype, in[0]), b = p.input("b", dtype, in[1]),
          c = p.state("c", dtype, in[2]);
  Gemm &gemm = p.builder.gemm(a, b, c, g.m, g.n, g.k);
  gemm.set_trans_a(g.ta);
  gemm.set_trans_b(g.tb);
  gemm.set_batch(g.batch);
  gemm.set_lda(g.lda);
  gemm.set_ldb(g.ldb);
  gemm.set_ldc(g.ldc);
  gemm.set_stride_a(g.sa);
  gemm.set_stride_b(g.sb);
  gemm.set_stride_c(g.sc);
  gemm.set_batch_outer(g.outer);
  gemm.set_outer_stride_a(g.osa);
  gemm.set_outer_stride_b(g.osb);
  gemm.set_outer_stride_c(g.osc);
  if (g.setAlphaBeta) {
    gemm.set_alpha(g.alpha);
    gemm.set_beta(g.beta);
  }
  p.run(library);
  return {p.read<T>(c), std::move(in)};
}

template <typename T> void checkGemm(const GemmCase &g, DType dtype, GemmLibrary library) {
  auto [got, in] = runGemm<T>(g, dtype, library);
  naiveGemm(g, in[0], in[1], in[2]);
  expectNear(got, in[2], dtype == F32 ? 1e-5 : 1e-12, "gemm");
}

// One product, and a batch of products into distinct outputs (run side by
// side on the threads).
TEST_P(RuntimeGemm, TransposeFlags) {
  for (int64_t batch : {1, 3})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(testing::Message()
                     << "batch " << batch << " trans_a " << ta << " trans_b " << tb);
        GemmCase g;
        g.ta = ta;
        g.tb = tb;
        g.batch = batch;
        g.sa = g.m * g.k;
        g.sb = g.k * g.n;
        g.sc = g.m * g.n;
        checkGemm<float>(g, F32, GetParam());
      }
}

TEST_P(RuntimeGemm, AlphaBetaAndLeadingDimensions) {
  GemmCase g;
  g.m = 4;
  g.n = 3;
  g.k = 6;
  g.lda = 8; // padded rows
  g.ldb = 5;
  g.ldc = 7;
  g.alpha = 0.5;
  g.beta = -2;
  g.setAlphaBeta = true;
  checkGemm<float>(g, F32, GetParam());
  g.ta = g.tb = true;
  g.lda = 6;
  g.ldb = 9;
  checkGemm<float>(g, F32, GetParam());
}

TEST_P(RuntimeGemm, Batched) {
  GemmCase g;
  g.batch = 3;
  g.sa = g.m * g.k;
  g.sb = g.k * g.n + 2; // gaps between batch entries
  g.sc = g.m * g.n;
  checkGemm<float>(g, F32, GetParam());
}

TEST_P(RuntimeGemm, BroadcastOperandWithStrideZero) {
  GemmCase g;
  g.batch = 4;
  g.sa = g.m * g.k;
  g.sb = 0; // one weight for the whole batch
  g.sc = g.m * g.n;
  checkGemm<float>(g, F32, GetParam());
  g.sa = 0; // and one A for every B
  g.sb = g.k * g.n;
  g.tb = true;
  checkGemm<float>(g, F32, GetParam());
}

TEST_P(RuntimeGemm, StrideZeroOutputSumsTheBatch) {
  GemmCase g;
  g.batch = 3;
  g.sa = g.m * g.k;
  g.sb = g.k * g.n;
  g.sc = 0;
  g.beta = 1;
  g.setAlphaBeta = true;
  checkGemm<float>(g, F32, GetParam());
}

// Attention's q k^T read in place: q is [batch 2, seq 3, heads 2, dim 5] and
// k is [2, 4, 2, 5]; the products run over (batch, head) into a contiguous
// [2, 2, 3, 4].
GemmCase headsInPlace() {
  GemmCase g;
  g.m = 3, g.n = 4, g.k = 5, g.tb = true;
  g.lda = g.ldb = 2 * 5;
  g.outer = 2, g.batch = 2;
  g.osa = 3 * 2 * 5, g.sa = 5;
  g.osb = 4 * 2 * 5, g.sb = 5;
  g.osc = 2 * 3 * 4, g.sc = 3 * 4;
  return g;
}

TEST_P(RuntimeGemm, TwoBatchLevelsReadHeadsInPlace) {
  GemmCase g = headsInPlace();
  checkGemm<float>(g, F32, GetParam());
  checkGemm<double>(g, F64, GetParam());
  g.osc = 0; // the outer level summed into one C per head
  g.beta = 1, g.setAlphaBeta = true;
  checkGemm<float>(g, F32, GetParam());
}

// With several threads the products into distinct Cs run side by side and
// the summed ones in order: the same results as one thread, bit for bit.
TEST_P(RuntimeGemm, ProductsOnSeveralThreadsMatchOneThread) {
  GemmCase summed = headsInPlace();
  summed.osc = 0;
  summed.beta = 1, summed.setAlphaBeta = true;
  for (const GemmCase &g : {headsInPlace(), summed}) {
    setThreads(1);
    std::vector<float> one = runGemm<float>(g, F32, GetParam()).first;
    setThreads(3);
    std::vector<float> three = runGemm<float>(g, F32, GetParam()).first;
    setThreads(1);
    EXPECT_EQ(one, three);
  }
}

// The bias epilogue adds the bias to the float product before C is written:
// the same bits as the product followed by a float add, and near the exact
// sum.
TEST_P(RuntimeGemm, BiasIsAddedToEveryRowOfTheProduct) {
  for (bool tb : {false, true}) {
    SCOPED_TRACE(testing::Message() << "trans_b " << tb);
    GemmCase g;
    g.m = 6, g.n = 20, g.k = 9, g.tb = tb, g.ldc = 23; // padded rows of C
    std::vector<float> bias = randomValues<float>(size_t(g.n), 4);
    auto [plain, in] = runGemm<float>(g, F32, GetParam());
    OpProgram p;
    int32_t a = p.input("a", F32, in[0]), b = p.input("b", F32, in[1]),
            c = p.state("c", F32, in[2]), bi = p.input("bias", F32, bias);
    Gemm &gemm = p.builder.gemm(a, b, c, g.m, g.n, g.k);
    gemm.set_trans_b(tb);
    gemm.set_ldc(g.ldc);
    gemm.set_bias(bi);
    p.run(GetParam());
    std::vector<float> got = p.read<float>(c), added = plain, exact = in[2];
    naiveGemm(g, in[0], in[1], exact);
    for (int64_t r = 0; r < g.m; ++r)
      for (int64_t col = 0; col < g.n; ++col) {
        added[r * g.ldc + col] += bias[col];
        exact[r * g.ldc + col] += bias[col];
      }
    EXPECT_EQ(std::memcmp(got.data(), added.data(), got.size() * sizeof(float)), 0);
    expectNear(got, exact, 1e-5, "gemm + bias");
  }
}

// The residual epilogue adds a tensor laid out like C after the bias: the
// same bits as the product followed by the float adds.
TEST_P(RuntimeGemm, ResidualIsAddedAfterTheBias) {
  for (bool withBias : {false, true}) {
    SCOPED_TRACE(testing::Message() << "bias " << withBias);
    GemmCase g;
    g.m = 7, g.n = 18, g.k = 11, g.ldc = 21;
    std::vector<float> bias = randomValues<float>(size_t(g.n), 5);
    std::vector<float> residual = randomValues<float>(size_t(g.m * g.ldc), 6);
    auto [plain, in] = runGemm<float>(g, F32, GetParam());
    OpProgram p;
    int32_t a = p.input("a", F32, in[0]), b = p.input("b", F32, in[1]),
            c = p.state("c", F32, in[2]), bi = p.input("bias", F32, bias),
            re = p.input("residual", F32, residual);
    Gemm &gemm = p.builder.gemm(a, b, c, g.m, g.n, g.k);
    gemm.set_ldc(g.ldc);
    if (withBias)
      gemm.set_bias(bi);
    gemm.set_residual(re);
    p.run(GetParam());
    std::vector<float> got = p.read<float>(c), added = plain;
    for (int64_t r = 0; r < g.m; ++r)
      for (int64_t col = 0; col < g.n; ++col) {
        float &x = added[r * g.ldc + col];
        if (withBias)
          x += bias[col];
        x += residual[r * g.ldc + col];
      }
    EXPECT_EQ(std::memcmp(got.data(), added.data(), got.size() * sizeof(float)), 0);
  }
}

// The planner times products on other thread counts in the process that
// later runs a session: the libraries' counts must come back as they were,
// also before any setThreads (threadCount() then says 1, OpenMP all cores).
TEST(RuntimeThreads, ScopedThreadsRestoreTheLibrariesCounts) {
  int omp = omp_get_max_threads(), run = threadCount();
  {
    ScopedThreads scoped(omp + 1);
    EXPECT_EQ(threadCount(), omp + 1);
    EXPECT_EQ(omp_get_max_threads(), omp + 1);
  }
  EXPECT_EQ(omp_get_max_threads(), omp);
  EXPECT_EQ(threadCount(), run);
}

TEST(RuntimeGemmBias, RejectsWhatTheEpilogueDoesNotCover) {
  ProgramBuilder builder;
  int32_t a = builder.input("a", F32, {12}), b = builder.input("b", F32, {12}),
          c = builder.state("c", F32, {9}), bias = builder.input("bias", F32, {3});
  Gemm &gemm = builder.gemm(a, b, c, 3, 3, 4);
  gemm.set_bias(bias);
  gemm.set_beta(1.0);
  TempDir dir;
  std::vector<float> zeros(9);
  writeExecutable(dir.path, builder.program(), {{"c", F32, {9}, zeros.data()}});
  try {
    Executable::load(dir.path);
    FAIL() << "a bias with beta 1 was accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("a gemm epilogue (bias, residual) needs f32 operands, alpha 1, beta 0"),
              std::string::npos)
        << e.what();
  }
}

TEST_P(RuntimeGemm, Float64) {
  GemmCase g;
  g.ta = true;
  g.batch = 2;
  g.sa = g.m * g.k;
  g.sb = g.k * g.n;
  g.sc = g.m * g.n;
  checkGemm<double>(g, F64, GetParam());
}

// bf16 and f16 operands, float accumulation, one rounding of the result:
// within one 16-bit rounding of the float64 product of the same values.
TEST_P(RuntimeGemm, SixteenBitAccumulatesInFloat) {
  for (DType dtype : {BF16, F16}) {
    SCOPED_TRACE(dtypeName(dtype));
    bool bf16 = dtype == BF16;
    auto narrow = [&](float v) { return bf16 ? floatToBf16(v) : floatToHalf(v); };
    auto widen = [&](uint16_t h) { return bf16 ? bf16ToFloat(h) : halfToFloat(h); };
    GemmCase g;
    g.tb = true;
    g.k = 64; // long enough that 16-bit accumulation would be visibly off
    g.alpha = 0.5;
    g.beta = 1;
    g.setAlphaBeta = true;
    auto halves = [&](int64_t n, uint32_t seed) {
      std::vector<uint16_t> h;
      for (float v : randomValues<float>(size_t(n), seed))
        h.push_back(narrow(v));
      return h;
    };
    std::vector<uint16_t> A = halves(g.m * g.k, 1), B = halves(g.n * g.k, 2),
                          C = halves(g.m * g.n, 3);
    OpProgram p;
    int32_t a = p.input("a", dtype, A), b = p.input("b", dtype, B), c = p.state("c", dtype, C);
    Gemm &gemm = p.builder.gemm(a, b, c, g.m, g.n, g.k);
    gemm.set_trans_b(true);
    gemm.set_alpha(g.alpha);
    gemm.set_beta(g.beta);
    p.run(GetParam());
    std::vector<uint16_t> got = p.read<uint16_t>(c);
    int mantissa = bf16 ? 7 : 10; // stored bits
    for (int64_t r = 0; r < g.m; ++r)
      for (int64_t col = 0; col < g.n; ++col) {
        double acc = 0, magnitude = 0;
        for (int64_t kk = 0; kk < g.k; ++kk) {
          double product = double(widen(A[r * g.k + kk])) * widen(B[col * g.k + kk]);
          acc += product;
          magnitude += std::abs(product);
        }
        double want = g.alpha * acc + g.beta * widen(C[r * g.n + col]);
        // Half an ulp of rounding the result, plus float accumulation.
        double halfUlp = std::ldexp(1.0, std::ilogb(want) - mantissa - 1);
        EXPECT_NEAR(widen(got[r * g.n + col]), want, halfUlp + magnitude * 1e-6)
            << "at " << r << ", " << col;
      }
  }
}

// What colo run reports for this machine's products: oneDNN's matmul on the
// widest vectors the processor has, never a reference (generic) kernel, and
// bf16 products on the processor's bf16 instructions (AVX512-BF16, AMX)
// where it has them, not widened to float.
TEST(RuntimeGemmPath, UsesThisProcessorsInstructions) {
  OpProgram p;
  std::vector<float> x = randomValues<float>(64 * 64, 1);
  std::vector<uint16_t> h(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    h[i] = floatToBf16(x[i]);
  int32_t a = p.input("a", F32, x), b = p.input("b", F32, x), c = p.state("c", F32, x);
  p.builder.gemm(a, b, c, 64, 64, 64);
  int32_t ha = p.input("ha", BF16, h), hb = p.input("hb", BF16, h),
          hc = p.state("hc", BF16, h);
  p.builder.gemm(ha, hb, hc, 64, 64, 64);
  std::vector<std::string> paths = p.run().gemmPaths();
  ASSERT_EQ(paths.size(), 2u);
  std::string f32 = paths[0], bf16 = paths[1];
  SCOPED_TRACE(f32 + "; " + bf16 + "; oneDNN ISA " + oneDnnIsa());
  EXPECT_EQ(f32.rfind("f32: oneDNN", 0), 0u);
  EXPECT_EQ(f32.find("ref"), std::string::npos);
  const char *vectors = __builtin_cpu_supports("avx512f") ? "avx512"
                        : __builtin_cpu_supports("avx2") ? "avx2"
                                                         : "";
  // oneDNN names its AVX-512 kernels by their ISA; its AVX2 matmul is the
  // JIT gemm ("gemm:jit"), generated for the ISA it reports.
  auto vectorKernel = [&](const std::string &path) {
    return path.find(vectors) != std::string::npos ||
           (path.find("gemm:jit") != std::string::npos &&
            oneDnnIsa().find(vectors) != std::string::npos);
  };
  EXPECT_TRUE(vectorKernel(f32));
  EXPECT_NE(oneDnnIsa().find(vectors), std::string::npos);
  // bf16 runs on oneDNN's 16-bit kernels where there are AMX tiles, else on
  // the same vector float kernel as f32 (CpuGemm.cpp says why).
  if (oneDnnIsa().find("amx") != std::string::npos) {
    EXPECT_EQ(bf16.find("widened"), std::string::npos);
    EXPECT_NE(bf16.find("amx"), std::string::npos);
  } else {
    EXPECT_NE(bf16.find("widened to f32"), std::string::npos);
    EXPECT_TRUE(vectorKernel(bf16));
    EXPECT_EQ(bf16.find("ref"), std::string::npos);
  }
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

struct ConvCase {
  int64_t n = 2, c = 4, h = 7, w = 6, k = 6, r = 3, s = 2;
  int64_t sh = 1, sw = 1, pt = 0, pl = 0, pb = 0, pr = 0, dh = 1, dw = 1, g = 1;
  int64_t oh() const { return (h + pt + pb - dh * (r - 1) - 1) / sh + 1; }
  int64_t ow() const { return (w + pl + pr - dw * (s - 1) - 1) / sw + 1; }
};

/// Calls f(n, k, oh, ow, ci, rr, ss, xIndex, wIndex) for every product term of
/// the convolution whose input element is inside the image.
template <typename F> void forEachTerm(const ConvCase &cc, F f) {
  int64_t cpg = cc.c / cc.g, kpg = cc.k / cc.g;
  for (int64_t n = 0; n < cc.n; ++n)
    for (int64_t k = 0; k < cc.k; ++k)
      for (int64_t oh = 0; oh < cc.oh(); ++oh)
        for (int64_t ow = 0; ow < cc.ow(); ++ow)
          for (int64_t ci = 0; ci < cpg; ++ci)
            for (int64_t rr = 0; rr < cc.r; ++rr)
              for (int64_t ss = 0; ss < cc.s; ++ss) {
                int64_t ih = oh * cc.sh - cc.pt + rr * cc.dh;
                int64_t iw = ow * cc.sw - cc.pl + ss * cc.dw;
                if (ih < 0 || ih >= cc.h || iw < 0 || iw >= cc.w)
                  continue;
                int64_t c = (k / kpg) * cpg + ci;
                int64_t x = ((n * cc.c + c) * cc.h + ih) * cc.w + iw;
                int64_t wi = ((k * cpg + ci) * cc.r + rr) * cc.s + ss;
                int64_t y = ((n * cc.k + k) * cc.oh() + oh) * cc.ow() + ow;
                f(x, wi, y);
              }
}

Conv2d &addConv(OpProgram &p, const ConvCase &cc, Conv2d::Mode mode, int32_t x, int32_t w,
                int32_t bias, int32_t y) {
  Conv2d &conv = p.builder.conv("conv");
  conv.set_mode(mode);
  conv.set_n(cc.n);
  conv.set_c(cc.c);
  conv.set_h(cc.h);
  conv.set_w(cc.w);
  conv.set_k(cc.k);
  conv.set_r(cc.r);
  conv.set_s(cc.s);
  conv.set_oh(cc.oh());
  conv.set_ow(cc.ow());
  conv.set_stride_h(cc.sh);
  conv.set_stride_w(cc.sw);
  conv.set_pad_t(cc.pt);
  conv.set_pad_l(cc.pl);
  conv.set_pad_b(cc.pb);
  conv.set_pad_r(cc.pr);
  conv.set_dil_h(cc.dh);
  conv.set_dil_w(cc.dw);
  conv.set_groups(cc.g);
  conv.set_x(x);
  conv.set_weight(w);
  if (bias >= 0)
    conv.set_bias(bias);
  conv.set_y(y);
  return conv;
}

void checkConv(const ConvCase &cc) {
  size_t xs = size_t(cc.n * cc.c * cc.h * cc.w),
         ws = size_t(cc.k * (cc.c / cc.g) * cc.r * cc.s),
         ys = size_t(cc.n * cc.k * cc.oh() * cc.ow());
  std::vector<float> X = randomValues<float>(xs, 11), W = randomValues<float>(ws, 12),
                     Bias = randomValues<float>(size_t(cc.k), 13),
                     DY = randomValues<float>(ys, 14);
  std::vector<float> zeroX(xs), zeroW(ws), zeroB(size_t(cc.k)), zeroY(ys);
  {
    SCOPED_TRACE("forward");
    OpProgram p;
    int32_t x = p.input("x", F32, X), w = p.input("w", F32, W),
            b = p.input("b", F32, Bias);
    int32_t y = p.state("y", F32, zeroY);
    addConv(p, cc, Conv2d::FORWARD, x, w, b, y);
    p.run();
    std::vector<double> want(ys);
    for (size_t i = 0; i < ys; ++i)
      want[i] = Bias[(i / size_t(cc.oh() * cc.ow())) % size_t(cc.k)];
    forEachTerm(cc,
                [&](int64_t xi, int64_t wi, int64_t yi) { want[yi] += X[xi] * W[wi]; });
    expectNear(p.read<float>(y), std::vector<float>(want.begin(), want.end()), 1e-4, "y");
  }
  {
    SCOPED_TRACE("backward data");
    OpProgram p;
    int32_t dy = p.input("dy", F32, DY), w = p.input("w", F32, W);
    int32_t dx = p.state("dx", F32, zeroX);
    addConv(p, cc, Conv2d::BACKWARD_DATA, dx, w, -1, dy);
    p.run();
    std::vector<double> want(xs);
    forEachTerm(cc,
                [&](int64_t xi, int64_t wi, int64_t yi) { want[xi] += DY[yi] * W[wi]; });
    expectNear(p.read<float>(dx), std::vector<float>(want.begin(), want.end()), 1e-4,
               "dx");
  }
  {
    SCOPED_TRACE("backward weights");
    OpProgram p;
    int32_t x = p.input("x", F32, X), dy = p.input("dy", F32, DY);
    int32_t dw = p.state("dw", F32, zeroW), db = p.state("db", F32, zeroB);
    addConv(p, cc, Conv2d::BACKWARD_WEIGHTS, x, dw, db, dy);
    p.run();
    std::vector<double> wantW(ws), wantB(size_t(cc.k));
    forEachTerm(cc,
                [&](int64_t xi, int64_t wi, int64_t yi) { wantW[wi] += DY[yi] * X[xi]; });
    for (size_t i = 0; i < ys; ++i)
      wantB[(i / size_t(cc.oh() * cc.ow())) % size_t(cc.k)] += DY[i];
    expectNear(p.read<float>(dw), std::vector<float>(wantW.begin(), wantW.end()), 1e-4,
               "dw");
    expectNear(p.read<float>(db), std::vector<float>(wantB.begin(), wantB.end()), 1e-4,
               "db");
  }
}

TEST(RuntimeConv, Plain) { checkConv(ConvCase{}); }

TEST(RuntimeConv, StridesAndAsymmetricPadding) {
  ConvCase cc;
  cc.sh = 2;
  cc.sw = 3;
  cc.pt = 1;
  cc.pl = 0;
  cc.pb = 2;
  cc.pr = 1;
  checkConv(cc);
}

TEST(RuntimeConv, DilationAndGroups) {
  ConvCase cc;
  cc.h = 9;
  cc.w = 8;
  cc.dh = 2;
  cc.dw = 3;
  cc.pt = cc.pb = 1;
  cc.g = 2;
  checkConv(cc);
}

TEST(RuntimeConv, ManyChannels) {
  // Enough channels that oneDNN computes in a blocked layout, so the operands
  // are reordered in and out.
  ConvCase cc;
  cc.c = 16;
  cc.k = 32;
  cc.h = cc.w = 6;
  cc.r = cc.s = 3;
  cc.pt = cc.pl = cc.pb = cc.pr = 1;
  checkConv(cc);
}

TEST(RuntimeConv, Depthwise) {
  ConvCase cc;
  cc.c = cc.k = cc.g = 4;
  cc.r = cc.s = 3;
  cc.pt = cc.pl = cc.pb = cc.pr = 1;
  checkConv(cc);
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

struct PoolCase {
  int64_t n = 2, c = 3, h = 7, w = 6, r = 3, s = 2;
  int64_t sh = 2, sw = 2, pt = 1, pl = 1, pb = 1, pr = 0, dh = 1, dw = 1;
  bool includePad = false;
  int64_t oh() const { return (h + pt + pb - dh * (r - 1) - 1) / sh + 1; }
  int64_t ow() const { return (w + pl + pr - dw * (s - 1) - 1) / sw + 1; }
};

Pool2d &addPool(OpProgram &p, const PoolCase &pc, Pool2d::Mode mode) {
  Pool2d &pool = p.builder.pool("pool");
  pool.set_mode(mode);
  pool.set_n(pc.n);
  pool.set_c(pc.c);
  pool.set_h(pc.h);
  pool.set_w(pc.w);
  pool.set_r(pc.r);
  pool.set_s(pc.s);
  pool.set_oh(pc.oh());
  pool.set_ow(pc.ow());
  pool.set_stride_h(pc.sh);
  pool.set_stride_w(pc.sw);
  pool.set_pad_t(pc.pt);
  pool.set_pad_l(pc.pl);
  pool.set_pad_b(pc.pb);
  pool.set_pad_r(pc.pr);
  pool.set_dil_h(pc.dh);
  pool.set_dil_w(pc.dw);
  pool.set_count_include_pad(pc.includePad);
  return pool;
}

/// Calls f(outIndex, inIndices) per output position: the window's in-image
/// elements in row-major order.
template <typename F> void forEachWindow(const PoolCase &pc, F f) {
  for (int64_t plane = 0; plane < pc.n * pc.c; ++plane)
    for (int64_t oh = 0; oh < pc.oh(); ++oh)
      for (int64_t ow = 0; ow < pc.ow(); ++ow) {
        std::vector<int64_t> in;
        for (int64_t rr = 0; rr < pc.r; ++rr)
          for (int64_t ss = 0; ss < pc.s; ++ss) {
            int64_t ih = oh * pc.sh - pc.pt + rr * pc.dh,
                    iw = ow * pc.sw - pc.pl + ss * pc.dw;
            if (ih >= 0 && ih < pc.h && iw >= 0 && iw < pc.w)
              in.push_back((plane * pc.h + ih) * pc.w + iw);
          }
        f((plane * pc.oh() + oh) * pc.ow() + ow, in);
      }
}

void checkMaxPool(const PoolCase &pc, const std::vector<float> &X) {
  size_t xs = X.size(), ys = size_t(pc.n * pc.c * pc.oh() * pc.ow());
  std::vector<float> DY = randomValues<float>(ys, 21);
  std::vector<float> wantY(ys), wantDX(xs);
  forEachWindow(pc, [&](int64_t o, const std::vector<int64_t> &in) {
    int64_t best = in[0];
    for (int64_t i : in)
      if (X[i] > X[best]) // strict: the first maximum wins
        best = i;
    wantY[o] = X[best];
    wantDX[best] += DY[o];
  });
  {
    OpProgram p;
    int32_t x = p.input("x", F32, X), y = p.state("y", F32, std::vector<float>(ys));
    Pool2d &pool = addPool(p, pc, Pool2d::MAX_FORWARD);
    pool.set_x(x);
    pool.set_y(y);
    p.run();
    expectNear(p.read<float>(y), wantY, 0, "max forward");
  }
  {
    OpProgram p;
    int32_t x = p.input("x", F32, X), dy = p.input("dy", F32, DY);
    int32_t dx = p.state("dx", F32, std::vector<float>(xs, 5.0f)); // overwritten
    Pool2d &pool = addPool(p, pc, Pool2d::MAX_BACKWARD);
    pool.set_x(x);
    pool.set_dy(dy);
    pool.set_dx(dx);
    p.run();
    expectNear(p.read<float>(dx), wantDX, 1e-6, "max backward");
  }
}

TEST(RuntimePool, MaxForwardAndBackward) {
  PoolCase pc;
  checkMaxPool(pc, randomValues<float>(size_t(pc.n * pc.c * pc.h * pc.w), 20));
}

TEST(RuntimePool, MaxBackwardRoutesTiesToTheFirstMaximum) {
  PoolCase pc;
  pc.r = pc.s = 3;
  pc.sh = pc.sw = 1; // overlapping windows share elements
  // Few distinct values: most windows hold several maxima.
  std::vector<float> X = randomValues<float>(size_t(pc.n * pc.c * pc.h * pc.w), 22);
  for (float &v : X)
    v = std::round(v);
  checkMaxPool(pc, X);
}

TEST(RuntimePool, MaxWithDilation) {
  PoolCase pc;
  pc.h = pc.w = 9;
  pc.dh = 2;
  pc.dw = 3;
  pc.sh = 1;
  pc.pt = pc.pb = pc.pl = pc.pr = 1;
  checkMaxPool(pc, randomValues<float>(size_t(pc.n * pc.c * pc.h * pc.w), 23));
}

void checkAvgPool(const PoolCase &pc) {
  size_t xs = size_t(pc.n * pc.c * pc.h * pc.w),
         ys = size_t(pc.n * pc.c * pc.oh() * pc.ow());
  std::vector<float> X = randomValues<float>(xs, 30), DY = randomValues<float>(ys, 31);
  std::vector<double> wantY(ys), wantDX(xs);
  forEachWindow(pc, [&](int64_t o, const std::vector<int64_t> &in) {
    double divisor = pc.includePad ? double(pc.r * pc.s) : double(in.size());
    for (int64_t i : in) {
      wantY[o] += X[i] / divisor;
      wantDX[i] += DY[o] / divisor;
    }
  });
  {
    OpProgram p;
    int32_t x = p.input("x", F32, X), y = p.state("y", F32, std::vector<float>(ys));
    Pool2d &pool = addPool(p, pc, Pool2d::AVG_FORWARD);
    pool.set_x(x);
    pool.set_y(y);
    p.run();
    expectNear(p.read<float>(y), std::vector<float>(wantY.begin(), wantY.end()), 1e-5,
               "avg forward");
  }
  {
    OpProgram p;
    int32_t dy = p.input("dy", F32, DY),
            dx = p.state("dx", F32, std::vector<float>(xs, 7));
    Pool2d &pool = addPool(p, pc, Pool2d::AVG_BACKWARD);
    pool.set_dy(dy);
    pool.set_dx(dx);
    p.run();
    expectNear(p.read<float>(dx), std::vector<float>(wantDX.begin(), wantDX.end()), 1e-5,
               "avg backward");
  }
}

TEST(RuntimePool, AverageExcludingPadding) { checkAvgPool(PoolCase{}); }

TEST(RuntimePool, AverageIncludingPadding) {
  PoolCase pc;
  pc.includePad = true;
  checkAvgPool(pc);
}

//===----------------------------------------------------------------------===//
// PyTorch cross-check
//===----------------------------------------------------------------------===//

/// Runs `script` with the project's Python: 0 if it succeeded, 77 if Python
/// or torch is missing, else its exit status.
int runPython(const std::string &script, const std::string &dir) {
  std::string path = dir + "/check.py";
  std::ofstream(path) << "import sys\ntry:\n    import numpy as np, torch\n"
                         "except ImportError:\n    sys.exit(77)\n"
                      << script;
  std::string cmd = std::string(COLO_TEST_PYTHON) + " " + path;
  int status = std::system(cmd.c_str());
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) == 127)
    return 77; // no Python
  return WEXITSTATUS(status);
}

TEST(RuntimePool, MaxBackwardMatchesPyTorch) {
  PoolCase pc;
  pc.r = pc.s = 3;
  pc.sh = 1;
  pc.sw = 2;
  pc.pt = pc.pl = pc.pb = pc.pr = 1;
  pc.dw = 2;
  pc.w = 9;
  size_t xs = size_t(pc.n * pc.c * pc.h * pc.w),
         ys = size_t(pc.n * pc.c * pc.oh() * pc.ow());
  std::vector<float> X = randomValues<float>(xs, 40), DY = randomValues<float>(ys, 41);
  for (float &v : X)
    v = std::round(v * 1.5f); // many ties
  TempDir dir;
  std::ofstream(dir.path + "/x.bin", std::ios::binary)
      .write(reinterpret_cast<const char *>(X.data()), std::streamsize(xs * 4));
  std::ofstream(dir.path + "/dy.bin", std::ios::binary)
      .write(reinterpret_cast<const char *>(DY.data()), std::streamsize(ys * 4));
  std::string script =
      "d = sys.argv[0].rsplit('/', 1)[0]\n"
      "x = torch.tensor(np.fromfile(d + '/x.bin', np.float32).reshape(" +
      std::to_string(pc.n) + ", " + std::to_string(pc.c) + ", " + std::to_string(pc.h) +
      ", " + std::to_string(pc.w) +
      "), requires_grad=True)\n"
      "y = torch.nn.functional.max_pool2d(x, (3, 3), stride=(1, 2), padding=1, "
      "dilation=(1, 2))\n"
      "y.backward(torch.tensor(np.fromfile(d + '/dy.bin', "
      "np.float32)).reshape(y.shape))\n"
      "x.grad.numpy().tofile(d + '/dx.bin')\n";
  int status = runPython(script, dir.path);
  if (status == 77)
    GTEST_SKIP() << "Python with torch is not available";
  ASSERT_EQ(status, 0) << "the PyTorch script failed";
  std::string bytes = readFile(dir.path + "/dx.bin");
  ASSERT_EQ(bytes.size(), xs * 4);
  std::vector<float> torchDX(xs);
  std::memcpy(torchDX.data(), bytes.data(), bytes.size());

  OpProgram p;
  int32_t x = p.input("x", F32, X), dy = p.input("dy", F32, DY);
  int32_t dx = p.state("dx", F32, std::vector<float>(xs));
  Pool2d &pool = addPool(p, pc, Pool2d::MAX_BACKWARD);
  pool.set_x(x);
  pool.set_dy(dy);
  pool.set_dx(dx);
  p.run();
  expectNear(p.read<float>(dx), torchDX, 1e-6, "max backward vs torch");
}

} // namespace
