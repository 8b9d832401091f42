// The planner's cost model: a plan's step time and per-device memory from the
// model's IR (each op's FLOPs and bytes through the cost interface) and the
// cluster's figures. Formulas and their sources: docs/planner.md.
#include "colo/Planner/CostModel.h"

#include "colo/Analysis/ModelSummary.h"
#include "colo/Analysis/RecomputeSolver.h"
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/Pipeline.h"
#include "colo/Passes/PipelineSchedule.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <cmath>
#include <map>

using namespace mlir;

namespace colo::planner {

PartCost &PartCost::operator+=(const PartCost &o) {
  gemms.insert(gemms.end(), o.gemms.begin(), o.gemms.end());
  convs.insert(convs.end(), o.convs.begin(), o.convs.end());
  matmulFlops += o.matmulFlops;
  otherFlops += o.otherFlops;
  memoryBytes += o.memoryBytes;
  weightBytes += o.weightBytes;
  attentionFlops += o.attentionFlops;
  fusedAttentionFlops += o.fusedAttentionFlops;
  params += o.params;
  paramTensors += o.paramTensors;
  ops += o.ops;
  savedReplicated += o.savedReplicated;
  savedSplit += o.savedSplit;
  savedScores += o.savedScores;
  savedProductInputs += o.savedProductInputs;
  savedNormInputs += o.savedNormInputs;
  normStats += o.normStats;
  fusedBytes += o.fusedBytes;
  scoreBytes += o.scoreBytes;
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

/// The heads x s x s scores of one execution of `attention`.
double attentionScores(AttentionOp attention) {
  auto q = cast<RankedTensorType>(attention.getQuery().getType());
  auto k = cast<RankedTensorType>(attention.getKey().getType());
  return double(q.getNumElements()) / q.getShape().back() * k.getDimSize(2);
}

/// The share of `attention`'s FLOPs a fused kernel computes, as
/// FlashAttention-2 computes them: in 128 x 128 tiles of queries and keys
/// (its blocks for a head size of 64-128), the last ones padded; under a
/// causal mask it skips the tiles wholly after the diagonal (of n x n
/// tiles it computes n (n + 1) / 2); and its products run over the head
/// size rounded up to a multiple of 32 (flash_api.cpp's
/// `head_size_rounded`: MPT-30B's 112 runs as 128).
double fusedAttentionShare(AttentionOp attention) {
  constexpr double kTile = 128, kHeadRound = 32;
  auto q = cast<RankedTensorType>(attention.getQuery().getType());
  auto k = cast<RankedTensorType>(attention.getKey().getType());
  double rows = std::ceil(q.getDimSize(2) / kTile), cols = std::ceil(k.getDimSize(2) / kTile);
  double tiles = attention.getCausal() ? rows * (rows + 1) / 2 : rows * cols;
  double head = double(q.getDimSize(3));
  return tiles * kTile * kTile / (double(q.getDimSize(2)) * double(k.getDimSize(2))) *
         std::ceil(head / kHeadRound) * kHeadRound / head;
}

/// What defines `v`, through reshapes (views of their operand).
Operation *viewedDefiningOp(Value v) {
  Operation *def = v.getDefiningOp();
  while (auto reshape = dyn_cast_or_null<ReshapeOp>(def))
    def = reshape.getOperand().getDefiningOp();
  return def;
}

/// A kernel a fused elementwise chain can absorb: a memory-bound op that
/// moves data (not a load, a constant or a view).
bool isMemoryBound(Operation *op) {
  auto cost = dyn_cast_or_null<CostOpInterface>(op);
  return cost && cost.getCostClass() == CostClass::Memory &&
         !isa<ReshapeOp, GlobalLoadOp, ConstantOp>(op);
}

/// `user` is memory-bound, or a view whose users all are.
bool isMemoryBoundThroughViews(Operation *user) {
  if (auto reshape = dyn_cast<ReshapeOp>(user))
    return llvm::all_of(reshape->getUsers(), isMemoryBoundThroughViews);
  return isMemoryBound(user);
}

void addCost(PartCost &c, Operation *op) {
  auto cost = dyn_cast<CostOpInterface>(op);
  if (!cost)
    return;
  // Loading a parameter or a constant names memory; nothing moves.
  if (isa<ReshapeOp, GlobalLoadOp, ConstantOp>(op))
    return;
  c.ops += 1;
  double flops = cost.getFlops();
  if (cost.getCostClass() == CostClass::Matmul) {
    c.matmulFlops += flops;
    if (auto mm = dyn_cast<MatmulOp>(op)) {
      auto lhs = cast<RankedTensorType>(mm.getLhs().getType());
      auto result = mm.getType();
      Gemm g;
      g.depth = lhs.getShape().back();
      g.cols = result.getShape().back();
      g.ofWeight = weightSource(mm.getRhs()) != nullptr;
      g.sharesInput = g.ofWeight && llvm::any_of(mm.getLhs().getUsers(), [&](Operation *user) {
                        auto other = dyn_cast<MatmulOp>(user);
                        return other && other->getBlock() == mm->getBlock() &&
                               other->isBeforeInBlock(mm) && weightSource(other.getRhs());
                      });
      // Against a weight every leading dimension of the activation is rows
      // (tokens); between activations they are the batch.
      double leading = result.getNumElements() / g.cols;
      g.rows = g.ofWeight ? leading : result.getDimSize(result.getRank() - 2);
      g.batch = leading / g.rows;
      c.gemms.push_back(g);
    }
    if (auto conv = dyn_cast<Conv2dOp>(op)) {
      auto in = cast<RankedTensorType>(conv.getInput().getType());
      auto filter = cast<RankedTensorType>(conv.getFilter().getType());
      auto out = conv.getType();
      ArrayRef<int64_t> strides = conv.getStrides(), pad = conv.getPadding(),
                        dil = conv.getDilations();
      ConvCost cc;
      cc.flops = flops;
      cc.shape = {in.getDimSize(1),     in.getDimSize(2),     in.getDimSize(3),
                  out.getDimSize(1),    filter.getDimSize(2), filter.getDimSize(3),
                  out.getDimSize(2),    out.getDimSize(3),    strides[0],
                  strides[1],           pad[0],               pad[1],
                  pad[2],               pad[3],               dil[0],
                  dil[1],               int64_t(conv.getGroups())};
      cc.shape.bias = conv.getBias() != nullptr;
      cc.shape.inputGradient = !isa<BlockArgument>(conv.getInput());
      c.convs.push_back(cc);
    }
    if (auto attention = dyn_cast<AttentionOp>(op)) {
      c.attentionFlops += flops;
      c.fusedAttentionFlops += flops * fusedAttentionShare(attention);
      int64_t bits = cast<RankedTensorType>(attention.getQuery().getType())
                         .getElementTypeBitWidth();
      c.scoreBytes += 4 * attentionScores(attention) * bits / 8;
    }
    return;
  }
  c.otherFlops += flops;
  // An op of the parameters alone (a transposed or cast weight) runs once
  // per microbatch, whatever the microbatch's size.
  bool ofWeights = op->getNumOperands() > 0 && llvm::all_of(op->getOperands(), [](Value v) {
                     return weightSource(v) != nullptr;
                   });
  if (ofWeights) {
    c.weightBytes += cost.getBytesRead() + cost.getBytesWritten();
    return;
  }
  c.memoryBytes += cost.getBytesRead() + cost.getBytesWritten();
  for (Value v : op->getOperands())
    if (!isMemoryBound(viewedDefiningOp(v)))
      c.fusedBytes += bytesOf(v.getType());
  for (Value r : op->getResults())
    if (!llvm::all_of(r.getUsers(), isMemoryBoundThroughViews))
      c.fusedBytes += bytesOf(r.getType());
}

/// The values of a forward that depend on its inputs (the batch), not on
/// parameters and constants alone: what its backward keeps is among them.
class Varying {
public:
  explicit Varying(ModuleOp module) : module(module) {}
  void add(Operation *op) {
    if (llvm::any_of(op->getOperands(), [&](Value v) { return contains(v); }))
      ops.insert(op);
  }
  bool contains(Value v) const {
    Operation *def = v.getDefiningOp();
    return !def || ops.contains(def);
  }
  bool trained(GlobalLoadOp load) const {
    auto global = module.lookupSymbol<GlobalOp>(load.getGlobal());
    return global && global.getTrainable();
  }

private:
  mutable ModuleOp module;
  llvm::DenseSet<Operation *> ops;
};

/// Adds the forward values that `op`'s backward reads to the bytes kept for
/// backward, each value once (`kept`); a reshape is a view of its operand, so
/// the operand's buffer is what is kept. Linear and data-movement ops (adds,
/// slices, transposes, concatenations, sums) read none of their inputs
/// backward; every other op is taken to read its non-weight operands.
/// Attention is differentiated as colo-decompose-attention writes it: its
/// matmuls read q, k, v and the probabilities, which the softmax backward
/// reads too (in f32, and again in the 16-bit type the second matmul takes).
void addSaved(PartCost &c, Operation *op, int64_t hidden, const Varying &varying,
              llvm::DenseSet<Value> &kept) {
  if (isa<AddOp, SubOp, NegOp, ReshapeOp, TransposeOp, SliceOp, ConcatOp, BroadcastToOp,
          ReduceSumOp, ReduceMeanOp, ConvertOp, GlobalLoadOp, ConstantOp>(op))
    return;
  // A product or quotient of an activation by what does not depend on the
  // batch (Llama's rotary cos and sin, a scale) reads only the latter
  // backward, unless the latter is trained.
  if (isa<MulOp, DivOp>(op) && llvm::any_of(op->getOperands(), [&](Value v) {
        auto load = dyn_cast_or_null<GlobalLoadOp>(weightSource(v));
        return !varying.contains(v) && !(load && varying.trained(load));
      }))
    return;
  auto keep = [&](Value v, double copies = 1) -> double {
    while (auto reshape = v.getDefiningOp<ReshapeOp>())
      v = reshape->getOperand(0);
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || !varying.contains(v) || !kept.insert(v).second)
      return 0;
    double bytes = copies * double(bytesOf(t));
    (t.getRank() > 0 && t.getShape().back() == hidden ? c.savedReplicated : c.savedSplit) += bytes;
    return bytes;
  };
  if (isa<LayerNormOp, RmsNormOp>(op)) {
    auto t = cast<RankedTensorType>(op->getOperand(0).getType());
    c.savedNormInputs += bytesOf(t);
    c.normStats += 4.0 * double(t.getNumElements() / std::max<int64_t>(1, t.getShape().back()));
  }
  if (auto mm = dyn_cast<MatmulOp>(op); mm && weightSource(mm.getRhs())) {
    c.savedProductInputs += keep(mm.getLhs());
    return;
  }
  if (auto attention = dyn_cast<AttentionOp>(op)) {
    // Grouped keys and values are repeated to the queries' heads first.
    keep(attention.getQuery());
    double groups = double(cast<RankedTensorType>(attention.getQuery().getType()).getDimSize(1)) /
                    double(cast<RankedTensorType>(attention.getKey().getType()).getDimSize(1));
    keep(attention.getKey(), groups);
    keep(attention.getValue(), groups);
    int64_t bits =
        cast<RankedTensorType>(attention.getQuery().getType()).getElementTypeBitWidth();
    double perScore = 4 + (bits < 32 ? bits / 8 : 0);
    double scores = attentionScores(attention) * perScore;
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
        global && global.getTrainable()) {
      c.params += global.getTensorType().getNumElements();
      c.paramTensors += 1;
    }
  }
}

