// colo-lower-to-linalg: colo kernel ops -> linalg, tensor, arith and math on
// tensors (except scatter_add, which linalg cannot express: a loop nest over
// a buffer, see LowerToLinalgDataMovement.cpp). The builders shared by the
// patterns live here; the patterns are in LowerToLinalgElementwise.cpp,
// LowerToLinalgReductions.cpp and LowerToLinalgDataMovement.cpp, one per op
// or op family.
#include "LowerToLinalg.h"

#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/Transforms/DialectConversion.h"

namespace colo {
#define GEN_PASS_DEF_COLOLOWERTOLINALG
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;

namespace colo::lowering {

Type computeType(Type elementType) {
  auto ft = dyn_cast<FloatType>(elementType);
  if (ft && ft.getWidth() < 32)
    return Float32Type::get(elementType.getContext());
  return elementType;
}

Value promote(OpBuilder &b, Location loc, Value v) {
  Type to = computeType(v.getType());
  return to == v.getType() ? v : arith::ExtFOp::create(b, loc, to, v).getResult();
}

Value constantOf(OpBuilder &b, Location loc, Type type, double value) {
  if (auto ft = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(ft, value));
  if (type.isIndex())
    return arith::ConstantIndexOp::create(b, loc, static_cast<int64_t>(value));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

Value convertScalar(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  auto fromFloat = dyn_cast<FloatType>(from);
  auto toFloat = dyn_cast<FloatType>(to);
  auto i64 = b.getI64Type();
  if (fromFloat && toFloat) {
    if (fromFloat.getWidth() == toFloat.getWidth()) // f16 <-> bf16
      v = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
    if (cast<FloatType>(v.getType()).getWidth() < toFloat.getWidth())
      return arith::ExtFOp::create(b, loc, to, v);
    return arith::TruncFOp::create(b, loc, to, v);
  }
  if (to.isInteger(1)) {
    if (fromFloat)
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v,
                                   constantOf(b, loc, from, 0.0));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v,
                                 constantOf(b, loc, from, 0.0));
  }
  if (fromFloat) { // to an integer: truncate toward zero, NaN -> 0, wrap
    Value isNan = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, v, v);
    Value i = arith::FPToSIOp::create(b, loc, i64, v);
    i = arith::SelectOp::create(b, loc, isNan, constantOf(b, loc, i64, 0), i);
    return to == i64 ? i : arith::TruncIOp::create(b, loc, to, i).getResult();
  }
  bool isBool = from.isInteger(1);
  if (toFloat)
    return isBool ? arith::UIToFPOp::create(b, loc, to, v).getResult()
                  : arith::SIToFPOp::create(b, loc, to, v).getResult();
  // Integer to integer.
  unsigned fromWidth = from.getIntOrFloatBitWidth(), toWidth = to.getIntOrFloatBitWidth();
  if (fromWidth > toWidth)
    return arith::TruncIOp::create(b, loc, to, v);
  return isBool ? arith::ExtUIOp::create(b, loc, to, v).getResult()
                : arith::ExtSIOp::create(b, loc, to, v).getResult();
}

Value Arith::c(Type t, double v) { return constantOf(b, loc, t, v); }
/// Floats of different widths meet in the wider type (statistics that
/// accumulate in f64 combined with f32 elements).
static std::pair<Value, Value> widen(OpBuilder &b, Location loc, Value x, Value y) {
  auto fx = dyn_cast<FloatType>(x.getType()), fy = dyn_cast<FloatType>(y.getType());
  if (!fx || !fy || fx.getWidth() == fy.getWidth())
    return {x, y};
  if (fx.getWidth() < fy.getWidth())
    return {arith::ExtFOp::create(b, loc, fy, x), y};
  return {x, arith::ExtFOp::create(b, loc, fx, y)};
}

