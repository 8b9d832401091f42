//===- Interpreter.cpp - Reference evaluation of colo modules -------------===//
//
// Every value is a HostArray of doubles. Ops are evaluated one after another
// in the order of the function's body; shapes come from the (verified) IR
// types. Index arithmetic goes through precomputed row-major strides, so every
// op is linear in its element count (times the rank), apart from the
// contractions. The training-only ops are in InterpreterTrainOps.cpp.
//
//===----------------------------------------------------------------------===//
#include "colo/Interpreter/Interpreter.h"

#include "Evaluator.h"

#include "colo/Dialect/Colo/ColoDialect.h"
#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace mlir;

namespace colo {
namespace interp {

int64_t numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string formatShape(ArrayRef<int64_t> shape) {
  std::string s;
  for (int64_t d : shape)
    s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

Shape stridesOf(ArrayRef<int64_t> shape) {
  Shape s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

Shape shapeOf(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return Shape(t.getShape().begin(), t.getShape().end());
}

/// For every element of a row-major tensor of shape `out`, the offset
/// `start + sum(idx[d] * step[d])` into another tensor's data: broadcasting,
/// transposes and slices are all such strided views.
std::vector<int64_t> stridedOffsets(ArrayRef<int64_t> out, ArrayRef<int64_t> step,
                                    int64_t start) {
  int64_t rank = out.size(), n = numElements(out), off = start;
  std::vector<int64_t> result(n);
  Shape idx(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    result[i] = off;
    // Odometer increment, adjusting the offset as dimensions wrap.
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++idx[d] < out[d]) {
        off += step[d];
        break;
      }
      off -= step[d] * (out[d] - 1);
      idx[d] = 0;
    }
  }
  return result;
}

/// For every element of `out` (row-major), the index of the element of a
/// tensor of shape `in` that NumPy broadcasting reads (`in` is aligned to the
/// trailing dimensions of `out`; its dimensions are 1 or equal).
std::vector<int64_t> broadcastIndex(ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  size_t rank = out.size(), lead = rank - in.size();
  Shape inStrides = stridesOf(in);
  // The stride each output dimension moves the input by (0 where broadcast).
  Shape step(rank, 0);
  for (size_t d = lead; d < rank; ++d)
    step[d] = in[d - lead] == 1 ? 0 : inStrides[d - lead];
  return stridedOffsets(out, step);
}

/// The elements of `x` at `offsets`.
std::vector<double> gatherAt(const HostArray &x, ArrayRef<int64_t> offsets) {
  std::vector<double> r(offsets.size());
  for (size_t i = 0; i < offsets.size(); ++i)
    r[i] = x.data[offsets[i]];
  return r;
}

double roundTo(double x, Type type) {
  if (auto ft = dyn_cast<FloatType>(type)) {
    llvm::APFloat f(x);
    bool lost = false;
    f.convert(ft.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &lost);
    return f.convertToDouble();
  }
  if (auto it = dyn_cast<IntegerType>(type)) {
    if (it.getWidth() == 1)
      return x != 0.0 ? 1.0 : 0.0;
    if (std::isnan(x))
      return 0.0;
    double t = std::trunc(x);
    if (it.getWidth() >= 64)
      return t;
    // Wrap to the width, as a two's-complement cast does.
    llvm::APInt v(64, static_cast<uint64_t>(static_cast<int64_t>(t)), true);
    llvm::APInt w = v.trunc(it.getWidth());
    return it.isUnsigned() ? static_cast<double>(w.getZExtValue())
                           : static_cast<double>(w.getSExtValue());
  }
  return x;
}

namespace {

/// Decodes `n` little-endian elements of `elt` from raw bytes.
FailureOr<std::vector<double>> decode(Operation *op, ArrayRef<char> bytes, Type elt,
                                      int64_t n, bool splatAllowed) {
  unsigned bits = elt.getIntOrFloatBitWidth();
  size_t width = bits == 1 ? 1 : bits / 8;
  if (bits != 1 && bits % 8 != 0)
    return op->emitError() << "cannot decode elements of type " << elt;
  bool splat = splatAllowed && bytes.size() == width && n != 1;
  if (!splat && bytes.size() != static_cast<size_t>(n) * width)
    return op->emitError() << "data holds " << bytes.size() << " bytes, " << n
                           << " elements of " << elt << " need " << n * width;
  std::vector<double> out(n);
  auto ft = dyn_cast<FloatType>(elt);
  auto it = dyn_cast<IntegerType>(elt);
  if (!ft && !it)
    return op->emitError() << "cannot decode elements of type " << elt;
  for (int64_t i = 0; i < n; ++i) {
    const char *p = bytes.data() + (splat ? 0 : i * width);
    uint64_t raw = 0;
    std::memcpy(&raw, p, width); // little-endian host assumed
    if (ft) {
      llvm::APFloat f(ft.getFloatSemantics(), llvm::APInt(bits, raw));
      out[i] = ft.isF64() ? f.convertToDouble() : [&] {
        bool lost = false;
        f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lost);
        return f.convertToDouble();
      }();
    } else if (bits == 1) {
      out[i] = (raw & 0xff) ? 1.0 : 0.0;
    } else {
      llvm::APInt v(bits, raw);
      out[i] = it.isUnsigned() ? static_cast<double>(v.getZExtValue())
                               : static_cast<double>(v.getSExtValue());
    }
  }
  return out;
}

FailureOr<HostArray> fromElements(Operation *op, Attribute attr, RankedTensorType type) {
  HostArray a;
  a.shape.assign(type.getShape().begin(), type.getShape().end());
  int64_t n = numElements(a.shape);
  Type elt = type.getElementType();
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    a.data.reserve(n);
    if (isa<FloatType>(elt)) {
      for (llvm::APFloat f : dense.getValues<llvm::APFloat>()) {
        bool lost = false;
        f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lost);
        a.data.push_back(f.convertToDouble());
      }
    } else if (auto it = dyn_cast<IntegerType>(elt)) {
      for (const llvm::APInt &v : dense.getValues<llvm::APInt>())
        a.data.push_back(it.getWidth() == 1 || it.isUnsigned()
                             ? static_cast<double>(v.getZExtValue())
                             : static_cast<double>(v.getSExtValue()));
    } else {
      return op->emitError() << "cannot read elements of type " << elt;
    }
    if (static_cast<int64_t>(a.data.size()) != n)
      return op->emitError() << "data has " << a.data.size() << " elements, " << type
                             << " needs " << n;
    return a;
  }
  if (auto res = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob)
      return op->emitError() << "the data of resource '" << res.getRawHandle().getKey()
                             << "' is missing (elided?)";
    FailureOr<std::vector<double>> data = decode(op, blob->getData(), elt, n, true);
    if (failed(data))
      return failure();
    a.data = std::move(*data);
    return a;
  }
  return op->emitError() << "unsupported elements attribute " << attr;
}

