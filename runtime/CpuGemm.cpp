//===- CpuGemm.cpp - Gemm steps through oneDNN's matmul or OpenBLAS -------===//

#include "colo/Runtime/CpuGemm.h"
#include "colo/Runtime/Error.h"
#include "Workers.h"
#include "OneDnn.h"

#include <cblas.h>
#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace colo::runtime {

GemmLibrary parseGemmLibrary(const std::string &name) {
  if (name == "onednn")
    return GemmLibrary::OneDnn;
  if (name == "openblas")
    return GemmLibrary::OpenBlas;
  throw Error("unknown GEMM library '" + name + "' (onednn, openblas)");
}

std::string openBlasCore() { return openblas_get_corename(); }

bool openBlasIsGeneric() {
  // OpenBLAS 0.3.21's kernels with AVX2 or wider vectors; on a processor that
  // has AVX2 any other choice is its fallback for a model it does not know.
  static const char *wide[] = {"Haswell", "Zen", "SkylakeX", "Cooperlake",
                               "SapphireRapids"};
  if (!__builtin_cpu_supports("avx2"))
    return false;
  std::string core = openBlasCore();
  return std::none_of(std::begin(wide), std::end(wide),
                      [&](const char *w) { return core == w; });
}

std::string oneDnnIsa() {
  switch (dnnl::get_effective_cpu_isa()) {
  case dnnl::cpu_isa::sse41:
    return "sse41";
  case dnnl::cpu_isa::avx:
    return "avx";
  case dnnl::cpu_isa::avx2:
    return "avx2";
  case dnnl::cpu_isa::avx2_vnni:
    return "avx2_vnni";
  case dnnl::cpu_isa::avx512_core:
    return "avx512_core";
  case dnnl::cpu_isa::avx512_core_vnni:
    return "avx512_core_vnni";
  case dnnl::cpu_isa::avx512_core_bf16:
    return "avx512_core_bf16";
  case dnnl::cpu_isa::avx512_core_amx:
    return "avx512_core_amx";
  default:
    return "other";
  }
}

namespace {
std::string openBlasPath() {
  // openblas_get_config: "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Prescott ...".
  std::string config = openblas_get_config();
  std::string version = config.substr(0, config.find(' ', std::strlen("OpenBLAS ")));
  return version + " " + openBlasCore() + (openBlasIsGeneric() ? " (generic kernels)" : "");
}

std::string oneDnnPath(const char *impl) {
  const dnnl_version_t *v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch) + " matmul " + impl;
}

//===----------------------------------------------------------------------===//
// OpenBLAS
//===----------------------------------------------------------------------===//

/// Runs `gemm(A, B, C, beta)` for every product of `g`'s batch. A level
/// whose C stride is 0 sums its products into one C: every product after
/// the first into a C adds to it. Products into distinct Cs (attention's
/// heads) run side by side, one BLAS thread each: a BLAS threading each small
/// product spends more on waking its threads than on the product. Each
/// product is then the single-threaded BLAS call: the results are those of
/// one thread (OpenBLAS's threads can round a product differently).
template <typename T, typename Gemm>
void forEachProduct(const GemmGeometry &g, const T *A, const T *B, T *C, Gemm gemm) {
  int64_t products = g.batchOuter * g.batch;
  auto run = [&](int64_t p) {
    int64_t o = p / g.batch, i = p % g.batch;
    bool again = (g.strideC == 0 && i > 0) || (g.outerStrideC == 0 && o > 0);
    gemm(A + o * g.outerStrideA + i * g.strideA, B + o * g.outerStrideB + i * g.strideB,
         C + o * g.outerStrideC + i * g.strideC, again ? 1.0 : g.beta);
  };
  bool sums = (g.strideC == 0 && g.batch > 1) || (g.outerStrideC == 0 && g.batchOuter > 1);
  int threads = static_cast<int>(std::min<int64_t>(threadCount(), products));
  if (sums || threads < 2) {
    for (int64_t p = 0; p < products; ++p)
      run(p);
    return;
  }
  openblas_set_num_threads(1);
  parallelFor(threads, products, run);
  openblas_set_num_threads(threadCount());
}

CBLAS_TRANSPOSE cblasTrans(bool t) { return t ? CblasTrans : CblasNoTrans; }

