//===- CpuOps.cpp - Library calls behind Gemm, Conv2d and Pool2d ----------===//

#include "colo/Runtime/CpuOps.h"
#include "colo/Runtime/Error.h"
#include "OneDnn.h"

#include <cblas.h>
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <unordered_map>
#include <vector>

namespace colo::runtime {

//===----------------------------------------------------------------------===//
// Geometry
//===----------------------------------------------------------------------===//

namespace {
/// (outer - 1) * outerStride + (batch - 1) * stride + (rows - 1) * ld + cols,
/// saturated to int64.
int64_t span(int64_t outer, int64_t outerStride, int64_t batch, int64_t stride,
             int64_t rows, int64_t ld, int64_t cols) {
  if (outer <= 0 || batch <= 0 || rows <= 0 || cols <= 0)
    return 0;
  __int128 v = __int128(outer - 1) * outerStride + __int128(batch - 1) * stride +
               __int128(rows - 1) * ld + cols;
  return v > std::numeric_limits<int64_t>::max() ? std::numeric_limits<int64_t>::max()
                                                 : int64_t(v);
}
int64_t orOne(int64_t v) { return v == 0 ? 1 : v; }
} // namespace

int64_t GemmGeometry::elementsA() const {
  return span(batchOuter, outerStrideA, batch, strideA, transA ? k : m, lda, transA ? m : k);
}
int64_t GemmGeometry::elementsB() const {
  return span(batchOuter, outerStrideB, batch, strideB, transB ? n : k, ldb, transB ? k : n);
}
int64_t GemmGeometry::elementsC() const {
  return span(batchOuter, outerStrideC, batch, strideC, m, ldc, n);
}

GemmGeometry geometryOf(const Gemm &g) {
  GemmGeometry r;
  r.transA = g.trans_a();
  r.transB = g.trans_b();
  r.m = g.m();
  r.n = g.n();
  r.k = g.k();
  r.batch = orOne(g.batch());
  r.lda = g.lda() ? g.lda() : (r.transA ? r.m : r.k);
  r.ldb = g.ldb() ? g.ldb() : (r.transB ? r.k : r.n);
  r.ldc = g.ldc() ? g.ldc() : r.n;
  r.strideA = g.stride_a();
  r.strideB = g.stride_b();
  r.strideC = g.stride_c();
  r.batchOuter = orOne(g.batch_outer());
  r.outerStrideA = g.outer_stride_a();
  r.outerStrideB = g.outer_stride_b();
  r.outerStrideC = g.outer_stride_c();
  r.alpha = g.has_alpha() ? g.alpha() : 1.0;
  r.beta = g.has_beta() ? g.beta() : 0.0;
  return r;
}

std::string checkEpilogue(const GemmGeometry &g, DType dtype) {
  if (dtype != F32 || g.alpha != 1 || g.beta != 0 || g.batch * g.batchOuter != 1)
    return "a gemm epilogue (bias, residual) needs f32 operands, alpha 1, beta 0 and one "
           "product";
  return "";
}

std::string checkGeometry(const GemmGeometry &g) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  auto str = [](int64_t v) { return std::to_string(v); };
  if (g.m < 1 || g.n < 1 || g.k < 1)
    return "m, n and k must be positive (m " + str(g.m) + ", n " + str(g.n) + ", k " +
           str(g.k) + ")";
  if (g.batch < 1 || g.batchOuter < 1)
    return "batch " + str(g.batch) + " or batch_outer " + str(g.batchOuter) +
           " is negative";
  if (g.m > kMax || g.n > kMax || g.k > kMax || g.lda > kMax || g.ldb > kMax ||
      g.ldc > kMax)
    return "a dimension exceeds BLAS's 32-bit limit";
  int64_t colsA = g.transA ? g.m : g.k, colsB = g.transB ? g.k : g.n;
  if (g.lda < colsA)
    return "lda " + str(g.lda) + " is less than the stored row length " + str(colsA);
  if (g.ldb < colsB)
    return "ldb " + str(g.ldb) + " is less than the stored row length " + str(colsB);
  if (g.ldc < g.n)
    return "ldc " + str(g.ldc) + " is less than n " + str(g.n);
  if (g.strideA < 0 || g.strideB < 0 || g.strideC < 0 || g.outerStrideA < 0 ||
      g.outerStrideB < 0 || g.outerStrideC < 0)
    return "batch strides must not be negative";
  if (g.batch > 1 && g.strideC > 0 && g.strideC < span(1, 0, 1, 0, g.m, g.ldc, g.n))
    return "stride_c " + str(g.strideC) + " makes the batch's C matrices overlap";
  if (g.batchOuter > 1 && g.outerStrideC > 0 &&
      g.outerStrideC < span(1, 0, g.batch, g.strideC, g.m, g.ldc, g.n))
    return "outer_stride_c " + str(g.outerStrideC) +
           " makes the outer batch's C matrices overlap";
  return "";
}