Value Arith::add(Value x, Value y) {
  std::tie(x, y) = widen(b, loc, x, y);
  return isa<FloatType>(x.getType()) ? arith::AddFOp::create(b, loc, x, y).getResult()
                                     : arith::AddIOp::create(b, loc, x, y).getResult();
}
Value Arith::sub(Value x, Value y) {
  std::tie(x, y) = widen(b, loc, x, y);
  return arith::SubFOp::create(b, loc, x, y);
}
Value Arith::mul(Value x, Value y) {
  std::tie(x, y) = widen(b, loc, x, y);
  return arith::MulFOp::create(b, loc, x, y);
}
Value Arith::div(Value x, Value y) {
  std::tie(x, y) = widen(b, loc, x, y);
  return isa<FloatType>(x.getType()) ? arith::DivFOp::create(b, loc, x, y).getResult()
                                     : arith::DivSIOp::create(b, loc, x, y).getResult();
}
Value Arith::max(Value x, Value y) {
  std::tie(x, y) = widen(b, loc, x, y);
  return isa<FloatType>(x.getType()) ? arith::MaximumFOp::create(b, loc, x, y).getResult()
                                     : arith::MaxSIOp::create(b, loc, x, y).getResult();
}
Value Arith::exp(Value x) { return math::ExpOp::create(b, loc, x); }
Value Arith::log(Value x) { return math::LogOp::create(b, loc, x); }
Value Arith::sqrt(Value x) { return math::SqrtOp::create(b, loc, x); }
Value Arith::pow(Value x, Value y) { return math::PowFOp::create(b, loc, x, y); }
Value Arith::invSqrt(Value x) { return div(c(x.getType(), 1.0), sqrt(x)); }
Value Arith::select(Value cond, Value x, Value y) {
  return arith::SelectOp::create(b, loc, cond, x, y);
}
Value Arith::to(Value x, Type t) { return convertScalar(b, loc, x, t); }

AffineMap broadcastMap(ArrayRef<int64_t> in, ArrayRef<int64_t> out, MLIRContext *ctx) {
  size_t lead = out.size() - in.size();
  SmallVector<AffineExpr> exprs;
  for (size_t d = 0; d < in.size(); ++d)
    exprs.push_back(in[d] == 1 && out[lead + d] != 1
                        ? getAffineConstantExpr(0, ctx)
                        : getAffineDimExpr(lead + d, ctx));
  return AffineMap::get(out.size(), 0, exprs, ctx);
}

AffineMap dropDimsMap(int64_t rank, ArrayRef<int64_t> dropped, MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs;
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(dropped, d))
      exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(rank, 0, exprs, ctx);
}

/// The float result of a scalar computation stored as `elementType`.
static Value demote(OpBuilder &b, Location loc, Value v, Type elementType) {
  if (v.getType() == elementType || !isa<FloatType>(elementType))
    return v;
  return convertScalar(b, loc, v, elementType);
}

SmallVector<Value> buildMappedResults(OpBuilder &b, Location loc,
                                      ArrayRef<RankedTensorType> resultTypes,
                                      ArrayRef<MappedOperand> operands,
                                      MultiScalarFn fn) {
  MLIRContext *ctx = b.getContext();
  int64_t rank = resultTypes.front().getRank();
  SmallVector<Value> inputs, inits;
  SmallVector<Type> types;
  SmallVector<AffineMap> maps;
  for (auto [v, map] : operands) {
    inputs.push_back(v);
    maps.push_back(map);
  }
  for (RankedTensorType type : resultTypes) {
    inits.push_back(
        tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType()));
    types.push_back(type);
    maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));
  }
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, types, inputs, inits, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        SmallVector<Value> scalars;
        for (Value a : args.take_front(inputs.size()))
          scalars.push_back(promote(nb, nloc, a));
        SmallVector<Value> results = fn(nb, nloc, scalars);
        for (auto [r, type] : llvm::zip_equal(results, resultTypes))
          r = demote(nb, nloc, r, type.getElementType());
        linalg::YieldOp::create(nb, nloc, results);
      });
  return llvm::to_vector_of<Value>(generic.getResults());
}

Value buildMapped(OpBuilder &b, Location loc, RankedTensorType resultType,
                  ArrayRef<MappedOperand> operands, ScalarFn fn) {
  return buildMappedResults(b, loc, {resultType}, operands,
                            [&](OpBuilder &nb, Location nloc, ValueRange a) {
                              return SmallVector<Value>{fn(nb, nloc, a)};
                            })[0];
}

Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                       ValueRange operands, ScalarFn fn) {
  SmallVector<MappedOperand> mapped;
  for (Value v : operands)
    mapped.push_back({v, broadcastMap(cast<RankedTensorType>(v.getType()).getShape(),
                                      resultType.getShape(), b.getContext())});
  return buildMapped(b, loc, resultType, mapped, fn);
}

