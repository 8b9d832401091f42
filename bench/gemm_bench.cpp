// Single-threaded float GEMM throughput of OpenBLAS and oneDNN on the
// products of the benchmark GPT-2 (bench/train_bench.py): the layers' weight
// products and attention's per-head ones, which the runtime runs side by
// side, one single-threaded OpenBLAS call each. Built and run by
// gemm_bench.sh.
#include <cblas.h>
#include <dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
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
  std::printf("%-12s %5s %5s %5s %10s %10s %7s\n", "product", "m", "n", "k", "OpenBLAS",
              "oneDNN", "ratio");
  for (const Shape &s : shapes) {
    std::vector<float> a(size_t(s.m) * s.k, 0.5f), b(size_t(s.k) * s.n, 0.25f),
        c(size_t(s.m) * s.n);
    int lda = s.transA ? s.m : s.k, ldb = s.transB ? s.k : s.n;
    double blas = gflops(s, [&] {
      cblas_sgemm(CblasRowMajor, s.transA ? CblasTrans : CblasNoTrans,
                  s.transB ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.f, a.data(), lda,
                  b.data(), ldb, 0.f, c.data(), s.n);
    });
    double dnnl = gflops(s, [&] {
      dnnl_sgemm(s.transA ? 'T' : 'N', s.transB ? 'T' : 'N', s.m, s.n, s.k, 1.f, a.data(), lda,
                 b.data(), ldb, 0.f, c.data(), s.n);
    });
    std::printf("%-12s %5d %5d %5d %7.1f GF %7.1f GF %6.2fx\n", s.what, s.m, s.n, s.k, blas,
                dnnl, dnnl / blas);
  }
}