FailureOr<HostArray> readGlobal(GlobalOp global) {
  RankedTensorType type = global.getTensorType();
  Attribute init = global.getInitialValueAttr();
  Operation *op = global;
  if (!init)
    return op->emitError() << "global '" << global.getSymName()
                           << "' has no value to evaluate with";
  if (auto ext = dyn_cast<ExternalDataAttr>(init)) {
    auto buf = llvm::MemoryBuffer::getFileSlice(ext.getPath(), ext.getLength(),
                                                ext.getOffset(), false);
    if (!buf)
      return op->emitError() << "cannot read " << ext.getLength() << " bytes at "
                             << ext.getOffset() << " of '" << ext.getPath()
                             << "': " << buf.getError().message();
    HostArray a;
    a.shape.assign(type.getShape().begin(), type.getShape().end());
    ArrayRef<char> bytes((*buf)->getBufferStart(), (*buf)->getBufferSize());
    FailureOr<std::vector<double>> data =
        decode(op, bytes, type.getElementType(), numElements(a.shape), false);
    if (failed(data))
      return failure();
    a.data = std::move(*data);
    return a;
  }
  if (auto spec = dyn_cast<InitializerAttr>(init)) {
    HostArray a;
    a.shape.assign(type.getShape().begin(), type.getShape().end());
    int64_t n = numElements(a.shape);
    double pa = spec.getA().getValueAsDouble(), pb = spec.getB().getValueAsDouble();
    StringRef dist = spec.getDistribution();
    std::mt19937_64 gen(colo::initializerSeed(global));
    auto uniform01 = [&] { return (gen() >> 11) * 0x1.0p-53; };
    a.data.resize(n);
    if (dist == "zeros" || dist == "ones") {
      std::fill(a.data.begin(), a.data.end(), dist == "ones" ? 1.0 : 0.0);
    } else if (dist == "uniform") {
      for (double &x : a.data)
        x = pa + (pb - pa) * uniform01();
    } else if (dist == "normal") {
      for (double &x : a.data) { // Box-Muller
        double u1 = 1.0 - uniform01(), u2 = uniform01();
        x = pa + pb * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
      }
    } else {
      return op->emitError() << "unknown initializer distribution '" << dist << "'";
    }
    for (double &x : a.data)
      x = roundTo(x, type.getElementType());
    return a;
  }
  return fromElements(op, init, type);
}

double gelu(double x, GeluApproximation approx) {
  if (approx == GeluApproximation::tanh)
    return 0.5 * x *
           (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

} // namespace

HostArray Evaluator::unary(Operation *op, function_ref<double(double)> f) {
  HostArray r = get(op->getOperand(0));
  for (double &x : r.data)
    x = f(x);
  return r;
}

HostArray Evaluator::binary(Operation *op, function_ref<double(double, double)> f) {
  const HostArray &a = get(op->getOperand(0)), &b = get(op->getOperand(1));
  HostArray r;
  r.shape = shapeOf(op->getResult(0));
  std::vector<int64_t> ia = broadcastIndex(a.shape, r.shape),
                       ib = broadcastIndex(b.shape, r.shape);
  r.data.resize(ia.size());
  for (size_t i = 0; i < ia.size(); ++i)
    r.data[i] = f(a.data[ia[i]], b.data[ib[i]]);
  return r;
}

LogicalResult Evaluator::evalMatmul(MatmulOp op) {
  const HostArray &a = get(op.getLhs()), &b = get(op.getRhs());
  Shape out = shapeOf(op.getResult());
  size_t ra = a.shape.size(), rb = b.shape.size(), ro = out.size();
  int64_t m = a.shape[ra - 2], k = a.shape[ra - 1], n = b.shape[rb - 1];
  Shape batchA(a.shape.begin(), a.shape.end() - 2), batchB(b.shape.begin(), b.shape.end() - 2),
      batchO(out.begin(), out.end() - 2);
  std::vector<int64_t> ia = broadcastIndex(batchA, batchO),
                       ib = broadcastIndex(batchB, batchO);
  (void)ro;
  HostArray r;
  r.shape = out;
  r.data.assign(numElements(out), 0.0);
  for (size_t bi = 0; bi < ia.size(); ++bi) {
    const double *pa = a.data.data() + ia[bi] * m * k;
    const double *pb = b.data.data() + ib[bi] * k * n;
    double *po = r.data.data() + bi * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p) {
        double x = pa[i * k + p];
        for (int64_t j = 0; j < n; ++j)
          po[i * n + j] += x * pb[p * n + j];
      }
  }
  set(op.getResult(), std::move(r));
  return success();
}

