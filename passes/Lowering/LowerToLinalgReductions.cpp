// colo-lower-to-linalg, reductions and the ops built on them: reduce_*,
// softmax, log_softmax, layer_norm, rms_norm, batch_norm, the losses
// (cross_entropy, cross_entropy_rows, mse_loss) and the gradients
// batch_norm_backward, cross_entropy_backward and cross_entropy_rows_backward.
// Each becomes reduction generics (accumulating in computeType of the element
// type: f32 for f32, f16 and bf16, f64 for f64) and parallel generics that
// combine the statistics, in the interpreter's formulas: softmax subtracts
// the max, log_softmax is x - max - log(sum(exp(x - max))), variances are
// two-pass and biased (batch_norm's running variance is updated with the
// unbiased one).
#include "LowerToLinalg.h"

#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>

using namespace mlir;
using namespace colo;
using namespace colo::lowering;

namespace {

TypedAttr zeroAttr(OpBuilder &b, Type t) {
  if (isa<FloatType>(t))
    return b.getFloatAttr(t, 0.0);
  return b.getIntegerAttr(t, 0);
}

/// The identity of max: -inf, or the smallest signed integer.
TypedAttr lowestAttr(OpBuilder &b, Type t) {
  if (auto ft = dyn_cast<FloatType>(t))
    return b.getFloatAttr(ft, -std::numeric_limits<double>::infinity());
  unsigned w = t.getIntOrFloatBitWidth();
  return b.getIntegerAttr(t, llvm::APInt::getSignedMinValue(w));
}

AffineMap identity(OpBuilder &b, int64_t rank) {
  return AffineMap::getMultiDimIdentityMap(rank, b.getContext());
}

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The product of the sizes of `dims` in `shape`.
int64_t countOf(ArrayRef<int64_t> shape, ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= shape[d];
  return n;
}

SmallVector<int64_t> range(int64_t from, int64_t to) {
  return llvm::to_vector(llvm::seq<int64_t>(from, to));
}

//===----------------------------------------------------------------------===//
// reduce_sum, reduce_mean, reduce_max
//===----------------------------------------------------------------------===//

enum class ReduceKind { Sum, Mean, Max };
ReduceKind kindOf(ReduceSumOp) { return ReduceKind::Sum; }
ReduceKind kindOf(ReduceMeanOp) { return ReduceKind::Mean; }
ReduceKind kindOf(ReduceMaxOp) { return ReduceKind::Max; }

template <typename OpTy>
struct ReducePattern : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    RankedTensorType inType = tensorType(x), outType = tensorType(op.getResult());
    int64_t rank = inType.getRank();
    SmallVector<int64_t> dims;
    for (int64_t d : op.getDims())
      dims.push_back(normalizeAxis(d, rank));
    llvm::sort(dims);
    dims.erase(llvm::unique(dims), dims.end());

    ReduceKind kind = kindOf(op);
    Type acc = computeType(inType.getElementType());
    TypedAttr init = kind == ReduceKind::Max ? lowestAttr(rewriter, acc)
                                             : zeroAttr(rewriter, acc);
    Value r = buildReduction(rewriter, loc, inType.getShape(), dims,
                             {{x, identity(rewriter, rank)}}, {init},
                             [&](OpBuilder &b, Location l, ValueRange in, ValueRange a) {
                               Arith m{b, l};
                               return SmallVector<Value>{kind == ReduceKind::Max
                                                             ? m.max(a[0], in[0])
                                                             : m.add(a[0], in[0])};
                             })[0];
    // The mean's division and the store in the element type, then keep_dims.
    auto reduced = RankedTensorType::get(tensorType(r).getShape(),
                                         outType.getElementType());
    if (kind == ReduceKind::Mean || reduced != r.getType()) {
      double count = static_cast<double>(countOf(inType.getShape(), dims));
      r = buildMapped(rewriter, loc, reduced, {{r, identity(rewriter, reduced.getRank())}},
                      [&](OpBuilder &b, Location l, ValueRange a) {
                        Arith m{b, l};
                        return kind == ReduceKind::Mean
                                   ? m.div(a[0], m.c(a[0].getType(), count))
                                   : a[0];
                      });
    }
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, r, outType));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// softmax, log_softmax
//===----------------------------------------------------------------------===//