namespace {
/// The fields Conv2d and Pool2d share.
template <typename Op> WindowGeometry windowOf(const Op &op) {
  WindowGeometry g;
  g.n = op.n();
  g.c = op.c();
  g.h = op.h();
  g.w = op.w();
  g.r = op.r();
  g.s = op.s();
  g.oh = op.oh();
  g.ow = op.ow();
  g.strideH = orOne(op.stride_h());
  g.strideW = orOne(op.stride_w());
  g.padT = op.pad_t();
  g.padL = op.pad_l();
  g.padB = op.pad_b();
  g.padR = op.pad_r();
  g.dilH = orOne(op.dil_h());
  g.dilW = orOne(op.dil_w());
  return g;
}
} // namespace

WindowGeometry geometryOf(const Conv2d &conv) {
  WindowGeometry g = windowOf(conv);
  g.k = conv.k();
  g.groups = orOne(conv.groups());
  return g;
}

WindowGeometry geometryOf(const Pool2d &pool) {
  WindowGeometry g = windowOf(pool);
  g.k = pool.c();
  g.groups = 1;
  return g;
}

std::string checkGeometry(const WindowGeometry &g, bool isConv) {
  auto str = [](int64_t v) { return std::to_string(v); };
  constexpr int64_t kMax = int64_t(1) << 31;
  for (int64_t v : {g.n, g.c, g.h, g.w, g.k, g.r, g.s, g.oh, g.ow})
    if (v < 1 || v > kMax)
      return "n, c, h, w, " + std::string(isConv ? "k, " : "") +
             "r, s, oh and ow must be positive (n " + str(g.n) + ", c " + str(g.c) +
             ", h " + str(g.h) + ", w " + str(g.w) + (isConv ? ", k " + str(g.k) : "") +
             ", r " + str(g.r) + ", s " + str(g.s) + ", oh " + str(g.oh) + ", ow " +
             str(g.ow) + ")";
  for (int64_t v : {g.strideH, g.strideW, g.dilH, g.dilW, g.groups})
    if (v < 1 || v > kMax)
      return "strides, dilations and groups must be positive";
  for (int64_t v : {g.padT, g.padL, g.padB, g.padR})
    if (v < 0 || v > kMax)
      return "padding must not be negative";
  if (isConv && (g.c % g.groups || g.k % g.groups))
    return "groups " + str(g.groups) + " does not divide c " + str(g.c) + " and k " +
           str(g.k);
  int64_t effR = g.dilH * (g.r - 1) + 1, effS = g.dilW * (g.s - 1) + 1;
  int64_t paddedH = g.h + g.padT + g.padB, paddedW = g.w + g.padL + g.padR;
  if (effR > paddedH || effS > paddedW)
    return "the window (" + str(effR) + " x " + str(effS) +
           " with dilation) is larger than the padded input (" + str(paddedH) + " x " +
           str(paddedW) + ")";
  int64_t oh = (paddedH - effR) / g.strideH + 1, ow = (paddedW - effS) / g.strideW + 1;
  if (oh != g.oh || ow != g.ow)
    return "the output is " + str(g.oh) + " x " + str(g.ow) + " but the geometry gives " +
           str(oh) + " x " + str(ow);
  if (!isConv && (g.padT >= effR || g.padB >= effR || g.padL >= effS || g.padR >= effS))
    return "padding must be smaller than the window, so that no window is all padding";
  return "";
}

//===----------------------------------------------------------------------===//
// Gemm
//===----------------------------------------------------------------------===//

namespace {
/// The threads of BLAS, oneDNN and parallelFor (setThreads).
int gThreads = 1;
} // namespace

//===----------------------------------------------------------------------===//
// oneDNN
//===----------------------------------------------------------------------===//