LogicalResult Evaluator::evalConv(Conv2dOp op) {
  const HostArray &x = get(op.getInput()), &w = get(op.getFilter());
  const HostArray *bias = op.getBias() ? &get(op.getBias()) : nullptr;
  Shape out = shapeOf(op.getResult());
  ArrayRef<int64_t> st = op.getStrides(), pad = op.getPadding(), dil = op.getDilations();
  int64_t groups = static_cast<int64_t>(op.getGroups());
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  int64_t O = w.shape[0], CG = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  int64_t OH = out[2], OW = out[3], OG = O / groups;
  HostArray r;
  r.shape = out;
  r.data.assign(numElements(out), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) {
      int64_t g = o / OG;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = bias ? bias->data[o] : 0.0;
          for (int64_t c = 0; c < CG; ++c) {
            int64_t ic = g * CG + c;
            for (int64_t kh = 0; kh < KH; ++kh) {
              int64_t ih = oh * st[0] - pad[0] + kh * dil[0];
              if (ih < 0 || ih >= H)
                continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t iw = ow * st[1] - pad[1] + kw * dil[1];
                if (iw < 0 || iw >= W)
                  continue;
                acc += x.data[((n * C + ic) * H + ih) * W + iw] *
                       w.data[((o * CG + c) * KH + kh) * KW + kw];
              }
            }
          }
          r.data[((n * O + o) * OH + oh) * OW + ow] = acc;
        }
    }
  set(op.getResult(), std::move(r));
  return success();
}

LogicalResult Evaluator::evalAttention(AttentionOp op) {
  const HostArray &q = get(op.getQuery()), &k = get(op.getKey()), &v = get(op.getValue());
  int64_t B = q.shape[0], H = q.shape[1], S = q.shape[2], D = q.shape[3];
  int64_t HKV = k.shape[1], T = k.shape[2], DV = v.shape[3];
  double scale = op.getScaleAttr().getValueAsDouble();
  bool causal = op.getCausal();
  std::vector<int64_t> maskIdx;
  const HostArray *mask = nullptr;
  if (op.getMask()) {
    mask = &get(op.getMask());
    maskIdx = broadcastIndex(mask->shape, {B, H, S, T});
  }
  HostArray r;
  r.shape = {B, H, S, DV};
  r.data.assign(B * H * S * DV, 0.0);
  std::vector<double> logits(T);
  int64_t group = H / HKV;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      int64_t hk = h / group;
      const double *kb = k.data.data() + (b * HKV + hk) * T * D;
      const double *vb = v.data.data() + (b * HKV + hk) * T * DV;
      for (int64_t s = 0; s < S; ++s) {
        const double *qr = q.data.data() + ((b * H + h) * S + s) * D;
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t t = 0; t < T; ++t) {
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d)
            dot += qr[d] * kb[t * D + d];
          dot *= scale;
          if (mask)
            dot += mask->data[maskIdx[((b * H + h) * S + s) * T + t]];
          // Top-left aligned, as PyTorch's is_causal: query s sees keys <= s.
          if (causal && t > s)
            dot = -std::numeric_limits<double>::infinity();
          logits[t] = dot;
          mx = std::max(mx, dot);
        }
        double sum = 0.0;
        for (int64_t t = 0; t < T; ++t)
          sum += (logits[t] = std::exp(logits[t] - mx));
        double *o = r.data.data() + ((b * H + h) * S + s) * DV;
        for (int64_t t = 0; t < T; ++t) {
          double p = logits[t] / sum;
          for (int64_t d = 0; d < DV; ++d)
            o[d] += p * vb[t * DV + d];
        }
      }
    }
  set(op.getResult(), std::move(r));
  return success();
}

LogicalResult Evaluator::evalSoftmax(Operation *op, int64_t axis, bool log) {
  HostArray r = get(op->getOperand(0));
  int64_t rank = r.shape.size();
  if (axis < 0)
    axis += rank;
  int64_t outer = numElements(ArrayRef<int64_t>(r.shape).take_front(axis));
  int64_t len = r.shape[axis];
  int64_t inner = numElements(ArrayRef<int64_t>(r.shape).drop_front(axis + 1));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double *p = r.data.data() + o * len * inner + i;
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < len; ++j)
        mx = std::max(mx, p[j * inner]);
      double sum = 0.0;
      for (int64_t j = 0; j < len; ++j)
        sum += std::exp(p[j * inner] - mx);
      for (int64_t j = 0; j < len; ++j)
        p[j * inner] = log ? p[j * inner] - mx - std::log(sum)
                           : std::exp(p[j * inner] - mx) / sum;
    }
  set(op->getResult(0), std::move(r));
  return success();
}

