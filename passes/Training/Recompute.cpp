// colo-recompute: forward activations recomputed right before their backward
// instead of kept from the forward (full: each repeated block from its
// input; selective: the attention cores).
#include "colo/Analysis/ModelSummary.h"
#include "colo/Analysis/RecomputeSolver.h"
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

namespace colo {
#define GEN_PASS_DEF_COLORECOMPUTE
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {

/// Forward ops recomputed together, in program order.
struct Segment {
  std::string label;
  llvm::SetVector<Operation *> ops;
};

/// What recomputing a segment means: the values its backward reads that it
/// computes again, the ops that do, and the first backward op that reads one.
struct Recomputation {
  llvm::SetVector<Value> saved;
  llvm::DenseSet<Operation *> slice;
  Operation *firstUse = nullptr;

  /// The bytes of the saved values: kept without recomputation, held again
  /// during the backward with it.
  int64_t savedBytes() const {
    int64_t bytes = 0;
    for (Value v : saved) {
      auto t = cast<RankedTensorType>(v.getType());
      bytes += t.getNumElements() * int64_t(llvm::divideCeil(t.getElementTypeBitWidth(), 8));
    }
    return bytes;
  }
  double flops() const {
    double total = 0;
    for (Operation *op : slice)
      if (auto cost = dyn_cast<CostOpInterface>(op))
        total += double(cost.getFlops());
    return total;
  }
};

class Recomputer {
public:
  Recomputer(func::FuncOp step, Operation *lossOp) {
    for (Operation &op : step.front())
      order[&op] = int64_t(order.size());
    lossPosition = order.lookup(lossOp);
  }

  bool isForward(Operation *op) const {
    auto it = order.find(op);
    return it != order.end() && it->second < lossPosition;
  }

  /// What recomputing `segment` would clone, on the step as it was.
  Recomputation analyze(const Segment &segment) const {
    Recomputation r;
    // Values that forward ops outside the segment read (or the step
    // returns) stay; the others that the backward reads are recomputed.
    auto isBoundary = [&](Value v) {
      return llvm::any_of(v.getUsers(), [&](Operation *user) {
        return !segment.ops.contains(user) && !isBackward(user) && order.count(user);
      });
    };
    for (Operation *op : segment.ops)
      for (Value v : op->getResults()) {
        if (!isa<RankedTensorType>(v.getType()) || isBoundary(v))
          continue;
        for (Operation *user : v.getUsers())
          if (recomputesFor(user)) {
            r.saved.insert(v);
            if (!r.firstUse || order.lookup(user) < order.lookup(r.firstUse))
              r.firstUse = user;
          }
      }
    // The segment's ops those values need, back to its inputs and kept values.
    SmallVector<Operation *> work;
    for (Value v : r.saved)
      work.push_back(v.getDefiningOp());
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (!r.slice.insert(op).second)
        continue;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && segment.ops.contains(def) && !isBoundary(operand))
          work.push_back(def);
    }
    return r;
  }

  /// Clones what `segment` must recompute before its backward; returns the
  /// number of ops cloned.
  int64_t recompute(const Segment &segment) {
    Recomputation r = analyze(segment);
    if (r.saved.empty())
      return 0;
    OpBuilder b(r.firstUse);
    IRMapping map;
    auto label = b.getStringAttr(segment.label);
    int64_t cloned = 0;
    for (Operation *op : segment.ops)
      if (r.slice.contains(op)) {
        b.clone(*op, map)->setAttr(ColoDialect::RecomputedAttrHelper::getNameStr(), label);
        ++cloned;
      }
    // Every backward reader comes at or after the first, where the clones are.
    for (Value v : r.saved)
      v.replaceUsesWithIf(map.lookup(v),
                          [&](OpOperand &use) { return recomputesFor(use.getOwner()); });
    return cloned;
  }

private:
  /// An op of the original step after the loss: the backward and the update
  /// (not the terminator, which returns the loss; not the clones).
  bool isBackward(Operation *op) const {
    auto it = order.find(op);
    return it != order.end() && it->second > lossPosition &&
           !op->hasTrait<OpTrait::IsTerminator>();
  }