namespace {
using dnnl::memory;
using Args = std::unordered_map<int, memory>;

PreparedOp runner(dnnl::primitive primitive, Args args) {
  return [primitive = std::move(primitive), args = std::move(args)] {
    primitive.execute(cpuStream(), args);
    cpuStream().wait();
  };
}

memory::dims dims2(int64_t a, int64_t b) { return {a, b}; }
} // namespace

namespace {
/// One operand of a oneDNN primitive: the session's plain buffer, and whether
/// the primitive writes it.
struct Operand {
  int arg;
  memory::desc plain;
  void *data;
  bool output;
};

/// Runs `primitive` on the session's plain buffers. Where the primitive
/// chose another layout (blocked formats make convolutions several times
/// faster), the operand goes through `scratch`, reordered in before the call
/// (inputs) or out after it (outputs).
PreparedOp runWithReorders(dnnl::primitive primitive, const dnnl::primitive_desc_base &pd,
                           const std::vector<Operand> &operands,
                           std::shared_ptr<Scratch> scratch) {
  dnnl::engine &eng = cpuEngine();
  Args args;
  std::vector<std::pair<dnnl::reorder, Args>> before, after;
  std::vector<std::pair<memory, int64_t>> internal; // memory, offset in scratch
  int64_t bytes = 0;
  for (const Operand &op : operands) {
    memory user(op.plain, eng, op.data);
    memory::desc want = pd.query_md(dnnl::query::exec_arg_md, op.arg);
    if (want == op.plain) {
      args[op.arg] = user;
      continue;
    }
    memory copy(want, eng, DNNL_MEMORY_NONE);
    internal.emplace_back(copy, bytes);
    bytes += (int64_t(want.get_size()) + 63) / 64 * 64;
    args[op.arg] = copy;
    if (op.output)
      after.emplace_back(dnnl::reorder(copy, user),
                         Args{{DNNL_ARG_FROM, copy}, {DNNL_ARG_TO, user}});
    else
      before.emplace_back(dnnl::reorder(user, copy),
                          Args{{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, copy}});
  }
  scratch->reserve(bytes);
  return [primitive = std::move(primitive), args = std::move(args),
          before = std::move(before), after = std::move(after),
          internal = std::move(internal), scratch = std::move(scratch)]() mutable {
    char *base = scratch->base();
    for (auto &[m, offset] : internal)
      m.set_data_handle(base + offset);
    dnnl::stream &stream = cpuStream();
    for (const auto &[r, a] : before)
      r.execute(stream, a);
    primitive.execute(stream, args);
    for (const auto &[r, a] : after)
      r.execute(stream, a);
    stream.wait();
  };
}
} // namespace

void *allocateBuffer(int64_t bytes) {
  constexpr int64_t kHugePage = 2 << 20;
  int64_t align = bytes >= kHugePage ? kHugePage : 64;
  size_t size = size_t((std::max<int64_t>(bytes, 1) + align - 1) / align * align);
  void *p = std::aligned_alloc(size_t(align), size);
  // Advice only: where the kernel has no huge pages, the buffer is as before.
  if (p && align == kHugePage)
    ::madvise(p, size, MADV_HUGEPAGE);
  return p;
}

Scratch::~Scratch() {
  if (owned_)
    std::free(data_);
}

void Scratch::provide(char *data, int64_t bytes) {
  if (owned_)
    std::free(data_);
  data_ = data, have_ = bytes, owned_ = false;
}

char *Scratch::base() {
  if (have_ < need_) {
    if (owned_)
      std::free(data_);
    owned_ = true;
    data_ = static_cast<char *>(allocateBuffer(need_));
    if (!data_)
      throw Error("out of memory: cannot allocate " + std::to_string(need_) +
                  " bytes of scratch for convolutions");
    have_ = need_;
  }
  return data_;
}

