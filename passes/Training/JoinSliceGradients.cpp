// colo-join-slice-gradients: the sum of the gradients of adjacent slices of
// one tensor (q, k and v cut from one projection) becomes their concat.
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace colo {
#define GEN_PASS_DEF_COLOJOINSLICEGRADIENTS
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
/// The axis along which `a`'s window ends where `b`'s starts, all other
/// axes' windows being equal and every stride 1; none otherwise.
std::optional<int64_t> adjacentAxis(SliceBackwardOp a, SliceBackwardOp b) {
  std::optional<int64_t> axis;
  for (int64_t i = 0, r = a.getStart().size(); i < r; ++i) {
    if (a.getStride()[i] != 1 || b.getStride()[i] != 1)
      return std::nullopt;
    if (a.getStart()[i] == b.getStart()[i] && a.getLimit()[i] == b.getLimit()[i])
      continue;
    if (axis || a.getLimit()[i] != b.getStart()[i])
      return std::nullopt;
    axis = i;
  }
  return axis;
}

/// add(slice_backward(a), slice_backward(b)) over adjacent windows ->
/// slice_backward(concat(a, b)) over their union, or the concat itself when
/// the union is the whole tensor. Exact: every element is one gradient or
/// zero, and x + 0 is x.
struct JoinPattern : OpRewritePattern<AddOp> {
  JoinPattern(MLIRContext *ctx, llvm::Statistic &count)
      : OpRewritePattern(ctx), count(count) {}
  LogicalResult matchAndRewrite(AddOp op, PatternRewriter &rewriter) const override {
    auto lhs = op.getLhs().getDefiningOp<SliceBackwardOp>();
    auto rhs = op.getRhs().getDefiningOp<SliceBackwardOp>();
    if (!lhs || !rhs || !lhs->hasOneUse() || !rhs->hasOneUse() ||
        lhs.getType() != op.getType() || rhs.getType() != op.getType())
      return failure();
    for (auto [first, second] : {std::pair(lhs, rhs), std::pair(rhs, lhs)}) {
      std::optional<int64_t> axis = adjacentAxis(first, second);
      if (!axis)
        continue;
      SmallVector<Value> parts;
      for (Value g : {first.getGrad(), second.getGrad()}) {
        auto inner = g.getDefiningOp<ConcatOp>();
        if (inner && inner->hasOneUse() && inner.getAxis() == *axis)
          llvm::append_range(parts, inner.getInputs());
        else
          parts.push_back(g);
      }
      Location loc = op.getLoc();
      Value joined = ConcatOp::create(rewriter, loc, parts, rewriter.getI64IntegerAttr(*axis));
      SmallVector<int64_t> limit(first.getLimit());
      limit[*axis] = second.getLimit()[*axis];
      ArrayRef<int64_t> start = first.getStart(), shape = op.getType().getShape();
      if (llvm::all_of(start, [](int64_t s) { return s == 0; }) && ArrayRef(limit) == shape)
        rewriter.replaceOp(op, joined);
      else
        rewriter.replaceOpWithNewOp<SliceBackwardOp>(op, op.getType(), joined, start, limit,
                                                     first.getStride());
      ++count;
      return success();
    }
    return failure();
  }
  llvm::Statistic &count;
};

struct ColoJoinSliceGradientsPass
    : colo::impl::ColoJoinSliceGradientsBase<ColoJoinSliceGradientsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<JoinPattern>(&getContext(), numJoined);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
