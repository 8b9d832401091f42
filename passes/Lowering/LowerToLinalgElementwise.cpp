// colo-lower-to-linalg, elementwise ops: every op here becomes one parallel
// linalg.generic that reads its operands with NumPy broadcasting. An op is
// one `scalarOf` overload (its semantics on one element, as the interpreter
// computes it) plus one entry in populateElementwisePatterns.
//
// The optimizer updates are elementwise too: each reads the learning rate
// and the step once (tensor.extract), computes its bias corrections as
// scalars, and updates the parameter and its state in one generic with a
// result per tensor; LAMB and LARS first reduce the norms they need.
#include "LowerToLinalg.h"

#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
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
Value scalarOf(AbsOp, OpBuilder &b, Location loc, ValueRange a) {
  return math::AbsFOp::create(b, loc, a[0]);
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

/// Dropout without a key (inference) or with ratio 0 is the identity; with a
/// key, each element's keep/drop decision is colo::dropoutDrops of its
/// row-major index, computed in the generic from linalg.index.
struct DropoutPattern : OpConversionPattern<DropoutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(DropoutOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    double ratio = op.getRatioAttr().getValueAsDouble();
    Value x = adaptor.getInput();
    if (ratio == 0.0 || !adaptor.getKey()) {
      rewriter.replaceOp(op, x);
      return success();
    }
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(x.getType());
    Value key = tensor::ExtractOp::create(rewriter, loc, adaptor.getKey(), ValueRange{});
    Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                         type.getElementType());
    AffineMap id = AffineMap::getMultiDimIdentityMap(type.getRank(), getContext());
    SmallVector<utils::IteratorType> iterators(type.getRank(),
                                               utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, ValueRange{x}, ValueRange{init},
        ArrayRef<AffineMap>{id, id}, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Type i64 = b.getI64Type();
          auto c = [&](uint64_t v) {
            return arith::ConstantOp::create(b, l, b.getI64IntegerAttr(int64_t(v)));
          };
          Value index = c(0);
          for (int64_t d = 0; d < type.getRank(); ++d) {
            Value i = arith::IndexCastOp::create(b, l, i64, linalg::IndexOp::create(b, l, d));
            index = arith::AddIOp::create(
                b, l, arith::MulIOp::create(b, l, index, c(type.getDimSize(d))), i);
          }
          // As colo::dropoutDrops: mix key * 0x9e3779b97f4a7c15 + index.
          Value z = arith::AddIOp::create(
              b, l, arith::MulIOp::create(b, l, key, c(0x9e3779b97f4a7c15ULL)), index);
          auto mix = [&](Value v, int shift, uint64_t mul) {
            Value x = arith::XOrIOp::create(b, l, v, arith::ShRUIOp::create(b, l, v, c(shift)));
            return mul ? arith::MulIOp::create(b, l, x, c(mul)).getResult() : x;
          };
          z = mix(mix(mix(z, 30, 0xbf58476d1ce4e5b9ULL), 27, 0x94d049bb133111ebULL), 31, 0);
          Value top = arith::ShRUIOp::create(b, l, z, c(40));
          auto threshold = static_cast<uint64_t>(std::ceil(ratio * double(1 << 24)));
          Value drop =
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, top, c(threshold));
          Arith m{b, l};
          Value v = promote(b, l, args[0]);
          Value kept = m.mul(v, m.c(v.getType(), 1.0 / (1.0 - ratio)));
          Value y = m.select(drop, m.c(v.getType(), 0.0), kept);
          linalg::YieldOp::create(b, l, convertScalar(b, l, y, type.getElementType()));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

/// The element of a 0-d tensor (the learning rate, the step, a norm).
Value scalarIn(OpBuilder &b, Location loc, Value tensor) {
  return tensor::ExtractOp::create(b, loc, tensor, ValueRange{});
}

/// 1 - beta^step, the bias correction of a moment, as type `acc`. It is
/// computed in f64 (once per update): in f32, 1 - 0.999^1 would already be
/// 1e-5 off.
Value biasCorrection(Arith &m, double beta, Value step, Type acc) {
  Type f64 = m.b.getF64Type();
  return m.to(m.sub(m.c(f64, 1.0), m.pow(m.c(f64, beta), m.to(step, f64))), acc);
}

/// The sums of squares of `tensors` (of one shape) over all their elements,
/// as scalars of type `acc`.
SmallVector<Value> sumsOfSquares(OpBuilder &b, Location loc, ValueRange tensors,
                                 Type acc) {
  auto type = cast<RankedTensorType>(tensors.front().getType());
  int64_t rank = type.getRank();
  AffineMap id = AffineMap::getMultiDimIdentityMap(rank, b.getContext());
  SmallVector<MappedOperand> inputs;
  SmallVector<TypedAttr> inits;
  for (Value t : tensors) {
    inputs.push_back({t, id});
    inits.push_back(b.getFloatAttr(acc, 0.0));
  }
  SmallVector<Value> sums = buildReduction(
      b, loc, type.getShape(), llvm::to_vector(llvm::seq<int64_t>(0, rank)), inputs,
      inits, [&](OpBuilder &nb, Location l, ValueRange in, ValueRange a) {
        Arith m{nb, l};
        SmallVector<Value> next;
        for (auto [x, s] : llvm::zip_equal(in, a))
          next.push_back(m.add(s, m.mul(m.to(x, acc), m.to(x, acc))));
        return next;
      });
  return llvm::map_to_vector(sums, [&](Value s) { return scalarIn(b, loc, s); });
}

/// `num / den`, or 1 where either of the norms `x` and `y` is 0.
Value ratioOrOne(Arith &m, Value x, Value y, Value num, Value den) {
  Type t = x.getType();
  Value zero = m.c(t, 0.0);
  Value xZero = arith::CmpFOp::create(m.b, m.loc, arith::CmpFPredicate::OEQ, x, zero);
  Value yZero = arith::CmpFOp::create(m.b, m.loc, arith::CmpFPredicate::OEQ, y, zero);
  Value either = arith::OrIOp::create(m.b, m.loc, xZero, yZero);
  return m.select(either, m.c(t, 1.0), m.div(num, den));
}

AffineMap identityOf(OpBuilder &b, RankedTensorType type) {
  return AffineMap::getMultiDimIdentityMap(type.getRank(), b.getContext());
}

/// torch.optim.SGD: one generic for the parameter and, with momentum, the
/// buffer (its first value, at step 1, is the gradient); without momentum
/// the buffer is returned as it is.
struct SgdUpdatePattern : OpConversionPattern<SgdUpdateOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(SgdUpdateOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    OpBuilder &b = rewriter;
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getParam().getType());
    Type acc = computeType(type.getElementType());
    double momentum = op.getMomentum().convertToDouble();
    double dampening = op.getDampening().convertToDouble();
    double wd = op.getWeightDecay().convertToDouble();
    bool nesterov = op.getNesterov();
    Value lr = convertScalar(b, loc, scalarIn(b, loc, adaptor.getLr()), acc);
    Value first;
    if (momentum != 0.0) {
      Value step = scalarIn(b, loc, adaptor.getStep());
      first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, step,
                                    constantOf(b, loc, step.getType(), 1));
    }
    AffineMap id = identityOf(b, type);
    SmallVector<RankedTensorType> types = {type};
    if (momentum != 0.0)
      types.push_back(type);
    SmallVector<Value> r = buildMappedResults(
        b, loc, types,
        {{adaptor.getParam(), id}, {adaptor.getGrad(), id},
         {adaptor.getMomentumBuffer(), id}},
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Arith m{nb, l};
          Value p = a[0], g = a[1];
          if (wd != 0.0)
            g = m.add(g, m.mul(m.c(acc, wd), p));
          if (momentum == 0.0)
            return SmallVector<Value>{m.sub(p, m.mul(lr, g))};
          Value later = m.add(m.mul(m.c(acc, momentum), a[2]),
                              m.mul(m.c(acc, 1.0 - dampening), g));
          Value buf = m.select(first, g, later);
          Value dir = nesterov ? m.add(g, m.mul(m.c(acc, momentum), buf)) : buf;
          return SmallVector<Value>{m.sub(p, m.mul(lr, dir)), buf};
        });
    if (momentum == 0.0)
      r.push_back(adaptor.getMomentumBuffer());
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// Adam's moments (Adam, AdamW, LAMB): b1 m + (1 - b1) g and
/// b2 v + (1 - b2) g^2.
std::pair<Value, Value> adamMoments(Arith &m, Type acc, double b1, double b2, Value g,
                                    Value expAvg, Value expAvgSq) {
  Value mt = m.add(m.mul(m.c(acc, b1), expAvg), m.mul(m.c(acc, 1.0 - b1), g));
  Value vt = m.add(m.mul(m.c(acc, b2), expAvgSq), m.mul(m.mul(m.c(acc, 1.0 - b2), g), g));
  return {mt, vt};
}

