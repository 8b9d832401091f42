// colo-ulysses: DeepSpeed-Ulysses sequence parallelism (Jacobs et al., 2023)
// on @forward. Every rank of the mesh's `sp` axis holds a contiguous block of
// s / sp positions of every sample: the function's [b, s, ...] inputs are
// cut to the rank's positions and "dimension d carries the sequence" is
// propagated op by op (the tables of passes/DimensionMap.cpp), so per-token
// ops (embeddings, norms, projections, MLPs, residual adds) run on the rank's
// tokens. Before each colo.attention an all-to-all turns the q, k and v
// sequence blocks [b, h, s/sp, d] into head blocks [b, h/sp, s, d]: attention
// runs on whole sequences and the rank's heads (the causal mask needs no
// change), and another all-to-all turns its output back. Replicated values
// aligned with the sequence (position embeddings, rotary tables) are cut to
// the rank's positions with shard.all_slice (whose gradient is an
// all-gather); replicated values a split op reads whole (weights, norm
// scales, embedding tables) go through colo.all_reduce_grad, so their
// gradients, to which each rank's tokens contribute, are summed over sp. The
// LM head and the results read the all-gathered sequence (the gradient is the
// rank's slice), so the loss is the replicated one.
//
// The runtime's collectives cut and join tensors along their outermost
// non-unit dimension, and its all-to-all splits and concatenates along the
// same one: the pass brings the sp blocks outermost with reshapes and
// transposes around each collective.
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/SplitPropagation.h"
#include "Parallel/Mesh.h"
#include "colo/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace colo {
#define GEN_PASS_DEF_COLOULYSSES
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
/// How a value is split: dimension `dim` of its global type is laid out as
/// [outer, s, inner] (the sequence s with the factors merged with it by
/// reshapes, such as the batch in [b*s, h]); the rank holds
/// [outer, s/sp, inner].
struct Split {
  RankedTensorType global;
  int64_t dim, outer, inner;
};

class Splitter {
public:
  Splitter(func::FuncOp func, MeshAxis axis, int64_t &numAllToAll, int64_t &numGathered,
           int64_t &numSummed)
      : func(func), axis(axis), n(axis.size), numAllToAll(numAllToAll),
        numGathered(numGathered), numSummed(numSummed), sums(axis) {}

  LogicalResult run() {
    Block &body = func.front();
    findHeads();
    // The inputs [b, s, ...] are whole on every rank; each reads its block.
    for (BlockArgument arg : body.getArguments()) {
      auto t = dyn_cast<RankedTensorType>(arg.getType());
      if (!t || t.getRank() < 2 || arg.use_empty())
        continue;
      if (t.getDimSize(1) % n != 0) {
        Operation *user = *arg.getUsers().begin();
        return user->emitError() << "colo-ulysses: sp = " << n
                                 << " does not divide the sequence length "
                                 << t.getDimSize(1) << " (dimension 1 of argument #"
                                 << arg.getArgNumber() << ", " << t << ")"
                                 << nodeName(user);
      }
      OpBuilder b = OpBuilder::atBlockBegin(&body);
      Value local = cut(b, arg, 1);
      arg.replaceAllUsesExcept(local, producers(local, arg));
      splits.split[local] = Split{t, 1, 1, 1};
    }
    if (failed(splits.run(body, [&](Operation *op, const Propagation::Carried &carried) {
          return created.contains(op) ? success() : visit(op, carried);
        })))
      return failure();
    numSummed = sums.size();
    return success();
  }

private:
  using Propagation = SplitPropagation<Split>;

  static std::string nodeName(Operation *op) {
    if (auto name = dyn_cast<NameLoc>(op->getLoc()))
      return (" at '" + name.getName().getValue() + "'").str();
    return "";
  }

  /// The ops between `from` and `to` (the reshapes and collectives of cut).
  SmallPtrSet<Operation *, 4> producers(Value to, Value from) {
    SmallPtrSet<Operation *, 4> ops;
    for (Operation *op = to.getDefiningOp(); op; op = op->getOperand(0).getDefiningOp()) {
      ops.insert(op);
      if (op->getOperand(0) == from)
        break;
    }
    return ops;
  }

  /// The LM head: a matmul whose result is returned (through reshapes). It
  /// reads all tokens, so the logits are whole and the loss replicated.
  void findHeads() {
    auto ret = cast<func::ReturnOp>(func.front().getTerminator());
    for (Value v : ret.getOperands()) {
      Operation *def = v.getDefiningOp();
      while (def && isa<ReshapeOp, ConvertOp>(def))
        def = def->getOperand(0).getDefiningOp();
      if (def && isa<MatmulOp>(def))
        heads.insert(def);
    }
  }

