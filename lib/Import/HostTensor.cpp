#include "HostTensor.h"

#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <limits>
#include <numeric>

using namespace mlir;

namespace colo::onnx_import {

bool isSupportedDType(int32_t t) {
  switch (t) {
  case kFloat: case kUInt8: case kInt8: case kInt16: case kInt32: case kInt64:
  case kBool: case kFloat16: case kDouble: case kBFloat16:
    return true;
  default:
    return false;
  }
}

bool isFloatDType(int32_t t) {
  return t == kFloat || t == kFloat16 || t == kDouble || t == kBFloat16;
}

llvm::StringRef dtypeName(int32_t t) {
  static const char *names[] = {
      "undefined", "float", "uint8", "int8", "uint16", "int16", "int32",
      "int64", "string", "bool", "float16", "double", "uint32", "uint64",
      "complex64", "complex128", "bfloat16", "float8e4m3fn", "float8e4m3fnuz",
      "float8e5m2", "float8e5m2fnuz", "uint4", "int4", "float4e2m1"};
  if (t >= 0 && t < static_cast<int32_t>(std::size(names)))
    return names[t];
  return "unknown";
}

Type elementTypeOf(MLIRContext *ctx, int32_t t) {
  switch (t) {
  case kFloat: return Float32Type::get(ctx);
  case kDouble: return Float64Type::get(ctx);
  case kFloat16: return Float16Type::get(ctx);
  case kBFloat16: return BFloat16Type::get(ctx);
  case kUInt8: return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case kInt8: return IntegerType::get(ctx, 8);
  case kInt16: return IntegerType::get(ctx, 16);
  case kInt32: return IntegerType::get(ctx, 32);
  case kInt64: return IntegerType::get(ctx, 64);
  case kBool: return IntegerType::get(ctx, 1);
  default: return {};
  }
}

int32_t dtypeOf(Type type) {
  for (int32_t t : {kFloat, kUInt8, kInt8, kInt16, kInt32, kInt64, kBool, kFloat16,
                    kDouble, kBFloat16})
    if (elementTypeOf(type.getContext(), t) == type)
      return t;
  return 0;
}

int64_t HostTensor::numel() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1},
                         std::multiplies<int64_t>());
}

int64_t HostTensor::asInt(size_t i) const {
  double v = values[i];
  if (v >= 9.2e18)
    return std::numeric_limits<int64_t>::max();
  if (v <= -9.2e18)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

std::vector<int64_t> HostTensor::asInts() const {
  std::vector<int64_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    out[i] = asInt(i);
  return out;
}

double HostTensor::convert(double v, int32_t dtype) {
  switch (dtype) {
  case kFloat: return static_cast<float>(v);
  case kBool: return v != 0 ? 1 : 0;
  case kDouble: return v;
  case kFloat16: case kBFloat16: {
    APFloat f(v);
    bool lost;
    f.convert(dtype == kFloat16 ? APFloat::IEEEhalf() : APFloat::BFloat(),
              APFloat::rmNearestTiesToEven, &lost);
    return f.convertToDouble();
  }
  default:
    return std::isnan(v) ? 0 : std::trunc(v);
  }
}

HostTensor HostTensor::scalar(double v, int32_t dtype) {
  return HostTensor{dtype, {}, {convert(v, dtype)}};
}

HostTensor HostTensor::vector(llvm::ArrayRef<int64_t> v) {
  HostTensor t{kInt64, {static_cast<int64_t>(v.size())}, {}};
  for (int64_t x : v)
    t.values.push_back(static_cast<double>(x));
  return t;
}

DenseElementsAttr HostTensor::toAttr(MLIRContext *ctx) const {
  Type et = elementTypeOf(ctx, dtype);
  auto type = RankedTensorType::get(shape, et);
  if (auto ft = dyn_cast<FloatType>(et)) {
    SmallVector<APFloat> vals;
    for (double v : values) {
      APFloat f(v);
      bool lost;
      f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      vals.push_back(f);
    }
    return DenseElementsAttr::get(type, vals);
  }
  unsigned width = et.getIntOrFloatBitWidth();
  SmallVector<APInt> vals;
  for (size_t i = 0; i < values.size(); ++i)
    vals.push_back(APInt(width, static_cast<uint64_t>(asInt(i)), /*isSigned=*/true,
                         /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, vals);
}

bool broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b,
                     llvm::SmallVectorImpl<int64_t> &out) {
  return succeeded(colo::broadcastShapes(a, b, out));
}

std::optional<std::string> resolveReshape(llvm::ArrayRef<int64_t> in,
                                          llvm::ArrayRef<int64_t> target,
                                          bool allowZero,
                                          llvm::SmallVectorImpl<int64_t> &out) {
  int64_t known = 1, inferAt = -1;
  int64_t total = std::accumulate(in.begin(), in.end(), int64_t{1},
                                  std::multiplies<int64_t>());
  out.clear();
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == 0 && !allowZero) {
      if (i >= in.size())
        return "shape entry 0 at position " + std::to_string(i) +
               " has no input dimension to copy";
      d = in[i];
    }
    if (d == -1) {
      if (inferAt >= 0)
        return std::string("more than one -1 in the target shape");
      inferAt = i;
      out.push_back(1);
      continue;
    }
    if (d < 0)
      return "invalid target dimension " + std::to_string(d);
    if (d != 0 && known > std::numeric_limits<int64_t>::max() / d)
      return "target dimension " + std::to_string(d) + " makes the element count overflow";
    known *= d;
    out.push_back(d);
  }
  if (inferAt >= 0) {
    if (known == 0 || total % known != 0)
      return "cannot infer -1: " + std::to_string(total) +
             " elements do not divide by " + std::to_string(known);
    out[inferAt] = total / known;
    known *= out[inferAt];
  }
  if (known != total)
    return "cannot reshape " + std::to_string(total) + " elements into " +
           std::to_string(known);
  return std::nullopt;
}

