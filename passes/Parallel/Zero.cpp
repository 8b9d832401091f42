// colo-zero: ZeRO stages 1, 2 and 3 (Rajbhandari et al., 2020) on a training
// step. Instead of all-reducing every gradient (colo-data-parallel), each
// rank of the dp axis receives the average of one block of it
// (reduce-scatter), updates that block of the parameter with its block of the
// optimizer state, which is all it keeps, and the updated blocks are gathered
// back into the whole parameter (all-gather). The communicated bytes are
// those of an all-reduce; the optimizer state takes 1/dp of the memory.
// Stage 3 keeps only the block of the parameter too: it is all-gathered
// before its uses in the forward and again before those in the backward, and
// the updated block is stored as it is (1.5 times the bytes of an all-reduce).
// Under tensor parallelism all of this applies to the rank's tp block: the
// globals' shards say so (`flat_axes = ["dp"]` after the tp split).
#include "colo/Passes/Passes.h"

#include "colo/Dialect/Colo/ColoOps.h"
#include "Parallel/Mesh.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/Support/MathExtras.h"

namespace colo {
#define GEN_PASS_DEF_COLOZERO
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// One parameter's update, sharded. Its gradient and parameter are
/// flattened and zero-padded to `padded` elements (a multiple of dp), cut
/// into dp blocks of `block` elements; rank r owns block r.
struct Sharded {
  GradientOp grad;
  StringRef param;                   // the parameter global's name
  Operation *update;                 // colo.adam_update or colo.sgd_update
  SmallVector<GlobalLoadOp> states;  // loads of its optimizer state globals
  SmallVector<GlobalStoreOp> stores; // stores of the new parameter
  RankedTensorType type;             // the parameter's
  int64_t padded, block;