/// torch.optim.Adam / AdamW: the bias corrections once, then one generic for
/// the parameter and both moments.
struct AdamUpdatePattern : OpConversionPattern<AdamUpdateOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(AdamUpdateOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    OpBuilder &b = rewriter;
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getParam().getType());
    Type acc = computeType(type.getElementType());
    double b1 = op.getBeta1().convertToDouble(), b2 = op.getBeta2().convertToDouble();
    double eps = op.getEpsilon().convertToDouble();
    double wd = op.getWeightDecay().convertToDouble();
    bool decoupled = op.getDecoupled();
    Arith once{b, loc};
    Value lr = once.to(scalarIn(b, loc, adaptor.getLr()), acc);
    Value step = scalarIn(b, loc, adaptor.getStep());
    Value stepSize = once.div(lr, biasCorrection(once, b1, step, acc));
    Value bc2Sqrt = once.sqrt(biasCorrection(once, b2, step, acc));
    Value decay;
    if (decoupled)
      decay = once.sub(once.c(acc, 1.0), once.mul(lr, once.c(acc, wd)));
    AffineMap id = identityOf(b, type);
    SmallVector<Value> r = buildMappedResults(
        b, loc, {type, type, type},
        {{adaptor.getParam(), id}, {adaptor.getGrad(), id}, {adaptor.getExpAvg(), id},
         {adaptor.getExpAvgSq(), id}},
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Arith m{nb, l};
          Value p = a[0], g = a[1];
          if (decoupled)
            p = m.mul(p, decay);
          else if (wd != 0.0)
            g = m.add(g, m.mul(m.c(acc, wd), p));
          auto [mt, vt] = adamMoments(m, acc, b1, b2, g, a[2], a[3]);
          Value denom = m.add(m.div(m.sqrt(vt), bc2Sqrt), m.c(acc, eps));
          return SmallVector<Value>{m.sub(p, m.div(m.mul(stepSize, mt), denom)), mt, vt};
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

/// LAMB: one generic for the moments and the update direction r (kept in
/// the compute type), one reduction for ||param||^2 and ||r||^2, the trust
/// ratio as a scalar, and one generic for the parameter.
struct LambUpdatePattern : OpConversionPattern<LambUpdateOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(LambUpdateOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    OpBuilder &b = rewriter;
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getParam().getType());
    Type acc = computeType(type.getElementType());
    double b1 = op.getBeta1().convertToDouble(), b2 = op.getBeta2().convertToDouble();
    double eps = op.getEpsilon().convertToDouble();
    double wd = op.getWeightDecay().convertToDouble();
    Arith once{b, loc};
    Value lr = once.to(scalarIn(b, loc, adaptor.getLr()), acc);
    Value step = scalarIn(b, loc, adaptor.getStep());
    Value bc1 = biasCorrection(once, b1, step, acc);
    Value bc2 = biasCorrection(once, b2, step, acc);
    AffineMap id = identityOf(b, type);
    Value param = adaptor.getParam();
    SmallVector<Value> moments = buildMappedResults(
        b, loc, {type, type, type.clone(acc)},
        {{param, id}, {adaptor.getGrad(), id}, {adaptor.getExpAvg(), id},
         {adaptor.getExpAvgSq(), id}},
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Arith m{nb, l};
          auto [mt, vt] = adamMoments(m, acc, b1, b2, a[1], a[2], a[3]);
          Value update = m.add(
              m.div(m.div(mt, bc1), m.add(m.sqrt(m.div(vt, bc2)), m.c(acc, eps))),
              m.mul(m.c(acc, wd), a[0]));
          return SmallVector<Value>{mt, vt, update};
        });
    Value update = moments[2];
    SmallVector<Value> sq = sumsOfSquares(b, loc, {param, update}, acc);
    Value pNorm = once.sqrt(sq[0]), uNorm = once.sqrt(sq[1]);
    Value trust = ratioOrOne(once, pNorm, uNorm, pNorm, uNorm);
    Value stepScale = once.mul(lr, trust);
    Value newParam = buildMapped(b, loc, type, {{param, id}, {update, id}},
                                 [&](OpBuilder &nb, Location l, ValueRange a) {
                                   Arith m{nb, l};
                                   return m.sub(a[0], m.mul(stepScale, a[1]));
                                 });
    rewriter.replaceOp(op, {newParam, moments[0], moments[1]});
    return success();
  }
};