PreparedOp prepareConv(const Conv2d &conv, float *x, float *weight, float *bias, float *y,
                       std::shared_ptr<Scratch> scratch) {
  WindowGeometry g = geometryOf(conv);
  try {
    using tag = memory::format_tag;
    auto f32 = memory::data_type::f32;
    dnnl::engine &eng = cpuEngine();
    memory::dims srcDims{g.n, g.c, g.h, g.w}, dstDims{g.n, g.k, g.oh, g.ow};
    memory::dims weiDims =
        g.groups == 1 ? memory::dims{g.k, g.c, g.r, g.s}
                      : memory::dims{g.groups, g.k / g.groups, g.c / g.groups, g.r, g.s};
    memory::desc src(srcDims, f32, tag::nchw), dst(dstDims, f32, tag::nchw);
    memory::desc wei(weiDims, f32, g.groups == 1 ? tag::oihw : tag::goihw);
    memory::desc bia({g.k}, f32, tag::x);
    // The primitive picks its layouts; runWithReorders converts.
    memory::desc srcAny(srcDims, f32, tag::any), dstAny(dstDims, f32, tag::any);
    memory::desc weiAny(weiDims, f32, tag::any);
    memory::dims strides = dims2(g.strideH, g.strideW);
    memory::dims dil = dims2(g.dilH - 1, g.dilW - 1); // oneDNN: 0 = none
    memory::dims padL = dims2(g.padT, g.padL), padR = dims2(g.padB, g.padR);
    auto algo = dnnl::algorithm::convolution_direct;
    bool withBias = bias != nullptr && conv.mode() != Conv2d::BACKWARD_DATA;
    auto fwdDesc =
        withBias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                                   algo, srcAny, weiAny, bia, dstAny,
                                                   strides, dil, padL, padR)
                 : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                                   algo, srcAny, weiAny, dstAny, strides,
                                                   dil, padL, padR);
    dnnl::convolution_forward::primitive_desc fwd(fwdDesc, eng);
    switch (conv.mode()) {
    case Conv2d::FORWARD: {
      std::vector<Operand> ops = {{DNNL_ARG_SRC, src, x, false},
                                  {DNNL_ARG_WEIGHTS, wei, weight, false},
                                  {DNNL_ARG_DST, dst, y, true}};
      if (withBias)
        ops.push_back({DNNL_ARG_BIAS, bia, bias, false});
      return runWithReorders(dnnl::convolution_forward(fwd), fwd, ops, scratch);
    }
    case Conv2d::BACKWARD_DATA: {
      dnnl::convolution_backward_data::desc d(algo, srcAny, weiAny, dstAny, strides, dil,
                                              padL, padR);
      dnnl::convolution_backward_data::primitive_desc pd(d, eng, fwd);
      return runWithReorders(dnnl::convolution_backward_data(pd), pd,
                             {{DNNL_ARG_DIFF_DST, dst, y, false},
                              {DNNL_ARG_WEIGHTS, wei, weight, false},
                              {DNNL_ARG_DIFF_SRC, src, x, true}},
                             scratch);
    }
    case Conv2d::BACKWARD_WEIGHTS: {
      auto d = withBias ? dnnl::convolution_backward_weights::desc(
                              algo, srcAny, weiAny, bia, dstAny, strides, dil, padL, padR)
                        : dnnl::convolution_backward_weights::desc(
                              algo, srcAny, weiAny, dstAny, strides, dil, padL, padR);
      dnnl::convolution_backward_weights::primitive_desc pd(d, eng, fwd);
      std::vector<Operand> ops = {{DNNL_ARG_SRC, src, x, false},
                                  {DNNL_ARG_DIFF_DST, dst, y, false},
                                  {DNNL_ARG_DIFF_WEIGHTS, wei, weight, true}};
      if (withBias)
        ops.push_back({DNNL_ARG_DIFF_BIAS, bia, bias, true});
      return runWithReorders(dnnl::convolution_backward_weights(pd), pd, ops, scratch);
    }
    default:
      throw Error("unknown convolution mode " + std::to_string(conv.mode()));
    }
  } catch (const dnnl::error &e) {
    throw Error(std::string("oneDNN cannot build this convolution: ") + e.what());
  }
}