void scale(PartCost &c, double f) {
  for (Gemm &g : c.gemms)
    (g.ofWeight ? g.rows : g.batch) *= f;
  for (ConvCost &conv : c.convs)
    conv.flops *= f;
  c.matmulFlops *= f;
  c.otherFlops *= f;
  c.memoryBytes *= f;
  c.attentionFlops *= f;
  c.fusedAttentionFlops *= f;
  c.savedReplicated *= f;
  c.savedSplit *= f;
  c.savedScores *= f;
  c.savedProductInputs *= f;
  c.savedNormInputs *= f;
  c.normStats *= f;
  c.fusedBytes *= f;
  c.scoreBytes *= f;
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
  Varying varying(module);
  func.walk([&](Operation *op) {
    if (isa<func::FuncOp, func::ReturnOp>(op))
      return;
    varying.add(op);
    std::string path = modulePath(op->getLoc());
    if (std::optional<int64_t> layer = blocks.blockOf(path)) {
      seenLayer = true;
      if (*layer == 0) {
        PartCost &segment = p.segments.back();
        addCost(segment, op);
        addSaved(segment, op, p.hidden, varying, kept);
        addParams(segment, op, module, layerGlobals);
        if (cutAfter.contains(op) && segment.ops > 0)
          p.segments.emplace_back();
      }
      return;
    }
    if (isa<GlobalLoadOp>(op))
      return;
    addCost(seenLayer ? p.post : p.pre, op);
    addSaved(seenLayer ? p.post : p.pre, op, p.hidden, varying, kept);
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

void timeConvolutions(ModelProfile &model, const ClusterSpec &cluster) {
  if (!(cluster.timedHere > 0))
    return;
  RankCores rank = localCpuRankCores(cluster.devicesPerNode);
  constexpr int64_t kSamples = 8;
  std::map<ConvShape, std::pair<double, double>> measured;
  auto time = [&](ConvCost &conv) {
    auto [it, inserted] = measured.try_emplace(conv.shape);
    if (inserted)
      it->second = {measureConvStep(conv.shape, 1, rank.threads),
                    measureConvStep(conv.shape, kSamples, rank.threads)};
    auto [one, many] = it->second;
    conv.timed = one > 0 && many > 0;
    conv.perSampleSeconds = std::max(0.0, (many - one) / (kSamples - 1)) / rank.timeShare;
    conv.fixedSeconds = std::max(0.0, one / rank.timeShare - conv.perSampleSeconds);
  };
  for (PartCost *part : {&model.pre, &model.layer, &model.post})
    llvm::for_each(part->convs, time);
  for (PartCost &segment : model.segments)
    llvm::for_each(segment.convs, time);
}

MemoryBreakdown modelStateMemory(double params, int zero, int64_t dp, Offload offload,
                                 int64_t elementBytes) {
  // ZeRO (Rajbhandari et al. 2020): 2 bytes fp16/bf16 parameters, 2 bytes
  // gradients, 12 bytes fp32 master weights, momentum and variance. In fp32
  // the parameters are the master weights: 4 + 4 + 8 (momentum, variance).
  double weight = elementBytes >= 4 ? 4 : 2;
  double optimizer = elementBytes >= 4 ? 8 : 12;
  MemoryBreakdown m;
  m.params = offload == Offload::OptimizerParams ? 0 : weight * params / (zero >= 3 ? dp : 1);
  m.grads = weight * params / (zero >= 2 ? dp : 1);
  m.optimizer = offload != Offload::None ? 0 : optimizer * params / (zero >= 1 ? dp : 1);
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

namespace {
// The pieces of predict(), one per term of the step time and of the memory.
// Formulas and their sources: docs/planner.md, "Time" and "Memory".

llvm::Error bad(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Checks that `plan` applies to the model and the cluster: its mesh covers
/// the devices, tp divides the heads and the hidden size (and the sequence,
/// sequence-parallel), and there are no more pipeline chunks than layers.
llvm::Error validatePlan(const ModelProfile &m, const ClusterSpec &c, const Plan &plan) {
  int64_t tp = plan.tp, pp = plan.pp, v = plan.virtualStages;
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
  if (plan.sequenceParallel && sequenceParallelSplit(m, plan.microBatch) % tp != 0)
    return bad(plan.microBatch > 1
                   ? "tp = " + llvm::Twine(tp) + " does not divide the microbatch size " +
                         llvm::Twine(plan.microBatch) +
                         " (sequence parallelism splits the tokens along the microbatch)"
                   : "tp = " + llvm::Twine(tp) + " does not divide the sequence length " +
                         llvm::Twine(m.seq));
  int64_t chunks = plan.ring * (plan.zigzag ? 2 : 1);
  if (plan.ring > 1 && m.seq % chunks != 0)
    return bad("ring = " + llvm::Twine(plan.ring) +
               (plan.zigzag ? " in zigzag order (2 * ring chunks)" : "") +
               " does not divide the sequence length " + llvm::Twine(m.seq));
  if (int64_t q = plan.tp2d; q > 1) {
    if (m.heads % q != 0 || m.hidden % q != 0)
      return bad("tp2d = " + llvm::Twine(q) + " does not divide the " + llvm::Twine(m.heads) +
                 " attention heads and the hidden size " + llvm::Twine(m.hidden));
    if (int64_t d = plan.tp2dDepth; plan.microBatch % (q * d) != 0)
      return bad((d > 1 ? "q * depth = " + llvm::Twine(q * d) : "tp2d = " + llvm::Twine(q)) +
                 " does not divide the microbatch size " + llvm::Twine(plan.microBatch) +
                 " (the grid's rows split the samples)");
  }
  if (int64_t q = plan.tp3d; q > 1) {
    if (m.heads % q != 0 || m.hidden % (q * q) != 0)
      return bad("tp3d = " + llvm::Twine(q) + " does not divide the " + llvm::Twine(m.heads) +
                 " attention heads, or q * q the hidden size " + llvm::Twine(m.hidden));
    if (plan.microBatch % (q * q) != 0)
      return bad("q * q = " + llvm::Twine(q * q) + " does not divide the microbatch size " +
                 llvm::Twine(plan.microBatch) + " (two of the cube's axes split the samples)");
  }
  int64_t sp = plan.ulysses;
  if (sp > 1 && (m.seq % sp != 0 || (m.heads / tp) % sp != 0))
    return bad("ulysses = " + llvm::Twine(sp) + " does not divide the sequence length " +
               llvm::Twine(m.seq) + " and the " + llvm::Twine(m.heads / tp) +
               " heads of a tensor-parallel rank");
  return llvm::Error::success();
}

/// Quantities of the plan, the model and the cluster that several terms use.
struct Shared {
  /// Under 2-D tensor parallelism (`grid` = q > 1) tp is q * q: the layers'
  /// products, parameters and activations are split q * q ways.
  int64_t tp = 1, pp = 1, dp = 1, v = 1, grid = 1;
  /// Under 3-D tensor parallelism (`cube` = q > 1) tp is q^3: the layers'
  /// products, parameters and activations are split q^3 ways.
  int64_t cube = 1;
  /// 2.5-D tensor parallelism's copies of the grid (mesh axis "depth",
  /// after sp): each runs 2-D on its part `b` of the microbatch.
  int64_t depth = 1;
  /// DeepSpeed-Ulysses ranks (mesh axis sp, between dp and tp): each holds
  /// 1/sp of every sample's positions.
  int64_t sp = 1;
  /// How many ways the embedding and the head are split: tp where
  /// vocabulary-parallel, else 1.
  int64_t edge = 1;
  bool sequenceParallel = false;
  double b = 0;      // samples per microbatch (of a 2.5-D copy)
  double mcount = 0; // microbatches per step
  double peak = 0;   // achievable matmul FLOP/s
  /// Achievable attention FLOP/s: a fused kernel's own efficiency
  /// (ClusterSpec::attentionEfficiency), else the matmuls' it stands for.
  double attentionPeak = 0;
  bool fusedAttention = false;
  double bw = 0;     // achievable memory bandwidth, B/s
  double waveTiles = 0; // ClusterSpec::gemmWaveTiles
  bool fusedElementwise = false;
  /// Bytes of one microbatch's b*s*h activation between layers.
  double boundary = 0;
  /// Bytes per parameter and gradient in the training precision.
  double weightBytes = 0;
};

Shared sharedQuantities(const ModelProfile &m, const ClusterSpec &c, const Plan &plan) {
  Shared s;
  s.tp = plan.tp, s.pp = plan.pp, s.dp = plan.dp, s.v = plan.virtualStages;
  if (plan.tp2d > 1)
    s.grid = plan.tp2d, s.tp = plan.tp2d * plan.tp2d;
  if (plan.tp3d > 1)
    s.cube = plan.tp3d, s.tp = plan.tp3d * plan.tp3d * plan.tp3d;
  s.sp = plan.sequenceRanks();
  s.sequenceParallel = plan.sequenceParallel;
  s.depth = plan.tp2dDepth;
  s.b = double(plan.microBatch) / s.depth;
  // Matrix products run in the training precision: a float32 model's at the
  // float32 peak (on a CPU with AMX, a quarter of the bf16 one).
  double peak = m.elementBytes >= 4 ? c.peakFlops32 : c.peakFlops16;
  s.peak = peak * c.matmulEfficiency;
  s.fusedAttention = c.fusedAttention > 0;
  s.attentionPeak = s.fusedAttention ? peak * c.attentionEfficiency : s.peak;
  s.bw = c.memoryBandwidth * c.memoryEfficiency;
  s.waveTiles = c.gemmWaveTiles;
  s.fusedElementwise = c.fusedElementwise > 0;
  // colo's tensor parallelism splits the layers' matmuls (Megatron's column-
  // and row-parallel pairs) and keeps the embedding, the norms and the LM head
  // replicated (docs/parallel.md): every tensor-parallel rank runs them whole.
  // Megatron-LM splits them over the vocabulary (m.vocabParallel).
  // colo-tensor-parallel-2d splits the tables' features over the grid's
  // columns (and the head's product q * q ways; its logits are gathered),
  // colo-tensor-parallel-3d over one axis of the cube.
  s.edge = m.vocabParallel ? s.tp : s.grid * s.cube;
  s.mcount = plan.microBatches;
  // Under Ulysses a rank's activations between layers are its positions'.
  s.boundary = s.b * m.seq * m.hidden * m.elementBytes / s.sp;
  // Gradients and parameters travel in the training precision: bf16 in mixed
  // precision, fp32 in a full-precision model.
  s.weightBytes = m.elementBytes >= 4 ? 4 : 2;
  return s;
}

/// The kinds of time partTime adds up.
enum { Matmul = 1, Memory = 2, Launch = 4, All = 7 };

/// The fraction of a device's tile slots that `batch` products of a `rows`
/// x `cols` result use: cuBLAS computes it in 256 x 128 tiles, one per SM at
/// a time, so the last tile of a row or column and the last wave of tiles
/// run partly empty (NVIDIA, "Matrix Multiplication Background User's Guide":
/// tile and wave quantization). 1 without a wave size (a CPU).
double waveEfficiency(double rows, double cols, double batch, double waveTiles) {
  constexpr double kTileRows = 256, kTileCols = 128;
  if (waveTiles <= 0 || rows <= 0 || cols <= 0)
    return 1;
  double tiles = std::ceil(rows / kTileRows) * std::ceil(cols / kTileCols) * batch;
  double waves = std::ceil(tiles / waveTiles);
  return rows * cols * batch / (waves * waveTiles * kTileRows * kTileCols);
}

/// Matrix-product time of one microbatch through `part` split `split` ways:
/// each colo.matmul at the achievable peak times its wave efficiency,
/// attention at its own (a fused kernel computing its share of the FLOPs),
/// the rest (convolutions) at the achievable peak. Tensor parallelism
/// splits a product as Megatron-LM pairs them: one that widens (QKV, the
/// MLP's first) by its columns, one that narrows (the output projections)
/// by its depth; products between activations by heads (the batch).
double matmulTime(const PartCost &part, int64_t split, const Shared &s) {
  double total = s.b * part.matmulFlops / split, quantized = 0, time = 0;
  for (const Gemm &g : part.gemms) {
    double rows = g.ofWeight ? s.b * g.rows : g.rows;
    double batch = g.ofWeight ? g.batch : s.b * g.batch / split;
    bool widens = g.cols > g.depth;
    double cols = g.ofWeight && widens ? g.cols / split : g.cols;
    double depth = g.ofWeight && !widens ? g.depth / split : g.depth;
    double flops = 2 * rows * depth * cols * batch;
    quantized += flops;
    time += flops / (s.peak * waveEfficiency(rows, cols, batch, s.waveTiles));
  }
  // A timed convolution: the step's forward and gradients as measured
  // (compute charges three forwards).
  for (const ConvCost &conv : part.convs)
    if (conv.timed) {
      quantized += s.b * conv.flops / split;
      time += (conv.fixedSeconds + s.b * conv.perSampleSeconds) / 3 / split;
    }
  double attention = s.b * part.attentionFlops / split;
  double attentionWork = s.fusedAttention ? s.b * part.fusedAttentionFlops / split : attention;
  return time + std::max(0.0, total - quantized - attention) / s.peak +
         attentionWork / s.attentionPeak;
}

/// Forward time of one microbatch through `part` split `split` ways (the
/// `what` kinds of it): matmul FLOPs at the achievable peak (matmulTime),
/// memory-bound bytes at the achievable bandwidth, and a launch per kernel.
double partTime(const PartCost &part, int64_t split, const Shared &s, int what = All) {
  // Without sequence parallelism the hidden-size ops (norms, dropout,
  // residuals) are replicated on every tensor-parallel rank: their share of
  // the memory-bound bytes is taken as their share of the saved bytes, not
  // counting the attention probabilities, which no memory-bound op of the
  // profile moves (colo.attention is one matmul-class op).
  double splitSaved = part.savedSplit - part.savedScores;
  double repl = part.savedReplicated + splitSaved > 0
                    ? part.savedReplicated / (part.savedReplicated + splitSaved)
                    : 0;
  double memShare = s.sequenceParallel ? 1.0 / split : repl + (1 - repl) / split;
  return (what & Matmul ? matmulTime(part, split, s) : 0) +
         (what & Memory ? (s.b * ((s.fusedElementwise ? part.fusedBytes : part.memoryBytes) *
                                      memShare +
                                  part.scoreBytes / split) +
                           part.weightBytes / split) / s.bw
                        : 0) +
         (what & Launch ? part.ops * kKernelLaunchSeconds : 0);
}

/// The pipeline's pp * v chunks.
struct Chunks {
  int64_t count = 0;
  std::vector<PartCost> part; // the layer segments of chunk k, added up
  std::vector<double> layers; // layers in chunk k (fractional within a layer)
};

/// Stage partition: pre + layers + post into pp * v chunks; device d holds
/// chunks d, d + pp, ... (interleaving). A chunk is a run of layer segments;
/// without given stages they are balanced as colo-pipeline-stages balances
/// them (FLOPs, plus one per kernel), so that the prediction is of the
/// stages the compiler makes.
llvm::Expected<Chunks> partitionStages(const ModelProfile &m, const Plan &plan,
                                       const Shared &s) {
  int64_t tp = s.tp, edge = s.edge;
  double b = s.b;
  int64_t chunks = s.pp * s.v;
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
  Chunks ch;
  ch.count = chunks;
  ch.part.resize(chunks);
  ch.layers.resize(chunks);
  for (int64_t k = 0; k < chunks; ++k) {
    for (int64_t u = chunkBegin[k]; u < chunkBegin[k + 1]; ++u)
      ch.part[k] += segments[u % segmentsPerLayer];
    ch.layers[k] = double(chunkBegin[k + 1] - chunkBegin[k]) / segmentsPerLayer;
  }
  return ch;
}

/// The forward time of one microbatch on device d (the `what` kinds of it).
double deviceTime(int64_t d, int what, const ModelProfile &m, const Chunks &ch,
                  const Shared &s) {
  int64_t chunks = ch.count;
  double time = 0;
  for (int64_t k = d; k < chunks; k += s.pp)
    time += partTime(ch.part[k], s.tp, s, what) + (k == 0 ? partTime(m.pre, s.edge, s, what) : 0) +
            (k == chunks - 1 ? partTime(m.post, s.edge, s, what) : 0);
  return time;
}

/// The head's parameters a rank holds: their edge share; under 2-D and 3-D
/// tensor parallelism an untied head is a product, its weight split over
/// all tp ranks as a layer's are.
double headParams(const ModelProfile &m, const Shared &s) {
  if ((s.grid == 1 && s.cube == 1) || m.tiedParams > 0)
    return m.post.params / double(s.edge);
  double weights = 0;
  for (const Gemm &g : m.post.gemms)
    weights += g.ofWeight ? g.depth * g.cols : 0;
  weights = std::min(weights, m.post.params);
  return weights / double(s.tp) + (m.post.params - weights) / double(s.edge);
}

/// Parameters held by device d of a tensor-parallel group: its layers'
/// share, the embedding and head whole (or their share, vocabulary-parallel).
double stageParams(int64_t d, const ModelProfile &m, const Chunks &ch, const Shared &s) {
  int64_t chunks = ch.count, tp = s.tp, edge = s.edge;
  double params = 0;
  for (int64_t k = d; k < chunks; k += s.pp)
    params += ch.part[k].params / tp + (k == 0 ? m.pre.params / edge : 0) +
              (k == chunks - 1 ? headParams(m, s) : 0) +
              (k == chunks - 1 && chunks > 1 ? m.tiedParams / edge : 0);
  return params;
}

/// What the terms need of the chunks' placement on the pp devices.
struct Devices {
  std::vector<double> layers; // layers on device d
  std::vector<double> params; // parameters on device d (stageParams)
  double forward = 0;         // one microbatch's forward on the slowest device
  int64_t slowest = 0;
  double maxLayers = 0, maxAttention = 0;
  double maxParams = 0; // on the device with most parameters
};

Devices placeChunks(const ModelProfile &m, const Chunks &ch, const Shared &s) {
  int64_t pp = s.pp, chunks = ch.count;
  std::vector<double> deviceLayers(pp, 0), deviceAttention(pp, 0);
  for (int64_t k = 0; k < chunks; ++k) {
    deviceLayers[k % pp] += ch.layers[k];
    deviceAttention[k % pp] += ch.part[k].attentionFlops;
  }
  Devices dev;
  double tF = 0;
  int64_t slowest = 0;
  for (int64_t d = 0; d < pp; ++d)
    if (double time = deviceTime(d, All, m, ch, s); time > tF)
      tF = time, slowest = d;
  dev.forward = tF;
  dev.slowest = slowest;
  dev.maxLayers = *std::max_element(deviceLayers.begin(), deviceLayers.end());
  dev.maxAttention = *std::max_element(deviceAttention.begin(), deviceAttention.end());
  dev.layers = std::move(deviceLayers);
  double devParams = 0;
  for (int64_t d = 0; d < pp; ++d) {
    dev.params.push_back(stageParams(d, m, ch, s));
    devParams = std::max(devParams, dev.params[d]);
  }
  dev.maxParams = devParams;
  return dev;
}

/// Forward and backward of every microbatch on the slowest device. Backward
/// costs twice the forward.
double computeTime(const Devices &dev, const Shared &s) { return s.mcount * 3 * dev.forward; }

/// Recomputation: full recompute repeats each microbatch's forward, selective
/// recompute the attention core's FLOPs (whose probabilities it does not keep:
/// PartCost::savedScores); with fused attention, which keeps none, selective
/// has nothing to recompute.
double recomputeTime(const ModelProfile &m, const Plan &plan, const Devices &dev,
                     const Shared &s) {
  if (plan.recompute == Recompute::Full)
    return s.mcount * dev.forward;
  if (plan.recompute == Recompute::Selective && m.layer.savedScores > 0)
    return s.mcount * s.b * dev.maxAttention / s.tp / s.peak;
  return 0;
}

/// The blocks one SUMMA step of a product with a weight broadcasts, per
/// microbatch, bytes: the rank's X block (in its row of the grid; forward
/// none where an earlier product broadcast the same input, backward each
/// product reduces its own gradient of it) and W block (in its column).
struct SummaBlocks {
  double x = 0, xForward = 0, w = 0;
};
SummaBlocks summaBlocks(const Gemm &g, const ModelProfile &m, const Shared &s) {
  double q2 = double(s.grid * s.grid), x = s.b * g.rows * g.depth / q2 * m.elementBytes;
  return {x, g.sharesInput ? 0 : x, g.depth * g.cols / q2 * s.weightBytes};
}
/// A layer's products' blocks, and an untied LM head's (a SUMMA product
/// too) where `head`.
std::vector<SummaBlocks> summaBlocks(const ModelProfile &m, const Shared &s, bool head) {
  std::vector<SummaBlocks> blocks;
  for (const Gemm &g : m.layer.gemms)
    if (g.ofWeight)
      blocks.push_back(summaBlocks(g, m, s));
  if (head && m.tiedParams == 0)
    blocks.push_back(
        summaBlocks(Gemm{double(m.seq), double(m.hidden), double(m.vocab), 1, true}, m, s));
  return blocks;
}

/// An untied LM head's parameters: a product's weight under the grids, not
/// among the tables their sample ranks share.
double untiedHeadParams(const ModelProfile &m) {
  return m.tiedParams > 0 ? 0 : double(m.hidden) * double(m.vocab);
}

/// The parameters of a layer's products with weights, split over the whole
/// grid under 2-D tensor parallelism.
double layerGridParams(const ModelProfile &m) {
  double weights = 0;
  for (const Gemm &g : m.layer.gemms)
    if (g.ofWeight)
      weights += g.depth * g.cols;
  return std::min(weights, m.layer.params);
}

/// The parameters a layer of 2-D tensor parallelism keeps split over the
/// grid's columns only (norm scales, biases), whose gradients are summed
/// over its rows: all but its products' weights.
double layerColumnParams(const ModelProfile &m) { return m.layer.params - layerGridParams(m); }

/// 2-D tensor parallelism (colo-tensor-parallel-2d) per step, on the device
/// with most layers: per layer, for each product with a weight, q steps of
/// a broadcast of the rank's X block in its row and of its W block in its
/// column (a pipelined chain: about one block's transfer each; colo runs
/// them one after the other, unoverlapped), forward, the reduces of their
/// gradients backward, and the forward's again under full recompute; each
/// norm's two statistics summed over the rank's row of the grid in each
/// pass; per microbatch the loss on the rank's block of the logits (split
/// over the columns: a tied head's reduce-scattered there, then gathered
/// backward; the loss summing three values per token over the columns) and
/// its sum and count over the rows; once per step the all-reduce over the rows of
/// the gradients of what the rows share (the columns' blocks of the tables,
/// a tied table again as the head's, norm scales and biases). Under 2.5-D
/// the loss's sums and the shared gradients are over the copies' rows too,
/// and each copy's grid weights' gradients are summed over "depth".
double summaTime(const ModelProfile &m, const ClusterSpec &c, const Plan &plan, const Devices &dev,
                 const Shared &s) {
  int64_t q = s.grid;
  double passes = plan.recompute == Recompute::Full ? 3 : 2, forward = 0, backward = 0;
  auto steps = [&](SummaBlocks b, bool isForward) {
    return q * (collectiveTime(Collective::SendRecv, isForward ? b.xForward : b.x, 2, 1, c) +
                collectiveTime(Collective::SendRecv, b.w, 2, q, c));
  };
  for (SummaBlocks b : summaBlocks(m, s, /*head=*/false)) {
    forward += steps(b, true);
    backward += steps(b, false);
  }
  double stats = collectiveTime(Collective::AllReduce, s.b * m.seq / q * 4, q, 1, c);
  double tokens = s.b * m.seq * m.elementBytes;
  double head =
      (m.tiedParams > 0 ? collectiveTime(Collective::AllReduce, tokens * m.vocab / q, q, 1, c)
                        : 0) +
      3 * collectiveTime(Collective::AllReduce, tokens / q, q, 1, c) +
      2 * collectiveTime(Collective::AllReduce, m.elementBytes, q * s.depth, q, c);
  if (m.tiedParams == 0) {
    SummaBlocks b = summaBlocks(m, s, /*head=*/true).back();
    head += steps(b, true) + steps(b, false);
  }
  double shared = (m.pre.params + m.post.params - untiedHeadParams(m) + m.tiedParams) / q +
                  dev.maxLayers * layerColumnParams(m) / q;
  double gridWeights = dev.maxLayers * layerGridParams(m) + untiedHeadParams(m);
  double depthSums = s.depth > 1
                         ? collectiveTime(Collective::AllReduce,
                                          s.weightBytes * gridWeights / (q * q), s.depth, q * q, c)
                         : 0;
  return s.mcount *
             (dev.maxLayers * ((passes - 1) * forward + backward + passes * 2 * 2 * stats) + head) +
         collectiveTime(Collective::AllReduce, s.weightBytes * shared, q * s.depth, q, c) +
         depthSums;
}

/// The blocks a product with a weight [K, N] gathers under 3-D tensor
/// parallelism, per microbatch, bytes: X' (the rank's samples of its x
/// block, K / q of the features; none where an earlier product gathered the
/// same input), W' (K / q x N / q), and the product before its
/// reduce-scatter (N / q of the features).
struct CubeBlocks {
  double x = 0, w = 0, y = 0;
};
CubeBlocks cubeBlocks(const Gemm &g, const ModelProfile &m, const Shared &s) {
  double q2 = double(s.cube * s.cube);
  return {g.sharesInput ? 0 : s.b * g.rows * g.depth / q2 * m.elementBytes,
          g.depth * g.cols / q2 * s.weightBytes, s.b * g.rows * g.cols / q2 * m.elementBytes};
}
std::vector<CubeBlocks> cubeBlocks(const ModelProfile &m, const Shared &s) {
  std::vector<CubeBlocks> blocks;
  for (const Gemm &g : m.layer.gemms)
    if (g.ofWeight)
      blocks.push_back(cubeBlocks(g, m, s));
  return blocks;
}

/// The bytes a rank with `layers` layers and `edgeParams` of the tables
/// sends per step under 3-D tensor parallelism (colo-tensor-parallel-3d),
/// or the time it takes with `time`: per product with a weight, forward,
/// X' gathered over one axis, W' over "x", the product reduce-scattered
/// over the third; backward, the adjoints (two reduce-scatters, one
/// gather) of the same volumes; each norm's statistics summed over q
/// ranks; per microbatch the loss on the rank's block of the logits (split
/// over the features' axis: a tied head's reduce-scattered there, then
/// gathered backward; the loss summing three values per token over it) and
/// its sum and count
/// over the q^2 ranks of the samples; once per step the gradients of what the sample
/// ranks share (per-feature weights and tables, q ways split) summed over
/// them. `edgeParams`: the tables and the head the rank holds a part of
/// (an untied head, which is a product, among them where `last`).
template <typename Collect>
double cubeTraffic(const ModelProfile &m, const Plan &plan, const Shared &s, double layers,
                   double edgeParams, bool last, Collect collect) {
  int64_t q = s.cube;
  double passes = plan.recompute == Recompute::Full ? 3 : 2, perLayer = 0;
  auto product = [&](CubeBlocks b) {
    return collect(Collective::AllGather, b.x, q, q) +
           collect(Collective::AllGather, b.w, q, q * q) +
           collect(Collective::ReduceScatter, b.y, q, 1);
  };
  for (CubeBlocks b : cubeBlocks(m, s))
    perLayer += product(b);
  double stats = collect(Collective::AllReduce, s.b * m.seq / (q * q) * 4, q, 1);
  double tokens = s.b * m.seq * m.elementBytes, head = 0, headParams = 0;
  if (last && m.tiedParams > 0) {
    head = collect(Collective::AllReduce, tokens * m.vocab / (q * q), q, 1);
  } else if (last) {
    Gemm g{double(m.seq), double(m.hidden), double(m.vocab), 1, true};
    head = 2 * product(cubeBlocks(g, m, s));
    headParams = double(m.hidden) * m.vocab;
  }
  if (last)
    head += 3 * collect(Collective::AllReduce, tokens / (q * q), q, 1) +
            2 * collect(Collective::AllReduce, m.elementBytes, q * q, q);
  double shared = (edgeParams - headParams) / q + layers * layerColumnParams(m) / q;
  return s.mcount * (layers * passes * (perLayer + 2 * 2 * stats) + head) +
         collect(Collective::AllReduce, s.weightBytes * shared, q * q, q);
}

/// Megatron tensor parallelism: two all-reduces of b*s*h forward, two
/// backward per layer (all-gather + reduce-scatter pairs of the same volume
/// with sequence parallelism, so sequence parallelism has no term of its
/// own); full recompute repeats the forward two. On the device with most
/// layers.
double tensorParallelTime(const ModelProfile &m, const ClusterSpec &c, const Plan &plan,
                          const Devices &dev, const Shared &s) {
  if (s.grid > 1)
    return summaTime(m, c, plan, dev, s);
  if (s.cube > 1)
    return cubeTraffic(m, plan, s, dev.maxLayers, m.pre.params + m.post.params + m.tiedParams, true,
                       [&](Collective kind, double bytes, int64_t n, int64_t stride) {
                         return collectiveTime(kind, bytes, n, stride, c);
                       });
  double ar = collectiveTime(Collective::AllReduce, s.boundary, s.tp, 1, c);
  double perLayer = (plan.recompute == Recompute::Full ? 6 : 4) * ar;
  double time = s.mcount * dev.maxLayers * perLayer;
  // A vocabulary-parallel embedding all-reduces its output, a vocabulary-
  // parallel head its input gradient (on the first and last stage).
  if (m.vocabParallel)
    time += s.mcount * (s.pp == 1 ? 2 : 1) * ar;
  return time;
}

/// The same compute (compute + recompute) divided by kind, on the slowest
/// device: matmul, memory-bound, kernel launches.
void splitComputeByKind(Prediction &p, const ModelProfile &m, const Chunks &ch,
                        const Devices &dev, const Shared &s) {
  const TimeBreakdown &t = p.time;
  double tF = dev.forward;
  double share = tF > 0 ? (t.compute + t.recompute) / tF : 0;
  p.computeMatmul = share * deviceTime(dev.slowest, Matmul, m, ch, s);
  p.computeMemory = share * deviceTime(dev.slowest, Memory, m, ch, s);
  p.computeLaunch = share * deviceTime(dev.slowest, Launch, m, ch, s);
}

/// Pipeline point-to-point sends: b*s*h forward and back per microbatch at
/// each of the v chunks' boundaries, plus the tied weights' gradient.
double pipelineCommTime(const ModelProfile &m, const ClusterSpec &c, const Shared &s) {
  if (s.pp <= 1)
    return 0;
  // the mesh is [pp, dp, sp, tp] or [pp, dp, depth, row, col]
  int64_t stride = s.tp * s.sp * s.dp * s.depth;
  double p2p = collectiveTime(Collective::SendRecv, s.boundary, 2, stride, c);
  // Plus, once per step, the tied weights' gradients between the first and
  // the last stage.
  double tied = (m.elementBytes >= 4 ? 4 : 2) * m.tiedParams / s.edge;
  return s.mcount * 2 * s.v * p2p +
         (tied > 0 ? collectiveTime(Collective::SendRecv, tied, 2, stride, c) : 0);
}

/// Of a layer's step, the share of its weight gradients: the backward's
/// products with the parameters (as many FLOPs as the forward's), over a
/// step of three forwards' FLOPs.
double weightGradientShare(const PartCost &layer) {
  double forward = layer.matmulFlops + layer.otherFlops;
  return forward > 0 ? (layer.matmulFlops - layer.attentionFlops) / (3 * forward) : 1.0 / 3;
}

/// The pipeline bubble: (pp - 1) / v microbatch times, `tMicro` each. For
/// zb-h1, the idle time of the schedule's own order (colo-pipeline's) run
/// with a forward of a third of `tMicro`, the weight gradients their share,
/// the input gradients the rest.
double pipelineBubbleTime(double tMicro, const ModelProfile &m, const Plan &plan, const Shared &s) {
  if (s.pp <= 1)
    return 0;
  if (plan.schedule != Schedule::ZeroBubbleH1)
    return double(s.pp - 1) / s.v * tMicro;
  PhaseTimes t;
  t.forward = tMicro / 3;
  t.weightGrad = tMicro * weightGradientShare(m.layer);
  t.inputGrad = tMicro - t.forward - t.weightGrad;
  std::vector<PhaseTimes> stages(s.pp, t);
  std::optional<PipelineTimeline> run = simulatePipeline(
      s.pp, 1, int64_t(s.mcount), PipelineSchedule::ZeroBubbleH1, stages, /*hop=*/0);
  return run ? run->makespan - s.mcount * tMicro : double(s.pp - 1) * tMicro;
}

/// What a collective of `comm` seconds beside `window` seconds of compute
/// adds to the compute: the compute runs slower while they overlap
/// (ClusterSpec::overlapSlowdown), and what the window cannot hide is
/// exposed.
double besideCompute(double comm, double window, const ClusterSpec &c) {
  double slowed = window + c.overlapSlowdown * std::min(comm, window);
  return std::max(comm, slowed) - window;
}

/// Ulysses' all-to-alls per layer and microbatch: q, k, v and the output
/// forward, their gradients backward, the forward's again under full
/// recompute.
int ulyssesAllToAllsPerLayer(const Plan &plan) {
  return plan.recompute == Recompute::Full ? 12 : 8;
}

/// Ring attention's shifts per layer and microbatch: the key and value
/// blocks forward (ring - 1 each), their gradients backward, the forward's
/// again under full recompute.
int ringShiftsPerLayer(const Plan &plan) {
  return (plan.recompute == Recompute::Full ? 6 : 4) * int(plan.ring - 1);
}

/// DeepSpeed-Ulysses over sp ranks, as colo-ulysses compiles it, per
/// microbatch: per layer the all-to-alls of q, k, v and the attention output
/// forward and of their gradients backward (each rank's b*s/sp*h/tp block,
/// (sp-1)/sp of it sent; Llama's grouped k and v counted at the hidden
/// size), again forward under full recompute; the all-gather of the
/// sequence before the head. Ring attention (colo-ring-attention) sends
/// instead each rank's key and value blocks (the same b*s/sp*h/tp, k and v
/// at the hidden size) to the next rank, ringShiftsPerLayer times, each
/// waited for where it is made. On the critical path, on the device with
/// most layers.
double ulyssesMicroTime(const ClusterSpec &c, const Plan &plan, const Devices &dev,
                        const Shared &s) {
  if (s.sp <= 1)
    return 0;
  double perLayer =
      plan.ring > 1 ? ringShiftsPerLayer(plan) *
                          collectiveTime(Collective::SendRecv, s.boundary / s.tp, s.sp, s.tp, c)
                    : ulyssesAllToAllsPerLayer(plan) *
                          collectiveTime(Collective::AllToAll, s.boundary / s.tp, s.sp, s.tp, c);
  double gather = collectiveTime(Collective::AllGather, s.boundary * s.sp, s.sp, s.tp, c);
  return dev.maxLayers * perLayer + gather;
}

/// Ulysses' all-reduce over sp of the gradients of the parameters the split
/// tokens read (all of the device's, an upper bound), once per step after
/// the microbatches' sum (colo-pipeline), beside the last backward.
double ulyssesGradientTime(const ClusterSpec &c, const Devices &dev, const Shared &s,
                           double tMicro) {
  if (s.sp <= 1)
    return 0;
  double grads =
      collectiveTime(Collective::AllReduce, s.weightBytes * dev.maxParams, s.sp, s.tp, c);
  return besideCompute(grads, 2 * tMicro / 3, c);
}

/// Data parallelism, on the device with most parameters. ZeRO-0 and 1 keep
/// whole gradients and reduce them once per step (an all-reduce, or a
/// reduce-scatter and an all-gather of the same time), overlapped with the
/// backward of the last microbatch. ZeRO-2 and 3 keep 1/dp of the gradients
/// (modelStateMemory), so every microbatch's are reduce-scattered during its
/// backward (DeepSpeed's stages 2 and 3); ZeRO-2's last reduce-scatter and
/// its gather of the updated parameters count as ZeRO-1's. ZeRO-3 also
/// gathers each layer's parameters while the previous layer runs (one-layer
/// prefetch), before its forward and again before its backward; in the
/// backward that gather and the reduce-scatter of the layer's gradients
/// share the links. What a part's compute cannot hide is exposed, and what
/// it hides slows it (besideCompute).
double dataParallelTime(const ModelProfile &m, const ClusterSpec &c, const Plan &plan,
                        const Devices &dev, const Shared &s, double tMicro) {
  int64_t tp = s.tp, pp = s.pp, edge = s.edge;
  double weightBytes = s.weightBytes, mcount = s.mcount, devParams = dev.maxParams;
  auto onLinks = [&](Collective kind, double bytes) {
    return collectiveTime(kind, bytes, s.dp, tp * s.sp * s.depth, c);
  };
  double backward = 2 * tMicro / 3;
  double allReduce = besideCompute(onLinks(Collective::AllReduce, weightBytes * devParams),
                                   backward, c);
  if (plan.zero <= 1)
    return allReduce;
  if (plan.zero == 2) {
    double reduce = onLinks(Collective::ReduceScatter, weightBytes * devParams);
    return (mcount - 1) * besideCompute(reduce, backward, c) + allReduce;
  }
  double tLayer = partTime(m.layer, tp, s), tPre = partTime(m.pre, edge, s),
         tPost = partTime(m.post, edge, s);
  // A part of `params` parameters in `tensors` tensors whose forward takes
  // `fwd`: colo-zero gathers each tensor with its own all-gather (each
  // paying the ring's latency), and reduce-scatters the gradients in
  // buckets.
  auto exposed = [&](double params, double tensors, double fwd) {
    double gather = onLinks(Collective::AllGather, weightBytes * params) +
                    std::max(0.0, tensors - 1) * onLinks(Collective::AllGather, weightBytes);
    double reduce = onLinks(Collective::ReduceScatter, weightBytes * params);
    return besideCompute(gather, fwd, c) + besideCompute(gather + reduce, 2 * fwd, c);
  };
  double edges = pp == 1 ? exposed((m.pre.params + m.post.params) / edge, 1, tPre + tPost)
                         : std::max(exposed(m.pre.params / edge, 1, tPre),
                                    exposed(m.post.params / edge, 1, tPost));
  return mcount * (dev.maxLayers * exposed(m.layer.params / tp, m.layer.paramTensors, tLayer) +
                   edges);
}

/// The parameters whose optimizer state the device with most parameters
/// owns: 1/dp of them from ZeRO-1 on.
double ownedParams(const Plan &plan, const Devices &dev, const Shared &s) {
  return dev.maxParams / (plan.zero >= 1 ? s.dp : 1);
}

/// The optimizer step on the device. Adam reads and writes ~32 bytes per
/// parameter it owns (fp32 master, momentum, variance, gradient, bf16 copy).
double optimizerTime(double owned, const Shared &s) { return 32 * owned / s.bw; }

/// Optimizer offload as colo-offload compiles it (docs/memory.md): each
/// parameter goes to the host at the start of the step and each gradient as
/// the backward computes it (every microbatch's where the device keeps only
/// its block of them: ZeRO-2 and 3), on the copy queue beside the forward
/// and backward (`overlapped` seconds); after them the host updates each
/// parameter and sends it back, the copies overlapping the next updates.
/// The host updates at about 1e9 parameters/s per device's share (CPU
/// Adam), or at the device's own rate where that is slower (local-cpu: the
/// host is the device).
///
/// With the parameters offloaded too, the update reads and writes them on
/// the host and nothing goes back; each microbatch's forward fetches the
/// device's parameters (its shard under ZeRO-3) chunk by chunk, and its
/// backward fetches them again (colo compile's default keeps one chunk
/// resident between uses), all beside the compute. In mixed precision the
/// host first makes the 16-bit copies of the `held` parameters, at the
/// update's rate, before the first fetch.
double offloadTime(double owned, const ClusterSpec &c, const Plan &plan, const Shared &s,
                   double overlapped, double held) {
  double gradsDown = plan.zero >= 2 ? s.mcount : 1;
  double link = s.weightBytes * owned / c.pcieBandwidth;
  double update = std::max(owned / 1e9, optimizerTime(owned, s));
  if (plan.offload == Offload::OptimizerParams) {
    double fetches = 2 * s.mcount * s.weightBytes * held / c.pcieBandwidth;
    double narrow = s.weightBytes < 4 ? held / 1e9 : 0;
    return narrow + std::max(0.0, fetches + gradsDown * link - overlapped) + update;
  }
  return std::max(0.0, (1 + gradsDown) * link - overlapped) + std::max(update, link);
}

/// What offload keeps in host memory per device, as colo-offload compiles it:
/// the owned parameters' moments (8 bytes), their fp32 master weights (or,
/// with the parameters offloaded, every held parameter in fp32) and the
/// gradients that arrive for the update; offloaded activations add the
/// `stash` the device would keep.
double hostMemory(double owned, double held, double stash, const Plan &plan,
                  const Shared &s) {
  double activations = plan.offloadActivations ? stash : 0;
  if (plan.offload == Offload::None)
    return activations;
  double master = plan.offload == Offload::OptimizerParams ? held : owned;
  return 8 * owned + 4 * master + s.weightBytes * owned + activations;
}

/// Bytes one member of a ring collective over `n` sends: (n-1)/n of the
/// buffer, twice that for an all-reduce.
double ringBytesSent(Collective kind, double bytes, int64_t n) {
  if (n <= 1)
    return 0.0;
  double share = double(n - 1) / n * bytes;
  return kind == Collective::AllReduce ? 2 * share : share;
}

/// The bytes a rank with `layers` layers and `edgeParams` of the tables
/// (the head among them where `last`) sends per step under 2-D tensor
/// parallelism (summaTime's traffic): in a chain each rank is the last
/// member, which sends nothing, once in q steps.
double summaBytes(const ModelProfile &m, const Plan &plan, const Shared &s, double layers,
                  double edgeParams, bool last) {
  int64_t q = s.grid;
  double passes = plan.recompute == Recompute::Full ? 3 : 2, forward = 0, backward = 0;
  for (SummaBlocks b : summaBlocks(m, s, /*head=*/false)) {
    forward += (q - 1) * (b.xForward + b.w);
    backward += (q - 1) * (b.x + b.w);
  }
  double stats = ringBytesSent(Collective::AllReduce, s.b * m.seq / q * 4, q);
  double tokens = s.b * m.seq * m.elementBytes, head = 0, headParams = 0;
  if (last) {
    head = (m.tiedParams > 0 ? ringBytesSent(Collective::AllReduce, tokens * m.vocab / q, q) : 0) +
           3 * ringBytesSent(Collective::AllReduce, tokens / q, q) +
           2 * ringBytesSent(Collective::AllReduce, m.elementBytes, q * s.depth);
    if (m.tiedParams == 0) {
      SummaBlocks b = summaBlocks(m, s, /*head=*/true).back();
      head += (q - 1) * (b.xForward + b.x + 2 * b.w);
    }
    headParams = untiedHeadParams(m);
  }
  return s.mcount * (layers * ((passes - 1) * forward + backward + passes * 2 * 2 * stats) + head) +
         ringBytesSent(Collective::AllReduce,
                       s.weightBytes * (edgeParams - headParams + layers * layerColumnParams(m)) /
                           q,
                       q * s.depth) +
         ringBytesSent(Collective::AllReduce,
                       s.weightBytes * (layers * layerGridParams(m) + headParams) / (q * q),
                       s.depth);
}

/// Sends of device d per microbatch at its chunks' boundaries: activations
/// forward, gradients back.
double boundarySends(int64_t d, const Chunks &ch, const Shared &s) {
  int64_t chunks = ch.count;
  double sends = 0;
  for (int64_t k = d; k < chunks; k += s.pp)
    sends += (k < chunks - 1) + (k > 0); // activations forward, gradients back
  return sends;
}

/// Bytes sent per step by device d of each stage (ring collectives, as the
/// times assume): tensor-parallel all-reduces, pipeline sends, the tied
/// weights' gradient and the data-parallel reductions by ZeRO stage.
double deviceBytesSent(int64_t d, const ModelProfile &m, const Plan &plan, const Chunks &ch,
                       const Devices &dev, const Shared &s) {
  int64_t chunks = ch.count, pp = s.pp, tp = s.tp, dp = s.dp, edge = s.edge;
  double mcount = s.mcount, boundary = s.boundary, weightBytes = s.weightBytes;
  double layers = dev.layers[d], sends = boundarySends(d, ch, s);
  double params = dev.params[d];
  double edgeReduces = m.vocabParallel ? (d == 0) + ((chunks - 1) % pp == d) : 0;
  double edgeParams =
      (d == 0 ? m.pre.params : 0) + ((chunks - 1) % pp == d ? m.post.params + m.tiedParams : 0);
  auto sent = [](Collective kind, double bytes, int64_t n, int64_t) {
    return ringBytesSent(kind, bytes, n);
  };
  double bytes =
      s.grid > 1   ? summaBytes(m, plan, s, layers, edgeParams, (chunks - 1) % pp == d)
      : s.cube > 1 ? cubeTraffic(m, plan, s, layers, edgeParams, (chunks - 1) % pp == d, sent)
                   : mcount * (layers * (plan.recompute == Recompute::Full ? 6 : 4) + edgeReduces) *
                         ringBytesSent(Collective::AllReduce, boundary, tp);
  bytes += mcount * sends * boundary / (s.grid > 1 || s.cube > 1 ? s.tp : 1);
  // The first and the last stage send each other their part of the tied
  // weights' gradient.
  if (pp > 1 && (d == 0 || d == (chunks - 1) % pp))
    bytes += weightBytes * m.tiedParams / edge;
  double reduce = ringBytesSent(Collective::ReduceScatter, weightBytes * params, dp);
  double gather = ringBytesSent(Collective::AllGather, weightBytes * params, dp);
  if (plan.zero >= 3) // per microbatch: gather before forward and backward
    bytes += mcount * (reduce + 2 * gather);
  else if (plan.zero == 2) // per microbatch a reduce-scatter, one gather
    bytes += mcount * reduce + gather;
  else // an all-reduce, or a reduce-scatter and an all-gather (ZeRO-1)
    bytes += ringBytesSent(Collective::AllReduce, weightBytes * params, dp);
  if (s.sp > 1) // Ulysses or the ring (ulyssesMicroTime, ulyssesGradientTime)
    bytes += mcount * (layers * (plan.ring > 1 ? ringShiftsPerLayer(plan) * boundary / tp
                                               : ulyssesAllToAllsPerLayer(plan) *
                                                     ringBytesSent(Collective::AllToAll,
                                                                   boundary / tp, s.sp)) +
                       ((chunks - 1) % pp == d) *
                           ringBytesSent(Collective::AllGather, boundary * s.sp, s.sp)) +
             ringBytesSent(Collective::AllReduce, weightBytes * params, s.sp);
  return bytes;
}

/// Microbatches whose activations the first stage holds at once: GPipe all
/// of them, 1F1B up to pp, interleaved pp(1 + (pp-1)/(pp v)).
double inflightMicrobatches(const Plan &plan, const Shared &s) {
  int64_t pp = s.pp;
  double inflight = plan.schedule == Schedule::GPipe ? s.mcount
                    : pp > 1 ? std::min<double>(s.mcount, pp) : 1;
  if (plan.schedule == Schedule::Interleaved)
    inflight *= 1 + double(pp - 1) / (pp * s.v);
  return inflight;
}

/// Bytes a part of the model keeps for backward per microbatch under 2-D
/// and 3-D tensor parallelism: every activation split tp ways, the blocks
/// the products receive kept instead of their inputs (gridBlocksSaved); a
/// norm keeps one more block and its statistics, split with the samples
/// (all ranks but a feature group's q).
double gridSaved(const PartCost &part, double scores, const Shared &s) {
  double features = double(std::max(s.grid, s.cube));
  return s.b * ((part.savedReplicated + part.savedSplit - scores - part.savedProductInputs +
                 part.savedNormInputs) /
                    s.tp +
                part.normStats * features / s.tp);
}

/// Bytes a part of the layers keeps for backward per microbatch.
double layerSaved(const PartCost &part, const Plan &plan, const Shared &s) {
  double scores = plan.recompute == Recompute::Selective ? part.savedScores : 0;
  if (s.grid > 1 || s.cube > 1)
    return gridSaved(part, scores, s);
  return s.b * (part.savedReplicated / (plan.sequenceParallel ? s.tp : 1) +
                (part.savedSplit - scores) / s.tp);
}

/// The blocks of `part`'s products with weights that 2-D and 3-D tensor
/// parallelism keep for the backward, per microbatch: of the inputs (X),
/// the q blocks each SUMMA product received (3-D: the gathered X'), once
/// per input the products share; of the weights (W), the q blocks each
/// received (3-D: the gathered W').
SummaBlocks gridBlocksSaved(const PartCost &part, const ModelProfile &m, const Shared &s) {
  SummaBlocks saved;
  double q = double(s.grid), q2 = q * q;
  for (const Gemm &g : part.gemms) {
    if (!g.ofWeight)
      continue;
    if (s.grid > 1) {
      saved.x += g.sharesInput ? 0 : q * s.b * g.rows * g.depth / q2 * m.elementBytes;
      saved.w += q * g.depth * g.cols / q2 * s.weightBytes;
    } else if (s.cube > 1) {
      CubeBlocks b = cubeBlocks(g, m, s);
      saved.x += b.x, saved.w += b.w;
    }
  }
  return saved;
}

/// Bytes the embedding or the head keeps for backward per microbatch. They
/// are replicated by tensor parallelism, unless vocabulary-parallel; split
/// as the layers are by 2-D and 3-D tensor parallelism, an untied head
/// keeping the blocks its product received (a tied one sums its features'
/// partial logits instead).
double edgeSaved(const PartCost &part, const ModelProfile &m, const Plan &plan,
                 const Shared &s) {
  if (s.grid > 1 || s.cube > 1)
    return gridSaved(part, 0, s) + (m.tiedParams > 0 ? 0 : gridBlocksSaved(part, m, s).x);
  return m.vocabParallel ? s.b * (part.savedReplicated / (plan.sequenceParallel ? s.tp : 1) +
                                  part.savedSplit / s.tp)
                         : s.b * (part.savedReplicated + part.savedSplit);
}

/// Bytes device d keeps for backward per microbatch, what activation offload
/// moves to the host: its chunks' saved bytes (under full recompute each
/// layer's input only), and the embedding's on the first stage.
/// Ring attention keeps, per layer, the key and value blocks of the other
/// ranks it scored against (its own are the layer's): 2 (ring - 1) blocks of
/// b*s/ring*h/tp (k and v at the hidden size); and of its online softmax
/// the normalized output (one more such block) and, per head and position,
/// each step's running maximum or sum (4 bytes each, ring of them).
double ringBlocksSaved(const ModelProfile &m, const Plan &plan, const Shared &s) {
  if (plan.ring <= 1)
    return 0;
  double stats = s.b * double(m.heads) / double(s.tp) * double(m.seq) * 4;
  return (2.0 * double(plan.ring - 1) + 1) * s.boundary / s.tp + stats;
}

double stashPerMicrobatch(int64_t d, bool first, const ModelProfile &m, const Plan &plan,
                          const Chunks &ch, const Shared &s) {
  double saved = first ? edgeSaved(m.pre, m, plan, s) : 0;
  for (int64_t k = d; k < ch.count; k += s.pp)
    saved +=
        plan.recompute == Recompute::Full
            ? ch.layers[k] * s.boundary /
                  (plan.sequenceParallel || s.grid > 1 || s.cube > 1 ? s.tp : 1)
            : layerSaved(ch.part[k], plan, s) +
                  ch.layers[k] * (ringBlocksSaved(m, plan, s) + gridBlocksSaved(m.layer, m, s).x);
  return saved;
}

/// colo compile's default chunk of offloaded parameters or activations
/// (--chunk-mb).
constexpr double kChunkBytes = 32.0 * (1 << 20);

/// Microbatches whose activations device d holds at once: 1F1B's d-th rank
/// fewer than the first; zb-h1's as many (those of its weight gradients, run
/// up to d microbatches later).
double inflightAt(int64_t d, double inflight, const Plan &plan) {
  return plan.schedule == Schedule::ZeroBubbleH1 ? inflight : std::max(1.0, inflight - d);
}

/// The logits of a microbatch the head's rank holds: its share of them; 2-D
/// and 3-D tensor parallelism's, its samples' (of all the copies' under
/// 2.5-D) and its block of the vocabulary.
double logitElements(const ModelProfile &m, const Shared &s) {
  double all = s.b * double(s.depth) * double(m.seq) * double(m.vocab);
  int64_t q = std::max(s.grid, s.cube);
  if (q == 1)
    return all / double(s.edge);
  return all / (s.grid > 1 ? double(q * s.depth) : double(q * q)) / double(q);
}

/// The elements of the head's weight (a tied table's) the rank's product
/// reads: under Megatron's tensor parallelism all, or its vocabulary's block;
/// under 2-D and 3-D a tied table's features' block, an untied head's block
/// of both dimensions (3-D's gathered over "x").
double headWeightElements(const ModelProfile &m, const Shared &s) {
  double all = double(m.vocab) * double(m.hidden);
  int64_t q = std::max(s.grid, s.cube);
  if (q == 1)
    return all / double(s.edge);
  return all / double(m.tiedParams > 0 ? q : q * q);
}

/// The fp32 logits the loss keeps for its backward; a fused loss keeps none.
double lossSaved(const ModelProfile &m, const ClusterSpec &c, const Shared &s) {
  return c.fusedLoss > 0 ? 0 : 4.0 * logitElements(m, s);
}

/// Activations device d keeps: its `stash` per microbatch (stashPerMicrobatch:
/// split by tp and, sequence-parallel, the hidden-size ones too) times the
/// microbatches in flight there; under
/// full recompute also one layer's working set; the head's on the last
/// stage. With the activations offloaded the stash waits on the host and
/// the device holds the chunk the backward reads and the one being fetched
/// (colo-offload-activations); the loss's logits stay.
double activationMemory(int64_t d, bool last, double inflight, double stash, const ModelProfile &m,
                        const ClusterSpec &c, const Plan &plan, const Shared &s) {
  double held = inflightAt(d, inflight, plan) * stash;
  if (plan.offloadActivations)
    held = std::min(held, 2 * kChunkBytes);
  return held + (plan.recompute == Recompute::Full ? layerSaved(m.layer, plan, s) : 0) +
         (last ? edgeSaved(m.post, m, plan, s) + lossSaved(m, c, s) : 0);
}

/// Buffers of a device: the workspace, the loss's logits on the last stage,
/// ZeRO-3's gathered parameters.
double bufferMemory(bool first, bool last, const ModelProfile &m, const ClusterSpec &c,
                    const Plan &plan, const Shared &s) {
  int64_t tp = s.tp, edge = s.edge;
  // Workspace, plus the gradient of the logits, written next to them when
  // backward starts (the head's share of them; the fp32 logits the loss
  // keeps are activations, lossSaved), and where the matrix products copy
  // an operand they read transposed (ClusterSpec::gemmScratch) the largest
  // of the head's: the logits' gradient or the block of its weight the
  // rank's product reads. A fused loss writes the gradient in the training
  // precision.
  double gradientBytes = c.fusedLoss > 0 ? m.elementBytes : 4.0;
  double scratch = c.gemmScratch > 0 ? std::max(logitElements(m, s), headWeightElements(m, s)) : 0;
  double buffers = c.workspace + (last ? gradientBytes * (logitElements(m, s) + scratch) : 0);
  // ZeRO-3 also holds whole (tp-shared) parameters: those of the part that
  // computes and of the one prefetched, and the gradient of the part being
  // reduce-scattered; three times the largest part (a layer, the embedding
  // or the head).
  double largestPart = std::max({m.layer.params / tp, first ? m.pre.params / edge : 0.0,
                                 last ? m.post.params / edge : 0.0});
  if (plan.zero >= 3)
    buffers += 3 * s.weightBytes * largestPart;
  // Offloaded parameters: the part that computes and the one being fetched.
  if (plan.offload == Offload::OptimizerParams)
    buffers += 2 * s.weightBytes * largestPart;
  return buffers;
}

/// Where the communicator stages what it receives in the device's memory
/// (local-cpu: colo's MPI rings), one chunk of the largest reduction: the
/// tensor-parallel all-reduce of a layer's output (1/tp of it) or the
/// data-parallel reduction of a gradient bucket (1/dp of it: the stage's
/// gradients, up to colo compile's default --bucket-mb of 25 MiB), two
/// chunks for ZeRO's reduce-scatter over more than two ranks. A pipeline
/// stage also holds a copy of each activation or gradient it sends
/// (b·s·h per boundary and microbatch), and the first and last stages of
/// their tied weights' gradient, until the end of the step.
double stagingMemory(int64_t d, bool first, bool last, const ModelProfile &m,
                     const ClusterSpec &c, const Plan &plan, const Chunks &ch,
                     const Devices &dev, const Shared &s) {
  int64_t tp = s.tp, dp = s.dp, pp = s.pp;
  double boundary = s.boundary, weightBytes = s.weightBytes;
  constexpr double kBucketBytes = 25.0 * (1 << 20);
  double chunk = tp > 1 ? boundary / tp : 0;
  if (dp > 1) {
    double bucket = std::min(weightBytes * dev.params[d], kBucketBytes);
    chunk = std::max(chunk, (plan.zero >= 1 && dp > 2 ? 2 : 1) * bucket / dp);
  }
  double sends = boundarySends(d, ch, s);
  double tiedSend = pp > 1 && (first || last) ? weightBytes * m.tiedParams / s.edge : 0;
  return c.collectiveStaging * (chunk + s.mcount * sends * boundary + tiedSend);
}

/// Memory of device d of each stage: model state by ZeRO stage and offload
/// (modelStateMemory), activations, buffers and the communicator's staging.
MemoryBreakdown deviceMemory(int64_t d, double inflight, const ModelProfile &m,
                             const ClusterSpec &c, const Plan &plan, const Chunks &ch,
                             const Devices &dev, const Shared &s) {
  bool first = d == 0, last = (ch.count - 1) % s.pp == d;
  MemoryBreakdown mem =
      modelStateMemory(dev.params[d], plan.zero, s.dp, plan.offload, m.elementBytes);
  double stash = stashPerMicrobatch(d, first, m, plan, ch, s);
  mem.activations = activationMemory(d, last, inflight, stash, m, c, plan, s);
  // The weight blocks a grid's products received, read again backward:
  // parameters, not activations, but held per microbatch in flight.
  double weightBlocks = dev.layers[d] * gridBlocksSaved(m.layer, m, s).w;
  mem.buffers = bufferMemory(first, last, m, c, plan, s) +
                inflightAt(d, inflight, plan) * weightBlocks;
  if (c.collectiveStaging > 0)
    mem.staging = stagingMemory(d, first, last, m, c, plan, ch, dev, s);
  // A microbatch's backward frees its activations layer by layer as it
  // writes the gradients: past the head's (written before anything is
  // freed), the gradients take at most the memory of one microbatch's
  // stash (the others in flight, and offloaded ones, stay where they are).
  if (!plan.offloadActivations && dev.params[d] > 0) {
    double head = headParams(m, s) + m.tiedParams / double(s.edge);
    double early = last ? mem.grads * head / dev.params[d] : 0;
    double freed = stash + (last ? lossSaved(m, c, s) : 0);
    mem.reused = std::clamp(mem.grads - early, 0.0, std::min(freed, mem.activations));
  }
  return mem;
}

/// recompute=budget on device d: what colo-recompute's solver
/// (RecomputeSolver.h) chooses for its layers, each kept whole, with its
/// attention core recomputed or recomputed from its input, so that the
/// activations fit what the device has left after everything else.
struct BudgetedLayers {
  double seconds = 0;  ///< recomputation per microbatch
  double fullLayers = 0; ///< layers recomputed from their input
  /// The layers' activations, as chosen and as without recomputation.
  double activations = 0, kept = 0;
};

BudgetedLayers budgetLayers(int64_t d, double inflight, const ModelProfile &m,
                            const ClusterSpec &c, const Plan &plan, const Chunks &ch,
                            const Devices &dev, const Shared &s) {
  // Budget acts as none in the other terms: the device without recompute.
  MemoryBreakdown mem = deviceMemory(d, inflight, m, c, plan, ch, dev, s);
  Plan selective = plan;
  selective.recompute = Recompute::Selective;
  double held = inflightAt(d, inflight, plan), layers = 0, keep = 0, keepSelective = 0;
  for (int64_t k = d; k < ch.count; k += s.pp) {
    layers += ch.layers[k];
    keep += layerSaved(ch.part[k], plan, s);
    keepSelective += layerSaved(ch.part[k], selective, s);
  }
  BudgetedLayers out;
  out.kept = plan.offloadActivations ? 0 : held * keep;
  int64_t n = int64_t(std::ceil(layers - 1e-9));
  if (n == 0 || plan.offloadActivations) // the stash waits on the host
    return out;
  // One layer's choices; kept bytes are held for every microbatch in
  // flight, a recomputation's working set for the one in its backward.
  double perLayer = keep / double(n), perLayerSelective = keepSelective / double(n);
  double input = s.boundary / (plan.sequenceParallel ? s.tp : 1);
  double core = s.b * m.layer.attentionFlops / s.tp / s.peak;
  double forward = partTime(m.layer, s.tp, s) +
                   2 * collectiveTime(Collective::AllReduce, s.boundary, s.tp, 1, c);
  std::vector<RecomputeChoice> choices = {{int64_t(held * perLayer), 0, 0}};
  if (m.layer.savedScores > 0)
    choices.push_back({int64_t(held * perLayerSelective),
                       int64_t(perLayer - perLayerSelective), core});
  choices.push_back({int64_t(held * input), int64_t(perLayer), forward});
  std::vector<std::vector<RecomputeChoice>> chain(n, choices);
  // Without the gradients' reuse of the activations the budget changes.
  double budget = kAllocatableShare * c.deviceMemory - (mem.total() + mem.reused - out.kept);
  std::optional<RecomputeSolution> solved =
      solveRecompute(chain, int64_t(std::max(0.0, budget)));
  // None fits: every layer recomputed, which the prediction then finds
  // does not fit.
  std::vector<int> picks = solved ? solved->choices
                                  : std::vector<int>(n, int(choices.size()) - 1);
  for (int pick : picks) {
    out.seconds += choices[pick].flops;
    out.fullLayers += pick == int(choices.size()) - 1;
  }
  out.activations = double(recomputePeak(chain, picks));
  return out;
}

/// Throughput from the step time; MFU counts model FLOPs only (3 x forward
/// FLOPs x global batch, no recompute).
void setThroughput(Prediction &p, const ModelProfile &m, const ClusterSpec &c,
                   const Plan &plan) {
  double modelFlops = 3 * m.forwardFlops() * plan.globalBatch();
  p.tokensPerSecond = plan.globalBatch() * m.seq / p.stepTime;
  p.tflopsPerDevice = modelFlops / p.stepTime / c.worldSize() / 1e12;
  p.mfu = modelFlops / p.stepTime / c.worldSize() / c.peakFlops16;
}
} // namespace

/// `m` as one of `sp` Ulysses ranks runs it: the embedding and the layers
/// on 1/sp of every sample's positions (attention on all positions of 1/sp
/// of the heads: the same share), the head and the loss on the gathered
/// sequence.
static ModelProfile withUlysses(ModelProfile m, int64_t sp) {
  scale(m.pre, 1.0 / sp);
  scale(m.layer, 1.0 / sp);
  for (PartCost &segment : m.segments)
    scale(segment, 1.0 / sp);
  return m;
}

/// `m` as a fused attention kernel runs it: the backward reads no s x s
/// probabilities. It recomputes them from q and k; those FLOPs (2 b s^2 h
/// per layer: 0.7% of a layer's step at h = 8192 and s = 2048, 2.4% at
/// h = 2048) are not charged.
static ModelProfile withFusedAttention(ModelProfile m) {
  auto fuse = [](PartCost &part) {
    part.savedSplit -= part.savedScores;
    part.savedScores = 0;
    part.scoreBytes = 0;
  };
  fuse(m.pre), fuse(m.layer), fuse(m.post);
  llvm::for_each(m.segments, fuse);
  return m;
}

llvm::Expected<Prediction> predict(const ModelProfile &given, const ClusterSpec &c,
                                   const Plan &plan) {
  ModelProfile fused, split;
  const ModelProfile &unsplit =
      c.fusedAttention > 0 ? (fused = withFusedAttention(given)) : given;
  const ModelProfile &m =
      plan.sequenceRanks() > 1 ? (split = withUlysses(unsplit, plan.sequenceRanks())) : unsplit;
  if (llvm::Error e = validatePlan(m, c, plan))
    return std::move(e);
  Shared s = sharedQuantities(m, c, plan);
  llvm::Expected<Chunks> chunks = partitionStages(m, plan, s);
  if (!chunks)
    return chunks.takeError();
  const Chunks &ch = *chunks;
  Devices dev = placeChunks(m, ch, s);

  Prediction p;
  p.plan = plan;
  p.stageLayers = ch.layers;

  // Time.
  // recompute=budget: the solver's choice per device, as colo-recompute
  // makes it for the device's memory (the other terms see none).
  double inflight = inflightMicrobatches(plan, s);
  std::vector<BudgetedLayers> budgeted;
  if (plan.recompute == Recompute::Budget)
    for (int64_t d = 0; d < s.pp; ++d)
      budgeted.push_back(budgetLayers(d, inflight, m, c, plan, ch, dev, s));

  TimeBreakdown &t = p.time;
  t.compute = computeTime(dev, s);
  t.recompute = recomputeTime(m, plan, dev, s);
  for (const BudgetedLayers &b : budgeted)
    t.recompute = std::max(t.recompute, s.mcount * b.seconds);
  t.tensorParallel = tensorParallelTime(m, c, plan, dev, s);
  splitComputeByKind(p, m, ch, dev, s);
  // One microbatch on the slowest device, its tensor-parallel communication
  // included: what the pipeline bubble and the data-parallel overlap see.
  double ulyssesMicro = ulyssesMicroTime(c, plan, dev, s);
  double tMicro = (t.compute + t.recompute + t.tensorParallel) / s.mcount + ulyssesMicro;
  t.ulysses = s.mcount * ulyssesMicro + ulyssesGradientTime(c, dev, s, tMicro);
  t.pipelineComm = pipelineCommTime(m, c, s);
  t.bubble = pipelineBubbleTime(tMicro, m, plan, s);
  t.dataParallel = dataParallelTime(m, c, plan, dev, s, tMicro);
  double owned = ownedParams(plan, dev, s);
  // The largest stash of a device: per microbatch (the link's bytes, both
  // ways, every microbatch) and in flight (the host's memory).
  double stashMicro = 0, stashHeld = 0;
  for (int64_t d = 0; d < s.pp; ++d) {
    double perMicro = stashPerMicrobatch(d, d == 0, m, plan, ch, s);
    stashMicro = std::max(stashMicro, perMicro);
    stashHeld = std::max(stashHeld, inflightAt(d, inflight, plan) * perMicro);
  }
  // Offloaded activations go to the host during each microbatch's forward
  // and come back during its backward, on the copy queue: what a phase's
  // compute does not hide is exposed, and what it hides is queue time the
  // optimizer's copies cannot use.
  double overlapped = t.compute + t.recompute;
  if (plan.offloadActivations) {
    double each = s.mcount * stashMicro / c.pcieBandwidth;
    double forward = t.compute / 3, backward = overlapped - forward;
    double exposed = std::max(0.0, each - forward) + std::max(0.0, each - backward);
    t.offload = exposed;
    overlapped -= 2 * each - exposed;
  }
  if (plan.offload == Offload::None)
    t.optimizer = optimizerTime(owned, s);
  else
    t.offload += offloadTime(owned, c, plan, s, overlapped,
                             dev.maxParams / (plan.zero >= 3 ? s.dp : 1));
  p.stepTime = t.total();

  // Bytes sent per step: by the device that sends most, and by all.
  for (int64_t d = 0; d < s.pp; ++d) {
    double bytes = deviceBytesSent(d, m, plan, ch, dev, s);
    if (!budgeted.empty()) // a layer recomputed whole repeats its two all-reduces
      bytes += s.mcount * 2 * budgeted[d].fullLayers *
               ringBytesSent(Collective::AllReduce, s.boundary, s.tp);
    p.commBytesDevice = std::max(p.commBytesDevice, bytes);
    p.commBytesAll += bytes * s.dp * s.sp * s.tp * s.depth;
  }

  // Memory of each device; report the largest.
  MemoryBreakdown worst;
  for (int64_t d = 0; d < s.pp; ++d) {
    MemoryBreakdown mem = deviceMemory(d, inflight, m, c, plan, ch, dev, s);
    if (!budgeted.empty()) {
      mem.activations += budgeted[d].activations - budgeted[d].kept;
      mem.reused = std::min(mem.reused, mem.activations);
    }
    if (mem.total() > worst.total())
      worst = mem;
  }
  p.memory = worst;
  p.hostMemory =
      hostMemory(owned, dev.maxParams / (plan.zero >= 3 ? s.dp : 1), stashHeld, plan, s);
  p.fits = worst.total() <= kAllocatableShare * c.deviceMemory &&
           (c.hostMemory <= 0 || p.hostMemory * c.devicesPerNode <= 0.9 * c.hostMemory);

  setThroughput(p, unsplit, c, plan); // the model's FLOPs, not a Ulysses rank's
  return p;
}

std::vector<std::pair<const char *, double>> timeTerms(const TimeBreakdown &t) {
  return {{"compute", t.compute},
          {"recompute", t.recompute},
          {"tensor_parallel", t.tensorParallel},
          {"ulysses", t.ulysses},
          {"pipeline_comm", t.pipelineComm},
          {"bubble", t.bubble},
          {"data_parallel", t.dataParallel},
          {"optimizer", t.optimizer},
          {"offload", t.offload}};
}

std::vector<std::pair<const char *, double>> termsBetween(const Prediction &best,
                                                          const Prediction &other) {
  std::vector<std::pair<const char *, double>> terms = timeTerms(other.time);
  for (auto [term, mine] : llvm::zip(terms, timeTerms(best.time)))
    term.second -= mine.second;
  llvm::erase_if(terms, [](const auto &t) { return t.second == 0; });
  llvm::stable_sort(terms, [](const auto &a, const auto &b) {
    return std::abs(a.second) > std::abs(b.second);
  });
  return terms;
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
  if (mem.reused > 0)
    os << llvm::format("  gradients in freed activations %.2f GiB less\n", gb(mem.reused));
  if (p.hostMemory > 0)
    os << llvm::format("host memory  %.2f GiB per device offloaded, %.2f GiB per node of %.2f "
                       "GiB\n",
                       gb(p.hostMemory), gb(p.hostMemory * c.devicesPerNode),
                       gb(c.hostMemory));
  const TimeBreakdown &t = p.time;
  os << llvm::format("step time    %.3f s\n", p.stepTime);
  auto line = [&](const char *name, double s) {
    os << llvm::format("  %-22s %9.3f s  %5.1f%%\n", name, s, 100 * s / p.stepTime);
  };
  line("compute (fwd + bwd)", t.compute);
  line("recompute", t.recompute);
  line(p.plan.tp2dDepth > 1 ? "2.5-D SUMMA broadcasts"
       : p.plan.tp2d > 1    ? "2-D SUMMA broadcasts"
       : p.plan.tp3d > 1    ? "3-D gathers, scatters"
                            : "tensor-parallel comm",
       t.tensorParallel);
  if (t.ulysses > 0)
    line(p.plan.ring > 1 ? "ring attention shifts" : "ulysses all-to-all", t.ulysses);
  line("pipeline send/recv", t.pipelineComm);
  line("pipeline bubble", t.bubble);
  line("data-parallel comm", t.dataParallel); // exposed, and the slowdown beside it
  line("optimizer", t.optimizer);
  line("offload", t.offload);
  os << llvm::format("communication %.4g MB sent per step by a device, %.4g MB by all\n",
                     p.commBytesDevice / 1e6, p.commBytesAll / 1e6);
  os << llvm::format("throughput   %.0f tokens/s, %.1f TFLOP/s per device, MFU %.1f%%\n",
                     p.tokensPerSecond, p.tflopsPerDevice, 100 * p.mfu);
}

} // namespace colo::planner
