// colo-lower-to-linalg, data movement: transpose (linalg.transpose), reshape
// (tensor.collapse_shape / expand_shape), slice (tensor.extract_slice),
// concat (tensor.insert_slice into a tensor.empty), gather and embedding (a
// linalg.generic over the result that reads the input with tensor.extract at
// the gathered index), and their adjoints: slice_backward (a strided
// tensor.insert_slice into zeros) and scatter_add (a loop nest over the
// updates that adds into a buffer at the indexed positions).
#include "LowerToLinalg.h"

#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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
    // tensor.concat bufferizes to one copy per input into the result. A
    // chain of insert_slices would let a producer in the kernel write its
    // part in place, but one-shot bufferization's analysis of such a chain
    // is cubic in its length: a data-parallel bucket joins hundreds of
    // gradients (DenseNet-121's 494 took 200 s to bufferize).
    RankedTensorType type = tensorType(op.getResult());
    rewriter.replaceOpWithNewOp<tensor::ConcatOp>(
        op, type, normalizeAxis(op.getAxis(), type.getRank()), adaptor.getInputs());
    return success();
  }
};

/// `i` (a scalar of an integer type) as an index into a dimension of size
/// `len`: negative values count from the end, and the result is clamped into
/// [0, len) so that a bad index cannot access out of bounds (the interpreter
/// reports it as an error).
Value wrapIndex(OpBuilder &b, Location loc, Value i, int64_t len) {
  Type indexType = b.getIndexType();
  auto c = [&](int64_t v) { return constantOf(b, loc, indexType, v); };
  i = arith::IndexCastOp::create(b, loc, indexType, i);
  Value negative = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, i, c(0));
  i = arith::SelectOp::create(b, loc, negative, arith::AddIOp::create(b, loc, i, c(len)),
                              i);
  i = arith::MaxSIOp::create(b, loc, i, c(0));
  return arith::MinSIOp::create(b, loc, i, c(len - 1));
}

/// NumPy take: result[pre..., idx..., post...] = input[pre..., i, post...]
/// with i = indices[idx...] (see wrapIndex).
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
                       Value i = wrapIndex(nb, l, a[0], len);
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

/// Zeros of the sliced tensor's type with `grad` inserted at the slice's
/// strided positions.
struct SliceBackwardPattern : OpConversionPattern<SliceBackwardOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(SliceBackwardOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = tensorType(op.getResult());
    Type elt = type.getElementType();
    Value empty = tensor::EmptyOp::create(rewriter, loc, type.getShape(), elt);
    Value zeros =
        linalg::FillOp::create(rewriter, loc, constantOf(rewriter, loc, elt, 0.0), empty)
            .getResult(0);
    Value grad = adaptor.getGrad();
    auto inserted = tensor::InsertSliceOp::create(
        rewriter, loc, grad, zeros, indexAttrs(rewriter, op.getStart()),
        indexAttrs(rewriter, tensorType(grad).getShape()),
        indexAttrs(rewriter, op.getStride()));
    rewriter.replaceOp(op, inserted.getResult());
    return success();
  }
};

/// The adjoint of gather, which linalg cannot express (it writes at
/// data-dependent positions): a loop nest over the updates, the indices'
/// dimensions outermost, that adds every update element into a zero-filled
/// buffer at the position its index names, as the interpreter does. One pass
/// over the updates; repeated indices accumulate in order. The buffer is
/// allocated here and becomes the result through bufferization.to_tensor
/// (restrict: nothing else refers to it), so no scf op carries a tensor and
/// One-Shot Bufferize only converts the tensor.extract reads (the CPU kernel
/// pipeline registers no bufferization models for scf). Float types narrower
/// than f32 accumulate in f32 and are rounded once at the end.
struct ScatterAddPattern : OpConversionPattern<ScatterAddOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ScatterAddOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    OpBuilder &b = rewriter;
    Location loc = op.getLoc();
    RankedTensorType type = tensorType(op.getResult());
    int64_t rank = type.getRank();
    int64_t axis = normalizeAxis(op.getAxis(), rank);
    int64_t len = type.getShape()[axis];
    Type elt = type.getElementType(), acc = computeType(elt);
    Value updates = adaptor.getUpdates(), indices = adaptor.getIndices();
    ArrayRef<int64_t> updShape = tensorType(updates).getShape();
    int64_t idxRank = tensorType(indices).getRank();

    Value buffer = memref::AllocOp::create(b, loc, MemRefType::get(type.getShape(), acc));
    linalg::FillOp::create(b, loc, ValueRange{constantOf(b, loc, acc, 0.0)},
                           ValueRange{buffer});
    // A loop nest over the indices, and in it one over the other dimensions
    // of the updates.
    auto loopNest = [&](OpBuilder &nb, Location l, ArrayRef<int64_t> dims,
                        function_ref<void(OpBuilder &, Location, ValueRange)> body) {
      SmallVector<Value> lbs, ubs, steps;
      for (int64_t d : dims) {
        lbs.push_back(constantOf(nb, l, nb.getIndexType(), 0));
        ubs.push_back(constantOf(nb, l, nb.getIndexType(), updShape[d]));
        steps.push_back(constantOf(nb, l, nb.getIndexType(), 1));
      }
      scf::buildLoopNest(nb, l, lbs, ubs, steps, body);
    };
    SmallVector<int64_t> idxDims =
        llvm::to_vector(llvm::seq<int64_t>(axis, axis + idxRank));
    SmallVector<int64_t> sliceDims = llvm::to_vector(llvm::seq<int64_t>(0, axis));
    llvm::append_range(sliceDims, llvm::seq<int64_t>(axis + idxRank, updShape.size()));
    loopNest(b, loc, idxDims, [&](OpBuilder &ob, Location ol, ValueRange js) {
      Value i = wrapIndex(ob, ol, tensor::ExtractOp::create(ob, ol, indices, js), len);
      loopNest(ob, ol, sliceDims, [&](OpBuilder &ib, Location il, ValueRange ks) {
        // updates[k_pre..., j..., k_post...] into result[k_pre..., i, k_post...]
        SmallVector<Value> from(ks.take_front(axis)), to(ks.take_front(axis));
        llvm::append_range(from, js);
        to.push_back(i);
        llvm::append_range(from, ks.drop_front(axis));
        llvm::append_range(to, ks.drop_front(axis));
        Value v = promote(ib, il, tensor::ExtractOp::create(ib, il, updates, from));
        Value sum =
            arith::AddFOp::create(ib, il, memref::LoadOp::create(ib, il, buffer, to), v);
        memref::StoreOp::create(ib, il, sum, buffer, to);
      });
    });
    Value r = bufferization::ToTensorOp::create(b, loc, type.clone(acc), buffer,
                                                /*restrict=*/true, /*writable=*/true);
    if (acc != elt)
      r = buildMapped(b, loc, type,
                      {{r, AffineMap::getMultiDimIdentityMap(rank, b.getContext())}},
                      [](OpBuilder &, Location, ValueRange a) { return a[0]; });
    rewriter.replaceOp(op, r);
    return success();
  }
};

} // namespace

void colo::lowering::populateDataMovementPatterns(RewritePatternSet &patterns) {
  patterns.add<TransposePattern, ReshapePattern, SlicePattern, ConcatPattern,
               GatherPattern, EmbeddingPattern, SliceBackwardPattern,
               ScatterAddPattern>(patterns.getContext());
}