SliceBounds resolveSlice(int64_t dim, int64_t start, int64_t end, int64_t step) {
  auto clampIndex = [&](int64_t v, int64_t lo, int64_t hi) {
    if (v < 0)
      v = v <= std::numeric_limits<int64_t>::min() / 2 ? lo : v + dim;
    return std::clamp(v, lo, hi);
  };
  if (step > 0) {
    int64_t s = clampIndex(start, 0, dim), e = clampIndex(end, 0, dim);
    int64_t size = e > s ? (e - s - 1) / step + 1 : 0;
    return {s, e, step, size};
  }
  // Negative steps: start in [0, dim-1], end in [-1, dim-1].
  int64_t s = clampIndex(start, std::min<int64_t>(0, dim - 1), dim - 1),
          e = clampIndex(end, -1, dim - 1);
  int64_t size = s > e ? (e - s + 1) / step + 1 : 0;
  return {s, e, step, size};
}

SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

namespace {
/// The element count of `shape`, saturated at kMaxHostElements + 1.
int64_t cappedNumel(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n = d == 0 ? 0 : std::min(n * std::min(d, kMaxHostElements + 1), kMaxHostElements + 1);
  return n;
}

/// Linear index into `shape` (broadcast to `outShape`) of output position `lin`.
int64_t broadcastIndex(int64_t lin, ArrayRef<int64_t> outShape,
                       ArrayRef<int64_t> outStrides, ArrayRef<int64_t> shape) {
  int64_t idx = 0, stride = 1;
  size_t offset = outShape.size() - shape.size();
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    int64_t coord = (lin / outStrides[d + offset]) % outShape[d + offset];
    if (shape[d] != 1)
      idx += coord * stride;
    stride *= shape[d];
  }
  return idx;
}

EvalResult nary(ArrayRef<const HostTensor *> in, int32_t outType,
                llvm::function_ref<double(ArrayRef<double>)> fn) {
  SmallVector<int64_t> shape;
  for (const HostTensor *t : in) {
    SmallVector<int64_t> next;
    if (!broadcastShapes(shape, t->shape, next))
      return EvalResult::fail("operands are not broadcast-compatible");
    shape = next;
  }
  HostTensor out{outType, shape, {}};
  if (cappedNumel(shape) > kMaxHostElements)
    return EvalResult::notFoldable();
  int64_t n = out.numel();
  out.values.resize(n);
  SmallVector<int64_t> strides = stridesOf(shape);
  SmallVector<double> args(in.size());
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < in.size(); ++k)
      args[k] = in[k]->values[broadcastIndex(i, shape, strides, in[k]->shape)];
    out.values[i] = HostTensor::convert(fn(args), outType);
  }
  return EvalResult::ok({std::move(out)});
}

std::optional<int64_t> normAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