  RankedTensorType shardType() const {
    return RankedTensorType::get({block}, type.getElementType());
  }
  int64_t paddedBytes() const {
    return padded * ((type.getElementTypeBitWidth() + 7) / 8);
  }
};

Value reshape(OpBuilder &b, Location loc, RankedTensorType type, Value v) {
  if (v.getType() == type)
    return v;
  return ReshapeOp::create(b, loc, type, v);
}

/// `v` flattened to [padded], zeros appended where it has fewer elements.
Value flattenPadded(OpBuilder &b, Location loc, Value v, int64_t padded) {
  RankedTensorType t = tensorType(v);
  int64_t n = t.getNumElements();
  Value flat = reshape(b, loc, t.clone({n}), v);
  if (n == padded)
    return flat;
  auto padType = t.clone({padded - n});
  Value zeros = ConstantOp::create(
      b, loc, DenseElementsAttr::get(padType, b.getZeroAttr(t.getElementType())));
  return ConcatOp::create(b, loc, ValueRange{flat, zeros}, b.getI64IntegerAttr(0));
}

Value concatOrSingle(OpBuilder &b, Location loc, ArrayRef<Value> parts, int64_t axis) {
  if (parts.size() == 1)
    return parts.front();
  return ConcatOp::create(b, loc, parts, b.getI64IntegerAttr(axis));
}

/// Columns [offset, offset + width) of a [rows, *] tensor.
Value columns(OpBuilder &b, Location loc, Value v, int64_t offset, int64_t width) {
  int64_t rows = tensorType(v).getDimSize(0);
  if (tensorType(v).getDimSize(1) == width)
    return v;
  return SliceOp::create(b, loc, v, ArrayRef<int64_t>{0, offset},
                         ArrayRef<int64_t>{rows, offset + width},
                         ArrayRef<int64_t>{1, 1});
}

/// Averages one bucket's gradients `grads` (one per parameter of `bucket`)
/// with one reduce-scatter and returns the rank's block of each. Each padded
/// gradient is viewed as [dp, block] and the bucket joined along the
/// columns, so that row r, which rank r receives, holds block r of every
/// parameter: [g0 block r, g1 block r, ...].
SmallVector<Value> reduceScatter(ArrayRef<Sharded *> bucket, ArrayRef<Value> grads,
                                 MeshAxis dp, OpBuilder b) {
  Location loc = bucket.front()->grad.getLoc();
  Type element = bucket.front()->type.getElementType();
  SmallVector<Value> rows;
  int64_t width = 0;
  for (auto [s, grad] : llvm::zip(bucket, grads)) {
    Value flat = flattenPadded(b, loc, grad, s->padded);
    rows.push_back(ReshapeOp::create(
        b, loc, RankedTensorType::get({dp.size, s->block}, element), flat));
    width += s->block;
  }
  Value mine = shard::ReduceScatterOp::create(
      b, loc, RankedTensorType::get({1, width}, element), dp.grid.getSymName(), {dp.axis},
      concatOrSingle(b, loc, rows, 1), shard::ReductionKind::Average, APInt(64, 0));
  int64_t offset = 0;
  SmallVector<Value> blocks;
  for (Sharded *s : bucket) {
    Value part = columns(b, loc, mine, offset, s->block);
    offset += s->block;
    blocks.push_back(ReshapeOp::create(b, loc, s->shardType(), part));
  }
  return blocks;
}

/// The update reads the rank's block of the gradient; the marker, which
/// marks a whole gradient, goes.
void useBlock(Sharded &s, Value block) {
  s.grad.replaceAllUsesWith(block);
  s.grad.erase();
  s.grad = nullptr;
}

/// A gradient accumulated over microbatches as colo-pipeline sums them: the
/// microbatches' gradients added left to right, in order (each computed by
/// an op of `colo.micro` m), the sum scaled by 1/micro.
struct Accumulation {
  SmallVector<Value> terms; ///< microbatch m's gradient
  SmallVector<Operation *> sums;
  MulOp scale;
};

/// `grad`'s accumulation over microbatches, if it is one whose sums and
/// scale nothing else reads.
std::optional<Accumulation> accumulationOf(Value grad) {
  auto mul = grad.getDefiningOp<MulOp>();
  if (!mul || !mul->hasOneUse() || !mul.getRhs().getDefiningOp<ConstantOp>())
    return std::nullopt;
  Accumulation a;
  a.scale = mul;
  Value sum = mul.getLhs();
  auto microOf = [](Operation *op) {
    return op ? ColoDialect::MicroAttrHelper(op->getContext()).getAttr(op) : IntegerAttr();
  };
  // The sums are colo-pipeline's own adds, of no microbatch (a microbatch's
  // gradient may itself be a sum, of a tied parameter's uses).
  while (auto add = sum.getDefiningOp<AddOp>()) {
    if (microOf(add))
      break;
    if (!add->hasOneUse())
      return std::nullopt;
    a.sums.push_back(add);
    a.terms.push_back(add.getRhs());
    sum = add.getLhs();
  }
  a.terms.push_back(sum);
  std::reverse(a.terms.begin(), a.terms.end());
  if (a.terms.size() < 2)
    return std::nullopt;
  for (auto [m, term] : llvm::enumerate(a.terms))
    if (IntegerAttr micro = microOf(term.getDefiningOp()); !micro || micro.getInt() != int64_t(m))
      return std::nullopt;
  return a;
}

/// The shard of a global of which each rank keeps a flat block: of the whole
/// tensor, or, under tensor parallelism, of the rank's tp block (a block of a
/// block, which checkpoints put together again under another plan).
ShardAttr flatBlockShard(GlobalOp global, MeshAxis dp) {
  if (ShardAttr split = global.getShardAttr())
    return ShardAttr::flattenedBlock(split, "dp", dp.size);
  return ShardAttr::flattened(global.getContext(), "dp", dp.size);
}

/// The update is elementwise, so it runs unchanged on the rank's block of
/// the parameter (taken locally with all_slice), of the gradient and of the
/// optimizer state, whose globals now hold only that block.
/// With `paramSharded` (stage 3) the parameter operand already is the
/// rank's block (its load's type is changed by shardParameter).
void shardUpdate(Sharded &s, MeshAxis dp, SymbolTable &symbols, bool paramSharded) {
  OpBuilder b(s.update);
  Location loc = s.update->getLoc();
  RankedTensorType shardType = s.shardType();
  if (!paramSharded) {
    Value flat = flattenPadded(b, loc, s.update->getOperand(0), s.padded);
    s.update->setOperand(0, shard::AllSliceOp::create(b, loc, shardType, flat,
                                                      dp.grid.getSymName(), {dp.axis}, 0));
  }
  for (GlobalLoadOp load : s.states) {
    auto global = symbols.lookup<GlobalOp>(load.getGlobal());
    load.getResult().setType(shardType);
    global.setShardAttr(flatBlockShard(global, dp));
  }
  for (Value result : s.update->getResults())
    result.setType(shardType);
}

/// Gathers one bucket's updated blocks into whole parameters with one
/// all-gather (the same interleaved layout) and moves their stores after it.
void allGatherBucket(ArrayRef<Sharded *> bucket, MeshAxis dp, OpBuilder b) {
  Location loc = bucket.front()->update->getLoc();
  Type element = bucket.front()->type.getElementType();
  SmallVector<Value> rows;
  int64_t width = 0;
  for (Sharded *s : bucket) {
    rows.push_back(ReshapeOp::create(
        b, loc, RankedTensorType::get({1, s->block}, element), s->update->getResult(0)));
    width += s->block;
  }
  Value all = shard::AllGatherOp::create(
      b, loc, RankedTensorType::get({dp.size, width}, element), dp.grid.getSymName(),
      {dp.axis}, concatOrSingle(b, loc, rows, 1), APInt(64, 0));
  int64_t offset = 0;
  SmallVector<Value> params;
  for (Sharded *s : bucket) {
    Value part = columns(b, loc, all, offset, s->block);
    offset += s->block;
    Value flat = ReshapeOp::create(b, loc, s->type.clone({s->padded}), part);
    int64_t n = s->type.getNumElements();
    if (n != s->padded)
      flat = SliceOp::create(b, loc, flat, ArrayRef<int64_t>{0}, ArrayRef<int64_t>{n},
                             ArrayRef<int64_t>{1});
    params.push_back(reshape(b, loc, s->type, flat));
  }
  // Only now: a store may be the op `b` inserts before, which must stay.
  for (auto [s, param] : llvm::zip(bucket, params))
    for (GlobalStoreOp store : s->stores) {
      store.getValueMutable().assign(param);
      store->moveAfter(param.getDefiningOp());
    }
}

/// Stage 3: the whole parameter from the rank's flat block `block`: one
/// all-gather of the padded flat parameter, the padding cut, reshaped.
/// `phase` ("forward", "backward") is kept on the all-gather as
/// `colo.zero_gather`, which also keeps CSE from merging the two gathers of
/// a parameter (that would keep the whole parameter alive from the forward
/// to the backward, which is what stage 3 avoids).
Value gatherParameter(OpBuilder &b, Location loc, const Sharded &s, Value block,
                      MeshAxis dp, StringRef phase) {
  auto all = shard::AllGatherOp::create(b, loc, s.type.clone({s.padded}),
                                        dp.grid.getSymName(), {dp.axis}, block,
                                        APInt(64, 0));
  ColoDialect::ZeroGatherAttrHelper(b.getContext()).setAttr(all, b.getStringAttr(phase));
  Value flat = all;
  int64_t n = s.type.getNumElements();
  if (n != s.padded)
    flat = SliceOp::create(b, loc, flat, ArrayRef<int64_t>{0}, ArrayRef<int64_t>{n},
                           ArrayRef<int64_t>{1});
  return reshape(b, loc, s.type, flat);
}

/// Where each op of the step is: its microbatch (-1 for the step's own
/// ops) and whether it is of the backward. A microbatch's backward follows
/// its loss (the term colo-pipeline averages into the returned loss); the
/// step's backward follows the returned loss.
struct Phases {
  Operation *lossOp = nullptr;
  DenseMap<int64_t, Operation *> microLoss;