void sgemmBatch(const GemmGeometry &g, const float *A, const float *B, float *C) {
  forEachProduct(g, A, B, C, [&](const float *a, const float *b, float *c, double beta) {
    cblas_sgemm(CblasRowMajor, cblasTrans(g.transA), cblasTrans(g.transB), int(g.m),
                int(g.n), int(g.k), float(g.alpha), a, int(g.lda), b, int(g.ldb),
                float(beta), c, int(g.ldc));
  });
}

void dgemmBatch(const GemmGeometry &g, const double *A, const double *B, double *C) {
  forEachProduct(g, A, B, C, [&](const double *a, const double *b, double *c, double beta) {
    cblas_dgemm(CblasRowMajor, cblasTrans(g.transA), cblasTrans(g.transB), int(g.m),
                int(g.n), int(g.k), g.alpha, a, int(g.lda), b, int(g.ldb), beta, c,
                int(g.ldc));
  });
}

//===----------------------------------------------------------------------===//
// oneDNN
//===----------------------------------------------------------------------===//

using dnnl::memory;

/// One batch level of a Gemm: its size and the three operands' strides.
struct Level {
  int64_t size, a, b, c;
};

/// A Gemm as oneDNN matmuls: the batch levels that one primitive covers
/// (their products write distinct Cs and at most one of A and B is
/// broadcast, which oneDNN expresses as a dimension of 1), and the levels
/// that are looped around it (a level whose products sum into one C, or
/// broadcasts both operands; or every level, where oneDNN has no BRGEMM
/// kernel for the batch's strides).
struct MatmulPlan {
  std::vector<Level> inside, looped;
};

MatmulPlan planOf(const GemmGeometry &g, bool loopAll = false) {
  MatmulPlan plan;
  for (Level l : {Level{g.batchOuter, g.outerStrideA, g.outerStrideB, g.outerStrideC},
                  Level{g.batch, g.strideA, g.strideB, g.strideC}}) {
    if (l.size == 1)
      continue;
    bool inside = !loopAll && l.c != 0 && (l.a != 0 || l.b != 0);
    (inside ? plan.inside : plan.looped).push_back(l);
  }
  return plan;
}

/// The memory descriptor of one operand: the `inside` batch levels, then a
/// rows x cols matrix stored with leading dimension `ld` (transposed: rows
/// are `ld` apart in the other direction). A broadcast level is a dimension
/// of 1, whose stride oneDNN never steps but still checks: any positive one.
memory::desc operandDesc(const std::vector<Level> &inside, int64_t Level::*stride,
                         int64_t rows, int64_t cols, int64_t ld, bool trans,
                         memory::data_type dt) {
  memory::dims dims, strides;
  for (const Level &l : inside) {
    dims.push_back(l.*stride == 0 ? 1 : l.size);
    strides.push_back(l.*stride == 0 ? rows * cols : l.*stride);
  }
  dims.insert(dims.end(), {rows, cols});
  if (trans)
    strides.insert(strides.end(), {1, ld});
  else
    strides.insert(strides.end(), {ld, 1});
  return memory::desc(dims, dt, strides);
}

memory::data_type dnnlType(DType dtype) {
  return dtype == BF16  ? memory::data_type::bf16
         : dtype == F16 ? memory::data_type::f16
                        : memory::data_type::f32;
}

bool isBrgemm(const dnnl::matmul::primitive_desc &pd) {
  return std::strncmp(pd.impl_info_str(), "brg", 3) == 0;
}

