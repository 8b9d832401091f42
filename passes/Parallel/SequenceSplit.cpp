// The sequence blocks colo-ulysses and colo-ring-attention share
// (SequenceSplit.h): the cut of the inputs, the propagation through
// per-token ops, the gathers and the gradient sums.
#include "Parallel/SequenceSplit.h"

using namespace mlir;
using namespace colo;

namespace {
/// Moves dimension `d` to the front, or back from the front.
SmallVector<int64_t> toFront(int64_t rank, int64_t d) {
  SmallVector<int64_t> p{d};
  for (int64_t i = 0; i < rank; ++i)
    if (i != d)
      p.push_back(i);
  return p;
}
SmallVector<int64_t> fromFront(int64_t rank, int64_t d) {
  SmallVector<int64_t> p;
  for (int64_t i = 1; i <= d; ++i)
    p.push_back(i);
  p.push_back(0);
  for (int64_t i = d + 1; i < rank; ++i)
    p.push_back(i);
  return p;
}
bool outermost(RankedTensorType t, int64_t d) {
  return llvm::all_of(t.getShape().take_front(d), [](int64_t s) { return s == 1; });
}
} // namespace

SequenceSplitter::SequenceSplitter(func::FuncOp func, MeshAxis axis, StringRef pass,
                                   StringRef option, bool zigzag)
    : func(func), axis(axis), n(axis.size), pass(pass.str()), option(option.str()), zigzag(zigzag),
      sums(axis) {}

