// colo-decompose-loss: colo.cross_entropy and its gradient as per-position
// ops, a sum and a count, so that the positions can be computed in pieces.
#include "colo/Passes/Passes.h"

#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <numeric>

namespace colo {
#define GEN_PASS_DEF_COLODECOMPOSELOSS
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// 16-bit logits compute their loss in float: a factor of their type would
/// round what the fused op keeps in float.
bool computesInItsOwnType(Value logits) {
  return tensorType(logits).getElementTypeBitWidth() >= 32;
}

Value sumOfAll(PatternRewriter &rewriter, Location loc, Value v) {
  SmallVector<int64_t> dims(tensorType(v).getRank());
  std::iota(dims.begin(), dims.end(), 0);
  return ReduceSumOp::create(rewriter, loc, v, rewriter.getDenseI64ArrayAttr(dims), nullptr);
}

/// The number of positions whose label is not `ignore`, as a 0-d tensor of
/// the logits' element type.
Value countOf(PatternRewriter &rewriter, Location loc, Value labels, int64_t ignore,
              Type element) {
  RankedTensorType lt = tensorType(labels);
  auto scalar = RankedTensorType::get({}, lt.getElementType());
  Value ignored = ConstantOp::create(
      rewriter, loc,
      DenseElementsAttr::get(scalar, rewriter.getIntegerAttr(lt.getElementType(), ignore)));
  Value counted = CompareOp::create(rewriter, loc, ComparePredicate::ne, labels, ignored);
  Value ones = ConvertOp::create(rewriter, loc, lt.clone(element), counted);
  return sumOfAll(rewriter, loc, ones);
}

struct DecomposeCrossEntropy : OpRewritePattern<CrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossEntropyOp op, PatternRewriter &rewriter) const override {
    if (!computesInItsOwnType(op.getLogits()))
      return failure();
    Location loc = op.getLoc();
    Value rows = CrossEntropyRowsOp::create(rewriter, loc, op.getLogits(), op.getLabels(),
                                            op.getIgnoreIndex(), op.getLabelSmoothing());
    Value count = countOf(rewriter, loc, op.getLabels(), op.getIgnoreIndex(),
                          op.getType().getElementType());
    rewriter.replaceOpWithNewOp<DivOp>(op, sumOfAll(rewriter, loc, rows), count);
    return success();
  }
};

struct DecomposeCrossEntropyBackward : OpRewritePattern<CrossEntropyBackwardOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossEntropyBackwardOp op,
                                PatternRewriter &rewriter) const override {
    if (!computesInItsOwnType(op.getLogits()) ||
        op.getGrad().getType().getElementType() != op.getType().getElementType())
      return failure();
    Location loc = op.getLoc();
    Value count = countOf(rewriter, loc, op.getLabels(), op.getIgnoreIndex(),
                          op.getType().getElementType());
    Value scale = DivOp::create(rewriter, loc, op.getGrad(), count);
    rewriter.replaceOpWithNewOp<CrossEntropyRowsBackwardOp>(
        op, op.getType(), op.getLogits(), op.getLabels(), scale, op.getIgnoreIndex(),
        op.getLabelSmoothing());
    return success();
  }
};

struct ColoDecomposeLoss : colo::impl::ColoDecomposeLossBase<ColoDecomposeLoss> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeCrossEntropy, DecomposeCrossEntropyBackward>(&getContext());
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      signalPassFailure();
  }
};
} // namespace