LogicalResult Evaluator::evalCumSum(CumSumOp op) {
  HostArray r = get(op.getInput());
  int64_t rank = r.shape.size(), axis = static_cast<int64_t>(op.getAxis());
  if (axis < 0)
    axis += rank;
  int64_t outer = numElements(ArrayRef<int64_t>(r.shape).take_front(axis));
  int64_t len = r.shape[axis];
  int64_t inner = numElements(ArrayRef<int64_t>(r.shape).drop_front(axis + 1));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double *p = r.data.data() + o * len * inner + i, sum = 0.0;
      for (int64_t k = 0; k < len; ++k) {
        double &x = p[(op.getReverse() ? len - 1 - k : k) * inner], v = x;
        x = op.getExclusive() ? sum : sum + v;
        sum += v;
      }
    }
  set(op.getResult(), std::move(r));
  return success();
}

LogicalResult Evaluator::evalNorm(Operation *op, Value input, Value scale, Value bias,
                                  int64_t axis, double eps, bool rms) {
  HostArray r = get(input);
  int64_t rank = r.shape.size();
  if (axis < 0)
    axis += rank;
  int64_t inner = numElements(ArrayRef<int64_t>(r.shape).drop_front(axis));
  int64_t outer = inner ? static_cast<int64_t>(r.data.size()) / inner : 0;
  const HostArray *g = scale ? &get(scale) : nullptr;
  const HostArray *bb = bias ? &get(bias) : nullptr;
  for (int64_t o = 0; o < outer; ++o) {
    double *p = r.data.data() + o * inner;
    double mean = 0.0;
    if (!rms) {
      for (int64_t i = 0; i < inner; ++i)
        mean += p[i];
      mean /= inner;
    }
    double var = 0.0;
    for (int64_t i = 0; i < inner; ++i)
      var += (p[i] - mean) * (p[i] - mean);
    var /= inner;
    double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < inner; ++i) {
      double y = (p[i] - mean) * inv;
      if (g)
        y *= g->data[i];
      if (bb)
        y += bb->data[i];
      p[i] = y;
    }
  }
  set(op->getResult(0), std::move(r));
  return success();
}

LogicalResult Evaluator::evalBatchNorm(BatchNormOp op) {
  if (op.getTraining() && op.getSyncGrid())
    return op.emitOpError("synchronizes its statistics over ranks: the interpreter runs one "
                          "rank (colo-build-train-step expands it into collectives)");
  const HostArray &x = get(op.getInput()), &g = get(op.getScale()),
                  &b = get(op.getBias()), &rm = get(op.getRunningMean()),
                  &rv = get(op.getRunningVar());
  double eps = op.getEpsilonAttr().getValueAsDouble();
  double momentum = op.getMomentumAttr().getValueAsDouble();
  int64_t N = x.shape[0], C = x.shape[1];
  int64_t inner = numElements(ArrayRef<int64_t>(x.shape).drop_front(2));
  int64_t count = N * inner;
  HostArray y = x, newMean = rm, newVar = rv;
  for (int64_t c = 0; c < C; ++c) {
    double mean = rm.data[c], var = rv.data[c];
    if (op.getTraining()) {
      double sum = 0.0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < inner; ++i)
          sum += x.data[(n * C + c) * inner + i];
      mean = sum / count;
      double sq = 0.0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < inner; ++i) {
          double d = x.data[(n * C + c) * inner + i] - mean;
          sq += d * d;
        }
      var = sq / count;
      double unbiased = count > 1 ? sq / (count - 1) : var;
      newMean.data[c] = (1 - momentum) * rm.data[c] + momentum * mean;
      newVar.data[c] = (1 - momentum) * rv.data[c] + momentum * unbiased;
    }
    double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) {
        double &v = y.data[(n * C + c) * inner + i];
        v = (v - mean) * inv * g.data[c] + b.data[c];
      }
  }
  set(op.getResult(), std::move(y));
  set(op.getNewRunningMean(), std::move(newMean));
  set(op.getNewRunningVar(), std::move(newVar));
  return success();
}

/// kind: 0 sum, 1 mean, 2 max.
template <typename OpTy>
LogicalResult Evaluator::evalReduce(OpTy op, int kind) {
  const HostArray &x = get(op.getInput());
  Shape kept = x.shape;
  for (int64_t d : op.getDims())
    kept[d < 0 ? d + kept.size() : d] = 1;
  // Each input element's slot in the reduced array (kept dims of size 1).
  std::vector<int64_t> slot = broadcastIndex(kept, x.shape);
  int64_t n = numElements(kept);
  HostArray r;
  r.shape = shapeOf(op.getResult());
  r.data.assign(n, kind == 2 ? -std::numeric_limits<double>::infinity() : 0.0);
  for (size_t i = 0; i < slot.size(); ++i) {
    double &acc = r.data[slot[i]];
    acc = kind == 2 ? std::max(acc, x.data[i]) : acc + x.data[i];
  }
  if (kind == 1 && n) {
    double count = static_cast<double>(x.data.size()) / n;
    for (double &v : r.data)
      v /= count;
  }
  set(op.getResult(), std::move(r));
  return success();
}

