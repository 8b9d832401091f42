// The planner's cost model: a plan's step time and per-device memory from the
// model's IR (each op's FLOPs and bytes through the cost interface) and the
// cluster's figures. Formulas and their sources: docs/planner.md.
#include "colo/Planner/CostModel.h"

#include "colo/Analysis/ModelSummary.h"
#include "colo/Dialect/Colo/ColoOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace colo::planner {

double ModelProfile::totalParams() const {
  return pre.params + layers * layer.params + post.params;
}

double ModelProfile::forwardFlops() const {
  auto f = [](const PartCost &c) { return c.matmulFlops + c.otherFlops; };
  return f(pre) + layers * f(layer) + f(post);
}

namespace {
int64_t bytesOf(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  return rt ? (rt.getNumElements() * rt.getElementTypeBitWidth() + 7) / 8 : 0;
}

bool inBlock(StringRef path, StringRef block) {
  return path.starts_with(block) &&
         (path.size() == block.size() || path[block.size()] == '.');
}

std::string blockPath(const RepeatedBlocks &b, int64_t i) {
  return (StringRef(b.prefix).ends_with("_") ? b.prefix : b.prefix + ".") +
         std::to_string(i);
}

void addCost(PartCost &c, Operation *op, int64_t hidden) {
  auto cost = dyn_cast<CostOpInterface>(op);
  if (!cost)
    return;
  if (!isa<ReshapeOp, GlobalLoadOp, ConstantOp>(op))
    c.ops += 1;
  double flops = cost.getFlops();
  if (cost.getCostClass() == CostClass::Matmul)
    c.matmulFlops += flops;
  else {
    c.otherFlops += flops;
    c.memoryBytes += cost.getBytesRead() + cost.getBytesWritten();
  }
  if (isa<AttentionOp>(op))
    c.attentionFlops += flops;
  if (isa<ReshapeOp, BroadcastToOp, GlobalLoadOp, ConstantOp>(op))
    return;
  for (Value r : op->getResults()) {
    auto t = dyn_cast<RankedTensorType>(r.getType());
    if (!t)
      continue;
    (t.getRank() > 0 && t.getShape().back() == hidden ? c.savedReplicated
                                                      : c.savedSplit) += bytesOf(t);
  }
}

void scale(PartCost &c, double f) {
  c.matmulFlops *= f;
  c.otherFlops *= f;
  c.memoryBytes *= f;
  c.attentionFlops *= f;
  c.savedReplicated *= f;
  c.savedSplit *= f;
}
} // namespace

