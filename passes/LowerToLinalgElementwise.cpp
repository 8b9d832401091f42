// colo-lower-to-linalg, elementwise ops: every op here becomes one parallel
// linalg.generic that reads its operands with NumPy broadcasting. An op is
// one `scalarOf` overload (its semantics on one element, as the interpreter
// computes it) plus one entry in populateElementwisePatterns.
#include "LowerToLinalg.h"

#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/Support/Format.h"

#include <cmath>

using namespace mlir;
using namespace colo;
using namespace colo::lowering;

namespace {

bool isFloat(Value v) { return isa<FloatType>(v.getType()); }

/// A constant of `like`'s type.
Value cst(OpBuilder &b, Location loc, Value like, double value) {
  return constantOf(b, loc, like.getType(), value);
}

Value sigmoidOf(OpBuilder &b, Location loc, Value x) {
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  Value d = arith::AddFOp::create(b, loc, cst(b, loc, x, 1.0), e);
  return arith::DivFOp::create(b, loc, cst(b, loc, x, 1.0), d);
}

//===----------------------------------------------------------------------===//
// Scalar semantics, one overload per op; `a` holds the promoted operands.
//===----------------------------------------------------------------------===//

Value scalarOf(NegOp, OpBuilder &b, Location loc, ValueRange a) {
  return arith::NegFOp::create(b, loc, a[0]);
}
Value scalarOf(ExpOp, OpBuilder &b, Location loc, ValueRange a) {
  return math::ExpOp::create(b, loc, a[0]);
}
Value scalarOf(LogOp, OpBuilder &b, Location loc, ValueRange a) {
  return math::LogOp::create(b, loc, a[0]);
}
Value scalarOf(SqrtOp, OpBuilder &b, Location loc, ValueRange a) {
  return math::SqrtOp::create(b, loc, a[0]);
}
Value scalarOf(RsqrtOp, OpBuilder &b, Location loc, ValueRange a) {
  return arith::DivFOp::create(b, loc, cst(b, loc, a[0], 1.0),
                               math::SqrtOp::create(b, loc, a[0]));
}
Value scalarOf(ReciprocalOp, OpBuilder &b, Location loc, ValueRange a) {
  return arith::DivFOp::create(b, loc, cst(b, loc, a[0], 1.0), a[0]);
}
Value scalarOf(TanhOp, OpBuilder &b, Location loc, ValueRange a) {
  return math::TanhOp::create(b, loc, a[0]);
}
Value scalarOf(ErfOp, OpBuilder &b, Location loc, ValueRange a) {
  return math::ErfOp::create(b, loc, a[0]);
}
Value scalarOf(SigmoidOp, OpBuilder &b, Location loc, ValueRange a) {
  return sigmoidOf(b, loc, a[0]);
}
Value scalarOf(ReluOp, OpBuilder &b, Location loc, ValueRange a) {
  // x > 0 ? x : 0, so NaN becomes 0 as in the interpreter.
  Value zero = cst(b, loc, a[0], 0.0);
  Value pos = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, a[0], zero);
  return arith::SelectOp::create(b, loc, pos, a[0], zero);
}
Value scalarOf(SiluOp, OpBuilder &b, Location loc, ValueRange a) {
  return arith::MulFOp::create(b, loc, a[0], sigmoidOf(b, loc, a[0]));
}
Value scalarOf(CosOp, OpBuilder &b, Location loc, ValueRange a) {
  return math::CosOp::create(b, loc, a[0]);
}
Value scalarOf(SinOp, OpBuilder &b, Location loc, ValueRange a) {
  return math::SinOp::create(b, loc, a[0]);
}
Value scalarOf(GeluOp op, OpBuilder &b, Location loc, ValueRange a) {
  Value x = a[0];
  auto mul = [&](Value p, Value q) { return arith::MulFOp::create(b, loc, p, q); };
  Value inner;
  if (op.getApproximation() == GeluApproximation::tanh) {
    // tanh(sqrt(2 / pi) * (x + 0.044715 x^3))
    Value x3 = mul(mul(x, x), x);
    Value poly = arith::AddFOp::create(b, loc, x, mul(cst(b, loc, x, 0.044715), x3));
    inner = math::TanhOp::create(b, loc,
                                 mul(cst(b, loc, x, std::sqrt(2.0 / M_PI)), poly));
  } else {
    // erf(x / sqrt(2))
    inner = math::ErfOp::create(b, loc, mul(x, cst(b, loc, x, M_SQRT1_2)));
  }
  Value onePlus = arith::AddFOp::create(b, loc, cst(b, loc, x, 1.0), inner);
  return mul(mul(cst(b, loc, x, 0.5), x), onePlus);
}
Value scalarOf(ClampOp op, OpBuilder &b, Location loc, ValueRange a) {
  Value lo = cst(b, loc, a[0], op.getMinAttr().getValueAsDouble());
  Value hi = cst(b, loc, a[0], op.getMaxAttr().getValueAsDouble());
  return arith::MinimumFOp::create(b, loc, arith::MaximumFOp::create(b, loc, a[0], lo),
                                   hi);
}