int64_t maxPoolArgmax(int64_t H, int64_t W, int64_t h0, int64_t w0, int64_t KH,
                      int64_t KW, function_ref<double(int64_t)> at) {
  int64_t best = -1;
  double max = -std::numeric_limits<double>::infinity();
  for (int64_t ih = std::max<int64_t>(h0, 0); ih < std::min(h0 + KH, H); ++ih)
    for (int64_t iw = std::max<int64_t>(w0, 0); iw < std::min(w0 + KW, W); ++iw) {
      int64_t i = ih * W + iw;
      double v = at(i);
      // PyTorch's test: a NaN always wins, and -inf windows keep the first.
      if (best < 0 || v > max || std::isnan(v)) {
        best = i;
        max = v;
      }
    }
  return best;
}

template <typename OpTy>
LogicalResult Evaluator::evalPool(OpTy op, bool isMax) {
  const HostArray &x = get(op.getInput());
  ArrayRef<int64_t> k = op.getKernel(), st = op.getStrides(), pad = op.getPadding();
  bool includePad = op.getCountIncludePad();
  Shape out = shapeOf(op.getResult());
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  int64_t OH = out[2], OW = out[3];
  HostArray r;
  r.shape = out;
  r.data.resize(numElements(out));
  for (int64_t nc = 0; nc < N * C; ++nc) {
    const double *plane = x.data.data() + nc * H * W;
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t h0 = oh * st[0] - pad[0], w0 = ow * st[1] - pad[1];
        double &y = r.data[(nc * OH + oh) * OW + ow];
        if (isMax) {
          int64_t i = maxPoolArgmax(H, W, h0, w0, k[0], k[1],
                                    [&](int64_t i) { return plane[i]; });
          y = i < 0 ? -std::numeric_limits<double>::infinity() : plane[i];
          continue;
        }
        double acc = 0.0;
        int64_t valid = 0;
        for (int64_t ih = std::max<int64_t>(h0, 0); ih < std::min(h0 + k[0], H); ++ih)
          for (int64_t iw = std::max<int64_t>(w0, 0); iw < std::min(w0 + k[1], W); ++iw) {
            acc += plane[ih * W + iw];
            ++valid;
          }
        y = acc / (includePad ? static_cast<double>(k[0] * k[1])
                              : static_cast<double>(valid));
      }
  }
  set(op.getResult(), std::move(r));
  return success();
}

LogicalResult Evaluator::evalGather(Operation *op, Value input, Value indices,
                                    int64_t axis) {
  const HostArray &x = get(input), &idx = get(indices);
  if (axis < 0)
    axis += x.shape.size();
  int64_t outer = numElements(ArrayRef<int64_t>(x.shape).take_front(axis));
  int64_t len = x.shape[axis];
  int64_t inner = numElements(ArrayRef<int64_t>(x.shape).drop_front(axis + 1));
  int64_t n = idx.data.size();
  HostArray r;
  r.shape = shapeOf(op->getResult(0));
  r.data.resize(outer * n * inner);
  for (int64_t j = 0; j < n; ++j) {
    int64_t i = static_cast<int64_t>(idx.data[j]);
    if (i < 0)
      i += len;
    if (i < 0 || i >= len)
      return op->emitError() << "index " << static_cast<int64_t>(idx.data[j])
                             << " is out of range for a dimension of size " << len;
    for (int64_t o = 0; o < outer; ++o)
      std::copy_n(x.data.begin() + (o * len + i) * inner, inner,
                  r.data.begin() + (o * n + j) * inner);
  }
  set(op->getResult(0), std::move(r));
  return success();
}

/// Each position's loss (0 where its label is ignored) and the number of
/// positions counted; an error on `op` for a label out of range.
static LogicalResult crossEntropyRows(Operation *op, const HostArray &x,
                                      const HostArray &labels, int64_t ignore, double eps,
                                      std::vector<double> &losses, int64_t &count) {
  int64_t classes = x.shape.back();
  losses.assign(labels.data.size(), 0.0);
  count = 0;
  for (size_t n = 0; n < labels.data.size(); ++n) {
    int64_t label = static_cast<int64_t>(labels.data[n]);
    if (label == ignore)
      continue;
    if (label < 0 || label >= classes)
      return op->emitError() << "label " << label << " is out of range for " << classes
                             << " classes";
    const double *p = x.data.data() + n * classes;
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < classes; ++c)
      mx = std::max(mx, p[c]);
    double sum = 0.0, logits = 0.0;
    for (int64_t c = 0; c < classes; ++c) {
      sum += std::exp(p[c] - mx);
      logits += p[c];
    }
    double logZ = mx + std::log(sum);
    // -log_softmax at the label, and its mean over all classes.
    double nll = logZ - p[label];
    double smooth = logZ - logits / static_cast<double>(classes);
    losses[n] = (1.0 - eps) * nll + eps * smooth;
    ++count;
  }
  return success();
}