  /// A backward op that would read recomputed values: not a store of state
  /// the forward updated (batch norm's running statistics), which keeps
  /// the forward's value (colo-pipeline carries it between microbatches).
  bool recomputesFor(Operation *op) const {
    return isBackward(op) && !isa<GlobalStoreOp>(op);
  }

  llvm::DenseMap<Operation *, int64_t> order;
  int64_t lossPosition = 0;
};

/// Forward ops that can run again: no effects, no regions, not a parameter
/// load or a constant (those values are there anyway).
bool recomputable(Operation *op) {
  return op->getNumRegions() == 0 && op->getNumResults() > 0 && isMemoryEffectFree(op) &&
         !isa<GlobalLoadOp, ConstantOp>(op);
}

/// Megatron-LM's selective recomputation: per softmax of an attention, the
/// product of the scores, its scaling and masks, the softmax, the dropout
/// and conversion after it, and the product with the values (whose output,
/// read by the next projection, stays: it makes the probabilities a value
/// inside the core).
std::vector<Segment> attentionCores(func::FuncOp step, const Recomputer &r) {
  std::vector<Segment> cores;
  step.walk([&](SoftmaxOp softmax) {
    if (!r.isForward(softmax))
      return;
    llvm::SetVector<Operation *> ops;
    ops.insert(softmax);
    // Back to the scores' product through the elementwise scaling and masks.
    for (Operation *def = softmax.getOperand().getDefiningOp(); def && recomputable(def);
         def = def->getOperand(0).getDefiningOp()) {
      if (!isa<MulOp, AddOp, ConvertOp, MatmulOp>(def))
        return;
      ops.insert(def);
      if (isa<MatmulOp>(def))
        break;
    }
    if (!llvm::any_of(ops, llvm::IsaPred<MatmulOp>))
      return;
    for (Value v = softmax.getResult();;) {
      // Its one forward reader (the backward reads it too).
      SmallVector<Operation *> readers;
      for (Operation *user : v.getUsers())
        if (r.isForward(user))
          readers.push_back(user);
      if (readers.size() != 1 || !isa<DropoutOp, ConvertOp, MatmulOp>(readers[0]))
        break;
      Operation *user = readers[0];
      ops.insert(user);
      if (isa<MatmulOp>(user))
        break;
      v = user->getResult(0);
    }
    Segment core{modulePath(softmax.getLoc()), {}};
    // In program order.
    SmallVector<Operation *> sorted(ops.begin(), ops.end());
    llvm::sort(sorted, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    core.ops.insert(sorted.begin(), sorted.end());
    cores.push_back(std::move(core));
  });
  return cores;
}

/// Each repeated block of the model (its layers), from its input, in
/// block order.
std::vector<Segment> blocks(func::FuncOp step, const Recomputer &r,
                            const RepeatedBlocks &layers) {
  std::map<int64_t, Segment> byBlock;
  for (Operation &op : step.front())
    if (r.isForward(&op) && recomputable(&op))
      if (std::optional<int64_t> i = layers.blockOf(modulePath(op.getLoc()))) {
        Segment &segment = byBlock[*i];
        segment.label = layers.path(*i);
        segment.ops.insert(&op);
      }
  std::vector<Segment> segments;
  for (auto &[i, segment] : byBlock)
    segments.push_back(std::move(segment));
  return segments;
}

std::string mib(int64_t bytes) {
  if (bytes < (1 << 20))
    return std::to_string(bytes) + " bytes";
  return llvm::formatv("{0:F1} MiB", double(bytes) / (1 << 20));
}

/// The budget policy: per block, keep it, recompute its attention cores or
/// recompute all of it, with the least recomputed FLOPs whose kept and
/// recomputed activations fit `budget` bytes (analysis/RecomputeSolver).
FailureOr<std::vector<Segment>> withinBudget(func::FuncOp step, const Recomputer &r,
                                             std::vector<Segment> perBlock, int64_t budget) {
  std::vector<Segment> cores = attentionCores(step, r);
  std::vector<std::vector<Segment>> coresOf(perBlock.size());
  for (Segment &core : cores)
    for (size_t i = 0; i < perBlock.size(); ++i)
      if (perBlock[i].ops.contains(core.ops.front())) {
        coresOf[i].push_back(std::move(core));
        break; // the blocks are disjoint, and `core` is moved from
      }
  std::vector<std::vector<RecomputeChoice>> chain;
  for (size_t i = 0; i < perBlock.size(); ++i) {
    Recomputation all = r.analyze(perBlock[i]);
    int64_t kept = all.savedBytes();
    std::vector<RecomputeChoice> choices = {{kept, 0, 0}};
    if (!coresOf[i].empty()) {
      RecomputeChoice selective{kept, 0, 0};
      for (const Segment &core : coresOf[i]) {
        Recomputation c = r.analyze(core);
        selective.kept -= c.savedBytes();
        selective.working += c.savedBytes();
        selective.flops += c.flops();
      }
      choices.push_back(selective);
    }
    choices.push_back({0, kept, all.flops()});
    chain.push_back(std::move(choices));
  }
  std::optional<RecomputeSolution> solution = solveRecompute(chain, budget);
  if (!solution) {
    int64_t least = 0;
    for (const std::vector<RecomputeChoice> &choices : chain)
      least = std::max(least, choices.back().working);
    return step.emitError() << "recompute=budget: the layers' activations need at least "
                            << mib(least) << " (every layer recomputed from its input: "
                            << "the largest one's), more than the budget of " << mib(budget);
  }
  std::vector<Segment> chosen;
  for (size_t i = 0; i < perBlock.size(); ++i) {
    int choice = solution->choices[i];
    if (choice == int(chain[i].size()) - 1 && choice > 0)
      chosen.push_back(std::move(perBlock[i]));
    else if (choice == 1)
      for (Segment &core : coresOf[i])
        chosen.push_back(std::move(core));
  }
  return chosen;
}

struct ColoRecompute : colo::impl::ColoRecomputeBase<ColoRecompute> {
  using Base::Base;

  void runOnOperation() override {
    if (policy == RecomputePolicy::None)
      return;
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>("train_step");
    if (!step || !step.getBody().hasOneBlock()) {
      module.emitError("colo-recompute: no single-block func.func @train_step (run it after "
                       "colo-build-train-step)");
      return signalPassFailure();
    }
    auto ret = cast<func::ReturnOp>(step.front().getTerminator());
    Operation *lossOp = ret.getNumOperands() ? ret.getOperand(0).getDefiningOp() : nullptr;
    if (!lossOp) {
      step.emitError("colo-recompute: the step returns no loss computed in it");
      return signalPassFailure();
    }
    if (policy == RecomputePolicy::Budget && !(budgetMb > 0)) {
      step.emitError("recompute=budget needs a positive budget-mb (the activations' bytes)");
      return signalPassFailure();
    }
    Recomputer r(step, lossOp);
    std::vector<Segment> segments;
    if (policy == RecomputePolicy::Selective) {
      segments = attentionCores(step, r);
      if (segments.empty())
        step.emitWarning("recompute=selective recomputes attention cores, and the model has "
                         "none (no softmax between two matrix products): nothing is "
                         "recomputed (recompute=full recomputes whole layers)");
    } else {
      ModelSummary summary = summarize(module);
      const RepeatedBlocks *layers = findLayers(summary);
      if (!layers) {
        step.emitError() << "recompute=" << stringifyRecomputePolicy(policy)
                         << " recomputes repeated blocks (layers), and the model has none "
                         << "(no module paths like 'h.0', 'h.1')";
        return signalPassFailure();
      }
      segments = blocks(step, r, *layers);
      if (policy == RecomputePolicy::Budget) {
        FailureOr<std::vector<Segment>> chosen =
            withinBudget(step, r, std::move(segments), int64_t(budgetMb * double(1 << 20)));
        if (failed(chosen))
          return signalPassFailure();
        segments = std::move(*chosen);
      }
    }
    for (const Segment &segment : segments)
      if (int64_t cloned = r.recompute(segment)) {
        ++numSegments;
        numCloned += cloned;
      }
  }
};

} // namespace
