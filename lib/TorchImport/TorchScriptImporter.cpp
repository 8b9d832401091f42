// The TorchScript importer: loads an archive with libtorch, walks `forward`
// calling into submodules itself (so every op keeps its module path), and
// translates aten ops to colo ops. Values known at import time (sizes, masks,
// position tables) are computed on the host with the ONNX importer's
// evaluator; everything else becomes colo ops on static shapes.
#include "colo/Import/TorchScriptImporter.h"

#include "TorchScriptImporterImpl.h"

#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using colo::onnx_import::EvalResult;
using colo::onnx_import::HostTensor;
using colo::onnx_import::NodeAttrs;
namespace ox = colo::onnx_import;

namespace colo::torch_import {

namespace {
std::string firstLine(const std::string &s) {
  std::string line = s.substr(0, s.find('\n'));
  return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}
} // namespace

int32_t dtypeOf(c10::ScalarType t) {
  switch (t) {
  case c10::kFloat: return ox::kFloat;
  case c10::kDouble: return ox::kDouble;
  case c10::kHalf: return ox::kFloat16;
  case c10::kBFloat16: return ox::kBFloat16;
  case c10::kLong: return ox::kInt64;
  case c10::kInt: return ox::kInt32;
  case c10::kShort: return ox::kInt16;
  case c10::kChar: return ox::kInt8;
  case c10::kByte: return ox::kUInt8;
  case c10::kBool: return ox::kBool;
  default: return 0;
  }
}

NodeAttrs attrs(std::map<std::string, int64_t> ints,
                std::map<std::string, std::vector<int64_t>> lists) {
  NodeAttrs a;
  a.opset = 17;
  a.getInt = [ints](llvm::StringRef n) -> std::optional<int64_t> {
    auto it = ints.find(n.str());
    return it == ints.end() ? std::nullopt : std::optional<int64_t>(it->second);
  };
  a.getFloat = [](llvm::StringRef) -> std::optional<double> { return std::nullopt; };
  a.getInts = [lists](llvm::StringRef n) -> std::optional<std::vector<int64_t>> {
    auto it = lists.find(n.str());
    return it == lists.end() ? std::nullopt
                             : std::optional<std::vector<int64_t>>(it->second);
  };
  a.getTensor = [](llvm::StringRef) -> std::optional<HostTensor> { return std::nullopt; };
  a.getString = [](llvm::StringRef) -> std::optional<std::string> { return std::nullopt; };
  return a;
}

RankedTensorType TsImporter::typeOf(TVal &v) {
  if (v.value)
    return mlir::cast<RankedTensorType>(v.value.getType());
  return RankedTensorType::get(v.host->shape, ox::elementTypeOf(&ctx, v.host->dtype));
}

std::vector<int64_t> TsImporter::shapeOf(TVal &v) {
  auto shape = typeOf(v).getShape();
  return std::vector<int64_t>(shape.begin(), shape.end());
}

FailureOr<Value> TsImporter::tensor(TVal &v) {
  if (v.value)
    return v.value;
  if (v.host)
    return Value(ConstantOp::create(builder, loc, v.host->toAttr(&ctx)));
  return fail("expected a tensor");
}

FailureOr<Value> TsImporter::input(Inputs ins, size_t i) {
  if (i >= ins.size())
    return fail("missing input " + std::to_string(i));
  return tensor(*ins[i]);
}

FailureOr<int64_t> TsImporter::toInt(TVal &v, llvm::StringRef what) {
  if (v.host && v.host->numel() == 1)
    return v.host->asInt(0);
  return fail(what + " must be a number known at import time");
}

FailureOr<double> TsImporter::toDouble(TVal &v, llvm::StringRef what) {
  if (v.host && v.host->numel() == 1)
    return v.host->values[0];
  return fail(what + " must be a number known at import time");
}

FailureOr<std::vector<int64_t>> TsImporter::toInts(TVal &v, llvm::StringRef what) {
  if (v.host)
    return v.host->asInts();
  if (v.list) {
    std::vector<int64_t> out;
    for (TVal &e : *v.list) {
      FailureOr<int64_t> i = toInt(e, what);
      if (failed(i))
        return failure();
      out.push_back(*i);
    }
    return out;
  }
  return fail(what + " must be a list of numbers known at import time");
}

FailureOr<TVal> TsImporter::evalHost(llvm::StringRef onnxOp,
                                     std::vector<const HostTensor *> ins,
                                     const NodeAttrs &a) {
  EvalResult r = ox::evaluate(onnxOp, ins, a);
  if (r.kind == EvalResult::Error)
    return fail(r.error);
  if (r.kind == EvalResult::NotFoldable)
    return fail("cannot compute " + onnxOp + " at import time");
  TVal t;
  t.host = std::move(r.outputs[0]);
  return t;
}

FailureOr<TVal> TsImporter::reshape(TVal &x, llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> resolved;
  if (auto err = ox::resolveReshape(shapeOf(x), shape, /*allowZero=*/true, resolved))
    return fail(*err);
  if (x.host) {
    TVal t = x;
    t.host->shape.assign(resolved.begin(), resolved.end());
    t.name.clear();
    return t;
  }
  auto type = RankedTensorType::get(resolved, typeOf(x).getElementType());
  if (type == x.value.getType())
    return x;
  auto op = createTyped<ReshapeOp>(type, x.value);
  if (failed(op))
    return failure();
  return runtime(op->getResult());
}

FailureOr<TVal> TsImporter::transpose(TVal &x, llvm::ArrayRef<int64_t> perm) {
  if (x.host)
    return evalHost("Transpose", {&*x.host},
                    attrs({}, {{"perm", std::vector<int64_t>(perm.begin(), perm.end())}}));
  auto op = create<TransposeOp>(x.value, builder.getDenseI64ArrayAttr(perm));
  if (failed(op))
    return failure();
  return runtime(op->getResult());
}

FailureOr<TVal> TsImporter::slice(TVal &x, int64_t dim, int64_t start, int64_t end,
                                  int64_t step) {
  std::vector<int64_t> shape = shapeOf(x);
  int64_t rank = shape.size();
  dim = normDim(dim, rank);
  if (dim < 0 || dim >= rank)
    return fail("dimension out of range");
  if (x.host) {
    HostTensor s = HostTensor::vector({start}), e = HostTensor::vector({end}),
               a = HostTensor::vector({dim}), st = HostTensor::vector({step});
    return evalHost("Slice", {&*x.host, &s, &e, &a, &st}, attrs());
  }
  if (step <= 0)
    return fail("slices with step " + std::to_string(step) + " are not supported");
  ox::SliceBounds b = ox::resolveSlice(shape[dim], start, end, step);
  llvm::SmallVector<int64_t> lo(rank, 0), hi(shape.begin(), shape.end()), st(rank, 1);
  lo[dim] = b.start;
  hi[dim] = std::max(b.start, b.stop);
  st[dim] = step;
  auto op = create<SliceOp>(x.value, builder.getDenseI64ArrayAttr(lo),
                            builder.getDenseI64ArrayAttr(hi),
                            builder.getDenseI64ArrayAttr(st));
  if (failed(op))
    return failure();
  return runtime(op->getResult());
}

std::shared_ptr<TensorView> TsImporter::sliceView(TVal &x, int64_t dim, int64_t start,
                                                  int64_t end, int64_t step) {
  auto view = std::make_shared<TensorView>();
  view->root = x.view ? x.view->root : &x;
  if (x.view)
    view->steps = x.view->steps;
  // The offsets take x's shape first: a view reshaped (a selection) keeps
  // its elements' order, not its dimensions.
  std::vector<int64_t> shape = shapeOf(x);
  dim = normDim(dim, shape.size());
  view->steps.push_back([shape, dim, start, end, step](const HostTensor &offsets) {
    HostTensor in = offsets, s = HostTensor::vector({start}), e = HostTensor::vector({end}),
               a = HostTensor::vector({dim}), st = HostTensor::vector({step});
    in.shape.assign(shape.begin(), shape.end());
    return ox::evaluate("Slice", {&in, &s, &e, &a, &st}, attrs());
  });
  return view;
}

FailureOr<TVal> TsImporter::cast(TVal &x, int32_t dtype) {
  if (!ox::isSupportedDType(dtype))
    return fail("unsupported data type " + ox::dtypeName(dtype).str());
  if (x.host)
    return evalHost("Cast", {&*x.host}, attrs({{"to", dtype}}));
  auto type = RankedTensorType::get(typeOf(x).getShape(), ox::elementTypeOf(&ctx, dtype));
  if (type == x.value.getType())
    return x;
  auto op = createTyped<ConvertOp>(type, x.value);
  if (failed(op))
    return failure();
  return runtime(op->getResult());
}

FailureOr<std::pair<Value, Value>> TsImporter::operands(TVal &a, TVal &b) {
  TVal l = a, r = b;
  for (auto [num, other] : {std::pair(&l, &r), std::pair(&r, &l)})
    if (num->host && num->host->shape.empty() && other->value) {
      int32_t dt = ox::dtypeOf(typeOf(*other).getElementType());
      num->host->dtype = dt;
      for (double &v : num->host->values)
        v = HostTensor::convert(v, dt);
    }
  FailureOr<Value> lv = tensor(l), rv = tensor(r);
  if (failed(lv) || failed(rv))
    return failure();
  return std::pair(*lv, *rv);
}

FailureOr<TVal> TsImporter::compare(ComparePredicate p, TVal &a, TVal &b) {
  FailureOr<std::pair<Value, Value>> xy = operands(a, b);
  if (failed(xy))
    return failure();
  auto op = create<CompareOp>(ComparePredicateAttr::get(&ctx, p), xy->first, xy->second);
  if (failed(op))
    return failure();
  return runtime(op->getResult());
}

FailureOr<TVal> TsImporter::binary(llvm::StringRef onnxOp, TVal &a, TVal &b) {
  if (a.host && b.host) {
    // PyTorch's promotion: a 0-d operand of the same kind (float or
    // integer) takes the element type of a tensor with dimensions
    // (torch.finfo(f32).min, traced as a double, times an f32 mask).
    HostTensor l = *a.host, r = *b.host;
    for (auto [num, other] : {std::pair(&l, &r), std::pair(&r, &l)})
      if (num->shape.empty() && !other->shape.empty() &&
          ox::isFloatDType(num->dtype) == ox::isFloatDType(other->dtype)) {
        num->dtype = other->dtype;
        for (double &v : num->values)
          v = HostTensor::convert(v, other->dtype);
      }
    // An integer and a float: the float's type, or the default float32 where
    // only the integer has dimensions (MPT's int32 ALiBi positions times
    // float slopes).
    if (ox::isFloatDType(l.dtype) != ox::isFloatDType(r.dtype)) {
      bool leftFloat = ox::isFloatDType(l.dtype);
      HostTensor &f = leftFloat ? l : r, &i = leftFloat ? r : l;
      int32_t to = f.shape.empty() && !i.shape.empty() ? ox::kFloat : f.dtype;
      for (HostTensor *t : {&f, &i}) {
        t->dtype = to;
        for (double &v : t->values)
          v = HostTensor::convert(v, to);
      }
    }
    return evalHost(onnxOp, {&l, &r}, attrs());
  }
  FailureOr<std::pair<Value, Value>> xy = operands(a, b);
  if (failed(xy))
    return failure();
  auto [lv, rv] = *xy;
  FailureOr<Operation *> op = failure();
  auto wrap = [](auto r) -> FailureOr<Operation *> {
    if (failed(r))
      return failure();
    return r->getOperation();
  };
  if (onnxOp == "Add") op = wrap(create<AddOp>(lv, rv));
  else if (onnxOp == "Sub") op = wrap(create<SubOp>(lv, rv));
  else if (onnxOp == "Mul") op = wrap(create<MulOp>(lv, rv));
  else if (onnxOp == "Div") op = wrap(create<DivOp>(lv, rv));
  else if (onnxOp == "Pow") op = wrap(create<PowOp>(lv, rv));
  else if (onnxOp == "Max") op = wrap(create<MaximumOp>(lv, rv));
  else if (onnxOp == "Min") op = wrap(create<MinimumOp>(lv, rv));
  else return fail("unsupported binary op " + onnxOp);
  if (failed(op))
    return failure();
  return runtime((*op)->getResult(0));
}

FailureOr<TVal> TsImporter::concat(std::vector<TVal> &xs, int64_t dim) {
  if (xs.empty())
    return fail("nothing to concatenate");
  dim = normDim(dim, shapeOf(xs[0]).size());
  if (llvm::all_of(xs, [](TVal &x) { return x.host.has_value(); })) {
    std::vector<const HostTensor *> hs;
    for (TVal &x : xs)
      hs.push_back(&*x.host);
    return evalHost("Concat", hs, attrs({{"axis", dim}}));
  }
  llvm::SmallVector<Value> vals;
  for (TVal &x : xs) {
    FailureOr<Value> v = tensor(x);
    if (failed(v))
      return failure();
    vals.push_back(*v);
  }
  auto op = create<ConcatOp>(vals, builder.getI64IntegerAttr(dim));
  if (failed(op))
    return failure();
  return runtime(op->getResult());
}

FailureOr<TVal> TsImporter::expand(TVal &x, llvm::ArrayRef<int64_t> sizes) {
  std::vector<int64_t> shape = shapeOf(x), target(sizes.begin(), sizes.end());
  size_t offset = target.size() - std::min(target.size(), shape.size());
  for (size_t i = 0; i < target.size(); ++i)
    if (target[i] == -1)
      target[i] = i >= offset ? shape[i - offset] : 1;
  if (x.host) {
    HostTensor t = HostTensor::vector(target);
    return evalHost("Expand", {&*x.host, &t}, attrs());
  }
  auto type = RankedTensorType::get(target, typeOf(x).getElementType());
  if (type == x.value.getType())
    return x;
  auto op = createTyped<BroadcastToOp>(type, x.value);
  if (failed(op))
    return failure();
  return runtime(op->getResult());
}

FailureOr<Value> TsImporter::stateGlobal(const std::string &name, const at::Tensor &t,
                                         bool trainable) {
  if (auto it = globals.find(name); it != globals.end())
    return it->second;
  int32_t dt = dtypeOf(t.scalar_type());
  Type et = ox::elementTypeOf(&ctx, dt);
  if (!et)
    return fail("'" + name + "' has unsupported data type " +
                std::string(c10::toString(t.scalar_type())));
  at::Tensor c = t.detach().contiguous().cpu();
  auto type = RankedTensorType::get(llvm::SmallVector<int64_t>(c.sizes().begin(),
                                                               c.sizes().end()),
                                    et);
  ArrayRef<char> bytes(static_cast<const char *>(c.data_ptr()), c.nbytes());
  auto data = DenseResourceElementsAttr::get(
      type, name, HeapAsmResourceBlob::allocateAndCopyInferAlign(bytes));
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(func);
  Location gloc = NameLoc::get(StringAttr::get(&ctx, name));
  GlobalOp::create(builder, gloc, name, type, data, trainable, /*shard=*/nullptr);
  builder.setInsertionPointToStart(&func.getBody().front());
  Value load = GlobalLoadOp::create(builder, gloc, type, name);
  globals[name] = load;
  return load;
}

LogicalResult TsImporter::importGraph(torch::jit::Graph &graph, const std::string &scope,
                                      std::vector<TVal> args,
                                      std::vector<TVal> &results) {
  Env env;
  if (graph.inputs().size() != args.size())
    return fail("call with " + std::to_string(args.size()) + " arguments to a graph of " +
                std::to_string(graph.inputs().size()));
  for (size_t i = 0; i < args.size(); ++i)
    env[graph.inputs()[i]] = std::move(args[i]);
  if (failed(importBlock(*graph.block(), scope, env)))
    return failure();
  for (const torch::jit::Value *v : graph.outputs()) {
    results.push_back(env.at(v));
    results.back().view.reset(); // its root is one of this call's values
  }
  return success();
}

LogicalResult TsImporter::importBlock(torch::jit::Block &block, const std::string &scope,
                                      Env &env) {
  for (torch::jit::Node *n : block.nodes()) {
    std::vector<TVal *> ins;
    for (const torch::jit::Value *v : n->inputs()) {
      auto it = env.find(v);
      if (it == env.end())
        return fail("value %" + v->debugName() + " is not defined");
      ins.push_back(&it->second);
    }
    std::vector<TVal> outs;
    std::string kind = n->kind().toQualString();
    loc = NameLoc::get(StringAttr::get(&ctx, scope + "/" + kind));
    auto call = [&](torch::jit::Graph &g, const std::string &calleeScope,
                    size_t firstArg) -> LogicalResult {
      std::vector<TVal> args;
      for (size_t i = firstArg; i < ins.size(); ++i)
        args.push_back(*ins[i]);
      if (failed(importGraph(g, calleeScope, std::move(args), outs)))
        return failure();
      if (outs.size() != n->outputs().size())
        return fail("call returned " + std::to_string(outs.size()) + " values");
      return success();
    };
    if (kind == "prim::CallMethod") {
      if (ins.empty() || !ins[0]->module)
        return fail("call of a method on something that is not a module");
      std::string method = n->s(c10::Symbol::attr("name"));
      auto m = ins[0]->module->find_method(method);
      if (!m)
        return fail("module '" + ins[0]->name + "' has no method '" + method + "'");
      if (failed(call(*m->graph(), ins[0]->name, 0)))
        return failure();
    } else if (kind == "prim::CallFunction") {
      // Scripted calls of free functions (torch.nn.functional.*): inlined in
      // the caller's scope.
      auto fnType = n->input(0)->type()->cast<c10::FunctionType>();
      if (!fnType)
        return fail("call of something that is not a function");
      if (failed(call(*torch::jit::toGraphFunction(*fnType->function()).graph(), scope, 1)))
        return failure();
    } else if (kind == "prim::If") {
      // Scripted models branch on what is known at import (training mode,
      // None checks, ranks): import the branch taken.
      if (!ins[0]->host)
        return fail("in " + scope + ": prim::If on a value computed at run time is "
                    "not supported");
      torch::jit::Block *taken = n->blocks()[ins[0]->host->values[0] ? 0 : 1];
      if (failed(importBlock(*taken, scope, env)))
        return failure();
      for (const torch::jit::Value *v : taken->outputs())
        outs.push_back(env.at(v));
    } else if (kind == "prim::Loop") {
      // Loops of a trip count known at import (size checks in scripted
      // models) are unrolled.
      FailureOr<int64_t> trips = toInt(*ins[0], "loop trip count");
      FailureOr<int64_t> cond = toInt(*ins[1], "loop condition");
      if (failed(trips) || failed(cond))
        return failure();
      torch::jit::Block *body = n->blocks()[0];
      std::vector<TVal> carried;
      for (size_t i = 2; i < ins.size(); ++i)
        carried.push_back(*ins[i]);
      for (int64_t i = 0; i < *trips && *cond; ++i) {
        env[body->inputs()[0]] = TVal{{}, HostTensor::scalar(i, ox::kInt64), {}, {}, {}, {}, false};
        for (size_t k = 0; k < carried.size(); ++k)
          env[body->inputs()[k + 1]] = carried[k];
        if (failed(importBlock(*body, scope, env)))
          return failure();
        cond = toInt(env.at(body->outputs()[0]), "loop condition");
        if (failed(cond))
          return failure();
        for (size_t k = 0; k < carried.size(); ++k)
          carried[k] = env.at(body->outputs()[k + 1]);
      }
      outs = std::move(carried);
    } else if (failed(translate(n, ins, outs))) {
      if (nodeError.empty())
        nodeError = firstDiagnostic;
      if (nodeError.rfind("in ", 0) != 0 && !nodeError.empty())
        nodeError = "in " + (scope.empty() ? std::string("<root>") : scope) + ": " +
                    kind + ": " + nodeError;
      return failure();
    }
    for (size_t i = 0; i < n->outputs().size() && i < outs.size(); ++i)
      env[n->outputs()[i]] = std::move(outs[i]);
  }
  return success();
}

LogicalResult TsImporter::translate(torch::jit::Node *n, std::vector<TVal *> &ins,
                                    std::vector<TVal> &outs) {
  std::string kind = n->kind().toQualString();
  auto it = handlers().find(kind);
  if (it == handlers().end())
    return fail("unsupported op");
  if (failed((this->*(it->second))(n, kind, ins, outs)))
    return failure();
  // An in-place op (aten::add_, aten::relu_, ...) writes its result into its
  // first operand, and into the tensor that is a view of: later reads of
  // either see it. copy_, fill_ and masked_fill_ write themselves.
  llvm::StringRef k(kind);
  bool inPlace = k.starts_with("aten::") && k.ends_with("_") && !k.ends_with("__") &&
                 !llvm::is_contained({"aten::copy_", "aten::fill_", "aten::masked_fill_"}, k);
  if (!inPlace || ins.empty() || outs.size() != 1 || !(ins[0]->value || ins[0]->host))
    return success();
  TVal result = outs[0];
  TVal *copyIns[] = {ins[0], &result};
  outs.clear();
  return importCopy(n, kind, copyIns, outs);
}

FailureOr<OwningOpRef<ModuleOp>> TsImporter::run() {
  ctx.loadDialect<ColoDialect, func::FuncDialect>();
  try {
    root = torch::jit::load(path);
  } catch (const std::exception &e) {
    return emitError(UnknownLoc::get(&ctx))
           << "'" << path << "' is not a readable TorchScript archive: "
           << firstLine(e.what());
  }
  auto forward = root.find_method("forward");
  if (!forward)
    return emitError(UnknownLoc::get(&ctx)) << "'" << path << "' has no forward method";
  for (const auto &p : root.named_parameters(/*recurse=*/true))
    parameterNames.insert(p.name);

  std::shared_ptr<torch::jit::Graph> graph = forward->graph();
  SmallVector<Type> inputTypes;
  std::vector<TVal> args;
  TVal self;
  self.module = root;
  args.push_back(self);
  size_t numInputs = graph->inputs().size() - 1;
  if (inputShapes.size() != numInputs) {
    std::string names;
    for (size_t i = 1; i < graph->inputs().size(); ++i)
      names += (i > 1 ? ", " : "") + graph->inputs()[i]->debugName();
    return emitError(UnknownLoc::get(&ctx))
           << "'" << path << "': forward takes " << numInputs << " input(s) (" << names
           << ") but " << inputShapes.size()
           << " shape(s) were given; TorchScript archives record no shapes: pass "
              "one --input-shape per input, e.g. --input-shape 2x16xi64";
  }
  for (const std::string &spec : inputShapes) {
    FailureOr<InputShape> shape = parseInputShape(spec, ctx);
    if (failed(shape))
      return failure();
    inputTypes.push_back(RankedTensorType::get(
        shape->dims, shape->elementType ? shape->elementType : builder.getF32Type()));
  }
  module = ModuleOp::create(FileLineColLoc::get(&ctx, path, 0, 0));
  OwningOpRef<ModuleOp> owned(module);
  ColoDialect::SourceAttrHelper(builder.getContext())
      .setAttr(module, builder.getStringAttr("torchscript"));
  builder.setInsertionPointToEnd(module.getBody());
  func = func::FuncOp::create(builder, module.getLoc(), "forward",
                              builder.getFunctionType(inputTypes, {}));
  Block *entry = func.addEntryBlock();
  for (BlockArgument a : entry->getArguments()) {
    // Inputs are named after forward's parameters (debug names "x" or "x.1").
    // (debugName returns a copy: keep it while `name` points into it.)
    std::string debugName = graph->inputs()[a.getArgNumber() + 1]->debugName();
    StringRef name = debugName;
    auto [stem, suffix] = name.rsplit('.');
    if (!suffix.empty() && llvm::all_of(suffix, [](char c) { return llvm::isDigit(c); }))
      name = stem;
    a.setLoc(NameLoc::get(builder.getStringAttr(name)));
    args.push_back(runtime(a));
  }
  builder.setInsertionPointToEnd(entry);

  std::vector<TVal> results;
  std::optional<std::string> problem;
  try {
    problem = capture([&] { return importGraph(*graph, "", args, results); });
  } catch (const std::exception &e) {
    problem = std::string("libtorch: ") + firstLine(e.what());
  }
  if (problem)
    return emitError(loc) << path << ": " << *problem;

  // Outputs: tensors, or a tuple of them.
  SmallVector<Value> values;
  std::function<LogicalResult(TVal &)> flatten = [&](TVal &v) -> LogicalResult {
    if (v.list) {
      for (TVal &e : *v.list)
        if (failed(flatten(e)))
          return failure();
      return success();
    }
    FailureOr<Value> t = tensor(v);
    if (failed(t))
      return failure();
    values.push_back(*t);
    return success();
  };
  for (TVal &r : results)
    if (failed(flatten(r)))
      return emitError(UnknownLoc::get(&ctx)) << path << ": forward returns a non-tensor";
  func::ReturnOp::create(builder, func.getLoc(), values);
  func.setType(builder.getFunctionType(inputTypes, ValueRange(values).getTypes()));
  if (failed(verify(module)))
    return failure();
  return owned;
}

} // namespace colo::torch_import

bool colo::haveTorchScriptImporter() { return true; }

FailureOr<OwningOpRef<ModuleOp>>
colo::importTorchScriptFile(llvm::StringRef path, MLIRContext &context,
                            llvm::ArrayRef<std::string> inputShapes) {
  return torch_import::TsImporter(context, path, inputShapes).run();
}

std::vector<std::string> colo::supportedTorchScriptOps() {
  return torch_import::TsImporter::kinds();
}