LogicalResult Evaluator::evalCrossEntropy(CrossEntropyOp op) {
  std::vector<double> losses;
  int64_t count;
  if (failed(crossEntropyRows(op, get(op.getLogits()), get(op.getLabels()),
                              op.getIgnoreIndex(), op.getLabelSmoothing().convertToDouble(),
                              losses, count)))
    return failure();
  double total = 0.0;
  for (double l : losses)
    total += l;
  // 0 / 0 is NaN when every label is ignored, as in PyTorch.
  set(op.getResult(), HostArray{{}, {total / static_cast<double>(count)}});
  return success();
}

LogicalResult Evaluator::evalCrossEntropyRows(CrossEntropyRowsOp op) {
  const HostArray &labels = get(op.getLabels());
  HostArray r{labels.shape, {}};
  int64_t count;
  if (failed(crossEntropyRows(op, get(op.getLogits()), labels, op.getIgnoreIndex(),
                              op.getLabelSmoothing().convertToDouble(), r.data, count)))
    return failure();
  set(op.getResult(), std::move(r));
  return success();
}

LogicalResult Evaluator::evalMseLoss(MseLossOp op) {
  const HostArray &pred = get(op.getPred()), &target = get(op.getTarget());
  double total = 0.0;
  for (size_t i = 0; i < pred.data.size(); ++i) {
    double d = pred.data[i] - target.data[i];
    total += d * d;
  }
  set(op.getResult(),
      HostArray{{}, {total / static_cast<double>(pred.data.size())}});
  return success();
}