LogicalResult SequenceSplitter::run() {
  Block &body = func.front();
  findHeads();
  // The inputs [b, s, ...] are whole on every rank; each reads its block.
  for (BlockArgument arg : body.getArguments()) {
    auto t = dyn_cast<RankedTensorType>(arg.getType());
    if (!t || t.getRank() < 2 || arg.use_empty())
      continue;
    int64_t parts = zigzag ? 2 * n : n;
    if (t.getDimSize(1) % parts != 0) {
      Operation *user = *arg.getUsers().begin();
      return user->emitError() << pass << ": " << option << " = " << n
                               << (zigzag ? " in zigzag order (2 * " + option + " chunks)"
                                          : std::string())
                               << " does not divide the sequence length " << t.getDimSize(1)
                               << " (dimension 1 of argument #" << arg.getArgNumber() << ", " << t
                               << ")" << nodeName(user);
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

std::string SequenceSplitter::nodeName(Operation *op) {
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    return (" at '" + name.getName().getValue() + "'").str();
  return "";
}

SmallPtrSet<Operation *, 4> SequenceSplitter::producers(Value to, Value from) {
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
void SequenceSplitter::findHeads() {
  auto ret = cast<func::ReturnOp>(func.front().getTerminator());
  for (Value v : ret.getOperands()) {
    Operation *def = v.getDefiningOp();
    while (def && isa<ReshapeOp, ConvertOp>(def))
      def = def->getOperand(0).getDefiningOp();
    if (def && isa<MatmulOp>(def))
      heads.insert(def);
  }
}

Value SequenceSplitter::reshape(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  return make<ReshapeOp>(b, loc, tensorType(v).clone(shape), v);
}

Value SequenceSplitter::transpose(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> perm) {
  return make<TransposeOp>(b, loc, v, perm);
}

SmallVector<int64_t> SequenceSplitter::positionsOf(int64_t rank, int64_t length) const {
  SmallVector<int64_t> positions;
  if (!zigzag) {
    for (int64_t i = 0; i < length / n; ++i)
      positions.push_back(rank * (length / n) + i);
    return positions;
  }
  int64_t chunk = length / (2 * n);
  for (int64_t c : {rank, 2 * n - 1 - rank})
    for (int64_t i = 0; i < chunk; ++i)
      positions.push_back(c * chunk + i);
  return positions;
}

Value SequenceSplitter::permute(OpBuilder &b, Location loc, Value v, int64_t d, bool inverse) {
  RankedTensorType t = tensorType(v);
  int64_t length = t.getDimSize(d);
  SmallVector<int64_t> order;
  for (int64_t r = 0; r < n; ++r)
    llvm::append_range(order, positionsOf(r, length));
  if (inverse) {
    SmallVector<int64_t> back(order.size());
    for (auto [i, p] : llvm::enumerate(order))
      back[size_t(p)] = int64_t(i);
    order = std::move(back);
  }
  auto indexType = RankedTensorType::get({length}, b.getI64Type());
  Value indices = make<ConstantOp>(b, loc, DenseElementsAttr::get(indexType, ArrayRef(order)));
  return make<GatherOp>(b, loc, v, indices, b.getI64IntegerAttr(d));
}

Value SequenceSplitter::cut(OpBuilder &b, Value v, int64_t d, std::optional<Location> named) {
  Location loc = named.value_or(v.getLoc());
  if (zigzag)
    v = permute(b, loc, v, d, /*inverse=*/false);
  RankedTensorType t = tensorType(v);
  bool move = !outermost(t, d);
  Value in = move ? transpose(b, loc, v, toFront(t.getRank(), d)) : v;
  int64_t at = move ? 0 : d;
  RankedTensorType it = tensorType(in);
  Value s = make<shard::AllSliceOp>(b, loc, withDim(it, at, it.getDimSize(at) / n), in,
                                    axis.grid.getSymName(), ArrayRef<int16_t>{axis.axis}, at);
  return move ? transpose(b, loc, s, fromFront(t.getRank(), d)) : s;
}

Value SequenceSplitter::slice(Value v, int64_t d) {
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

Value SequenceSplitter::gather(Value v) {
  Value &g = gathers[v];
  if (g)
    return g;
  Split sp = splits.split.lookup(v);
  OpBuilder b(v.getContext());
  b.setInsertionPointAfterValue(v);
  Location loc = v.getLoc();
  RankedTensorType t = tensorType(v);
  // [.., outer, s/n * inner, ..]: the blocks of positions are contiguous
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
  if (zigzag && sp.inner == 1) {
    x = permute(b, loc, x, at, /*inverse=*/true); // the positions back in order
  } else if (zigzag) {
    // [.., s * inner, ..] as [.., s, inner, ..].
    RankedTensorType whole = tensorType(x);
    SmallVector<int64_t> split(whole.getShape());
    split[at] = whole.getDimSize(at) / sp.inner;
    split.insert(split.begin() + at + 1, sp.inner);
    x = permute(b, loc, reshape(b, loc, x, split), at, /*inverse=*/true);
    x = reshape(b, loc, x, whole.getShape());
  }
  if (sp.outer > 1)
    x = reshape(b, loc, x, sp.global.getShape());
  ++numGathered;
  return g = x;
}

LogicalResult SequenceSplitter::whole(Operation *op) {
  for (OpOperand &use : op->getOpOperands())
    if (splits.isSplit(use.get()))
      use.set(gather(use.get()));
  return success();
}

bool SequenceSplitter::splitAlongPositions(AttentionOp op) const {
  return llvm::all_of(ValueRange{op.getQuery(), op.getKey(), op.getValue()}, [&](Value v) {
    auto it = splits.split.find(v);
    return it != splits.split.end() && it->second.dim == 2 && it->second.outer == 1 &&
           it->second.inner == 1;
  });
}

LogicalResult SequenceSplitter::visit(Operation *op, const Propagation::Carried &carried) {
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

void SequenceSplitter::setSplit(Value result, Split s) {
  result.setType(withDim(s.global, s.dim, s.global.getDimSize(s.dim) / n));
  splits.split[result] = s;
}

/// The sequence factor must stay whole in one result dimension, with the
/// same elements before it and within it.
LogicalResult SequenceSplitter::visitReshape(ReshapeOp op) {
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
FailureOr<bool> SequenceSplitter::visitTokenWise(Operation *op,
                                                 const Propagation::Carried &carried) {
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
  if (failed(splits.setLocal(op, e, n, Split{global, e, from->outer, from->inner}, pass)))
    return failure();
  return true;
}