/// The maximum of `x` along `axis` (that dimension dropped), in `acc`: the
/// shift that keeps softmax-style exponentials finite.
Value maxAlong(OpBuilder &b, Location loc, Value x, int64_t axis, Type acc) {
  RankedTensorType type = tensorType(x);
  return buildReduction(b, loc, type.getShape(), {axis}, {{x, identity(b, type.getRank())}},
                        {lowestAttr(b, acc)},
                        [](OpBuilder &nb, Location l, ValueRange in, ValueRange a) {
                          return SmallVector<Value>{Arith{nb, l}.max(a[0], in[0])};
                        })[0];
}

/// The sum of exp(x - mx) along `axis`, in `acc`. Log-softmax, the loss and
/// its gradient build the same reduction, which CSE then computes once when
/// they are in one kernel.
Value sumExpAlong(OpBuilder &b, Location loc, Value x, Value mx, int64_t axis, Type acc) {
  RankedTensorType type = tensorType(x);
  int64_t rank = type.getRank();
  return buildReduction(
      b, loc, type.getShape(), {axis},
      {{x, identity(b, rank)}, {mx, dropDimsMap(rank, {axis}, b.getContext())}},
      {zeroAttr(b, acc)}, [](OpBuilder &nb, Location l, ValueRange in, ValueRange a) {
        Arith m{nb, l};
        return SmallVector<Value>{m.add(a[0], m.exp(m.sub(in[0], in[1])))};
      })[0];
}

Value buildSoftmax(OpBuilder &b, Location loc, Value x, int64_t axis, bool log) {
  RankedTensorType type = tensorType(x);
  int64_t rank = type.getRank();
  axis = normalizeAxis(axis, rank);
  Type acc = computeType(type.getElementType());
  AffineMap id = identity(b, rank), kept = dropDimsMap(rank, {axis}, b.getContext());
  Value mx = maxAlong(b, loc, x, axis, acc);
  if (log) {
    Value sum = sumExpAlong(b, loc, x, mx, axis, acc);
    return buildMapped(b, loc, type, {{x, id}, {mx, kept}, {sum, kept}},
                       [](OpBuilder &nb, Location l, ValueRange a) {
                         Arith m{nb, l};
                         Value d = m.sub(a[0], a[1]);
                         return m.sub(d, m.log(a[2]));
                       });
  }
  // The exponentials once, kept in `acc` for the sum and the quotient (two
  // users, so elementwise fusion does not compute them again in each); then
  // a multiplication by the sum's reciprocal, as PyTorch's CPU softmax does.
  Value e = buildMapped(b, loc, RankedTensorType::get(type.getShape(), acc),
                        {{x, id}, {mx, kept}}, [](OpBuilder &nb, Location l, ValueRange a) {
                          Arith m{nb, l};
                          return m.exp(m.sub(a[0], a[1]));
                        });
  Value sum = buildReduction(b, loc, type.getShape(), {axis}, {{e, id}}, {zeroAttr(b, acc)},
                             [](OpBuilder &nb, Location l, ValueRange in, ValueRange a) {
                               return SmallVector<Value>{Arith{nb, l}.add(a[0], in[0])};
                             })[0];
  Value inverse = buildMapped(b, loc, tensorType(sum), {{sum, identity(b, rank - 1)}},
                              [acc](OpBuilder &nb, Location l, ValueRange a) {
                                Arith m{nb, l};
                                return m.div(m.c(acc, 1.0), a[0]);
                              });
  return buildMapped(b, loc, type, {{e, id}, {inverse, kept}},
                     [](OpBuilder &nb, Location l, ValueRange a) {
                       return Arith{nb, l}.mul(a[0], a[1]);
                     });
}

struct SoftmaxPattern : OpConversionPattern<SoftmaxOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(SoftmaxOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, buildSoftmax(rewriter, op.getLoc(), adaptor.getInput(),
                                        op.getAxis(), /*log=*/false));
    return success();
  }
};

