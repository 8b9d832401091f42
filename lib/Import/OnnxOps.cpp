// Translations of ONNX ops whose inputs are not all known at import time.
#include "OnnxImporterImpl.h"
#include "colo/Import/OnnxImporter.h"

using namespace mlir;

namespace colo::onnx_import {

namespace {
RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

std::optional<int64_t> normAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

template <typename T>
std::string join(ArrayRef<T> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

/// The single result of an op that may have failed to build.
template <typename OpTy>
FailureOr<Value> valueOf(FailureOr<OpTy> op) {
  if (failed(op))
    return failure();
  return op->getResult();
}

LogicalResult setValue(FailureOr<Value> v, Importer::Outputs &outs) {
  if (failed(v))
    return failure();
  outs.push_back(Val{*v, {}, {}});
  return success();
}

template <typename OpTy>
LogicalResult setResult(FailureOr<OpTy> op, Importer::Outputs &outs) {
  if (failed(op))
    return failure();
  for (Value r : (*op)->getResults())
    outs.push_back(Val{r, {}, {}});
  return success();
}
} // namespace

LogicalResult Importer::importIdentity(const onnx::NodeProto &, Inputs ins,
                                       Outputs &outs) {
  outs.push_back(*ins[0]);
  return success();
}

LogicalResult Importer::importUnary(const onnx::NodeProto &node, Inputs ins,
                                    Outputs &outs) {
  static const llvm::StringMap<llvm::StringRef> mnemonics = {
      {"Neg", "neg"}, {"Exp", "exp"}, {"Log", "log"}, {"Sqrt", "sqrt"},
      {"Reciprocal", "reciprocal"}, {"Tanh", "tanh"}, {"Erf", "erf"},
      {"Sigmoid", "sigmoid"}, {"Relu", "relu"}, {"Cos", "cos"}, {"Sin", "sin"},
      {"Abs", "abs"}};
  auto it = mnemonics.find(node.op_type());
  if (it == mnemonics.end())
    return fail("unsupported op");
  return setValue(createUnary(it->second, use(*ins[0])), outs);
}

/// A host operand of a binary op takes the element type of the other side,
/// as exporters rely on (Pow(x, 2) with an integer 2, say).
static void matchHostType(Val &host, Val &other) {
  if (host.host && other.value) {
    Type et = typeOf(other.value).getElementType();
    for (int32_t dt : {kFloat, kDouble, kFloat16, kBFloat16, kInt64, kInt32})
      if (elementTypeOf(et.getContext(), dt) == et && host.host->dtype != dt) {
        host.host->dtype = dt;
        for (double &v : host.host->values)
          v = HostTensor::convert(v, dt);
        host.value = {};
      }
  }
}

LogicalResult Importer::importBinary(const onnx::NodeProto &node, Inputs ins,
                                     Outputs &outs) {
  const std::string &op = node.op_type();
  // Max and Min take one or more inputs: folded left to right.
  bool variadic = op == "Max" || op == "Min";
  if (variadic && ins.size() == 1 && ins[0]) {
    outs.push_back(*ins[0]);
    return success();
  }
  if (variadic && ins.size() > 2) {
    if (llvm::is_contained(ins, nullptr))
      return fail("an input of " + op + " is missing");
    Val acc = *ins[0];
    for (Val *next : ins.drop_front()) {
      llvm::SmallVector<Val, 1> step;
      Val *pair[] = {&acc, next};
      if (failed(importBinary(node, pair, step)))
        return failure();
      acc = step.front();
    }
    outs.push_back(acc);
    return success();
  }
  if (ins.size() != 2 || !ins[0] || !ins[1])
    return fail("expected exactly two inputs, got " + std::to_string(ins.size()));
  Val lhsVal = *ins[0], rhsVal = *ins[1];
  matchHostType(lhsVal, rhsVal);
  matchHostType(rhsVal, lhsVal);
  Value l = use(lhsVal), r = use(rhsVal);
  if (op == "Add") return setResult(create<AddOp>(l, r), outs);
  if (op == "Sub") return setResult(create<SubOp>(l, r), outs);
  if (op == "Mul") return setResult(create<MulOp>(l, r), outs);
  if (op == "Div") return setResult(create<DivOp>(l, r), outs);
  if (op == "Pow") return setResult(create<PowOp>(l, r), outs);
  if (op == "Max") return setResult(create<MaximumOp>(l, r), outs);
  if (op == "Min") return setResult(create<MinimumOp>(l, r), outs);
  return fail("unsupported op");
}

LogicalResult Importer::importCompare(const onnx::NodeProto &node, Inputs ins,
                                      Outputs &outs) {
  Val lhsVal = *ins[0], rhsVal = *ins[1];
  matchHostType(lhsVal, rhsVal);
  matchHostType(rhsVal, lhsVal);
  static const std::pair<llvm::StringRef, ComparePredicate> preds[] = {
      {"Equal", ComparePredicate::eq}, {"Less", ComparePredicate::lt},
      {"LessOrEqual", ComparePredicate::le}, {"Greater", ComparePredicate::gt},
      {"GreaterOrEqual", ComparePredicate::ge}};
  for (auto [name, pred] : preds)
    if (node.op_type() == name)
      return setResult(create<CompareOp>(ComparePredicateAttr::get(&ctx, pred),
                                         use(lhsVal), use(rhsVal)),
                       outs);
  return fail("unsupported op");
}

LogicalResult Importer::importWhere(const onnx::NodeProto &, Inputs ins,
                                    Outputs &outs) {
  Val t = *ins[1], f = *ins[2];
  matchHostType(t, f);
  matchHostType(f, t);
  return setResult(create<SelectOp>(use(*ins[0]), use(t), use(f)), outs);
}

LogicalResult Importer::importCast(const onnx::NodeProto &node, Inputs ins,
                                   Outputs &outs) {
  Value x = use(*ins[0]);
  Type et;
  if (node.op_type() == "CastLike") {
    et = ins[1]->value ? typeOf(ins[1]->value).getElementType()
                       : elementTypeOf(&ctx, ins[1]->host->dtype);
  } else {
    int64_t to = attrs(node).getInt("to").value_or(0);
    et = elementTypeOf(&ctx, to);
    if (!et)
      return fail("unsupported data type " + dtypeName(to).str());
  }
  auto type = RankedTensorType::get(typeOf(x).getShape(), et);
  if (type == x.getType()) {
    outs.push_back(Val{x, {}, {}});
    return success();
  }
  return setResult(createTyped<ConvertOp>(type, x), outs);
}

/// HardSigmoid(alpha, beta) and HardSwish (alpha 1/6, beta 1/2, times x).
LogicalResult Importer::importHardSigmoid(const onnx::NodeProto &node, Inputs ins,
                                          Outputs &outs) {
  NodeAttrs at = attrs(node);
  bool swish = node.op_type() == "HardSwish";
  FailureOr<Value> y =
      hardSigmoid(use(*ins[0]), swish ? 1.0 / 6 : at.getFloat("alpha").value_or(0.2),
                  swish ? 0.5 : at.getFloat("beta").value_or(0.5), swish);
  if (failed(y))
    return failure();
  outs.push_back(Val{*y, {}, {}});
  return success();
}

LogicalResult Importer::importClip(const onnx::NodeProto &node, Inputs ins,
                                   Outputs &outs) {
  auto bound = [&](size_t i) -> FailureOr<std::optional<double>> {
    if (i >= ins.size() || !ins[i])
      return std::optional<double>();
    if (!ins[i]->host)
      return fail("Clip bounds must be constants");
    return std::optional<double>(ins[i]->host->values[0]);
  };
  FailureOr<std::optional<double>> lo = bound(1), hi = bound(2);
  if (failed(lo) || failed(hi))
    return failure();
  return setValue(clamp(use(*ins[0]), *lo, *hi), outs);
}

LogicalResult Importer::importGelu(const onnx::NodeProto &node, Inputs ins,
                                   Outputs &outs) {
  std::string approx = attrs(node).getString("approximate").value_or("none");
  if (approx != "none" && approx != "tanh")
    return fail("unsupported GELU approximation '" + approx + "'");
  Value x = use(*ins[0]);
  auto kind = approx == "tanh" ? GeluApproximation::tanh : GeluApproximation::none;
  return setResult(createTyped<GeluOp>(x.getType(), x,
                                       GeluApproximationAttr::get(&ctx, kind)),
                   outs);
}

/// CumSum of a run-time tensor (the host folds constant ones): RoBERTa's
/// position ids from the ids.
LogicalResult Importer::importCumSum(const onnx::NodeProto &node, Inputs ins, Outputs &outs) {
  NodeAttrs at = attrs(node);
  FailureOr<std::vector<int64_t>> axis = constInts(ins[1], "CumSum axis");
  if (failed(axis))
    return failure();
  if (axis->size() != 1)
    return fail("CumSum axis must be one number");
  auto flag = [&](const char *name) {
    return at.getInt(name).value_or(0) ? builder.getUnitAttr() : UnitAttr();
  };
  return setResult(create<CumSumOp>(use(*ins[0]), builder.getI64IntegerAttr(axis->front()),
                                    flag("exclusive"), flag("reverse")),
                   outs);
}

LogicalResult Importer::importSoftmax(const onnx::NodeProto &node, Inputs ins,
                                      Outputs &outs) {
  Value x = use(*ins[0]);
  int64_t rank = typeOf(x).getRank();
  auto axis = normAxis(attrs(node).getInt("axis").value_or(-1), rank);
  if (!axis)
    return fail("axis out of range for rank " + std::to_string(rank));
  IntegerAttr a = builder.getI64IntegerAttr(*axis);
  if (node.op_type() == "LogSoftmax")
    return setResult(createTyped<LogSoftmaxOp>(x.getType(), x, a), outs);
  return setResult(createTyped<SoftmaxOp>(x.getType(), x, a), outs);
}

/// ONNX MatMul promotes 1-D operands to matrices and drops the added dims.
LogicalResult Importer::importMatMul(const onnx::NodeProto &, Inputs ins,
                                     Outputs &outs) {
  Value a = use(*ins[0]), b = use(*ins[1]);
  RankedTensorType at = typeOf(a), bt = typeOf(b);
  auto reshape = [&](Value v, ArrayRef<int64_t> shape) -> FailureOr<Value> {
    auto r = createTyped<ReshapeOp>(
        RankedTensorType::get(shape, typeOf(v).getElementType()), v);
    return valueOf(r);
  };
  bool aVec = at.getRank() == 1, bVec = bt.getRank() == 1;
  if (aVec) {
    auto r = reshape(a, {1, at.getDimSize(0)});
    if (failed(r)) return failure();
    a = *r;
  }
  if (bVec) {
    auto r = reshape(b, {bt.getDimSize(0), 1});
    if (failed(r)) return failure();
    b = *r;
  }
  auto mm = create<MatmulOp>(a, b);
  if (failed(mm))
    return failure();
  Value y = mm->getResult();
  if (aVec || bVec) {
    SmallVector<int64_t> shape(typeOf(y).getShape());
    if (bVec) shape.pop_back();
    if (aVec) shape.erase(shape.end() - (bVec ? 1 : 2));
    auto r = reshape(y, shape);
    if (failed(r)) return failure();
    y = *r;
  }
  outs.push_back(Val{y, {}, {}});
  return success();
}

LogicalResult Importer::importGemm(const onnx::NodeProto &node, Inputs ins,
                                   Outputs &outs) {
  NodeAttrs at = attrs(node);
  Value a = use(*ins[0]), b = use(*ins[1]);
  auto transpose = [&](Value v) -> FailureOr<Value> {
    auto t = create<TransposeOp>(v, builder.getDenseI64ArrayAttr({1, 0}));
    return valueOf(t);
  };
  if (typeOf(a).getRank() != 2 || typeOf(b).getRank() != 2)
    return fail("Gemm operands must be matrices");
  if (at.getInt("transA").value_or(0)) {
    auto t = transpose(a);
    if (failed(t)) return failure();
    a = *t;
  }
  if (at.getInt("transB").value_or(0)) {
    auto t = transpose(b);
    if (failed(t)) return failure();
    b = *t;
  }
  auto mm = create<MatmulOp>(a, b);
  if (failed(mm))
    return failure();
  Value y = mm->getResult();
  auto scale = [&](Value v, double s) -> FailureOr<Value> {
    if (s == 1.0)
      return v;
    Value c = ConstantOp::create(
        builder, loc,
        DenseElementsAttr::get(RankedTensorType::get({}, typeOf(v).getElementType()),
                               APFloat(static_cast<float>(s))));
    auto m = create<MulOp>(v, c);
    return valueOf(m);
  };
  auto scaled = scale(y, at.getFloat("alpha").value_or(1.0));
  if (failed(scaled))
    return failure();
  y = *scaled;
  if (ins.size() > 2 && ins[2]) {
    auto c = scale(use(*ins[2]), at.getFloat("beta").value_or(1.0));
    if (failed(c))
      return failure();
    auto add = create<AddOp>(y, *c);
    if (failed(add))
      return failure();
    y = add->getResult();
  }
  outs.push_back(Val{y, {}, {}});
  return success();
}

/// Explicit pads from ONNX's auto_pad for one spatial dimension.
static std::pair<int64_t, int64_t> autoPad(llvm::StringRef mode, int64_t in,
                                           int64_t kernel, int64_t stride,
                                           int64_t dilation) {
  int64_t out = (in + stride - 1) / stride;
  int64_t total = std::max<int64_t>(0, (out - 1) * stride + (kernel - 1) * dilation + 1 - in);
  if (mode == "SAME_LOWER")
    return {total - total / 2, total / 2};
  return {total / 2, total - total / 2};
}

/// Pads, strides and dilations of a 2-D window op in colo's order.
static LogicalResult windowAttrs(Importer &im, const onnx::NodeProto &node,
                                 RankedTensorType in, ArrayRef<int64_t> kernel,
                                 SmallVectorImpl<int64_t> &strides,
                                 SmallVectorImpl<int64_t> &pads,
                                 SmallVectorImpl<int64_t> &dilations) {
  NodeAttrs at = im.attrs(node);
  auto s = at.getInts("strides").value_or(std::vector<int64_t>{1, 1});
  auto d = at.getInts("dilations").value_or(std::vector<int64_t>{1, 1});
  auto p = at.getInts("pads").value_or(std::vector<int64_t>{0, 0, 0, 0});
  if (s.size() != 2 || d.size() != 2 || p.size() != 4)
    return im.fail("only 2-D windows are supported (strides " + join<int64_t>(s) +
                   ", pads " + join<int64_t>(p) + ")");
  std::string mode = at.getString("auto_pad").value_or("NOTSET");
  if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
    for (int i = 0; i < 2; ++i) {
      auto [lo, hi] = autoPad(mode, in.getDimSize(2 + i), kernel[i], s[i], d[i]);
      p[i] = lo;
      p[i + 2] = hi;
    }
  } else if (mode == "VALID") {
    p = {0, 0, 0, 0};
  } else if (mode != "NOTSET") {
    return im.fail("unsupported auto_pad '" + mode + "'");
  }
  strides.assign(s.begin(), s.end());
  dilations.assign(d.begin(), d.end());
  // ONNX pads are [top, left, bottom, right] as colo's.
  pads.assign(p.begin(), p.end());
  return success();
}

LogicalResult Importer::importConv(const onnx::NodeProto &node, Inputs ins,
                                   Outputs &outs) {
  Value x = use(*ins[0]), w = use(*ins[1]);
  if (typeOf(x).getRank() != 4 || typeOf(w).getRank() != 4)
    return fail("only 2-D convolution is supported, input is " +
                std::to_string(typeOf(x).getRank()) + "-D");
  SmallVector<int64_t> strides, pads, dilations;
  if (failed(windowAttrs(*this, node, typeOf(x), typeOf(w).getShape().drop_front(2),
                         strides, pads, dilations)))
    return failure();
  Value bias = ins.size() > 2 && ins[2] ? use(*ins[2]) : Value();
  return setResult(create<Conv2dOp>(x, w, bias, builder.getDenseI64ArrayAttr(strides),
                                    builder.getDenseI64ArrayAttr(pads),
                                    builder.getDenseI64ArrayAttr(dilations),
                                    builder.getI64IntegerAttr(
                                        attrs(node).getInt("group").value_or(1))),
                   outs);
}

LogicalResult Importer::importBatchNorm(const onnx::NodeProto &node, Inputs ins,
                                        Outputs &outs) {
  NodeAttrs at = attrs(node);
  if (ins.size() != 5)
    return fail("expected 5 inputs, got " + std::to_string(ins.size()));
  Value x = use(*ins[0]);
  Value params[4];
  for (int i = 0; i < 4; ++i)
    params[i] = use(*ins[i + 1]);
  bool training = at.getInt("training_mode").value_or(0);
  // ONNX's momentum weighs the running value; PyTorch's weighs the batch.
  double momentum = 1.0 - at.getFloat("momentum").value_or(0.9);
  return setResult(createTyped<BatchNormOp>(
                       x.getType(), params[2].getType(), params[3].getType(), x,
                       params[0], params[1], params[2], params[3],
                       builder.getF64FloatAttr(at.getFloat("epsilon").value_or(1e-5)),
                       builder.getF64FloatAttr(momentum),
                       training ? builder.getUnitAttr() : UnitAttr(), FlatSymbolRefAttr(),
                       DenseI16ArrayAttr()),
                   outs);
}

LogicalResult Importer::importLayerNorm(const onnx::NodeProto &node, Inputs ins,
                                        Outputs &outs) {
  NodeAttrs at = attrs(node);
  Value x = use(*ins[0]);
  auto axis = normAxis(at.getInt("axis").value_or(-1), typeOf(x).getRank());
  if (!axis)
    return fail("axis out of range");
  Value scale = ins.size() > 1 && ins[1] ? use(*ins[1]) : Value();
  Value bias = ins.size() > 2 && ins[2] ? use(*ins[2]) : Value();
  return setResult(createTyped<LayerNormOp>(
                       x.getType(), x, scale, bias, builder.getI64IntegerAttr(*axis),
                       builder.getF64FloatAttr(at.getFloat("epsilon").value_or(1e-5))),
                   outs);
}

LogicalResult Importer::importDropout(const onnx::NodeProto &node, Inputs ins,
                                      Outputs &outs) {
  double ratio = 0.5;
  if (ins.size() > 1 && ins[1]) {
    if (!ins[1]->host)
      return fail("dropout ratio must be a constant");
    ratio = ins[1]->host->values[0];
  }
  bool training = false;
  if (ins.size() > 2 && ins[2]) {
    if (!ins[2]->host)
      return fail("dropout training_mode must be a constant");
    training = ins[2]->host->values[0] != 0;
  }
  Value x = use(*ins[0]);
  if (!training || ratio == 0) {
    outs.push_back(Val{x, {}, {}});
    return success();
  }
  return setResult(createTyped<DropoutOp>(x.getType(), x, builder.getF64FloatAttr(ratio)),
                   outs);
}

LogicalResult Importer::importPool(const onnx::NodeProto &node, Inputs ins,
                                   Outputs &outs) {
  NodeAttrs at = attrs(node);
  Value x = use(*ins[0]);
  if (typeOf(x).getRank() != 4)
    return fail("only 2-D pooling is supported");
  auto kernel = at.getInts("kernel_shape").value_or(std::vector<int64_t>());
  if (kernel.size() != 2)
    return fail("kernel_shape must have 2 entries, got " + join<int64_t>(kernel));
  SmallVector<int64_t> strides, pads, dilations;
  if (failed(windowAttrs(*this, node, typeOf(x), kernel, strides, pads, dilations)))
    return failure();
  if (dilations[0] != 1 || dilations[1] != 1)
    return fail("dilated pooling is not supported");
  bool max = node.op_type() == "MaxPool";
  if (max && node.output_size() > 1 && !node.output(1).empty())
    return fail("the Indices output of MaxPool is not supported");
  return setValue(pool2d(max, x, kernel, strides, pads, at.getInt("ceil_mode").value_or(0),
                         at.getInt("count_include_pad").value_or(0)),
                  outs);
}

LogicalResult Importer::importGlobalAveragePool(const onnx::NodeProto &, Inputs ins,
                                                Outputs &outs) {
  Value x = use(*ins[0]);
  SmallVector<int64_t> dims;
  for (int64_t d = 2; d < typeOf(x).getRank(); ++d)
    dims.push_back(d);
  return setResult(create<ReduceMeanOp>(x, builder.getDenseI64ArrayAttr(dims),
                                        builder.getUnitAttr()),
                   outs);
}

LogicalResult Importer::importReduce(const onnx::NodeProto &node, Inputs ins,
                                     Outputs &outs) {
  NodeAttrs at = attrs(node);
  Value x = use(*ins[0]);
  int64_t rank = typeOf(x).getRank();
  bool axesAsInput = opset >= 18 || node.op_type() == "ReduceSum";
  std::optional<std::vector<int64_t>> axes;
  if (axesAsInput && ins.size() > 1 && ins[1]) {
    FailureOr<std::vector<int64_t>> a = constInts(ins[1], "axes");
    if (failed(a))
      return failure();
    axes = *a;
  } else if (!axesAsInput) {
    axes = at.getInts("axes");
  }
  if (!axes || axes->empty()) {
    if (at.getInt("noop_with_empty_axes").value_or(0)) {
      outs.push_back(Val{x, {}, {}});
      return success();
    }
    axes = std::vector<int64_t>();
    for (int64_t d = 0; d < rank; ++d)
      axes->push_back(d);
  }
  SmallVector<int64_t> dims;
  for (int64_t a : *axes) {
    auto n = normAxis(a, rank);
    if (!n)
      return fail("axis " + std::to_string(a) + " out of range for rank " +
                  std::to_string(rank));
    dims.push_back(*n);
  }
  llvm::sort(dims);
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  auto d = builder.getDenseI64ArrayAttr(dims);
  UnitAttr keep = at.getInt("keepdims").value_or(1) ? builder.getUnitAttr() : UnitAttr();
  const std::string &op = node.op_type();
  if (op == "ReduceMean") return setResult(create<ReduceMeanOp>(x, d, keep), outs);
  if (op == "ReduceSum") return setResult(create<ReduceSumOp>(x, d, keep), outs);
  if (op == "ReduceMax") return setResult(create<ReduceMaxOp>(x, d, keep), outs);
  return fail("unsupported op");
}

LogicalResult Importer::importReshape(const onnx::NodeProto &node, Inputs ins,
                                      Outputs &outs) {
  // Reshape-like ops on a runtime value: the evaluator computes the result
  // shape on a host tensor that has the shape but holds no values (these ops
  // never read them), then a reshape is built.
  Value x = use(*ins[0]);
  RankedTensorType t = typeOf(x);
  HostTensor shapeOnly{kFloat, SmallVector<int64_t>(t.getShape()), {}};
  SmallVector<const HostTensor *> hostIns{&shapeOnly};
  for (size_t i = 1; i < ins.size(); ++i) {
    if (ins[i] && !ins[i]->host)
      return fail("the target shape must be a constant known at import time");
    hostIns.push_back(ins[i] ? &*ins[i]->host : nullptr);
  }
  EvalResult r = evaluate(node.op_type(), hostIns, attrs(node));
  if (r.kind != EvalResult::Folded)
    return fail(r.kind == EvalResult::Error ? r.error : "unsupported op");
  auto type = RankedTensorType::get(r.outputs[0].shape, t.getElementType());
  return setResult(createTyped<ReshapeOp>(type, x), outs);
}

LogicalResult Importer::importTranspose(const onnx::NodeProto &node, Inputs ins,
                                        Outputs &outs) {
  Value x = use(*ins[0]);
  std::vector<int64_t> perm = attrs(node).getInts("perm").value_or(std::vector<int64_t>());
  if (perm.empty())
    for (int64_t d = typeOf(x).getRank() - 1; d >= 0; --d)
      perm.push_back(d);
  return setResult(create<TransposeOp>(x, builder.getDenseI64ArrayAttr(perm)), outs);
}

LogicalResult Importer::importConcat(const onnx::NodeProto &node, Inputs ins,
                                     Outputs &outs) {
  SmallVector<Value> vals;
  for (Val *v : ins)
    if (v)
      vals.push_back(use(*v));
  return setResult(create<ConcatOp>(vals, builder.getI64IntegerAttr(
                                              attrs(node).getInt("axis").value_or(0))),
                   outs);
}

LogicalResult Importer::importSlice(const onnx::NodeProto &node, Inputs ins,
                                    Outputs &outs) {
  Value x = use(*ins[0]);
  RankedTensorType t = typeOf(x);
  int64_t rank = t.getRank();
  auto starts = constInts(ins[1], "Slice starts");
  auto ends = constInts(ins[2], "Slice ends");
  if (failed(starts) || failed(ends))
    return failure();
  std::vector<int64_t> axes, steps(starts->size(), 1);
  if (ins.size() > 3 && ins[3]) {
    auto a = constInts(ins[3], "Slice axes");
    if (failed(a)) return failure();
    axes = *a;
  } else {
    for (size_t i = 0; i < starts->size(); ++i)
      axes.push_back(i);
  }
  if (ins.size() > 4 && ins[4]) {
    auto s = constInts(ins[4], "Slice steps");
    if (failed(s)) return failure();
    steps = *s;
  }
  if (ends->size() != starts->size() || axes.size() != starts->size() ||
      steps.size() != starts->size())
    return fail("starts, ends, axes and steps differ in length");
  SmallVector<int64_t> lo(rank, 0), hi(t.getShape()), st(rank, 1);
  for (size_t k = 0; k < axes.size(); ++k) {
    auto axis = normAxis(axes[k], rank);
    if (!axis)
      return fail("slice axis " + std::to_string(axes[k]) + " out of range");
    if (steps[k] <= 0)
      return fail("slices with step " + std::to_string(steps[k]) + " are not supported");
    SliceBounds b = resolveSlice(t.getDimSize(*axis), (*starts)[k], (*ends)[k], steps[k]);
    lo[*axis] = b.start;
    hi[*axis] = std::max(b.start, b.stop);
    st[*axis] = b.step;
  }
  return setResult(create<SliceOp>(x, builder.getDenseI64ArrayAttr(lo),
                                   builder.getDenseI64ArrayAttr(hi),
                                   builder.getDenseI64ArrayAttr(st)),
                   outs);
}

/// Splits `x` along `axis` into pieces of the given sizes.
static LogicalResult splitInto(Importer &im, Value x, int64_t axis,
                               ArrayRef<int64_t> sizes, bool keepDims,
                               SmallVectorImpl<Val> &outs) {
  RankedTensorType t = typeOf(x);
  int64_t total = 0;
  for (int64_t s : sizes)
    total += s;
  if (total != t.getDimSize(axis))
    return im.fail("split sizes " + join<int64_t>(sizes) + " do not add up to " +
                   std::to_string(t.getDimSize(axis)));
  int64_t offset = 0;
  for (int64_t s : sizes) {
    SmallVector<int64_t> lo(t.getRank(), 0), hi(t.getShape()), st(t.getRank(), 1);
    lo[axis] = offset;
    hi[axis] = offset + s;
    offset += s;
    auto slice = im.create<SliceOp>(x, im.builder.getDenseI64ArrayAttr(lo),
                                    im.builder.getDenseI64ArrayAttr(hi),
                                    im.builder.getDenseI64ArrayAttr(st));
    if (failed(slice))
      return failure();
    Value piece = slice->getResult();
    if (!keepDims) {
      SmallVector<int64_t> shape(typeOf(piece).getShape());
      shape.erase(shape.begin() + axis);
      auto r = im.createTyped<ReshapeOp>(
          RankedTensorType::get(shape, t.getElementType()), piece);
      if (failed(r))
        return failure();
      piece = r->getResult();
    }
    outs.push_back(Val{piece, {}, {}});
  }
  return success();
}

/// Sizes of a split: explicit, or `count` equal parts (the last smaller).
static FailureOr<std::vector<int64_t>> splitSizes(Importer &im, Val *split,
                                                  int64_t dim, int64_t count) {
  if (split) {
    auto s = im.constInts(split, "split sizes");
    if (failed(s) || s->size() != 1 || split->host->shape.size() != 0)
      return s;
    count = (dim + (*s)[0] - 1) / (*s)[0];
  }
  if (count <= 0)
    return im.fail("cannot split into " + std::to_string(count) + " parts");
  int64_t chunk = (dim + count - 1) / count;
  std::vector<int64_t> sizes;
  for (int64_t left = dim; left > 0; left -= chunk)
    sizes.push_back(std::min(chunk, left));
  return sizes;
}

LogicalResult Importer::importSplit(const onnx::NodeProto &node, Inputs ins,
                                    Outputs &outs) {
  NodeAttrs at = attrs(node);
  Value x = use(*ins[0]);
  auto axis = normAxis(at.getInt("axis").value_or(0), typeOf(x).getRank());
  if (!axis)
    return fail("axis out of range");
  std::optional<std::vector<int64_t>> sizes = at.getInts("split");
  if (!sizes) {
    auto s = splitSizes(*this, ins.size() > 1 ? ins[1] : nullptr,
                        typeOf(x).getDimSize(*axis),
                        at.getInt("num_outputs").value_or(node.output_size()));
    if (failed(s))
      return failure();
    sizes = *s;
  }
  return splitInto(*this, x, *axis, *sizes, true, outs);
}

LogicalResult Importer::importSplitToSequence(const onnx::NodeProto &node, Inputs ins,
                                              Outputs &outs) {
  NodeAttrs at = attrs(node);
  Value x = use(*ins[0]);
  auto axis = normAxis(at.getInt("axis").value_or(0), typeOf(x).getRank());
  if (!axis)
    return fail("axis out of range");
  Val *split = ins.size() > 1 ? ins[1] : nullptr;
  int64_t dim = typeOf(x).getDimSize(*axis);
  auto sizes = splitSizes(*this, split, dim, split ? 1 : dim);
  if (failed(sizes))
    return failure();
  std::vector<Val> seq;
  SmallVector<Val> pieces;
  bool keep = split || at.getInt("keepdims").value_or(1);
  if (failed(splitInto(*this, x, *axis, *sizes, keep, pieces)))
    return failure();
  seq.assign(pieces.begin(), pieces.end());
  outs.push_back(Val{{}, {}, std::move(seq)});
  return success();
}

LogicalResult Importer::importSequenceAt(const onnx::NodeProto &, Inputs ins,
                                         Outputs &outs) {
  if (!ins[0]->sequence)
    return fail("input is not a sequence");
  auto pos = constInts(ins[1], "sequence position");
  if (failed(pos))
    return failure();
  int64_t n = ins[0]->sequence->size(), p = (*pos)[0] < 0 ? (*pos)[0] + n : (*pos)[0];
  if (p < 0 || p >= n)
    return fail("position " + std::to_string((*pos)[0]) + " out of range for " +
                std::to_string(n) + " elements");
  outs.push_back((*ins[0]->sequence)[p]);
  return success();
}

/// The padding_idx of the aten::embedding a dynamo export's Gather came from,
/// from the FX node it records: "...aten.embedding.default](args = (%w,
/// %ids, 1), kwargs = {})". nn.Embedding passes it non-negative, -1 for none;
/// the TorchScript-based exporter records nothing.
static std::optional<int64_t> embeddingPaddingIdx(const onnx::NodeProto &node) {
  for (const auto &p : node.metadata_props()) {
    if (p.key() != "pkg.torch.onnx.fx_node")
      continue;
    StringRef fx = p.value();
    size_t at = fx.find("aten.embedding.default](args = (");
    if (at == StringRef::npos)
      return std::nullopt;
    StringRef args = fx.drop_front(at).split("(args = (").second.split(")").first;
    SmallVector<StringRef> parts;
    args.split(parts, ",");
    int64_t pad;
    if (parts.size() < 3 || parts[2].trim().getAsInteger(10, pad) || pad < 0)
      return std::nullopt;
    return pad;
  }
  return std::nullopt;
}

LogicalResult Importer::importGather(const onnx::NodeProto &node, Inputs ins,
                                     Outputs &outs) {
  int64_t axis = attrs(node).getInt("axis").value_or(0);
  Value data = use(*ins[0]), idx = use(*ins[1]);
  RankedTensorType dt = typeOf(data);
  bool isTable = dt.getRank() == 2 && isa<FloatType>(dt.getElementType()) &&
                 (axis == 0 || axis == -2) && data.getDefiningOp<GlobalLoadOp>();
  if (isTable) {
    std::optional<int64_t> pad = embeddingPaddingIdx(node);
    return setResult(create<EmbeddingOp>(data, idx,
                                         pad ? builder.getI64IntegerAttr(*pad) : IntegerAttr()),
                     outs);
  }
  return setResult(create<GatherOp>(data, idx, builder.getI64IntegerAttr(axis)), outs);
}

/// Resize (X, roi, scales, sizes) with linear or nearest interpolation and
/// constant scales or sizes: each axis whose size changes mixed by its
/// interpolation weights (PyTorch's upsampling; MobileViT, BEiT).
LogicalResult Importer::importResize(const onnx::NodeProto &node, Inputs ins, Outputs &outs) {
  NodeAttrs a = attrs(node);
  if (a.getInt("exclude_outside").value_or(0) || a.getInt("antialias").value_or(0) ||
      a.getInts("axes"))
    return fail("exclude_outside, antialias and axes are not supported");
  if (a.getString("keep_aspect_ratio_policy").value_or("stretch") != "stretch")
    return fail("keep_aspect_ratio_policy other than 'stretch' is not supported");
  Value x = use(*ins[0]);
  auto shape = typeOf(x).getShape();
  int64_t rank = shape.size();
  Val *scalesIn = ins.size() > 2 ? ins[2] : nullptr, *sizesIn = ins.size() > 3 ? ins[3] : nullptr;
  if (scalesIn && scalesIn->host && scalesIn->host->numel() == 0)
    scalesIn = nullptr;
  if ((scalesIn && !scalesIn->host) || (sizesIn && !sizesIn->host) || (!scalesIn && !sizesIn))
    return fail("scales or sizes must be constant (known at import time)");
  Val *given = sizesIn ? sizesIn : scalesIn;
  if (given->host->numel() != rank)
    return fail("expects one scale or size per dimension");
  std::string mode = a.getString("mode").value_or("nearest");
  std::string coordinates = a.getString("coordinate_transformation_mode").value_or("half_pixel");
  std::string nearest = a.getString("nearest_mode").value_or("round_prefer_floor");
  Value y = x;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t in = shape[d];
    double scale = sizesIn ? 0 : given->host->values[d];
    int64_t out = sizesIn ? given->host->asInt(d) : static_cast<int64_t>(std::floor(in * scale));
    if (out < 1)
      return fail("output sizes must be positive");
    if (!sizesIn && scale == 1.0)
      continue;
    if (sizesIn) {
      if (out == in)
        continue;
      scale = static_cast<double>(out) / in;
    }
    std::string error;
    FailureOr<std::vector<std::vector<double>>> m =
        resizeWeights(in, out, scale, mode, coordinates, nearest, error);
    if (failed(m))
      return fail(error);
    FailureOr<Value> mixed = mixAxis(y, d, *m);
    if (failed(mixed))
      return failure();
    y = *mixed;
  }
  outs.push_back(Val{y, {}, {}});
  return success();
}