  template <typename OpTy, typename... Args> Value make(OpBuilder &b, Args &&...args) {
    auto op = OpTy::create(b, std::forward<Args>(args)...);
    created.insert(op);
    return op;
  }

  Value reshape(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
    return make<ReshapeOp>(b, loc, tensorType(v).clone(shape), v);
  }
  Value transpose(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> perm) {
    return make<TransposeOp>(b, loc, v, perm);
  }
  /// Moves dimension `d` to the front, or back from the front.
  static SmallVector<int64_t> toFront(int64_t rank, int64_t d) {
    SmallVector<int64_t> p{d};
    for (int64_t i = 0; i < rank; ++i)
      if (i != d)
        p.push_back(i);
    return p;
  }
  static SmallVector<int64_t> fromFront(int64_t rank, int64_t d) {
    SmallVector<int64_t> p;
    for (int64_t i = 1; i <= d; ++i)
      p.push_back(i);
    p.push_back(0);
    for (int64_t i = d + 1; i < rank; ++i)
      p.push_back(i);
    return p;
  }
  static bool outermost(RankedTensorType t, int64_t d) {
    return llvm::all_of(t.getShape().take_front(d), [](int64_t s) { return s == 1; });
  }

  /// The rank's block of `v` along `d` (contiguous: 1/sp of the dimension).
  Value cut(OpBuilder &b, Value v, int64_t d, std::optional<Location> named = {}) {
    Location loc = named.value_or(v.getLoc());
    RankedTensorType t = tensorType(v);
    bool move = !outermost(t, d);
    Value in = move ? transpose(b, loc, v, toFront(t.getRank(), d)) : v;
    int64_t at = move ? 0 : d;
    RankedTensorType it = tensorType(in);
    Value s = make<shard::AllSliceOp>(b, loc, withDim(it, at, it.getDimSize(at) / n), in,
                                      axis.grid.getSymName(), ArrayRef<int16_t>{axis.axis},
                                      at);
    return move ? transpose(b, loc, s, fromFront(t.getRank(), d)) : s;
  }

  /// A replicated value's block of positions, made once.
  Value slice(Value v, int64_t d) {
    Value &s = slices[{v, d}];
    if (!s) {
      OpBuilder b(v.getContext());
      b.setInsertionPointAfterValue(v);
      // A table the layers share (Llama's rotary cos and sin, loaded in the
      // first layer) is sliced as part of no layer, so that the layers stay
      // alike: colo-recompute and the planner find them by that.
      std::optional<Location> loc;
      if (auto load = v.getDefiningOp<GlobalLoadOp>())
        loc = NameLoc::get(b.getStringAttr(load.getGlobal() + "/all_slice"));
      s = cut(b, v, d, loc);
    }
    return s;
  }

  /// All tokens of a split value, made once after it.
  Value gather(Value v) {
    Value &g = gathers[v];
    if (g)
      return g;
    Split sp = splits.split.lookup(v);
    OpBuilder b(v.getContext());
    b.setInsertionPointAfterValue(v);
    Location loc = v.getLoc();
    RankedTensorType t = tensorType(v);
    // [.., outer, s/sp * inner, ..]: the blocks of positions are contiguous
    // along dimension `at`.
    SmallVector<int64_t> shape(t.getShape());
    int64_t at = sp.dim;
    Value x = v;
    if (sp.outer > 1) {
      shape[at] = sp.outer;
      shape.insert(shape.begin() + at + 1, t.getDimSize(sp.dim) / sp.outer);
      ++at;
      x = reshape(b, loc, x, shape);
    }
    RankedTensorType xt = tensorType(x);
    bool move = !outermost(xt, at);
    if (move)
      x = transpose(b, loc, x, toFront(xt.getRank(), at));
    int64_t g0 = move ? 0 : at;
    RankedTensorType gt = tensorType(x);
    x = make<shard::AllGatherOp>(b, loc, withDim(gt, g0, gt.getDimSize(g0) * n),
                                 axis.grid.getSymName(), ArrayRef<int16_t>{axis.axis}, x,
                                 APInt(64, g0));
    if (move)
      x = transpose(b, loc, x, fromFront(xt.getRank(), at));
    if (sp.outer > 1)
      x = reshape(b, loc, x, sp.global.getShape());
    ++numGathered;
    return g = x;
  }

  /// The op reads all tokens of its split operands.
  LogicalResult whole(Operation *op) {
    for (OpOperand &use : op->getOpOperands())
      if (splits.isSplit(use.get()))
        use.set(gather(use.get()));
    return success();
  }