/// cumsum as a reduction over a second index j of the axis: element i adds
/// the elements j <= i (j < i exclusive; j >= i, j > i reversed) in
/// increasing j, the order of the running sum (quadratic in the axis
/// length, which position ids keep short).
struct CumSumPattern : OpConversionPattern<CumSumOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(CumSumOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    Value x = adaptor.getInput();
    RankedTensorType type = tensorType(x);
    int64_t rank = type.getRank(), axis = normalizeAxis(op.getAxis(), rank);
    SmallVector<int64_t> space(type.getShape());
    space.push_back(type.getDimSize(axis));
    SmallVector<AffineExpr> reads;
    for (int64_t d = 0; d < rank; ++d)
      reads.push_back(rewriter.getAffineDimExpr(d == axis ? rank : d));
    AffineMap read = AffineMap::get(rank + 1, 0, reads, rewriter.getContext());
    Type acc = computeType(type.getElementType());
    bool exclusive = op.getExclusive(), reverse = op.getReverse();
    Value sum = buildReduction(
        rewriter, op.getLoc(), space, {rank}, {{x, read}}, {zeroAttr(rewriter, acc)},
        [&](OpBuilder &nb, Location l, ValueRange in, ValueRange a) {
          Value i = linalg::IndexOp::create(nb, l, axis), j = linalg::IndexOp::create(nb, l, rank);
          arith::CmpIPredicate p = reverse ? (exclusive ? arith::CmpIPredicate::ugt
                                                        : arith::CmpIPredicate::uge)
                                           : (exclusive ? arith::CmpIPredicate::ult
                                                        : arith::CmpIPredicate::ule);
          Value kept = arith::CmpIOp::create(nb, l, p, j, i);
          Arith m{nb, l};
          return SmallVector<Value>{m.select(kept, m.add(a[0], in[0]), a[0])};
        })[0];
    if (acc != type.getElementType())
      sum = buildMapped(rewriter, op.getLoc(), type, {{sum, identity(rewriter, rank)}},
                        [&](OpBuilder &nb, Location l, ValueRange a) {
                          return Arith{nb, l}.to(a[0], type.getElementType());
                        });
    rewriter.replaceOp(op, sum);
    return success();
  }
};

struct LogSoftmaxPattern : OpConversionPattern<LogSoftmaxOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(LogSoftmaxOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, buildSoftmax(rewriter, op.getLoc(), adaptor.getInput(),
                                        op.getAxis(), /*log=*/true));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// layer_norm, rms_norm
//===----------------------------------------------------------------------===//

/// Normalizes `x` over [axis, rank): (x - mean) / sqrt(var + eps) (biased
/// variance), or x / sqrt(mean(x^2) + eps) for RMS, times `scale` and plus
/// `bias` where given (of the normalized shape).
Value buildNorm(OpBuilder &b, Location loc, Value x, Value scale, Value bias,
                int64_t axis, double eps, bool rms) {
  RankedTensorType type = tensorType(x);
  int64_t rank = type.getRank();
  axis = normalizeAxis(axis, rank);
  MLIRContext *ctx = b.getContext();
  Type acc = computeType(type.getElementType());
  SmallVector<int64_t> dims = range(axis, rank);
  double n = static_cast<double>(countOf(type.getShape(), dims));
  AffineMap id = identity(b, rank), kept = dropDimsMap(rank, dims, ctx);
  AffineMap param = dropDimsMap(rank, range(0, axis), ctx);

  auto reduceSum = [&](ArrayRef<MappedOperand> inputs, auto term) {
    return buildReduction(b, loc, type.getShape(), dims, inputs, {zeroAttr(b, acc)},
                          [&](OpBuilder &nb, Location l, ValueRange in, ValueRange a) {
                            Arith m{nb, l};
                            return SmallVector<Value>{m.add(a[0], term(m, in))};
                          })[0];
  };
  Value sum;
  if (!rms)
    sum = reduceSum({{x, id}}, [](Arith &, ValueRange in) { return in[0]; });
  // Sum of squared deviations from the mean (from 0 for RMS).
  SmallVector<MappedOperand> sqIn = {{x, id}};
  if (sum)
    sqIn.push_back({sum, kept});
  Value sq = reduceSum(sqIn, [&](Arith &m, ValueRange in) {
    Value d = rms ? in[0] : m.sub(in[0], m.div(in[1], m.c(acc, n)));
    return m.mul(d, d);
  });

  SmallVector<MappedOperand> operands = {{x, id}, {sq, kept}};
  if (sum)
    operands.push_back({sum, kept});
  if (scale)
    operands.push_back({scale, param});
  if (bias)
    operands.push_back({bias, param});
  return buildMapped(b, loc, type, operands, [&](OpBuilder &nb, Location l, ValueRange a) {
    Arith m{nb, l};
    unsigned next = 2;
    Value d = a[0];
    if (!rms)
      d = m.sub(d, m.div(a[next++], m.c(acc, n)));
    Value var = m.div(a[1], m.c(acc, n));
    Value y = m.mul(d, m.invSqrt(m.add(var, m.c(acc, eps))));
    if (scale)
      y = m.mul(y, m.to(a[next++], acc));
    if (bias)
      y = m.add(y, m.to(a[next++], acc));
    return y;
  });
}