  static int64_t microOf(Operation *op) {
    IntegerAttr m = ColoDialect::MicroAttrHelper(op->getContext()).getAttr(op);
    return m ? m.getInt() : -1;
  }
  std::pair<int64_t, bool> of(Operation *at) const {
    int64_t m = microOf(at);
    Operation *loss = microLoss.lookup(m);
    if (!loss)
      loss = lossOp, m = -1;
    return {m, !loss || loss->isBeforeInBlock(at)};
  }
};

/// Stage 3: the parameter global keeps only the rank's flat block
/// (`colo.shard = {axis = "dp", parts = dp, flat}`), so every load of it
/// yields the block. The update reads the block as it is. In @train_step
/// each microbatch's forward uses (up to its loss) read one all-gather
/// placed before the first of them; its backward uses read a second one
/// placed before the first of those, so the whole parameter lives neither
/// from the forward to the backward nor from one microbatch to the next
/// (DeepSpeed's and FSDP's gathers per microbatch). That includes views of
/// it: a reshape, transpose or convert of the parameter computed in the
/// forward and read by the backward (a matmul's transposed weight) is
/// computed again from the second gather. A parameter the backward does not
/// read (a bias, an embedding table) is gathered once per microbatch. Loads
/// in other functions (@forward) are gathered right after the load. A use in
/// the optimizer part other than the parameter's own update is an error.
LogicalResult shardParameter(Sharded &s, MeshAxis dp, GlobalOp global, ModuleOp module,
                             func::FuncOp step, const Phases &phases,
                             Operation *firstUpdate) {
  StringRef param = global.getSymName();
  Block &body = step.front();
  auto checkNotOptimizer = [&](Operation *user, Operation *at) -> LogicalResult {
    if (isa<AdamUpdateOp, SgdUpdateOp, LambUpdateOp, LarsUpdateOp, GlobalStoreOp>(at) ||
        (firstUpdate && !at->isBeforeInBlock(firstUpdate)))
      return user->emitError()
             << "colo-zero: stage 3 keeps only a block of @" << param
             << " on each rank, but the optimizer part of the step reads its whole "
                "value here (only the forward and the backward may)";
    return success();
  };
  auto earliest = [](Operation *&first, Operation *at) {
    if (!first || at->isBeforeInBlock(first))
      first = at;
  };
  // One gather per microbatch and phase, the microbatch's own (colo.micro
  // also keeps CSE from merging two microbatches' gathers).
  auto gatherAt = [&](Operation *before, Value block, int64_t micro, StringRef phase) {
    OpBuilder b(before);
    Value whole = gatherParameter(b, block.getLoc(), s, block, dp, phase);
    if (micro >= 0)
      for (Operation *op = whole.getDefiningOp(); op && op != block.getDefiningOp();
           op = op->getOperand(0).getDefiningOp())
        ColoDialect::MicroAttrHelper(op->getContext()).setAttr(op, b.getI64IntegerAttr(micro));
    return whole;
  };

  SmallVector<GlobalLoadOp> loads;
  module.walk([&](GlobalLoadOp load) {
    if (load.getGlobal() == param)
      loads.push_back(load);
  });
  for (GlobalLoadOp load : loads) {
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : load->getUses())
      if (use.getOwner() != s.update || use.getOperandNumber() != 0)
        uses.push_back(&use);
    load.getResult().setType(s.shardType());
    if (uses.empty())
      continue;
    if (load->getBlock() != &body) {
      OpBuilder b(load->getContext());
      b.setInsertionPointAfter(load);
      Value whole = gatherParameter(b, load.getLoc(), s, load.getResult(), dp, "forward");
      for (OpOperand *use : uses)
        use->set(whole);
      continue;
    }

    // Direct uses, by microbatch and phase.
    using Key = std::pair<int64_t, bool>;
    std::map<Key, SmallVector<OpOperand *>> groups;
    std::map<Key, Operation *> first;
    for (OpOperand *use : uses) {
      Operation *at = body.findAncestorOpInBlock(*use->getOwner());
      if (failed(checkNotOptimizer(use->getOwner(), at)))
        return failure();
      Key key = phases.of(at);
      groups[key].push_back(use);
      earliest(first[key], at);
    }
    // Views of the parameter (reshapes, transposes, converts in the phase of
    // the uses they start from) that another phase reads (a microbatch's
    // backward, or, computed once per step, a microbatch): computed again
    // there from that phase's gather.
    struct Views {
      SmallVector<Operation *> chain;
      std::map<Key, SmallVector<OpOperand *>> readers;
    };
    std::map<Key, Views> views;
    for (auto &[key, group] : groups) {
      Views &v = views[key];
      auto isView = [&](Operation *op) {
        return op->getBlock() == &body && op->getNumOperands() == 1 &&
               op->getNumResults() == 1 && isa<ReshapeOp, TransposeOp, ConvertOp>(op);
      };
      SmallVector<Value> work;
      for (OpOperand *use : group)
        if (isView(use->getOwner()) && !llvm::is_contained(v.chain, use->getOwner())) {
          v.chain.push_back(use->getOwner());
          work.push_back(use->getOwner()->getResult(0));
        }
      while (!work.empty()) {
        for (OpOperand &use : work.pop_back_val().getUses()) {
          Operation *user = use.getOwner();
          Operation *at = body.findAncestorOpInBlock(*user);
          Key where = phases.of(at);
          if (where == key) {
            if (isView(user) && !llvm::is_contained(v.chain, user)) {
              v.chain.push_back(user);
              work.push_back(user->getResult(0));
            }
            continue;
          }
          if (failed(checkNotOptimizer(user, at)))
            return failure();
          v.readers[where].push_back(&use);
          earliest(first[where], at);
        }
      }
    }
    // One gather per phase, before its first use; the views read there
    // computed again right after it.
    std::map<Key, Value> whole;
    for (auto &[key, at] : first) {
      whole[key] =
          gatherAt(at, load.getResult(), key.first, key.second ? "backward" : "forward");
      for (OpOperand *use : groups[key])
        use->set(whole[key]);
    }
    for (auto &[from, v] : views) {
      llvm::sort(v.chain, [](Operation *x, Operation *y) { return x->isBeforeInBlock(y); });
      for (auto &[key, readers] : v.readers) {
        IRMapping map;
        map.map(whole[from], whole[key]);
        OpBuilder b(first[key]);
        for (Operation *view : v.chain)
          b.clone(*view, map);
        for (OpOperand *use : readers)
          use->set(map.lookup(use->get()));
      }
    }
  }
  global.setShardAttr(flatBlockShard(global, dp));
  return success();
}