EvalResult transpose(const HostTensor &x, ArrayRef<int64_t> perm) {
  HostTensor out{x.dtype, {}, {}};
  for (int64_t p : perm)
    out.shape.push_back(x.shape[p]);
  SmallVector<int64_t> inStrides = stridesOf(x.shape), outStrides = stridesOf(out.shape);
  out.values.resize(x.values.size());
  for (int64_t i = 0, n = out.numel(); i < n; ++i) {
    int64_t src = 0;
    for (size_t d = 0; d < perm.size(); ++d)
      src += ((i / outStrides[d]) % out.shape[d]) * inStrides[perm[d]];
    out.values[i] = x.values[src];
  }
  return EvalResult::ok({std::move(out)});
}

EvalResult gather(const HostTensor &x, const HostTensor &idx, int64_t axisAttr) {
  auto axis = normAxis(axisAttr, x.shape.size());
  if (!axis || x.shape.empty())
    return EvalResult::fail("axis out of range");
  HostTensor out{x.dtype, {}, {}};
  out.shape.append(x.shape.begin(), x.shape.begin() + *axis);
  out.shape.append(idx.shape.begin(), idx.shape.end());
  out.shape.append(x.shape.begin() + *axis + 1, x.shape.end());
  int64_t outer = 1, inner = 1, dim = x.shape[*axis];
  for (int64_t d = 0; d < *axis; ++d)
    outer *= x.shape[d];
  for (size_t d = *axis + 1; d < x.shape.size(); ++d)
    inner *= x.shape[d];
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < idx.values.size(); ++k) {
      int64_t j = idx.asInt(k);
      if (j < 0)
        j += dim;
      if (j < 0 || j >= dim)
        return EvalResult::fail("gather index " + std::to_string(idx.asInt(k)) +
                                " out of range for dimension of size " +
                                std::to_string(dim));
      for (int64_t i = 0; i < inner; ++i)
        out.values.push_back(x.values[(o * dim + j) * inner + i]);
    }
  return EvalResult::ok({std::move(out)});
}

EvalResult slice(const HostTensor &x, ArrayRef<int64_t> starts, ArrayRef<int64_t> ends,
                 std::optional<std::vector<int64_t>> axesIn,
                 std::optional<std::vector<int64_t>> stepsIn) {
  int64_t rank = x.shape.size();
  std::vector<int64_t> axes = axesIn.value_or(std::vector<int64_t>());
  if (!axesIn)
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  std::vector<int64_t> steps = stepsIn.value_or(std::vector<int64_t>(starts.size(), 1));
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return EvalResult::fail("starts, ends, axes and steps differ in length");
  SmallVector<SliceBounds> bounds;
  for (int64_t d = 0; d < rank; ++d)
    bounds.push_back({0, x.shape[d], 1, x.shape[d]});
  for (size_t k = 0; k < axes.size(); ++k) {
    auto axis = normAxis(axes[k], rank);
    if (!axis || steps[k] == 0)
      return EvalResult::fail("bad slice axis or zero step");
    bounds[*axis] = resolveSlice(x.shape[*axis], starts[k], ends[k], steps[k]);
  }
  HostTensor out{x.dtype, {}, {}};
  for (const SliceBounds &b : bounds)
    out.shape.push_back(b.size);
  SmallVector<int64_t> inStrides = stridesOf(x.shape), outStrides = stridesOf(out.shape);
  for (int64_t i = 0, n = out.numel(); i < n; ++i) {
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d)
      src += (bounds[d].start + ((i / outStrides[d]) % out.shape[d]) * bounds[d].step) *
             inStrides[d];
    out.values.push_back(x.values[src]);
  }
  return EvalResult::ok({std::move(out)});
}

EvalResult concat(ArrayRef<const HostTensor *> in, int64_t axisAttr) {
  if (in.empty())
    return EvalResult::fail("no inputs");
  int64_t rank = in[0]->shape.size();
  auto axis = normAxis(axisAttr, rank);
  if (!axis || rank == 0)
    return EvalResult::fail("axis out of range");
  HostTensor out{in[0]->dtype, in[0]->shape, {}};
  out.shape[*axis] = 0;
  for (const HostTensor *t : in) {
    if (static_cast<int64_t>(t->shape.size()) != rank)
      return EvalResult::fail("inputs differ in rank");
    for (int64_t d = 0; d < rank; ++d)
      if (d != *axis && t->shape[d] != in[0]->shape[d])
        return EvalResult::fail("inputs differ in dimension " + std::to_string(d));
    out.shape[*axis] += t->shape[*axis];
  }
  int64_t outer = 1;
  for (int64_t d = 0; d < *axis; ++d)
    outer *= out.shape[d];
  for (int64_t o = 0; o < outer; ++o)
    for (const HostTensor *t : in) {
      int64_t chunk = t->numel() / std::max<int64_t>(outer, 1);
      if (outer == 0)
        break;
      out.values.insert(out.values.end(), t->values.begin() + o * chunk,
                        t->values.begin() + (o + 1) * chunk);
    }
  return EvalResult::ok({std::move(out)});
}