struct LayerNormPattern : OpConversionPattern<LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, buildNorm(rewriter, op.getLoc(), adaptor.getInput(),
                                     adaptor.getScale(), adaptor.getBias(), op.getAxis(),
                                     op.getEpsilonAttr().getValueAsDouble(),
                                     /*rms=*/false));
    return success();
  }
};

struct RmsNormPattern : OpConversionPattern<RmsNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(RmsNormOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, buildNorm(rewriter, op.getLoc(), adaptor.getInput(),
                                     adaptor.getScale(), Value(), op.getAxis(),
                                     op.getEpsilonAttr().getValueAsDouble(),
                                     /*rms=*/true));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// batch_norm
//===----------------------------------------------------------------------===//

/// Batch-norm statistics sum N * H * W values per channel (16k for a 32x32
/// ResNet stage at batch 16): they accumulate in f64 so that their rounding
/// stays below PyTorch's (vectorized, cascaded) f32 sums.
Type statisticsType(OpBuilder &b, Type elementType) {
  return isa<FloatType>(elementType) ? b.getF64Type() : computeType(elementType);
}

struct BatchNormPattern : OpConversionPattern<BatchNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(BatchNormOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    if (op.getTraining() && op.getSyncGrid())
      return op.emitOpError("synchronizes its statistics over ranks and must be expanded "
                            "into collectives first (colo-build-train-step)");
    OpBuilder &b = rewriter;
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    RankedTensorType type = tensorType(x), statType = tensorType(adaptor.getScale());
    int64_t rank = type.getRank();
    Type acc = statisticsType(b, type.getElementType());
    double eps = op.getEpsilonAttr().getValueAsDouble();
    double momentum = op.getMomentumAttr().getValueAsDouble();
    SmallVector<int64_t> dims = {0};
    llvm::append_range(dims, range(2, rank));
    double count = static_cast<double>(countOf(type.getShape(), dims));
    AffineMap id = identity(b, rank), perChannel = dropDimsMap(rank, dims, b.getContext());
    AffineMap stat = identity(b, 1);

    // The statistics to normalize with: the batch's sum and sum of squared
    // deviations in training, the running mean and variance otherwise.
    Value mean = adaptor.getRunningMean(), var = adaptor.getRunningVar();
    bool training = op.getTraining();
    if (training) {
      auto sumOf = [&](ArrayRef<MappedOperand> inputs, bool squares) {
        return buildReduction(
            b, loc, type.getShape(), dims, inputs, {zeroAttr(b, acc)},
            [&](OpBuilder &nb, Location l, ValueRange in, ValueRange a) {
              Arith m{nb, l};
              if (!squares)
                return SmallVector<Value>{m.add(a[0], in[0])};
              Value d = m.sub(in[0], m.div(in[1], m.c(acc, count)));
              return SmallVector<Value>{m.add(a[0], m.mul(d, d))};
            })[0];
      };
      mean = sumOf({{x, id}}, false);
      var = sumOf({{x, id}, {mean, perChannel}}, true);
    }
    // Training statistics are sums: divide by the count where they are used.
    auto meanOf = [&](Arith &m, Value v) {
      return training ? m.div(v, m.c(acc, count)) : v;
    };
    Value y = buildMapped(
        b, loc, type,
        {{x, id}, {mean, perChannel}, {var, perChannel},
         {adaptor.getScale(), perChannel}, {adaptor.getBias(), perChannel}},
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Arith m{nb, l};
          Value mu = meanOf(m, m.to(a[1], acc)), sigma2 = meanOf(m, m.to(a[2], acc));
          Value inv = m.invSqrt(m.add(sigma2, m.c(acc, eps)));
          return m.add(m.mul(m.mul(m.sub(a[0], mu), inv), m.to(a[3], acc)),
                       m.to(a[4], acc));
        });
    if (!training) {
      rewriter.replaceOp(op, {y, mean, var});
      return success();
    }
    // new = (1 - momentum) * running + momentum * batch, with the unbiased
    // batch variance.
    double unbiasedCount = count > 1 ? count - 1 : count;
    Type statAcc = computeType(statType.getElementType());
    auto update = [&](Value running, Value batch, double divisor) {
      return buildMapped(b, loc, statType, {{running, stat}, {batch, stat}},
                         [&](OpBuilder &nb, Location l, ValueRange a) {
                           Arith m{nb, l};
                           Value batchStat = m.to(m.div(a[1], m.c(acc, divisor)), statAcc);
                           return m.add(m.mul(m.c(statAcc, 1.0 - momentum), a[0]),
                                        m.mul(m.c(statAcc, momentum), batchStat));
                         });
    };
    Value newMean = update(adaptor.getRunningMean(), mean, count);
    Value newVar = update(adaptor.getRunningVar(), var, unbiasedCount);
    rewriter.replaceOp(op, {y, newMean, newVar});
    return success();
  }
};

