// colo-recompute: forward activations recomputed right before their backward
// instead of kept from the forward (full: each repeated block from its
// input; selective: the attention cores).
#include "colo/Analysis/ModelSummary.h"
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

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

  /// Clones what `segment` must recompute before its backward; returns the
  /// number of ops cloned.
  int64_t recompute(const Segment &segment, StringAttr label) {
    // Values that forward ops outside the segment read (or the step
    // returns) stay; the others that the backward reads are recomputed.
    auto isBoundary = [&](Value v) {
      return llvm::any_of(v.getUsers(), [&](Operation *user) {
        return !segment.ops.contains(user) && !isBackward(user) && order.count(user);
      });
    };
    llvm::SetVector<Value> saved;
    Operation *firstUse = nullptr;
    for (Operation *op : segment.ops)
      for (Value v : op->getResults()) {
        if (isBoundary(v))
          continue;
        for (Operation *user : v.getUsers())
          if (isBackward(user)) {
            saved.insert(v);
            if (!firstUse || order.lookup(user) < order.lookup(firstUse))
              firstUse = user;
          }
      }
    if (saved.empty())
      return 0;

    // The segment's ops those values need, back to its inputs and kept values.
    llvm::DenseSet<Operation *> slice;
    SmallVector<Operation *> work;
    for (Value v : saved)
      work.push_back(v.getDefiningOp());
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (!slice.insert(op).second)
        continue;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && segment.ops.contains(def) && !isBoundary(operand))
          work.push_back(def);
    }

    OpBuilder b(firstUse);
    IRMapping map;
    int64_t cloned = 0;
    for (Operation *op : segment.ops)
      if (slice.contains(op)) {
        b.clone(*op, map)->setAttr(ColoDialect::RecomputedAttrHelper::getNameStr(), label);
        ++cloned;
      }
    // Every backward reader comes at or after the first, where the clones are.
    for (Value v : saved)
      v.replaceUsesWithIf(map.lookup(v),
                          [&](OpOperand &use) { return isBackward(use.getOwner()); });
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
    Operation *op = softmax;
    ops.insert(op);
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

/// Each repeated block of the model (its layers), from its input.
FailureOr<std::vector<Segment>> blocks(ModuleOp module, func::FuncOp step,
                                       const Recomputer &r) {
  ModelSummary summary = summarize(module);
  const RepeatedBlocks *layers = findLayers(summary);
  if (!layers)
    return step.emitError("recompute=full recomputes each repeated block (layer), and "
                          "the model has none (no module paths like 'h.0', 'h.1')");
  std::map<int64_t, Segment> byBlock;
  for (Operation &op : step.front())
    if (r.isForward(&op) && recomputable(&op))
      if (std::optional<int64_t> i = layers->blockOf(modulePath(op.getLoc()))) {
        Segment &segment = byBlock[*i];
        segment.label = layers->path(*i);
        segment.ops.insert(&op);
      }
  std::vector<Segment> segments;
  for (auto &[i, segment] : byBlock)
    segments.push_back(std::move(segment));
  return segments;
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
    Recomputer r(step, lossOp);
    std::vector<Segment> segments;
    if (policy == RecomputePolicy::Selective) {
      segments = attentionCores(step, r);
    } else {
      FailureOr<std::vector<Segment>> found = blocks(module, step, r);
      if (failed(found))
        return signalPassFailure();
      segments = std::move(*found);
    }
    for (const Segment &segment : segments)
      if (int64_t cloned = r.recompute(segment, StringAttr::get(&getContext(), segment.label))) {
        ++numSegments;
        numCloned += cloned;
      }
  }
};

} // namespace