EvalResult matmul(const HostTensor &a, const HostTensor &b) {
  if (a.shape.size() < 2 || b.shape.size() < 2)
    return EvalResult::notFoldable();
  int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back();
  int64_t n = b.shape.back();
  if (b.shape[b.shape.size() - 2] != k)
    return EvalResult::fail("contraction dimension mismatch: " + std::to_string(k) +
                            " vs " + std::to_string(b.shape[b.shape.size() - 2]));
  SmallVector<int64_t> batch;
  if (!broadcastShapes(ArrayRef<int64_t>(a.shape).drop_back(2),
                       ArrayRef<int64_t>(b.shape).drop_back(2), batch))
    return EvalResult::fail("batch dimensions are not broadcast-compatible");
  HostTensor out{a.dtype, batch, {}};
  out.shape.push_back(m);
  out.shape.push_back(n);
  SmallVector<int64_t> batchStrides = stridesOf(batch);
  int64_t nb = std::accumulate(batch.begin(), batch.end(), int64_t{1},
                               std::multiplies<int64_t>());
  for (int64_t bi = 0; bi < nb; ++bi) {
    int64_t ai = broadcastIndex(bi, batch, batchStrides,
                                ArrayRef<int64_t>(a.shape).drop_back(2));
    int64_t bj = broadcastIndex(bi, batch, batchStrides,
                                ArrayRef<int64_t>(b.shape).drop_back(2));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += a.values[(ai * m + i) * k + p] * b.values[(bj * k + p) * n + j];
        out.values.push_back(HostTensor::convert(acc, a.dtype));
      }
  }
  return EvalResult::ok({std::move(out)});
}

double applyBinary(llvm::StringRef op, double x, double y, const NodeAttrs &attrs,
                   int32_t dtype) {
  if (op == "Add") return x + y;
  if (op == "Sub") return x - y;
  if (op == "Mul") return x * y;
  if (op == "Div")
    return isFloatDType(dtype) ? x / y : (y == 0 ? 0 : std::trunc(x / y));
  if (op == "Pow") return std::pow(x, y);
  if (op == "Mod") {
    if (attrs.getInt("fmod").value_or(0) || isFloatDType(dtype))
      return std::fmod(x, y);
    double r = std::fmod(x, y);
    return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
  }
  if (op == "Max") return std::max(x, y);
  if (op == "Min") return std::min(x, y);
  if (op == "Equal") return x == y;
  if (op == "Less") return x < y;
  if (op == "LessOrEqual") return x <= y;
  if (op == "Greater") return x > y;
  if (op == "GreaterOrEqual") return x >= y;
  if (op == "And") return (x != 0) && (y != 0);
  if (op == "Or") return (x != 0) || (y != 0);
  if (op == "Xor") return (x != 0) != (y != 0);
  return 0;
}
} // namespace