/// Training-mode gradients with the statistics recomputed from the input
/// over M = N * H * W positions per channel: the sum of x, then one reduction
/// of sum((x - mean)^2), sum(dy) and sum(dy * (x - mean)); then per channel
/// the mean, rstd, dscale = rstd * sum(dy * (x - mean)) = sum(dy * xhat) and
/// dbias = sum(dy); and dx = scale * rstd * (dy - sum(dy) / M - xhat *
/// sum(dy * xhat) / M).
struct BatchNormBackwardPattern : OpConversionPattern<BatchNormBackwardOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(BatchNormBackwardOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    OpBuilder &b = rewriter;
    Location loc = op.getLoc();
    Value x = adaptor.getInput(), dy = adaptor.getGrad(), scale = adaptor.getScale();
    RankedTensorType type = tensorType(x), statType = tensorType(scale);
    int64_t rank = type.getRank();
    Type acc = statisticsType(b, type.getElementType());
    double eps = op.getEpsilonAttr().getValueAsDouble();
    SmallVector<int64_t> dims = {0};
    llvm::append_range(dims, range(2, rank));
    double count = static_cast<double>(countOf(type.getShape(), dims));
    AffineMap id = identity(b, rank), perChannel = dropDimsMap(rank, dims, b.getContext());
    AffineMap stat = identity(b, 1);

    Value sum =
        buildReduction(b, loc, type.getShape(), dims, {{x, id}}, {zeroAttr(b, acc)},
                       [](OpBuilder &nb, Location l, ValueRange in, ValueRange a) {
                         return SmallVector<Value>{Arith{nb, l}.add(a[0], in[0])};
                       })[0];
    // Per channel: sum((x - mean)^2), sum(dy), sum(dy * (x - mean)).
    SmallVector<Value> sums = buildReduction(
        b, loc, type.getShape(), dims, {{x, id}, {dy, id}, {sum, perChannel}},
        {zeroAttr(b, acc), zeroAttr(b, acc), zeroAttr(b, acc)},
        [&](OpBuilder &nb, Location l, ValueRange in, ValueRange a) {
          Arith m{nb, l};
          Value d = m.sub(in[0], m.div(in[2], m.c(acc, count)));
          return SmallVector<Value>{m.add(a[0], m.mul(d, d)), m.add(a[1], in[1]),
                                    m.add(a[2], m.mul(in[1], d))};
        });
    // Per channel: dscale, dbias, and the mean and rstd (in the compute type)
    // that dx reads.
    Type statAcc = computeType(statType.getElementType());
    RankedTensorType accStat = statType.clone(acc);
    SmallVector<Value> perChannelValues = buildMappedResults(
        b, loc, {statType, statType, accStat, accStat},
        {{sum, stat}, {sums[0], stat}, {sums[1], stat}, {sums[2], stat}},
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Arith m{nb, l};
          Value mean = m.div(a[0], m.c(acc, count));
          Value rstd = m.invSqrt(m.add(m.div(a[1], m.c(acc, count)), m.c(acc, eps)));
          return SmallVector<Value>{m.to(m.mul(a[3], rstd), statAcc), m.to(a[2], statAcc),
                                    mean, rstd};
        });
    Value mean = perChannelValues[2], rstd = perChannelValues[3];
    Value dx = buildMapped(
        b, loc, type,
        {{x, id}, {dy, id}, {mean, perChannel}, {rstd, perChannel},
         {sums[1], perChannel}, {sums[2], perChannel}, {scale, perChannel}},
        [&](OpBuilder &nb, Location l, ValueRange a) {
          Arith m{nb, l};
          Value n = m.c(acc, count), rstd = a[3];
          Value xhat = m.mul(m.sub(a[0], a[2]), rstd);
          Value sumDyXhat = m.mul(a[5], rstd);
          Value inner =
              m.sub(m.sub(a[1], m.div(a[4], n)), m.div(m.mul(xhat, sumDyXhat), n));
          return m.mul(m.mul(m.to(a[6], acc), rstd), inner);
        });
    rewriter.replaceOp(op, {dx, perChannelValues[0], perChannelValues[1]});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// cross_entropy, mse_loss