FailureOr<ModelProfile> profileModel(ModuleOp module) {
  ModelSummary s = summarize(module);
  auto func = module.lookupSymbol<func::FuncOp>("forward");
  if (!func)
    return emitError(module.getLoc(), "the module has no forward function");
  if (s.blocks.empty())
    return emitError(module.getLoc(),
                     "no repeated blocks (layers) found: the planner needs a model "
                     "built of layers");
  const RepeatedBlocks &blocks = *std::max_element(
      s.blocks.begin(), s.blocks.end(), [](const RepeatedBlocks &a, const RepeatedBlocks &b) {
        return a.count * a.opsPerBlock < b.count * b.opsPerBlock;
      });
  std::string first = blockPath(blocks, blocks.first);
  std::vector<std::string> layerPaths;
  for (int64_t i = 0; i < blocks.count; ++i)
    layerPaths.push_back(blockPath(blocks, blocks.first + i));

  ModelProfile p;
  p.layers = blocks.count;
  // The hidden size and sequence: the shape of the tensor leaving a layer.
  Operation *lastInLayer = nullptr;
  func.walk([&](Operation *op) {
    if (op->getNumResults() == 1 && inBlock(modulePath(op->getLoc()), first))
      lastInLayer = op;
    if (auto att = dyn_cast<AttentionOp>(op); att && p.heads == 1)
      p.heads = cast<RankedTensorType>(att.getQuery().getType()).getDimSize(1);
  });
  if (!lastInLayer)
    return emitError(module.getLoc(), "the layers hold no ops");
  auto boundary = cast<RankedTensorType>(lastInLayer->getResult(0).getType());
  p.hidden = boundary.getShape().back();
  p.seq = boundary.getRank() >= 2 ? boundary.getShape()[boundary.getRank() - 2] : 1;
  p.elementBytes = std::max<int64_t>(1, boundary.getElementTypeBitWidth() / 8);

  bool seenLayer = false;
  llvm::StringSet<llvm::MallocAllocator> preGlobals;
  func.walk([&](Operation *op) {
    if (isa<func::FuncOp, func::ReturnOp>(op))
      return;
    std::string path = modulePath(op->getLoc());
    bool inAnyLayer = llvm::any_of(layerPaths, [&](const std::string &l) {
      return inBlock(path, l);
    });
    if (inAnyLayer) {
      seenLayer = true;
      if (inBlock(path, first))
        addCost(p.layer, op, p.hidden);
      return;
    }
    if (isa<GlobalLoadOp>(op))
      return;
    addCost(seenLayer ? p.post : p.pre, op, p.hidden);
    if (!seenLayer)
      for (Value v : op->getOperands())
        if (auto load = v.getDefiningOp<GlobalLoadOp>())
          preGlobals.insert(load.getGlobal());
    if (auto mm = dyn_cast<MatmulOp>(op); mm && seenLayer)
      p.vocab = std::max<int64_t>(p.vocab, mm.getType().getShape().back());
  });
  p.layer.params = blocks.parametersPerBlock;
  for (auto global : module.getOps<GlobalOp>())
    if (global.getTrainable() && preGlobals.contains(global.getSymName()))
      p.pre.params += global.getTensorType().getNumElements();
  p.post.params = s.parameters - p.pre.params - p.layers * p.layer.params;
  double perSample = 1.0 / std::max<int64_t>(1, s.batch);
  scale(p.pre, perSample);
  scale(p.layer, perSample);
  scale(p.post, perSample);
  return p;
}

MemoryBreakdown modelStateMemory(double params, int zero, int64_t dp, bool offload) {
  // ZeRO (Rajbhandari et al. 2020): 2 bytes fp16/bf16 parameters, 2 bytes
  // gradients, 12 bytes fp32 master weights, momentum and variance.
  MemoryBreakdown m;
  m.params = 2 * params / (zero >= 3 ? dp : 1);
  m.grads = 2 * params / (zero >= 2 ? dp : 1);
  m.optimizer = offload ? 0 : 12 * params / (zero >= 1 ? dp : 1);
  return m;
}

double collectiveTime(Collective kind, double bytes, int64_t n, int64_t stride,
                      const ClusterSpec &c) {
  if (n <= 1 || bytes <= 0)
    return 0;
  // Members `stride` apart: a group within one node uses NVLink-class links;
  // one spanning nodes is hierarchical: inside each node, then across.
  int64_t perNode = std::max<int64_t>(1, std::min(n, c.devicesPerNode / std::max<int64_t>(1, stride)));
  if (stride >= c.devicesPerNode)
    perNode = 1;
  int64_t nodes = (n + perNode - 1) / perNode;
  auto ring = [&](double S, int64_t k, double bw, double lat, double factor) {
    if (k <= 1)
      return 0.0;
    return factor * (k - 1) / k * S / bw + factor * (k - 1) * lat;
  };
  double factor = kind == Collective::AllReduce ? 2.0 : 1.0;
  if (kind == Collective::SendRecv)
    return bytes / (nodes > 1 || stride >= c.devicesPerNode ? c.interBandwidth
                                                            : c.intraBandwidth) +
           (nodes > 1 ? c.interLatency : c.intraLatency);
  double intra = ring(bytes, perNode, c.intraBandwidth, c.intraLatency, factor);
  double inter = ring(bytes / perNode, nodes, c.interBandwidth, c.interLatency, factor);
  return intra + inter;
}