void maxPoolBackward(const WindowGeometry &g, const float *x, const float *dy,
                     float *dx) {
  int64_t planes = g.n * g.c, inPlane = g.h * g.w, outPlane = g.oh * g.ow;
#pragma omp parallel for
  for (int64_t p = 0; p < planes; ++p) {
    const float *in = x + p * inPlane;
    const float *gradOut = dy + p * outPlane;
    float *gradIn = dx + p * inPlane;
    for (int64_t i = 0; i < inPlane; ++i)
      gradIn[i] = 0;
    for (int64_t oh = 0; oh < g.oh; ++oh) {
      // The window's rows, as PyTorch's CPU kernel walks them.
      int64_t ih0 = oh * g.strideH - g.padT;
      int64_t ih1 = std::min(ih0 + (g.r - 1) * g.dilH + 1, g.h);
      while (ih0 < 0)
        ih0 += g.dilH;
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        int64_t iw0 = ow * g.strideW - g.padL;
        int64_t iw1 = std::min(iw0 + (g.s - 1) * g.dilW + 1, g.w);
        while (iw0 < 0)
          iw0 += g.dilW;
        int64_t best = ih0 * g.w + iw0;
        float bestValue = -std::numeric_limits<float>::infinity();
        for (int64_t ih = ih0; ih < ih1; ih += g.dilH)
          for (int64_t iw = iw0; iw < iw1; iw += g.dilW) {
            float v = in[ih * g.w + iw];
            if (v > bestValue || std::isnan(v)) {
              bestValue = v;
              best = ih * g.w + iw;
            }
          }
        gradIn[best] += gradOut[oh * g.ow + ow];
      }
    }
  }
}

PreparedOp preparePool(const Pool2d &pool, float *x, float *y, float *dx, float *dy) {
  WindowGeometry g = geometryOf(pool);
  if (pool.mode() == Pool2d::MAX_BACKWARD)
    return [=] { maxPoolBackward(g, x, dy, dx); };
  try {
    using tag = memory::format_tag;
    auto f32 = memory::data_type::f32;
    dnnl::engine &eng = cpuEngine();
    memory::desc src({g.n, g.c, g.h, g.w}, f32, tag::nchw);
    memory::desc dst({g.n, g.c, g.oh, g.ow}, f32, tag::nchw);
    memory::dims strides = dims2(g.strideH, g.strideW), kernel = dims2(g.r, g.s);
    memory::dims dil = dims2(g.dilH - 1, g.dilW - 1);
    memory::dims padL = dims2(g.padT, g.padL), padR = dims2(g.padB, g.padR);
    auto algo = pool.mode() == Pool2d::MAX_FORWARD ? dnnl::algorithm::pooling_max
                : pool.count_include_pad() ? dnnl::algorithm::pooling_avg_include_padding
                                           : dnnl::algorithm::pooling_avg_exclude_padding;
    switch (pool.mode()) {
    case Pool2d::MAX_FORWARD:
    case Pool2d::AVG_FORWARD: {
      dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, algo, src, dst,
                                       strides, kernel, dil, padL, padR);
      dnnl::pooling_v2_forward::primitive_desc pd(d, eng);
      return runner(dnnl::pooling_v2_forward(pd), {{DNNL_ARG_SRC, memory(src, eng, x)},
                                                   {DNNL_ARG_DST, memory(dst, eng, y)}});
    }
    case Pool2d::AVG_BACKWARD: {
      dnnl::pooling_v2_forward::desc fd(dnnl::prop_kind::forward_training, algo, src, dst,
                                        strides, kernel, dil, padL, padR);
      dnnl::pooling_v2_forward::primitive_desc fwd(fd, eng);
      dnnl::pooling_v2_backward::desc d(algo, src, dst, strides, kernel, dil, padL, padR);
      dnnl::pooling_v2_backward::primitive_desc pd(d, eng, fwd);
      return runner(dnnl::pooling_v2_backward(pd),
                    {{DNNL_ARG_DIFF_DST, memory(dst, eng, dy)},
                     {DNNL_ARG_DIFF_SRC, memory(src, eng, dx)}});
    }
    default:
      throw Error("unknown pooling mode " + std::to_string(pool.mode()));
    }
  } catch (const dnnl::error &e) {
    throw Error(std::string("oneDNN cannot build this pooling: ") + e.what());
  }
}

int threadCount() { return gThreads; }

void setThreads(int n) {
  if (n <= 0) {
    gThreads = openblas_get_num_threads();
    return;
  }
  gThreads = n;
  openblas_set_num_threads(n);
  omp_set_num_threads(n);
}

ScopedThreads::ScopedThreads(int n)
    : run_(gThreads), blas_(openblas_get_num_threads()), omp_(omp_get_max_threads()) {
  setThreads(n);
}

ScopedThreads::~ScopedThreads() {
  gThreads = run_;
  openblas_set_num_threads(blas_);
  omp_set_num_threads(omp_);
}

} // namespace colo::runtime