LogicalResult Importer::importEinsum(const onnx::NodeProto &node, Inputs ins, Outputs &outs) {
  std::optional<std::string> equation = attrs(node).getString("equation");
  if (!equation)
    return fail("missing equation");
  SmallVector<Value> operands;
  for (Val *v : ins)
    operands.push_back(use(*v));
  return setValue(einsum(*equation, operands), outs);
}

/// GatherND, GatherElements of a run-time tensor at indices known now (both
/// known: the host folds them).
LogicalResult Importer::importGatherAt(const onnx::NodeProto &node, Inputs ins, Outputs &outs) {
  if (!ins[1]->host)
    return fail("indices must be constant (known at import time)");
  return setValue(gatherAt(node.op_type(), use(*ins[0]), *ins[1]->host, attrs(node)), outs);
}

/// ScatterND, ScatterElements into run-time tensors at indices known now
/// (all three known: the host folds them).
LogicalResult Importer::importScatterAt(const onnx::NodeProto &node, Inputs ins,
                                        Outputs &outs) {
  if (!ins[1]->host)
    return fail("indices must be constant (known at import time)");
  return setValue(
      scatterAt(node.op_type(), use(*ins[0]), *ins[1]->host, use(*ins[2]), attrs(node)), outs);
}

LogicalResult Importer::importExpand(const onnx::NodeProto &, Inputs ins,
                                     Outputs &outs) {
  Value x = use(*ins[0]);
  auto target = constInts(ins[1], "Expand shape");
  if (failed(target))
    return failure();
  SmallVector<int64_t> shape;
  if (!broadcastShapes(typeOf(x).getShape(), *target, shape))
    return fail("cannot expand " + join<int64_t>(typeOf(x).getShape()) + " to " +
                join<int64_t>(*target));
  auto type = RankedTensorType::get(shape, typeOf(x).getElementType());
  if (type == x.getType()) {
    outs.push_back(Val{x, {}, {}});
    return success();
  }
  return setResult(createTyped<BroadcastToOp>(type, x), outs);
}