namespace {
/// Splits `costs` into `parts` contiguous groups minimizing the largest sum
/// (dynamic programming); returns the group sizes.
std::vector<int64_t> balance(const std::vector<double> &costs, int64_t parts) {
  int64_t n = costs.size();
  std::vector<double> prefix(n + 1, 0);
  for (int64_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + costs[i];
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(parts + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<int64_t>> cut(parts + 1, std::vector<int64_t>(n + 1, 0));
  best[0][0] = 0;
  for (int64_t k = 1; k <= parts; ++k)
    for (int64_t i = k; i <= n; ++i)
      for (int64_t j = k - 1; j < i; ++j) {
        double v = std::max(best[k - 1][j], prefix[i] - prefix[j]);
        if (v < best[k][i]) {
          best[k][i] = v;
          cut[k][i] = j;
        }
      }
  std::vector<int64_t> sizes(parts);
  for (int64_t k = parts, i = n; k >= 1; --k) {
    sizes[k - 1] = i - cut[k][i];
    i = cut[k][i];
  }
  return sizes;
}
} // namespace

llvm::Expected<Prediction> predict(const ModelProfile &m, const ClusterSpec &c,
                                   const Plan &plan) {
  auto bad = [](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
  };
  int64_t tp = plan.tp, pp = plan.pp, dp = plan.dp, v = plan.virtualStages;
  if (plan.worldSize() != c.worldSize())
    return bad("the plan uses dp*tp*pp = " + llvm::Twine(plan.worldSize()) +
               " devices, the cluster has " + llvm::Twine(c.worldSize()));
  if (m.heads % tp != 0)
    return bad("tp = " + llvm::Twine(tp) + " does not divide the " +
               llvm::Twine(m.heads) + " attention heads");
  if (m.hidden % tp != 0)
    return bad("tp = " + llvm::Twine(tp) + " does not divide the hidden size " +
               llvm::Twine(m.hidden));
  if (pp * v > m.layers)
    return bad("pp x virtual stages = " + llvm::Twine(pp * v) + " exceeds the " +
               llvm::Twine(m.layers) + " layers");
  if (plan.sequenceParallel && m.seq % tp != 0)
    return bad("tp = " + llvm::Twine(tp) + " does not divide the sequence length " +
               llvm::Twine(m.seq));

  double b = plan.microBatch;
  double peak = c.peakFlops16 * c.matmulEfficiency;
  double bw = c.memoryBandwidth * c.memoryEfficiency;
  // Without sequence parallelism the hidden-size ops (norms, dropout,
  // residuals) are replicated on every tensor-parallel rank.
  // Every kernel launch costs a few microseconds whatever its size; it is what
  // bounds small models.
  const double launch = 4e-6;
  auto timeOf = [&](const PartCost &part) {
    double repl = part.savedReplicated + part.savedSplit > 0
                      ? part.savedReplicated / (part.savedReplicated + part.savedSplit)
                      : 0;
    double memShare = plan.sequenceParallel ? 1.0 / tp : repl + (1 - repl) / tp;
    return b * (part.matmulFlops / tp / peak + part.memoryBytes * memShare / bw) +
           part.ops * launch;
  };
  double tLayer = timeOf(m.layer), tPre = timeOf(m.pre), tPost = timeOf(m.post);

  // Stage partition: pre + layers + post into pp * v chunks; device d holds
  // chunks d, d + pp, ... (interleaving).
  int64_t chunks = pp * v;
  std::vector<int64_t> chunkLayers;
  if (!plan.stages.empty()) {
    if (static_cast<int64_t>(plan.stages.size()) != chunks)
      return bad("the plan gives " + llvm::Twine(plan.stages.size()) + " stages for " +
                 llvm::Twine(chunks) + " pipeline chunks");
    int64_t expect = 0;
    for (auto [lo, hi] : plan.stages) {
      if (lo != expect || hi <= lo)
        return bad("stage layer ranges must cover the layers in order, without gaps");
      chunkLayers.push_back(hi - lo);
      expect = hi;
    }
    if (expect != m.layers)
      return bad("stage ranges cover " + llvm::Twine(expect) + " of " +
                 llvm::Twine(m.layers) + " layers");
  } else if (chunks == 1) {
    chunkLayers = {m.layers};
  } else {
    // Balance layers plus the embedding (first chunk) and head (last).
    std::vector<double> costs(m.layers, tLayer);
    costs.front() += tPre;
    costs.back() += tPost;
    chunkLayers = balance(costs, chunks);
  }
  std::vector<double> deviceTime(pp, 0), deviceLayers(pp, 0);
  for (int64_t k = 0; k < chunks; ++k) {
    double t = chunkLayers[k] * tLayer + (k == 0 ? tPre : 0) + (k == chunks - 1 ? tPost : 0);
    deviceTime[k % pp] += t;
    deviceLayers[k % pp] += chunkLayers[k];
  }
  double tF = *std::max_element(deviceTime.begin(), deviceTime.end());
  double maxLayers = *std::max_element(deviceLayers.begin(), deviceLayers.end());

  Prediction p;
  p.plan = plan;
  p.stageLayers = chunkLayers;
  TimeBreakdown &t = p.time;
  double mcount = plan.microBatches;
  // Backward costs twice the forward.
  t.compute = mcount * 3 * tF;
  if (plan.recompute == Recompute::Full)
    t.recompute = mcount * tF;
  else if (plan.recompute == Recompute::Selective)
    t.recompute = mcount * maxLayers * b * m.layer.attentionFlops / tp / peak;

  // Megatron tensor parallelism: two all-reduces of b*s*h forward, two
  // backward per layer (all-gather + reduce-scatter pairs of the same volume
  // with sequence parallelism); full recompute repeats the forward two.
  double boundary = b * m.seq * m.hidden * m.elementBytes;
  double ar = collectiveTime(Collective::AllReduce, boundary, tp, 1, c);
  double perLayer = (plan.recompute == Recompute::Full ? 6 : 4) * ar;
  t.tensorParallel = mcount * maxLayers * perLayer;

  double tMicro = (t.compute + t.recompute + t.tensorParallel) / mcount;
  if (pp > 1) {
    double p2p = collectiveTime(Collective::SendRecv, boundary, 2, tp * dp, c);
    t.pipelineComm = mcount * 2 * v * p2p;
    t.bubble = double(pp - 1) / v * tMicro;
  }

  // Data parallelism: gradients reduced once per step, overlapped with the
  // backward of the last microbatch; ZeRO-3 also gathers parameters before
  // each microbatch's forward and backward (prefetched behind compute).
  double devParams = 0;
  for (int64_t d = 0; d < pp; ++d) {
    double params = 0;
    for (int64_t k = d; k < chunks; k += pp)
      params += chunkLayers[k] * m.layer.params + (k == 0 ? m.pre.params : 0) +
                (k == chunks - 1 ? m.post.params : 0);
    devParams = std::max(devParams, params / tp);
  }
  double gradSync = collectiveTime(Collective::AllReduce, 2 * devParams, dp, tp, c);
  double overlap = 2 * tMicro / 3;
  t.dataParallel = std::max(0.0, gradSync - overlap);
  if (plan.zero >= 3) {
    // Each layer's parameters are gathered while the previous layer runs
    // (one-layer prefetch), in the forward and again in the backward: what
    // a layer's compute cannot hide is exposed.
    double gatherLayer =
        collectiveTime(Collective::AllGather, 2 * m.layer.params / tp, dp, tp, c);
    double fwdLayer = tLayer, bwdLayer = 2 * tLayer;
    t.dataParallel += mcount * maxLayers *
                      (std::max(0.0, gatherLayer - fwdLayer) +
                       std::max(0.0, gatherLayer - bwdLayer));
  }
  // Adam reads and writes ~32 bytes per parameter it owns (fp32 master,
  // momentum, variance, gradient, bf16 copy).
  double owned = devParams / (plan.zero >= 1 ? dp : 1);
  if (plan.offload == Offload::Optimizer) {
    // ZeRO-Offload: gradients down and parameters up over PCIe, CPU Adam at
    // about 1e9 parameters/s per device's share of the host.
    t.offload = 4 * owned / c.pcieBandwidth + owned / 1e9;
  } else {
    t.optimizer = 32 * owned / bw;
  }

  p.stepTime = t.total();

  // Memory of each device; report the largest.
  double inflight = plan.schedule == Schedule::GPipe ? mcount
                    : pp > 1 ? std::min<double>(mcount, pp) : 1;
  if (plan.schedule == Schedule::Interleaved)
    inflight *= 1 + double(pp - 1) / (pp * v);
  double savedPerLayer =
      plan.recompute == Recompute::Full
          ? boundary / (plan.sequenceParallel ? tp : 1)
          : b * (m.layer.savedReplicated / (plan.sequenceParallel ? tp : 1) +
                 m.layer.savedSplit / tp);
  double workingLayer =
      b * (m.layer.savedReplicated / (plan.sequenceParallel ? tp : 1) + m.layer.savedSplit / tp);
  MemoryBreakdown worst;
  for (int64_t d = 0; d < pp; ++d) {
    double params = 0, layers = 0;
    bool first = d == 0, last = (chunks - 1) % pp == d;
    for (int64_t k = d; k < chunks; k += pp) {
      params += chunkLayers[k] * m.layer.params + (k == 0 ? m.pre.params : 0) +
                (k == chunks - 1 ? m.post.params : 0);
      layers += chunkLayers[k];
    }
    MemoryBreakdown mem = modelStateMemory(params / tp, plan.zero, dp,
                                           plan.offload == Offload::Optimizer);
    double inflightHere = std::max(1.0, inflight - d);
    mem.activations = inflightHere * layers * savedPerLayer +
                      (plan.recompute == Recompute::Full ? workingLayer : 0) +
                      (first ? inflightHere * b * m.pre.savedReplicated / tp : 0);
    // Workspace and communication buckets, plus fp32 logits for the loss.
    mem.buffers = 1.0 * (1 << 30) + (last ? b * m.seq * m.vocab * 4.0 / tp : 0);
    if (mem.total() > worst.total())
      worst = mem;
  }
  p.memory = worst;
  p.fits = worst.total() <= 0.92 * c.deviceMemory;

  double modelFlops = 3 * m.forwardFlops() * plan.globalBatch();
  p.tokensPerSecond = plan.globalBatch() * m.seq / p.stepTime;
  p.tflopsPerDevice = modelFlops / p.stepTime / c.worldSize() / 1e12;
  p.mfu = modelFlops / p.stepTime / c.worldSize() / c.peakFlops16;
  return p;
}

void printExplanation(const ModelProfile &m, const ClusterSpec &c, const Prediction &p,
                      llvm::raw_ostream &os) {
  auto gb = [](double b) { return b / (1 << 30); };
  os << "plan         " << p.plan.str() << "\n";
  os << llvm::format("model        %.3g parameters, %d layers, hidden %lld, %lld heads, "
                     "seq %lld\n",
                     m.totalParams(), static_cast<int>(m.layers),
                     static_cast<long long>(m.hidden), static_cast<long long>(m.heads),
                     static_cast<long long>(m.seq));
  os << "cluster      " << c.name << ": " << c.nodes << " x " << c.devicesPerNode
     << " devices\n";
  os << "stages       ";
  for (size_t i = 0; i < p.stageLayers.size(); ++i)
    os << (i ? " | " : "") << p.stageLayers[i];
  os << " layers\n";
  const MemoryBreakdown &mem = p.memory;
  os << llvm::format("memory       %.2f GiB per device of %.2f GiB (%s)\n", gb(mem.total()),
                     gb(c.deviceMemory), p.fits ? "fits" : "does not fit");
  os << llvm::format("  parameters %9.2f GiB\n  gradients  %9.2f GiB\n  optimizer  %9.2f GiB\n"
                     "  activations%9.2f GiB\n  buffers    %9.2f GiB\n",
                     gb(mem.params), gb(mem.grads), gb(mem.optimizer), gb(mem.activations),
                     gb(mem.buffers));
  const TimeBreakdown &t = p.time;
  os << llvm::format("step time    %.3f s\n", p.stepTime);
  auto line = [&](const char *name, double s) {
    os << llvm::format("  %-22s %9.3f s  %5.1f%%\n", name, s, 100 * s / p.stepTime);
  };
  line("compute (fwd + bwd)", t.compute);
  line("recompute", t.recompute);
  line("tensor-parallel comm", t.tensorParallel);
  line("pipeline send/recv", t.pipelineComm);
  line("pipeline bubble", t.bubble);
  line("data-parallel (exposed)", t.dataParallel);
  line("optimizer", t.optimizer);
  line("offload", t.offload);
  os << llvm::format("throughput   %.0f tokens/s, %.1f TFLOP/s per device, MFU %.1f%%\n",
                     p.tokensPerSecond, p.tflopsPerDevice, 100 * p.mfu);
}

} // namespace colo::planner
