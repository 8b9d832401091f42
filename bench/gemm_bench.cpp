// Single-threaded GEMM throughput on the products of the benchmark GPT-2
// (bench/train_bench.py), the layers' weight products and attention's
// per-head ones: OpenBLAS's sgemm against oneDNN's matmul primitive, which
// colo run uses (runtime/CpuGemm.cpp), in f32 and in bf16 (bf16 operands,
// float accumulation). Prints OpenBLAS's kernel family and the kernel
// oneDNN chose. Built and run by gemm_bench.sh.
#include <cblas.h>
#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace {
struct Shape {
  const char *what;
  int m, n, k;
  bool transA, transB;
};

/// GFLOP/s of `product`, the best of three timed rounds of ~0.5 GFLOP.
template <typename F> double gflops(const Shape &s, F product) {
  double flop = 2.0 * s.m * s.n * s.k;
  int reps = std::max(3, int(5e8 / flop));
  product();
  double best = 1e30;
  for (int round = 0; round < 3; ++round) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i)
      product();
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count() / reps);
  }
  return flop / best / 1e9;
}
} // namespace

int main() {
  const Shape shapes[] = {
      {"attn q.k^T", 128, 128, 32, false, true},  {"attn p.v", 128, 32, 128, false, false},
      {"attn dp", 128, 128, 32, false, true},     {"attn dv", 128, 32, 128, true, false},
      {"attn dq", 128, 32, 128, false, false},    {"qkv", 1024, 768, 256, false, false},
      {"mlp fc", 1024, 1024, 256, false, false}, {"mlp fc dW", 256, 1024, 1024, true, false},
      {"lm head", 1024, 8192, 256, false, true},  {"lm head dW", 8192, 256, 1024, true, false},
  };
  std::printf("OpenBLAS kernels: %s\n", openblas_get_corename());
  std::printf("%-12s %5s %5s %5s %10s %10s %7s %10s  %s\n", "product", "m", "n", "k",
              "OpenBLAS", "oneDNN", "ratio", "bf16", "oneDNN kernels (f32, bf16)");
  using dnnl::memory;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  for (const Shape &s : shapes) {
    std::vector<float> a(size_t(s.m) * s.k, 0.5f), b(size_t(s.k) * s.n, 0.25f),
        c(size_t(s.m) * s.n);
    int lda = s.transA ? s.m : s.k, ldb = s.transB ? s.k : s.n;
    double blas = gflops(s, [&] {
      cblas_sgemm(CblasRowMajor, s.transA ? CblasTrans : CblasNoTrans,
                  s.transB ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.f, a.data(), lda,
                  b.data(), ldb, 0.f, c.data(), s.n);
    });
    // The matmul as colo run builds it: row-major operands, transposes as
    // strides.
    auto matmul = [&](memory::data_type dt, std::string *kernel) {
      memory::desc A({s.m, s.k}, dt, s.transA ? memory::dims{1, s.m} : memory::dims{s.k, 1});
      memory::desc B({s.k, s.n}, dt, s.transB ? memory::dims{1, s.k} : memory::dims{s.n, 1});
      memory::desc C({s.m, s.n}, dt, memory::dims{s.n, 1});
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(A, B, C), engine);
      *kernel = pd.impl_info_str();
      dnnl::matmul product(pd);
      // The float buffers are large enough for either dtype.
      memory ma(A, engine, a.data()), mb(B, engine, b.data()), mc(C, engine, c.data());
      return gflops(s, [&] {
        product.execute(stream, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
        stream.wait();
      });
    };
    std::string f32Kernel, bf16Kernel;
    double dnnl = matmul(memory::data_type::f32, &f32Kernel);
    double bf16 = matmul(memory::data_type::bf16, &bf16Kernel);
    std::printf("%-12s %5d %5d %5d %7.1f GF %7.1f GF %6.2fx %7.1f GF  %s, %s\n", s.what, s.m,
                s.n, s.k, blas, dnnl, dnnl / blas, bf16, f32Kernel.c_str(), bf16Kernel.c_str());
  }
}
