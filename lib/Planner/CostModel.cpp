// The planner's cost model: a plan's step time and per-device memory from the
// model's IR (each op's FLOPs and bytes through the cost interface) and the
// cluster's figures. Formulas and their sources: docs/planner.md.
#include "colo/Planner/CostModel.h"

#include "colo/Analysis/ModelSummary.h"
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/Pipeline.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace colo::planner {

PartCost &PartCost::operator+=(const PartCost &o) {
  matmulFlops += o.matmulFlops;
  otherFlops += o.otherFlops;
  memoryBytes += o.memoryBytes;
  attentionFlops += o.attentionFlops;
  params += o.params;
  ops += o.ops;
  savedReplicated += o.savedReplicated;
  savedSplit += o.savedSplit;
  savedScores += o.savedScores;
  return *this;
}

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

void addCost(PartCost &c, Operation *op) {
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
}

/// The parameter or constant `v` is, or is a view, transpose or cast of (a
/// transposed weight); null when `v` depends on the batch.
Operation *weightSource(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (isa<GlobalLoadOp, ConstantOp>(def))
      return def;
    if (!isa<ReshapeOp, TransposeOp, BroadcastToOp, ConvertOp>(def) ||
        def->getNumOperands() != 1)
      return nullptr;
    v = def->getOperand(0);
  }
  return nullptr;
}

/// Adds the forward values that `op`'s backward reads to the bytes kept for
/// backward, each value once (`kept`); a reshape is a view of its operand, so
/// the operand's buffer is what is kept. Linear and data-movement ops (adds,
/// slices, transposes, concatenations, sums) read none of their inputs
/// backward; every other op is taken to read its non-weight operands.
/// Attention is differentiated as colo-decompose-attention writes it: its
/// matmuls read q, k, v and the probabilities, which the softmax backward
/// reads too (in f32, and again in the 16-bit type the second matmul takes).
void addSaved(PartCost &c, Operation *op, int64_t hidden, llvm::DenseSet<Value> &kept) {
  if (isa<AddOp, SubOp, NegOp, ReshapeOp, TransposeOp, SliceOp, ConcatOp, BroadcastToOp,
          ReduceSumOp, ReduceMeanOp, ConvertOp, GlobalLoadOp, ConstantOp>(op))
    return;
  auto keep = [&](Value v) {
    while (auto reshape = v.getDefiningOp<ReshapeOp>())
      v = reshape->getOperand(0);
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || weightSource(v) || !kept.insert(v).second)
      return;
    (t.getRank() > 0 && t.getShape().back() == hidden ? c.savedReplicated
                                                      : c.savedSplit) += bytesOf(t);
  };
  if (auto attention = dyn_cast<AttentionOp>(op)) {
    for (Value v : {attention.getQuery(), attention.getKey(), attention.getValue()})
      keep(v);
    auto q = cast<RankedTensorType>(attention.getQuery().getType());
    auto k = cast<RankedTensorType>(attention.getKey().getType());
    int64_t bits = q.getElementTypeBitWidth();
    double perScore = 4 + (bits < 32 ? bits / 8 : 0);
    double scores = q.getNumElements() / q.getShape().back() * k.getDimSize(2) * perScore;
    c.savedScores += scores;
    c.savedSplit += scores;
    return;
  }
  for (Value v : op->getOperands())
    keep(v);
}

/// Adds the trainable parameters `op` reads that no earlier op of the layer
/// read (`counted`) to `c`.
void addParams(PartCost &c, Operation *op, ModuleOp module,
               llvm::StringSet<llvm::MallocAllocator> &counted) {
  for (Value v : op->getOperands()) {
    auto load = dyn_cast_or_null<GlobalLoadOp>(weightSource(v));
    if (!load || !counted.insert(load.getGlobal()).second)
      continue;
    if (auto global = module.lookupSymbol<GlobalOp>(load.getGlobal());
        global && global.getTrainable())
      c.params += global.getTensorType().getNumElements();
  }
}

