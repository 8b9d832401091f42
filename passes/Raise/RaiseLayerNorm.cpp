// colo-raise-layer-norm: (x - mean) / sqrt(var + eps) [* scale] [+ bias]
// -> colo.layer_norm.
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/Passes.h"
#include "Raise/PatternUtils.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace colo {
#define GEN_PASS_DEF_COLORAISELAYERNORM
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
/// If `d` is `x - mean(x)` over trailing dims, returns (x, axis).
std::optional<std::pair<Value, int64_t>> matchCentered(Value d) {
  auto sub = d.getDefiningOp<SubOp>();
  if (!sub)
    return std::nullopt;
  auto mean = matchTrailingMean(sub.getRhs());
  if (!mean || mean->first != sub.getLhs())
    return std::nullopt;
  return mean;
}

/// If `s` is `1/sqrt(mean(d^2) + eps)` (or `sqrt(...)` when `inverted` is
/// false) with `d` the given centered value and the mean over the same
/// trailing dimensions `[axis, rank)` as the centering, returns eps.
std::optional<double> matchInvStd(Value s, Value d, int64_t axis, bool inverted) {
  Value varPlusEps;
  if (inverted) {
    std::optional<Value> v = matchRsqrt(s);
    if (!v)
      return std::nullopt;
    varPlusEps = *v;
  } else {
    auto sqrt = s.getDefiningOp<SqrtOp>();
    if (!sqrt)
      return std::nullopt;
    varPlusEps = sqrt.getInput();
  }
  auto add = varPlusEps.getDefiningOp<AddOp>();
  if (!add)
    return std::nullopt;
  for (auto [var, eps] : {std::pair(add.getLhs(), add.getRhs()),
                          std::pair(add.getRhs(), add.getLhs())}) {
    std::optional<double> epsilon = getSplatConstant(eps);
    auto mean = matchTrailingMean(var);
    if (!epsilon || !mean || mean->second != axis)
      continue;
    if (std::optional<Value> sq = matchSquare(mean->first); sq && *sq == d)
      return epsilon;
  }
  return std::nullopt;
}

void replaceWithNorm(PatternRewriter &rewriter, Operation *op, Value x,
                     int64_t axis, double eps, llvm::Statistic &count) {
  rewriter.replaceOpWithNewOp<LayerNormOp>(
      op, op->getResult(0).getType(), x, Value(), Value(),
      rewriter.getI64IntegerAttr(axis), rewriter.getF64FloatAttr(eps));
  ++count;
}

/// (x - mean) / sqrt(var + eps).
struct RaiseDivForm : OpRewritePattern<DivOp> {
  RaiseDivForm(MLIRContext *ctx, llvm::Statistic &count)
      : OpRewritePattern(ctx), count(count) {}
  LogicalResult matchAndRewrite(DivOp op, PatternRewriter &rewriter) const override {
    auto centered = matchCentered(op.getLhs());
    if (!centered || centered->first.getType() != op.getType())
      return failure();
    std::optional<double> eps =
        matchInvStd(op.getRhs(), op.getLhs(), centered->second, false);
    if (!eps)
      return failure();
    replaceWithNorm(rewriter, op, centered->first, centered->second, *eps, count);
    return success();
  }
  llvm::Statistic &count;
};

/// (x - mean) * rsqrt(var + eps).
struct RaiseMulForm : OpRewritePattern<MulOp> {
  RaiseMulForm(MLIRContext *ctx, llvm::Statistic &count)
      : OpRewritePattern(ctx), count(count) {}
  LogicalResult matchAndRewrite(MulOp op, PatternRewriter &rewriter) const override {
    for (auto [d, s] : {std::pair(op.getLhs(), op.getRhs()),
                        std::pair(op.getRhs(), op.getLhs())}) {
      auto centered = matchCentered(d);
      if (!centered || centered->first.getType() != op.getType())
        continue;
      if (std::optional<double> eps = matchInvStd(s, d, centered->second, true)) {
        replaceWithNorm(rewriter, op, centered->first, centered->second, *eps,
                        count);
        return success();
      }
    }
    return failure();
  }
  llvm::Statistic &count;
};

/// Folds a following `* scale` and then `+ bias` of the normalized shape.
template <typename AffineOp>
struct AbsorbAffine : OpRewritePattern<AffineOp> {
  using OpRewritePattern<AffineOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(AffineOp op,
                                PatternRewriter &rewriter) const override {
    constexpr bool isScale = std::is_same_v<AffineOp, MulOp>;
    for (auto [n, p] : {std::pair(op.getLhs(), op.getRhs()),
                        std::pair(op.getRhs(), op.getLhs())}) {
      auto norm = n.template getDefiningOp<LayerNormOp>();
      if (!norm || norm.getBias() || (isScale && norm.getScale()) ||
          !norm->hasOneUse() || norm.getType() != op.getType())
        continue;
      // The axis may count from the end (ONNX's default is -1); getAxis()
      // returns the I64Attr as unsigned, so read it back as signed.
      int64_t axis = static_cast<int64_t>(norm.getAxis());
      if (axis < 0)
        axis += norm.getType().getRank();
      ArrayRef<int64_t> normalized = norm.getType().getShape().drop_front(axis);
      if (cast<RankedTensorType>(p.getType()).getShape() != normalized)
        continue;
      Value scale = isScale ? p : norm.getScale();
      if (!isScale && !scale)
        continue; // A bias without a scale would need a ones scale: leave it.
      rewriter.replaceOpWithNewOp<LayerNormOp>(
          op, op.getType(), norm.getInput(), scale, isScale ? Value() : p,
          norm.getAxisAttr(), norm.getEpsilonAttr());
      rewriter.eraseOp(norm);
      return success();
    }
    return failure();
  }
};

struct ColoRaiseLayerNormPass
    : colo::impl::ColoRaiseLayerNormBase<ColoRaiseLayerNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RaiseDivForm, RaiseMulForm>(&getContext(), numRaised);
    patterns.add<AbsorbAffine<MulOp>, AbsorbAffine<AddOp>>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