/// A constant of `type` whose every element is `v`.
static Value splat(OpBuilder &b, Location loc, RankedTensorType type, double v) {
  Type et = type.getElementType();
  Attribute value;
  if (auto ft = dyn_cast<FloatType>(et)) {
    APFloat f(v);
    bool lost;
    f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    value = DenseElementsAttr::get(type, f);
  } else {
    value = DenseElementsAttr::get(
        type, APInt(et.getIntOrFloatBitWidth(), static_cast<int64_t>(v), /*isSigned=*/true));
  }
  return ConstantOp::create(b, loc, cast<ElementsAttr>(value));
}

/// Not: the bool tensor's complement, as a select between constants.
LogicalResult Importer::importNot(const onnx::NodeProto &, Inputs ins, Outputs &outs) {
  Value x = use(*ins[0]);
  RankedTensorType t = typeOf(x);
  if (!t.getElementType().isInteger(1))
    return fail("Not takes a bool tensor");
  return setResult(create<SelectOp>(x, splat(builder, loc, t, 0), splat(builder, loc, t, 1)),
                   outs);
}

/// Sum and Mean of one or more inputs (with broadcasting): added left to
/// right, Mean's sum divided by the count.
LogicalResult Importer::importSumMean(const onnx::NodeProto &node, Inputs ins,
                                      Outputs &outs) {
  if (ins.empty() || llvm::is_contained(ins, nullptr))
    return fail("expected one or more inputs");
  Value acc = use(*ins[0]);
  for (Val *next : ins.drop_front()) {
    Val a{acc, {}, {}}, b = *next;
    matchHostType(b, a);
    FailureOr<Value> sum = valueOf(create<AddOp>(acc, use(b)));
    if (failed(sum))
      return failure();
    acc = *sum;
  }
  if (node.op_type() == "Mean" && ins.size() > 1) {
    RankedTensorType scalar = RankedTensorType::get({}, typeOf(acc).getElementType());
    if (!isa<FloatType>(scalar.getElementType()))
      return fail("Mean takes floating-point tensors");
    return setResult(create<DivOp>(acc, splat(builder, loc, scalar, double(ins.size()))),
                     outs);
  }
  outs.push_back(Val{acc, {}, {}});
  return success();
}