/// LARS: one reduction for ||param||^2 and ||grad||^2, the local learning
/// rate as a scalar, and one generic for the buffer and the parameter.
struct LarsUpdatePattern : OpConversionPattern<LarsUpdateOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(LarsUpdateOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    OpBuilder &b = rewriter;
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getParam().getType());
    Type acc = computeType(type.getElementType());
    double momentum = op.getMomentum().convertToDouble();
    double wd = op.getWeightDecay().convertToDouble();
    double trustCoefficient = op.getTrustCoefficient().convertToDouble();
    double eps = op.getEpsilon().convertToDouble();
    Arith once{b, loc};
    Value lr = once.to(scalarIn(b, loc, adaptor.getLr()), acc);
    Value param = adaptor.getParam(), grad = adaptor.getGrad();
    SmallVector<Value> sq = sumsOfSquares(b, loc, {param, grad}, acc);
    Value pNorm = once.sqrt(sq[0]), gNorm = once.sqrt(sq[1]);
    Value localLr = ratioOrOne(
        once, pNorm, gNorm, once.mul(once.c(acc, trustCoefficient), pNorm),
        once.add(once.add(gNorm, once.mul(once.c(acc, wd), pNorm)), once.c(acc, eps)));
    Value scale = once.mul(lr, localLr);
    AffineMap id = identityOf(b, type);
    SmallVector<Value> r = buildMappedResults(
        b, loc, {type, type},
        {{param, id}, {grad, id}, {adaptor.getMomentumBuffer(), id}},
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Arith m{nb, l};
          Value buf = m.add(m.mul(m.c(acc, momentum), a[2]),
                            m.mul(scale, m.add(a[1], m.mul(m.c(acc, wd), a[0]))));
          return SmallVector<Value>{m.sub(a[0], buf), buf};
        });
    rewriter.replaceOp(op, r);
    return success();
  }
};

} // namespace

void colo::lowering::populateElementwisePatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ElementwisePattern<NegOp>, ElementwisePattern<AbsOp>, ElementwisePattern<ExpOp>,
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
  patterns.add<SgdUpdatePattern, AdamUpdatePattern, LambUpdatePattern,
               LarsUpdatePattern>(ctx);
}
