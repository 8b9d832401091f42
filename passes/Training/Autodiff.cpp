// Reverse-mode gradient rules of the colo ops. Most gradients are short
// compositions of forward ops (so the fuser sees them like any other
// elementwise work); the rest use the dedicated backward ops of
// ColoTrainOps.td. Each rule matches what PyTorch's autograd computes,
// including its tie-breaking for maximum/minimum and reduce_max.
#include "Training/Autodiff.h"

#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

#include "llvm/ADT/TypeSwitch.h"

#include "llvm/Support/MathExtras.h"
#include <numeric>

using namespace mlir;
using namespace colo;

namespace {
RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Small constructors for the ops gradients are made of.
class GradBuilder {
public:
  GradBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  /// A 0-d constant of `like`'s element type.
  Value scalar(Value like, double v) {
    auto type = RankedTensorType::get({}, tensorType(like).getElementType());
    return ConstantOp::create(b, loc, DenseElementsAttr::get(type, b.getFloatAttr(
                                                                       type.getElementType(), v)));
  }
  Value zerosLike(Value like) {
    return BroadcastToOp::create(b, loc, like.getType(), scalar(like, 0.0));
  }
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value mul(Value x, double c) { return mul(x, scalar(x, c)); }
  Value neg(Value x) { return NegOp::create(b, loc, x); }
  Value exp(Value x) { return ExpOp::create(b, loc, x); }
  Value compare(ComparePredicate p, Value x, Value y) {
    return CompareOp::create(b, loc, p, x, y);
  }
  /// `cond ? g : 0` with the gradient's type.
  Value where(Value cond, Value g) {
    return fit(SelectOp::create(b, loc, cond, g, scalar(g, 0.0)), g);
  }
  /// Broadcasts `v` to `like`'s shape if a select or binary op left it smaller.
  Value fit(Value v, Value like) {
    if (v.getType() == like.getType())
      return v;
    return BroadcastToOp::create(b, loc, like.getType(), v);
  }
  Value sum(Value x, ArrayRef<int64_t> dims, bool keep) {
    return ReduceSumOp::create(b, loc, x, b.getDenseI64ArrayAttr(dims),
                               keep ? b.getUnitAttr() : nullptr);
  }
  Value mean(Value x, ArrayRef<int64_t> dims, bool keep) {
    return ReduceMeanOp::create(b, loc, x, b.getDenseI64ArrayAttr(dims),
                                keep ? b.getUnitAttr() : nullptr);
  }
  Value reshape(Value x, RankedTensorType type) {
    if (x.getType() == type)
      return x;
    return ReshapeOp::create(b, loc, type, x);
  }
  Value broadcast(Value x, RankedTensorType type) {
    if (x.getType() == type)
      return x;
    return BroadcastToOp::create(b, loc, type, x);
  }
  /// Swaps the last two dimensions.
  Value transposeLast2(Value x) {
    int64_t rank = tensorType(x).getRank();
    SmallVector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[rank - 1], perm[rank - 2]);
    return TransposeOp::create(b, loc, x, perm);
  }
  /// A reduction's gradient spread back over the reduced dimensions.
  Value unreduce(Value g, ArrayRef<int64_t> dims, bool keptDims,
                 RankedTensorType inputType) {
    if (!keptDims) {
      SmallVector<int64_t> shape(inputType.getShape());
      for (int64_t d : dims)
        shape[d] = 1;
      g = reshape(g, RankedTensorType::get(shape, tensorType(g).getElementType()));
    }
    return broadcast(g, RankedTensorType::get(inputType.getShape(),
                                              tensorType(g).getElementType()));
  }

  OpBuilder &b;
  Location loc;
};

/// An axis attribute (read as unsigned by the generated getters) in [0, rank).
int64_t normalizedAxis(uint64_t axis, int64_t rank) {
  int64_t a = static_cast<int64_t>(axis);
  return a < 0 ? a + rank : a;
}

SmallVector<int64_t> range(int64_t begin, int64_t end) {
  SmallVector<int64_t> r(end - begin);
  std::iota(r.begin(), r.end(), begin);
  return r;
}

