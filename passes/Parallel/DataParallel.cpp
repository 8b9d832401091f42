// Data parallelism on a training step: every rank of the mesh's dp axis runs
// the step on its slice of the batch (colo-split-batch), then the gradients
// are averaged over the axis before clipping and the optimizer see them.
#include "colo/Passes/Passes.h"

#include "colo/Dialect/Colo/ColoOps.h"
#include "Parallel/Mesh.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace colo {
#define GEN_PASS_DEF_COLODATAPARALLEL
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {

int64_t byteSize(RankedTensorType t) {
  return t.getNumElements() * ((t.getElementTypeBitWidth() + 7) / 8);
}

/// The first op of `body` that uses a gradient of `bucket` (the optimizer's,
/// or the clipping's norm), or the terminator.
Operation *firstUse(MutableArrayRef<GradientOp> bucket, Block &body) {
  Operation *first = body.getTerminator();
  for (GradientOp g : bucket)
    for (Operation *user : g->getUsers())
      if (Operation *op = body.findAncestorOpInBlock(*user); op && op->isBeforeInBlock(first))
        first = op;
  return first;
}

/// Averages the gradients of one bucket with a single all-reduce: flattened,
/// concatenated, reduced right after `after`, and cut back into their shapes
/// just before their first use, so that the all-reduce can run while the
/// steps in between (the rest of the backward) compute.
void allReduceBucket(MutableArrayRef<GradientOp> bucket, MeshAxis dp,
                     Operation *after) {
  Operation *use = firstUse(bucket, *after->getBlock());
  OpBuilder b(after->getContext());
  b.setInsertionPointAfter(after);
  Location loc = bucket.front().getLoc();
  SmallVector<Value> flat;
  for (GradientOp g : bucket) {
    RankedTensorType t = g.getType();
    flat.push_back(ReshapeOp::create(
        b, loc, RankedTensorType::get({t.getNumElements()}, t.getElementType()),
        g.getInput()));
  }
  Value joined = flat.size() == 1
                     ? flat.front()
                     : ConcatOp::create(b, loc, flat, b.getI64IntegerAttr(0)).getResult();
  Value reduced = shard::AllReduceOp::create(b, loc, joined, dp.grid.getSymName(),
                                             {dp.axis}, shard::ReductionKind::Average);
  b.setInsertionPoint(use);
  int64_t offset = 0;
  for (GradientOp g : bucket) {
    RankedTensorType t = g.getType();
    Value part = reduced;
    if (bucket.size() > 1)
      part = SliceOp::create(b, loc, reduced, ArrayRef<int64_t>{offset},
                             ArrayRef<int64_t>{offset + t.getNumElements()},
                             ArrayRef<int64_t>{1});
    offset += t.getNumElements();
    g.getInputMutable().assign(ReshapeOp::create(b, loc, t, part));
    g->moveBefore(b.getInsertionBlock(), b.getInsertionPoint());
    b.setInsertionPointAfter(g);
  }
}

struct ColoDataParallel : PlanPass<colo::impl::ColoDataParallelBase<ColoDataParallel>> {
  using PlanPass::PlanPass;

  FailureOr<func::FuncOp> findTarget(ModuleOp module) override {
    return findTrainStep(module, "colo-data-parallel", func, dp);
  }

  LogicalResult runOnTarget(ModuleOp module, func::FuncOp step) override {
    FailureOr<MeshAxis> axis = getOrCreateMeshAxis(module, "dp", dp, step);
    if (failed(axis))
      return failure();

    // Buckets fill in the order the backward computes the gradients (the last
    // layer's first) and each is reduced as soon as its last gradient exists,
    // so that communication can overlap the rest of the backward.
    Block &body = step.front();
    SmallVector<GradientOp> grads(step.getOps<GradientOp>());
    if (grads.empty()) {
      step.emitError("colo-data-parallel: no colo.gradient ops in the step");
      return failure();
    }
    auto computedAt = [&](GradientOp g) {
      return body.findAncestorOpInBlock(*g.getInput().getDefiningOp());
    };
    llvm::stable_sort(grads, [&](GradientOp a, GradientOp b) {
      return computedAt(a)->isBeforeInBlock(computedAt(b));
    });
    int64_t limit = static_cast<int64_t>(bucketMb * (1 << 20));
    SmallVector<GradientOp> bucket;
    int64_t bytes = 0;
    auto flush = [&] {
      if (bucket.empty())
        return;
      allReduceBucket(bucket, *axis, computedAt(bucket.back()));
      bucket.clear();
      bytes = 0;
    };
    for (GradientOp g : grads) {
      if (!bucket.empty() && (bytes + byteSize(g.getType()) > limit ||
                              g.getType().getElementType() !=
                                  bucket.front().getType().getElementType()))
        flush();
      bucket.push_back(g);
      bytes += byteSize(g.getType());
    }
    flush();

    finishDataParallel(step, *axis);
    return success();
  }
};
} // namespace