EvalResult gatherOffsets(StringRef op, ArrayRef<int64_t> data, const HostTensor &idx,
                         const NodeAttrs &attrs) {
  SmallVector<int64_t> strides = stridesOf(data);
  int64_t rank = data.size();
  // An index into dimension d, negative from the end.
  auto at = [&](int64_t j, int64_t d, int64_t &out) {
    out = j < 0 ? j + data[d] : j;
    return out >= 0 && out < data[d];
  };
  HostTensor out{kInt64, {}, {}};
  if (op == "GatherElements") {
    auto axis = normAxis(attrs.getInt("axis").value_or(0), rank);
    if (!axis || static_cast<int64_t>(idx.shape.size()) != rank)
      return EvalResult::fail("indices must have the data's rank and axis be in range");
    out.shape = idx.shape;
    SmallVector<int64_t> idxStrides = stridesOf(idx.shape);
    for (int64_t i = 0, n = idx.numel(); i < n; ++i) {
      int64_t offset = 0;
      for (int64_t d = 0; d < rank; ++d) {
        int64_t c = (i / idxStrides[d]) % idx.shape[d];
        if (d == *axis && !at(idx.asInt(i), d, c))
          return EvalResult::fail("index " + std::to_string(idx.asInt(i)) + " out of range");
        if (d != *axis && c >= data[d])
          return EvalResult::fail("indices larger than the data");
        offset += c * strides[d];
      }
      out.values.push_back(offset);
    }
    return EvalResult::ok({std::move(out)});
  }
  // GatherND: indices [batch..., n..., k] pick slices data[batch..., i_1..i_k, ...].
  int64_t b = attrs.getInt("batch_dims").value_or(0);
  if (idx.shape.empty())
    return EvalResult::fail("indices must have rank >= 1");
  int64_t k = idx.shape.back(), idxRank = idx.shape.size();
  if (b < 0 || b >= idxRank || b + k > rank)
    return EvalResult::fail("batch_dims and the index depth do not fit the data");
  for (int64_t d = 0; d < b; ++d)
    if (idx.shape[d] != data[d])
      return EvalResult::fail("batch dimensions of data and indices differ");
  out.shape.assign(idx.shape.begin(), idx.shape.end() - 1);
  out.shape.append(data.begin() + b + k, data.end());
  int64_t slice = 1, batchSize = 1;
  for (int64_t d = b + k; d < rank; ++d)
    slice *= data[d];
  for (int64_t d = 0; d < b; ++d)
    batchSize *= data[d];
  int64_t tuples = idx.numel() / k, perBatch = tuples / batchSize;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = (t / perBatch) * (b > 0 ? strides[b - 1] : 0);
    for (int64_t d = 0; d < k; ++d) {
      int64_t j;
      if (!at(idx.asInt(t * k + d), b + d, j))
        return EvalResult::fail("index " + std::to_string(idx.asInt(t * k + d)) +
                                " out of range");
      offset += j * strides[b + d];
    }
    for (int64_t e = 0; e < slice; ++e)
      out.values.push_back(offset + e);
  }
  return EvalResult::ok({std::move(out)});
}

EvalResult scatterTargets(StringRef op, ArrayRef<int64_t> data, const HostTensor &idx,
                          ArrayRef<int64_t> updates, const NodeAttrs &attrs) {
  std::string reduction = attrs.getString("reduction").value_or("none");
  if (!llvm::is_contained({"none", "add", "mul", "max", "min"}, reduction))
    return EvalResult::fail("unknown reduction '" + reduction + "'");
  // A scatter writes update i where the matching gather would read element
  // i (ScatterND has no batch dimensions: batch_dims is absent).
  EvalResult at =
      gatherOffsets(op == "ScatterND" ? "GatherND" : "GatherElements", data, idx, attrs);
  if (at.kind == EvalResult::Folded && ArrayRef<int64_t>(at.outputs[0].shape) != updates)
    return EvalResult::fail("updates do not match the indexed slices");
  return at;
}