/// Splits `params`, in order, into runs of one element type and at most
/// `limit` padded bytes (a larger parameter is a bucket of its own).
SmallVector<SmallVector<Sharded *>> buckets(ArrayRef<Sharded *> params, int64_t limit) {
  SmallVector<SmallVector<Sharded *>> result;
  int64_t bytes = 0;
  for (Sharded *s : params) {
    if (result.empty() || bytes + s->paddedBytes() > limit ||
        s->type.getElementType() != result.back().front()->type.getElementType()) {
      result.emplace_back();
      bytes = 0;
    }
    result.back().push_back(s);
    bytes += s->paddedBytes();
  }
  return result;
}

struct ColoZero : PlanPass<colo::impl::ColoZeroBase<ColoZero>> {
  using PlanPass::PlanPass;

  /// The update that reads marker `g`, checked to be one that ZeRO can run on
  /// shards; fills `s`.
  LogicalResult analyze(GradientOp g, Sharded &s, SymbolTable &symbols) {
    StringRef param = g.getParam();
    SmallPtrSet<Operation *, 2> users(llvm::from_range, g->getUsers());
    Operation *update = users.size() == 1 ? *users.begin() : nullptr;
    if (isa_and_nonnull<LambUpdateOp, LarsUpdateOp>(update))
      return update->emitError()
             << "colo-zero: optimizer " << (isa<LambUpdateOp>(update) ? "lamb" : "lars")
             << " (of @" << param
             << ") needs norms of the whole parameter; ZeRO supports adam, adamw and sgd";
    if (!isa_and_nonnull<AdamUpdateOp, SgdUpdateOp>(update) ||
        update->getOperand(1) != g.getResult())
      return g.emitError() << "ZeRO with gradient clipping or loss scaling is not supported "
                              "yet: the "
                              "gradient of @"
                           << param << " is used by more than its optimizer update";
    s.grad = g;
    s.param = param;
    s.update = update;
    s.type = g.getType();
    s.padded = llvm::alignTo(s.type.getNumElements(), dp);
    s.block = s.padded / dp;
    SmallVector<Value> states;
    if (auto adam = dyn_cast<AdamUpdateOp>(update))
      states = {adam.getExpAvg(), adam.getExpAvgSq()};
    else if (Value buf = cast<SgdUpdateOp>(update).getMomentumBuffer();
             buf != g.getResult())
      states = {buf}; // without momentum, SGD's buffer operand is the gradient
    for (Value state : states) {
      auto load = state.getDefiningOp<GlobalLoadOp>();
      auto global = load ? symbols.lookup<GlobalOp>(load.getGlobal()) : nullptr;
      auto init =
          global ? dyn_cast_if_present<DenseElementsAttr>(global.getInitialValueAttr())
                 : nullptr;
      // The state's new initial value is its splat at the block's size.
      if (!init || !init.isSplat() || !load->hasOneUse() ||
          !ColoDialect::OptimizerStateAttrHelper(global.getContext()).isAttrPresent(global))
        return update->emitError()
               << "colo-zero: the optimizer state of @" << param
               << " must be loaded once from a colo.optimizer_state global with "
                  "a splat initial value";
      s.states.push_back(load);
    }
    for (Operation *user : update->getResult(0).getUsers()) {
      auto store = dyn_cast<GlobalStoreOp>(user);
      if (!store)
        return user->emitError()
               << "colo-zero: the new value of @" << param << " may only be stored";
      s.stores.push_back(store);
    }
    if (s.stores.empty())
      return update->emitError()
             << "colo-zero: the new value of @" << param << " is not stored";
    if (stage == 3) {
      auto load = update->getOperand(0).getDefiningOp<GlobalLoadOp>();
      if (!load || load.getGlobal() != param)
        return update->emitError() << "colo-zero: stage 3 needs the update of @" << param
                                   << " to read the parameter from its global";
    }
    return success();
  }