Value scalarOf(AddOp, OpBuilder &b, Location loc, ValueRange a) {
  return isFloat(a[0]) ? arith::AddFOp::create(b, loc, a[0], a[1]).getResult()
                       : arith::AddIOp::create(b, loc, a[0], a[1]).getResult();
}
Value scalarOf(SubOp, OpBuilder &b, Location loc, ValueRange a) {
  return isFloat(a[0]) ? arith::SubFOp::create(b, loc, a[0], a[1]).getResult()
                       : arith::SubIOp::create(b, loc, a[0], a[1]).getResult();
}
Value scalarOf(MulOp, OpBuilder &b, Location loc, ValueRange a) {
  return isFloat(a[0]) ? arith::MulFOp::create(b, loc, a[0], a[1]).getResult()
                       : arith::MulIOp::create(b, loc, a[0], a[1]).getResult();
}
Value scalarOf(DivOp, OpBuilder &b, Location loc, ValueRange a) {
  if (isFloat(a[0]))
    return arith::DivFOp::create(b, loc, a[0], a[1]);
  // Integer division truncates toward zero; x / 0 is 0 as in the interpreter.
  Value zero = cst(b, loc, a[1], 0.0);
  Value byZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, a[1], zero);
  Value safe = arith::SelectOp::create(b, loc, byZero, cst(b, loc, a[1], 1.0), a[1]);
  Value q = arith::DivSIOp::create(b, loc, a[0], safe);
  return arith::SelectOp::create(b, loc, byZero, zero, q);
}
Value scalarOf(PowOp, OpBuilder &b, Location loc, ValueRange a) {
  if (isFloat(a[0]))
    return math::PowFOp::create(b, loc, a[0], a[1]);
  // Integers: through f64, as the interpreter evaluates std::pow.
  Type f64 = b.getF64Type(), it = a[0].getType();
  Value p = math::PowFOp::create(b, loc, convertScalar(b, loc, a[0], f64),
                                 convertScalar(b, loc, a[1], f64));
  return convertScalar(b, loc, p, it);
}
Value scalarOf(MaximumOp, OpBuilder &b, Location loc, ValueRange a) {
  return isFloat(a[0]) ? arith::MaximumFOp::create(b, loc, a[0], a[1]).getResult()
                       : arith::MaxSIOp::create(b, loc, a[0], a[1]).getResult();
}
Value scalarOf(MinimumOp, OpBuilder &b, Location loc, ValueRange a) {
  return isFloat(a[0]) ? arith::MinimumFOp::create(b, loc, a[0], a[1]).getResult()
                       : arith::MinSIOp::create(b, loc, a[0], a[1]).getResult();
}
Value scalarOf(CompareOp op, OpBuilder &b, Location loc, ValueRange a) {
  ComparePredicate p = op.getPredicate();
  if (isFloat(a[0])) {
    // Ordered, except `ne`, which holds for NaN as C's != does.
    arith::CmpFPredicate fp = arith::CmpFPredicate::OEQ;
    switch (p) {
    case ComparePredicate::eq: fp = arith::CmpFPredicate::OEQ; break;
    case ComparePredicate::ne: fp = arith::CmpFPredicate::UNE; break;
    case ComparePredicate::lt: fp = arith::CmpFPredicate::OLT; break;
    case ComparePredicate::le: fp = arith::CmpFPredicate::OLE; break;
    case ComparePredicate::gt: fp = arith::CmpFPredicate::OGT; break;
    case ComparePredicate::ge: fp = arith::CmpFPredicate::OGE; break;
    }
    return arith::CmpFOp::create(b, loc, fp, a[0], a[1]);
  }
  // Signed, except i1, whose true is 1 (not -1) in the interpreter.
  bool u = a[0].getType().isInteger(1);
  arith::CmpIPredicate ip = arith::CmpIPredicate::eq;
  switch (p) {
  case ComparePredicate::eq: ip = arith::CmpIPredicate::eq; break;
  case ComparePredicate::ne: ip = arith::CmpIPredicate::ne; break;
  case ComparePredicate::lt: ip = u ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt; break;
  case ComparePredicate::le: ip = u ? arith::CmpIPredicate::ule : arith::CmpIPredicate::sle; break;
  case ComparePredicate::gt: ip = u ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt; break;
  case ComparePredicate::ge: ip = u ? arith::CmpIPredicate::uge : arith::CmpIPredicate::sge; break;
  }
  return arith::CmpIOp::create(b, loc, ip, a[0], a[1]);
}
Value scalarOf(SelectOp, OpBuilder &b, Location loc, ValueRange a) {
  return arith::SelectOp::create(b, loc, a[0], a[1], a[2]);
}
Value scalarOf(ConvertOp op, OpBuilder &b, Location loc, ValueRange a) {
  return convertScalar(b, loc, a[0], getElementTypeOrSelf(op.getType()));
}
Value scalarOf(BroadcastToOp, OpBuilder &, Location, ValueRange a) { return a[0]; }