LogicalResult Evaluator::run(Operation *op) {
  auto setUnary = [&](function_ref<double(double)> f) {
    set(op->getResult(0), unary(op, f));
    return success();
  };
  auto setBinary = [&](function_ref<double(double, double)> f) {
    set(op->getResult(0), binary(op, f));
    return success();
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](GlobalLoadOp g) -> LogicalResult {
        HostArray *value = state.global(g, g.getGlobal());
        if (!value)
          return failure();
        set(g.getResult(), *value);
        return success();
      })
      .Case([&](ConstantOp c) -> LogicalResult {
        FailureOr<HostArray> a =
            fromElements(c, c.getValue(), cast<RankedTensorType>(c.getType()));
        if (failed(a))
          return failure();
        set(c.getResult(), std::move(*a));
        return success();
      })
      .Case([&](NegOp) { return setUnary([](double x) { return -x; }); })
      .Case([&](AbsOp) { return setUnary([](double x) { return std::abs(x); }); })
      .Case([&](ExpOp) { return setUnary([](double x) { return std::exp(x); }); })
      .Case([&](LogOp) { return setUnary([](double x) { return std::log(x); }); })
      .Case([&](SqrtOp) { return setUnary([](double x) { return std::sqrt(x); }); })
      .Case([&](RsqrtOp) { return setUnary([](double x) { return 1.0 / std::sqrt(x); }); })
      .Case([&](ReciprocalOp) { return setUnary([](double x) { return 1.0 / x; }); })
      .Case([&](TanhOp) { return setUnary([](double x) { return std::tanh(x); }); })
      .Case([&](ErfOp) { return setUnary([](double x) { return std::erf(x); }); })
      .Case([&](SigmoidOp) { return setUnary(sigmoid); })
      .Case([&](ReluOp) { return setUnary([](double x) { return x > 0 ? x : 0.0; }); })
      .Case([&](SiluOp) { return setUnary([](double x) { return x * sigmoid(x); }); })
      .Case([&](CosOp) { return setUnary([](double x) { return std::cos(x); }); })
      .Case([&](SinOp) { return setUnary([](double x) { return std::sin(x); }); })
      .Case([&](GeluOp g) {
        GeluApproximation a = g.getApproximation();
        return setUnary([a](double x) { return gelu(x, a); });
      })
      .Case([&](ClampOp c) {
        double lo = c.getMinAttr().getValueAsDouble(), hi = c.getMaxAttr().getValueAsDouble();
        return setUnary([=](double x) { return std::min(std::max(x, lo), hi); });
      })
      .Case([&](AddOp) { return setBinary([](double a, double b) { return a + b; }); })
      .Case([&](SubOp) { return setBinary([](double a, double b) { return a - b; }); })
      .Case([&](MulOp) { return setBinary([](double a, double b) { return a * b; }); })
      .Case([&](DivOp d) {
        // Integer division truncates toward zero (ONNX Div, C).
        bool isInt = isa<IntegerType>(getElementTypeOrSelf(d.getType()));
        return setBinary([isInt](double a, double b) {
          return isInt ? (b == 0 ? 0.0 : std::trunc(a / b)) : a / b;
        });
      })
      .Case([&](PowOp) { return setBinary([](double a, double b) { return std::pow(a, b); }); })
      .Case([&](MaximumOp) {
        return setBinary([](double a, double b) {
          return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
        });
      })
      .Case([&](MinimumOp) {
        return setBinary([](double a, double b) {
          return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
        });
      })
      .Case([&](CompareOp c) {
        ComparePredicate p = c.getPredicate();
        return setBinary([p](double a, double b) -> double {
          switch (p) {
          case ComparePredicate::eq: return a == b;
          case ComparePredicate::ne: return a != b;
          case ComparePredicate::lt: return a < b;
          case ComparePredicate::le: return a <= b;
          case ComparePredicate::gt: return a > b;
          case ComparePredicate::ge: return a >= b;
          }
          return 0.0;
        });
      })
      .Case([&](SelectOp s) -> LogicalResult {
        const HostArray &c = get(s.getCondition()), &t = get(s.getTrueValue()),
                        &f = get(s.getFalseValue());
        HostArray r;
        r.shape = shapeOf(s.getResult());
        std::vector<int64_t> ic = broadcastIndex(c.shape, r.shape),
                             it = broadcastIndex(t.shape, r.shape),
                             iff = broadcastIndex(f.shape, r.shape);
        r.data.resize(ic.size());
        for (size_t i = 0; i < ic.size(); ++i)
          r.data[i] = c.data[ic[i]] != 0.0 ? t.data[it[i]] : f.data[iff[i]];
        set(s.getResult(), std::move(r));
        return success();
      })
      .Case([&](ConvertOp c) {
        Type to = getElementTypeOrSelf(c.getType());
        return setUnary([to](double x) { return roundTo(x, to); });
      })
      .Case([&](MatmulOp m) { return evalMatmul(m); })
      .Case([&](Conv2dOp c) { return evalConv(c); })
      .Case([&](AttentionOp a) { return evalAttention(a); })
      .Case([&](SoftmaxOp s) { return evalSoftmax(s, s.getAxis(), false); })
      .Case([&](CumSumOp c) { return evalCumSum(c); })
      .Case([&](LogSoftmaxOp s) { return evalSoftmax(s, s.getAxis(), true); })
      .Case([&](LayerNormOp n) {
        return evalNorm(n, n.getInput(), n.getScale(), n.getBias(), n.getAxis(),
                        n.getEpsilonAttr().getValueAsDouble(), false);
      })
      .Case([&](RmsNormOp n) {
        return evalNorm(n, n.getInput(), n.getScale(), Value(), n.getAxis(),
                        n.getEpsilonAttr().getValueAsDouble(), true);
      })
      .Case([&](BatchNormOp b) { return evalBatchNorm(b); })
      // Without a key (inference) dropout keeps everything; with one it
      // applies the counter-based mask the kernels apply.
      .Case([&](DropoutOp d) {
        HostArray y = get(d.getInput());
        if (Value key = d.getKey()) {
          auto k = static_cast<int64_t>(get(key).data[0]);
          double ratio = d.getRatio().convertToDouble();
          for (size_t i = 0; i < y.data.size(); ++i)
            y.data[i] = dropoutDrops(k, static_cast<int64_t>(i), ratio)
                            ? 0.0
                            : y.data[i] / (1.0 - ratio);
        }
        set(d.getResult(), std::move(y));
        return success();
      })
      .Case([&](ReduceSumOp r) { return evalReduce(r, 0); })
      .Case([&](ReduceMeanOp r) { return evalReduce(r, 1); })
      .Case([&](ReduceMaxOp r) { return evalReduce(r, 2); })
      .Case([&](MaxPool2dOp p) { return evalPool(p, true); })
      .Case([&](AvgPool2dOp p) { return evalPool(p, false); })
      .Case([&](GradientOp g) {
        set(g.getResult(), get(g.getInput()));
        return success();
      })
      // One rank's view: the op only changes the gradient.
      .Case([&](AllReduceGradOp a) {
        set(a.getResult(), get(a.getInput()));
        return success();
      })
      .Case([&](StopGradientOp s) {
        set(s.getResult(), get(s.getInput()));
        return success();
      })
      .Case([&](ReshapeOp r) {
        HostArray a = get(r.getInput());
        a.shape = shapeOf(r.getResult());
        set(r.getResult(), std::move(a));
        return success();
      })
      .Case([&](BroadcastToOp b) {
        const HostArray &x = get(b.getInput());
        HostArray r;
        r.shape = shapeOf(b.getResult());
        r.data = gatherAt(x, broadcastIndex(x.shape, r.shape));
        set(b.getResult(), std::move(r));
        return success();
      })
      .Case([&](TransposeOp t) {
        const HostArray &x = get(t.getInput());
        ArrayRef<int64_t> perm = t.getPermutation();
        Shape inStrides = stridesOf(x.shape), permStrides(perm.size());
        HostArray r;
        r.shape = shapeOf(t.getResult());
        for (size_t i = 0; i < perm.size(); ++i)
          permStrides[i] = inStrides[perm[i]];
        r.data = gatherAt(x, stridedOffsets(r.shape, permStrides));
        set(t.getResult(), std::move(r));
        return success();
      })
      .Case([&](SliceOp s) {
        const HostArray &x = get(s.getInput());
        ArrayRef<int64_t> start = s.getStart(), stride = s.getStride();
        Shape inStrides = stridesOf(x.shape);
        HostArray r;
        r.shape = shapeOf(s.getResult());
        int64_t rank = r.shape.size(), off = 0;
        Shape step(rank);
        for (int64_t d = 0; d < rank; ++d) {
          step[d] = inStrides[d] * stride[d];
          off += start[d] * inStrides[d];
        }
        r.data = gatherAt(x, stridedOffsets(r.shape, step, off));
        set(s.getResult(), std::move(r));
        return success();
      })
      .Case([&](ConcatOp c) {
        HostArray r;
        r.shape = shapeOf(c.getResult());
        int64_t axis = static_cast<int64_t>(c.getAxis());
        if (axis < 0)
          axis += r.shape.size();
        int64_t outer = numElements(ArrayRef<int64_t>(r.shape).take_front(axis));
        int64_t inner = numElements(ArrayRef<int64_t>(r.shape).drop_front(axis + 1));
        int64_t total = r.shape[axis];
        r.data.resize(numElements(r.shape));
        int64_t at = 0;
        for (Value v : c.getInputs()) {
          const HostArray &x = get(v);
          int64_t len = x.shape[axis];
          for (int64_t o = 0; o < outer; ++o)
            std::copy_n(x.data.begin() + o * len * inner, len * inner,
                        r.data.begin() + (o * total + at) * inner);
          at += len;
        }
        set(c.getResult(), std::move(r));
        return success();
      })
      .Case([&](GatherOp g) {
        return evalGather(g, g.getInput(), g.getIndices(), g.getAxis());
      })
      .Case([&](EmbeddingOp e) { return evalGather(e, e.getTable(), e.getIds(), 0); })
      .Case([&](CrossEntropyOp c) { return evalCrossEntropy(c); })
      .Case([&](CrossEntropyRowsOp c) { return evalCrossEntropyRows(c); })
      .Case([&](MseLossOp m) { return evalMseLoss(m); })
      .Default([&](Operation *other) { return runTrainOp(other); });
}

} // namespace interp

