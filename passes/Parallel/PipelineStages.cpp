// colo-pipeline-stages: cuts @forward into `stages` consecutive pipeline
// stages of balanced cost and labels every op with its stage. A cut goes only
// where the fewest values cross (between transformer layers: the residual
// stream); among those places the cuts minimize the costliest stage (FLOPs
// from the cost interface), by dynamic programming. Ops that do not depend on
// the inputs (parameter loads, constants, masks) are copied into every stage
// that uses them, so a stage needs from its predecessors only activations.
#include "colo/Analysis/ModelSummary.h"
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/Passes.h"
#include "colo/Passes/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <limits>
#include <map>

namespace colo {
#define GEN_PASS_DEF_COLOPIPELINESTAGES
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
/// The ops of `block` that depend on its arguments (the activations), in
/// order; the others (parameter loads, constants, masks) are copied into
/// every stage that uses them.
SmallVector<Operation *> inputDependentOps(Block &block) {
  SmallVector<Operation *> ops;
  DenseSet<Operation *> varying;
  for (Operation &op : block.without_terminator())
    if (llvm::any_of(op.getOperands(), [&](Value v) {
          Operation *def = v.getDefiningOp();
          return !def || varying.contains(def);
        })) {
      varying.insert(&op);
      ops.push_back(&op);
    }
  return ops;
}

int64_t flopsOf(Operation *op) {
  if (auto cost = dyn_cast<CostOpInterface>(op))
    return cost.getFlops();
  return 0;
}
} // namespace

void colo::inferMissingStages(Block &block) {
  // Only activations order the stages: a constant or parameter load carries
  // the label of one stage that reads it but is copied into every stage
  // that does (an attention mask's label must not pull the layer-0 softmax
  // that decomposing attention made into the last stage).
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    ops.push_back(&op);
  SmallVector<Operation *> varyingOps = inputDependentOps(block);
  DenseSet<Operation *> varying(varyingOps.begin(), varyingOps.end());
  for (Operation *op : ops) {
    if (getStage(op))
      continue;
    std::optional<int64_t> latest;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp(); def && varying.contains(def))
        if (std::optional<int64_t> s = getStage(def))
          latest = std::max(latest.value_or(0), *s);
    if (latest)
      setStage(op, *latest);
  }
  for (Operation *op : llvm::reverse(ops)) {
    if (getStage(op))
      continue;
    std::optional<int64_t> earliest;
    for (Operation *user : op->getUsers())
      if (std::optional<int64_t> s = getStage(user))
        earliest = std::min(earliest.value_or(*s), *s);
    setStage(op, earliest.value_or(0));
  }
}


PipelineCutPoints colo::findPipelineCutPoints(Block &body) {
  PipelineCutPoints cuts;
  cuts.ops = inputDependentOps(body);
  DenseSet<Operation *> varying(cuts.ops.begin(), cuts.ops.end());
  int64_t n = cuts.ops.size();
  DenseMap<Operation *, int64_t> index;
  for (auto [i, op] : llvm::enumerate(cuts.ops))
    index[op] = i;

  // liveAfter[i]: values defined at or before ops[i] and used after it.
  std::vector<int64_t> born(n + 1, 0), died(n + 1, 0), liveAfter(n, 0);
  for (auto [i, op] : llvm::enumerate(cuts.ops))
    for (Value r : op->getResults()) {
      int64_t last = -1;
      for (Operation *user : r.getUsers())
        last = std::max(last, varying.contains(user) ? index[user] : n);
      if (last > static_cast<int64_t>(i))
        ++born[i], ++died[last];
    }
  cuts.prefix.assign(n + 1, 0);
  int64_t live = 0, fewest = std::numeric_limits<int64_t>::max();
  for (int64_t i = 0; i < n; ++i) {
    cuts.prefix[i + 1] = cuts.prefix[i] + flopsOf(cuts.ops[i]) + 1;
    live += born[i] - died[i];
    liveAfter[i] = live;
    if (i + 1 < n)
      fewest = std::min(fewest, live);
  }
  for (int64_t i = 0; i + 1 < n; ++i)
    if (liveAfter[i] == fewest)
      cuts.candidates.push_back(i);
  cuts.fewestCrossing = fewest;
  return cuts;
}

SmallVector<int64_t> colo::balanceStageCuts(ArrayRef<double> prefix,
                                            ArrayRef<int64_t> candidates, int64_t stages) {
  int64_t n = prefix.size() - 1, k = candidates.size();
  if (stages <= 1 || k < stages - 1)
    return {};
  constexpr double inf = std::numeric_limits<double>::infinity();
  // best[j][c]: the smallest largest cost of j + 1 segments ending with a cut
  // at candidates[c]; the last segment runs to the end.
  auto cutAt = [&](int64_t c) { return candidates[c] + 1; };
  std::vector<std::vector<double>> best(stages, std::vector<double>(k, inf));
  std::vector<std::vector<int64_t>> from(stages, std::vector<int64_t>(k, -1));
  for (int64_t c = 0; c < k; ++c)
    best[0][c] = prefix[cutAt(c)];
  // The last segment only grows as its start moves back: once it alone
  // exceeds the best found, no earlier start can match it. Going back, `<=`
  // keeps the earliest start among equals.
  for (int64_t j = 1; j + 1 < stages; ++j)
    for (int64_t c = 0; c < k; ++c)
      for (int64_t p = c - 1; p >= 0; --p) {
        double segment = prefix[cutAt(c)] - prefix[cutAt(p)];
        if (segment > best[j][c])
          break;
        if (best[j - 1][p] == inf)
          continue;
        double cost = std::max(best[j - 1][p], segment);
        if (cost <= best[j][c])
          best[j][c] = cost, from[j][c] = p;
      }
  int64_t last = -1;
  double bestCost = inf;
  for (int64_t c = 0; c < k; ++c) {
    if (best[stages - 2][c] == inf)
      continue;
    double cost = std::max(best[stages - 2][c], prefix[n] - prefix[cutAt(c)]);
    if (cost < bestCost)
      bestCost = cost, last = c;
  }
  SmallVector<int64_t> cuts;
  for (int64_t j = stages - 2, c = last; j >= 0; c = from[j--][c])
    cuts.insert(cuts.begin(), cutAt(c));
  return cuts;
}