/// The matmul primitive for `g`'s inside levels on `dtype` operands,
/// alpha AB into C, or with `intoFloat` into a packed float buffer of C's
/// dimensions (the products that are added to C). Its scratchpad is the
/// session's shared scratch, like the convolutions'.
dnnl::matmul::primitive_desc matmulDesc(const GemmGeometry &g, const MatmulPlan &plan,
                                        DType dtype, bool intoFloat = false,
                                        bool withBias = false, bool withResidual = false) {
  auto dt = dnnlType(dtype);
  memory::desc A = operandDesc(plan.inside, &Level::a, g.m, g.k, g.lda, g.transA, dt);
  memory::desc B = operandDesc(plan.inside, &Level::b, g.k, g.n, g.ldb, g.transB, dt);
  memory::desc C = operandDesc(plan.inside, &Level::c, g.m, g.n, g.ldc, false, dt);
  if (intoFloat) {
    memory::dims dims = C.dims(), strides(dims.size());
    memory::dim stride = 1;
    for (size_t d = dims.size(); d-- > 0; stride *= dims[d])
      strides[d] = stride;
    C = memory::desc(dims, memory::data_type::f32, strides);
  }
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (g.alpha != 1.0)
    attr.set_output_scales(0, {float(g.alpha)});
  // A residual is a binary post-op: a tensor laid out like C, added in float.
  if (withResidual) {
    dnnl::post_ops ops;
    ops.append_binary(dnnl::algorithm::binary_add, C);
    attr.set_post_ops(ops);
  }
  // A bias is a row of C's last dimension (one product: C is 2-D).
  dnnl::matmul::desc desc =
      withBias ? dnnl::matmul::desc(A, B,
                                    memory::desc({1, g.n}, memory::data_type::f32,
                                                 memory::format_tag::ab),
                                    C)
               : dnnl::matmul::desc(A, B, C);
  dnnl::matmul::primitive_desc pd(desc, attr, cpuEngine());
  // oneDNN's BRGEMM kernels where they take these strides: its older
  // gemm-based ones (preferred for some strides) round differently with
  // different thread counts.
  dnnl::matmul::primitive_desc first = pd;
  do {
    if (isBrgemm(pd))
      return pd;
  } while (pd.next_impl());
  return first;
}

/// Whether oneDNN has a kernel for these operands on this processor, not
/// only its reference loops (nor nothing at all: oneDNN 2.6 has no f16
/// matmul on CPUs).
bool hasKernel(const GemmGeometry &g, const MatmulPlan &plan, DType dtype) {
  try {
    return !std::strstr(matmulDesc(g, plan, dtype).impl_info_str(), "ref");
  } catch (const dnnl::error &) {
    return false;
  }
}

/// A matmul of fixed geometry called on operands given at each call.
using Matmul = std::function<void(const void *a, const void *b, void *c)>;

/// Adds the packed float products `p` to C (a strided `dtype` buffer):
/// C = p + beta C, rounded once, in the same order on every thread count.
void addProducts(const GemmGeometry &g, const MatmulPlan &plan, DType dtype, double beta,
                 const float *p, void *c) {
  int64_t outer = 1, inner = 1, outerC = 0, innerC = 0;
  if (plan.inside.size() == 2) {
    outer = plan.inside[0].size, outerC = plan.inside[0].c;
    inner = plan.inside[1].size, innerC = plan.inside[1].c;
  } else if (plan.inside.size() == 1) {
    inner = plan.inside[0].size, innerC = plan.inside[0].c;
  }
  auto add = [&](auto *C, auto load, auto store) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        for (int64_t r = 0; r < g.m; ++r) {
          auto *row = C + o * outerC + i * innerC + r * g.ldc;
          for (int64_t col = 0; col < g.n; ++col, ++p)
            row[col] = store(*p + float(beta) * load(row[col]));
        }
  };
  if (dtype == F32)
    add(static_cast<float *>(c), [](float v) { return v; }, [](float v) { return v; });
  else if (dtype == BF16)
    add(static_cast<uint16_t *>(c), bf16ToFloat, floatToBf16);
  else
    add(static_cast<uint16_t *>(c), halfToFloat, floatToHalf);
}

/// A matmul of fixed geometry called on operands given at each call.
using Matmul = std::function<void(const void *a, const void *b, void *c)>;

