// colo-decompose-attention: colo.attention as the ops it stands for
// (matmul, scale, masks, softmax, dropout, matmul), for targets without a
// fused attention kernel and for differentiation on them.
#include "colo/Passes/Passes.h"

#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <limits>
#include <vector>

namespace colo {
#define GEN_PASS_DEF_COLODECOMPOSEATTENTION
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Repeats each of `kv`'s heads `groups` times: [b, hkv, t, d] -> [b, hkv*groups, t, d].
Value repeatHeads(PatternRewriter &rewriter, Location loc, Value kv, int64_t groups) {
  RankedTensorType t = tensorType(kv);
  if (groups == 1)
    return kv;
  ArrayRef<int64_t> s = t.getShape();
  Type e = t.getElementType();
  Value expanded = ReshapeOp::create(
      rewriter, loc, RankedTensorType::get({s[0], s[1], 1, s[2], s[3]}, e), kv);
  Value repeated = BroadcastToOp::create(
      rewriter, loc, RankedTensorType::get({s[0], s[1], groups, s[2], s[3]}, e),
      expanded);
  return ReshapeOp::create(
      rewriter, loc, RankedTensorType::get({s[0], s[1] * groups, s[2], s[3]}, e),
      repeated);
}

struct DecomposeAttention : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType qt = tensorType(op.getQuery());
    Type e = qt.getElementType();
    int64_t heads = qt.getDimSize(1), s = qt.getDimSize(2);
    int64_t groups = heads / tensorType(op.getKey()).getDimSize(1);
    Value key = repeatHeads(rewriter, loc, op.getKey(), groups);
    Value value = repeatHeads(rewriter, loc, op.getValue(), groups);
    int64_t t = tensorType(key).getDimSize(2);

    Value keyT = TransposeOp::create(rewriter, loc, key, ArrayRef<int64_t>{0, 1, 3, 2});
    Value scores = MatmulOp::create(rewriter, loc, op.getQuery(), keyT);
    // 16-bit attention takes its softmax in float, as fused kernels do.
    Type stored = e;
    if (e.getIntOrFloatBitWidth() < 32) {
      e = rewriter.getF32Type();
      scores = ConvertOp::create(rewriter, loc, tensorType(scores).clone(e), scores);
    }
    auto scalarType = RankedTensorType::get({}, e);
    Value scale = ConstantOp::create(
        rewriter, loc,
        DenseElementsAttr::get(scalarType,
                               rewriter.getFloatAttr(e, op.getScale().convertToDouble())));
    scores = MulOp::create(rewriter, loc, scores, scale);
    if (op.getCausal()) {
      // Top-left aligned, as PyTorch's is_causal: query i sees keys <= i.
      auto maskType = RankedTensorType::get({s, t}, e);
      // From raw values: an attribute per element costs seconds at long
      // sequences (2048^2 per layer).
      auto causal = [&](auto zero) {
        using T = decltype(zero);
        std::vector<T> values(size_t(s * t), zero);
        for (int64_t i = 0; i < s; ++i)
          for (int64_t j = i + 1; j < t; ++j)
            values[size_t(i * t + j)] = -std::numeric_limits<T>::infinity();
        return DenseElementsAttr::get(maskType, ArrayRef<T>(values));
      };
      Value mask = ConstantOp::create(rewriter, loc,
                                      e.isF32() ? causal(0.0f) : causal(0.0));
      scores = AddOp::create(rewriter, loc, scores, mask);
    }
    if (Value mask = op.getMask()) {
      if (tensorType(mask).getElementType() != e)
        mask = ConvertOp::create(rewriter, loc, tensorType(mask).clone(e), mask);
      scores = AddOp::create(rewriter, loc, scores, mask);
    }
    Value probs = SoftmaxOp::create(rewriter, loc, scores, 3);
    if (double ratio = op.getDropout().convertToDouble(); ratio != 0.0)
      probs = DropoutOp::create(rewriter, loc, probs, rewriter.getF64FloatAttr(ratio));
    if (stored != e)
      probs = ConvertOp::create(rewriter, loc, tensorType(probs).clone(stored), probs);
    rewriter.replaceOpWithNewOp<MatmulOp>(op, probs, value);
    return success();
  }
};

} // namespace

void colo::populateDecomposeAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<DecomposeAttention>(patterns.getContext());
}

namespace {
struct ColoDecomposeAttention
    : colo::impl::ColoDecomposeAttentionBase<ColoDecomposeAttention> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateDecomposeAttentionPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
