// Folds and canonicalization patterns of the colo ops.
#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace colo;

namespace {
/// The float value of a splat constant operand, if it is one.
std::optional<APFloat> splatFloat(Attribute attr) {
  auto splat = dyn_cast_if_present<SplatElementsAttr>(attr);
  if (!splat || !isa<FloatType>(splat.getElementType()))
    return std::nullopt;
  return splat.getSplatValue<APFloat>();
}

bool isSplat(Attribute attr, double value) {
  std::optional<APFloat> v = splatFloat(attr);
  return v && v->convertToDouble() == value;
}

/// Folds `op(x, c)` to `x` when `c` is the identity element and no broadcast
/// changes the type.
OpFoldResult foldIdentity(Value x, Attribute c, Type resultType, double identity) {
  if (x.getType() == resultType && isSplat(c, identity))
    return x;
  return {};
}

/// Folds an op of two float splats of the result's shape.
template <typename Fn>
OpFoldResult foldSplats(ArrayRef<Attribute> operands, Type resultType, Fn fn) {
  std::optional<APFloat> a = splatFloat(operands[0]), b = splatFloat(operands[1]);
  if (!a || !b)
    return {};
  APFloat r = *a;
  fn(r, *b);
  return SplatElementsAttr::get(cast<ShapedType>(resultType), r);
}
} // namespace

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult r = foldIdentity(getLhs(), adaptor.getRhs(), getType(), 0.0))
    return r;
  if (OpFoldResult r = foldIdentity(getRhs(), adaptor.getLhs(), getType(), 0.0))
    return r;
  return foldSplats(adaptor.getOperands(), getType(), [](APFloat &a, const APFloat &b) {
    a.add(b, APFloat::rmNearestTiesToEven);
  });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult r = foldIdentity(getLhs(), adaptor.getRhs(), getType(), 0.0))
    return r;
  return foldSplats(adaptor.getOperands(), getType(), [](APFloat &a, const APFloat &b) {
    a.subtract(b, APFloat::rmNearestTiesToEven);
  });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult r = foldIdentity(getLhs(), adaptor.getRhs(), getType(), 1.0))
    return r;
  if (OpFoldResult r = foldIdentity(getRhs(), adaptor.getLhs(), getType(), 1.0))
    return r;
  return foldSplats(adaptor.getOperands(), getType(), [](APFloat &a, const APFloat &b) {
    a.multiply(b, APFloat::rmNearestTiesToEven);
  });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult r = foldIdentity(getLhs(), adaptor.getRhs(), getType(), 1.0))
    return r;
  return foldSplats(adaptor.getOperands(), getType(), [](APFloat &a, const APFloat &b) {
    a.divide(b, APFloat::rmNearestTiesToEven);
  });
}

OpFoldResult ConvertOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // convert(convert(x)) back to x's type is x when the middle type holds
  // every value of x's (bf16 -> f32 -> bf16); narrowing is observable.
  auto inner = getInput().getDefiningOp<ConvertOp>();
  if (!inner || inner.getInput().getType() != getType())
    return {};
  auto from = dyn_cast<FloatType>(getType().getElementType());
  auto middle = dyn_cast<FloatType>(inner.getType().getElementType());
  if (from && middle &&
      llvm::APFloatBase::isRepresentableBy(from.getFloatSemantics(),
                                           middle.getFloatSemantics()))
    return inner.getInput();
  return {};
}

OpFoldResult DropoutOp::fold(FoldAdaptor) {
  if (getRatio().isZero())
    return getInput();
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto dense = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(getType());
  if (auto producer = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(producer.getInput());
    return getResult();
  }
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  if (llvm::equal(getPermutation(), llvm::seq<int64_t>(0, getPermutation().size())))
    return getInput();
  return {};
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  // Pieces with nothing along the axis (Phi-3's pass-through half of a
  // rotary embedding over the whole head) add nothing: drop them in place.
  int64_t rank = getType().getRank(), axis = static_cast<int64_t>(getAxis());
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return {}; // the verifier reports it
  SmallVector<Value> kept;
  for (Value v : getInputs())
    if (cast<RankedTensorType>(v.getType()).getDimSize(axis) != 0)
      kept.push_back(v);
  if (kept.size() == 1)
    return kept.front();
  if (!kept.empty() && kept.size() < getInputs().size()) {
    getInputsMutable().assign(kept);
    return getResult();
  }
  return {};
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto splat = dyn_cast_if_present<SplatElementsAttr>(adaptor.getInput()))
    return splat.resizeSplat(getType());
  return {};
}

namespace {
/// transpose(transpose(x, p), q) -> transpose(x, p∘q).
struct ComposeTransposes : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<TransposeOp>();
    if (!inner)
      return failure();
    SmallVector<int64_t> perm;
    for (int64_t p : op.getPermutation())
      perm.push_back(inner.getPermutation()[p]);
    rewriter.replaceOpWithNewOp<TransposeOp>(op, inner.getInput(), perm);
    return success();
  }
};

/// A transpose that only moves unit dimensions is a reshape.
struct TransposeOfUnitDimsToReshape : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto in = cast<RankedTensorType>(op.getInput().getType());
    SmallVector<int64_t> moved;
    for (int64_t p : op.getPermutation())
      if (in.getDimSize(p) != 1)
        moved.push_back(p);
    if (!llvm::is_sorted(moved))
      return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), op.getInput());
    return success();
  }
};
} // namespace

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<ComposeTransposes, TransposeOfUnitDimsToReshape>(context);
}