  LogicalResult visit(Operation *op, const Propagation::Carried &carried) {
    if (carried.empty())
      return success();
    if (isa<func::ReturnOp>(op) || heads.contains(op))
      return whole(op);
    if (auto attention = dyn_cast<AttentionOp>(op))
      return visitAttention(attention);
    if (auto r = dyn_cast<ReshapeOp>(op))
      return succeeded(visitReshape(r)) ? success() : whole(op);
    FailureOr<bool> done = visitTokenWise(op, carried);
    if (failed(done))
      return failure();
    return *done ? success() : whole(op);
  }

  void setSplit(Value result, Split s) {
    result.setType(withDim(s.global, s.dim, s.global.getDimSize(s.dim) / n));
    splits.split[result] = s;
  }

  /// The sequence factor must stay whole in one result dimension, with the
  /// same elements before it and within it.
  LogicalResult visitReshape(ReshapeOp op) {
    Split in = splits.split.lookup(op.getInput());
    RankedTensorType out = op.getType();
    ArrayRef<int64_t> ins = in.global.getShape();
    int64_t seq = ins[in.dim] / (in.outer * in.inner);
    int64_t before = in.outer, after = in.inner;
    for (int64_t i = 0; i < in.dim; ++i)
      before *= ins[i];
    for (int64_t i = in.dim + 1; i < in.global.getRank(); ++i)
      after *= ins[i];
    int64_t outBefore = 1;
    for (int64_t e = 0; e < out.getRank(); outBefore *= out.getDimSize(e), ++e) {
      if (before % outBefore != 0)
        break;
      int64_t outer = before / outBefore, size = out.getDimSize(e);
      if (size % (outer * seq) != 0)
        continue;
      int64_t inner = size / (outer * seq), outAfter = inner;
      for (int64_t i = e + 1; i < out.getRank(); ++i)
        outAfter *= out.getDimSize(i);
      if (outAfter != after)
        continue;
      setSplit(op.getResult(), Split{out, e, outer, inner});
      return success();
    }
    return failure();
  }

  /// Ops whose dimension table carries the sequence dimension to a result
  /// dimension run on the rank's tokens: true if this one does.
  FailureOr<bool> visitTokenWise(Operation *op, const Propagation::Carried &carried) {
    if (op->getNumResults() != 1 || !isa<RankedTensorType>(op->getResult(0).getType()))
      return false;
    std::optional<DimMap> map = dimMap(op);
    // Tensor parallelism's entries and sums (colo-tensor-parallel ran
    // first) combine the tp ranks' parts of the same tokens: every
    // dimension stays where it is.
    if (isa<AllReduceGradOp, shard::AllReduceOp>(op)) {
      int64_t rank = tensorType(op->getResult(0)).getRank();
      map = DimMap{llvm::to_vector(llvm::seq<int64_t>(0, rank))};
    }
    if (!map)
      return false;
    const Split *from = &carried.back().second;
    if (llvm::any_of(carried, [&](auto &c) {
          return c.second.outer != from->outer || c.second.inner != from->inner;
        }))
      return false;
    SplitStep step = splits.step(op, *map, carried);
    if (!step.carried)
      return false;
    int64_t e = step.carried.dim;
    RankedTensorType global = tensorType(op->getResult(0));
    if (global.getDimSize(e) != from->global.getDimSize(from->dim))
      return false;
    // Aligned with the positions (position embeddings, rotary tables):
    // the rank's block, if contiguous.
    for (auto [use, d] : step.operands.aligned)
      if (tensorType(use->get()).getDimSize(d) != global.getDimSize(e) || from->outer != 1)
        return false;
    if (auto s = dyn_cast<SliceOp>(op)) {
      int64_t d = from->dim;
      if (s.getStart()[d] != 0 || s.getStride()[d] != 1 ||
          s.getLimit()[d] != from->global.getDimSize(d))
        return false;
      SmallVector<int64_t> limit(s.getLimit());
      limit[d] /= n;
      s.setLimit(limit);
    }
    for (auto [use, d] : step.operands.aligned)
      use->set(slice(use->get(), d));
    sums.sumGradients(step.operands.whole);
    if (failed(splits.setLocal(op, e, n, Split{global, e, from->outer, from->inner},
                               "colo-ulysses")))
      return failure();
    return true;
  }