SmallVector<Value> buildReduction(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                                  ArrayRef<int64_t> reduced,
                                  ArrayRef<MappedOperand> inputs,
                                  ArrayRef<TypedAttr> inits, ReduceFn fn) {
  MLIRContext *ctx = b.getContext();
  int64_t rank = shape.size();
  SmallVector<int64_t> keptShape;
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(reduced, d))
      keptShape.push_back(shape[d]);
  AffineMap outMap = dropDimsMap(rank, reduced, ctx);

  SmallVector<Value> ins, outs;
  SmallVector<Type> outTypes;
  SmallVector<AffineMap> maps;
  for (auto [v, map] : inputs) {
    ins.push_back(v);
    maps.push_back(map);
  }
  for (TypedAttr init : inits) {
    Value empty = tensor::EmptyOp::create(b, loc, keptShape, init.getType());
    Value scalar = arith::ConstantOp::create(b, loc, init);
    outs.push_back(linalg::FillOp::create(b, loc, scalar, empty).getResult(0));
    outTypes.push_back(outs.back().getType());
    maps.push_back(outMap);
  }
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  for (int64_t d : reduced)
    iterators[d] = utils::IteratorType::reduction;
  auto generic = linalg::GenericOp::create(
      b, loc, outTypes, ins, outs, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        SmallVector<Value> scalars;
        for (Value a : args.take_front(ins.size()))
          scalars.push_back(promote(nb, nloc, a));
        SmallVector<Value> next = fn(nb, nloc, scalars, args.drop_front(ins.size()));
        linalg::YieldOp::create(nb, nloc, next);
      });
  return llvm::to_vector_of<Value>(generic.getResults());
}

static SmallVector<ReassociationIndices> allInOne(int64_t rank) {
  if (rank == 0)
    return {};
  ReassociationIndices all;
  for (int64_t d = 0; d < rank; ++d)
    all.push_back(d);
  return {all};
}

Value reshapeTo(OpBuilder &b, Location loc, Value v, RankedTensorType type) {
  auto src = cast<RankedTensorType>(v.getType());
  if (src.getShape() == type.getShape())
    return v;
  // To or from rank 0 (no groups), or rank 1 (every dimension in one group).
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, type, v, allInOne(0));
  if (src.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, type, v, allInOne(0));
  if (type.getRank() == 1)
    return tensor::CollapseShapeOp::create(b, loc, type, v, allInOne(src.getRank()));
  if (src.getRank() == 1)
    return tensor::ExpandShapeOp::create(b, loc, type, v, allInOne(type.getRank()));
  if (src.getRank() > type.getRank())
    if (auto re = getReassociationIndicesForCollapse(src.getShape(), type.getShape()))
      return tensor::CollapseShapeOp::create(b, loc, type, v, *re);
  if (src.getRank() < type.getRank())
    if (auto re = getReassociationIndicesForCollapse(type.getShape(), src.getShape()))
      return tensor::ExpandShapeOp::create(b, loc, type, v, *re);
  auto flat = RankedTensorType::get({src.getNumElements()}, src.getElementType());
  Value f = tensor::CollapseShapeOp::create(b, loc, flat, v, allInOne(src.getRank()));
  return tensor::ExpandShapeOp::create(b, loc, type, f, allInOne(type.getRank()));
}

} // namespace colo::lowering

namespace {
struct ColoLowerToLinalgPass
    : colo::impl::ColoLowerToLinalgBase<ColoLowerToLinalgPass> {
  // scatter_add: scf loops over a memref that bufferization.to_tensor turns
  // into the result.
  void getDependentDialects(DialectRegistry &registry) const override {
    ColoLowerToLinalgBase::getDependentDialects(registry);
    registry.insert<bufferization::BufferizationDialect, memref::MemRefDialect,
                    scf::SCFDialect>();
  }

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    colo::lowering::populateElementwisePatterns(patterns);
    colo::lowering::populateReductionPatterns(patterns);
    colo::lowering::populateDataMovementPatterns(patterns);

    // Exactly the ops with a pattern must go; other colo ops (matmul,
    // convolution, pooling, globals) are left for the library-call lowering.
    ConversionTarget target(*ctx);
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect, scf::SCFDialect,
                           memref::MemRefDialect, bufferization::BufferizationDialect>();
    for (const std::unique_ptr<RewritePattern> &p : patterns.getNativePatterns())
      if (std::optional<OperationName> root = p->getRootKind())
        target.addIllegalOp(*root);
    if (failed(applyPartialConversion(getOperation(), target, std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