//===----------------------------------------------------------------------===//

/// What the cross-entropy lowerings share. Per position (all dimensions but
/// the last, the classes): the max, the sum of exp(x - max) and, with label
/// smoothing, the sum of the logits.
struct CrossEntropyLowering {
  CrossEntropyLowering(OpBuilder &b, Location loc, Value logits, Value labels,
                       int64_t ignore, double eps)
      : logits(logits), labels(labels), type(tensorType(logits)), rank(type.getRank()),
        positions(rank - 1), classes(type.getShape().back()),
        acc(computeType(type.getElementType())), ignore(ignore), eps(eps) {
    mx = maxAlong(b, loc, logits, positions, acc);
    sumExp = sumExpAlong(b, loc, logits, mx, positions, acc);
    if (eps != 0.0)
      sumLogits = buildReduction(
          b, loc, type.getShape(), {positions}, {{logits, identity(b, rank)}},
          {zeroAttr(b, acc)}, [](OpBuilder &nb, Location l, ValueRange in, ValueRange a) {
            return SmallVector<Value>{Arith{nb, l}.add(a[0], in[0])};
          })[0];
  }

  /// The lowering of a cross-entropy op (any of the four) at its location.
  template <typename Op, typename Adaptor>
  static CrossEntropyLowering of(OpBuilder &b, Op op, Adaptor adaptor) {
    return CrossEntropyLowering(b, op.getLoc(), adaptor.getLogits(), adaptor.getLabels(),
                                op.getIgnoreIndex(), op.getLabelSmoothing().convertToDouble());
  }

  /// A scalar operand's map in the logits' iteration space.
  AffineMap scalarMap(OpBuilder &b) const { return AffineMap::get(rank, 0, {}, b.getContext()); }

  /// The operands of positionLoss, mapped by `pos` (a map onto the positions).
  SmallVector<MappedOperand> positionOperands(AffineMap pos) const {
    SmallVector<MappedOperand> in = {{labels, pos}, {mx, pos}, {sumExp, pos}};
    if (sumLogits)
      in.push_back({sumLogits, pos});
    return in;
  }

