// colo-raise-rms-norm: x * rsqrt(mean(x^2) + eps) [* scale] -> colo.rms_norm.
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/Passes.h"
#include "Raise/PatternUtils.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace colo {
#define GEN_PASS_DEF_COLORAISERMSNORM
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
/// Matches the unscaled normalization at a colo.mul.
struct RaiseRms : OpRewritePattern<MulOp> {
  RaiseRms(MLIRContext *ctx, llvm::Statistic &count)
      : OpRewritePattern(ctx), count(count) {}
  LogicalResult matchAndRewrite(MulOp op, PatternRewriter &rewriter) const override {
    for (auto [x, r] : {std::pair(op.getLhs(), op.getRhs()),
                        std::pair(op.getRhs(), op.getLhs())}) {
      std::optional<Value> denom = matchRsqrt(r);
      auto add = denom ? denom->getDefiningOp<AddOp>() : AddOp();
      if (!add)
        continue;
      for (auto [meanSq, eps] : {std::pair(add.getLhs(), add.getRhs()),
                                 std::pair(add.getRhs(), add.getLhs())}) {
        std::optional<double> epsilon = getSplatConstant(eps);
        auto mean = matchTrailingMean(meanSq);
        if (!epsilon || !mean)
          continue;
        std::optional<Value> sq = matchSquare(mean->first);
        if (!sq || *sq != x || x.getType() != op.getType())
          continue;
        rewriter.replaceOpWithNewOp<RmsNormOp>(
            op, op.getType(), x, /*scale=*/Value(),
            rewriter.getI64IntegerAttr(mean->second),
            rewriter.getF64FloatAttr(*epsilon));
        ++count;
        return success();
      }
    }
    return failure();
  }
  llvm::Statistic &count;
};

/// rms_norm(x) * scale -> rms_norm(x) scale.
struct AbsorbRmsScale : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp op, PatternRewriter &rewriter) const override {
    for (auto [n, s] : {std::pair(op.getLhs(), op.getRhs()),
                        std::pair(op.getRhs(), op.getLhs())}) {
      auto norm = n.getDefiningOp<RmsNormOp>();
      if (!norm || norm.getScale() || !norm->hasOneUse() ||
          norm.getType() != op.getType())
        continue;
      // The axis may count from the end (ONNX's default is -1); getAxis()
      // returns the I64Attr as unsigned, so read it back as signed.
      int64_t axis = static_cast<int64_t>(norm.getAxis());
      if (axis < 0)
        axis += norm.getType().getRank();
      ArrayRef<int64_t> normalized = norm.getType().getShape().drop_front(axis);
      auto scaleType = cast<RankedTensorType>(s.getType());
      if (scaleType.getShape() != normalized)
        continue;
      rewriter.replaceOpWithNewOp<RmsNormOp>(op, op.getType(), norm.getInput(), s,
                                             norm.getAxisAttr(),
                                             norm.getEpsilonAttr());
      rewriter.eraseOp(norm);
      return success();
    }
    return failure();
  }
};

struct ColoRaiseRmsNormPass
    : colo::impl::ColoRaiseRmsNormBase<ColoRaiseRmsNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RaiseRms>(&getContext(), numRaised);
    patterns.add<AbsorbRmsScale>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