/// One primitive per combination of the looped levels, the operands moved
/// by their strides. A product that adds to C (beta != 0, or the second and
/// later products of a summed level) goes into a packed float buffer that
/// addProducts adds to C: oneDNN's own accumulation (its sum post-op) picks
/// kernels whose rounding depends on the thread count. The scratchpad, then
/// that buffer, lie at `scratchOffset` in `scratch`, reserved here.
Matmul prepareMatmul(const GemmGeometry &g, const MatmulPlan &plan, DType dtype,
                     std::shared_ptr<Scratch> scratch, int64_t scratchOffset,
                     std::string *path, GemmEpilogue epilogue = {}) {
  dnnl::matmul::primitive_desc direct =
      matmulDesc(g, plan, dtype, /*intoFloat=*/false, /*withBias=*/epilogue.bias != nullptr,
                 /*withResidual=*/epilogue.residual != nullptr);
  dnnl::matmul::primitive_desc added = matmulDesc(g, plan, dtype, /*intoFloat=*/true);
  int64_t pad = int64_t(std::max(direct.scratchpad_desc().get_size(),
                                 added.scratchpad_desc().get_size()));
  pad = (pad + 63) / 64 * 64;
  scratch->reserve(scratchOffset + pad + int64_t(added.dst_desc().get_size()));
  *path = oneDnnPath(direct.impl_info_str());
  struct Call {
    bool again;
    int64_t a, b, c; // byte offsets
  };
  int64_t size = dtypeSize(dtype);
  std::vector<Call> calls{{false, 0, 0, 0}};
  for (const Level &l : plan.looped) {
    std::vector<Call> next;
    for (const Call &call : calls)
      for (int64_t i = 0; i < l.size; ++i)
        next.push_back({call.again || (l.c == 0 && i > 0), call.a + i * l.a * size,
                        call.b + i * l.b * size, call.c + i * l.c * size});
    calls = std::move(next);
  }
  dnnl::engine &eng = cpuEngine();
  struct Prepared {
    Call call;
    double beta; // what C is multiplied by as the product is added; 0: written
    dnnl::matmul primitive;
    memory src, weights, dst, scratchpad;
    // The memories above (and the epilogue's), whose handles each call sets.
    std::unordered_map<int, memory> args;
  };
  std::vector<Prepared> prepared;
  for (const Call &call : calls) {
    double beta = call.again ? 1.0 : g.beta;
    const dnnl::matmul::primitive_desc &pd = beta == 0 ? direct : added;
    Prepared &p = prepared.emplace_back(Prepared{
        call, beta, dnnl::matmul(pd), memory(pd.src_desc(), eng, DNNL_MEMORY_NONE),
        memory(pd.weights_desc(), eng, DNNL_MEMORY_NONE),
        memory(pd.dst_desc(), eng, DNNL_MEMORY_NONE),
        memory(pd.scratchpad_desc(), eng, DNNL_MEMORY_NONE), {}});
    p.args = {{DNNL_ARG_SRC, p.src},
              {DNNL_ARG_WEIGHTS, p.weights},
              {DNNL_ARG_DST, p.dst},
              {DNNL_ARG_SCRATCHPAD, p.scratchpad}};
    if (epilogue.bias)
      p.args.emplace(DNNL_ARG_BIAS,
                     memory(pd.bias_desc(), eng, const_cast<float *>(epilogue.bias)));
    if (epilogue.residual)
      p.args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                     memory(pd.dst_desc(), eng, const_cast<float *>(epilogue.residual)));
  }
  return [=, prepared = std::move(prepared)](const void *a, const void *b,
                                             void *c) mutable {
    auto at = [](const void *p, int64_t offset) {
      return static_cast<char *>(const_cast<void *>(p)) + offset;
    };
    dnnl::stream &stream = cpuStream();
    char *base = scratch->base() + scratchOffset;
    float *products = reinterpret_cast<float *>(base + pad);
    for (Prepared &p : prepared) {
      p.src.set_data_handle(at(a, p.call.a));
      p.weights.set_data_handle(at(b, p.call.b));
      p.dst.set_data_handle(p.beta == 0 ? at(c, p.call.c) : static_cast<void *>(products));
      p.scratchpad.set_data_handle(base);
      p.primitive.execute(stream, p.args);
      stream.wait();
      if (p.beta != 0)
        addProducts(g, plan, dtype, p.beta, products, at(c, p.call.c));
    }
  };
}

/// A 16-bit GEMM through a float one: the operands widened into float
/// copies at the start of `scratch`, `product(A, B, C)` on them, the result
/// rounded once. Products of 16-bit values are exact in float, so only the
/// order of the sums can differ from a 16-bit kernel's. The caller reserves
/// the copies' bytes (widenedBytes) and any the product needs after them.
PreparedOp widened(const GemmGeometry &g, DType dtype, const void *a, const void *b,
                   void *c, const std::shared_ptr<Scratch> &scratch,
                   std::function<void(float *, float *, float *)> product) {
  int64_t nA = g.elementsA(), nB = g.elementsB(), nC = g.elementsC();
  bool bf16 = dtype == BF16;
  return [=] {
    float *A = reinterpret_cast<float *>(scratch->base()), *B = A + nA, *C = B + nB;
    // Element by element, so the threads that share them change no bits.
    auto widen = [&](const void *src, float *dst, int64_t n) {
      auto *h = static_cast<const uint16_t *>(src);
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < n; ++i)
        dst[i] = bf16 ? bf16ToFloat(h[i]) : halfToFloat(h[i]);
    };
    widen(a, A, nA);
    widen(b, B, nB);
    if (g.beta != 0)
      widen(c, C, nC);
    product(A, B, C);
    auto *out = static_cast<uint16_t *>(c);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nC; ++i)
      out[i] = bf16 ? floatToBf16(C[i]) : floatToHalf(C[i]);
  };
}

