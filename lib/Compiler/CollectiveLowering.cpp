// The communication of the walk: shard collectives and pipeline messages
// as exec communication ops, each with a token and a wait right after it.
#include "StepBuilder.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;
using namespace colo;

namespace {
/// Collectives move contiguous blocks: cutting or joining along `axis` must
/// not interleave, i.e. every dimension before it is 1.
bool blocksAreContiguous(Value v, int64_t axis) {
  return llvm::all_of(tensorType(v).getShape().take_front(axis),
                      [](int64_t d) { return d == 1; });
}

FailureOr<exec::Reduction> reductionOf(Operation *op, shard::ReductionKind kind) {
  switch (kind) {
  case shard::ReductionKind::Sum:
    return exec::Reduction::sum;
  case shard::ReductionKind::Average:
    return exec::Reduction::average;
  case shard::ReductionKind::Max:
    return exec::Reduction::max;
  default:
    return op->emitError("the runtime reduces by sum, average or max only");
  }
}
/// The group index of a broadcast's or a reduction's root: its in-group
/// multi-index over `axes`, the first slowest (the runtime's group order).
FailureOr<int64_t> rootIndex(Operation *op, FlatSymbolRefAttr gridName, ArrayRef<int16_t> axes,
                             ArrayRef<int64_t> root, ValueRange dynamic) {
  auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, gridName);
  if (!grid || !dynamic.empty() || root.size() != axes.size())
    return op->emitError("the runtime's root is a static index on each of the op's grid axes");
  int64_t index = 0;
  for (auto [axis, r] : llvm::zip(axes, root)) {
    int64_t size = grid.getShape()[axis];
    if (r < 0 || r >= size)
      return op->emitError() << "root index " << r << " is outside grid axis " << axis
                             << " of size " << size;
    index = index * size + r;
  }
  return index;
}
} // namespace

bool colo::isCollective(Operation *op) {
  return isa<shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp, shard::AllToAllOp,
             shard::AllSliceOp, shard::SendOp, shard::RecvOp, shard::ShiftOp, shard::BroadcastOp,
             shard::ReduceOp>(op);
}

void StepBuilder::waitFor(Value token, StringRef name) {
  exec::WaitOp::create(b, token.getLoc(), token, (name + ".wait").str());
}

/// A pipeline message: the peer is an index on the op's one grid axis.
LogicalResult StepBuilder::visitPointToPoint(Operation *op, ArrayRef<int16_t> axes,
                                             ArrayRef<int64_t> peer) {
  IntegerAttr tag = ColoDialect::TagAttrHelper(op->getContext()).getAttr(op);
  if (!tag || axes.size() != 1 || peer.size() != 1)
    return op->emitError("the runtime sends between members of one grid axis, "
                         "with a colo.tag");
  std::string name = stepName(op);
  auto token = [&] { return exec::TokenType::get(b.getContext()); };
  SmallVector<int32_t> meshAxes{axes[0]};
  int32_t t = static_cast<int32_t>(tag.getInt());
  Value started;
  if (auto send = dyn_cast<shard::SendOp>(op)) {
    FailureOr<Value> in = materialize(send.getInput());
    if (failed(in))
      return failure();
    started = exec::SendOp::create(b, op->getLoc(), token(), name, *in, meshAxes, peer[0], t);
    bufferOf[send.getResult()] = *in;
  } else {
    FailureOr<Value> out = result(op);
    if (failed(out))
      return failure();
    started = exec::RecvOp::create(b, op->getLoc(), token(), name, *out, meshAxes, peer[0], t);
  }
  waitFor(started, name);
  return success();
}