EvalResult evaluate(llvm::StringRef op, ArrayRef<const HostTensor *> in,
                    const NodeAttrs &attrs) {
  auto input = [&](size_t i) -> const HostTensor * {
    return i < in.size() ? in[i] : nullptr;
  };
  auto intsInput = [&](size_t i) -> std::optional<std::vector<int64_t>> {
    if (const HostTensor *t = input(i))
      return t->asInts();
    return std::nullopt;
  };

  if (op == "Identity")
    return EvalResult::ok({*in[0]});

  if (op == "Cast" || op == "CastLike") {
    int32_t to = op == "Cast" ? attrs.getInt("to").value_or(0) : in[1]->dtype;
    if (!isSupportedDType(to))
      return EvalResult::fail("unsupported data type " + dtypeName(to).str());
    HostTensor out = *in[0];
    out.dtype = to;
    for (double &v : out.values)
      v = HostTensor::convert(v, to);
    return EvalResult::ok({std::move(out)});
  }

  static const llvm::StringRef binaryOps[] = {
      "Add", "Sub", "Mul", "Div", "Pow", "Mod", "Max", "Min", "Equal", "Less",
      "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor"};
  if (llvm::is_contained(binaryOps, op)) {
    if ((op == "Max" || op == "Min") && in.size() != 2)
      return EvalResult::notFoldable();
    bool predicate = op == "Equal" || op.starts_with("Less") ||
                     op.starts_with("Greater") || op == "And" || op == "Or" ||
                     op == "Xor";
    int32_t dtype = in[0]->dtype;
    return nary(in.take_front(2), predicate ? kBool : dtype,
                [&](ArrayRef<double> a) {
                  return applyBinary(op, a[0], a[1], attrs, dtype);
                });
  }

  if (op == "Where")
    return nary(in, in[1]->dtype, [](ArrayRef<double> a) { return a[0] ? a[1] : a[2]; });

  static const std::pair<llvm::StringRef, double (*)(double)> unaryOps[] = {
      {"Neg", [](double x) { return -x; }},
      {"Sqrt", [](double x) { return std::sqrt(x); }},
      {"Reciprocal", [](double x) { return 1 / x; }},
      {"Cos", [](double x) { return std::cos(x); }},
      {"Sin", [](double x) { return std::sin(x); }},
      {"Exp", [](double x) { return std::exp(x); }},
      {"Log", [](double x) { return std::log(x); }},
      {"Abs", [](double x) { return std::abs(x); }},
      {"Floor", [](double x) { return std::floor(x); }},
      {"Ceil", [](double x) { return std::ceil(x); }},
      {"Not", [](double x) { return x == 0 ? 1.0 : 0.0; }},
  };
  for (auto [name, fn] : unaryOps)
    if (op == name)
      return nary(in.take_front(1), in[0]->dtype,
                  [fn = fn](ArrayRef<double> a) { return fn(a[0]); });
  if (op == "IsNaN")
    return nary(in.take_front(1), kBool,
                [](ArrayRef<double> a) { return std::isnan(a[0]) ? 1.0 : 0.0; });

  if (op == "ConstantOfShape") {
    HostTensor out = attrs.getTensor("value").value_or(HostTensor::scalar(0, kFloat));
    double v = out.values.empty() ? 0 : out.values[0];
    std::vector<int64_t> shape = in[0]->asInts();
    for (int64_t d : shape)
      if (d < 0)
        return EvalResult::fail("negative dimension " + std::to_string(d));
    int64_t n = cappedNumel(shape);
    if (n > kMaxHostElements)
      return EvalResult::fail("ConstantOfShape of " + std::to_string(n) +
                              "+ elements is too large");
    out.shape.assign(shape.begin(), shape.end());
    out.values.assign(out.numel(), v);
    return EvalResult::ok({std::move(out)});
  }

  if (op == "Range") {
    double start = in[0]->values[0], limit = in[1]->values[0], delta = in[2]->values[0];
    if (delta == 0)
      return EvalResult::fail("Range delta is zero");
    double count = std::ceil((limit - start) / delta);
    if (!(count <= kMaxHostElements))
      return EvalResult::fail("Range of " + std::to_string(count) +
                              " elements is too large");
    int64_t n = std::max<int64_t>(0, count);
    HostTensor out{in[0]->dtype, {n}, {}};
    for (int64_t i = 0; i < n; ++i)
      out.values.push_back(HostTensor::convert(start + i * delta, in[0]->dtype));
    return EvalResult::ok({std::move(out)});
  }

  if (op == "Unsqueeze" || op == "Squeeze") {
    std::optional<std::vector<int64_t>> axes =
        attrs.opset >= 13 ? intsInput(1) : attrs.getInts("axes");
    HostTensor out = *in[0];
    if (op == "Squeeze") {
      SmallVector<int64_t> shape;
      int64_t rank = out.shape.size();
      for (int64_t d = 0; d < rank; ++d) {
        bool listed = !axes ? out.shape[d] == 1
                            : llvm::any_of(*axes, [&](int64_t a) {
                                return normAxis(a, rank) == d;
                              });
        if (listed && out.shape[d] != 1)
          return EvalResult::fail("cannot squeeze dimension " + std::to_string(d) +
                                  " of size " + std::to_string(out.shape[d]));
        if (!listed)
          shape.push_back(out.shape[d]);
      }
      out.shape = shape;
      return EvalResult::ok({std::move(out)});
    }
    if (!axes)
      return EvalResult::fail("Unsqueeze without axes");
    int64_t rank = out.shape.size() + axes->size();
    std::vector<int64_t> norm;
    for (int64_t a : *axes) {
      auto n = normAxis(a, rank);
      if (!n)
        return EvalResult::fail("unsqueeze axis " + std::to_string(a) + " out of range");
      norm.push_back(*n);
    }
    llvm::sort(norm);
    for (int64_t a : norm)
      out.shape.insert(out.shape.begin() + a, 1);
    return EvalResult::ok({std::move(out)});
  }

  if (op == "Reshape") {
    HostTensor out = *in[0];
    if (auto err = resolveReshape(in[0]->shape, in[1]->asInts(),
                                  attrs.getInt("allowzero").value_or(0), out.shape))
      return EvalResult::fail(*err);
    return EvalResult::ok({std::move(out)});
  }

  if (op == "Flatten") {
    int64_t rank = in[0]->shape.size();
    // Flatten's axis is in [-r, r]; a negative one counts from the back.
    int64_t axisAttr = attrs.getInt("axis").value_or(1);
    auto axis = axisAttr < 0 ? normAxis(axisAttr, rank) : normAxis(axisAttr, rank + 1);
    if (!axis)
      return EvalResult::fail("axis out of range");
    int64_t outer = 1;
    for (int64_t d = 0; d < *axis; ++d)
      outer *= in[0]->shape[d];
    HostTensor out = *in[0];
    out.shape = {outer, outer ? in[0]->numel() / outer : 0};
    return EvalResult::ok({std::move(out)});
  }

  if (op == "Expand") {
    std::vector<int64_t> target = in[1]->asInts();
    SmallVector<int64_t> shape;
    if (!broadcastShapes(in[0]->shape, target, shape))
      return EvalResult::fail("cannot expand to the requested shape");
    if (cappedNumel(shape) > kMaxHostElements)
      return EvalResult::notFoldable();
    HostTensor zero{in[0]->dtype, shape, {}};
    zero.values.assign(zero.numel(), 0);
    return nary({in[0], &zero}, in[0]->dtype, [](ArrayRef<double> a) { return a[0]; });
  }

  // GPT-J's rotary table repeated over the batch.
  if (op == "Tile") {
    const HostTensor &x = *in[0];
    std::vector<int64_t> repeats = in[1]->asInts();
    if (repeats.size() != x.shape.size())
      return EvalResult::fail("Tile needs one repeat count per dimension");
    HostTensor out{x.dtype, {}, {}};
    for (auto [d, r] : llvm::enumerate(repeats)) {
      if (r < 0)
        return EvalResult::fail("negative repeat count");
      out.shape.push_back(x.shape[d] * r);
    }
    if (cappedNumel(out.shape) > kMaxHostElements)
      return EvalResult::notFoldable();
    SmallVector<int64_t> outStrides = stridesOf(out.shape), inStrides = stridesOf(x.shape);
    for (int64_t i = 0, n = out.numel(); i < n; ++i) {
      int64_t src = 0;
      for (size_t d = 0; d < out.shape.size(); ++d)
        src += ((i / outStrides[d]) % out.shape[d] % x.shape[d]) * inStrides[d];
      out.values.push_back(x.values[src]);
    }
    return EvalResult::ok({std::move(out)});
  }

  if (op == "Transpose") {
    std::vector<int64_t> perm = attrs.getInts("perm").value_or(std::vector<int64_t>());
    if (perm.empty())
      for (int64_t d = in[0]->shape.size() - 1; d >= 0; --d)
        perm.push_back(d);
    if (perm.size() != in[0]->shape.size())
      return EvalResult::fail("permutation does not match rank");
    return transpose(*in[0], perm);
  }

  if (op == "Concat")
    return concat(in, attrs.getInt("axis").value_or(0));

  if (op == "Gather")
    return gather(*in[0], *in[1], attrs.getInt("axis").value_or(0));

  if (op == "Slice") {
    if (attrs.opset < 10)
      return EvalResult::notFoldable();
    return slice(*in[0], in[1]->asInts(), in[2]->asInts(), intsInput(3), intsInput(4));
  }

  if (op == "Trilu") {
    const HostTensor &x = *in[0];
    if (x.shape.size() < 2)
      return EvalResult::fail("Trilu input must have rank >= 2");
    int64_t k = input(1) ? input(1)->asInt(0) : 0;
    bool upper = attrs.getInt("upper").value_or(1);
    HostTensor out = x;
    int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) {
      int64_t c = i % cols, r = (i / cols) % rows;
      bool keep = upper ? c - r >= k : c - r <= k;
      if (!keep)
        out.values[i] = 0;
    }
    return EvalResult::ok({std::move(out)});
  }

  if (op == "MatMul")
    return matmul(*in[0], *in[1]);

  if (op == "CumSum") {
    const HostTensor &x = *in[0];
    auto axis = normAxis(in[1]->asInt(0), x.shape.size());
    if (!axis)
      return EvalResult::fail("axis out of range");
    bool exclusive = attrs.getInt("exclusive").value_or(0);
    bool reverse = attrs.getInt("reverse").value_or(0);
    SmallVector<int64_t> strides = stridesOf(x.shape);
    HostTensor out = x;
    int64_t dim = x.shape[*axis], stride = strides[*axis];
    for (int64_t base = 0, n = x.numel(); base < n; ++base) {
      if ((base / stride) % dim != 0)
        continue;
      double acc = 0;
      for (int64_t j = 0; j < dim; ++j) {
        int64_t jj = reverse ? dim - 1 - j : j;
        int64_t idx = base + jj * stride;
        if (exclusive) {
          out.values[idx] = acc;
          acc += x.values[idx];
        } else {
          acc += x.values[idx];
          out.values[idx] = acc;
        }
      }
    }
    return EvalResult::ok({std::move(out)});
  }

  if (op == "GatherND" || op == "GatherElements") {
    EvalResult at = gatherOffsets(op, in[0]->shape, *in[1], attrs);
    if (at.kind != EvalResult::Folded)
      return at;
    HostTensor out{in[0]->dtype, at.outputs[0].shape, {}};
    for (double o : at.outputs[0].values)
      out.values.push_back(in[0]->values[static_cast<int64_t>(o)]);
    return EvalResult::ok({std::move(out)});
  }

  // Gemma-2's sliding-window positions.
  if (op == "Clip") {
    double lo = in.size() > 1 && in[1] ? in[1]->values.at(0) : -INFINITY;
    double hi = in.size() > 2 && in[2] ? in[2]->values.at(0) : INFINITY;
    return nary(in.take_front(1), in[0]->dtype,
                [lo, hi](ArrayRef<double> a) { return std::min(std::max(a[0], lo), hi); });
  }

  if (op == "Sign")
    return nary(in.take_front(1), in[0]->dtype,
                [](ArrayRef<double> a) { return double((a[0] > 0) - (a[0] < 0)); });

  // Hugging Face decoders build their causal masks with ScatterND (static
  // shapes make every operand a constant); BEiT its relative position index
  // with ScatterElements (the dynamo exporter's select_scatter).
  if (op == "ScatterND" || op == "ScatterElements") {
    EvalResult at = scatterTargets(op, in[0]->shape, *in[1], in[2]->shape, attrs);
    if (at.kind != EvalResult::Folded)
      return at;
    std::string reduction = attrs.getString("reduction").value_or("none");
    HostTensor out = *in[0];
    for (int64_t i = 0, n = in[2]->numel(); i < n; ++i) {
      double &o = out.values[static_cast<int64_t>(at.outputs[0].values[i])];
      double u = in[2]->values[i];
      o = reduction == "add"   ? o + u
          : reduction == "mul" ? o * u
          : reduction == "max" ? std::max(o, u)
          : reduction == "min" ? std::min(o, u)
                               : u;
      o = HostTensor::convert(o, out.dtype);
    }
    return EvalResult::ok({std::move(out)});
  }

  // BEiT's relative position index sums coordinates (aten::sum of a tensor
  // known now).
  if (op == "ReduceSum") {
    const HostTensor &x = *in[0];
    int64_t rank = x.shape.size();
    std::optional<std::vector<int64_t>> axes =
        attrs.opset >= 13 ? intsInput(1) : attrs.getInts("axes");
    if (!axes || axes->empty()) {
      if (attrs.getInt("noop_with_empty_axes").value_or(0))
        return EvalResult::ok({x});
      axes.emplace();
      for (int64_t d = 0; d < rank; ++d)
        axes->push_back(d);
    }
    SmallVector<bool> reduced(rank, false);
    for (int64_t a : *axes) {
      std::optional<int64_t> d = normAxis(a, rank);
      if (!d)
        return EvalResult::fail("axis " + std::to_string(a) + " out of range");
      reduced[*d] = true;
    }
    bool keep = attrs.getInt("keepdims").value_or(1);
    HostTensor out{x.dtype, {}, {}};
    SmallVector<int64_t> kept; // the result's shape with reduced dims as 1
    for (int64_t d = 0; d < rank; ++d) {
      kept.push_back(reduced[d] ? 1 : x.shape[d]);
      if (!reduced[d] || keep)
        out.shape.push_back(kept.back());
    }
    out.values.assign(cappedNumel(kept), 0.0);
    SmallVector<int64_t> strides = stridesOf(x.shape), keptStrides = stridesOf(kept);
    for (int64_t i = 0, n = x.numel(); i < n; ++i) {
      int64_t o = 0;
      for (int64_t d = 0; d < rank; ++d)
        if (!reduced[d])
          o += ((i / strides[d]) % x.shape[d]) * keptStrides[d];
      out.values[o] += x.values[i];
    }
    for (double &v : out.values)
      v = HostTensor::convert(v, x.dtype);
    return EvalResult::ok({std::move(out)});
  }

  return EvalResult::notFoldable();
}

} // namespace colo::onnx_import