/// Bytes of the float copies of `widened`, rounded to 64.
int64_t widenedBytes(const GemmGeometry &g) {
  return ((g.elementsA() + g.elementsB() + g.elementsC()) * int64_t(sizeof(float)) + 63) /
         64 * 64;
}

/// Whether 16-bit products run on oneDNN's 16-bit kernels rather than its
/// float ones on widened operands: only where the processor has AMX tiles.
/// AVX512-BF16's dot-product instruction does the work of the two float FMAs
/// a core issues per cycle, no more, and oneDNN 2.6's bf16 BRGEMM kernels on
/// it measured half the rate of its float ones (70 against 127 GF/s on one
/// core of a Xeon 6/207 for 1024x1024x256; bench/gemm_bench.sh), more than
/// the cost of widening the operands.
bool sixteenBitKernelsFaster() {
  return dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core_amx;
}

PreparedGemm prepareOneDnn(const GemmGeometry &g, DType dtype, const void *a, const void *b,
                           void *c, GemmEpilogue epilogue,
                           const std::shared_ptr<Scratch> &scratch) {
  MatmulPlan plan = planOf(g);
  if (!plan.inside.empty() && !isBrgemm(matmulDesc(g, plan, F32)))
    plan = planOf(g, /*loopAll=*/true);
  PreparedGemm result;
  if (dtype == F32 || (sixteenBitKernelsFaster() && hasKernel(g, plan, dtype))) {
    Matmul matmul = prepareMatmul(g, plan, dtype, scratch, 0, &result.path, epilogue);
    result.run = [=] { matmul(a, b, c); };
    return result;
  }
  // No 16-bit kernel for this processor: the float matmul on widened copies.
  int64_t copies = widenedBytes(g);
  scratch->reserve(copies);
  Matmul matmul = prepareMatmul(g, plan, F32, scratch, copies, &result.path);
  result.path += std::string(" (") + dtypeName(dtype) + " widened to f32)";
  result.run = widened(g, dtype, a, b, c, scratch,
                       [=](float *A, float *B, float *C) { matmul(A, B, C); });
  return result;
}
} // namespace

PreparedGemm prepareGemm(const Gemm &gemm, DType dtype, const void *a, const void *b,
                         void *c, GemmEpilogue epilogue, std::shared_ptr<Scratch> scratch,
                         GemmLibrary library) {
  GemmGeometry g = geometryOf(gemm);
  if (std::string why = epilogue ? checkEpilogue(g, dtype) : ""; !why.empty())
    throw Error(why);
  if (dtype == F64)
    return {[=] {
              dgemmBatch(g, static_cast<const double *>(a), static_cast<const double *>(b),
                         static_cast<double *>(c));
            },
            openBlasPath()};
  if (dtype != F32 && dtype != BF16 && dtype != F16)
    throw Error(std::string("gemm on ") + dtypeName(dtype) +
                " is not supported (f32, f64, bf16, f16)");
  if (library == GemmLibrary::OneDnn) {
    try {
      return prepareOneDnn(g, dtype, a, b, c, epilogue, scratch);
    } catch (const dnnl::error &e) {
      throw Error(std::string("oneDNN cannot build this matmul: ") + e.what());
    }
  }
  if (dtype != F32) {
    scratch->reserve(widenedBytes(g));
    return {widened(g, dtype, a, b, c, scratch,
                    [g](float *A, float *B, float *C) { sgemmBatch(g, A, B, C); }),
            openBlasPath() + " (" + dtypeName(dtype) + " widened to f32)"};
  }
  return {[=] {
            auto *C = static_cast<float *>(c);
            sgemmBatch(g, static_cast<const float *>(a), static_cast<const float *>(b), C);
            for (int64_t r = 0; epilogue && r < g.m; ++r)
              for (int64_t col = 0; col < g.n; ++col) {
                float &x = C[r * g.ldc + col];
                if (epilogue.bias)
                  x += epilogue.bias[col];
                if (epilogue.residual)
                  x += epilogue.residual[r * g.ldc + col];
              }
          },
          openBlasPath()};
}

} // namespace colo::runtime
