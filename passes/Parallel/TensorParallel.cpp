// colo-tensor-parallel: Megatron-LM's 1-D tensor parallelism (Shoeybi et al.,
// 2019) on @forward. A matmul of a replicated value with a trainable weight
// starts a candidate region whose output features are sharded; the split is
// followed forward, as colo-split-batch follows the batch, until matmuls that
// contract it with a weight. A region that reaches anything else stays
// replicated. The backward, derived afterwards by colo-build-train-step, gets
// its collectives from the gradient rules of colo.all_reduce_grad and
// shard.all_reduce.
#include "Parallel/Mesh.h"
#include "Parallel/Weight.h"
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/Passes.h"
#include "colo/Passes/SplitPropagation.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"

namespace colo {
#define GEN_PASS_DEF_COLOTENSORPARALLEL
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
/// How a value is divided among the ranks: along `dim`, viewed as `groups`
/// equal groups of which every rank holds its block of each (GlobalShard's
/// layout), as part of candidate region `region`.
struct Split {
  int64_t dim;
  int64_t groups;
  unsigned region;
};

/// A global to shard along dimension `dim` of what its reader sees (the
/// transpose's result for a transposed weight).
struct ShardedGlobal {
  Weight weight;
  int64_t dim;
  int64_t groups;
};

/// A replicated operand whose blocks along `dim` are all equal (a splat, a
/// broadcast), replaced by one block.
struct LocalCopy {
  OpOperand *use;
  int64_t dim;
};

/// Finds the candidate regions of a function and checks them, without
/// changing anything. Regions that share a value are merged (union-find); a
/// region fails as a whole.
class RegionFinder {
public:
  RegionFinder(func::FuncOp func, int64_t tp, const DenseSet<Operation *> &excluded,
               const DenseMap<StringAttr, int64_t> &symbolUses)
      : func(func), tp(tp), excluded(excluded), symbolUses(symbolUses) {}

  using Propagation = SplitPropagation<Split>;

  void run() {
    (void)splits.run(func.front(), [&](Operation *op, const Propagation::Carried &carried) {
      visit(op, carried);
      return success();
    });
  }

  /// The column-parallel matmuls of regions that failed.
  SmallVector<Operation *> failedEntries() {
    SmallVector<Operation *> ops;
    for (auto [r, entry] : llvm::enumerate(entries))
      if (broken[find(r)])
        ops.push_back(entry.first);
    return ops;
  }

  /// The first size that tp does not divide, per region; reported only for
  /// regions that are otherwise complete.
  SmallVector<std::pair<Operation *, std::string>> sizeErrors() {
    SmallVector<std::pair<Operation *, std::string>> errors;
    DenseSet<unsigned> seen;
    for (auto &[r, op, msg] : indivisible)
      if (seen.insert(find(r)).second)
        errors.push_back({op, msg});
    return errors;
  }

  // Results (meaningful once no region failed).
  SmallVector<std::pair<Operation *, ShardedGlobal>> entries; // by region
  SmallVector<std::pair<MatmulOp, ShardedGlobal>> rowEnds;
  SmallVector<ShardedGlobal> others; // biases and other elementwise weights
  SmallVector<LocalCopy> copies;
  Propagation splits;

private:
  unsigned find(unsigned r) {
    while (parent[r] != r)
      r = parent[r] = parent[parent[r]];
    return r;
  }
  unsigned join(unsigned a, unsigned b) {
    a = find(a), b = find(b);
    if (a != b) {
      parent[b] = a;
      broken[a] = broken[a] || broken[b];
    }
    return a;
  }
  void fail(unsigned r) { broken[find(r)] = true; }

  void visit(Operation *op, const Propagation::Carried &carried) {
    if (carried.empty()) {
      if (auto matmul = dyn_cast<MatmulOp>(op))
        startColumn(matmul);
      return;
    }
    unsigned region = carried.front().second.region;
    for (auto &[i, s] : carried)
      region = join(region, s.region);
    if (auto matmul = dyn_cast<MatmulOp>(op); matmul && endRow(matmul, carried))
      return;
    std::optional<Split> result = transfer(op, carried, region);
    if (!result)
      return fail(region);
    splits.split[op->getResult(0)] = *result;
  }

  /// A trainable global (loadedWeight) that only `v`'s one use reads and
  /// that is not sharded yet, or nullopt.
  std::optional<Weight> weightOf(Value v) {
    std::optional<Weight> w = loadedWeight(v);
    if (!w || !v.hasOneUse() || (w->transpose && !w->transpose.getInput().hasOneUse()) ||
        w->global.getShardAttr() || symbolUses.lookup(w->global.getSymNameAttr()) != 1)
      return std::nullopt;
    return w;
  }