  Value isCounted(OpBuilder &nb, Location l, Value label) const {
    return arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ne, label,
                                 constantOf(nb, l, label.getType(), ignore));
  }

  /// In a linalg body whose first `positions` indices are a position and
  /// `in` starts with positionOperands: the position's loss, 0 where the
  /// label is not `counted`. The label is clamped into [0, C) so that a bad
  /// one cannot read out of bounds (tensor.extract of its logit).
  Value positionLoss(OpBuilder &nb, Location l, ValueRange in, Value counted) const {
    Arith m{nb, l};
    Value label = in[0];
    Value idx = arith::IndexCastOp::create(nb, l, nb.getIndexType(), label);
    idx = arith::MaxSIOp::create(nb, l, idx, constantOf(nb, l, nb.getIndexType(), 0));
    idx = arith::MinSIOp::create(nb, l, idx,
                                 constantOf(nb, l, nb.getIndexType(), classes - 1));
    SmallVector<Value> at;
    for (int64_t d = 0; d < positions; ++d)
      at.push_back(linalg::IndexOp::create(nb, l, d));
    at.push_back(idx);
    Value xl = promote(nb, l, tensor::ExtractOp::create(nb, l, logits, at));
    Value logZ = m.add(in[1], m.log(in[2]));
    Value loss = m.sub(logZ, xl);
    if (eps != 0.0) {
      Value smooth = m.sub(logZ, m.div(in[3], m.c(acc, classes)));
      loss = m.add(m.mul(m.c(acc, 1.0 - eps), loss), m.mul(m.c(acc, eps), smooth));
    }
    return m.select(counted, loss, m.c(acc, 0.0));
  }

  /// scale * (softmax(logits) - target) where the label counts, 0 elsewhere;
  /// `scale(m, extra)` computes the factor from `extra`'s elements (mapped
  /// onto the logits' dimensions).
  Value gradient(OpBuilder &b, Location loc, ArrayRef<MappedOperand> extra,
                 function_ref<Value(Arith &, ValueRange)> scale) const {
    MLIRContext *ctx = b.getContext();
    AffineMap perPos = dropDimsMap(rank, {positions}, ctx);
    SmallVector<MappedOperand> in = {
        {logits, identity(b, rank)}, {labels, perPos}, {mx, perPos}, {sumExp, perPos}};
    llvm::append_range(in, extra);
    return buildMapped(b, loc, type, in, [&](OpBuilder &nb, Location l, ValueRange a) {
      Arith m{nb, l};
      Value label = a[1];
      Value cls = arith::IndexCastOp::create(nb, l, label.getType(),
                                             linalg::IndexOp::create(nb, l, positions));
      Value isLabel = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, cls, label);
      Value target = m.add(m.select(isLabel, m.c(acc, 1.0 - eps), m.c(acc, 0.0)),
                           m.c(acc, eps / static_cast<double>(classes)));
      // exp(x - (max + log(sum))): one exponential and no division per
      // element (the logarithm is the position's, hoisted out of the loop
      // over classes).
      Value logZ = m.add(a[2], m.log(a[3]));
      Value p = m.exp(m.sub(a[0], logZ));
      Value d = m.mul(scale(m, a.drop_front(4)), m.sub(p, target));
      return m.select(isCounted(nb, l, label), d, m.c(acc, 0.0));
    });
  }

  /// The number of positions whose label is not ignored, a 0-d tensor.
  Value count(OpBuilder &b, Location loc) const {
    return buildReduction(b, loc, tensorType(labels).getShape(), range(0, positions),
                          {{labels, identity(b, positions)}}, {zeroAttr(b, acc)},
                          [&](OpBuilder &nb, Location l, ValueRange in, ValueRange a) {
                            Arith m{nb, l};
                            Value one = m.select(isCounted(nb, l, in[0]), m.c(acc, 1.0),
                                                 m.c(acc, 0.0));
                            return SmallVector<Value>{m.add(a[0], one)};
                          })[0];
  }

  Value logits, labels;
  RankedTensorType type;
  int64_t rank, positions, classes;
  Type acc;
  int64_t ignore;
  double eps;
  Value mx, sumExp, sumLogits;
};

/// One reduction over the positions accumulates the loss and the count of
/// positions whose label is not ignore_index; their quotient is NaN when
/// every label is ignored.
struct CrossEntropyPattern : OpConversionPattern<CrossEntropyOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(CrossEntropyOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    OpBuilder &b = rewriter;
    Location loc = op.getLoc();
    CrossEntropyLowering ce = CrossEntropyLowering::of(b, op, adaptor);
    Type acc = ce.acc;
    SmallVector<Value> totals = buildReduction(
        b, loc, tensorType(ce.labels).getShape(), range(0, ce.positions),
        ce.positionOperands(identity(b, ce.positions)), {zeroAttr(b, acc), zeroAttr(b, acc)},
        [&](OpBuilder &nb, Location l, ValueRange in, ValueRange a) {
          Arith m{nb, l};
          Value counted = ce.isCounted(nb, l, in[0]);
          Value loss = ce.positionLoss(nb, l, in, counted);
          return SmallVector<Value>{
              m.add(a[0], loss),
              m.add(a[1], m.select(counted, m.c(acc, 1.0), m.c(acc, 0.0)))};
        });
    // The mean over the counted positions, a 0-d tensor.
    AffineMap scalar = identity(b, 0);
    rewriter.replaceOp(op, buildMapped(b, loc, tensorType(op.getResult()),
                                       {{totals[0], scalar}, {totals[1], scalar}},
                                       [](OpBuilder &nb, Location l, ValueRange a) {
                                         return Arith{nb, l}.div(a[0], a[1]);
                                       }));
    return success();
  }
};

