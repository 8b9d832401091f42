// Synchronized batch norm (PyTorch's SyncBatchNorm) as the ops it stands for:
// the rank's per-channel sums, summed over the data-parallel ranks, the
// normalization with the whole batch's statistics and the running
// statistics updated from them. colo-build-train-step applies it to the
// training-mode batch norms colo-split-batch marked with `sync_grid`, after
// storing their running statistics and before differentiating, so the
// backward's sums over the ranks come from the gradient rules of the
// collectives and every exchange is in the IR.
#include "colo/Passes/Passes.h"
#include "colo/Passes/Pipeline.h"

#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace colo;

namespace {
/// The ops of one expansion, all built before the batch norm.
struct Builder {
  OpBuilder b;
  Location loc;

  Value scalar(Value like, double v) {
    auto t = RankedTensorType::get({}, cast<RankedTensorType>(like.getType()).getElementType());
    return ConstantOp::create(b, loc,
                              DenseElementsAttr::get(t, b.getFloatAttr(t.getElementType(), v)));
  }
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value mul(Value x, double c) { return mul(x, scalar(x, c)); }
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    auto t = cast<RankedTensorType>(x.getType());
    return ReshapeOp::create(b, loc, t.clone(shape), x);
  }
};

LogicalResult expand(BatchNormOp op) {
  StringRef grid = op.getSyncGridAttr().getValue();
  ArrayRef<int16_t> axes = *op.getSyncAxes();
  auto gridOp = op->getParentOfType<ModuleOp>().lookupSymbol<shard::GridOp>(grid);
  if (!gridOp)
    return op.emitOpError() << "sync_grid '" << grid << "' names no shard.grid";
  int64_t ranks = 1;
  for (int16_t a : axes) {
    if (a < 0 || a >= static_cast<int64_t>(gridOp.getShape().size()))
      return op.emitOpError() << "sync_axes names axis " << a << " of a grid of rank "
                              << gridOp.getShape().size();
    ranks *= gridOp.getShape()[a];
  }

  // Every dimension but the channels'; the whole batch's count per channel.
  Value x = op.getInput();
  RankedTensorType type = op.getResult().getType();
  int64_t channels = type.getDimSize(1);
  SmallVector<int64_t> dims = {0}, channelShape(type.getRank(), 1);
  channelShape[1] = channels;
  double count = static_cast<double>(ranks * type.getNumElements() / channels);
  for (int64_t d = 2; d < type.getRank(); ++d)
    dims.push_back(d);

  Operation *before = op->getPrevNode();
  Builder e{OpBuilder(op), op.getLoc()};
  // A sum over every rank's samples. Each rank's loss reads it, so its
  // gradient is summed over the ranks too: colo.all_reduce_grad's rule.
  auto sumOverBatch = [&](Value v) -> Value {
    Value local = ReduceSumOp::create(e.b, e.loc, v, e.b.getDenseI64ArrayAttr(dims),
                                      e.b.getUnitAttr());
    Value summed = AllReduceGradOp::create(e.b, e.loc, local.getType(), local, grid, axes);
    return shard::AllReduceOp::create(e.b, e.loc, summed, grid, axes,
                                      shard::ReductionKind::Sum);
  };
  // Two passes, as the fused kernel: the mean, then the sum of squared
  // deviations from it (the biased variance normalizes).
  Value mean = e.mul(sumOverBatch(x), 1.0 / count);
  Value centered = e.sub(x, mean);
  Value var = e.mul(sumOverBatch(e.mul(centered, centered)), 1.0 / count);
  double eps = op.getEpsilon().convertToDouble();
  Value inv = RsqrtOp::create(e.b, e.loc, e.add(var, e.scalar(var, eps)));
  Value y = e.add(e.mul(e.mul(centered, inv), e.reshape(op.getScale(), channelShape)),
                  e.reshape(op.getBias(), channelShape));

  // new = (1 - momentum) * running + momentum * batch, unbiased variance.
  double momentum = op.getMomentum().convertToDouble();
  auto update = [&](Value running, Value batch, double weight) {
    return e.add(e.mul(running, 1.0 - momentum), e.mul(e.reshape(batch, {channels}), weight));
  };
  Value newMean = update(op.getRunningMean(), mean, momentum);
  Value newVar =
      update(op.getRunningVar(), var, momentum * (count > 1 ? count / (count - 1) : 1.0));

  // The expansion runs in the batch norm's pipeline stage.
  if (std::optional<int64_t> stage = getStage(op))
    for (Operation *o = before ? before->getNextNode() : &op->getBlock()->front(); o != op;
         o = o->getNextNode())
      setStage(o, *stage);
  op.replaceAllUsesWith(ValueRange{y, newMean, newVar});
  op.erase();
  return success();
}
} // namespace

LogicalResult colo::expandSyncBatchNorms(Operation *root) {
  SmallVector<BatchNormOp> marked;
  root->walk([&](BatchNormOp op) {
    if (op.getTraining() && op.getSyncGrid())
      marked.push_back(op);
  });
  for (BatchNormOp op : marked)
    if (failed(expand(op)))
      return failure();
  return success();
}
