// The TorchScript importer: loads an archive with libtorch, walks `forward`
// calling into submodules itself (so every op keeps its module path), and
// translates aten ops to colo ops. Values known at import time (sizes, masks,
// position tables) are computed on the host with the ONNX importer's
// evaluator; everything else becomes colo ops on static shapes.
#include "colo/Import/TorchScriptImporter.h"

#include "../Import/HostTensor.h"
#include "../Import/ImportBase.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringExtras.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/script.h>

#include <cmath>

using namespace mlir;
using colo::onnx_import::EvalResult;
using colo::onnx_import::HostTensor;
using colo::onnx_import::NodeAttrs;
namespace ox = colo::onnx_import;

namespace colo::torch_import {
namespace {

/// A TorchScript value during import.
struct TVal {
  Value value;                            // a tensor computed at run time
  std::optional<HostTensor> host;         // a tensor or number known now
  std::optional<std::vector<TVal>> list;  // lists and tuples
  std::optional<torch::jit::Module> module;
  std::string name;                       // module path, or buffer name
  std::optional<std::string> str;
  bool none = false;
};

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

std::string firstLine(const std::string &s) {
  std::string line = s.substr(0, s.find('\n'));
  return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}

/// A tensor's values, known at import time.
HostTensor hostOf(const at::Tensor &t) {
  at::Tensor c = t.detach().contiguous().to(at::kDouble);
  HostTensor h{dtypeOf(t.scalar_type()), {}, {}};
  for (int64_t d : c.sizes())
    h.shape.push_back(d);
  h.values.assign(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
  return h;
}

NodeAttrs attrs(std::map<std::string, int64_t> ints = {},
                std::map<std::string, std::vector<int64_t>> lists = {}) {
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
  return a;
}

class TsImporter : public ImportBase {
public:
  TsImporter(MLIRContext &ctx, llvm::StringRef path, llvm::ArrayRef<std::string> shapes)
      : ImportBase(ctx), path(path.str()), inputShapes(shapes.begin(), shapes.end()) {}
  FailureOr<OwningOpRef<ModuleOp>> run();

private:
  using Env = std::unordered_map<const torch::jit::Value *, TVal>;
  LogicalResult importGraph(torch::jit::Graph &graph, const std::string &scope,
                            std::vector<TVal> args, std::vector<TVal> &results);
  LogicalResult importBlock(torch::jit::Block &block, const std::string &scope,
                            Env &env);
  LogicalResult translate(torch::jit::Node *n, const std::string &scope,
                          std::vector<TVal *> &ins, std::vector<TVal> &outs);

  // Access to inputs.
  FailureOr<Value> tensor(TVal &v);
  FailureOr<int64_t> toInt(TVal &v, llvm::StringRef what);
  FailureOr<double> toDouble(TVal &v, llvm::StringRef what);
  FailureOr<std::vector<int64_t>> toInts(TVal &v, llvm::StringRef what);
  RankedTensorType typeOf(TVal &v);
  std::vector<int64_t> shapeOf(TVal &v);

  // Emission with a host path and a run-time path.
  FailureOr<TVal> evalHost(llvm::StringRef onnxOp, std::vector<const HostTensor *> ins,
                           const NodeAttrs &a);
  FailureOr<TVal> reshape(TVal &x, llvm::ArrayRef<int64_t> shape);
  FailureOr<TVal> transpose(TVal &x, llvm::ArrayRef<int64_t> perm);
  FailureOr<TVal> slice(TVal &x, int64_t dim, int64_t start, int64_t end, int64_t step);
  FailureOr<TVal> binary(llvm::StringRef onnxOp, TVal &a, TVal &b);
  FailureOr<TVal> cast(TVal &x, int32_t dtype);
  FailureOr<TVal> concat(std::vector<TVal> &xs, int64_t dim);
  FailureOr<TVal> expand(TVal &x, llvm::ArrayRef<int64_t> shape);
  FailureOr<Value> stateGlobal(const std::string &name, const at::Tensor &t,
                               bool trainable);

  std::string path;
  std::vector<std::string> inputShapes;
  ModuleOp module;
  func::FuncOp func;
  torch::jit::Module root;
  std::set<std::string> parameterNames;
  llvm::StringMap<Value> globals;
  torch::jit::Node *current = nullptr;
};

int64_t normDim(int64_t d, int64_t rank) { return d < 0 ? d + rank : d; }

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

static TVal runtime(Value v) {
  TVal t;
  t.value = v;
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

FailureOr<TVal> TsImporter::binary(llvm::StringRef onnxOp, TVal &a, TVal &b) {
  if (a.host && b.host)
    return evalHost(onnxOp, {&*a.host, &*b.host}, attrs());
  // A number takes the element type of the tensor it meets, as in PyTorch.
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
  FailureOr<Operation *> op = failure();
  auto wrap = [](auto r) -> FailureOr<Operation *> {
    if (failed(r))
      return failure();
    return r->getOperation();
  };
  if (onnxOp == "Add") op = wrap(create<AddOp>(*lv, *rv));
  else if (onnxOp == "Sub") op = wrap(create<SubOp>(*lv, *rv));
  else if (onnxOp == "Mul") op = wrap(create<MulOp>(*lv, *rv));
  else if (onnxOp == "Div") op = wrap(create<DivOp>(*lv, *rv));
  else if (onnxOp == "Pow") op = wrap(create<PowOp>(*lv, *rv));
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
  for (const torch::jit::Value *v : graph.outputs())
    results.push_back(env.at(v));
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
    current = n;
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
    } else if (failed(translate(n, scope, ins, outs))) {
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

LogicalResult TsImporter::translate(torch::jit::Node *n, const std::string &scope,
                                    std::vector<TVal *> &ins, std::vector<TVal> &outs) {
  std::string kind = n->kind().toQualString();
  const c10::FunctionSchema *schema = n->maybeSchema();
  auto argIndex = [&](const char *name) -> std::optional<size_t> {
    if (!schema)
      return std::nullopt;
    auto i = schema->argumentIndexWithName(name);
    if (!i || *i >= ins.size())
      return std::nullopt;
    return *i;
  };
  auto arg = [&](const char *name) -> TVal * {
    auto i = argIndex(name);
    return i ? ins[*i] : nullptr;
  };
  auto present = [&](TVal *v) { return v && !v->none; };
  auto push = [&](FailureOr<TVal> v) -> LogicalResult {
    if (failed(v))
      return failure();
    outs.push_back(std::move(*v));
    return success();
  };
  auto pushOp = [&](auto op) -> LogicalResult {
    if (failed(op))
      return failure();
    outs.push_back(runtime(op->getResult()));
    return success();
  };
  auto input = [&](size_t i) -> FailureOr<Value> {
    if (i >= ins.size())
      return fail("missing input " + std::to_string(i));
    return tensor(*ins[i]);
  };

  if (kind == "prim::Constant") {
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

  if (kind == "prim::GetAttr") {
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
        FailureOr<Value> g = stateGlobal(full, v.toTensor(), /*trainable=*/true);
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

  if (kind == "prim::ListConstruct" || kind == "prim::TupleConstruct") {
    TVal t;
    t.list.emplace();
    for (TVal *v : ins)
      t.list->push_back(*v);
    outs.push_back(std::move(t));
    return success();
  }
  // Lists of numbers (sizes) are host vectors; index and unpack them too.
  auto asList = [](TVal &v) {
    if (v.host && !v.list && v.host->shape.size() == 1) {
      v.list.emplace();
      for (double x : v.host->values)
        v.list->push_back(TVal{{}, HostTensor::scalar(x, v.host->dtype), {}, {}, {}, {}, false});
    }
  };
  if (kind == "prim::ListUnpack" || kind == "prim::TupleUnpack") {
    asList(*ins[0]);
    if (!ins[0]->list || ins[0]->list->size() != n->outputs().size())
      return fail("cannot unpack into " + std::to_string(n->outputs().size()) + " values");
    for (TVal &v : *ins[0]->list)
      outs.push_back(v);
    return success();
  }
  if (kind == "aten::__getitem__") {
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
  static const std::set<std::string> identities = {
      "prim::NumToTensor", "aten::Int", "aten::ScalarImplicit", "aten::Float",
      "aten::contiguous", "aten::detach", "aten::clone", "aten::alias",
      "aten::lift_fresh"};
  if (identities.count(kind)) {
    outs.push_back(*ins[0]);
    return success();
  }

  if (kind == "aten::__is__" || kind == "aten::__isnot__") {
    bool same = ins[0]->none && ins[1]->none;
    if (!ins[0]->none && !ins[1]->none)
      return fail("identity of two values is not known at import time");
    TVal t;
    t.host = HostTensor::scalar(kind == "aten::__is__" ? same : !same, ox::kBool);
    outs.push_back(t);
    return success();
  }
  if (kind == "aten::__not__") {
    FailureOr<int64_t> b = toInt(*ins[0], "condition");
    if (failed(b))
      return failure();
    TVal t;
    t.host = HostTensor::scalar(!*b, ox::kBool);
    outs.push_back(t);
    return success();
  }
  static const std::map<std::string, std::string> comparisons = {
      {"aten::eq", "Equal"}, {"aten::ne", "Equal"}, {"aten::lt", "Less"},
      {"aten::le", "LessOrEqual"}, {"aten::gt", "Greater"}, {"aten::ge", "GreaterOrEqual"}};
  if (auto it = comparisons.find(kind);
      it != comparisons.end() && ins.size() == 2 && ins[0]->host && ins[1]->host) {
    FailureOr<TVal> r = evalHost(it->second, {&*ins[0]->host, &*ins[1]->host}, attrs());
    if (succeeded(r) && kind == "aten::ne")
      for (double &v : r->host->values)
        v = !v;
    return push(r);
  }
  if (kind == "prim::RaiseException")
    return fail("the model raises an exception on this path" +
                (ins.size() && ins[0]->str ? ": " + *ins[0]->str : std::string()));
  if (kind == "prim::unchecked_cast" || kind == "aten::Bool" || kind == "aten::warn" ||
      kind == "prim::Uninitialized") {
    if (kind != "aten::warn")
      outs.push_back(ins.empty() ? TVal{} : *ins[0]);
    return success();
  }
  if (kind == "aten::format") {
    TVal t;
    t.str = ins.empty() || !ins[0]->str ? std::string() : *ins[0]->str;
    outs.push_back(t);
    return success();
  }
  if (kind == "aten::len" && (asList(*ins[0]), ins[0]->list)) {
    TVal t;
    t.host = HostTensor::scalar(ins[0]->list->size(), ox::kInt64);
    outs.push_back(t);
    return success();
  }

  if (kind == "aten::size") {
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
  if (kind == "aten::dim") {
    TVal t;
    t.host = HostTensor::scalar(shapeOf(*ins[0]).size(), ox::kInt64);
    outs.push_back(t);
    return success();
  }

  // Arithmetic, on tensors or numbers.
  static const std::map<std::string, std::string> binaries = {
      {"aten::add", "Add"}, {"aten::add_", "Add"}, {"aten::sub", "Sub"},
      {"aten::sub_", "Sub"}, {"aten::mul", "Mul"}, {"aten::mul_", "Mul"},
      {"aten::div", "Div"}, {"aten::div_", "Div"}, {"aten::floor_divide", "Div"},
      {"aten::floordiv", "Div"},
      {"aten::pow", "Pow"}, {"aten::rsub", "Sub"}};
  if (auto it = binaries.find(kind); it != binaries.end()) {
    TVal *a = ins[0], *b = ins[1];
    TVal scaled;
    if (TVal *alpha = arg("alpha"); present(alpha)) {
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
    if (auto mode = arg("rounding_mode"); present(mode) && mode->str &&
                                          *mode->str != "trunc" && !(a->host && b->host))
      return fail("division with rounding_mode '" + *mode->str + "' is not supported");
    FailureOr<TVal> r = binary(it->second, *a, *b);
    if (succeeded(r) && (kind == "aten::floor_divide" || kind == "aten::floordiv") &&
        r->host)
      for (double &v : r->host->values)
        v = std::floor(v);
    return push(r);
  }
  if (kind == "aten::neg" && ins[0]->host) {
    TVal m;
    m.host = HostTensor::scalar(-1, ins[0]->host->dtype);
    return push(binary("Mul", *ins[0], m));
  }

  static const std::set<std::string> unaries = {
      "aten::relu", "aten::relu_", "aten::gelu", "aten::silu", "aten::silu_",
      "aten::tanh", "aten::sigmoid", "aten::neg", "aten::rsqrt", "aten::sqrt",
      "aten::exp", "aten::cos", "aten::sin", "aten::erf", "aten::log"};
  if (unaries.count(kind)) {
    if (ins[0]->host) {
      static const std::map<std::string, std::string> host = {
          {"aten::cos", "Cos"}, {"aten::sin", "Sin"}, {"aten::sqrt", "Sqrt"},
          {"aten::exp", "Exp"}, {"aten::log", "Log"}};
      if (auto h = host.find(kind); h != host.end())
        return push(evalHost(h->second, {&*ins[0]->host}, attrs()));
    }
    FailureOr<Value> x = tensor(*ins[0]);
    if (failed(x))
      return failure();
    if (kind != "aten::gelu") {
      llvm::StringRef mnemonic = llvm::StringRef(kind).drop_front(6).rtrim('_');
      FailureOr<Value> y = createUnary(mnemonic, *x);
      if (failed(y))
        return failure();
      outs.push_back(runtime(*y));
      return success();
    }
    Type t = x->getType();
    std::string approx = "none";
    if (TVal *a = arg("approximate"); a && a->str)
      approx = *a->str;
    if (approx != "none" && approx != "tanh")
      return fail("unsupported GELU approximation '" + approx + "'");
    return pushOp(createTyped<GeluOp>(
        t, *x, GeluApproximationAttr::get(&ctx, approx == "tanh" ? GeluApproximation::tanh
                                                                 : GeluApproximation::none)));
  }
  if (kind == "aten::hardtanh" || kind == "aten::hardtanh_") {
    FailureOr<Value> x = input(0);
    FailureOr<double> lo = toDouble(*ins[1], "min_val"), hi = toDouble(*ins[2], "max_val");
    if (failed(x) || failed(lo) || failed(hi))
      return failure();
    return pushOp(createTyped<ClampOp>(x->getType(), *x, builder.getF64FloatAttr(*lo),
                                       builder.getF64FloatAttr(*hi)));
  }

  if (kind == "aten::matmul" && ins[0]->host && ins[1]->host)
    return push(evalHost("MatMul", {&*ins[0]->host, &*ins[1]->host}, attrs()));
  if (kind == "aten::linear" || kind == "aten::addmm" || kind == "aten::matmul") {
    bool addmm = kind == "aten::addmm";
    FailureOr<Value> a = input(addmm ? 1 : 0), w = input(addmm ? 2 : 1);
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
    if (present(bias))
      return push(binary("Add", y, *bias));
    outs.push_back(y);
    return success();
  }

  if (kind == "aten::_convolution" || kind == "aten::conv2d") {
    FailureOr<Value> x = input(0), w = input(1);
    if (failed(x) || failed(w))
      return failure();
    if (TVal *tr = arg("transposed"); tr && tr->host && tr->host->values[0])
      return fail("transposed convolution is not supported");
    FailureOr<std::vector<int64_t>> s = toInts(*arg("stride"), "stride"),
                                    p = toInts(*arg("padding"), "padding"),
                                    d = toInts(*arg("dilation"), "dilation");
    FailureOr<int64_t> g = toInt(*arg("groups"), "groups");
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
        builder.getDenseI64ArrayAttr(*d), builder.getI64IntegerAttr(*g)));
  }

  if (kind == "aten::batch_norm") {
    FailureOr<Value> x = input(0);
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
                                       *training ? builder.getUnitAttr() : UnitAttr());
    if (failed(op))
      return failure();
    outs.push_back(runtime(op->getResult()));
    return success();
  }

  if (kind == "aten::layer_norm") {
    FailureOr<Value> x = input(0);
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
                                           builder.getF64FloatAttr(*eps)));
  }

  if (kind == "aten::dropout" || kind == "aten::dropout_") {
    FailureOr<double> p = toDouble(*ins[1], "p");
    FailureOr<int64_t> train = toInt(*ins[2], "train");
    if (failed(p) || failed(train))
      return failure();
    if (!*train || *p == 0) {
      outs.push_back(*ins[0]);
      return success();
    }
    FailureOr<Value> x = input(0);
    if (failed(x))
      return failure();
    return pushOp(createTyped<DropoutOp>(x->getType(), *x, builder.getF64FloatAttr(*p)));
  }

  if (kind == "aten::embedding") {
    FailureOr<Value> w = input(0), ids = input(1);
    if (failed(w) || failed(ids))
      return failure();
    return pushOp(create<EmbeddingOp>(*w, *ids));
  }

  if (kind == "aten::softmax" || kind == "aten::log_softmax") {
    FailureOr<Value> x = input(0);
    FailureOr<int64_t> dim = toInt(*ins[1], "dim");
    if (failed(x) || failed(dim))
      return failure();
    int64_t axis = normDim(*dim, mlir::cast<RankedTensorType>(x->getType()).getRank());
    if (kind == "aten::softmax")
      return pushOp(createTyped<SoftmaxOp>(x->getType(), *x, builder.getI64IntegerAttr(axis)));
    return pushOp(createTyped<LogSoftmaxOp>(x->getType(), *x, builder.getI64IntegerAttr(axis)));
  }

  if (kind == "aten::mean" || kind == "aten::sum") {
    FailureOr<Value> x = input(0);
    if (failed(x))
      return failure();
    int64_t rank = mlir::cast<RankedTensorType>(x->getType()).getRank();
    std::vector<int64_t> dims;
    if (TVal *d = arg("dim"); present(d)) {
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
    if (TVal *k = arg("keepdim"); present(k))
      keep = *toInt(*k, "keepdim");
    auto d = builder.getDenseI64ArrayAttr(dims);
    UnitAttr keepAttr = keep ? builder.getUnitAttr() : UnitAttr();
    if (kind == "aten::mean")
      return pushOp(create<ReduceMeanOp>(*x, d, keepAttr));
    return pushOp(create<ReduceSumOp>(*x, d, keepAttr));
  }

  if (kind == "aten::adaptive_avg_pool2d") {
    FailureOr<Value> x = input(0);
    FailureOr<std::vector<int64_t>> size = toInts(*ins[1], "output_size");
    if (failed(x) || failed(size))
      return failure();
    if (*size != std::vector<int64_t>{1, 1})
      return fail("only adaptive average pooling to 1x1 is supported");
    return pushOp(create<ReduceMeanOp>(*x, builder.getDenseI64ArrayAttr({2, 3}),
                                       builder.getUnitAttr()));
  }
  if (kind == "aten::max_pool2d") {
    FailureOr<Value> x = input(0);
    FailureOr<std::vector<int64_t>> k = toInts(*ins[1], "kernel_size"),
                                    s = toInts(*ins[2], "stride"),
                                    p = toInts(*ins[3], "padding"),
                                    d = toInts(*ins[4], "dilation");
    FailureOr<int64_t> ceil = toInt(*ins[5], "ceil_mode");
    if (failed(x) || failed(k) || failed(s) || failed(p) || failed(d) || failed(ceil))
      return failure();
    if (*ceil || (*d)[0] != 1 || (*d)[1] != 1)
      return fail("ceil_mode and dilated pooling are not supported");
    if (s->empty())
      s = k;
    return pushOp(create<MaxPool2dOp>(
        *x, builder.getDenseI64ArrayAttr(*k), builder.getDenseI64ArrayAttr(*s),
        builder.getDenseI64ArrayAttr({(*p)[0], (*p)[1], (*p)[0], (*p)[1]}), UnitAttr()));
  }

  // Shape manipulation.
  if (kind == "aten::view" || kind == "aten::reshape") {
    FailureOr<std::vector<int64_t>> shape = toInts(*ins[1], "shape");
    if (failed(shape))
      return failure();
    for (int64_t &d : *shape)
      if (d == 0)
        return fail("zero-sized dimensions are not supported");
    return push(reshape(*ins[0], *shape));
  }
  if (kind == "aten::flatten") {
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
    return push(reshape(*ins[0], out));
  }
  if (kind == "aten::unflatten") {
    std::vector<int64_t> shape = shapeOf(*ins[0]);
    FailureOr<int64_t> d = toInt(*ins[1], "dim");
    FailureOr<std::vector<int64_t>> sizes = toInts(*ins[2], "sizes");
    if (failed(d) || failed(sizes))
      return failure();
    int64_t dim = normDim(*d, shape.size());
    std::vector<int64_t> out(shape.begin(), shape.begin() + dim);
    out.insert(out.end(), sizes->begin(), sizes->end());
    out.insert(out.end(), shape.begin() + dim + 1, shape.end());
    return push(reshape(*ins[0], out));
  }
  if (kind == "aten::unsqueeze" || kind == "aten::squeeze" || kind == "aten::select") {
    std::vector<int64_t> shape = shapeOf(*ins[0]);
    int64_t rank = shape.size();
    FailureOr<int64_t> d = ins.size() > 1 ? toInt(*ins[1], "dim") : FailureOr<int64_t>(-1);
    if (failed(d))
      return failure();
    if (kind == "aten::unsqueeze") {
      int64_t dim = normDim(*d, rank + 1);
      shape.insert(shape.begin() + dim, 1);
      return push(reshape(*ins[0], shape));
    }
    if (kind == "aten::squeeze") {
      std::vector<int64_t> out;
      for (int64_t i = 0; i < rank; ++i)
        if (shape[i] != 1 || (ins.size() > 1 && i != normDim(*d, rank)))
          out.push_back(shape[i]);
      return push(reshape(*ins[0], out));
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
    return push(reshape(*s, shape));
  }
  if (kind == "aten::transpose" || kind == "aten::t") {
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
    return push(transpose(*ins[0], perm));
  }
  if (kind == "aten::permute") {
    FailureOr<std::vector<int64_t>> dims = toInts(*ins[1], "dims");
    if (failed(dims))
      return failure();
    for (int64_t &d : *dims)
      d = normDim(d, dims->size());
    return push(transpose(*ins[0], *dims));
  }
  if (kind == "aten::expand") {
    FailureOr<std::vector<int64_t>> size = toInts(*ins[1], "size");
    if (failed(size))
      return failure();
    return push(expand(*ins[0], *size));
  }
  if (kind == "aten::cat") {
    FailureOr<int64_t> dim = toInt(*ins[1], "dim");
    if (failed(dim) || !ins[0]->list)
      return fail("cat needs a list of tensors and a constant dim");
    return push(concat(*ins[0]->list, *dim));
  }
  if (kind == "aten::slice") {
    FailureOr<int64_t> dim = toInt(*ins[1], "dim");
    int64_t start = 0, end = std::numeric_limits<int64_t>::max(), step = 1;
    if (present(ins[2])) start = *toInt(*ins[2], "start");
    if (present(ins[3])) end = *toInt(*ins[3], "end");
    if (ins.size() > 4 && present(ins[4])) step = *toInt(*ins[4], "step");
    if (failed(dim))
      return failure();
    return push(slice(*ins[0], *dim, start, end, step));
  }
  if (kind == "aten::split" || kind == "aten::chunk" || kind == "aten::unbind") {
    std::vector<int64_t> shape = shapeOf(*ins[0]);
    FailureOr<int64_t> d = toInt(*ins[kind == "aten::unbind" ? 1 : 2], "dim");
    if (failed(d))
      return failure();
    int64_t dim = normDim(*d, shape.size());
    std::vector<int64_t> sizes;
    if (kind == "aten::unbind") {
      sizes.assign(shape[dim], 1);
    } else if (ins[1]->list) {
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

  if (kind == "aten::to" || kind == "aten::type_as") {
    int32_t dt = 0;
    if (kind == "aten::type_as") {
      dt = ox::dtypeOf(typeOf(*ins[1]).getElementType());
    } else if (TVal *d = arg("dtype"); present(d)) {
      FailureOr<int64_t> v = toInt(*d, "dtype");
      if (failed(v))
        return failure();
      dt = dtypeOf(static_cast<c10::ScalarType>(*v));
    } else if (TVal *other = arg("other"); present(other)) {
      dt = ox::dtypeOf(typeOf(*other).getElementType());
    }
    if (dt == 0) {
      outs.push_back(*ins[0]);
      return success();
    }
    return push(cast(*ins[0], dt));
  }

  if (kind == "aten::arange") {
    TVal *s = arg("start"), *e = arg("end"), *st = arg("step");
    double start = present(s) ? *toDouble(*s, "start") : 0;
    double end = present(e) ? *toDouble(*e, "end") : 0;
    double step = present(st) ? *toDouble(*st, "step") : 1;
    int32_t dt = ox::kInt64;
    if (TVal *d = arg("dtype"); present(d))
      dt = dtypeOf(static_cast<c10::ScalarType>(*toInt(*d, "dtype")));
    else if ((present(s) && ox::isFloatDType(s->host->dtype)) ||
             ox::isFloatDType(e->host->dtype))
      dt = ox::kFloat;
    HostTensor a = HostTensor::scalar(start, dt), b = HostTensor::scalar(end, dt),
               c = HostTensor::scalar(step, dt);
    return push(evalHost("Range", {&a, &b, &c}, attrs()));
  }
  if (kind == "aten::ones" || kind == "aten::zeros" || kind == "aten::full") {
    FailureOr<std::vector<int64_t>> size = toInts(*ins[0], "size");
    if (failed(size))
      return failure();
    double fill = kind == "aten::ones" ? 1 : 0;
    int32_t dt = ox::kFloat;
    if (kind == "aten::full") {
      FailureOr<double> v = toDouble(*ins[1], "fill_value");
      if (failed(v))
        return failure();
      fill = *v;
      if (!ox::isFloatDType(ins[1]->host->dtype))
        dt = ox::kInt64;
    }
    if (TVal *d = arg("dtype"); present(d))
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
  if ((kind == "aten::triu" || kind == "aten::tril") && ins[0]->host) {
    FailureOr<int64_t> diagonal = toInt(*ins[1], "diagonal");
    if (failed(diagonal))
      return failure();
    HostTensor k = HostTensor::scalar(*diagonal, ox::kInt64);
    return push(evalHost("Trilu", {&*ins[0]->host, &k},
                         attrs({{"upper", kind == "aten::triu" ? 1 : 0}})));
  }
  if (kind == "aten::masked_fill") {
    TVal &x = *ins[0], &mask = *ins[1], &value = *ins[2];
    if (x.host && mask.host && value.host)
      return push(evalHost("Where", {&*mask.host, &*value.host, &*x.host}, attrs()));
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
    return pushOp(create<SelectOp>(*mv, *vv, *xv));
  }

  if (kind == "aten::scaled_dot_product_attention") {
    FailureOr<Value> q = input(0), k = input(1), v = input(2);
    if (failed(q) || failed(k) || failed(v))
      return failure();
    Value mask;
    if (TVal *m = arg("attn_mask"); present(m)) {
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
    if (TVal *p = arg("dropout_p"); present(p))
      dropout = *toDouble(*p, "dropout_p");
    bool causal = false;
    if (TVal *c = arg("is_causal"); present(c))
      causal = *toInt(*c, "is_causal");
    int64_t d = mlir::cast<RankedTensorType>(q->getType()).getShape().back();
    double scale = 1.0 / std::sqrt(static_cast<double>(d));
    if (TVal *s = arg("scale"); present(s))
      scale = *toDouble(*s, "scale");
    return pushOp(create<AttentionOp>(*q, *k, *v, mask, builder.getF64FloatAttr(scale),
                                      causal ? builder.getUnitAttr() : UnitAttr(),
                                      builder.getF64FloatAttr(dropout)));
  }

  return fail("unsupported op");
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
    StringRef name = graph->inputs()[a.getArgNumber() + 1]->debugName();
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

} // namespace
} // namespace colo::torch_import

bool colo::haveTorchScriptImporter() { return true; }

FailureOr<OwningOpRef<ModuleOp>>
colo::importTorchScriptFile(llvm::StringRef path, MLIRContext &context,
                            llvm::ArrayRef<std::string> inputShapes) {
  return torch_import::TsImporter(context, path, inputShapes).run();
}