/// Any op with a `scalarOf`: one linalg.generic over the result shape.
template <typename OpTy>
struct ElementwisePattern : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    Value r = buildElementwise(rewriter, op.getLoc(), type, adaptor.getOperands(),
                               [&](OpBuilder &b, Location loc, ValueRange args) {
                                 return scalarOf(op, b, loc, args);
                               });
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct ConstantPattern : OpConversionPattern<ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ConstantOp op, OpAdaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto value = dyn_cast<TypedAttr>(op.getValue());
    if (!value)
      return rewriter.notifyMatchFailure(op, "value is not a typed attribute");
    rewriter.replaceOp(op, arith::ConstantOp::create(rewriter, op.getLoc(), value));
    return success();
  }
};

/// Dropout with ratio 0 is the identity. A positive ratio needs the random
/// stream, which CPU kernels do not generate yet: that is an error.
struct DropoutPattern : OpConversionPattern<DropoutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(DropoutOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    double ratio = op.getRatioAttr().getValueAsDouble();
    if (ratio != 0.0) {
      std::string text;
      llvm::raw_string_ostream(text) << llvm::format("%g", ratio);
      return op.emitOpError() << "with ratio " << text
                              << " > 0 has no CPU kernel lowering yet (only "
                                 "ratio 0, the identity)";
    }
    rewriter.replaceOp(op, adaptor.getInput());
    return success();
  }
};

} // namespace

void colo::lowering::populateElementwisePatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ElementwisePattern<NegOp>, ElementwisePattern<ExpOp>,
               ElementwisePattern<LogOp>, ElementwisePattern<SqrtOp>,
               ElementwisePattern<RsqrtOp>, ElementwisePattern<ReciprocalOp>,
               ElementwisePattern<TanhOp>, ElementwisePattern<ErfOp>,
               ElementwisePattern<SigmoidOp>, ElementwisePattern<ReluOp>,
               ElementwisePattern<SiluOp>, ElementwisePattern<CosOp>,
               ElementwisePattern<SinOp>, ElementwisePattern<GeluOp>,
               ElementwisePattern<ClampOp>>(ctx);
  patterns.add<ElementwisePattern<AddOp>, ElementwisePattern<SubOp>,
               ElementwisePattern<MulOp>, ElementwisePattern<DivOp>,
               ElementwisePattern<PowOp>, ElementwisePattern<MaximumOp>,
               ElementwisePattern<MinimumOp>, ElementwisePattern<CompareOp>,
               ElementwisePattern<SelectOp>, ElementwisePattern<ConvertOp>,
               ElementwisePattern<BroadcastToOp>>(ctx);
  patterns.add<ConstantPattern, DropoutPattern>(ctx);
}