LogicalResult StepBuilder::visitCollective(Operation *op) {
  if (auto send = dyn_cast<shard::SendOp>(op))
    return visitPointToPoint(op, send.getGridAxes(), send.getDestination());
  if (auto recv = dyn_cast<shard::RecvOp>(op))
    return visitPointToPoint(op, recv.getGridAxes(),
                             recv.getSource().value_or(ArrayRef<int64_t>{}));
  FailureOr<Value> in = materialize(op->getOperand(0));
  if (failed(in))
    return failure();
  // An all-reduce reduces in place a temporary that nothing else reads
  // (a data-parallel bucket), with no copy of it first.
  auto input = in->getDefiningOp<exec::BufferOp>();
  bool inPlace = isa<shard::AllReduceOp>(op) && op->getOperand(0).hasOneUse() && input &&
                 input.getKind() == exec::BufferKind::temp;
  if (inPlace)
    bufferOf[op->getResult(0)] = *in;
  FailureOr<Value> out = inPlace ? in : result(op);
  if (failed(out))
    return failure();
  auto leading = [&](Value v, int64_t axis) -> LogicalResult {
    if (blocksAreContiguous(v, axis))
      return success();
    return op->emitError() << "the runtime cuts and joins tensors along their "
                              "outermost non-unit dimension only, not dimension "
                           << axis << " of " << v.getType();
  };
  auto axesOf = [](ArrayRef<int16_t> axes) {
    return SmallVector<int32_t>(axes.begin(), axes.end());
  };
  std::string name = stepName(op);
  Location loc = op->getLoc();
  auto token = [&] { return exec::TokenType::get(b.getContext()); };
  Value started;
  if (auto r = dyn_cast<shard::AllReduceOp>(op)) {
    FailureOr<exec::Reduction> kind = reductionOf(op, r.getReduction());
    if (failed(kind))
      return failure();
    started = exec::AllReduceOp::create(b, loc, token(), name, *in, *out, axesOf(r.getGridAxes()), *kind);
  } else if (auto g = dyn_cast<shard::AllGatherOp>(op)) {
    if (failed(leading(g.getResult(), g.getGatherAxis().getSExtValue())))
      return failure();
    started = exec::AllGatherOp::create(b, loc, token(), name, *in, *out, axesOf(g.getGridAxes()));
  } else if (auto r = dyn_cast<shard::ReduceScatterOp>(op)) {
    FailureOr<exec::Reduction> kind = reductionOf(op, r.getReduction());
    if (failed(kind) || failed(leading(r.getInput(), r.getScatterAxis().getSExtValue())))
      return failure();
    started =
        exec::ReduceScatterOp::create(b, loc, token(), name, *in, *out, axesOf(r.getGridAxes()), *kind);
  } else if (auto a = dyn_cast<shard::AllToAllOp>(op)) {
    if (a.getSplitAxis() != a.getConcatAxis())
      return op->emitError("the runtime's all-to-all splits and concatenates along "
                           "the same dimension");
    if (failed(leading(a.getInput(), a.getSplitAxis().getSExtValue())))
      return failure();
    started = exec::AllToAllOp::create(b, loc, token(), name, *in, *out, axesOf(a.getGridAxes()));
  } else if (auto s = dyn_cast<shard::ShiftOp>(op)) {
    ArrayRef<int16_t> axes = s.getGridAxes();
    if (axes.size() != 1 || int64_t(axes[0]) != s.getShiftAxis().getSExtValue() || !s.getRotate())
      return op->emitError("the runtime shifts around the ring of one grid axis (rotate)");
    auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(op, s.getGridAttr());
    int64_t size = grid ? grid.getShape()[axes[0]] : 0;
    int64_t offset = size > 0 ? (s.getOffset() % size + size) % size : 0;
    if (offset == 0)
      return op->emitError("a shift by ")
             << s.getOffset() << " around a ring of " << size << " moves nothing";
    // Each shift's messages get their own tag: a step's shifts between the
    // same two ranks (a layer's keys and values) stay apart.
    started =
        exec::ShiftOp::create(b, loc, token(), name, *in, *out, axesOf(axes), offset, shiftTags++);
  } else if (auto c = dyn_cast<shard::BroadcastOp>(op)) {
    FailureOr<int64_t> root =
        rootIndex(op, c.getGridAttr(), c.getGridAxes(), c.getRoot(), c.getRootDynamic());
    if (failed(root))
      return failure();
    started =
        exec::BroadcastOp::create(b, loc, token(), name, *in, *out, axesOf(c.getGridAxes()), *root);
  } else if (auto r = dyn_cast<shard::ReduceOp>(op)) {
    FailureOr<int64_t> root =
        rootIndex(op, r.getGridAttr(), r.getGridAxes(), r.getRoot(), r.getRootDynamic());
    if (failed(root))
      return failure();
    if (r.getReduction() != shard::ReductionKind::Sum ||
        tensorType(r.getInput()).getElementType() != tensorType(r.getResult()).getElementType())
      return op->emitError("the runtime reduces to a root by sum, in the input's element type");
    started = exec::ReduceOp::create(b, loc, token(), name, *in, *out, axesOf(r.getGridAxes()),
                                     exec::Reduction::sum, *root);
  } else if (auto s = dyn_cast<shard::AllSliceOp>(op)) {
    if (failed(leading(s.getInput(), s.getSliceAxis().getSExtValue())))
      return failure();
    started = exec::AllSliceOp::create(b, loc, token(), name, *in, *out, axesOf(s.getGridAxes()));
  }
  waitFor(started, name);
  return success();
}