  /// `x @ W` with x replicated and W [in, out] (or [out, in] transposed):
  /// a candidate region whose output features are sharded.
  void startColumn(MatmulOp op) {
    std::optional<Weight> w = weightOf(op.getRhs());
    if (!w || tensorType(op.getRhs()).getRank() != 2 || excluded.contains(op))
      return;
    unsigned r = parent.size();
    parent.push_back(r);
    broken.push_back(false);
    int64_t dim = tensorType(op.getResult()).getRank() - 1;
    int64_t groups = inferSliceGroups(op.getResult(), dim);
    entries.push_back({op, ShardedGlobal{*w, 1, groups}});
    splits.split[op.getResult()] = Split{dim, groups, r};
    checkDivisible(op, dim, groups, r, "the output features of a column-parallel matmul");
  }

  /// `x @ W` with x sharded along the contracted features and W a weight:
  /// each rank's product is a partial sum of the result, which is replicated
  /// once the sums are all-reduced.
  bool endRow(MatmulOp op, ArrayRef<std::pair<unsigned, Split>> carried) {
    if (carried.size() != 1 || carried.front().first != 0 ||
        carried.front().second.dim != tensorType(op.getLhs()).getRank() - 1 ||
        tensorType(op.getRhs()).getRank() != 2)
      return false;
    std::optional<Weight> w = weightOf(op.getRhs());
    if (!w)
      return false;
    rowEnds.push_back({op, ShardedGlobal{*w, 0, carried.front().second.groups}});
    return true;
  }

  /// The split of `op`'s result, or nullopt if the op cannot compute its
  /// blocks from its operands' blocks.
  std::optional<Split> transfer(Operation *op, const Propagation::Carried &carried,
                                unsigned region) {
    if (op->getNumResults() != 1 || !isa<RankedTensorType>(op->getResult(0).getType()))
      return std::nullopt;
    if (auto reshape = dyn_cast<ReshapeOp>(op))
      return transferReshape(reshape, carried.front().second);
    std::optional<DimMap> map = isa<AttentionOp>(op) ? attentionMap(cast<AttentionOp>(op))
                                                     : dimMap(op);
    if (!map)
      return std::nullopt;
    SplitStep step = splits.step(op, *map, carried);
    const CarriedSplit &c = step.carried;
    int64_t groups = carried.front().second.groups;
    if (!c || llvm::any_of(carried, [&](auto &p) { return p.second.groups != groups; }))
      return std::nullopt;
    int64_t e = c.dim;
    if (auto slice = dyn_cast<SliceOp>(op)) {
      std::optional<int64_t> g = slicedGroups(slice, carried.front().second);
      if (!g)
        return std::nullopt;
      groups = *g;
    }
    // Replicated operands that meet the split at full size: a weight (a
    // bias) is sharded with it, a splat or broadcast is cut, anything else
    // would be needed whole.
    for (auto [use, dim] : step.operands.aligned) {
      if (std::optional<Weight> w = weightOf(use->get()))
        others.push_back(ShardedGlobal{*w, dim, groups});
      else if (isCuttable(use->get(), dim))
        copies.push_back(LocalCopy{use, dim});
      else
        return std::nullopt;
    }
    checkDivisible(op, e, groups, region, "a value of a tensor-parallel region");
    return Split{e, groups, region};
  }

  /// Attention on sharded heads: query, key and value all split along their
  /// heads (dimension 1), which keeps grouped-query attention's pairing of
  /// query and key/value heads since tp divides both counts.
  std::optional<DimMap> attentionMap(AttentionOp op) {
    DimMap m(3, SmallVector<int64_t>{kMixed, 1, kMixed, kMixed});
    for (Value v : {op.getQuery(), op.getKey(), op.getValue()}) {
      auto it = splits.split.find(v);
      if (it == splits.split.end() || it->second.dim != 1 || it->second.groups != 1)
        return std::nullopt;
    }
    if (Value mask = op.getMask()) {
      SmallVector<int64_t> mm;
      for (int64_t i = 0, r = tensorType(mask).getRank(); i < r; ++i)
        mm.push_back(4 - r + i == 1 ? 1 : kMixed);
      m.push_back(mm);
    }
    return m;
  }

  /// A reshape keeps the split where reshapeGroupedSplit finds it. Heads
  /// merged with the batch, as the dynamo exporter's attention does, become
  /// such groups, and are split off again.
  std::optional<Split> transferReshape(ReshapeOp op, Split s) {
    std::optional<std::pair<int64_t, int64_t>> e =
        reshapeGroupedSplit(tensorType(op.getInput()).getShape(), s.dim, s.groups,
                            op.getType().getShape());
    if (!e)
      return std::nullopt;
    checkDivisible(op, e->first, e->second, s.region,
                   "the heads the sharded features are split into (tp must "
                   "divide the number of heads and of key/value heads)");
    return Split{e->first, e->second, s.region};
  }

