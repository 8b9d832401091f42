#include "ImportBase.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/StringSwitch.h"

#include <cctype>

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
  FailureOr<ReshapeOp> flat = createTyped<ReshapeOp>(
      RankedTensorType::get({type.getNumElements()}, type.getElementType()), data);
  if (failed(flat))
    return failure();
  Value at = ConstantOp::create(builder, loc, offsets.outputs[0].toAttr(&ctx));
  FailureOr<GatherOp> g = create<GatherOp>(flat->getResult(), at, builder.getI64IntegerAttr(0));
  if (failed(g))
    return failure();
  return g->getResult();
}

std::optional<std::string>
ImportBase::capture(llvm::function_ref<LogicalResult()> importOne) {
  std::string captured;
  nodeError.clear();
  LogicalResult result = success();
  {
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error && captured.empty())
        captured = d.str();
      return success();
    });
    result = importOne();
  }
  if (succeeded(result))
    return std::nullopt;
  return nodeError.empty() ? captured : nodeError;
}

} // namespace colo
