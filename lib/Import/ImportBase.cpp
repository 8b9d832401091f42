#include "ImportBase.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>
#include <cctype>
#include <cmath>

using namespace mlir;

namespace colo {

FailureOr<InputShape> parseInputShape(llvm::StringRef spec, MLIRContext &ctx) {
  llvm::SmallVector<llvm::StringRef> parts;
  spec.split(parts, 'x');
  InputShape shape;
  bool ok = !spec.empty();
  if (!parts.empty() && !parts.back().empty() && !std::isdigit(parts.back()[0])) {
    llvm::StringRef t = parts.pop_back_val();
    Builder b(&ctx);
    shape.elementType = llvm::StringSwitch<Type>(t)
                            .Case("f32", b.getF32Type())
                            .Case("f64", b.getF64Type())
                            .Case("f16", b.getF16Type())
                            .Case("bf16", b.getBF16Type())
                            .Case("i64", b.getI64Type())
                            .Case("i32", b.getI32Type())
                            .Case("i8", b.getI8Type())
                            .Case("i1", b.getI1Type())
                            .Default(Type());
    ok &= static_cast<bool>(shape.elementType);
  }
  for (llvm::StringRef p : parts) {
    int64_t d;
    ok &= !p.getAsInteger(10, d) && d > 0;
    shape.dims.push_back(d);
  }
  if (!ok)
    return emitError(UnknownLoc::get(&ctx))
           << "bad input shape '" << spec
           << "': expected dims joined by 'x' and an optional element type (f32, f64, "
              "f16, bf16, i64, i32, i8, i1), e.g. 2x16xi64 or 1x3x224x224";
  return shape;
}

LogicalResult ImportBase::inferTypes(Operation *op) {
  SmallVector<Type> types;
  auto iface = cast<InferTypeOpInterface>(op);
  if (failed(iface.inferReturnTypes(&ctx, op->getLoc(), op->getOperands(),
                                    op->getRawDictionaryAttrs(),
                                    op->getPropertiesStorage(), op->getRegions(),
                                    types)))
    return failure();
  for (auto [r, t] : llvm::zip(op->getResults(), types))
    r.setType(t);
  return verify(op, /*verifyRecursively=*/false);
}

FailureOr<Value> ImportBase::createUnary(llvm::StringRef mnemonic, Value x) {
  OperationState state(loc, ("colo." + mnemonic).str());
  state.addOperands(x);
  state.addTypes(x.getType());
  Operation *op = builder.create(state);
  if (!op->isRegistered()) {
    op->erase();
    return fail("colo has no '" + mnemonic + "' op");
  }
  if (failed(verify(op, /*verifyRecursively=*/false))) {
    op->erase();
    return failure();
  }
  return op->getResult(0);
}

FailureOr<Value> ImportBase::pool2d(bool max, Value x, ArrayRef<int64_t> kernel,
                                    ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                                    bool ceilMode, bool countIncludePad) {
  SmallVector<int64_t> padding(pads);
  bool padded = llvm::any_of(pads, [](int64_t p) { return p != 0; });
  auto shape = cast<RankedTensorType>(x.getType()).getShape();
  for (int i = 0; ceilMode && i < 2; ++i) {
    int64_t span = shape[2 + i] + padding[i] + padding[2 + i] - kernel[i];
    if (span < 0)
      break; // the op reports a window larger than the input
    int64_t out = (span + strides[i] - 1) / strides[i] + 1;
    // PyTorch's and ONNX's rule: no window starts in the trailing padding.
    if ((out - 1) * strides[i] >= shape[2 + i] + padding[i])
      --out;
    int64_t extra = (out - 1) * strides[i] + kernel[i] - (span + kernel[i]);
    if (extra <= 0)
      continue;
    // An average counts the given padding but not the rounding's.
    if (!max && countIncludePad && padded)
      return fail("ceil_mode with count_include_pad and padding is not supported");
    padding[2 + i] += extra;
  }
  // Without given padding, counting padding only counts the rounding's.
  UnitAttr countPad = countIncludePad && padded ? builder.getUnitAttr() : UnitAttr();
  auto k = builder.getDenseI64ArrayAttr(kernel), s = builder.getDenseI64ArrayAttr(strides),
       p = builder.getDenseI64ArrayAttr(padding);
  if (max) {
    FailureOr<MaxPool2dOp> op = create<MaxPool2dOp>(x, k, s, p, UnitAttr());
    return failed(op) ? FailureOr<Value>(failure()) : FailureOr<Value>(op->getResult());
  }
  FailureOr<AvgPool2dOp> op = create<AvgPool2dOp>(x, k, s, p, countPad);
  return failed(op) ? FailureOr<Value>(failure()) : FailureOr<Value>(op->getResult());
}

FailureOr<Value> ImportBase::hardSigmoid(Value x, double alpha, double beta, bool swish) {
  auto type = cast<RankedTensorType>(x.getType());
  auto scalar = [&](double v) -> Value {
    auto t = RankedTensorType::get({}, type.getElementType());
    return ConstantOp::create(builder, loc,
                              DenseElementsAttr::get(t, builder.getFloatAttr(t.getElementType(), v)));
  };
  FailureOr<MulOp> scaled = create<MulOp>(x, scalar(alpha));
  if (failed(scaled))
    return failure();
  FailureOr<AddOp> shifted = create<AddOp>(scaled->getResult(), scalar(beta));
  if (failed(shifted))
    return failure();
  FailureOr<ClampOp> gate = createTyped<ClampOp>(type, shifted->getResult(),
                                                 builder.getF64FloatAttr(0.0),
                                                 builder.getF64FloatAttr(1.0));
  if (failed(gate) || !swish)
    return failed(gate) ? FailureOr<Value>(failure()) : FailureOr<Value>(gate->getResult());
  FailureOr<MulOp> y = create<MulOp>(x, gate->getResult());
  return failed(y) ? FailureOr<Value>(failure()) : FailureOr<Value>(y->getResult());
}

FailureOr<Value> ImportBase::clamp(Value x, std::optional<double> lo, std::optional<double> hi) {
  auto type = cast<RankedTensorType>(x.getType());
  auto result = [](auto op) -> FailureOr<Value> {
    return failed(op) ? FailureOr<Value>(failure()) : FailureOr<Value>(op->getResult());
  };
  if (isa<FloatType>(type.getElementType())) {
    if (lo == 0.0 && !hi)
      return result(createTyped<ReluOp>(type, x));
    return result(createTyped<ClampOp>(type, x, builder.getF64FloatAttr(lo.value_or(-INFINITY)),
                                       builder.getF64FloatAttr(hi.value_or(INFINITY))));
  }
  auto bound = [&](double v) -> Value {
    auto t = RankedTensorType::get({}, type.getElementType());
    return ConstantOp::create(
        builder, loc, DenseElementsAttr::get(t, builder.getIntegerAttr(t.getElementType(),
                                                                       static_cast<int64_t>(v))));
  };
  Value y = x;
  if (lo) {
    FailureOr<MaximumOp> m = create<MaximumOp>(y, bound(*lo));
    if (failed(m))
      return failure();
    y = m->getResult();
  }
  if (hi) {
    FailureOr<MinimumOp> m = create<MinimumOp>(y, bound(*hi));
    if (failed(m))
      return failure();
    y = m->getResult();
  }
  return y;
}

FailureOr<Value> ImportBase::gatherAt(StringRef op, Value data,
                                      const onnx_import::HostTensor &indices,
                                      const onnx_import::NodeAttrs &attrs) {
  auto type = cast<RankedTensorType>(data.getType());
  onnx_import::EvalResult offsets =
      onnx_import::gatherOffsets(op, type.getShape(), indices, attrs);
  if (offsets.kind != onnx_import::EvalResult::Folded)
    return fail(offsets.error);
  return gatherFlat(data, offsets.outputs[0]);
}

FailureOr<Value> ImportBase::gatherFlat(Value data, const onnx_import::HostTensor &offsets) {
  auto type = cast<RankedTensorType>(data.getType());
  Value flat = data;
  if (type.getRank() != 1) {
    FailureOr<ReshapeOp> r = createTyped<ReshapeOp>(
        RankedTensorType::get({type.getNumElements()}, type.getElementType()), data);
    if (failed(r))
      return failure();
    flat = r->getResult();
  }
  Value at = ConstantOp::create(builder, loc, offsets.toAttr(&ctx));
  FailureOr<GatherOp> g = create<GatherOp>(flat, at, builder.getI64IntegerAttr(0));
  if (failed(g))
    return failure();
  return g->getResult();
}

FailureOr<Value> ImportBase::scatterAt(StringRef op, Value data,
                                       const onnx_import::HostTensor &indices, Value updates,
                                       const onnx_import::NodeAttrs &attrs) {
  auto type = cast<RankedTensorType>(data.getType());
  auto updatesType = cast<RankedTensorType>(updates.getType());
  onnx_import::EvalResult targets = onnx_import::scatterTargets(
      op, type.getShape(), indices, updatesType.getShape(), attrs);
  if (targets.kind != onnx_import::EvalResult::Folded)
    return fail(targets.error);
  std::string reduction = attrs.getString("reduction").value_or("none");
  if (reduction == "none") {
    std::vector<int64_t> at;
    for (double t : targets.outputs[0].values)
      at.push_back(static_cast<int64_t>(t));
    return scatterFlat(data, at, updates);
  }
  if (reduction != "add" || !isa<FloatType>(type.getElementType()))
    return fail("reduction '" + reduction + "' into a run-time " +
                (reduction == "add" ? "integer " : "") + "tensor is not supported");
  // data + every update added at its target (repeated targets accumulate).
  int64_t n = type.getNumElements(), m = updatesType.getNumElements();
  Type elem = type.getElementType();
  FailureOr<ReshapeOp> flatUpdates =
      createTyped<ReshapeOp>(RankedTensorType::get({m}, elem), updates);
  if (failed(flatUpdates))
    return failure();
  onnx_import::HostTensor at = targets.outputs[0];
  at.shape = {m};
  Value targetsAt = ConstantOp::create(builder, loc, at.toAttr(&ctx));
  FailureOr<ScatterAddOp> added =
      createTyped<ScatterAddOp>(RankedTensorType::get({n}, elem), flatUpdates->getResult(),
                                targetsAt, builder.getI64IntegerAttr(0));
  if (failed(added))
    return failure();
  FailureOr<ReshapeOp> shaped = createTyped<ReshapeOp>(type, added->getResult());
  if (failed(shaped))
    return failure();
  FailureOr<AddOp> sum = create<AddOp>(data, shaped->getResult());
  if (failed(sum))
    return failure();
  return sum->getResult();
}

FailureOr<Value> ImportBase::scatterFlat(Value data, ArrayRef<int64_t> targets, Value updates) {
  auto type = cast<RankedTensorType>(data.getType());
  int64_t n = type.getNumElements(), m = targets.size();
  if (cast<RankedTensorType>(updates.getType()).getNumElements() != m)
    return fail("the updates do not match the elements written");
  onnx_import::HostTensor from{onnx_import::kInt64, {n}, {}};
  for (int64_t i = 0; i < n; ++i)
    from.values.push_back(i);
  for (int64_t i = 0; i < m; ++i)
    from.values[targets[i]] = n + i;
  Type elem = type.getElementType();
  FailureOr<ReshapeOp> flatData =
      createTyped<ReshapeOp>(RankedTensorType::get({n}, elem), data);
  FailureOr<ReshapeOp> flatUpdates =
      createTyped<ReshapeOp>(RankedTensorType::get({m}, elem), updates);
  if (failed(flatData) || failed(flatUpdates))
    return failure();
  FailureOr<ConcatOp> joined =
      create<ConcatOp>(ValueRange{flatData->getResult(), flatUpdates->getResult()},
                       builder.getI64IntegerAttr(0));
  if (failed(joined))
    return failure();
  FailureOr<Value> picked = gatherFlat(joined->getResult(), from);
  if (failed(picked))
    return failure();
  FailureOr<ReshapeOp> result = createTyped<ReshapeOp>(type, *picked);
  if (failed(result))
    return failure();
  return result->getResult();
}

std::vector<std::vector<double>> adaptiveAverageWeights(int64_t in, int64_t out) {
  std::vector<std::vector<double>> m(out, std::vector<double>(in, 0.0));
  for (int64_t i = 0; i < out; ++i) {
    int64_t start = (i * in) / out, end = ((i + 1) * in + out - 1) / out;
    for (int64_t j = start; j < end; ++j)
      m[i][j] = 1.0 / static_cast<double>(end - start);
  }
  return m;
}

FailureOr<std::vector<std::vector<double>>>
resizeWeights(int64_t in, int64_t out, double scale, StringRef mode,
              StringRef coordinates, StringRef nearest, std::string &error) {
  std::vector<std::vector<double>> m(out, std::vector<double>(in, 0.0));
  for (int64_t i = 0; i < out; ++i) {
    double x; // the output element's position in the input
    if (coordinates == "half_pixel")
      x = (i + 0.5) / scale - 0.5;
    else if (coordinates == "pytorch_half_pixel")
      x = out > 1 ? (i + 0.5) / scale - 0.5 : 0.0;
    else if (coordinates == "align_corners")
      x = out > 1 ? i * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
    else if (coordinates == "asymmetric")
      x = i / scale;
    else {
      error = "coordinate_transformation_mode '" + coordinates.str() + "' is not supported";
      return failure();
    }
    if (mode == "nearest") {
      double r = nearest == "floor"               ? std::floor(x)
                 : nearest == "ceil"              ? std::ceil(x)
                 : nearest == "round_prefer_ceil" ? std::floor(x + 0.5)
                                                  : std::ceil(x - 0.5);
      if (nearest != "floor" && nearest != "ceil" && nearest != "round_prefer_ceil" &&
          nearest != "round_prefer_floor") {
        error = "nearest_mode '" + nearest.str() + "' is not supported";
        return failure();
      }
      m[i][std::clamp<int64_t>(static_cast<int64_t>(r), 0, in - 1)] = 1.0;
    } else if (mode == "linear") {
      x = std::clamp(x, 0.0, static_cast<double>(in - 1));
      int64_t lo = static_cast<int64_t>(std::floor(x)), hi = std::min(lo + 1, in - 1);
      m[i][lo] += 1.0 - (x - lo);
      m[i][hi] += x - lo;
    } else {
      error = "mode '" + mode.str() + "' is not supported (linear and nearest are)";
      return failure();
    }
  }
  return m;
}

FailureOr<Value> ImportBase::mixAxis(Value x, int64_t axis,
                                     const std::vector<std::vector<double>> &m) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank(), in = type.getDimSize(axis), out = m.size();
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      perm.push_back(d);
  perm.push_back(axis);
  bool moved = axis != rank - 1;
  auto transposed = [&](Value v, ArrayRef<int64_t> p) -> FailureOr<Value> {
    FailureOr<TransposeOp> t = create<TransposeOp>(v, builder.getDenseI64ArrayAttr(p));
    if (failed(t))
      return failure();
    return t->getResult();
  };
  Value last = x;
  if (moved) {
    FailureOr<Value> t = transposed(x, perm);
    if (failed(t))
      return failure();
    last = *t;
  }
  // The matrix transposed, [in, out], in x's element type.
  auto mt = RankedTensorType::get({in, out}, type.getElementType());
  SmallVector<Attribute> values;
  for (int64_t j = 0; j < in; ++j)
    for (int64_t i = 0; i < out; ++i)
      values.push_back(builder.getFloatAttr(type.getElementType(), m[i][j]));
  Value weights = ConstantOp::create(builder, loc, DenseElementsAttr::get(mt, values));
  FailureOr<MatmulOp> mixed = create<MatmulOp>(last, weights);
  if (failed(mixed))
    return failure();
  if (!moved)
    return mixed->getResult();
  SmallVector<int64_t> inverse(rank);
  for (int64_t d = 0; d < rank; ++d)
    inverse[perm[d]] = d;
  return transposed(mixed->getResult(), inverse);
}

std::optional<std::string>
ImportBase::capture(llvm::function_ref<LogicalResult()> importOne) {
  firstDiagnostic.clear();
  nodeError.clear();
  LogicalResult result = success();
  {
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error && firstDiagnostic.empty())
        firstDiagnostic = d.str();
      return success();
    });
    result = importOne();
  }
  if (succeeded(result))
    return std::nullopt;
  return nodeError.empty() ? firstDiagnostic : nodeError;
}

} // namespace colo