  /// A slice along the split must take whole groups; the result holds as
  /// many groups as it takes.
  std::optional<int64_t> slicedGroups(SliceOp op, Split s) {
    int64_t size = tensorType(op.getInput()).getDimSize(s.dim);
    int64_t start = op.getStart()[s.dim], limit = op.getLimit()[s.dim];
    if (start == 0 && limit == size && op.getStride()[s.dim] == 1)
      return s.groups;
    int64_t piece = size / s.groups;
    if (op.getStride()[s.dim] != 1 || start % piece || limit % piece)
      return std::nullopt;
    return (limit - start) / piece;
  }

  /// Whether every block of `v` along `dim` is the same: a splat constant,
  /// or a broadcast along `dim`.
  static bool isCuttable(Value v, int64_t dim) {
    if (auto c = v.getDefiningOp<ConstantOp>()) {
      auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
      return dense && dense.isSplat();
    }
    if (auto bc = v.getDefiningOp<BroadcastToOp>()) {
      int64_t from = dim - (tensorType(v).getRank() - tensorType(bc.getInput()).getRank());
      return from < 0 || tensorType(bc.getInput()).getDimSize(from) == 1;
    }
    return false;
  }

  void checkDivisible(Operation *op, int64_t dim, int64_t groups, unsigned region,
                      StringRef what) {
    RankedTensorType t = tensorType(op->getResult(0));
    int64_t size = t.getDimSize(dim);
    if (size % (groups * tp) == 0)
      return;
    std::string msg;
    llvm::raw_string_ostream os(msg);
    os << "colo-tensor-parallel: tp = " << tp << " does not divide dimension " << dim
       << " (size " << size;
    if (groups > 1)
      os << ", in " << groups << " groups";
    os << ") of " << t << ", the result of " << op->getName();
    // The CLI prints the message alone: name the model's node.
    if (auto name = dyn_cast<NameLoc>(op->getLoc()))
      os << " '" << name.getName().getValue() << "'";
    os << ": " << what;
    indivisible.push_back({region, op, msg});
  }

  func::FuncOp func;
  int64_t tp;
  const DenseSet<Operation *> &excluded;
  const DenseMap<StringAttr, int64_t> &symbolUses;
  SmallVector<unsigned> parent;
  SmallVector<bool> broken;
  SmallVector<std::tuple<unsigned, Operation *, std::string>> indivisible;
};

/// Rewrites the function for the regions `f` found (none of them failed).
class Sharder {
public:
  Sharder(RegionFinder &f, MeshAxis axis, int64_t tp) : f(f), axis(axis), tp(tp) {}

  LogicalResult run(func::FuncOp func) {
    for (auto &[op, g] : f.entries)
      shardGlobal(g);
    for (auto &[op, g] : f.rowEnds)
      shardGlobal(g);
    for (ShardedGlobal &g : f.others)
      shardGlobal(g);
    DenseMap<Operation *, SmallVector<LocalCopy *>> copiesOf;
    for (LocalCopy &c : f.copies)
      copiesOf[c.use->getOwner()].push_back(&c);
    for (Operation &op : func.front()) {
      for (LocalCopy *c : copiesOf.lookup(&op))
        c->use->set(localCopy(c->use->get(), c->dim));
      if (failed(localize(&op)))
        return failure();
    }
    for (Operation *op : replaced)
      if (op->use_empty())
        op->erase();
    wrapInputs();
    reduceOutputs();
    return success();
  }

private:
  void shardGlobal(ShardedGlobal g) {
    GlobalOp global = g.weight.global;
    Builder b(global.getContext());
    // The dimension of the global itself, before any transpose.
    int64_t dim = g.weight.transpose ? 1 - g.dim : g.dim;
    global.setShardAttr(ShardAttr::split(b.getContext(), global.getTensorType().getRank(), dim,
                                         "tp", tp, std::max<int64_t>(g.groups, 1)));
    RankedTensorType local = localType(global);
    g.weight.load.getResult().setType(local);
    if (TransposeOp t = g.weight.transpose)
      t.getResult().setType(RankedTensorType::get({local.getDimSize(1), local.getDimSize(0)},
                                                  local.getElementType()));
  }