//===----------------------------------------------------------------------===//
// Model state and calls
//===----------------------------------------------------------------------===//

HostArray *Interpreter::Impl::global(Operation *user, StringRef name) {
  auto it = globals.find(name);
  if (it != globals.end())
    return &it->second;
  Operation *at = user ? user : module.getOperation();
  auto global = symbols.lookup<GlobalOp>(name);
  if (!global) {
    at->emitError() << "no colo.global named '" << name << "'";
    return nullptr;
  }
  FailureOr<HostArray> a = interp::readGlobal(global);
  if (failed(a))
    return nullptr;
  return &globals.insert({name, std::move(*a)}).first->second;
}

LogicalResult Interpreter::Impl::store(Operation *user, StringRef name, HostArray value) {
  Operation *at = user ? user : module.getOperation();
  auto global = symbols.lookup<GlobalOp>(name);
  if (!global)
    return at->emitError() << "no colo.global named '" << name << "'";
  RankedTensorType type = global.getTensorType();
  if (ArrayRef<int64_t>(value.shape) != type.getShape() ||
      static_cast<int64_t>(value.data.size()) != type.getNumElements())
    return at->emitError() << "a value of " << value.data.size()
                           << " elements in shape [" << interp::formatShape(value.shape)
                           << "] cannot be stored in global '" << name << "' of type "
                           << type;
  for (double &x : value.data)
    x = interp::roundTo(x, type.getElementType());
  globals[name] = std::move(value);
  return success();
}

Interpreter::Interpreter(ModuleOp module) : impl(std::make_unique<Impl>(module)) {}
Interpreter::~Interpreter() = default;

HostArray *Interpreter::global(StringRef name) { return impl->global(nullptr, name); }

LogicalResult Interpreter::setGlobal(StringRef name, HostArray value) {
  return impl->store(nullptr, name, std::move(value));
}

FailureOr<std::vector<HostArray>> Interpreter::call(StringRef name,
                                                    ArrayRef<HostArray> inputs) {
  auto func = impl->symbols.lookup<func::FuncOp>(name);
  if (!func || func.isExternal())
    return impl->module.emitError()
           << "the module has no func.func @" << name << " with a body";
  interp::Evaluator eval(*impl);
  Block &body = func.getBody().front();
  if (body.getNumArguments() != inputs.size())
    return func.emitError() << "@" << name << " takes " << body.getNumArguments()
                            << " inputs, " << inputs.size() << " given";
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !type.hasStaticShape())
      return func.emitError() << "input " << i << " has type " << arg.getType()
                              << ", not a static tensor";
    const HostArray &in = inputs[i];
    if (ArrayRef<int64_t>(in.shape) != type.getShape() ||
        static_cast<int64_t>(in.data.size()) != type.getNumElements())
      return func.emitError() << "input " << i << " has shape ["
                              << interp::formatShape(in.shape) << "] ("
                              << in.data.size() << " values), @" << name
                              << " expects " << type;
    HostArray a = in;
    for (double &x : a.data)
      x = interp::roundTo(x, type.getElementType());
    eval.values[arg] = std::move(a);
  }
  for (Operation &op : body) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      std::vector<HostArray> results;
      for (Value v : ret.getOperands())
        results.push_back(eval.values.find(v)->second);
      return results;
    }
    if (failed(eval.run(&op)))
      return failure();
  }
  return func.emitError() << "@" << name << " has no func.return";
}

FailureOr<std::vector<HostArray>> interpret(ModuleOp module, ArrayRef<HostArray> inputs) {
  return Interpreter(module).call("forward", inputs);
}

} // namespace colo

uint64_t colo::initializerSeed(GlobalOp global) {
  // FNV-1a of the name, so runs are reproducible; a pipeline rank's copy of
  // a global (colo.param_name) draws the same.
  StringRef name = global.getSymName();
  if (StringAttr model = ColoDialect::ParamNameAttrHelper(global.getContext()).getAttr(global))
    name = model.getValue();
  uint64_t seed = 1469598103934665603ull;
  for (char c : name)
    seed = (seed ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return seed;
}