void scale(PartCost &c, double f) {
  c.matmulFlops *= f;
  c.otherFlops *= f;
  c.memoryBytes *= f;
  c.attentionFlops *= f;
  c.savedReplicated *= f;
  c.savedSplit *= f;
  c.savedScores *= f;
}
} // namespace

FailureOr<ModelProfile> profileModel(ModuleOp module) {
  ModelSummary s = summarize(module);
  auto func = module.lookupSymbol<func::FuncOp>("forward");
  if (!func)
    return emitError(module.getLoc(), "the module has no forward function");
  const RepeatedBlocks *layers = findLayers(s);
  if (!layers)
    return emitError(module.getLoc(),
                     "no repeated blocks (layers) found: the planner needs a model "
                     "built of layers");
  const RepeatedBlocks &blocks = *layers;

  ModelProfile p;
  p.layers = blocks.count;
  // The hidden size and sequence: the shape of the tensor leaving a layer.
  Operation *lastInLayer = nullptr;
  func.walk([&](Operation *op) {
    if (op->getNumResults() == 1 && blocks.blockOf(modulePath(op->getLoc())) == 0)
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

  // The first layer's ops, split where colo-pipeline-stages may cut.
  llvm::DenseSet<Operation *> cutAfter;
  {
    PipelineCutPoints points = findPipelineCutPoints(func.front());
    for (int64_t i : points.candidates)
      cutAfter.insert(points.ops[i]);
  }
  p.segments.emplace_back();
  llvm::StringSet<llvm::MallocAllocator> layerGlobals;

  bool seenLayer = false;
  llvm::StringSet<llvm::MallocAllocator> preGlobals, postGlobals;
  llvm::DenseSet<Value> kept;
  func.walk([&](Operation *op) {
    if (isa<func::FuncOp, func::ReturnOp>(op))
      return;
    std::string path = modulePath(op->getLoc());
    if (std::optional<int64_t> layer = blocks.blockOf(path)) {
      seenLayer = true;
      if (*layer == 0) {
        PartCost &segment = p.segments.back();
        addCost(segment, op);
        addSaved(segment, op, p.hidden, kept);
        addParams(segment, op, module, layerGlobals);
        if (cutAfter.contains(op) && segment.ops > 0)
          p.segments.emplace_back();
      }
      return;
    }
    if (isa<GlobalLoadOp>(op))
      return;
    addCost(seenLayer ? p.post : p.pre, op);
    addSaved(seenLayer ? p.post : p.pre, op, p.hidden, kept);
    for (Value v : op->getOperands())
      if (auto load = v.getDefiningOp<GlobalLoadOp>())
        (seenLayer ? postGlobals : preGlobals).insert(load.getGlobal());
    if (auto mm = dyn_cast<MatmulOp>(op); mm && seenLayer)
      p.vocab = std::max<int64_t>(p.vocab, mm.getType().getShape().back());
  });
  if (p.segments.size() > 1 && p.segments.back().ops == 0)
    p.segments.pop_back();
  for (const PartCost &segment : p.segments)
    p.layer += segment;
  // The model summary counts each layer's parameters; where the operands
  // seen here miss some (read other than through a load), share them out.
  double found = p.layer.params;
  p.layer.params = blocks.parametersPerBlock;
  for (PartCost &segment : p.segments)
    segment.params = found > 0 ? segment.params * p.layer.params / found
                               : p.layer.params / p.segments.size();
  for (auto global : module.getOps<GlobalOp>())
    if (global.getTrainable() && preGlobals.contains(global.getSymName())) {
      p.pre.params += global.getTensorType().getNumElements();
      if (postGlobals.contains(global.getSymName()))
        p.tiedParams += global.getTensorType().getNumElements();
    }
  p.post.params = s.parameters - p.pre.params - p.layers * p.layer.params;
  double perSample = 1.0 / std::max<int64_t>(1, s.batch);
  scale(p.pre, perSample);
  scale(p.layer, perSample);
  for (PartCost &segment : p.segments)
    scale(segment, perSample);
  scale(p.post, perSample);
  return p;
}

MemoryBreakdown modelStateMemory(double params, int zero, int64_t dp, bool offload,
                                 int64_t elementBytes) {
  // ZeRO (Rajbhandari et al. 2020): 2 bytes fp16/bf16 parameters, 2 bytes
  // gradients, 12 bytes fp32 master weights, momentum and variance. In fp32
  // the parameters are the master weights: 4 + 4 + 8 (momentum, variance).
  double weight = elementBytes >= 4 ? 4 : 2;
  double optimizer = elementBytes >= 4 ? 8 : 12;
  MemoryBreakdown m;
  m.params = weight * params / (zero >= 3 ? dp : 1);
  m.grads = weight * params / (zero >= 2 ? dp : 1);
  m.optimizer = offload ? 0 : optimizer * params / (zero >= 1 ? dp : 1);
  return m;
}

double collectiveTime(Collective kind, double bytes, int64_t n, int64_t stride,
                      const ClusterSpec &c) {
  if (n <= 1 || bytes <= 0)
    return 0;
  // Members `stride` apart: a group within one node uses NVLink-class links;
  // one spanning nodes is hierarchical: inside each node, then across.
  int64_t perNode =
      std::max<int64_t>(1, std::min(n, c.devicesPerNode / std::max<int64_t>(1, stride)));
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
  // colo's tensor parallelism splits the layers' matmuls (Megatron's column-
  // and row-parallel pairs) and keeps the embedding, the norms and the LM head
  // replicated (docs/parallel.md): every tensor-parallel rank runs them whole.
  // Megatron-LM splits them over the vocabulary (m.vocabParallel).
  int64_t edge = m.vocabParallel ? tp : 1;
  enum { Matmul = 1, Memory = 2, Launch = 4, All = 7 };
  auto timeOf = [&](const PartCost &part, int64_t split, int what = All) {
    double repl = part.savedReplicated + part.savedSplit > 0
                      ? part.savedReplicated / (part.savedReplicated + part.savedSplit)
                      : 0;
    double memShare = plan.sequenceParallel ? 1.0 / split : repl + (1 - repl) / split;
    return (what & Matmul ? b * part.matmulFlops / split / peak : 0) +
           (what & Memory ? b * part.memoryBytes * memShare / bw : 0) +
           (what & Launch ? part.ops * launch : 0);
  };
  double tLayer = timeOf(m.layer, tp), tPre = timeOf(m.pre, edge),
         tPost = timeOf(m.post, edge);

  // Stage partition: pre + layers + post into pp * v chunks; device d holds
  // chunks d, d + pp, ... (interleaving). A chunk is a run of layer segments;
  // without given stages they are balanced as colo-pipeline-stages balances
  // them (FLOPs, plus one per kernel), so that the prediction is of the
  // stages the compiler makes.
  int64_t chunks = pp * v;
  ArrayRef<PartCost> segments = m.segments.empty() ? ArrayRef(m.layer) : ArrayRef(m.segments);
  int64_t segmentsPerLayer = segments.size(), units = m.layers * segmentsPerLayer;
  std::vector<int64_t> chunkBegin; // in segments; chunk k ends where k + 1 begins
  if (!plan.stages.empty()) {
    if (static_cast<int64_t>(plan.stages.size()) != chunks)
      return bad("the plan gives " + llvm::Twine(plan.stages.size()) + " stages for " +
                 llvm::Twine(chunks) + " pipeline chunks");
    int64_t expect = 0;
    for (auto [lo, hi] : plan.stages) {
      if (lo != expect || hi <= lo)
        return bad("stage layer ranges must cover the layers in order, without gaps");
      chunkBegin.push_back(lo * segmentsPerLayer);
      expect = hi;
    }
    if (expect != m.layers)
      return bad("stage ranges cover " + llvm::Twine(expect) + " of " +
                 llvm::Twine(m.layers) + " layers");
  } else {
    auto cost = [&](const PartCost &part, int64_t split) {
      return b * (part.matmulFlops + part.otherFlops) / split + part.ops;
    };
    std::vector<double> prefix(units + 1, 0);
    llvm::SmallVector<int64_t> candidates;
    for (int64_t u = 0; u < units; ++u) {
      prefix[u + 1] = prefix[u] + cost(segments[u % segmentsPerLayer], tp) +
                      (u == 0 ? cost(m.pre, edge) : 0) +
                      (u == units - 1 ? cost(m.post, edge) : 0);
      if (u + 1 < units)
        candidates.push_back(u);
    }
    chunkBegin = {0};
    for (int64_t cut : balanceStageCuts(prefix, candidates, chunks))
      chunkBegin.push_back(cut);
  }
  chunkBegin.push_back(units);
  std::vector<PartCost> chunkPart(chunks);
  std::vector<double> chunkLayers(chunks);
  for (int64_t k = 0; k < chunks; ++k) {
    for (int64_t u = chunkBegin[k]; u < chunkBegin[k + 1]; ++u)
      chunkPart[k] += segments[u % segmentsPerLayer];
    chunkLayers[k] = double(chunkBegin[k + 1] - chunkBegin[k]) / segmentsPerLayer;
  }
  // The forward time of one microbatch on device d.
  auto deviceTimeOf = [&](int64_t d, int what) {
    double time = 0;
    for (int64_t k = d; k < chunks; k += pp)
      time += timeOf(chunkPart[k], tp, what) + (k == 0 ? timeOf(m.pre, edge, what) : 0) +
              (k == chunks - 1 ? timeOf(m.post, edge, what) : 0);
    return time;
  };
  std::vector<double> deviceLayers(pp, 0), deviceAttention(pp, 0);
  for (int64_t k = 0; k < chunks; ++k) {
    deviceLayers[k % pp] += chunkLayers[k];
    deviceAttention[k % pp] += chunkPart[k].attentionFlops;
  }
  double tF = 0;
  int64_t slowest = 0;
  for (int64_t d = 0; d < pp; ++d)
    if (double time = deviceTimeOf(d, All); time > tF)
      tF = time, slowest = d;
  double maxLayers = *std::max_element(deviceLayers.begin(), deviceLayers.end());
  double maxAttention = *std::max_element(deviceAttention.begin(), deviceAttention.end());

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
    t.recompute = mcount * b * maxAttention / tp / peak;

  // Megatron tensor parallelism: two all-reduces of b*s*h forward, two
  // backward per layer (all-gather + reduce-scatter pairs of the same volume
  // with sequence parallelism); full recompute repeats the forward two.
  double boundary = b * m.seq * m.hidden * m.elementBytes;
  double ar = collectiveTime(Collective::AllReduce, boundary, tp, 1, c);
  double perLayer = (plan.recompute == Recompute::Full ? 6 : 4) * ar;
  t.tensorParallel = mcount * maxLayers * perLayer;
  // A vocabulary-parallel embedding all-reduces its output, a vocabulary-
  // parallel head its input gradient (on the first and last stage).
  if (m.vocabParallel)
    t.tensorParallel += mcount * (pp == 1 ? 2 : 1) * ar;

  // The same compute divided by kind, on the slowest device.
  {
    double share = tF > 0 ? (t.compute + t.recompute) / tF : 0;
    p.computeMatmul = share * deviceTimeOf(slowest, Matmul);
    p.computeMemory = share * deviceTimeOf(slowest, Memory);
    p.computeLaunch = share * deviceTimeOf(slowest, Launch);
  }
  double tMicro = (t.compute + t.recompute + t.tensorParallel) / mcount;
  if (pp > 1) {
    double p2p = collectiveTime(Collective::SendRecv, boundary, 2, tp * dp, c);
    // Plus, once per step, the tied weights' gradients between the first and
    // the last stage.
    double tied = (m.elementBytes >= 4 ? 4 : 2) * m.tiedParams / edge;
    t.pipelineComm = mcount * 2 * v * p2p +
                     (tied > 0 ? collectiveTime(Collective::SendRecv, tied, 2, tp * dp, c) : 0);
    t.bubble = double(pp - 1) / v * tMicro;
  }

  // Parameters held by device d of a tensor-parallel group: its layers'
  // share, the embedding and head whole (or their share, vocabulary-parallel).
  auto stageParams = [&](int64_t d) {
    double params = 0;
    for (int64_t k = d; k < chunks; k += pp)
      params += chunkPart[k].params / tp +
                (k == 0 ? m.pre.params / edge : 0) +
                (k == chunks - 1 ? m.post.params / edge : 0) +
                (k == chunks - 1 && chunks > 1 ? m.tiedParams / edge : 0);
    return params;
  };
  double devParams = 0;
  for (int64_t d = 0; d < pp; ++d)
    devParams = std::max(devParams, stageParams(d));
  // Gradients and parameters travel in the training precision: bf16 in mixed
  // precision, fp32 in a full-precision model.
  double weightBytes = m.elementBytes >= 4 ? 4 : 2;
  // Data parallelism, on the device with most parameters. ZeRO-0 and 1 keep
  // whole gradients and reduce them once per step (an all-reduce, or a
  // reduce-scatter and an all-gather of the same time), overlapped with the
  // backward of the last microbatch. ZeRO-2 and 3 keep 1/dp of the gradients
  // (modelStateMemory), so every microbatch's are reduce-scattered during its
  // backward (DeepSpeed's stages 2 and 3); ZeRO-2's last reduce-scatter and
  // its gather of the updated parameters count as ZeRO-1's. ZeRO-3 also
  // gathers each layer's parameters while the previous layer runs (one-layer
  // prefetch), before its forward and again before its backward; in the
  // backward that gather and the reduce-scatter of the layer's gradients
  // share the links. What a part's compute cannot hide is exposed.
  auto onLinks = [&](Collective kind, double bytes) {
    return collectiveTime(kind, bytes, dp, tp, c);
  };
  double backward = 2 * tMicro / 3;
  double allReduce = onLinks(Collective::AllReduce, weightBytes * devParams);
  if (plan.zero <= 1) {
    t.dataParallel = std::max(0.0, allReduce - backward);
  } else if (plan.zero == 2) {
    double reduce = onLinks(Collective::ReduceScatter, weightBytes * devParams);
    t.dataParallel = (mcount - 1) * std::max(0.0, reduce - backward) +
                     std::max(0.0, allReduce - backward);
  } else {
    // A part of `params` parameters whose forward takes `fwd`.
    auto exposed = [&](double params, double fwd) {
      double gather = onLinks(Collective::AllGather, weightBytes * params);
      double reduce = onLinks(Collective::ReduceScatter, weightBytes * params);
      return std::max(0.0, gather - fwd) + std::max(0.0, gather + reduce - 2 * fwd);
    };
    double edges = pp == 1 ? exposed((m.pre.params + m.post.params) / edge, tPre + tPost)
                           : std::max(exposed(m.pre.params / edge, tPre),
                                      exposed(m.post.params / edge, tPost));
    t.dataParallel =
        mcount * (maxLayers * exposed(m.layer.params / tp, tLayer) + edges);
  }
  // Adam reads and writes ~32 bytes per parameter it owns (fp32 master,
  // momentum, variance, gradient, bf16 copy).
  double owned = devParams / (plan.zero >= 1 ? dp : 1);
  if (plan.offload == Offload::Optimizer) {
    // ZeRO-Offload: gradients down (every microbatch's where the device keeps
    // only its block of them: ZeRO-2 and 3) and parameters up over PCIe, CPU
    // Adam at about 1e9 parameters/s per device's share of the host.
    double gradsDown = plan.zero >= 2 ? mcount : 1;
    t.offload = weightBytes * (gradsDown + 1) * owned / c.pcieBandwidth + owned / 1e9;
  } else {
    t.optimizer = 32 * owned / bw;
  }

  p.stepTime = t.total();

  // Bytes sent per step, per device of each stage (ring collectives, as the
  // times above assume).
  auto sent = [](Collective kind, double bytes, int64_t n) {
    if (n <= 1)
      return 0.0;
    double share = double(n - 1) / n * bytes;
    return kind == Collective::AllReduce ? 2 * share : share;
  };
  for (int64_t d = 0; d < pp; ++d) {
    double layers = deviceLayers[d], sends = 0;
    for (int64_t k = d; k < chunks; k += pp)
      sends += (k < chunks - 1) + (k > 0); // activations forward, gradients back
    double params = stageParams(d);
    double edgeReduces = m.vocabParallel ? (d == 0) + ((chunks - 1) % pp == d) : 0;
    double bytes = mcount * (layers * (plan.recompute == Recompute::Full ? 6 : 4) +
                             edgeReduces) *
                       sent(Collective::AllReduce, boundary, tp) +
                   mcount * sends * boundary;
    // The first and the last stage send each other their part of the tied
    // weights' gradient.
    if (pp > 1 && (d == 0 || d == (chunks - 1) % pp))
      bytes += weightBytes * m.tiedParams / edge;
    double reduce = sent(Collective::ReduceScatter, weightBytes * params, dp);
    double gather = sent(Collective::AllGather, weightBytes * params, dp);
    if (plan.zero >= 3) // per microbatch: gather before forward and backward
      bytes += mcount * (reduce + 2 * gather);
    else if (plan.zero == 2) // per microbatch a reduce-scatter, one gather
      bytes += mcount * reduce + gather;
    else // an all-reduce, or a reduce-scatter and an all-gather (ZeRO-1)
      bytes += sent(Collective::AllReduce, weightBytes * params, dp);
    p.commBytesDevice = std::max(p.commBytesDevice, bytes);
    p.commBytesAll += bytes * dp * tp;
  }

  // Memory of each device; report the largest.
  double inflight = plan.schedule == Schedule::GPipe ? mcount
                    : pp > 1 ? std::min<double>(mcount, pp) : 1;
  if (plan.schedule == Schedule::Interleaved)
    inflight *= 1 + double(pp - 1) / (pp * v);
  // Bytes a part of the layers keeps for backward per microbatch (under full
  // recompute, each layer's input only).
  auto layerSaved = [&](const PartCost &part) {
    double scores = plan.recompute == Recompute::Selective ? part.savedScores : 0;
    return b * (part.savedReplicated / (plan.sequenceParallel ? tp : 1) +
                (part.savedSplit - scores) / tp);
  };
  MemoryBreakdown worst;
  for (int64_t d = 0; d < pp; ++d) {
    double saved = 0;
    bool first = d == 0, last = (chunks - 1) % pp == d;
    for (int64_t k = d; k < chunks; k += pp)
      saved += plan.recompute == Recompute::Full
                   ? chunkLayers[k] * boundary / (plan.sequenceParallel ? tp : 1)
                   : layerSaved(chunkPart[k]);
    MemoryBreakdown mem = modelStateMemory(stageParams(d), plan.zero, dp,
                                           plan.offload == Offload::Optimizer,
                                           m.elementBytes);
    double inflightHere = std::max(1.0, inflight - d);
    // The embedding and head are replicated by tensor parallelism, unless
    // vocabulary-parallel.
    auto partSaved = [&](const PartCost &part) {
      return m.vocabParallel ? b * (part.savedReplicated / (plan.sequenceParallel ? tp : 1) +
                                    part.savedSplit / tp)
                             : b * (part.savedReplicated + part.savedSplit);
    };
    mem.activations = inflightHere * saved +
                      (plan.recompute == Recompute::Full ? layerSaved(m.layer) : 0) +
                      (first ? inflightHere * partSaved(m.pre) : 0) +
                      (last ? partSaved(m.post) : 0);
    // Workspace, plus the fp32 logits the loss keeps and their gradient,
    // written next to them when backward starts (the head's share of them).
    mem.buffers = c.workspace + (last ? 2 * b * m.seq * m.vocab * 4.0 / edge : 0);
    // ZeRO-3 also holds whole (tp-shared) parameters: those of the part that
    // computes and of the one prefetched, and the gradient of the part being
    // reduce-scattered; three times the largest part (a layer, the embedding
    // or the head).
    double largestPart = std::max({m.layer.params / tp, first ? m.pre.params / edge : 0.0,
                                   last ? m.post.params / edge : 0.0});
    if (plan.zero >= 3)
      mem.buffers += 3 * weightBytes * largestPart;
    // Where the communicator stages what it receives in the device's memory
    // (local-cpu: colo's MPI rings), one chunk of the largest reduction: the
    // tensor-parallel all-reduce of a layer's output (1/tp of it) or the
    // data-parallel reduction of a gradient bucket (1/dp of it: the stage's
    // gradients, up to colo compile's default --bucket-mb of 25 MiB), two
    // chunks for ZeRO's reduce-scatter over more than two ranks. A pipeline
    // stage also holds a copy of each activation or gradient it sends
    // (b·s·h per boundary and microbatch), and the first and last stages of
    // their tied weights' gradient, until the end of the step.
    if (c.collectiveStaging > 0) {
      constexpr double kBucketBytes = 25.0 * (1 << 20);
      double chunk = tp > 1 ? boundary / tp : 0;
      if (dp > 1) {
        double bucket = std::min(weightBytes * stageParams(d), kBucketBytes);
        chunk = std::max(chunk, (plan.zero >= 1 && dp > 2 ? 2 : 1) * bucket / dp);
      }
      double sends = 0;
      for (int64_t k = d; k < chunks; k += pp)
        sends += (k < chunks - 1) + (k > 0);
      double tiedSend = pp > 1 && (first || last) ? weightBytes * m.tiedParams / edge : 0;
      mem.staging = c.collectiveStaging * (chunk + mcount * sends * boundary + tiedSend);
    }
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
    os << (i ? " | " : "") << llvm::format("%g", p.stageLayers[i]);
  os << " layers\n";
  const MemoryBreakdown &mem = p.memory;
  os << llvm::format("memory       %.2f GiB per device of %.2f GiB (%s)\n", gb(mem.total()),
                     gb(c.deviceMemory), p.fits ? "fits" : "does not fit");
  os << llvm::format("  parameters %9.2f GiB\n  gradients  %9.2f GiB\n  optimizer  %9.2f GiB\n"
                     "  activations%9.2f GiB\n  buffers    %9.2f GiB\n",
                     gb(mem.params), gb(mem.grads), gb(mem.optimizer), gb(mem.activations),
                     gb(mem.buffers));
  if (c.collectiveStaging > 0)
    os << llvm::format("  staging    %9.2f GiB\n", gb(mem.staging));
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
  os << llvm::format("communication %.4g MB sent per step by a device, %.4g MB by all\n",
                     p.commBytesDevice / 1e6, p.commBytesAll / 1e6);
  os << llvm::format("throughput   %.0f tokens/s, %.1f TFLOP/s per device, MFU %.1f%%\n",
                     p.tokensPerSecond, p.tflopsPerDevice, 100 * p.mfu);
}

} // namespace colo::planner