  /// Gives a sharded result its block's type; operands already have theirs.
  LogicalResult localize(Operation *op) {
    if (auto slice = dyn_cast<SliceOp>(op))
      if (auto it = f.splits.split.find(slice.getInput()); it != f.splits.split.end()) {
        int64_t d = it->second.dim;
        SmallVector<int64_t> start(slice.getStart()), limit(slice.getLimit());
        start[d] /= tp;
        limit[d] /= tp;
        slice.setStart(start);
        slice.setLimit(limit);
      }
    if (op->getNumResults() != 1)
      return success();
    auto it = f.splits.split.find(op->getResult(0));
    if (it == f.splits.split.end())
      return success();
    RankedTensorType whole = tensorType(op->getResult(0));
    RankedTensorType local =
        withDim(whole, it->second.dim, whole.getDimSize(it->second.dim) / tp);
    if (failed(verifyLocalType(op, local, "colo-tensor-parallel")))
      return failure();
    op->getResult(0).setType(local);
    return success();
  }

  /// The block of a splat or broadcast that all ranks share.
  Value localCopy(Value v, int64_t dim) {
    auto key = std::make_pair(v, dim);
    if (Value copy = copies.lookup(key))
      return copy;
    RankedTensorType t = tensorType(v);
    RankedTensorType local = withDim(t, dim, t.getDimSize(dim) / tp);
    OpBuilder b(v.getContext());
    b.setInsertionPointAfterValue(v);
    Value copy;
    if (auto c = v.getDefiningOp<ConstantOp>())
      copy = ConstantOp::create(b, c.getLoc(),
                                cast<DenseElementsAttr>(c.getValue()).resizeSplat(local));
    else
      copy = BroadcastToOp::create(b, v.getLoc(), local,
                                   v.getDefiningOp<BroadcastToOp>().getInput());
    replaced.insert(v.getDefiningOp());
    return copies[key] = copy;
  }

  /// One colo.all_reduce_grad per distinct input of the column-parallel
  /// matmuls: regions reading the same value sum their gradients at once.
  void wrapInputs() {
    GradientSums sums(axis);
    for (auto &[op, g] : f.entries) {
      auto matmul = cast<MatmulOp>(op);
      matmul.getLhsMutable().assign(sums.of(matmul.getLhs()));
    }
  }

  void reduceOutputs() {
    for (auto &[matmul, g] : f.rowEnds) {
      OpBuilder b(matmul);
      b.setInsertionPointAfter(matmul);
      auto sum = shard::AllReduceOp::create(b, matmul.getLoc(), matmul.getResult(),
                                            axis.grid.getSymName(), {axis.axis},
                                            shard::ReductionKind::Sum);
      matmul.getResult().replaceAllUsesExcept(sum.getResult(), sum);
    }
  }

  RegionFinder &f;
  MeshAxis axis;
  int64_t tp;
  DenseMap<std::pair<Value, int64_t>, Value> copies;
  llvm::SetVector<Operation *> replaced;
};

struct ColoTensorParallel : SplittingPass<colo::impl::ColoTensorParallelBase<ColoTensorParallel>> {
  using SplittingPass::SplittingPass;
  using Done = ColoDialect::TensorParallelAttrHelper;
  PlanTarget target() override { return {"tp", tp, "shard", true, Done::getNameStr(), "tensor-parallel"}; }

  LogicalResult runOnTarget(ModuleOp module, func::FuncOp f) override {
    DenseMap<StringAttr, int64_t> symbolUses;
    if (auto uses = SymbolTable::getSymbolUses(&module.getBodyRegion()))
      for (const SymbolTable::SymbolUse &use : *uses)
        ++symbolUses[use.getSymbolRef().getRootReference()];

    // A failed region's matmuls are replicated, which changes what is
    // replicated downstream: find the regions again until none fails.
    DenseSet<Operation *> excluded;
    std::optional<RegionFinder> finder;
    while (true) {
      finder.emplace(f, tp, excluded, symbolUses);
      finder->run();
      SmallVector<Operation *> dropped = finder->failedEntries();
      if (dropped.empty())
        break;
      excluded.insert(dropped.begin(), dropped.end());
    }
    numReplicated = excluded.size();
    SmallVector<std::pair<Operation *, std::string>> errors = finder->sizeErrors();
    for (auto &[op, msg] : errors)
      op->emitError() << msg;
    if (!errors.empty())
      return failure();
    if (finder->entries.empty()) {
      f.emitWarning() << "colo-tensor-parallel found no region to shard: every rank "
                         "computes the whole function";
      return success();
    }

    FailureOr<MeshAxis> axis = getOrCreateMeshAxis(module, "tp", tp, f);
    if (failed(axis) || failed(Sharder(*finder, *axis, tp).run(f)))
      return failure();
    numColumn = finder->entries.size();
    numRow = finder->rowEnds.size();
    ColoDialect::TensorParallelAttrHelper(&getContext())
        .setAttr(f, IntegerAttr::get(IntegerType::get(&getContext(), 64), tp));
    return success();
  }
};
} // namespace