  /// Sequence blocks [b, h, s/sp, d] of q, k and v become head blocks
  /// [b, h/sp, s, d]; the output goes back.
  LogicalResult visitAttention(AttentionOp op) {
    for (Value v : {op.getQuery(), op.getKey(), op.getValue()}) {
      auto it = splits.split.find(v);
      if (it == splits.split.end() || it->second.dim != 2 || it->second.outer != 1 ||
          it->second.inner != 1)
        return whole(op);
    }
    for (Value v : {op.getQuery(), op.getKey()}) {
      int64_t heads = splits.split.lookup(v).global.getDimSize(1);
      if (heads % n != 0)
        return op.emitError() << "colo-ulysses: sp = " << n << " does not divide the "
                              << heads << (v == op.getQuery() ? " query" : " key/value")
                              << " heads of " << splits.split.lookup(v).global << nodeName(op)
                              << ": Ulysses gives each rank heads / sp whole heads";
    }
    if (Value mask = op.getMask()) {
      if (splits.isSplit(mask))
        op.getMaskMutable().assign(gather(mask));
      RankedTensorType mt = tensorType(op.getMask());
      if (mt.getRank() == 4 && mt.getDimSize(1) != 1)
        return op.emitError() << "colo-ulysses: the attention mask " << mt
                              << " differs between heads" << nodeName(op)
                              << " (not implemented: each rank computes heads / sp heads)";
    }
    OpBuilder b(op);
    for (OpOperand &use : op->getOpOperands().take_front(3))
      use.set(toHeads(b, use.get()));
    RankedTensorType global = op.getType();
    op.getResult().setType(withDim(global, 1, global.getDimSize(1) / n));
    b.setInsertionPointAfter(op);
    Value back = toSequence(b, op.getResult());
    op.getResult().replaceAllUsesExcept(back, producers(back, op.getResult()));
    splits.split[back] = Split{global, 2, 1, 1};
    return success();
  }

  Value allToAll(OpBuilder &b, Location loc, Value v) {
    ++numAllToAll;
    return make<shard::AllToAllOp>(b, loc, v.getType(), axis.grid.getSymName(),
                                   ArrayRef<int16_t>{axis.axis}, v, APInt(64, 0),
                                   APInt(64, 0));
  }

  /// [b, h, s/sp, d] -> [sp, b, h/sp, s/sp, d] -> all-to-all -> [b, h/sp, s, d].
  Value toHeads(OpBuilder &b, Value v) {
    Location loc = v.getLoc();
    ArrayRef<int64_t> s = tensorType(v).getShape();
    int64_t h = s[1] / n;
    Value x = reshape(b, loc, v, {s[0], n, h, s[2], s[3]});
    x = transpose(b, loc, x, {1, 0, 2, 3, 4});
    x = allToAll(b, loc, x);
    x = transpose(b, loc, x, {1, 2, 0, 3, 4});
    return reshape(b, loc, x, {s[0], h, s[2] * n, s[3]});
  }

  /// [b, h/sp, s, d] -> [sp, b, h/sp, s/sp, d] -> all-to-all -> [b, h, s/sp, d].
  Value toSequence(OpBuilder &b, Value v) {
    Location loc = v.getLoc();
    ArrayRef<int64_t> s = tensorType(v).getShape();
    int64_t t = s[2] / n;
    Value x = reshape(b, loc, v, {s[0], s[1], n, t, s[3]});
    x = transpose(b, loc, x, {2, 0, 1, 3, 4});
    x = allToAll(b, loc, x);
    x = transpose(b, loc, x, {1, 0, 2, 3, 4});
    return reshape(b, loc, x, {s[0], s[1] * n, t, s[3]});
  }

  func::FuncOp func;
  MeshAxis axis;
  int64_t n;
  int64_t &numAllToAll, &numGathered, &numSummed;
  Propagation splits;
  DenseMap<std::pair<Value, int64_t>, Value> slices;
  DenseMap<Value, Value> gathers;
  GradientSums sums;
  SmallPtrSet<Operation *, 8> heads;
  DenseSet<Operation *> created;
};

struct ColoUlysses : SplittingPass<colo::impl::ColoUlyssesBase<ColoUlysses>> {
  using SplittingPass::SplittingPass;
  using Done = ColoDialect::UlyssesAttrHelper;
  PlanTarget target() override { return {"sp", sp, "split", true, Done::getNameStr(), "split over sp"}; }

  LogicalResult runOnTarget(ModuleOp module, func::FuncOp f) override {
    FailureOr<MeshAxis> axis = getOrCreateMeshAxis(module, "sp", sp, f);
    int64_t allToAll = 0, gathered = 0, summed = 0;
    if (failed(axis) ||
        failed(Splitter(f, *axis, allToAll, gathered, summed).run()))
      return failure();
    numAllToAll = allToAll;
    numGathered = gathered;
    numSummed = summed;
    ColoDialect::UlyssesAttrHelper(&getContext())
        .setAttr(f, IntegerAttr::get(IntegerType::get(&getContext(), 64), sp));
    return success();
  }
};
} // namespace