/// Tile: the input repeated along each axis by a constant count, as a
/// concatenation of copies (whose gradient adds the copies' up).
LogicalResult Importer::importTile(const onnx::NodeProto &, Inputs ins, Outputs &outs) {
  Value x = use(*ins[0]);
  auto repeats = constInts(ins[1], "Tile repeats");
  if (failed(repeats))
    return failure();
  if (int64_t(repeats->size()) != typeOf(x).getRank())
    return fail("Tile repeats has " + std::to_string(repeats->size()) +
                " entries for a tensor of rank " + std::to_string(typeOf(x).getRank()));
  for (auto [axis, count] : llvm::enumerate(*repeats)) {
    if (count < 1)
      return fail("Tile repeats must be positive, got " + std::to_string(count));
    if (count == 1)
      continue;
    SmallVector<Value> copies(count, x);
    FailureOr<Value> tiled =
        valueOf(create<ConcatOp>(copies, builder.getI64IntegerAttr(int64_t(axis))));
    if (failed(tiled))
      return failure();
    x = *tiled;
  }
  outs.push_back(Val{x, {}, {}});
  return success();
}

/// Pad in mode `constant`: constant slabs concatenated before and after
/// each padded axis; negative pads crop (a slice).
LogicalResult Importer::importPad(const onnx::NodeProto &node, Inputs ins, Outputs &outs) {
  std::string mode = attrs(node).getString("mode").value_or("constant");
  if (mode != "constant")
    return fail("Pad mode '" + mode + "' is not supported (only 'constant')");
  Value x = use(*ins[0]);
  int64_t rank = typeOf(x).getRank();
  auto pads = constInts(ins[1], "Pad pads");
  if (failed(pads))
    return failure();
  double value = 0;
  if (ins.size() > 2 && ins[2]) {
    if (!ins[2]->host || ins[2]->host->numel() != 1)
      return fail("Pad constant_value must be a constant scalar");
    value = ins[2]->host->values[0];
  }
  std::vector<int64_t> axes;
  if (ins.size() > 3 && ins[3]) {
    auto a = constInts(ins[3], "Pad axes");
    if (failed(a))
      return failure();
    for (int64_t axis : *a) {
      auto n = normAxis(axis, rank);
      if (!n)
        return fail("Pad axis " + std::to_string(axis) + " out of range");
      axes.push_back(*n);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  if (pads->size() != 2 * axes.size())
    return fail("Pad pads has " + std::to_string(pads->size()) + " entries for " +
                std::to_string(axes.size()) + " axes");
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t axis = axes[k], before = (*pads)[k], after = (*pads)[k + axes.size()];
    RankedTensorType t = typeOf(x);
    if (before < 0 || after < 0) {
      SmallVector<int64_t> lo(rank, 0), hi(t.getShape()), step(rank, 1);
      lo[axis] = std::max<int64_t>(0, -before);
      hi[axis] = t.getDimSize(axis) - std::max<int64_t>(0, -after);
      if (hi[axis] < lo[axis])
        return fail("Pad crops more than axis " + std::to_string(axis) + " holds");
      FailureOr<Value> cropped = valueOf(create<SliceOp>(
          x, builder.getDenseI64ArrayAttr(lo), builder.getDenseI64ArrayAttr(hi),
          builder.getDenseI64ArrayAttr(step)));
      if (failed(cropped))
        return failure();
      x = *cropped;
      t = typeOf(x);
    }
    SmallVector<Value> parts;
    auto slab = [&](int64_t size) {
      SmallVector<int64_t> shape(t.getShape());
      shape[axis] = size;
      parts.push_back(splat(builder, loc, t.clone(shape), value));
    };
    if (before > 0)
      slab(before);
    parts.push_back(x);
    if (after > 0)
      slab(after);
    if (parts.size() == 1)
      continue;
    FailureOr<Value> padded =
        valueOf(create<ConcatOp>(parts, builder.getI64IntegerAttr(int64_t(axis))));
    if (failed(padded))
      return failure();
    x = *padded;
  }
  outs.push_back(Val{x, {}, {}});
  return success();
}

const llvm::StringMap<Importer::Handler> &Importer::handlers() {
  static const llvm::StringMap<Handler> table = [] {
    llvm::StringMap<Handler> t;
    for (const char *op : {"Identity"})
      t[op] = &Importer::importIdentity;
    for (const char *op : {"Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Tanh", "Erf",
                           "Sigmoid", "Relu", "Cos", "Sin", "Abs"}) // see importUnary
      t[op] = &Importer::importUnary;
    for (const char *op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"})
      t[op] = &Importer::importBinary;
    for (const char *op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"})
      t[op] = &Importer::importCompare;
    t["Where"] = &Importer::importWhere;
    t["Cast"] = t["CastLike"] = &Importer::importCast;
    t["Clip"] = &Importer::importClip;
    t["GatherND"] = t["GatherElements"] = &Importer::importGatherAt;
    t["ScatterND"] = t["ScatterElements"] = &Importer::importScatterAt;
    t["Resize"] = &Importer::importResize;
    t["Einsum"] = &Importer::importEinsum;
    t["HardSigmoid"] = t["HardSwish"] = &Importer::importHardSigmoid;
    t["Gelu"] = &Importer::importGelu;
    t["Softmax"] = t["LogSoftmax"] = &Importer::importSoftmax;
    t["CumSum"] = &Importer::importCumSum;
    t["MatMul"] = &Importer::importMatMul;
    t["Gemm"] = &Importer::importGemm;
    t["Conv"] = &Importer::importConv;
    t["BatchNormalization"] = &Importer::importBatchNorm;
    t["LayerNormalization"] = &Importer::importLayerNorm;
    t["Dropout"] = &Importer::importDropout;
    t["MaxPool"] = t["AveragePool"] = &Importer::importPool;
    t["GlobalAveragePool"] = &Importer::importGlobalAveragePool;
    for (const char *op : {"ReduceMean", "ReduceSum", "ReduceMax"})
      t[op] = &Importer::importReduce;
    for (const char *op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"})
      t[op] = &Importer::importReshape;
    t["Transpose"] = &Importer::importTranspose;
    t["Concat"] = &Importer::importConcat;
    t["Slice"] = &Importer::importSlice;
    t["Split"] = &Importer::importSplit;
    t["SplitToSequence"] = &Importer::importSplitToSequence;
    t["SequenceEmpty"] = &Importer::importSequenceEmpty;
    t["SequenceInsert"] = &Importer::importSequenceInsert;
    t["ConcatFromSequence"] = &Importer::importConcatFromSequence;
    t["Loop"] = &Importer::importLoop;
    t["If"] = &Importer::importIf;
    t["SequenceAt"] = &Importer::importSequenceAt;
    t["Gather"] = &Importer::importGather;
    t["Expand"] = &Importer::importExpand;
    t["Not"] = &Importer::importNot;
    t["Sum"] = t["Mean"] = &Importer::importSumMean;
    t["Tile"] = &Importer::importTile;
    t["Pad"] = &Importer::importPad;
    return t;
  }();
  return table;
}

} // namespace colo::onnx_import

std::vector<std::string> colo::supportedOnnxOps() {
  std::vector<std::string> ops;
  for (const auto &entry : onnx_import::Importer::handlers())
    ops.push_back(entry.getKey().str());
  llvm::sort(ops);
  return ops;
}
