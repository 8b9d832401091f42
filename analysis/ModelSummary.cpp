#include "colo/Analysis/ModelSummary.h"

#include "colo/Dialect/Colo/ColoOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <set>

using namespace mlir;

namespace colo {

namespace {
std::optional<StringRef> firstName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().strref();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (auto n = firstName(inner))
        return n;
  return std::nullopt;
}

std::string typeString(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (auto rt = dyn_cast<RankedTensorType>(t)) {
    for (int64_t d : rt.getShape())
      os << d << "x";
    os << rt.getElementType();
  } else {
    os << t;
  }
  return s;
}

/// What makes two ops interchangeable between blocks: name, types,
/// attributes; not the pipeline stage colo-pipeline-stages placed it on
/// (the layers of two stages are the same layer).
std::string signature(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << op->getName() << "(";
  for (Type t : op->getOperandTypes())
    os << typeString(t) << ",";
  os << ")->(";
  for (Type t : op->getResultTypes())
    os << typeString(t) << ",";
  os << ")";
  StringRef stage = ColoDialect::StageAttrHelper::getNameStr();
  for (NamedAttribute a : op->getAttrs())
    if (a.getName() != stage)
      os << a.getName().getValue() << "=" << a.getValue() << ",";
  return s;
}

std::string humanCount(double v, llvm::StringRef unit) {
  const char *prefixes[] = {"", "K", "M", "G", "T", "P", "E"};
  int i = 0;
  while (std::abs(v) >= 1000 && i < 6) {
    v /= 1000;
    ++i;
  }
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format(i ? "%.2f " : "%.0f ", v) << prefixes[i] << unit;
  return s;
}

/// "h" + 3 -> "h.3"; "layers.encoder_layer_" + 3 -> "layers.encoder_layer_3".
/// What precedes a block's index in its path: "h" -> "h.",
/// "layers.encoder_layer_" -> itself.
std::string blockStem(StringRef prefix) {
  return prefix.ends_with("_") ? prefix.str() : prefix.str() + ".";
}

std::string blockName(StringRef prefix, int64_t index) {
  return blockStem(prefix) + std::to_string(index);
}

std::string withCommas(int64_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}
} // namespace

std::string modulePath(Location loc) {
  std::optional<StringRef> name = firstName(loc);
  if (!name)
    return {};
  SmallVector<StringRef> parts;
  name->split(parts, '/', -1, /*KeepEmpty=*/false);
  if (parts.size() < 2)
    return {};
  parts.pop_back();
  // TorchScript-exporter scopes repeat their parent: /layer1/layer1.0/conv1.
  SmallVector<StringRef> path;
  for (StringRef p : parts) {
    if (!path.empty() && p.starts_with(path.back()) &&
        p.drop_front(path.back().size()).starts_with("."))
      path.pop_back();
    path.push_back(p);
  }
  return llvm::join(path, ".");
}

ModelSummary summarize(ModuleOp module) {
  ModelSummary s;
  if (StringAttr src = ColoDialect::SourceAttrHelper(module.getContext()).getAttr(module))
    s.source = src.str();
  llvm::StringMap<int64_t> paramSizes;
  for (auto global : module.getOps<GlobalOp>()) {
    int64_t n = global.getTensorType().getNumElements();
    if (global.getTrainable()) {
      s.parameters += n;
      ++s.parameterTensors;
      paramSizes[global.getSymName()] = n;
    } else {
      s.bufferElements += n;
      ++s.bufferTensors;
    }
  }
  auto func = module.lookupSymbol<func::FuncOp>("forward");
  if (!func)
    return s;
  for (Type t : func.getArgumentTypes())
    s.inputs.push_back(typeString(t));
  for (Type t : func.getResultTypes())
    s.outputs.push_back(typeString(t));
  if (!func.getArgumentTypes().empty())
    if (auto t = dyn_cast<RankedTensorType>(func.getArgumentTypes().front());
        t && t.getRank() > 0 && t.getDimSize(0) > 0)
      s.batch = t.getDimSize(0);

  // prefix -> index -> ops of that block, in program order.
  std::map<std::string, std::map<int64_t, std::vector<Operation *>>> groups;
  func.walk([&](Operation *op) {
    if (isa<func::FuncOp, func::ReturnOp, ConstantOp, GlobalLoadOp>(op))
      return;
    ++s.opCounts[op->getName().stripDialect().str()];
    if (auto cost = dyn_cast<CostOpInterface>(op)) {
      s.flops += cost.getFlops();
      s.bytesRead += cost.getBytesRead();
      s.bytesWritten += cost.getBytesWritten();
      if (cost.getCostClass() == CostClass::Matmul)
        s.matmulFlops += cost.getFlops();
    }
    SmallVector<StringRef> comps;
    std::string path = modulePath(op->getLoc());
    StringRef(path).split(comps, '.');
    for (size_t i = 1; i < comps.size(); ++i) {
      // Blocks are numbered "h.3" (ModuleList) or "encoder_layer_3" (named).
      auto [stem, suffix] = comps[i].rsplit('_');
      int64_t index;
      std::string prefix = llvm::join(ArrayRef<StringRef>(comps).take_front(i), ".");
      if (!comps[i].getAsInteger(10, index))
        groups[prefix][index].push_back(op);
      else if (!suffix.empty() && !suffix.getAsInteger(10, index))
        groups[prefix + "." + stem.str() + "_"][index].push_back(op);
    }
  });

  std::vector<std::string> covered;
  for (auto &[prefix, blocks] : groups) {
    StringRef name = prefix; // a lambda may not capture a binding before C++20
    if (llvm::any_of(covered, [&](const std::string &c) { return name.starts_with(c + "."); }))
      continue;
    auto sig = [](const std::vector<Operation *> &ops) {
      std::vector<std::string> v;
      for (Operation *op : ops)
        v.push_back(signature(op));
      return v;
    };
    for (auto it = blocks.begin(); it != blocks.end();) {
      auto end = std::next(it);
      std::vector<std::string> first = sig(it->second);
      int64_t expected = it->first + 1;
      while (end != blocks.end() && end->first == expected && sig(end->second) == first) {
        ++end;
        ++expected;
      }
      int64_t count = expected - it->first;
      if (count >= 2) {
        RepeatedBlocks r{prefix, it->first, count, 0, 0, 0};
        r.opsPerBlock = it->second.size();
        for (Operation *op : it->second)
          if (auto cost = dyn_cast<CostOpInterface>(op))
            r.flopsPerBlock += cost.getFlops();
        std::string blockPrefix = blockName(prefix, it->first) + ".";
        for (auto &p : paramSizes)
          if (p.getKey().starts_with(blockPrefix))
            r.parametersPerBlock += p.getValue();
        s.blocks.push_back(r);
        for (int64_t i = it->first; i < expected; ++i)
          covered.push_back(blockName(prefix, i));
      }
      it = end;
    }
  }
  return s;
}