/// Gradients of a matmul `lhs[..., m, k] x rhs[..., k, n]`.
SmallVector<Value> matmulGrads(GradBuilder &gb, MatmulOp op, Value g) {
  Value lhs = op.getLhs(), rhs = op.getRhs();
  RankedTensorType lt = tensorType(lhs), rt = tensorType(rhs);
  Value dl = sumToShape(gb.b, gb.loc,
                        MatmulOp::create(gb.b, gb.loc, g, gb.transposeLast2(rhs)), lt);
  Value dr;
  if (rt.getRank() == 2 && lt.getRank() > 2) {
    // A linear layer: fold the batch dimensions into one product instead of
    // a batched product summed afterwards.
    int64_t rows = lt.getNumElements() / lt.getShape().back();
    auto flat = [&](Value v) {
      RankedTensorType t = tensorType(v);
      return gb.reshape(v, RankedTensorType::get({rows, t.getShape().back()},
                                                 t.getElementType()));
    };
    dr = MatmulOp::create(gb.b, gb.loc, gb.transposeLast2(flat(lhs)), flat(g));
  } else {
    dr = sumToShape(gb.b, gb.loc,
                    MatmulOp::create(gb.b, gb.loc, gb.transposeLast2(lhs), g), rt);
  }
  return {dl, dr};
}

/// Gradients of layer_norm (input, scale, bias) with the statistics recomputed.
SmallVector<Value> layerNormGrads(GradBuilder &gb, LayerNormOp op, Value g) {
  Value x = op.getInput();
  RankedTensorType xt = tensorType(x);
  int64_t axis = normalizedAxis(op.getAxis(), xt.getRank());
  SmallVector<int64_t> normDims = range(axis, xt.getRank());
  SmallVector<int64_t> leadDims = range(0, axis);
  Value mean = gb.mean(x, normDims, true);
  Value centered = gb.sub(x, mean);
  Value var = gb.mean(gb.mul(centered, centered), normDims, true);
  Value rstd = RsqrtOp::create(
      gb.b, gb.loc, gb.add(var, gb.scalar(x, op.getEpsilon().convertToDouble())));
  Value xhat = gb.mul(centered, rstd);
  Value dxhat = op.getScale() ? gb.mul(g, op.getScale()) : g;
  Value dx = gb.mul(rstd, gb.sub(gb.sub(dxhat, gb.mean(dxhat, normDims, true)),
                                 gb.mul(xhat, gb.mean(gb.mul(dxhat, xhat), normDims,
                                                      true))));
  SmallVector<Value> grads{dx};
  if (Value scale = op.getScale())
    grads.push_back(
        gb.reshape(gb.sum(gb.mul(g, xhat), leadDims, false), tensorType(scale)));
  if (Value bias = op.getBias())
    grads.push_back(gb.reshape(gb.sum(g, leadDims, false), tensorType(bias)));
  return grads;
}

SmallVector<Value> rmsNormGrads(GradBuilder &gb, RmsNormOp op, Value g) {
  Value x = op.getInput();
  RankedTensorType xt = tensorType(x);
  int64_t axis = normalizedAxis(op.getAxis(), xt.getRank());
  SmallVector<int64_t> normDims = range(axis, xt.getRank());
  Value meanSquare = gb.mean(gb.mul(x, x), normDims, true);
  Value rrms = RsqrtOp::create(
      gb.b, gb.loc,
      gb.add(meanSquare, gb.scalar(x, op.getEpsilon().convertToDouble())));
  Value xhat = gb.mul(x, rrms);
  Value dxhat = op.getScale() ? gb.mul(g, op.getScale()) : g;
  Value dx = gb.mul(rrms, gb.sub(dxhat, gb.mul(xhat, gb.mean(gb.mul(dxhat, xhat),
                                                             normDims, true))));
  SmallVector<Value> grads{dx};
  if (Value scale = op.getScale())
    grads.push_back(gb.reshape(gb.sum(gb.mul(g, xhat), range(0, axis), false),
                               tensorType(scale)));
  return grads;
}

