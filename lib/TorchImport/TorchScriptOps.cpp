// Translations of TorchScript nodes (aten and prim ops) to colo ops, or to
// values known at import time.
#include "TorchScriptImporterImpl.h"

#include <torch/csrc/jit/ir/constants.h>

#include <cmath>
#include <numeric>

using namespace mlir;
using colo::onnx_import::HostTensor;
namespace ox = colo::onnx_import;

namespace colo::torch_import {

namespace {
/// A tensor's values, known at import time.
HostTensor hostOf(const at::Tensor &t) {
  at::Tensor c = t.detach().contiguous().to(at::kDouble);
  HostTensor h{dtypeOf(t.scalar_type()), {}, {}};
  for (int64_t d : c.sizes())
    h.shape.push_back(d);
  h.values.assign(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
  return h;
}

/// The input the op's schema names `name`, if it has one.
TVal *arg(torch::jit::Node *n, TsImporter::Inputs ins, const char *name) {
  const c10::FunctionSchema *schema = n->maybeSchema();
  if (!schema)
    return nullptr;
  auto i = schema->argumentIndexWithName(name);
  if (!i || static_cast<size_t>(*i) >= ins.size())
    return nullptr;
  return ins[*i];
}

bool present(TVal *v) { return v && !v->none; }

LogicalResult push(FailureOr<TVal> v, TsImporter::Outputs &outs) {
  if (failed(v))
    return failure();
  outs.push_back(std::move(*v));
  return success();
}

LogicalResult pushValue(FailureOr<Value> v, TsImporter::Outputs &outs) {
  if (failed(v))
    return failure();
  outs.push_back(runtime(*v));
  return success();
}

template <typename OpTy>
LogicalResult pushOp(FailureOr<OpTy> op, TsImporter::Outputs &outs) {
  if (failed(op))
    return failure();
  outs.push_back(runtime(op->getResult()));
  return success();
}

// Lists of numbers (sizes) are host vectors; index and unpack them too.
void asList(TVal &v) {
  if (v.host && !v.list && v.host->shape.size() == 1) {
    v.list.emplace();
    for (double x : v.host->values)
      v.list->push_back(TVal{{}, HostTensor::scalar(x, v.host->dtype), {}, {}, {}, {}, false});
  }
}

/// The comparisons computed at import time, and the ONNX op of each
/// (aten::ne negates Equal).
const std::map<std::string, std::string> &comparisons() {
  static const std::map<std::string, std::string> ops = {
      {"aten::eq", "Equal"}, {"aten::ne", "Equal"}, {"aten::lt", "Less"},
      {"aten::le", "LessOrEqual"}, {"aten::gt", "Greater"}, {"aten::ge", "GreaterOrEqual"}};
  return ops;
}

// Arithmetic, on tensors or numbers.
const std::map<std::string, std::string> &binaries() {
  static const std::map<std::string, std::string> ops = {
      {"aten::add", "Add"}, {"aten::add_", "Add"}, {"aten::sub", "Sub"},
      {"aten::sub_", "Sub"}, {"aten::mul", "Mul"}, {"aten::mul_", "Mul"},
      {"aten::div", "Div"}, {"aten::div_", "Div"}, {"aten::floor_divide", "Div"},
      {"aten::floordiv", "Div"},
      {"aten::pow", "Pow"}, {"aten::rsub", "Sub"},
      // Logic (masks), computed now: no run-time form.
      {"aten::bitwise_or", "Or"}, {"aten::bitwise_or_", "Or"}, {"aten::__or__", "Or"},
      {"aten::bitwise_and", "And"}, {"aten::bitwise_and_", "And"}, {"aten::__and__", "And"},
      {"aten::logical_or", "Or"}, {"aten::logical_and", "And"},
      // The elementwise forms (two tensors); importBinary refuses the others.
      {"aten::max", "Max"}, {"aten::min", "Min"}, {"aten::maximum", "Max"},
      {"aten::minimum", "Min"}};
  return ops;
}
} // namespace

/// prim::Constant: numbers, int lists and tensors become host values and
/// strings are kept; anything else is None.
LogicalResult TsImporter::importConstant(torch::jit::Node *n, const std::string &, Inputs,
                                         Outputs &outs) {
  std::optional<c10::IValue> iv = torch::jit::toIValue(n->output());
  TVal t;
  if (!iv || iv->isNone()) {
    t.none = true;
  } else if (iv->isInt()) {
    t.host = HostTensor::scalar(iv->toInt(), ox::kInt64);
  } else if (iv->isDouble()) {
    t.host = HostTensor::scalar(iv->toDouble(), ox::kDouble);
  } else if (iv->isBool()) {
    t.host = HostTensor::scalar(iv->toBool(), ox::kBool);
  } else if (iv->isString()) {
    t.str = iv->toStringRef();
  } else if (iv->isIntList()) {
    t.host = HostTensor::vector(iv->toIntVector());
  } else if (iv->isTensor()) {
    t.host = hostOf(iv->toTensor());
  } else {
    t.none = true; // devices, layouts, memory formats: irrelevant here
  }
  outs.push_back(std::move(t));
  return success();
}

/// Submodules, parameters (as globals), buffers and numbers of a module.
LogicalResult TsImporter::importGetAttr(torch::jit::Node *n, const std::string &,
                                        Inputs ins, Outputs &outs) {
  if (!ins[0]->module)
    return fail("attribute of something that is not a module");
  torch::jit::Module &obj = *ins[0]->module;
  std::string attr = n->s(c10::Symbol::attr("name"));
  std::string full = ins[0]->name.empty() ? attr : ins[0]->name + "." + attr;
  c10::IValue v = obj.attr(attr);
  TVal t;
  if (v.isModule()) {
    t.module = v.toModule();
    t.name = full;
  } else if (v.isTensor()) {
    if (parameterNames.count(full)) {
      // A parameter with requires_grad=False (Pegasus's sinusoidal positions)
      // is model state that does not train.
      FailureOr<Value> g = stateGlobal(full, v.toTensor(), v.toTensor().requires_grad());
      if (failed(g))
        return failure();
      t.value = *g;
    } else {
      // A buffer: known now; batch norm turns its statistics into state.
      t.host = hostOf(v.toTensor());
      t.name = full;
    }
  } else if (v.isInt() || v.isBool() || v.isDouble()) {
    t.host = HostTensor::scalar(v.isDouble() ? v.toDouble()
                                : v.isInt()  ? v.toInt()
                                             : v.toBool(),
                                v.isDouble() ? ox::kDouble : ox::kInt64);
  } else {
    t.none = true;
  }
  outs.push_back(std::move(t));
  return success();
}

/// prim::ListConstruct, prim::TupleConstruct.
LogicalResult TsImporter::importConstruct(torch::jit::Node *, const std::string &,
                                          Inputs ins, Outputs &outs) {
  TVal t;
  t.list.emplace();
  for (TVal *v : ins)
    t.list->push_back(*v);
  outs.push_back(std::move(t));
  return success();
}

/// prim::ListUnpack, prim::TupleUnpack.
LogicalResult TsImporter::importUnpack(torch::jit::Node *n, const std::string &,
                                       Inputs ins, Outputs &outs) {
  asList(*ins[0]);
  if (!ins[0]->list || ins[0]->list->size() != n->outputs().size())
    return fail("cannot unpack into " + std::to_string(n->outputs().size()) + " values");
  for (TVal &v : *ins[0]->list)
    outs.push_back(v);
  return success();
}

/// aten::__getitem__: an element of a list, at a constant index.
LogicalResult TsImporter::importGetItem(torch::jit::Node *, const std::string &,
                                        Inputs ins, Outputs &outs) {
  asList(*ins[0]);
  FailureOr<int64_t> i = toInt(*ins[1], "index");
  if (failed(i) || !ins[0]->list)
    return fail("indexing needs a list and a constant index");
  int64_t k = *i < 0 ? *i + ins[0]->list->size() : *i;
  if (k < 0 || k >= static_cast<int64_t>(ins[0]->list->size()))
    return fail("index out of range");
  outs.push_back((*ins[0]->list)[k]);
  return success();
}

/// Ops that are the identity here: conversions between numbers and tensors,
/// copies and views.
LogicalResult TsImporter::importIdentity(torch::jit::Node *, const std::string &,
                                         Inputs ins, Outputs &outs) {
  outs.push_back(*ins[0]);
  return success();
}

/// aten::detach: a float tensor computed at run time keeps its value and
/// stops its gradient; anything else is itself.
LogicalResult TsImporter::importDetach(torch::jit::Node *n, const std::string &kind,
                                       Inputs ins, Outputs &outs) {
  Value v = ins[0]->value;
  if (!v || !mlir::isa<FloatType>(mlir::cast<RankedTensorType>(v.getType()).getElementType()))
    return importIdentity(n, kind, ins, outs);
  return pushOp(create<StopGradientOp>(v), outs);
}

/// aten::__is__, aten::__isnot__: known when either side is None.
LogicalResult TsImporter::importIs(torch::jit::Node *, const std::string &kind,
                                   Inputs ins, Outputs &outs) {
  bool same = ins[0]->none && ins[1]->none;
  if (!ins[0]->none && !ins[1]->none)
    return fail("identity of two values is not known at import time");
  TVal t;
  t.host = HostTensor::scalar(kind == "aten::__is__" ? same : !same, ox::kBool);
  outs.push_back(t);
  return success();
}

LogicalResult TsImporter::importNot(torch::jit::Node *, const std::string &, Inputs ins,
                                    Outputs &outs) {
  FailureOr<int64_t> b = toInt(*ins[0], "condition");
  if (failed(b))
    return failure();
  TVal t;
  t.host = HostTensor::scalar(!*b, ox::kBool);
  outs.push_back(t);
  return success();
}

/// Comparisons: computed now of values known at import time (sizes, flags),
/// colo.compare of run-time ones (RoBERTa's padding mask of the ids).
LogicalResult TsImporter::importCompare(torch::jit::Node *, const std::string &kind,
                                        Inputs ins, Outputs &outs) {
  if (ins.size() != 2)
    return fail("unsupported op");
  if (!ins[0]->host || !ins[1]->host) {
    static const std::map<std::string, ComparePredicate> predicates = {
        {"aten::eq", ComparePredicate::eq}, {"aten::ne", ComparePredicate::ne},
        {"aten::lt", ComparePredicate::lt}, {"aten::le", ComparePredicate::le},
        {"aten::gt", ComparePredicate::gt}, {"aten::ge", ComparePredicate::ge}};
    return push(compare(predicates.at(kind), *ins[0], *ins[1]), outs);
  }
  FailureOr<TVal> r =
      evalHost(comparisons().at(kind), {&*ins[0]->host, &*ins[1]->host}, attrs());
  if (succeeded(r) && kind == "aten::ne")
    for (double &v : r->host->values)
      v = !v;
  return push(r, outs);
}

/// prim::RaiseException on the path imported: the import fails.
LogicalResult TsImporter::importRaise(torch::jit::Node *, const std::string &,
                                      Inputs ins, Outputs &) {
  return fail("the model raises an exception on this path" +
              (ins.size() && ins[0]->str ? ": " + *ins[0]->str : std::string()));
}

/// prim::unchecked_cast, aten::Bool and prim::Uninitialized pass their input
/// through (or an empty value); aten::warn has no result.
LogicalResult TsImporter::importPassThrough(torch::jit::Node *, const std::string &kind,
                                            Inputs ins, Outputs &outs) {
  if (kind != "aten::warn")
    outs.push_back(ins.empty() ? TVal{} : *ins[0]);
  return success();
}

/// aten::format: only its format string is kept.
LogicalResult TsImporter::importFormat(torch::jit::Node *, const std::string &,
                                       Inputs ins, Outputs &outs) {
  TVal t;
  t.str = ins.empty() || !ins[0]->str ? std::string() : *ins[0]->str;
  outs.push_back(t);
  return success();
}

/// aten::len of a list (or of a host vector).
LogicalResult TsImporter::importLen(torch::jit::Node *, const std::string &, Inputs ins,
                                    Outputs &outs) {
  asList(*ins[0]);
  if (!ins[0]->list)
    return fail("unsupported op");
  TVal t;
  t.host = HostTensor::scalar(ins[0]->list->size(), ox::kInt64);
  outs.push_back(t);
  return success();
}

/// aten::size: the shape, or one dimension of it, known now.
LogicalResult TsImporter::importSize(torch::jit::Node *, const std::string &, Inputs ins,
                                     Outputs &outs) {
  std::vector<int64_t> shape = shapeOf(*ins[0]);
  if (ins.size() > 1) {
    FailureOr<int64_t> d = toInt(*ins[1], "dim");
    if (failed(d))
      return failure();
    int64_t dim = normDim(*d, shape.size());
    if (dim < 0 || dim >= static_cast<int64_t>(shape.size()))
      return fail("dimension out of range");
    TVal t;
    t.host = HostTensor::scalar(shape[dim], ox::kInt64);
    outs.push_back(t);
  } else {
    TVal t;
    t.host = HostTensor::vector(shape);
    outs.push_back(t);
  }
  return success();
}

/// aten::dim: the rank.
LogicalResult TsImporter::importDim(torch::jit::Node *, const std::string &, Inputs ins,
                                    Outputs &outs) {
  TVal t;
  t.host = HostTensor::scalar(shapeOf(*ins[0]).size(), ox::kInt64);
  outs.push_back(t);
  return success();
}

/// The ops of binaries(); alpha scales the operand added or subtracted.
LogicalResult TsImporter::importBinary(torch::jit::Node *n, const std::string &kind,
                                       Inputs ins, Outputs &outs) {
  if (ins.size() == 1 && ins[0]->host && ins[0]->host->numel() > 0 &&
      (kind == "aten::max" || kind == "aten::min")) {
    // The whole tensor's extreme, of a tensor known now (Swin's resolutions).
    const std::vector<double> &v = ins[0]->host->values;
    double m = kind == "aten::max" ? *llvm::max_element(v) : *llvm::min_element(v);
    TVal t;
    t.host = HostTensor::scalar(m, ins[0]->host->dtype);
    outs.push_back(t);
    return success();
  }
  if (ins.size() != 2 && (kind == "aten::max" || kind == "aten::min"))
    return fail("only the elementwise form of " + kind +
                " (two tensors) and the whole extreme of a tensor known at import time "
                "are supported");
  TVal *a = ins[0], *b = ins[1];
  TVal scaled;
  if (TVal *alpha = arg(n, ins, "alpha"); present(alpha)) {
    FailureOr<double> al = toDouble(*alpha, "alpha");
    if (failed(al))
      return failure();
    if (*al != 1.0) {
      TVal c;
      c.host = HostTensor::scalar(*al, ox::kDouble);
      FailureOr<TVal> s = binary("Mul", kind == "aten::rsub" ? *a : *b, c);
      if (failed(s))
        return failure();
      scaled = *s;
      (kind == "aten::rsub" ? a : b) = &scaled;
    }
  }
  if (kind == "aten::rsub")
    std::swap(a, b);
  TVal *modeArg = arg(n, ins, "rounding_mode");
  std::optional<std::string> mode =
      present(modeArg) && modeArg->str ? modeArg->str : std::optional<std::string>();
  if (mode && *mode != "trunc" && !(a->host && b->host))
    return fail("division with rounding_mode '" + *mode + "' is not supported");
  bool floorDiv = kind == "aten::floor_divide" || kind == "aten::floordiv" || mode == "floor";
  bool isDiv = llvm::StringRef(kind).starts_with("aten::div") || floorDiv;
  if (isDiv && a->host && b->host && !ox::isFloatDType(a->host->dtype) &&
      !ox::isFloatDType(b->host->dtype) && mode != "trunc") {
    // Integers known now (sizes): `/` is true division (MobileViT's
    // ceil(height / patch)), `//` and rounding_mode "floor" round down.
    TVal x = *a, y = *b;
    for (TVal *t : {&x, &y})
      t->host->dtype = ox::kDouble;
    FailureOr<TVal> q = binary("Div", x, y);
    if (failed(q))
      return failure();
    for (double &v : q->host->values)
      v = floorDiv ? std::floor(v) : HostTensor::convert(v, ox::kFloat);
    q->host->dtype = floorDiv ? a->host->dtype : ox::kFloat;
    return push(q, outs);
  }
  FailureOr<TVal> r = binary(binaries().at(kind), *a, *b);
  if (succeeded(r) && floorDiv && r->host)
    for (double &v : r->host->values)
      v = std::floor(v);
  return push(r, outs);
}

/// Elementwise functions; -x and some others are computed now when x is
/// known.
LogicalResult TsImporter::importUnary(torch::jit::Node *n, const std::string &kind,
                                      Inputs ins, Outputs &outs) {
  if (kind == "aten::neg" && ins[0]->host) {
    TVal m;
    m.host = HostTensor::scalar(-1, ins[0]->host->dtype);
    return push(binary("Mul", *ins[0], m), outs);
  }
  if (ins[0]->host) {
    static const std::map<std::string, std::string> host = {
        {"aten::cos", "Cos"}, {"aten::sin", "Sin"}, {"aten::sqrt", "Sqrt"},
        {"aten::exp", "Exp"}, {"aten::log", "Log"}, {"aten::abs", "Abs"},
        {"aten::reciprocal", "Reciprocal"}};
    if (auto h = host.find(kind); h != host.end())
      return push(evalHost(h->second, {&*ins[0]->host}, attrs()), outs);
  }
  FailureOr<Value> x = tensor(*ins[0]);
  if (failed(x))
    return failure();
  if (kind != "aten::gelu") {
    llvm::StringRef mnemonic = llvm::StringRef(kind).drop_front(6).rtrim('_');
    return pushValue(createUnary(mnemonic, *x), outs);
  }
  Type t = x->getType();
  std::string approx = "none";
  if (TVal *a = arg(n, ins, "approximate"); a && a->str)
    approx = *a->str;
  if (approx != "none" && approx != "tanh")
    return fail("unsupported GELU approximation '" + approx + "'");
  auto approximation =
      approx == "tanh" ? GeluApproximation::tanh : GeluApproximation::none;
  return pushOp(
      createTyped<GeluOp>(t, *x, GeluApproximationAttr::get(&ctx, approximation)), outs);
}

LogicalResult TsImporter::importHardtanh(torch::jit::Node *, const std::string &,
                                         Inputs ins, Outputs &outs) {
  FailureOr<Value> x = input(ins, 0);
  FailureOr<double> lo = toDouble(*ins[1], "min_val"), hi = toDouble(*ins[2], "max_val");
  if (failed(x) || failed(lo) || failed(hi))
    return failure();
  return pushOp(createTyped<ClampOp>(x->getType(), *x, builder.getF64FloatAttr(*lo),
                                     builder.getF64FloatAttr(*hi)),
                outs);
}

/// aten::hardsigmoid, aten::hardswish (and in place): PyTorch's alpha 1/6
/// and beta 1/2.
LogicalResult TsImporter::importHardSigmoid(torch::jit::Node *, const std::string &kind,
                                            Inputs ins, Outputs &outs) {
  FailureOr<Value> x = input(ins, 0);
  if (failed(x))
    return failure();
  bool swish = kind.find("hardswish") != std::string::npos;
  return pushValue(hardSigmoid(*x, 1.0 / 6, 0.5, swish), outs);
}

/// aten::linear, aten::addmm, aten::matmul; a matmul of values known at
/// import time is computed now.
LogicalResult TsImporter::importMatmul(torch::jit::Node *n, const std::string &kind,
                                       Inputs ins, Outputs &outs) {
  if (kind == "aten::matmul" && ins[0]->host && ins[1]->host)
    return push(evalHost("MatMul", {&*ins[0]->host, &*ins[1]->host}, attrs()), outs);
  // addmm and baddbmm: beta * input + alpha * (mat1 @ mat2).
  bool addmm = kind == "aten::addmm" || kind == "aten::baddbmm";
  FailureOr<Value> a = input(ins, addmm ? 1 : 0), w = input(ins, addmm ? 2 : 1);
  if (failed(a) || failed(w))
    return failure();
  Value rhs = *w;
  if (kind == "aten::linear") {
    auto t = create<TransposeOp>(*w, builder.getDenseI64ArrayAttr({1, 0}));
    if (failed(t))
      return failure();
    rhs = t->getResult();
  }
  if (mlir::cast<RankedTensorType>(a->getType()).getRank() < 2 ||
      mlir::cast<RankedTensorType>(rhs.getType()).getRank() < 2)
    return fail("matrix products of vectors are not supported");
  auto mm = create<MatmulOp>(*a, rhs);
  if (failed(mm))
    return failure();
  TVal y = runtime(mm->getResult());
  TVal *bias = addmm ? ins[0] : (kind == "aten::linear" ? ins[2] : nullptr);
  TVal scaledBias;
  if (addmm) {
    auto factor = [&](const char *name) -> FailureOr<double> {
      TVal *f = arg(n, ins, name);
      return present(f) ? toDouble(*f, name) : FailureOr<double>(1.0);
    };
    FailureOr<double> alpha = factor("alpha"), beta = factor("beta");
    if (failed(alpha) || failed(beta))
      return failure();
    auto scale = [&](TVal &v, double c) -> FailureOr<TVal> {
      TVal s;
      s.host = HostTensor::scalar(c, ox::kDouble);
      return c == 1.0 ? FailureOr<TVal>(v) : binary("Mul", v, s);
    };
    FailureOr<TVal> ys = scale(y, *alpha), bs = scale(*bias, *beta);
    if (failed(ys) || failed(bs))
      return failure();
    y = *ys;
    scaledBias = *bs;
    // PyTorch ignores the input when beta is 0 (NaNs in it included).
    bias = *beta == 0.0 ? nullptr : &scaledBias;
  }
  if (present(bias))
    return push(binary("Add", y, *bias), outs);
  outs.push_back(y);
  return success();
}

/// aten::_convolution, aten::conv2d: 2-D convolution.
LogicalResult TsImporter::importConv(torch::jit::Node *n, const std::string &, Inputs ins,
                                     Outputs &outs) {
  FailureOr<Value> x = input(ins, 0), w = input(ins, 1);
  if (failed(x) || failed(w))
    return failure();
  if (TVal *tr = arg(n, ins, "transposed"); tr && tr->host && tr->host->values[0])
    return fail("transposed convolution is not supported");
  FailureOr<std::vector<int64_t>> s = toInts(*arg(n, ins, "stride"), "stride"),
                                  p = toInts(*arg(n, ins, "padding"), "padding"),
                                  d = toInts(*arg(n, ins, "dilation"), "dilation");
  FailureOr<int64_t> g = toInt(*arg(n, ins, "groups"), "groups");
  if (failed(s) || failed(p) || failed(d) || failed(g))
    return failure();
  if (s->size() != 2 || p->size() != 2 || d->size() != 2)
    return fail("only 2-D convolution is supported");
  Value bias;
  if (present(ins[2])) {
    FailureOr<Value> b = tensor(*ins[2]);
    if (failed(b))
      return failure();
    bias = *b;
  }
  return pushOp(create<Conv2dOp>(
      *x, *w, bias, builder.getDenseI64ArrayAttr(*s),
      builder.getDenseI64ArrayAttr({(*p)[0], (*p)[1], (*p)[0], (*p)[1]}),
      builder.getDenseI64ArrayAttr(*d), builder.getI64IntegerAttr(*g)),
      outs);
}

/// aten::batch_norm; running statistics of buffers become state globals.
LogicalResult TsImporter::importBatchNorm(torch::jit::Node *, const std::string &,
                                          Inputs ins, Outputs &outs) {
  FailureOr<Value> x = input(ins, 0);
  if (failed(x))
    return failure();
  Value params[4];
  for (int i = 0; i < 4; ++i) {
    TVal *p = ins[i + 1];
    if (!present(p))
      return fail("batch norm without affine parameters or running statistics "
                  "is not supported");
    if (i >= 2 && p->host && !p->name.empty()) {
      // Running statistics are state the training step updates.
      static const std::map<int32_t, at::ScalarType> floats = {
          {ox::kFloat, at::kFloat}, {ox::kDouble, at::kDouble},
          {ox::kFloat16, at::kHalf}, {ox::kBFloat16, at::kBFloat16}};
      auto dt = floats.find(p->host->dtype);
      if (dt == floats.end())
        return fail("running statistics must be floating point");
      torch::Tensor data = torch::from_blob(p->host->values.data(),
                                            {static_cast<int64_t>(p->host->values.size())},
                                            torch::kDouble)
                               .to(dt->second);
      FailureOr<Value> g = stateGlobal(p->name, data, /*trainable=*/false);
      if (failed(g))
        return failure();
      params[i] = *g;
      continue;
    }
    FailureOr<Value> v = tensor(*p);
    if (failed(v))
      return failure();
    params[i] = *v;
  }
  FailureOr<int64_t> training = toInt(*ins[5], "training");
  FailureOr<double> momentum = toDouble(*ins[6], "momentum"),
                    eps = toDouble(*ins[7], "eps");
  if (failed(training) || failed(momentum) || failed(eps))
    return failure();
  auto op = createTyped<BatchNormOp>(x->getType(), params[2].getType(),
                                     params[3].getType(), *x, params[0], params[1],
                                     params[2], params[3], builder.getF64FloatAttr(*eps),
                                     builder.getF64FloatAttr(*momentum),
                                     *training ? builder.getUnitAttr() : UnitAttr(),
                                     FlatSymbolRefAttr(), DenseI16ArrayAttr());
  if (failed(op))
    return failure();
  outs.push_back(runtime(op->getResult()));
  return success();
}

LogicalResult TsImporter::importLayerNorm(torch::jit::Node *, const std::string &,
                                          Inputs ins, Outputs &outs) {
  FailureOr<Value> x = input(ins, 0);
  FailureOr<std::vector<int64_t>> shape = toInts(*ins[1], "normalized_shape");
  FailureOr<double> eps = toDouble(*ins[4], "eps");
  if (failed(x) || failed(shape) || failed(eps))
    return failure();
  Value w, b;
  if (present(ins[2])) w = *tensor(*ins[2]);
  if (present(ins[3])) b = *tensor(*ins[3]);
  int64_t axis = mlir::cast<RankedTensorType>(x->getType()).getRank() - shape->size();
  return pushOp(createTyped<LayerNormOp>(x->getType(), *x, w, b,
                                         builder.getI64IntegerAttr(axis),
                                         builder.getF64FloatAttr(*eps)),
                outs);
}

/// Dropout; the identity when not training or when p is 0.
LogicalResult TsImporter::importDropout(torch::jit::Node *, const std::string &,
                                        Inputs ins, Outputs &outs) {
  FailureOr<double> p = toDouble(*ins[1], "p");
  FailureOr<int64_t> train = toInt(*ins[2], "train");
  if (failed(p) || failed(train))
    return failure();
  if (!*train || *p == 0) {
    outs.push_back(*ins[0]);
    return success();
  }
  FailureOr<Value> x = input(ins, 0);
  if (failed(x))
    return failure();
  return pushOp(createTyped<DropoutOp>(x->getType(), *x, builder.getF64FloatAttr(*p)),
                outs);
}

LogicalResult TsImporter::importEmbedding(torch::jit::Node *, const std::string &,
                                          Inputs ins, Outputs &outs) {
  // aten::embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse):
  // nn.Embedding passes a non-negative padding_idx, or -1 for none.
  FailureOr<Value> w = input(ins, 0), ids = input(ins, 1);
  if (failed(w) || failed(ids))
    return failure();
  int64_t pad = -1, byFreq = 0;
  if (ins.size() > 2) {
    FailureOr<int64_t> p = toInt(*ins[2], "padding_idx");
    if (failed(p))
      return failure();
    pad = *p;
  }
  if (ins.size() > 3) {
    FailureOr<int64_t> f = toInt(*ins[3], "scale_grad_by_freq");
    if (failed(f))
      return failure();
    byFreq = *f;
  }
  if (byFreq)
    return fail("scale_grad_by_freq=True is not supported");
  return pushOp(create<EmbeddingOp>(*w, *ids,
                                    pad >= 0 ? builder.getI64IntegerAttr(pad) : IntegerAttr()),
                outs);
}

/// aten::softmax, aten::log_softmax.
LogicalResult TsImporter::importSoftmax(torch::jit::Node *, const std::string &kind,
                                        Inputs ins, Outputs &outs) {
  FailureOr<Value> x = input(ins, 0);
  FailureOr<int64_t> dim = toInt(*ins[1], "dim");
  if (failed(x) || failed(dim))
    return failure();
  int64_t axis = normDim(*dim, mlir::cast<RankedTensorType>(x->getType()).getRank());
  if (kind == "aten::softmax")
    return pushOp(
        createTyped<SoftmaxOp>(x->getType(), *x, builder.getI64IntegerAttr(axis)), outs);
  return pushOp(
      createTyped<LogSoftmaxOp>(x->getType(), *x, builder.getI64IntegerAttr(axis)), outs);
}

/// aten::mean, aten::sum (computed now of a tensor known now: BEiT's
/// relative position index).
LogicalResult TsImporter::importReduce(torch::jit::Node *n, const std::string &kind,
                                       Inputs ins, Outputs &outs) {
  int64_t rank = shapeOf(*ins[0]).size();
  std::vector<int64_t> dims;
  if (TVal *d = arg(n, ins, "dim"); present(d)) {
    FailureOr<std::vector<int64_t>> ds = toInts(*d, "dim");
    if (failed(ds))
      return failure();
    for (int64_t v : *ds)
      dims.push_back(normDim(v, rank));
  } else {
    for (int64_t i = 0; i < rank; ++i)
      dims.push_back(i);
  }
  llvm::sort(dims);
  bool keep = false;
  if (TVal *k = arg(n, ins, "keepdim"); present(k))
    keep = *toInt(*k, "keepdim");
  if (kind == "aten::sum" && ins[0]->host && !present(arg(n, ins, "dtype"))) {
    // PyTorch sums integers and booleans as int64.
    HostTensor x = *ins[0]->host, axes = HostTensor::vector(dims);
    if (!onnx_import::isFloatDType(x.dtype))
      x.dtype = onnx_import::kInt64;
    return push(evalHost("ReduceSum", {&x, &axes}, attrs({{"keepdims", keep}})), outs);
  }
  FailureOr<Value> x = input(ins, 0);
  if (failed(x))
    return failure();
  auto d = builder.getDenseI64ArrayAttr(dims);
  UnitAttr keepAttr = keep ? builder.getUnitAttr() : UnitAttr();
  if (kind == "aten::mean")
    return pushOp(create<ReduceMeanOp>(*x, d, keepAttr), outs);
  return pushOp(create<ReduceSumOp>(*x, d, keepAttr), outs);
}

/// aten::adaptive_avg_pool2d, to 1x1 only: a mean over H and W.
/// aten::adaptive_avg_pool2d, aten::adaptive_avg_pool1d: a mean over the
/// spatial dimensions for output size 1, else each changed axis mixed by
/// its averaging windows (VGG's 7x7, Swin's pooler).
LogicalResult TsImporter::importAdaptiveAvgPool(torch::jit::Node *, const std::string &,
                                                Inputs ins, Outputs &outs) {
  FailureOr<Value> x = input(ins, 0);
  FailureOr<std::vector<int64_t>> size = toInts(*ins[1], "output_size");
  if (failed(x) || failed(size))
    return failure();
  auto shape = mlir::cast<RankedTensorType>(x->getType()).getShape();
  int64_t first = static_cast<int64_t>(shape.size()) - static_cast<int64_t>(size->size());
  if (first < 1)
    return fail("output_size has more dimensions than the input's spatial ones");
  if (llvm::all_of(*size, [](int64_t s) { return s == 1; })) {
    SmallVector<int64_t> dims;
    for (int64_t d = first; d < static_cast<int64_t>(shape.size()); ++d)
      dims.push_back(d);
    return pushOp(create<ReduceMeanOp>(*x, builder.getDenseI64ArrayAttr(dims),
                                       builder.getUnitAttr()),
                  outs);
  }
  Value y = *x;
  for (auto [i, out] : llvm::enumerate(*size)) {
    int64_t axis = first + i, in = shape[axis];
    if (out < 1)
      return fail("output sizes must be positive");
    if (out == in)
      continue;
    FailureOr<Value> mixed = mixAxis(y, axis, adaptiveAverageWeights(in, out));
    if (failed(mixed))
      return failure();
    y = *mixed;
  }
  outs.push_back(runtime(y));
  return success();
}

/// aten::upsample_bilinear2d(x, output_size, align_corners, scales_h,
/// scales_w) and aten::upsample_nearest2d(x, output_size, scales_h,
/// scales_w), or their forms with one list of scale factors: each of H and
/// W mixed by PyTorch's interpolation weights (MobileViT, BEiT's relative
/// position bias).
LogicalResult TsImporter::importUpsample(torch::jit::Node *, const std::string &kind,
                                         Inputs ins, Outputs &outs) {
  bool linear = kind == "aten::upsample_bilinear2d";
  FailureOr<Value> x = input(ins, 0);
  if (failed(x))
    return failure();
  auto shape = mlir::cast<RankedTensorType>(x->getType()).getShape();
  if (shape.size() != 4)
    return fail("expects an NCHW input");
  bool alignCorners = false;
  size_t scalesAt = linear ? 3 : 2;
  if (linear) {
    FailureOr<int64_t> a = toInt(*ins[2], "align_corners");
    if (failed(a))
      return failure();
    alignCorners = *a;
  }
  std::vector<double> scales(2, 0.0);
  if (scalesAt < ins.size() && ins[scalesAt]->list) {
    for (size_t i = 0; i < 2 && i < ins[scalesAt]->list->size(); ++i)
      if (FailureOr<double> s = toDouble((*ins[scalesAt]->list)[i], "scale"); succeeded(s))
        scales[i] = *s;
  } else {
    for (size_t i = 0; i < 2 && scalesAt + i < ins.size(); ++i)
      if (present(ins[scalesAt + i]))
        if (FailureOr<double> s = toDouble(*ins[scalesAt + i], "scale"); succeeded(s))
          scales[i] = *s;
  }
  std::vector<int64_t> size;
  if (present(ins[1])) {
    FailureOr<std::vector<int64_t>> s = toInts(*ins[1], "output_size");
    if (failed(s))
      return failure();
    size = *s;
  } else {
    for (int i = 0; i < 2; ++i)
      size.push_back(static_cast<int64_t>(std::floor(shape[2 + i] * scales[i])));
  }
  if (size.size() != 2)
    return fail("expects two output sizes");
  Value y = *x;
  for (int i = 0; i < 2; ++i) {
    int64_t in = shape[2 + i], out = size[i];
    double scale = scales[i] > 0 ? scales[i] : static_cast<double>(out) / in;
    std::string error;
    FailureOr<std::vector<std::vector<double>>> m = resizeWeights(
        in, out, scale, linear ? "linear" : "nearest",
        !linear ? "asymmetric" : alignCorners ? "align_corners" : "half_pixel", "floor",
        error);
    if (failed(m))
      return fail(error);
    FailureOr<Value> mixed = mixAxis(y, 2 + i, *m);
    if (failed(mixed))
      return failure();
    y = *mixed;
  }
  outs.push_back(runtime(y));
  return success();
}

/// aten::max_pool2d(x, kernel, stride, padding, dilation, ceil_mode),
/// aten::avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad,
/// divisor_override).
LogicalResult TsImporter::importPool(torch::jit::Node *node, const std::string &,
                                     Inputs ins, Outputs &outs) {
  bool max = node->kind().toQualString() == std::string("aten::max_pool2d");
  FailureOr<Value> x = input(ins, 0);
  FailureOr<std::vector<int64_t>> k = toInts(*ins[1], "kernel_size"),
                                  s = toInts(*ins[2], "stride"),
                                  p = toInts(*ins[3], "padding");
  FailureOr<int64_t> ceil = toInt(*ins[max ? 5 : 4], "ceil_mode");
  if (failed(x) || failed(k) || failed(s) || failed(p) || failed(ceil))
    return failure();
  auto pair = [](std::vector<int64_t> v) {
    return v.size() == 1 ? std::vector<int64_t>{v[0], v[0]} : v;
  };
  std::vector<int64_t> kernel = pair(*k), stride = s->empty() ? kernel : pair(*s),
                       pad = pair(*p);
  if (kernel.size() != 2 || stride.size() != 2 || pad.size() != 2)
    return fail("only 2-D pooling is supported");
  int64_t countPad = 0;
  if (max) {
    FailureOr<std::vector<int64_t>> d = toInts(*ins[4], "dilation");
    if (failed(d))
      return failure();
    if (llvm::any_of(*d, [](int64_t v) { return v != 1; }))
      return fail("dilated pooling is not supported");
  } else {
    FailureOr<int64_t> c = toInt(*ins[5], "count_include_pad");
    if (failed(c))
      return failure();
    countPad = *c;
    if (ins.size() > 6 && present(ins[6]))
      return fail("divisor_override is not supported");
  }
  return pushValue(
      pool2d(max, *x, kernel, stride, {pad[0], pad[1], pad[0], pad[1]}, *ceil, countPad), outs);
}

// Shape manipulation.

/// aten::view, aten::reshape.
LogicalResult TsImporter::importView(torch::jit::Node *, const std::string &, Inputs ins,
                                     Outputs &outs) {
  FailureOr<std::vector<int64_t>> shape = toInts(*ins[1], "shape");
  if (failed(shape))
    return failure();
  for (int64_t &d : *shape)
    if (d == 0)
      return fail("zero-sized dimensions are not supported");
  return push(reshape(*ins[0], *shape), outs);
}

LogicalResult TsImporter::importFlatten(torch::jit::Node *, const std::string &,
                                        Inputs ins, Outputs &outs) {
  std::vector<int64_t> shape = shapeOf(*ins[0]);
  int64_t rank = shape.size();
  FailureOr<int64_t> s = toInt(*ins[1], "start_dim"), e = toInt(*ins[2], "end_dim");
  if (failed(s) || failed(e))
    return failure();
  int64_t start = normDim(*s, rank), end = normDim(*e, rank);
  std::vector<int64_t> out(shape.begin(), shape.begin() + start);
  int64_t merged = 1;
  for (int64_t i = start; i <= end; ++i)
    merged *= shape[i];
  out.push_back(merged);
  out.insert(out.end(), shape.begin() + end + 1, shape.end());
  return push(reshape(*ins[0], out), outs);
}

LogicalResult TsImporter::importUnflatten(torch::jit::Node *, const std::string &,
                                          Inputs ins, Outputs &outs) {
  std::vector<int64_t> shape = shapeOf(*ins[0]);
  FailureOr<int64_t> d = toInt(*ins[1], "dim");
  FailureOr<std::vector<int64_t>> sizes = toInts(*ins[2], "sizes");
  if (failed(d) || failed(sizes))
    return failure();
  int64_t dim = normDim(*d, shape.size());
  std::vector<int64_t> out(shape.begin(), shape.begin() + dim);
  out.insert(out.end(), sizes->begin(), sizes->end());
  out.insert(out.end(), shape.begin() + dim + 1, shape.end());
  return push(reshape(*ins[0], out), outs);
}

/// aten::unsqueeze, aten::squeeze, and aten::select (a slice of one, squeezed).
LogicalResult TsImporter::importSqueeze(torch::jit::Node *, const std::string &kind,
                                        Inputs ins, Outputs &outs) {
  std::vector<int64_t> shape = shapeOf(*ins[0]);
  int64_t rank = shape.size();
  FailureOr<int64_t> d = ins.size() > 1 ? toInt(*ins[1], "dim") : FailureOr<int64_t>(-1);
  if (failed(d))
    return failure();
  if (kind == "aten::unsqueeze") {
    int64_t dim = normDim(*d, rank + 1);
    shape.insert(shape.begin() + dim, 1);
    return push(reshape(*ins[0], shape), outs);
  }
  if (kind == "aten::squeeze") {
    std::vector<int64_t> out;
    for (int64_t i = 0; i < rank; ++i)
      if (shape[i] != 1 || (ins.size() > 1 && i != normDim(*d, rank)))
        out.push_back(shape[i]);
    return push(reshape(*ins[0], out), outs);
  }
  FailureOr<int64_t> index = toInt(*ins[2], "index");
  if (failed(index))
    return failure();
  int64_t dim = normDim(*d, rank);
  int64_t i = *index < 0 ? *index + shape[dim] : *index;
  FailureOr<TVal> s = slice(*ins[0], dim, i, i + 1, 1);
  if (failed(s))
    return failure();
  shape.erase(shape.begin() + dim);
  FailureOr<TVal> selected = reshape(*s, shape);
  if (failed(selected))
    return failure();
  selected->view = sliceView(*ins[0], dim, i, i + 1, 1);
  return push(selected, outs);
}

/// aten::transpose, aten::t.
LogicalResult TsImporter::importTranspose(torch::jit::Node *, const std::string &kind,
                                          Inputs ins, Outputs &outs) {
  int64_t rank = shapeOf(*ins[0]).size();
  int64_t a = 0, b = 1;
  if (kind == "aten::transpose") {
    FailureOr<int64_t> d0 = toInt(*ins[1], "dim0"), d1 = toInt(*ins[2], "dim1");
    if (failed(d0) || failed(d1))
      return failure();
    a = normDim(*d0, rank);
    b = normDim(*d1, rank);
  }
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    perm.push_back(i == a ? b : i == b ? a : i);
  return push(transpose(*ins[0], perm), outs);
}

/// aten::permute, and aten::numpy_T (Tensor.T: every dimension reversed).
LogicalResult TsImporter::importPermute(torch::jit::Node *, const std::string &kind,
                                        Inputs ins, Outputs &outs) {
  if (kind == "aten::numpy_T") {
    std::vector<int64_t> reversed(shapeOf(*ins[0]).size());
    for (size_t i = 0; i < reversed.size(); ++i)
      reversed[i] = reversed.size() - 1 - i;
    return push(transpose(*ins[0], reversed), outs);
  }
  FailureOr<std::vector<int64_t>> dims = toInts(*ins[1], "dims");
  if (failed(dims))
    return failure();
  for (int64_t &d : *dims)
    d = normDim(d, dims->size());
  return push(transpose(*ins[0], *dims), outs);
}

LogicalResult TsImporter::importExpand(torch::jit::Node *, const std::string &,
                                       Inputs ins, Outputs &outs) {
  FailureOr<std::vector<int64_t>> size = toInts(*ins[1], "size");
  if (failed(size))
    return failure();
  return push(expand(*ins[0], *size), outs);
}

/// aten::repeat: each dimension repeated by its count, as concatenations of
/// copies (whose gradient adds the copies' up); counts beyond the tensor's
/// rank add leading dimensions, as torch.Tensor.repeat does.
LogicalResult TsImporter::importRepeat(torch::jit::Node *, const std::string &, Inputs ins,
                                       Outputs &outs) {
  FailureOr<std::vector<int64_t>> counts = toInts(*ins[1], "repeats");
  if (failed(counts))
    return failure();
  std::vector<int64_t> shape = shapeOf(*ins[0]);
  if (counts->size() < shape.size())
    return fail("repeat needs a count for each of the " + std::to_string(shape.size()) +
                " dimensions, got " + std::to_string(counts->size()));
  shape.insert(shape.begin(), counts->size() - shape.size(), 1);
  FailureOr<TVal> x = reshape(*ins[0], shape);
  for (auto [dim, count] : llvm::enumerate(*counts)) {
    if (failed(x))
      return failure();
    if (count < 1)
      return fail("repeat counts must be positive, got " + std::to_string(count));
    if (count == 1)
      continue;
    std::vector<TVal> copies(count, *x);
    x = concat(copies, int64_t(dim));
  }
  return push(x, outs);
}

/// aten::pad (mode "constant") and aten::constant_pad_nd: slabs of the value
/// (a broadcast scalar) before and after each padded dimension, the pairs
/// given from the last dimension backwards; negative pads crop.
LogicalResult TsImporter::importPad(torch::jit::Node *, const std::string &kind, Inputs ins,
                                    Outputs &outs) {
  FailureOr<std::vector<int64_t>> pads = toInts(*ins[1], "pad");
  if (failed(pads))
    return failure();
  size_t valueAt = 2;
  if (kind == "aten::pad") {
    if (present(ins[2]) && ins[2]->str && *ins[2]->str != "constant")
      return fail("pad mode '" + *ins[2]->str + "' is not supported (only 'constant')");
    valueAt = 3;
  }
  double fill = 0;
  if (ins.size() > valueAt && present(ins[valueAt])) {
    FailureOr<double> v = toDouble(*ins[valueAt], "value");
    if (failed(v))
      return failure();
    fill = *v;
  }
  std::vector<int64_t> shape = shapeOf(*ins[0]);
  int64_t rank = int64_t(shape.size());
  if (pads->size() % 2 || int64_t(pads->size()) > 2 * rank)
    return fail("pad needs pairs for at most the " + std::to_string(rank) +
                " dimensions, got " + std::to_string(pads->size()) + " values");
  FailureOr<Value> x = tensor(*ins[0]);
  for (size_t k = 0; k < pads->size() / 2 && succeeded(x); ++k) {
    int64_t dim = rank - 1 - int64_t(k), before = (*pads)[2 * k], after = (*pads)[2 * k + 1];
    TVal cur = runtime(*x);
    if (before < 0 || after < 0) {
      int64_t size = shapeOf(cur)[dim];
      FailureOr<TVal> cropped =
          slice(cur, dim, std::max<int64_t>(0, -before), size - std::max<int64_t>(0, -after), 1);
      if (failed(cropped))
        return failure();
      cur = *cropped;
    }
    std::vector<TVal> parts;
    auto slab = [&](int64_t size) -> LogicalResult {
      auto type = mlir::cast<RankedTensorType>(cur.value.getType());
      SmallVector<int64_t> slabShape(type.getShape());
      slabShape[dim] = size;
      TVal scalar;
      scalar.host = HostTensor::scalar(fill, ox::dtypeOf(type.getElementType()));
      FailureOr<Value> c = tensor(scalar);
      if (failed(c))
        return failure();
      auto b = createTyped<BroadcastToOp>(type.clone(slabShape), *c);
      if (failed(b))
        return failure();
      parts.push_back(runtime(b->getResult()));
      return success();
    };
    if (before > 0 && failed(slab(before)))
      return failure();
    parts.push_back(cur);
    if (after > 0 && failed(slab(after)))
      return failure();
    FailureOr<TVal> joined = parts.size() == 1 ? FailureOr<TVal>(cur) : concat(parts, dim);
    if (failed(joined))
      return failure();
    x = tensor(*joined);
  }
  if (failed(x))
    return failure();
  outs.push_back(runtime(*x));
  return success();
}

LogicalResult TsImporter::importCat(torch::jit::Node *, const std::string &, Inputs ins,
                                    Outputs &outs) {
  FailureOr<int64_t> dim = toInt(*ins[1], "dim");
  if (failed(dim) || !ins[0]->list)
    return fail("cat needs a list of tensors and a constant dim");
  return push(concat(*ins[0]->list, *dim), outs);
}

LogicalResult TsImporter::importSlice(torch::jit::Node *, const std::string &, Inputs ins,
                                      Outputs &outs) {
  FailureOr<int64_t> dim = toInt(*ins[1], "dim");
  int64_t start = 0, end = std::numeric_limits<int64_t>::max(), step = 1;
  if (present(ins[2])) start = *toInt(*ins[2], "start");
  if (present(ins[3])) end = *toInt(*ins[3], "end");
  if (ins.size() > 4 && present(ins[4])) step = *toInt(*ins[4], "step");
  if (failed(dim))
    return failure();
  FailureOr<TVal> r = slice(*ins[0], *dim, start, end, step);
  if (failed(r))
    return failure();
  r->view = sliceView(*ins[0], *dim, start, end, step);
  return push(r, outs);
}

/// aten::copy_(view, src), aten::fill_(view, value): writes `src` (broadcast)
/// into a slice of a tensor, which later reads of that tensor see: on the
/// host when both are known now (the causal masks Hugging Face decoders build
/// with in-place slice assignments, Swin's shifted-window masks, BEiT's
/// relative position index), else as a scatter at the slice's offsets.
LogicalResult TsImporter::importCopy(torch::jit::Node *, const std::string &, Inputs ins,
                                     Outputs &outs) {
  TVal &dst = *ins[0];
  FailureOr<TVal> src = expand(*ins[1], shapeOf(dst));
  if (failed(src))
    return failure();
  FailureOr<TVal> written = cast(*src, ox::dtypeOf(typeOf(dst).getElementType()));
  if (failed(written))
    return failure();
  if (dst.view) {
    TVal &root = *dst.view->root;
    std::vector<int64_t> rootShape = shapeOf(root);
    HostTensor offsets{ox::kInt64, {rootShape.begin(), rootShape.end()}, {}};
    for (int64_t i = 0, n = offsets.numel(); i < n; ++i)
      offsets.values.push_back(i);
    for (auto &step : dst.view->steps) {
      ox::EvalResult r = step(offsets);
      if (r.kind != ox::EvalResult::Folded)
        return fail("the written slice: " + r.error);
      offsets = std::move(r.outputs[0]);
    }
    if (root.host && written->host) {
      for (int64_t i = 0, n = offsets.numel(); i < n; ++i)
        root.host->values[offsets.asInt(i)] = written->host->values[i];
    } else {
      FailureOr<Value> before = tensor(root), update = tensor(*written);
      if (failed(before) || failed(update))
        return failure();
      FailureOr<Value> after = scatterFlat(*before, offsets.asInts(), *update);
      if (failed(after))
        return failure();
      root.value = *after;
      root.host.reset();
    }
  }
  dst.host = written->host;
  dst.value = written->value;
  outs.push_back(dst);
  return success();
}

/// aten::clamp(x, min, max) with either bound None, aten::clamp_min,
/// aten::clamp_max (and in place): computed now of a tensor known now.
LogicalResult TsImporter::importClamp(torch::jit::Node *, const std::string &kind, Inputs ins,
                                      Outputs &outs) {
  auto bound = [&](size_t i) -> FailureOr<std::optional<double>> {
    if (i >= ins.size() || !present(ins[i]))
      return std::optional<double>();
    FailureOr<double> v = toDouble(*ins[i], "clamp bound");
    if (failed(v))
      return failure();
    return std::optional<double>(*v);
  };
  llvm::StringRef k = llvm::StringRef(kind).rtrim('_');
  FailureOr<std::optional<double>> lo = k == "aten::clamp_max" ? std::optional<double>() : bound(1);
  FailureOr<std::optional<double>> hi = k == "aten::clamp_min" ? std::optional<double>()
                                        : k == "aten::clamp_max" ? bound(1)
                                                                 : bound(2);
  if (failed(lo) || failed(hi))
    return failure();
  if (ins[0]->host) {
    TVal y = *ins[0];
    for (auto [b, op] : {std::pair(*lo, "Max"), std::pair(*hi, "Min")}) {
      if (!b)
        continue;
      HostTensor bt = HostTensor::scalar(*b, y.host->dtype);
      FailureOr<TVal> next = evalHost(op, {&*y.host, &bt}, attrs());
      if (failed(next))
        return failure();
      y = *next;
    }
    outs.push_back(y);
    return success();
  }
  FailureOr<Value> x = input(ins, 0);
  if (failed(x))
    return failure();
  return pushValue(clamp(*x, *lo, *hi), outs);
}

/// aten::gather(x, dim, index): ONNX's GatherElements, computed now when
/// both are known, else a gather of x's flat form at offsets known now
/// (GPT-J's rotary table).
LogicalResult TsImporter::importGatherElements(torch::jit::Node *, const std::string &,
                                               Inputs ins, Outputs &outs) {
  FailureOr<int64_t> dim = toInt(*ins[1], "dim");
  if (failed(dim))
    return failure();
  if (!ins[2]->host)
    return fail("indices must be constant (known at import time)");
  auto axis = attrs({{"axis", *dim}});
  if (ins[0]->host)
    return push(evalHost("GatherElements", {&*ins[0]->host, &*ins[2]->host}, axis), outs);
  FailureOr<Value> x = input(ins, 0);
  if (failed(x))
    return failure();
  return pushValue(gatherAt("GatherElements", *x, *ins[2]->host, axis), outs);
}

/// aten::stack(tensors, dim): each with a new dimension `dim`, concatenated.
LogicalResult TsImporter::importStack(torch::jit::Node *, const std::string &, Inputs ins,
                                      Outputs &outs) {
  if (!ins[0]->list || ins[0]->list->empty())
    return fail("expects a non-empty list of tensors");
  FailureOr<int64_t> d = toInt(*ins[1], "dim");
  if (failed(d))
    return failure();
  std::vector<TVal> parts;
  int64_t dim = 0;
  for (TVal &x : *ins[0]->list) {
    std::vector<int64_t> shape = shapeOf(x);
    dim = normDim(*d, shape.size() + 1);
    shape.insert(shape.begin() + dim, 1);
    FailureOr<TVal> part = reshape(x, shape);
    if (failed(part))
      return failure();
    parts.push_back(*part);
  }
  return push(concat(parts, dim), outs);
}

/// aten::meshgrid(tensors, indexing): each 1-d tensor along its own
/// dimension of the grid, broadcast to all of it ("ij"; "xy" swaps the
/// first two dimensions). BEiT's relative positions.
LogicalResult TsImporter::importMeshgrid(torch::jit::Node *n, const std::string &, Inputs ins,
                                         Outputs &outs) {
  if (!ins[0]->list || ins[0]->list->empty())
    return fail("expects a non-empty list of tensors");
  std::vector<TVal> &xs = *ins[0]->list;
  bool xy = false;
  if (TVal *i = arg(n, ins, "indexing"); present(i) && i->str) {
    if (*i->str != "ij" && *i->str != "xy")
      return fail("unknown indexing '" + *i->str + "'");
    xy = *i->str == "xy";
  }
  size_t rank = xs.size();
  std::vector<int64_t> grid;
  for (TVal &x : xs) {
    std::vector<int64_t> s = shapeOf(x);
    if (s.size() > 1)
      return fail("expects 0-d or 1-d tensors");
    grid.push_back(s.empty() ? 1 : s[0]);
  }
  auto dimOf = [&](size_t k) { return xy && rank > 1 && k < 2 ? 1 - k : k; };
  std::vector<int64_t> full(rank);
  for (size_t k = 0; k < rank; ++k)
    full[dimOf(k)] = grid[k];
  TVal list;
  list.list.emplace();
  for (size_t k = 0; k < rank; ++k) {
    std::vector<int64_t> one(rank, 1);
    one[dimOf(k)] = grid[k];
    FailureOr<TVal> r = reshape(xs[k], one);
    if (failed(r))
      return failure();
    FailureOr<TVal> e = expand(*r, full);
    if (failed(e))
      return failure();
    list.list->push_back(*e);
  }
  outs.push_back(std::move(list));
  return success();
}

/// aten::roll(x, shifts, dims): per dimension, the last `shift` elements
/// moved to the front (two slices concatenated; Swin's shifted windows).
/// Without dims, the flattened tensor rolls.
LogicalResult TsImporter::importRoll(torch::jit::Node *, const std::string &, Inputs ins,
                                     Outputs &outs) {
  FailureOr<std::vector<int64_t>> shifts = toInts(*ins[1], "shifts");
  FailureOr<std::vector<int64_t>> dims =
      ins.size() > 2 && present(ins[2]) ? toInts(*ins[2], "dims") : std::vector<int64_t>();
  if (failed(shifts) || failed(dims))
    return failure();
  TVal x = *ins[0];
  std::vector<int64_t> shape = shapeOf(x);
  bool flat = dims->empty();
  if (flat) {
    FailureOr<TVal> f = reshape(x, {-1});
    if (failed(f))
      return failure();
    x = *f;
    dims->assign(1, 0);
  }
  if (shifts->size() != dims->size())
    return fail("needs one shift per dimension");
  for (auto [shift, d] : llvm::zip(*shifts, *dims)) {
    int64_t dim = normDim(d, shapeOf(x).size()), n = shapeOf(x)[dim];
    int64_t s = n ? ((shift % n) + n) % n : 0;
    if (s == 0)
      continue;
    FailureOr<TVal> tail = slice(x, dim, n - s, n, 1), head = slice(x, dim, 0, n - s, 1);
    if (failed(tail) || failed(head))
      return failure();
    std::vector<TVal> parts = {*tail, *head};
    FailureOr<TVal> rolled = concat(parts, dim);
    if (failed(rolled))
      return failure();
    x = *rolled;
  }
  return push(flat ? reshape(x, shape) : FailureOr<TVal>(x), outs);
}

/// aten::einsum(equation, tensors, path).
LogicalResult TsImporter::importEinsum(torch::jit::Node *, const std::string &, Inputs ins,
                                       Outputs &outs) {
  if (!ins[0]->str || !ins[1]->list)
    return fail("expects an equation and a list of tensors");
  SmallVector<Value> operands;
  for (TVal &t : *ins[1]->list) {
    FailureOr<Value> v = tensor(t);
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  return pushValue(einsum(*ins[0]->str, operands), outs);
}

/// aten::index_select(x, dim, index): ONNX's Gather along `dim`.
LogicalResult TsImporter::importIndexSelect(torch::jit::Node *, const std::string &,
                                            Inputs ins, Outputs &outs) {
  FailureOr<int64_t> d = toInt(*ins[1], "dim");
  if (failed(d))
    return failure();
  int64_t dim = normDim(*d, shapeOf(*ins[0]).size());
  if (ins[0]->host && ins[2]->host)
    return push(evalHost("Gather", {&*ins[0]->host, &*ins[2]->host}, attrs({{"axis", dim}})),
                outs);
  FailureOr<Value> x = tensor(*ins[0]), idx = tensor(*ins[2]);
  if (failed(x) || failed(idx))
    return failure();
  return pushOp(create<GatherOp>(*x, *idx, builder.getI64IntegerAttr(dim)), outs);
}

/// aten::bitwise_not of a tensor known now: logical not of booleans, ~x
/// (-x - 1) of integers.
LogicalResult TsImporter::importBitwiseNot(torch::jit::Node *, const std::string &,
                                           Inputs ins, Outputs &outs) {
  if (!ins[0]->host)
    return fail("is supported only on values known at import time");
  if (ins[0]->host->dtype == ox::kBool)
    return push(evalHost("Not", {&*ins[0]->host}, attrs()), outs);
  TVal y = *ins[0];
  for (double &v : y.host->values)
    v = -v - 1;
  outs.push_back(y);
  return success();
}

/// aten::square: x * x.
LogicalResult TsImporter::importSquare(torch::jit::Node *, const std::string &, Inputs ins,
                                       Outputs &outs) {
  return push(binary("Mul", *ins[0], *ins[0]), outs);
}

/// aten::ceil, aten::floor, aten::remainder (Python's %, the divisor's sign:
/// ONNX Mod with fmod 0) of numbers and tensors known at import time (sizes
/// of windows and patches).
LogicalResult TsImporter::importHostMath(torch::jit::Node *, const std::string &kind,
                                         Inputs ins, Outputs &outs) {
  for (TVal *in : ins)
    if (present(in) && !in->host)
      return fail("is supported only on values known at import time");
  if (kind == "aten::remainder")
    return push(binary("Mod", *ins[0], *ins[1]), outs);
  return push(evalHost(kind == "aten::ceil" ? "Ceil" : "Floor", {&*ins[0]->host}, attrs()),
              outs);
}

/// aten::repeat_interleave(x, repeats, dim) with one repeat count: each
/// element `repeats` times in a row along `dim` (the whole tensor flattened
/// when dim is None): a new dimension after `dim`, concatenated copies,
/// merged back.
LogicalResult TsImporter::importRepeatInterleave(torch::jit::Node *, const std::string &,
                                                 Inputs ins, Outputs &outs) {
  if (ins.size() < 2 || !ins[1]->host || ins[1]->host->numel() != 1)
    return fail("only one repeat count known at import time is supported");
  FailureOr<int64_t> r = toInt(*ins[1], "repeats");
  if (failed(r) || *r < 1)
    return fail("repeat count must be positive");
  TVal x = *ins[0];
  std::vector<int64_t> shape = shapeOf(x);
  int64_t dim = 0;
  if (ins.size() > 2 && present(ins[2])) {
    FailureOr<int64_t> d = toInt(*ins[2], "dim");
    if (failed(d))
      return failure();
    dim = normDim(*d, shape.size());
  } else {
    FailureOr<TVal> flat = reshape(x, {-1});
    if (failed(flat))
      return failure();
    x = *flat;
    shape = shapeOf(x);
  }
  std::vector<int64_t> split = shape;
  split.insert(split.begin() + dim + 1, 1);
  FailureOr<TVal> unit = reshape(x, split);
  if (failed(unit))
    return failure();
  std::vector<TVal> copies(*r, *unit);
  FailureOr<TVal> repeated = concat(copies, dim + 1);
  if (failed(repeated))
    return failure();
  shape[dim] *= *r;
  return push(reshape(*repeated, shape), outs);
}

/// aten::tensor(data, dtype, ...): a constant from a (nested) list of
/// numbers; PyTorch's dtype when none is given: float32 if any number is a
/// float, else int64.
LogicalResult TsImporter::importTensor(torch::jit::Node *n, const std::string &, Inputs ins,
                                       Outputs &outs) {
  HostTensor h;
  bool anyFloat = false;
  std::function<LogicalResult(TVal &, size_t)> flatten = [&](TVal &v, size_t depth) {
    if (v.list) {
      if (depth == h.shape.size())
        h.shape.push_back(v.list->size());
      else if (h.shape[depth] != static_cast<int64_t>(v.list->size()))
        return fail("the data's rows have different lengths");
      for (TVal &item : *v.list)
        if (failed(flatten(item, depth + 1)))
          return failure();
      return success();
    }
    if (!v.host || v.host->numel() != 1)
      return fail("the data must be numbers known at import time");
    anyFloat |= ox::isFloatDType(v.host->dtype);
    h.values.push_back(v.host->values[0]);
    return success();
  };
  if (failed(flatten(*ins[0], 0)))
    return failure();
  h.dtype = anyFloat ? ox::kFloat : ox::kInt64;
  if (TVal *d = arg(n, ins, "dtype"); present(d))
    h.dtype = dtypeOf(static_cast<c10::ScalarType>(*toInt(*d, "dtype")));
  for (double &v : h.values)
    v = HostTensor::convert(v, h.dtype);
  TVal t;
  t.host = std::move(h);
  outs.push_back(std::move(t));
  return success();
}

/// aten::masked_fill_: aten::masked_fill whose result later reads of the
/// filled tensor see.
LogicalResult TsImporter::importMaskedFillInPlace(torch::jit::Node *n, const std::string &kind,
                                                  Inputs ins, Outputs &outs) {
  Outputs filled;
  if (failed(importMaskedFill(n, kind, ins, filled)))
    return failure();
  TVal src = filled[0];
  TVal *copyIns[] = {ins[0], &src};
  return importCopy(n, kind, copyIns, outs);
}

/// aten::split, aten::chunk, aten::unbind: a list of slices.
LogicalResult TsImporter::importSplit(torch::jit::Node *, const std::string &kind,
                                      Inputs ins, Outputs &outs) {
  std::vector<int64_t> shape = shapeOf(*ins[0]);
  FailureOr<int64_t> d = toInt(*ins[kind == "aten::unbind" ? 1 : 2], "dim");
  if (failed(d))
    return failure();
  int64_t dim = normDim(*d, shape.size());
  std::vector<int64_t> sizes;
  if (kind == "aten::unbind") {
    sizes.assign(shape[dim], 1);
  } else if (ins[1]->list || kind == "aten::split_with_sizes") {
    FailureOr<std::vector<int64_t>> s = toInts(*ins[1], "split sizes");
    if (failed(s))
      return failure();
    sizes = *s;
  } else {
    FailureOr<int64_t> n = toInt(*ins[1], "split size");
    if (failed(n) || *n <= 0)
      return fail("split size must be a positive constant");
    int64_t chunk = kind == "aten::chunk" ? (shape[dim] + *n - 1) / *n : *n;
    for (int64_t left = shape[dim]; left > 0; left -= chunk)
      sizes.push_back(std::min(chunk, left));
  }
  TVal list;
  list.list.emplace();
  int64_t offset = 0;
  for (int64_t s : sizes) {
    FailureOr<TVal> piece = slice(*ins[0], dim, offset, offset + s, 1);
    if (failed(piece))
      return failure();
    if (kind == "aten::unbind") {
      std::vector<int64_t> out = shape;
      out.erase(out.begin() + dim);
      piece = reshape(*piece, out);
      if (failed(piece))
        return failure();
    }
    list.list->push_back(*piece);
    offset += s;
  }
  outs.push_back(std::move(list));
  return success();
}

/// aten::to, aten::type_as: a cast, or the input when no dtype is given.
LogicalResult TsImporter::importTo(torch::jit::Node *n, const std::string &kind,
                                   Inputs ins, Outputs &outs) {
  int32_t dt = 0;
  if (kind == "aten::type_as") {
    dt = ox::dtypeOf(typeOf(*ins[1]).getElementType());
  } else if (TVal *d = arg(n, ins, "dtype"); present(d)) {
    FailureOr<int64_t> v = toInt(*d, "dtype");
    if (failed(v))
      return failure();
    dt = dtypeOf(static_cast<c10::ScalarType>(*v));
  } else if (TVal *other = arg(n, ins, "other"); present(other)) {
    dt = ox::dtypeOf(typeOf(*other).getElementType());
  }
  if (dt == 0) {
    outs.push_back(*ins[0]);
    return success();
  }
  return push(cast(*ins[0], dt), outs);
}

/// aten::arange, computed now.
LogicalResult TsImporter::importArange(torch::jit::Node *n, const std::string &,
                                       Inputs ins, Outputs &outs) {
  TVal *s = arg(n, ins, "start"), *e = arg(n, ins, "end"), *st = arg(n, ins, "step");
  double start = present(s) ? *toDouble(*s, "start") : 0;
  double end = present(e) ? *toDouble(*e, "end") : 0;
  double step = present(st) ? *toDouble(*st, "step") : 1;
  int32_t dt = ox::kInt64;
  if (TVal *d = arg(n, ins, "dtype"); present(d))
    dt = dtypeOf(static_cast<c10::ScalarType>(*toInt(*d, "dtype")));
  else if ((present(s) && ox::isFloatDType(s->host->dtype)) ||
           ox::isFloatDType(e->host->dtype))
    dt = ox::kFloat;
  HostTensor a = HostTensor::scalar(start, dt), b = HostTensor::scalar(end, dt),
             c = HostTensor::scalar(step, dt);
  return push(evalHost("Range", {&a, &b, &c}, attrs()), outs);
}

/// aten::ones, aten::zeros, aten::full: host tensors.
/// aten::ones, zeros, full and their *_like forms (the shape and, unless
/// given, the element type of a tensor): constants.
LogicalResult TsImporter::importFill(torch::jit::Node *n, const std::string &kind,
                                     Inputs ins, Outputs &outs) {
  // aten::new_zeros(x, size, ...) and friends: x's dtype, the given size.
  llvm::StringRef k(kind);
  bool like = k.ends_with("_like"), fromTensor = k.starts_with("aten::new_");
  if (fromTensor)
    k = k.drop_front(strlen("aten::new_"));
  else
    k = k.drop_front(strlen("aten::"));
  FailureOr<std::vector<int64_t>> size =
      like ? FailureOr<std::vector<int64_t>>(shapeOf(*ins[0]))
           : toInts(*ins[fromTensor ? 1 : 0], "size");
  if (failed(size))
    return failure();
  double fill = k.starts_with("ones") ? 1 : 0;
  int32_t dt = like || fromTensor ? ox::dtypeOf(typeOf(*ins[0]).getElementType()) : ox::kFloat;
  if (k.starts_with("full")) {
    TVal &value = *ins[fromTensor ? 2 : 1];
    FailureOr<double> v = toDouble(value, "fill_value");
    if (failed(v))
      return failure();
    fill = *v;
    if (!like && !fromTensor && !ox::isFloatDType(value.host->dtype))
      dt = ox::kInt64;
  }
  if (TVal *d = arg(n, ins, "dtype"); present(d))
    dt = dtypeOf(static_cast<c10::ScalarType>(*toInt(*d, "dtype")));
  HostTensor h{dt, llvm::SmallVector<int64_t>(size->begin(), size->end()), {}};
  if (h.numel() > ox::kMaxHostElements)
    return fail("constant of " + std::to_string(h.numel()) + " elements is too large");
  h.values.assign(h.numel(), HostTensor::convert(fill, dt));
  TVal t;
  t.host = std::move(h);
  outs.push_back(std::move(t));
  return success();
}

/// aten::triu, aten::tril of a tensor known at import time.
LogicalResult TsImporter::importTriangle(torch::jit::Node *, const std::string &kind,
                                         Inputs ins, Outputs &outs) {
  if (!ins[0]->host)
    return fail("unsupported op");
  FailureOr<int64_t> diagonal = toInt(*ins[1], "diagonal");
  if (failed(diagonal))
    return failure();
  HostTensor k = HostTensor::scalar(*diagonal, ox::kInt64);
  return push(evalHost("Trilu", {&*ins[0]->host, &k},
                       attrs({{"upper", kind == "aten::triu" ? 1 : 0}})),
              outs);
}

/// aten::where(condition, x, y): computed now when all three are known,
/// else colo.select (numbers take the other branch's element type).
LogicalResult TsImporter::importWhere(torch::jit::Node *, const std::string &, Inputs ins,
                                      Outputs &outs) {
  if (ins.size() != 3)
    return fail("only where(condition, x, y) is supported");
  if (ins[0]->host && ins[1]->host && ins[2]->host)
    return push(evalHost("Where", {&*ins[0]->host, &*ins[1]->host, &*ins[2]->host}, attrs()),
                outs);
  FailureOr<Value> cond = tensor(*ins[0]);
  FailureOr<std::pair<Value, Value>> xy = operands(*ins[1], *ins[2]);
  if (failed(cond) || failed(xy))
    return failure();
  return pushOp(create<SelectOp>(*cond, xy->first, xy->second), outs);
}

/// aten::cumsum(x, dim, dtype): computed now of a tensor known now (BLOOM's
/// ALiBi positions from the attention mask), else colo.cumsum (RoBERTa's
/// position ids from the ids).
LogicalResult TsImporter::importCumsum(torch::jit::Node *n, const std::string &, Inputs ins,
                                       Outputs &outs) {
  FailureOr<int64_t> dim = toInt(*ins[1], "dim");
  if (failed(dim))
    return failure();
  // PyTorch sums integers and booleans as int64 unless a dtype is given.
  int32_t dt = ox::dtypeOf(typeOf(*ins[0]).getElementType());
  if (!ox::isFloatDType(dt))
    dt = ox::kInt64;
  if (TVal *d = arg(n, ins, "dtype"); present(d))
    dt = dtypeOf(static_cast<c10::ScalarType>(*toInt(*d, "dtype")));
  FailureOr<TVal> x = cast(*ins[0], dt);
  if (failed(x))
    return failure();
  if (x->host) {
    HostTensor axis = HostTensor::scalar(*dim, ox::kInt64);
    return push(evalHost("CumSum", {&*x->host, &axis}, attrs()), outs);
  }
  return pushOp(create<CumSumOp>(x->value, builder.getI64IntegerAttr(*dim), UnitAttr(),
                                 UnitAttr()),
                outs);
}

/// aten::index with index tensors known now for the leading dimensions
/// (`x[rows, cols]`): ONNX's GatherND of the broadcast indices stacked.
LogicalResult TsImporter::indexLeading(TVal &x, std::vector<TVal> &indices, Outputs &outs) {
  llvm::SmallVector<int64_t> common;
  for (TVal &i : indices) {
    if (!i.host)
      return fail("indexing with several index tensors needs them known at import time");
    llvm::SmallVector<int64_t> next;
    if (!ox::broadcastShapes(common, i.host->shape, next))
      return fail("index tensors do not broadcast together");
    common = next;
  }
  int64_t k = indices.size(), n = 1;
  for (int64_t s : common)
    n *= s;
  HostTensor stacked{ox::kInt64, common, std::vector<double>(n * k)};
  stacked.shape.push_back(k);
  HostTensor shapeT = HostTensor::vector(common);
  for (int64_t d = 0; d < k; ++d) {
    FailureOr<TVal> e = evalHost("Expand", {&*indices[d].host, &shapeT}, attrs());
    if (failed(e))
      return failure();
    for (int64_t j = 0; j < n; ++j)
      stacked.values[j * k + d] = e->host->values[j];
  }
  if (x.host)
    return push(evalHost("GatherND", {&*x.host, &stacked}, attrs()), outs);
  FailureOr<Value> xv = tensor(x);
  if (failed(xv))
    return failure();
  return pushValue(gatherAt("GatherND", *xv, stacked, attrs()), outs);
}

/// aten::index with one index tensor (the other dimensions whole:
/// `x[..., [-2], :]`, Falcon's multi-query keys) is a gather along it; with
/// several, see indexLeading.
LogicalResult TsImporter::importIndex(torch::jit::Node *, const std::string &, Inputs ins,
                                      Outputs &outs) {
  if (!ins[1]->list)
    return fail("expected a list of indices");
  std::optional<int64_t> dim;
  std::vector<TVal> leading;
  bool gap = false;
  for (auto [d, idx] : llvm::enumerate(*ins[1]->list)) {
    if (idx.none) {
      gap = true;
      continue;
    }
    if (!gap)
      leading.push_back(idx);
    else if (dim)
      return fail("several index tensors are supported only for the leading dimensions");
    dim = d;
  }
  if (leading.size() > 1) {
    if (leading.size() != llvm::count_if(*ins[1]->list, [](TVal &i) { return !i.none; }))
      return fail("several index tensors are supported only for the leading dimensions");
    return indexLeading(*ins[0], leading, outs);
  }
  if (!dim)
    return fail("expected an index tensor");
  TVal &idx = (*ins[1]->list)[*dim];
  if (ins[0]->host && idx.host)
    return push(evalHost("Gather", {&*ins[0]->host, &*idx.host}, attrs({{"axis", *dim}})),
                outs);
  FailureOr<Value> x = tensor(*ins[0]), i = tensor(idx);
  if (failed(x) || failed(i))
    return failure();
  Type e = mlir::cast<RankedTensorType>(i->getType()).getElementType();
  if (!e.isSignlessInteger() || e.isInteger(1))
    return fail("boolean (mask) indices are not supported");
  return pushOp(create<GatherOp>(*x, *i, builder.getI64IntegerAttr(*dim)), outs);
}

LogicalResult TsImporter::importMaskedFill(torch::jit::Node *, const std::string &,
                                           Inputs ins, Outputs &outs) {
  TVal &x = *ins[0], &mask = *ins[1], &value = *ins[2];
  if (x.host && mask.host && value.host) {
    // The result keeps x's dtype (Swin's float(-100.0) into an f32 mask).
    HostTensor v = *value.host;
    v.dtype = x.host->dtype;
    for (double &e : v.values)
      e = HostTensor::convert(e, v.dtype);
    return push(evalHost("Where", {&*mask.host, &v, &*x.host}, attrs()), outs);
  }
  FailureOr<Value> xv = tensor(x), mv = tensor(mask);
  if (failed(xv) || failed(mv))
    return failure();
  TVal v = value;
  if (v.host) {
    v.host->dtype = ox::dtypeOf(typeOf(x).getElementType());
  }
  FailureOr<Value> vv = tensor(v);
  if (failed(vv))
    return failure();
  return pushOp(create<SelectOp>(*mv, *vv, *xv), outs);
}

/// aten::scaled_dot_product_attention.
LogicalResult TsImporter::importAttention(torch::jit::Node *n, const std::string &,
                                          Inputs ins, Outputs &outs) {
  FailureOr<Value> q = input(ins, 0), k = input(ins, 1), v = input(ins, 2);
  if (failed(q) || failed(k) || failed(v))
    return failure();
  Value mask;
  if (TVal *m = arg(n, ins, "attn_mask"); present(m)) {
    TVal additive = *m;
    if (typeOf(*m).getElementType().isInteger(1)) {
      // A boolean mask keeps positions where it is true.
      if (!m->host)
        return fail("boolean attention masks must be known at import time");
      for (double &x : additive.host->values)
        x = x ? 0.0 : -INFINITY;
      additive.host->dtype = ox::dtypeOf(mlir::cast<RankedTensorType>(q->getType()).getElementType());
    }
    FailureOr<Value> mv = tensor(additive);
    if (failed(mv))
      return failure();
    mask = *mv;
  }
  double dropout = 0;
  if (TVal *p = arg(n, ins, "dropout_p"); present(p))
    dropout = *toDouble(*p, "dropout_p");
  bool causal = false;
  if (TVal *c = arg(n, ins, "is_causal"); present(c))
    causal = *toInt(*c, "is_causal");
  int64_t d = mlir::cast<RankedTensorType>(q->getType()).getShape().back();
  double scale = 1.0 / std::sqrt(static_cast<double>(d));
  if (TVal *s = arg(n, ins, "scale"); present(s))
    scale = *toDouble(*s, "scale");
  return pushOp(create<AttentionOp>(*q, *k, *v, mask, builder.getF64FloatAttr(scale),
                                    causal ? builder.getUnitAttr() : UnitAttr(),
                                    builder.getF64FloatAttr(dropout)),
                outs);
}

const llvm::StringMap<TsImporter::Handler> &TsImporter::handlers() {
  static const llvm::StringMap<Handler> table = [] {
    llvm::StringMap<Handler> t;
    t["prim::Constant"] = &TsImporter::importConstant;
    t["prim::GetAttr"] = &TsImporter::importGetAttr;
    t["prim::ListConstruct"] = t["prim::TupleConstruct"] = &TsImporter::importConstruct;
    t["prim::ListUnpack"] = t["prim::TupleUnpack"] = &TsImporter::importUnpack;
    t["aten::__getitem__"] = &TsImporter::importGetItem;
    for (const char *kind :
         {"prim::NumToTensor", "aten::Int", "aten::ScalarImplicit", "aten::Float",
          "aten::contiguous", "aten::clone", "aten::alias", "aten::lift_fresh"})
      t[kind] = &TsImporter::importIdentity;
    t["aten::detach"] = &TsImporter::importDetach;
    t["aten::__is__"] = t["aten::__isnot__"] = &TsImporter::importIs;
    t["aten::__not__"] = &TsImporter::importNot;
    for (const auto &[kind, op] : comparisons())
      t[kind] = &TsImporter::importCompare;
    t["prim::RaiseException"] = &TsImporter::importRaise;
    for (const char *kind :
         {"prim::unchecked_cast", "aten::Bool", "aten::warn", "prim::Uninitialized"})
      t[kind] = &TsImporter::importPassThrough;
    t["aten::format"] = &TsImporter::importFormat;
    t["aten::len"] = &TsImporter::importLen;
    t["aten::size"] = &TsImporter::importSize;
    t["aten::dim"] = &TsImporter::importDim;
    for (const auto &[kind, op] : binaries())
      t[kind] = &TsImporter::importBinary;
    for (const char *kind :
         {"aten::relu", "aten::relu_", "aten::gelu", "aten::silu", "aten::silu_",
          "aten::tanh", "aten::sigmoid", "aten::neg", "aten::rsqrt", "aten::sqrt",
          "aten::exp", "aten::cos", "aten::sin", "aten::erf", "aten::log", "aten::abs",
          "aten::reciprocal"})
      t[kind] = &TsImporter::importUnary;
    t["aten::hardtanh"] = t["aten::hardtanh_"] = &TsImporter::importHardtanh;
    for (const char *kind :
         {"aten::hardsigmoid", "aten::hardsigmoid_", "aten::hardswish", "aten::hardswish_"})
      t[kind] = &TsImporter::importHardSigmoid;
    for (const char *kind : {"aten::linear", "aten::addmm", "aten::matmul", "aten::bmm",
                             "aten::baddbmm"})
      t[kind] = &TsImporter::importMatmul;
    t["aten::_convolution"] = t["aten::conv2d"] = &TsImporter::importConv;
    t["aten::batch_norm"] = &TsImporter::importBatchNorm;
    t["aten::layer_norm"] = &TsImporter::importLayerNorm;
    t["aten::dropout"] = t["aten::dropout_"] = &TsImporter::importDropout;
    t["aten::embedding"] = &TsImporter::importEmbedding;
    t["aten::softmax"] = t["aten::log_softmax"] = &TsImporter::importSoftmax;
    t["aten::mean"] = t["aten::sum"] = &TsImporter::importReduce;
    t["aten::adaptive_avg_pool2d"] = t["aten::adaptive_avg_pool1d"] =
        &TsImporter::importAdaptiveAvgPool;
    t["aten::upsample_bilinear2d"] = t["aten::upsample_nearest2d"] = &TsImporter::importUpsample;
    t["aten::max_pool2d"] = &TsImporter::importPool;
    t["aten::avg_pool2d"] = &TsImporter::importPool;
    t["aten::view"] = t["aten::reshape"] = &TsImporter::importView;
    t["aten::flatten"] = &TsImporter::importFlatten;
    t["aten::unflatten"] = &TsImporter::importUnflatten;
    for (const char *kind : {"aten::unsqueeze", "aten::squeeze", "aten::select"})
      t[kind] = &TsImporter::importSqueeze;
    t["aten::transpose"] = t["aten::t"] = &TsImporter::importTranspose;
    t["aten::permute"] = t["aten::numpy_T"] = &TsImporter::importPermute;
    t["aten::expand"] = &TsImporter::importExpand;
    t["aten::repeat"] = &TsImporter::importRepeat;
    t["aten::pad"] = t["aten::constant_pad_nd"] = &TsImporter::importPad;
    t["aten::cat"] = &TsImporter::importCat;
    t["aten::slice"] = &TsImporter::importSlice;
    for (const char *kind :
         {"aten::split", "aten::split_with_sizes", "aten::chunk", "aten::unbind"})
      t[kind] = &TsImporter::importSplit;
    for (const char *kind : {"aten::clamp", "aten::clamp_", "aten::clamp_min",
                             "aten::clamp_min_", "aten::clamp_max", "aten::clamp_max_"})
      t[kind] = &TsImporter::importClamp;
    t["aten::square"] = &TsImporter::importSquare;
    t["aten::stack"] = &TsImporter::importStack;
    t["aten::meshgrid"] = &TsImporter::importMeshgrid;
    t["aten::roll"] = &TsImporter::importRoll;
    t["aten::einsum"] = &TsImporter::importEinsum;
    t["aten::index_select"] = &TsImporter::importIndexSelect;
    t["aten::bitwise_not"] = &TsImporter::importBitwiseNot;
    t["aten::gather"] = &TsImporter::importGatherElements;
    for (const char *kind : {"aten::ceil", "aten::floor", "aten::remainder"})
      t[kind] = &TsImporter::importHostMath;
    t["aten::repeat_interleave"] = &TsImporter::importRepeatInterleave;
    t["aten::tensor"] = &TsImporter::importTensor;
    t["aten::masked_fill_"] = &TsImporter::importMaskedFillInPlace;
    t["aten::to"] = t["aten::type_as"] = &TsImporter::importTo;
    t["aten::arange"] = &TsImporter::importArange;
    for (const char *kind : {"aten::ones", "aten::zeros", "aten::full", "aten::ones_like",
                             "aten::zeros_like", "aten::full_like", "aten::new_ones",
                             "aten::new_zeros", "aten::new_full"})
      t[kind] = &TsImporter::importFill;
    t["aten::triu"] = t["aten::tril"] = &TsImporter::importTriangle;
    t["aten::masked_fill"] = &TsImporter::importMaskedFill;
    t["aten::index"] = &TsImporter::importIndex;
    t["aten::where"] = &TsImporter::importWhere;
    t["aten::cumsum"] = &TsImporter::importCumsum;
    t["aten::copy_"] = t["aten::fill_"] = &TsImporter::importCopy;
    t["aten::scaled_dot_product_attention"] = &TsImporter::importAttention;
    return t;
  }();
  return table;
}

std::vector<std::string> TsImporter::kinds() {
  std::vector<std::string> all;
  for (const auto &entry : handlers())
    all.push_back(entry.getKey().str());
  llvm::sort(all);
  return all;
}

} // namespace colo::torch_import