void printSummary(const ModelSummary &s, llvm::raw_ostream &os) {
  double perSample = static_cast<double>(s.flops) / s.batch;
  os << "inputs       " << llvm::join(s.inputs, ", ") << "  (batch " << s.batch
     << ")\n";
  os << "outputs      " << llvm::join(s.outputs, ", ") << "\n";
  os << "parameters   " << withCommas(s.parameters) << " in " << s.parameterTensors
     << " tensors\n";
  os << "buffers      " << withCommas(s.bufferElements) << " in " << s.bufferTensors
     << " tensors\n";
  os << "forward      " << humanCount(perSample, "FLOP") << " per sample ("
     << humanCount(static_cast<double>(s.matmulFlops) / s.batch, "FLOP")
     << " in matmul/conv/attention), "
     << humanCount(static_cast<double>(s.bytesRead + s.bytesWritten) / s.batch, "B")
     << " moved per sample\n";
  int64_t total = 0;
  for (auto &[name, count] : s.opCounts)
    total += count;
  os << "ops          " << total << " in " << s.opCounts.size() << " kinds\n";
  for (auto &[name, count] : s.opCounts)
    os << llvm::format("  %-20s %6lld\n", name.c_str(), static_cast<long long>(count));
  os << "repeated blocks";
  if (s.blocks.empty())
    os << "  none found\n";
  else
    os << "\n";
  for (const RepeatedBlocks &b : s.blocks)
    os << "  " << b.prefix << (StringRef(b.prefix).ends_with("_") ? "{" : ".{")
       << b.first << ".." << b.first + b.count - 1
       << "}  " << b.count << " x " << b.opsPerBlock << " ops, "
       << humanCount(static_cast<double>(b.flopsPerBlock) / s.batch, "FLOP")
       << " per sample, " << withCommas(b.parametersPerBlock) << " parameters each\n";
}

llvm::json::Value toJSON(const ModelSummary &s) {
  llvm::json::Object ops;
  for (auto &[name, count] : s.opCounts)
    ops[name] = count;
  llvm::json::Array blocks;
  for (const RepeatedBlocks &b : s.blocks)
    blocks.push_back(llvm::json::Object{{"prefix", b.prefix},
                                        {"first", b.first},
                                        {"count", b.count},
                                        {"ops", b.opsPerBlock},
                                        {"flops", b.flopsPerBlock},
                                        {"parameters", b.parametersPerBlock}});
  return llvm::json::Object{
      {"source", s.source},
      {"inputs", llvm::json::Array(s.inputs)},
      {"outputs", llvm::json::Array(s.outputs)},
      {"batch", s.batch},
      {"parameters", s.parameters},
      {"parameter_tensors", s.parameterTensors},
      {"buffer_elements", s.bufferElements},
      {"buffer_tensors", s.bufferTensors},
      {"flops", s.flops},
      {"matmul_flops", s.matmulFlops},
      {"flops_per_sample", static_cast<double>(s.flops) / s.batch},
      {"matmul_flops_per_sample", static_cast<double>(s.matmulFlops) / s.batch},
      {"bytes_read", s.bytesRead},
      {"bytes_written", s.bytesWritten},
      {"op_counts", std::move(ops)},
      {"blocks", std::move(blocks)},
  };
}

std::string RepeatedBlocks::path(int64_t i) const { return blockName(prefix, first + i); }

std::optional<int64_t> RepeatedBlocks::blockOf(StringRef modulePath) const {
  if (!modulePath.consume_front(blockStem(prefix)))
    return std::nullopt;
  StringRef digits = modulePath.take_while(llvm::isDigit);
  StringRef rest = modulePath.drop_front(digits.size());
  int64_t index;
  if (digits.empty() || (digits.size() > 1 && digits.front() == '0') ||
      digits.getAsInteger(10, index) || !(rest.empty() || rest.front() == '.') ||
      index < first || index >= first + count)
    return std::nullopt;
  return index - first;
}

const RepeatedBlocks *findLayers(const ModelSummary &s) {
  const RepeatedBlocks *layers = nullptr;
  for (const RepeatedBlocks &b : s.blocks)
    if (!layers || b.count * b.opsPerBlock > layers->count * layers->opsPerBlock)
      layers = &b;
  return layers;
}

} // namespace colo