/// d/dx of x * Phi(x), exactly or with GPT-2's tanh approximation.
Value geluDerivative(GradBuilder &gb, GeluOp op) {
  Value x = op.getInput();
  if (op.getApproximation() == GeluApproximation::tanh) {
    const double c = std::sqrt(2.0 / llvm::numbers::pi), k = 0.044715;
    Value x2 = gb.mul(x, x);
    Value inner = gb.mul(gb.mul(x, gb.add(gb.scalar(x, 1.0), gb.mul(x2, k))), c);
    Value t = TanhOp::create(gb.b, gb.loc, inner);
    Value dInner = gb.mul(gb.add(gb.scalar(x, 1.0), gb.mul(x2, 3 * k)), c);
    Value left = gb.mul(gb.add(gb.scalar(x, 1.0), t), 0.5);
    Value right = gb.mul(gb.mul(gb.mul(x, gb.sub(gb.scalar(x, 1.0), gb.mul(t, t))),
                                dInner),
                         0.5);
    return gb.add(left, right);
  }
  Value cdf = gb.mul(gb.add(gb.scalar(x, 1.0),
                            ErfOp::create(gb.b, gb.loc, gb.mul(x, 1.0 / std::sqrt(2.0)))),
                     0.5);
  Value pdf = gb.mul(gb.exp(gb.mul(gb.mul(x, x), -0.5)),
                     1.0 / std::sqrt(2.0 * llvm::numbers::pi));
  return gb.add(cdf, gb.mul(x, pdf));
}

/// maximum/minimum: the gradient goes to the winning operand, split evenly on
/// ties (PyTorch's rule).
SmallVector<Value> extremumGrads(GradBuilder &gb, Operation *op, Value g,
                                 ComparePredicate wins) {
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  Value half = gb.mul(g, 0.5);
  Value tie = gb.compare(ComparePredicate::eq, lhs, rhs);
  Value lhsWins = gb.compare(wins, lhs, rhs);
  Value zero = gb.scalar(g, 0.0);
  Value toLhs = gb.fit(SelectOp::create(gb.b, gb.loc, lhsWins, g,
                                        SelectOp::create(gb.b, gb.loc, tie, half, zero)),
                       g);
  Value toRhs = gb.sub(g, toLhs);
  return {sumToShape(gb.b, gb.loc, toLhs, tensorType(lhs)),
          sumToShape(gb.b, gb.loc, toRhs, tensorType(rhs))};
}

/// reduce_max: the gradient is shared evenly by the maximal elements.
Value reduceMaxGrad(GradBuilder &gb, ReduceMaxOp op, Value g) {
  RankedTensorType xt = tensorType(op.getInput());
  Value y = gb.unreduce(op.getResult(), op.getDims(), op.getKeepDims(), xt);
  Value isMax = gb.compare(ComparePredicate::eq, op.getInput(), y);
  Value ones = ConvertOp::create(gb.b, gb.loc, xt, isMax);
  Value count = gb.unreduce(gb.sum(ones, op.getDims(), true), op.getDims(), true, xt);
  Value spread = gb.unreduce(g, op.getDims(), op.getKeepDims(), xt);
  return gb.div(gb.mul(spread, ones), count);
}

/// concat: each input gets its slice of the gradient.
SmallVector<Value> concatGrads(GradBuilder &gb, ConcatOp op, Value g) {
  RankedTensorType gt = tensorType(g);
  int64_t axis = normalizedAxis(op.getAxis(), gt.getRank());
  SmallVector<Value> grads;
  int64_t offset = 0;
  for (Value input : op.getInputs()) {
    RankedTensorType it = tensorType(input);
    SmallVector<int64_t> start(gt.getRank(), 0), limit(gt.getShape()),
        stride(gt.getRank(), 1);
    start[axis] = offset;
    limit[axis] = offset + it.getDimSize(axis);
    offset = limit[axis];
    grads.push_back(SliceOp::create(gb.b, gb.loc, g, start, limit, stride));
  }
  return grads;
}