namespace {
struct ColoPipelineStages : colo::impl::ColoPipelineStagesBase<ColoPipelineStages> {
  using Base::Base;

  /// The cuts that end the stages at `layerEnds`: each at the last place to
  /// cut before the first op of the layer that follows.
  LogicalResult cutsAtLayers(ModuleOp module, func::FuncOp forward,
                             const PipelineCutPoints &points, SmallVector<int64_t> &cuts) {
    ModelSummary summary = summarize(module);
    const RepeatedBlocks *layers = findLayers(summary);
    if (!layers)
      return forward.emitError("cannot cut @forward at layers: no repeated blocks "
                               "(layers) found");
    int64_t count = layers->count;
    if (static_cast<int64_t>(layerEnds.size()) != stages)
      return forward.emitError() << "layer-ends must give one end per stage ("
                                 << static_cast<int64_t>(stages) << ")";
    if (layerEnds[layerEnds.size() - 1] != count)
      return forward.emitError() << "the last pipeline stage ends at layer "
                                 << layerEnds[layerEnds.size() - 1] << ", but the model has "
                                 << count << " layers (layer-ends)";
    for (int64_t s = 0; s + 1 < stages; ++s) {
      int64_t end = layerEnds[s], previous = s ? layerEnds[s - 1] : 0;
      if (end <= previous || end >= count)
        return forward.emitError()
               << "layer-ends must increase from 1 to the number of layers (" << count
               << "): stage " << s << " ends at " << end << ", after " << previous;
      auto next = llvm::find_if(points.ops, [&](Operation *op) {
        return layers->blockOf(modulePath(op->getLoc())) == end;
      });
      int64_t firstOfNext = next - points.ops.begin(), cut = -1;
      for (int64_t c : points.candidates)
        if (c < firstOfNext)
          cut = c + 1;
      if (cut <= (cuts.empty() ? 0 : cuts.back()))
        return forward.emitError() << "no place to cut @forward between layers "
                                   << end - 1 << " and " << end << " ("
                                   << layers->path(end) << ")";
      cuts.push_back(cut);
    }
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward || forward.isExternal() || !forward.getBody().hasOneBlock()) {
      module.emitError("colo-pipeline-stages: no single-block func.func @forward");
      return signalPassFailure();
    }
    if (stages < 1) {
      forward.emitError() << "colo-pipeline-stages: stages must be at least 1, got "
                          << static_cast<int64_t>(stages);
      return signalPassFailure();
    }
    Block &body = forward.front();

    PipelineCutPoints points = findPipelineCutPoints(body);
    ArrayRef<Operation *> ops = points.ops;
    int64_t n = ops.size();
    if (n < stages) {
      forward.emitError() << "cannot cut @forward into " << static_cast<int64_t>(stages)
                          << " pipeline stages: it has " << n << " ops on the inputs";
      return signalPassFailure();
    }
    if (static_cast<int64_t>(points.candidates.size()) < stages - 1) {
      forward.emitError() << "cannot cut @forward into " << static_cast<int64_t>(stages)
                          << " pipeline stages: only " << points.candidates.size()
                          << " places where " << points.fewestCrossing
                          << " value(s) cross (between layers); use fewer stages";
      return signalPassFailure();
    }

    SmallVector<int64_t> cuts;
    if (layerEnds.empty()) {
      cuts = balanceStageCuts(points.prefix, points.candidates, stages);
    } else if (failed(cutsAtLayers(module, forward, points, cuts))) {
      return signalPassFailure();
    }
    for (int64_t i = 0, s = 0; i < n; ++i) {
      while (s < static_cast<int64_t>(cuts.size()) && i >= cuts[s])
        ++s;
      setStage(ops[i], s);
    }

    // Copy the input-independent ops into each stage that uses them, users
    // first so that a copy's own operands are copied for its stage too.
    DenseSet<Operation *> varying(ops.begin(), ops.end());
    SmallVector<Operation *> invariant;
    for (Operation &op : body.without_terminator())
      if (!varying.contains(&op))
        invariant.push_back(&op);
    for (Operation *op : llvm::reverse(invariant)) {
      std::map<int64_t, SmallVector<OpOperand *>> usesByStage;
      for (OpResult r : op->getResults())
        for (OpOperand &use : r.getUses()) {
          Operation *user = use.getOwner();
          int64_t s = user == body.getTerminator() ? stages - 1 : getStage(user).value_or(0);
          usesByStage[s].push_back(&use);
        }
      if (usesByStage.empty()) {
        setStage(op, 0);
        continue;
      }
      setStage(op, usesByStage.begin()->first);
      OpBuilder b(op);
      for (auto &[s, uses] : llvm::drop_begin(usesByStage)) {
        Operation *copy = b.clone(*op);
        setStage(copy, s);
        for (OpOperand *use : uses)
          use->set(copy->getResult(cast<OpResult>(use->get()).getResultNumber()));
      }
    }
    ColoDialect::PipelineStagesAttrHelper(&getContext())
        .setAttr(forward, IntegerAttr::get(IntegerType::get(&getContext(), 64), stages));
  }
};
} // namespace
