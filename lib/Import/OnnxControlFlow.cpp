// ONNX control flow computed at import time: Loop and If whose conditions
// and trip counts are known, and the sequences they build. The dynamo
// exporter writes aten::as_strided (torchvision's ConvNeXt and Swin) as a
// Loop over the dimensions that computes the strided view's indices from
// shapes and strides: every value in it is a constant, so the importer runs
// the body on the host, iteration by iteration, and the graph sees only
// the resulting indices. A body that computes anything at run time is
// refused by name.
#include "OnnxImporterImpl.h"

using namespace mlir;

namespace colo::onnx_import {
namespace {
const onnx::GraphProto *graphAttr(const onnx::NodeProto &node, llvm::StringRef name) {
  for (const auto &a : node.attribute())
    if (a.name() == name && a.has_g())
      return &a.g();
  return nullptr;
}

bool knownNow(const Val &v) {
  if (v.sequence)
    return llvm::all_of(*v.sequence, knownNow);
  return v.host.has_value();
}

/// A Loop may run at most this many iterations at import time.
constexpr int64_t kMaxIterations = 1 << 20;
} // namespace

LogicalResult Importer::runSubgraph(const onnx::GraphProto &graph, ArrayRef<Val> inputs,
                                    SmallVectorImpl<Val> &outputs) {
  if (graph.input_size() != static_cast<int>(inputs.size()))
    return fail("subgraph takes " + std::to_string(graph.input_size()) + " inputs, given " +
                std::to_string(inputs.size()));
  // Bind the inputs, remembering outer values they shadow.
  std::vector<std::pair<std::string, std::optional<Val>>> shadowed;
  auto bind = [&](const std::string &name, const Val &v) {
    auto it = values.find(name);
    shadowed.push_back({name, it == values.end() ? std::nullopt : std::optional(it->second)});
    values[name] = v;
  };
  for (auto [i, in] : llvm::enumerate(graph.input()))
    bind(in.name(), inputs[i]);
  LogicalResult result = success();
  std::vector<std::string> defined;
  for (auto [i, node] : llvm::enumerate(graph.node())) {
    for (const std::string &out : node.output())
      if (!out.empty() && values.count(out)) {
        shadowed.push_back({out, values[out]});
        values.erase(out);
      }
    if (failed(importNode(node, i))) {
      std::string name = node.name().empty() ? "#" + std::to_string(i) : node.name();
      result = fail("in its body, node '" + name + "' (" + node.op_type() + "): " + nodeError);
      break;
    }
    for (const std::string &out : node.output())
      if (!out.empty()) {
        defined.push_back(out);
        if (auto it = values.find(out); it != values.end() && !knownNow(it->second)) {
          result = fail("'" + node.op_type() + "' in a Loop or If computes at run time; only "
                        "bodies known at import time are supported");
          break;
        }
      }
    if (failed(result))
      break;
  }
  if (succeeded(result))
    for (const auto &out : graph.output()) {
      auto it = values.find(out.name());
      if (it == values.end()) {
        result = fail("subgraph output '" + out.name() + "' is not defined");
        break;
      }
      outputs.push_back(it->second);
    }
  for (const std::string &name : defined)
    values.erase(name);
  for (auto &[name, old] : llvm::reverse(shadowed)) {
    values.erase(name);
    if (old)
      values[name] = *old;
  }
  return result;
}

LogicalResult Importer::importIf(const onnx::NodeProto &node, Inputs ins, Outputs &outs) {
  if (!ins[0]->host || ins[0]->host->numel() != 1)
    return fail("the condition must be known at import time");
  const onnx::GraphProto *branch =
      graphAttr(node, ins[0]->host->values[0] != 0 ? "then_branch" : "else_branch");
  if (!branch)
    return fail("missing then_branch or else_branch");
  SmallVector<Val> results;
  if (failed(runSubgraph(*branch, {}, results)))
    return failure();
  outs.append(results.begin(), results.end());
  return success();
}

/// Loop(M, cond, v...): body(i, cond, v...) -> (cond, v..., scans...).
LogicalResult Importer::importLoop(const onnx::NodeProto &node, Inputs ins, Outputs &outs) {
  const onnx::GraphProto *body = graphAttr(node, "body");
  if (!body)
    return fail("missing body");
  Val *tripIn = ins.empty() ? nullptr : ins[0], *condIn = ins.size() > 1 ? ins[1] : nullptr;
  if ((tripIn && !tripIn->host) || (condIn && !condIn->host))
    return fail("the trip count and condition must be known at import time");
  int64_t trips = tripIn ? tripIn->host->asInt(0) : kMaxIterations;
  bool cond = condIn ? condIn->host->values.at(0) != 0 : true;
  std::vector<Val> carried;
  for (size_t i = 2; i < ins.size(); ++i) {
    if (!ins[i] || !knownNow(*ins[i]))
      return fail("loop-carried values must be known at import time");
    carried.push_back(*ins[i]);
  }
  size_t numScans = body->output_size() - 1 - carried.size();
  std::vector<std::vector<HostTensor>> scans(numScans);
  int64_t i = 0;
  for (; i < trips && cond; ++i) {
    if (i == kMaxIterations)
      return fail("runs more than " + std::to_string(kMaxIterations) + " iterations");
    std::vector<Val> in = {Val{{}, HostTensor::scalar(i, kInt64), {}},
                           Val{{}, HostTensor::scalar(cond, kBool), {}}};
    in.insert(in.end(), carried.begin(), carried.end());
    SmallVector<Val> out;
    if (failed(runSubgraph(*body, in, out)))
      return failure();
    if (!out[0].host || out[0].host->numel() != 1)
      return fail("the body's condition must be one value");
    cond = out[0].host->values[0] != 0;
    for (size_t c = 0; c < carried.size(); ++c)
      carried[c] = out[1 + c];
    for (size_t s = 0; s < numScans; ++s) {
      if (!out[1 + carried.size() + s].host)
        return fail("scan outputs must be tensors");
      scans[s].push_back(*out[1 + carried.size() + s].host);
    }
  }
  outs.append(carried.begin(), carried.end());
  for (std::vector<HostTensor> &steps : scans) {
    if (steps.empty())
      return fail("a scan output of a loop that runs no iteration has no shape");
    std::vector<const HostTensor *> stacked;
    for (HostTensor &t : steps) {
      t.shape.insert(t.shape.begin(), 1);
      stacked.push_back(&t);
    }
    NodeAttrs axis0 = attrs(node);
    axis0.getInt = [](llvm::StringRef n) -> std::optional<int64_t> {
      return n == "axis" ? std::optional<int64_t>(0) : std::nullopt;
    };
    EvalResult r = evaluate("Concat", stacked, axis0);
    if (r.kind != EvalResult::Folded)
      return fail("cannot stack the scan output: " + r.error);
    outs.push_back(Val{{}, std::move(r.outputs[0]), {}});
  }
  return success();
}

LogicalResult Importer::importSequenceEmpty(const onnx::NodeProto &, Inputs, Outputs &outs) {
  outs.push_back(Val{{}, {}, std::vector<Val>()});
  return success();
}

LogicalResult Importer::importSequenceInsert(const onnx::NodeProto &, Inputs ins,
                                             Outputs &outs) {
  if (!ins[0]->sequence)
    return fail("input is not a sequence");
  std::vector<Val> seq = *ins[0]->sequence;
  int64_t n = seq.size(), at = n;
  if (ins.size() > 2 && ins[2]) {
    FailureOr<std::vector<int64_t>> p = constInts(ins[2], "sequence position");
    if (failed(p))
      return failure();
    at = (*p)[0] < 0 ? (*p)[0] + n : (*p)[0];
  }
  if (at < 0 || at > n)
    return fail("position out of range");
  seq.insert(seq.begin() + at, *ins[1]);
  outs.push_back(Val{{}, {}, std::move(seq)});
  return success();
}

/// ConcatFromSequence of tensors known now (`new_axis` stacks them).
LogicalResult Importer::importConcatFromSequence(const onnx::NodeProto &node, Inputs ins,
                                                 Outputs &outs) {
  if (!ins[0]->sequence || ins[0]->sequence->empty())
    return fail("input is not a non-empty sequence");
  NodeAttrs a = attrs(node);
  int64_t axis = a.getInt("axis").value_or(0);
  bool newAxis = a.getInt("new_axis").value_or(0) != 0;
  std::vector<HostTensor> parts;
  for (const Val &v : *ins[0]->sequence) {
    if (!v.host)
      return fail("only sequences of tensors known at import time are supported");
    HostTensor t = *v.host;
    if (newAxis) {
      int64_t rank = t.shape.size() + 1, at = axis < 0 ? axis + rank : axis;
      if (at < 0 || at >= rank)
        return fail("axis out of range");
      t.shape.insert(t.shape.begin() + at, 1);
    }
    parts.push_back(std::move(t));
  }
  std::vector<const HostTensor *> in;
  for (const HostTensor &t : parts)
    in.push_back(&t);
  EvalResult r = evaluate("Concat", in, a);
  if (r.kind != EvalResult::Folded)
    return fail(r.error.empty() ? "cannot concatenate the sequence" : r.error);
  outs.push_back(Val{{}, std::move(r.outputs[0]), {}});
  return success();
}

} // namespace colo::onnx_import