SmallVector<int64_t> inversePermutation(ArrayRef<int64_t> perm) {
  SmallVector<int64_t> inv(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inv[p] = i;
  return inv;
}

/// Whether every rank reads the gathered value only through
/// colo.all_reduce_grad over the same axes: the entry of a tensor-parallel
/// region from a sequence-parallel one, whose gradient is the sum of the
/// ranks' partial gradients, scattered back (Megatron's reduce-scatter).
bool gatherSumsGradients(shard::AllGatherOp gather) {
  return !gather->use_empty() && llvm::all_of(gather->getUsers(), [&](Operation *user) {
    auto entry = dyn_cast<AllReduceGradOp>(user);
    return entry && entry.getGrid() == gather.getGrid() &&
           entry.getGridAxes() == gather.getGridAxes();
  });
}

bool isFloatTensor(Value v) {
  return isa<FloatType>(tensorType(v).getElementType());
}
} // namespace

Value colo::sumToShape(OpBuilder &b, Location loc, Value grad,
                       RankedTensorType type) {
  RankedTensorType gt = tensorType(grad);
  if (gt.getShape() == type.getShape())
    return grad;
  int64_t extra = gt.getRank() - type.getRank();
  SmallVector<int64_t> dims = range(0, extra);
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.getDimSize(i) == 1 && gt.getDimSize(extra + i) != 1)
      dims.push_back(extra + i);
  GradBuilder gb(b, loc);
  Value summed = dims.empty() ? grad : gb.sum(grad, dims, false);
  return gb.reshape(summed, RankedTensorType::get(type.getShape(), gt.getElementType()));
}