  FailureOr<func::FuncOp> findTarget(ModuleOp module) override {
    FailureOr<func::FuncOp> found = findTrainStep(module, "colo-zero", func, dp);
    if (succeeded(found) && (stage < 1 || stage > 3)) {
      module.emitError() << "colo-zero: stage must be 1, 2 or 3, got "
                         << static_cast<int64_t>(stage);
      return failure();
    }
    return found;
  }

  /// ZeRO-2 for the gradients in `params`, accumulated over microbatches:
  /// microbatch m's gradients are bucketed in the order its backward
  /// computes them and reduce-scattered as each bucket completes; each
  /// rank adds its blocks as they arrive and scales the sum as the
  /// accumulation did. Bucketing runs per microbatch, so a reduce-scatter
  /// never waits for a later microbatch.
  void accumulateBlocks(ArrayRef<Sharded *> params,
                        DenseMap<Sharded *, Accumulation> &accumulated, MeshAxis dp,
                        int64_t limit, Block &body) {
    if (params.empty())
      return;
    size_t micro = 0;
    for (Sharded *s : params)
      micro = std::max(micro, accumulated[s].terms.size());
    DenseMap<Sharded *, Value> sum;
    auto later = [](Operation *a, Operation *b) { return a->isBeforeInBlock(b) ? b : a; };
    for (size_t m = 0; m < micro; ++m) {
      SmallVector<Sharded *> order;
      for (Sharded *s : params)
        if (accumulated[s].terms.size() > m)
          order.push_back(s);
      auto computedAt = [&](Sharded *s) {
        return body.findAncestorOpInBlock(*accumulated[s].terms[m].getDefiningOp());
      };
      llvm::stable_sort(order, [&](Sharded *a, Sharded *b) {
        return computedAt(a)->isBeforeInBlock(computedAt(b));
      });
      for (ArrayRef<Sharded *> bucket : buckets(order, limit)) {
        SmallVector<Value> grads =
            llvm::map_to_vector(bucket, [&](Sharded *s) { return accumulated[s].terms[m]; });
        Operation *last = computedAt(bucket.back());
        SmallVector<Value> blocks =
            reduceScatter(bucket, grads, dp, OpBuilder(&body, std::next(last->getIterator())));
        for (auto [s, block] : llvm::zip(bucket, blocks)) {
          Value &acc = sum[s];
          if (!acc) {
            acc = block;
            continue;
          }
          Operation *at = later(acc.getDefiningOp(), block.getDefiningOp());
          OpBuilder b(&body, std::next(at->getIterator()));
          acc = AddOp::create(b, s->grad.getLoc(), acc, block);
        }
      }
    }
    for (Sharded *s : params) {
      Accumulation &a = accumulated[s];
      Value acc = sum[s];
      OpBuilder b(&body, std::next(acc.getDefiningOp()->getIterator()));
      Operation *scale = b.clone(*a.scale.getRhs().getDefiningOp());
      Value average = MulOp::create(b, a.scale.getLoc(), acc, scale->getResult(0));
      useBlock(*s, average);
      // The whole gradients' sum is read by nothing now.
      Operation *factor = a.scale.getRhs().getDefiningOp();
      a.scale.erase();
      if (factor->use_empty())
        factor->erase();
      for (Operation *add : a.sums)
        add->erase();
    }
  }

