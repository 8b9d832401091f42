// colo-lower-to-linalg, data movement: transpose (linalg.transpose), reshape
// (tensor.collapse_shape / expand_shape), slice (tensor.extract_slice),
// concat (tensor.insert_slice into a tensor.empty), gather and embedding (a
// linalg.generic over the result that reads the input with tensor.extract at
// the gathered index).
#include "LowerToLinalg.h"

#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace colo;
using namespace colo::lowering;

namespace {

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

SmallVector<OpFoldResult> indexAttrs(OpBuilder &b, ArrayRef<int64_t> values) {
  return llvm::map_to_vector(values, [&](int64_t v) -> OpFoldResult {
    return b.getIndexAttr(v);
  });
}

struct TransposePattern : OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    RankedTensorType type = tensorType(op.getResult());
    Value init = tensor::EmptyOp::create(rewriter, op.getLoc(), type.getShape(),
                                        type.getElementType());
    auto t = linalg::TransposeOp::create(rewriter, op.getLoc(), adaptor.getInput(), init,
                                         op.getPermutation());
    rewriter.replaceOp(op, t.getResult());
    return success();
  }
};

struct ReshapePattern : OpConversionPattern<ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, reshapeTo(rewriter, op.getLoc(), adaptor.getInput(),
                                     tensorType(op.getResult())));
    return success();
  }
};

struct SlicePattern : OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    RankedTensorType type = tensorType(op.getResult());
    auto slice = tensor::ExtractSliceOp::create(
        rewriter, op.getLoc(), type, adaptor.getInput(), indexAttrs(rewriter, op.getStart()),
        indexAttrs(rewriter, type.getShape()), indexAttrs(rewriter, op.getStride()));
    rewriter.replaceOp(op, slice.getResult());
    return success();
  }
};

struct ConcatPattern : OpConversionPattern<ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ConcatOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = tensorType(op.getResult());
    int64_t rank = type.getRank();
    int64_t axis = normalizeAxis(op.getAxis(), rank);
    Value result = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                          type.getElementType());
    SmallVector<int64_t> offsets(rank, 0), strides(rank, 1);
    for (Value in : adaptor.getInputs()) {
      ArrayRef<int64_t> shape = tensorType(in).getShape();
      result = tensor::InsertSliceOp::create(rewriter, loc, in, result,
                                             indexAttrs(rewriter, offsets),
                                             indexAttrs(rewriter, shape),
                                             indexAttrs(rewriter, strides));
      offsets[axis] += shape[axis];
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// NumPy take: result[pre..., idx..., post...] = input[pre..., i, post...]
/// with i = indices[idx...], negative i counting from the end. The index is
/// clamped into range so that a bad one cannot read out of bounds (the
/// interpreter reports it as an error).
Value buildGather(OpBuilder &b, Location loc, Value input, Value indices, int64_t axis,
                  RankedTensorType resultType) {
  MLIRContext *ctx = b.getContext();
  RankedTensorType inType = tensorType(input);
  int64_t inRank = inType.getRank(), outRank = resultType.getRank();
  axis = normalizeAxis(axis, inRank);
  int64_t idxRank = tensorType(indices).getRank();
  int64_t len = inType.getShape()[axis];
  SmallVector<AffineExpr> idxExprs;
  for (int64_t d = 0; d < idxRank; ++d)
    idxExprs.push_back(getAffineDimExpr(axis + d, ctx));
  AffineMap idxMap = AffineMap::get(outRank, 0, idxExprs, ctx);
  return buildMapped(b, loc, resultType, {{indices, idxMap}},
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       Type indexType = nb.getIndexType();
                       auto c = [&](int64_t v) { return constantOf(nb, l, indexType, v); };
                       Value i = arith::IndexCastOp::create(nb, l, indexType, a[0]);
                       Value negative = arith::CmpIOp::create(
                           nb, l, arith::CmpIPredicate::slt, i, c(0));
                       i = arith::SelectOp::create(
                           nb, l, negative, arith::AddIOp::create(nb, l, i, c(len)), i);
                       i = arith::MaxSIOp::create(nb, l, i, c(0));
                       i = arith::MinSIOp::create(nb, l, i, c(len - 1));
                       SmallVector<Value> at;
                       for (int64_t d = 0; d < axis; ++d)
                         at.push_back(linalg::IndexOp::create(nb, l, d));
                       at.push_back(i);
                       for (int64_t d = axis + idxRank; d < outRank; ++d)
                         at.push_back(linalg::IndexOp::create(nb, l, d));
                       return tensor::ExtractOp::create(nb, l, input, at).getResult();
                     });
}

struct GatherPattern : OpConversionPattern<GatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(GatherOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, buildGather(rewriter, op.getLoc(), adaptor.getInput(),
                                       adaptor.getIndices(), op.getAxis(),
                                       tensorType(op.getResult())));
    return success();
  }
};

struct EmbeddingPattern : OpConversionPattern<EmbeddingOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(EmbeddingOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, buildGather(rewriter, op.getLoc(), adaptor.getTable(),
                                       adaptor.getIds(), 0, tensorType(op.getResult())));
    return success();
  }
};

} // namespace

void colo::lowering::populateDataMovementPatterns(RewritePatternSet &patterns) {
  patterns.add<TransposePattern, ReshapePattern, SlicePattern, ConcatPattern,
               GatherPattern, EmbeddingPattern>(patterns.getContext());
}