FailureOr<SmallVector<Value>>
colo::buildOperandGradients(OpBuilder &b, Operation *op, ArrayRef<Value> resultGrads) {
  GradBuilder gb(b, op->getLoc());
  // Every differentiable op but batch_norm has one differentiable result.
  Value g = resultGrads.empty() ? Value() : resultGrads.front();
  Value x = op->getNumOperands() ? op->getOperand(0) : Value();
  Value y = op->getNumResults() ? op->getResult(0) : Value();
  auto bothSides = [&](Value dl, Value dr) -> SmallVector<Value> {
    return {sumToShape(b, gb.loc, dl, tensorType(op->getOperand(0))),
            sumToShape(b, gb.loc, dr, tensorType(op->getOperand(1)))};
  };
  using Grads = FailureOr<SmallVector<Value>>;
  Grads grads =
      llvm::TypeSwitch<Operation *, Grads>(op)
          // Elementwise, one operand.
          .Case([&](NegOp) -> Grads { return SmallVector<Value>{gb.neg(g)}; })
          .Case([&](AbsOp) -> Grads {
            Value zero = gb.scalar(x, 0.0);
            Value pos = gb.where(gb.compare(ComparePredicate::gt, x, zero), g);
            Value neg = gb.where(gb.compare(ComparePredicate::lt, x, zero), g);
            return SmallVector<Value>{gb.sub(pos, neg)};
          })
          .Case([&](ExpOp) -> Grads { return SmallVector<Value>{gb.mul(g, y)}; })
          .Case([&](LogOp) -> Grads { return SmallVector<Value>{gb.div(g, x)}; })
          .Case([&](SqrtOp) -> Grads {
            return SmallVector<Value>{gb.div(gb.mul(g, 0.5), y)};
          })
          .Case([&](RsqrtOp) -> Grads {
            return SmallVector<Value>{gb.mul(g, gb.mul(gb.mul(y, gb.mul(y, y)), -0.5))};
          })
          .Case([&](ReciprocalOp) -> Grads {
            return SmallVector<Value>{gb.neg(gb.mul(g, gb.mul(y, y)))};
          })
          .Case([&](TanhOp) -> Grads {
            return SmallVector<Value>{
                gb.mul(g, gb.sub(gb.scalar(y, 1.0), gb.mul(y, y)))};
          })
          .Case([&](ErfOp) -> Grads {
            return SmallVector<Value>{gb.mul(
                g, gb.mul(gb.exp(gb.neg(gb.mul(x, x))), 2.0 / std::sqrt(llvm::numbers::pi)))};
          })
          .Case([&](SigmoidOp) -> Grads {
            return SmallVector<Value>{
                gb.mul(g, gb.mul(y, gb.sub(gb.scalar(y, 1.0), y)))};
          })
          .Case([&](ReluOp) -> Grads {
            return SmallVector<Value>{
                gb.where(gb.compare(ComparePredicate::gt, x, gb.scalar(x, 0.0)), g)};
          })
          .Case([&](SiluOp) -> Grads {
            Value s = SigmoidOp::create(b, gb.loc, x);
            Value one = gb.scalar(x, 1.0);
            return SmallVector<Value>{
                gb.mul(g, gb.mul(s, gb.add(one, gb.mul(x, gb.sub(one, s)))))};
          })
          .Case([&](CosOp) -> Grads {
            return SmallVector<Value>{gb.neg(gb.mul(g, SinOp::create(b, gb.loc, x)))};
          })
          .Case([&](SinOp) -> Grads {
            return SmallVector<Value>{gb.mul(g, CosOp::create(b, gb.loc, x))};
          })
          .Case([&](GeluOp gelu) -> Grads {
            return SmallVector<Value>{gb.mul(g, geluDerivative(gb, gelu))};
          })
          .Case([&](ClampOp clamp) -> Grads {
            Value aboveMin = gb.compare(ComparePredicate::ge, x,
                                        gb.scalar(x, clamp.getMin().convertToDouble()));
            Value belowMax = gb.compare(ComparePredicate::le, x,
                                        gb.scalar(x, clamp.getMax().convertToDouble()));
            return SmallVector<Value>{gb.where(aboveMin, gb.where(belowMax, g))};
          })
          // Elementwise, two operands (broadcasting).
          .Case([&](AddOp) -> Grads { return bothSides(g, g); })
          .Case([&](SubOp) -> Grads { return bothSides(g, gb.neg(g)); })
          .Case([&](MulOp mul) -> Grads {
            return bothSides(gb.mul(g, mul.getRhs()), gb.mul(g, mul.getLhs()));
          })
          .Case([&](DivOp div) -> Grads {
            return bothSides(gb.div(g, div.getRhs()),
                             gb.neg(gb.div(gb.mul(g, y), div.getRhs())));
          })
          .Case([&](PowOp pow) -> Grads {
            Value base = pow.getLhs(), exponent = pow.getRhs();
            Value dBase = gb.mul(
                g, gb.mul(exponent, PowOp::create(b, gb.loc, base,
                                                  gb.sub(exponent, gb.scalar(exponent, 1.0)))));
            Value dExp = gb.mul(g, gb.mul(y, LogOp::create(b, gb.loc, base)));
            return bothSides(dBase, dExp);
          })
          .Case([&](MaximumOp) -> Grads {
            return extremumGrads(gb, op, g, ComparePredicate::gt);
          })
          .Case([&](MinimumOp) -> Grads {
            return extremumGrads(gb, op, g, ComparePredicate::lt);
          })
          .Case([&](SelectOp select) -> Grads {
            Value cond = select.getCondition();
            Value dt = gb.fit(SelectOp::create(b, gb.loc, cond, g, gb.scalar(g, 0.0)), g);
            Value df = gb.sub(g, dt);
            return SmallVector<Value>{
                Value(), sumToShape(b, gb.loc, dt, tensorType(select.getOperand(1))),
                sumToShape(b, gb.loc, df, tensorType(select.getOperand(2)))};
          })
          .Case([&](ConvertOp) -> Grads {
            return SmallVector<Value>{ConvertOp::create(b, gb.loc, x.getType(), g)};
          })
          // Contractions.
          .Case([&](MatmulOp matmul) -> Grads { return matmulGrads(gb, matmul, g); })
          .Case([&](Conv2dOp conv) -> Grads {
            SmallVector<Value> grads{
                Conv2dBackwardInputOp::create(b, gb.loc, x.getType(), g, conv.getFilter(),
                                              conv.getStrides(), conv.getPadding(),
                                              conv.getDilations(), conv.getGroups()),
                Conv2dBackwardFilterOp::create(b, gb.loc, conv.getFilter().getType(), x, g,
                                               conv.getStrides(), conv.getPadding(),
                                               conv.getDilations(), conv.getGroups())};
            if (conv.getBias())
              grads.push_back(gb.sum(g, {0, 2, 3}, false));
            return grads;
          })
          // Normalization and regularization.
          .Case([&](SoftmaxOp softmax) -> Grads {
            int64_t axis = normalizedAxis(softmax.getAxis(), tensorType(x).getRank());
            Value dot = gb.sum(gb.mul(g, y), {axis}, true);
            return SmallVector<Value>{gb.mul(y, gb.sub(g, dot))};
          })
          .Case([&](LogSoftmaxOp logSoftmax) -> Grads {
            int64_t axis = normalizedAxis(logSoftmax.getAxis(), tensorType(x).getRank());
            return SmallVector<Value>{
                gb.sub(g, gb.mul(gb.exp(y), gb.sum(g, {axis}, true)))};
          })
          // Each input element adds into the sums after it (before it, reversed).
          .Case([&](CumSumOp c) -> Grads {
            auto back = CumSumOp::create(b, gb.loc, g, c.getAxisAttr(), c.getExclusiveAttr(),
                                         c.getReverse() ? UnitAttr() : b.getUnitAttr());
            return SmallVector<Value>{back.getResult()};
          })
          .Case([&](LayerNormOp ln) -> Grads { return layerNormGrads(gb, ln, g); })
          .Case([&](RmsNormOp rms) -> Grads { return rmsNormGrads(gb, rms, g); })
          .Case([&](BatchNormOp bn) -> Grads {
            if (!bn.getTraining())
              return bn.emitOpError(
                  "inference-mode batch norm inside a training step (the "
                  "train-step pass switches batch norms to training mode)");
            auto back = BatchNormBackwardOp::create(
                b, gb.loc, x, bn.getScale(), g ? g : gb.zerosLike(y), bn.getEpsilon());
            return SmallVector<Value>{back.getGradInput(), back.getGradScale(),
                                      back.getGradBias(), Value(), Value()};
          })
          .Case([&](DropoutOp dropout) -> Grads {
            SmallVector<Value> grads(op->getNumOperands());
            grads[0] = g;
            if (dropout.getRatio().convertToDouble() == 0.0)
              return grads;
            if (!dropout.getKey())
              return dropout.emitOpError(
                  "with a non-zero ratio needs a key to be differentiated (the "
                  "train-step pass gives every dropout one)");
            // The same key draws the same mask: the gradient is dropout of g.
            grads[0] = DropoutOp::create(b, gb.loc, g.getType(), g, dropout.getKey(),
                                         dropout.getRatioAttr());
            return grads;
          })
          // Reductions and pooling.
          .Case([&](ReduceSumOp sum) -> Grads {
            return SmallVector<Value>{
                gb.unreduce(g, sum.getDims(), sum.getKeepDims(), tensorType(x))};
          })
          .Case([&](ReduceMeanOp mean) -> Grads {
            int64_t count = 1;
            for (int64_t d : mean.getDims())
              count *= tensorType(x).getDimSize(d);
            return SmallVector<Value>{gb.mul(
                gb.unreduce(g, mean.getDims(), mean.getKeepDims(), tensorType(x)),
                1.0 / static_cast<double>(count))};
          })
          .Case([&](ReduceMaxOp max) -> Grads {
            return SmallVector<Value>{reduceMaxGrad(gb, max, g)};
          })
          .Case([&](MaxPool2dOp pool) -> Grads {
            return SmallVector<Value>{MaxPool2dBackwardOp::create(
                b, gb.loc, x.getType(), x, g, pool.getKernel(), pool.getStrides(),
                pool.getPadding())};
          })
          .Case([&](AvgPool2dOp pool) -> Grads {
            return SmallVector<Value>{AvgPool2dBackwardOp::create(
                b, gb.loc, x.getType(), g, pool.getKernel(), pool.getStrides(),
                pool.getPadding(), pool.getCountIncludePad())};
          })
          // Data movement.
          .Case([&](ReshapeOp) -> Grads {
            return SmallVector<Value>{gb.reshape(g, tensorType(x))};
          })
          .Case([&](TransposeOp t) -> Grads {
            return SmallVector<Value>{TransposeOp::create(
                b, gb.loc, g, inversePermutation(t.getPermutation()))};
          })
          .Case([&](SliceOp s) -> Grads {
            return SmallVector<Value>{SliceBackwardOp::create(
                b, gb.loc, x.getType(), g, s.getStart(), s.getLimit(), s.getStride())};
          })
          .Case([&](ConcatOp concat) -> Grads { return concatGrads(gb, concat, g); })
          .Case([&](BroadcastToOp) -> Grads {
            return SmallVector<Value>{sumToShape(b, gb.loc, g, tensorType(x))};
          })
          // Scatter-add in the forward (an imported scatter with reduction
          // add): each update's gradient is the result's at its index.
          .Case([&](ScatterAddOp scatter) -> Grads {
            return SmallVector<Value>{
                GatherOp::create(b, gb.loc, g, scatter.getIndices(), scatter.getAxis()),
                Value()};
          })
          .Case([&](GatherOp gather) -> Grads {
            return SmallVector<Value>{
                ScatterAddOp::create(b, gb.loc, x.getType(), g, gather.getIndices(),
                                     gather.getAxis()),
                Value()};
          })
          .Case([&](EmbeddingOp emb) -> Grads {
            Value rows = g;
            if (std::optional<uint64_t> pad = emb.getPaddingIdx()) {
              // The padding row's lookups add nothing to its gradient.
              Value ids = emb.getIds();
              RankedTensorType idsType = tensorType(ids);
              Value padId = ConstantOp::create(
                  b, gb.loc,
                  DenseElementsAttr::get(idsType.clone(ArrayRef<int64_t>{}),
                                         b.getIntegerAttr(idsType.getElementType(),
                                                          static_cast<int64_t>(*pad))));
              SmallVector<int64_t> shape(idsType.getShape());
              shape.push_back(1);
              Value other = gb.compare(ComparePredicate::ne, ids, padId);
              rows = gb.where(gb.reshape(other, tensorType(other).clone(shape)), g);
            }
            return SmallVector<Value>{
                ScatterAddOp::create(b, gb.loc, emb.getTable().getType(), rows,
                                     emb.getIds(), 0),
                Value()};
          })
          // Losses.
          .Case([&](CrossEntropyOp ce) -> Grads {
            return SmallVector<Value>{
                CrossEntropyBackwardOp::create(b, gb.loc, x.getType(), x, ce.getLabels(), g,
                                               ce.getIgnoreIndex(),
                                               ce.getLabelSmoothing()),
                Value()};
          })
          .Case([&](MseLossOp mse) -> Grads {
            double n = static_cast<double>(tensorType(x).getNumElements());
            Value diff = gb.sub(mse.getPred(), mse.getTarget());
            Value d = gb.mul(gb.mul(diff, g), 2.0 / n);
            return SmallVector<Value>{d, gb.neg(d)};
          })
          // Tensor parallelism (Megatron-LM's conjugate pair f and g): the
          // entry of a column-parallel region sums its input's partial
          // gradients over the ranks; the sum that ends a row-parallel
          // region passes the replicated gradient to every rank's part.
          .Case([&](AllReduceGradOp a) -> Grads {
            // After a summing gather the partial gradients stay partial: the
            // gather's rule reduce-scatters them.
            if (auto gather = a.getInput().getDefiningOp<shard::AllGatherOp>();
                gather && gatherSumsGradients(gather))
              return SmallVector<Value>{g};
            return SmallVector<Value>{shard::AllReduceOp::create(
                b, gb.loc, g, a.getGrid(), a.getGridAxes(), shard::ReductionKind::Sum)};
          })
          // A constant to differentiation (PyTorch's detach()).
          .Case([&](StopGradientOp) -> Grads { return SmallVector<Value>{Value()}; })
          .Case([&](shard::AllReduceOp r) -> Grads {
            if (r.getReduction() != shard::ReductionKind::Sum)
              return r.emitOpError()
                     << "has no gradient rule for reduction "
                     << shard::stringifyReductionKind(r.getReduction())
                     << " (only sum, which ends a row-parallel region)";
            return SmallVector<Value>{g};
          })
          // Sequence parallelism (Korthikanti et al.): a replicated value's
          // gradient is whole on every rank, a split value's is the rank's
          // block. Slicing and summed scattering thus gather the gradient;
          // a gather takes the rank's block of it, or, when the ranks read
          // the gathered value only through colo.all_reduce_grad (each
          // computes part of the gradient), sums the parts and scatters them.
          .Case([&](shard::AllSliceOp s) -> Grads {
            return SmallVector<Value>{shard::AllGatherOp::create(
                b, gb.loc, x.getType(), s.getGrid(), s.getGridAxes(), g,
                s.getSliceAxis())};
          })
          .Case([&](shard::ReduceScatterOp r) -> Grads {
            if (r.getReduction() != shard::ReductionKind::Sum)
              return r.emitOpError()
                     << "has no gradient rule for reduction "
                     << shard::stringifyReductionKind(r.getReduction())
                     << " (only sum, which ends a sequence-parallel row-parallel region)";
            return SmallVector<Value>{shard::AllGatherOp::create(
                b, gb.loc, x.getType(), r.getGrid(), r.getGridAxes(), g,
                r.getScatterAxis())};
          })
          .Case([&](shard::AllGatherOp a) -> Grads {
            if (gatherSumsGradients(a))
              return SmallVector<Value>{shard::ReduceScatterOp::create(
                  b, gb.loc, x.getType(), a.getGrid(), a.getGridAxes(), g,
                  shard::ReductionKind::Sum, a.getGatherAxis())};
            return SmallVector<Value>{shard::AllSliceOp::create(
                b, gb.loc, x.getType(), g, a.getGrid(), a.getGridAxes(),
                a.getGatherAxis().getSExtValue())};
          })
          // Ulysses: an all-to-all is a permutation of the ranks' blocks;
          // its adjoint sends them back (split and concat axes swapped).
          .Case([&](shard::AllToAllOp a) -> Grads {
            return SmallVector<Value>{shard::AllToAllOp::create(
                b, gb.loc, x.getType(), a.getGrid(), a.getGridAxes(), g,
                a.getConcatAxis(), a.getSplitAxis())};
          })
          // Ring attention: a rotation around the ring; its adjoint rotates
          // the gradients back.
          .Case([&](shard::ShiftOp s) -> Grads {
            if (!s.getRotate())
              return s.emitOpError("has no gradient rule without rotate");
            return SmallVector<Value>{shard::ShiftOp::create(
                b, gb.loc, x.getType(), s.getGrid(), s.getGridAxes(), g, s.getShiftAxis(),
                -s.getOffset(), /*rotate=*/true)};
          })
          // 2-D tensor parallelism's SUMMA: a broadcast reads only the
          // root's input, so the root's gradient is the sum of every
          // member's and the others' is zero (colo's shard.reduce: zero
          // off the root); a reduce's adjoint sends the root's gradient to
          // every member.
          .Case([&](shard::BroadcastOp c) -> Grads {
            return SmallVector<Value>{shard::ReduceOp::create(
                b, gb.loc, x.getType(), c.getGrid(), c.getGridAxes(), g,
                shard::ReductionKind::Sum, c.getRoot(), c.getRootDynamic())};
          })
          .Case([&](shard::ReduceOp r) -> Grads {
            if (r.getReduction() != shard::ReductionKind::Sum)
              return r.emitOpError("has a gradient rule for reduction = sum only");
            return SmallVector<Value>{shard::BroadcastOp::create(
                b, gb.loc, x.getType(), r.getGrid(), r.getGridAxes(), g, r.getRoot(),
                r.getRootDynamic())};
          })
          .Default([&](Operation *other) -> Grads {
            if (isa<shard::ShardDialect>(other->getDialect()))
              return other->emitOpError(
                  "has no gradient rule (of the shard ops only all_reduce, reduce and "
                  "reduce_scatter with reduction = sum, all_gather, all_slice, all_to_all, "
                  "broadcast and shift with rotate have one)");
            return other->emitOpError("has no gradient rule");
          });
  if (failed(grads))
    return failure();
  // Integer operands (indices, labels, masks) get no gradient.
  for (auto [operand, grad] : llvm::zip(op->getOperands(), *grads))
    if (grad && !isFloatTensor(operand))
      grad = Value();
  return grads;
}