  LogicalResult runOnTarget(ModuleOp module, func::FuncOp step) override {
    FailureOr<MeshAxis> axis = getOrCreateMeshAxis(module, "dp", dp, step);
    if (failed(axis))
      return failure();

    SmallVector<GradientOp> markers(step.getOps<GradientOp>());
    if (markers.empty()) {
      step.emitError("colo-zero: no colo.gradient ops in the step");
      return failure();
    }
    SymbolTable symbols(module);
    SmallVector<Sharded> params(markers.size());
    for (auto [g, s] : llvm::zip(markers, params))
      if (failed(analyze(g, s, symbols)))
        return failure();

    // Gradients are reduce-scattered in buckets in the order the backward
    // computes them, each as soon as its last gradient exists (as
    // colo-data-parallel's all-reduces), and parameters gathered in buckets
    // in the order they are updated.
    Block &body = step.front();
    DenseMap<Operation *, int64_t> position;
    for (auto [i, op] : llvm::enumerate(body))
      position[&op] = i;
    auto computedAt = [&](Sharded *s) -> Operation * { // null: an argument
      Operation *def = s->grad.getInput().getDefiningOp();
      return def ? body.findAncestorOpInBlock(*def) : nullptr;
    };
    auto index = [&](Operation *op) { return op ? position.lookup(op) : -1; };
    auto sortBy = [&](SmallVector<Sharded *> &order, auto at) {
      llvm::stable_sort(
          order, [&](Sharded *a, Sharded *b) { return index(at(a)) < index(at(b)); });
    };
    int64_t limit = static_cast<int64_t>(bucketMb * (1 << 20));
    auto after = [&](Operation *op) {
      return OpBuilder(&body, op ? std::next(op->getIterator()) : body.begin());
    };
    // Stages 2 and 3 under gradient accumulation: each microbatch's
    // gradients are reduce-scattered as its backward completes their bucket,
    // and the rank adds up its blocks, so that no whole gradient outlives its
    // microbatch.
    DenseMap<Sharded *, Accumulation> accumulated;
    if (stage >= 2)
      for (Sharded &s : params)
        if (std::optional<Accumulation> a = accumulationOf(s.grad.getInput()))
          accumulated[&s] = std::move(*a);
    SmallVector<Sharded *> whole, perMicro;
    for (Sharded &s : params)
      (accumulated.count(&s) ? perMicro : whole).push_back(&s);
    sortBy(whole, computedAt);
    for (ArrayRef<Sharded *> bucket : buckets(whole, limit)) {
      SmallVector<Value> grads = llvm::map_to_vector(
          bucket, [](Sharded *s) -> Value { return s->grad.getInput(); });
      SmallVector<Value> blocks =
          reduceScatter(bucket, grads, *axis, after(computedAt(bucket.back())));
      // Only now: a marker may be the op the blocks were inserted before.
      for (auto [s, block] : llvm::zip(bucket, blocks))
        useBlock(*s, block);
    }
    accumulateBlocks(perMicro, accumulated, *axis, limit, body);
    for (Sharded &s : params)
      shardUpdate(s, *axis, symbols, stage == 3);
    if (stage == 3) {
      // The forward ends with the loss (the returned value; under
      // accumulation each microbatch's with its own); the backward follows
      // it, the optimizer updates follow the backward.
      auto ret = cast<func::ReturnOp>(body.getTerminator());
      Phases phases;
      if (ret.getNumOperands() && ret.getOperand(0).getDefiningOp()) {
        phases.lossOp = body.findAncestorOpInBlock(*ret.getOperand(0).getDefiningOp());
        if (std::optional<Accumulation> losses = accumulationOf(ret.getOperand(0)))
          for (auto [m, term] : llvm::enumerate(losses->terms))
            phases.microLoss[int64_t(m)] = body.findAncestorOpInBlock(*term.getDefiningOp());
      }
      Operation *firstUpdate = nullptr;
      for (Sharded &s : params) {
        Operation *at = body.findAncestorOpInBlock(*s.update);
        if (!firstUpdate || at->isBeforeInBlock(firstUpdate))
          firstUpdate = at;
      }
      for (Sharded &s : params)
        if (failed(shardParameter(s, *axis, symbols.lookup<GlobalOp>(s.param), module, step,
                                  phases, firstUpdate)))
          return failure();
    } else {
      SmallVector<Sharded *> updated =
          llvm::map_to_vector(params, [](Sharded &s) { return &s; });
      sortBy(updated, [](Sharded *s) { return s->update; });
      for (ArrayRef<Sharded *> bucket : buckets(updated, limit))
        allGatherBucket(bucket, *axis,
                        OpBuilder(&body, std::next(bucket.back()->update->getIterator())));
    }

    finishDataParallel(step, *axis);
    ColoDialect::ZeroAttrHelper(step.getContext())
        .setAttr(step, Builder(step.getContext()).getI64IntegerAttr(stage));
    return success();
  }
};
} // namespace