struct CrossEntropyRowsPattern : OpConversionPattern<CrossEntropyRowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(CrossEntropyRowsOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    OpBuilder &b = rewriter;
    Location loc = op.getLoc();
    CrossEntropyLowering ce = CrossEntropyLowering::of(b, op, adaptor);
    RankedTensorType type = tensorType(op.getResult());
    rewriter.replaceOp(op, buildMapped(b, loc, type,
                                       ce.positionOperands(identity(b, ce.positions)),
                                       [&](OpBuilder &nb, Location l, ValueRange in) {
                                         Value loss = ce.positionLoss(
                                             nb, l, in, ce.isCounted(nb, l, in[0]));
                                         return Arith{nb, l}.to(loss, type.getElementType());
                                       }));
    return success();
  }
};

/// grad / count * (softmax(logits) - target): the count is one reduction
/// over the labels.
struct CrossEntropyBackwardPattern : OpConversionPattern<CrossEntropyBackwardOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(CrossEntropyBackwardOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    OpBuilder &b = rewriter;
    Location loc = op.getLoc();
    CrossEntropyLowering ce = CrossEntropyLowering::of(b, op, adaptor);
    AffineMap scalar = ce.scalarMap(b);
    rewriter.replaceOp(op, ce.gradient(b, loc,
                                       {{ce.count(b, loc), scalar}, {adaptor.getGrad(), scalar}},
                                       [&](Arith &m, ValueRange a) {
                                         return m.div(m.to(a[1], ce.acc), a[0]);
                                       }));
    return success();
  }
};

struct CrossEntropyRowsBackwardPattern : OpConversionPattern<CrossEntropyRowsBackwardOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(CrossEntropyRowsBackwardOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    OpBuilder &b = rewriter;
    Location loc = op.getLoc();
    CrossEntropyLowering ce = CrossEntropyLowering::of(b, op, adaptor);
    rewriter.replaceOp(op, ce.gradient(b, loc, {{adaptor.getScale(), ce.scalarMap(b)}},
                                       [&](Arith &m, ValueRange a) {
                                         return m.to(a[0], ce.acc);
                                       }));
    return success();
  }
};

struct MseLossPattern : OpConversionPattern<MseLossOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(MseLossOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    OpBuilder &b = rewriter;
    Location loc = op.getLoc();
    RankedTensorType type = tensorType(adaptor.getPred());
    int64_t rank = type.getRank();
    Type acc = computeType(type.getElementType());
    AffineMap id = identity(b, rank);
    Value total = buildReduction(
        b, loc, type.getShape(), range(0, rank),
        {{adaptor.getPred(), id}, {adaptor.getTarget(), id}}, {zeroAttr(b, acc)},
        [](OpBuilder &nb, Location l, ValueRange in, ValueRange a) {
          Arith m{nb, l};
          Value d = m.sub(in[0], in[1]);
          return SmallVector<Value>{m.add(a[0], m.mul(d, d))};
        })[0];
    double count = static_cast<double>(type.getNumElements());
    rewriter.replaceOp(op, buildMapped(b, loc, tensorType(op.getResult()),
                                       {{total, identity(b, 0)}},
                                       [count](OpBuilder &nb, Location l, ValueRange a) {
                                         Arith m{nb, l};
                                         return m.div(a[0], m.c(a[0].getType(), count));
                                       }));
    return success();
  }
};

} // namespace

void colo::lowering::populateReductionPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ReducePattern<ReduceSumOp>, ReducePattern<ReduceMeanOp>,
               ReducePattern<ReduceMaxOp>>(ctx);
  patterns.add<SoftmaxPattern, LogSoftmaxPattern, CumSumPattern, LayerNormPattern, RmsNormPattern,
               BatchNormPattern, CrossEntropyPattern, CrossEntropyRowsPattern, MseLossPattern,
               BatchNormBackwardPattern, CrossEntropyBackwardPattern,
               CrossEntropyRowsBackwardPattern>(ctx);
}
