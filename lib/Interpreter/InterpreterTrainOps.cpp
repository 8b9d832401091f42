//===- InterpreterTrainOps.cpp - Reference evaluation of training ops -----===//
//
// The ops of ColoTrainOps.td: global_store, the backward ops (each a direct
// loop over the forward op's index map, accumulating into zeros) and the
// optimizer updates (elementwise, in double, as PyTorch writes them).
//
//===----------------------------------------------------------------------===//
#include "Evaluator.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace colo {
namespace interp {
namespace {

/// Calls `tap(x, w, y)` with the flat indices of every input element, filter
/// element and output element that a convolution multiplies together: the
/// forward op sums x * w into y, its adjoints accumulate the other way.
template <typename Tap>
void forEachConvTap(ArrayRef<int64_t> xs, ArrayRef<int64_t> ws, ArrayRef<int64_t> ys,
                    ArrayRef<int64_t> st, ArrayRef<int64_t> pad, ArrayRef<int64_t> dil,
                    int64_t groups, Tap tap) {
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  int64_t O = ws[0], CG = ws[1], KH = ws[2], KW = ws[3];
  int64_t OH = ys[2], OW = ys[3], OG = O / groups;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) {
      int64_t g = o / OG;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          int64_t yi = ((n * O + o) * OH + oh) * OW + ow;
          for (int64_t c = 0; c < CG; ++c) {
            int64_t ic = g * CG + c;
            for (int64_t kh = 0; kh < KH; ++kh) {
              int64_t ih = oh * st[0] - pad[0] + kh * dil[0];
              if (ih < 0 || ih >= H)
                continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t iw = ow * st[1] - pad[1] + kw * dil[1];
                if (iw < 0 || iw >= W)
                  continue;
                tap(((n * C + ic) * H + ih) * W + iw, ((o * CG + c) * KH + kh) * KW + kw,
                    yi);
              }
            }
          }
        }
    }
}

double sumOfSquares(const std::vector<double> &v) {
  double s = 0.0;
  for (double x : v)
    s += x * x;
  return s;
}

} // namespace

LogicalResult Evaluator::evalScatterAdd(ScatterAddOp op) {
  const HostArray &updates = get(op.getUpdates()), &idx = get(op.getIndices());
  HostArray r;
  r.shape = shapeOf(op.getResult());
  int64_t axis = op.getAxis();
  if (axis < 0)
    axis += r.shape.size();
  int64_t outer = numElements(ArrayRef<int64_t>(r.shape).take_front(axis));
  int64_t len = r.shape[axis];
  int64_t inner = numElements(ArrayRef<int64_t>(r.shape).drop_front(axis + 1));
  int64_t n = idx.data.size();
  r.data.assign(numElements(r.shape), 0.0);
  for (int64_t j = 0; j < n; ++j) {
    int64_t i = static_cast<int64_t>(idx.data[j]);
    if (i < 0)
      i += len;
    if (i < 0 || i >= len)
      return op.emitError() << "index " << static_cast<int64_t>(idx.data[j])
                            << " is out of range for a dimension of size " << len;
    for (int64_t o = 0; o < outer; ++o) {
      const double *from = updates.data.data() + (o * n + j) * inner;
      double *to = r.data.data() + (o * len + i) * inner;
      for (int64_t k = 0; k < inner; ++k)
        to[k] += from[k];
    }
  }
  set(op.getResult(), std::move(r));
  return success();
}

LogicalResult Evaluator::evalSliceBackward(SliceBackwardOp op) {
  const HostArray &grad = get(op.getGrad());
  ArrayRef<int64_t> start = op.getStart(), stride = op.getStride();
  HostArray r;
  r.shape = shapeOf(op.getResult());
  r.data.assign(numElements(r.shape), 0.0);
  Shape strides = stridesOf(r.shape), step(r.shape.size());
  int64_t off = 0;
  for (size_t d = 0; d < r.shape.size(); ++d) {
    step[d] = strides[d] * stride[d];
    off += start[d] * strides[d];
  }
  std::vector<int64_t> at = stridedOffsets(grad.shape, step, off);
  for (size_t i = 0; i < at.size(); ++i)
    r.data[at[i]] = grad.data[i];
  set(op.getResult(), std::move(r));
  return success();
}

LogicalResult Evaluator::evalConvBackward(Operation *op, bool filter) {
  HostArray r;
  r.shape = shapeOf(op->getResult(0));
  r.data.assign(numElements(r.shape), 0.0);
  if (filter) {
    auto conv = cast<Conv2dBackwardFilterOp>(op);
    const HostArray &x = get(conv.getInput()), &dy = get(conv.getGrad());
    forEachConvTap(x.shape, r.shape, dy.shape, conv.getStrides(), conv.getPadding(),
                   conv.getDilations(), conv.getGroups(),
                   [&](int64_t xi, int64_t wi, int64_t yi) {
                     r.data[wi] += x.data[xi] * dy.data[yi];
                   });
  } else {
    auto conv = cast<Conv2dBackwardInputOp>(op);
    const HostArray &dy = get(conv.getGrad()), &w = get(conv.getFilter());
    forEachConvTap(r.shape, w.shape, dy.shape, conv.getStrides(), conv.getPadding(),
                   conv.getDilations(), conv.getGroups(),
                   [&](int64_t xi, int64_t wi, int64_t yi) {
                     r.data[xi] += dy.data[yi] * w.data[wi];
                   });
  }
  set(op->getResult(0), std::move(r));
  return success();
}

LogicalResult Evaluator::evalMaxPoolBackward(MaxPool2dBackwardOp op) {
  const HostArray &x = get(op.getInput()), &dy = get(op.getGrad());
  ArrayRef<int64_t> k = op.getKernel(), st = op.getStrides(), pad = op.getPadding();
  int64_t H = x.shape[2], W = x.shape[3], OH = dy.shape[2], OW = dy.shape[3];
  HostArray r;
  r.shape = x.shape;
  r.data.assign(x.data.size(), 0.0);
  for (int64_t nc = 0; nc < x.shape[0] * x.shape[1]; ++nc) {
    const double *plane = x.data.data() + nc * H * W;
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t i = maxPoolArgmax(H, W, oh * st[0] - pad[0], ow * st[1] - pad[1], k[0],
                                  k[1], [&](int64_t i) { return plane[i]; });
        if (i >= 0)
          r.data[nc * H * W + i] += dy.data[(nc * OH + oh) * OW + ow];
      }
  }
  set(op.getResult(), std::move(r));
  return success();
}

LogicalResult Evaluator::evalAvgPoolBackward(AvgPool2dBackwardOp op) {
  const HostArray &dy = get(op.getGrad());
  ArrayRef<int64_t> k = op.getKernel(), st = op.getStrides(), pad = op.getPadding();
  HostArray r;
  r.shape = shapeOf(op.getResult());
  r.data.assign(numElements(r.shape), 0.0);
  int64_t H = r.shape[2], W = r.shape[3], OH = dy.shape[2], OW = dy.shape[3];
  for (int64_t nc = 0; nc < r.shape[0] * r.shape[1]; ++nc)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t h0 = oh * st[0] - pad[0], w0 = ow * st[1] - pad[1];
        int64_t hb = std::max<int64_t>(h0, 0), he = std::min(h0 + k[0], H);
        int64_t wb = std::max<int64_t>(w0, 0), we = std::min(w0 + k[1], W);
        int64_t count = op.getCountIncludePad() ? k[0] * k[1] : (he - hb) * (we - wb);
        double share = dy.data[(nc * OH + oh) * OW + ow] / static_cast<double>(count);
        for (int64_t ih = hb; ih < he; ++ih)
          for (int64_t iw = wb; iw < we; ++iw)
            r.data[(nc * H + ih) * W + iw] += share;
      }
  set(op.getResult(), std::move(r));
  return success();
}

LogicalResult Evaluator::evalBatchNormBackward(BatchNormBackwardOp op) {
  const HostArray &x = get(op.getInput()), &g = get(op.getScale()),
                  &dy = get(op.getGrad());
  double eps = op.getEpsilon().convertToDouble();
  int64_t N = x.shape[0], C = x.shape[1];
  int64_t inner = numElements(ArrayRef<int64_t>(x.shape).drop_front(2));
  double count = static_cast<double>(N * inner);
  HostArray dx{x.shape, std::vector<double>(x.data.size())};
  HostArray dg{g.shape, std::vector<double>(C)}, db{g.shape, std::vector<double>(C)};
  auto at = [&](int64_t n, int64_t c, int64_t i) { return (n * C + c) * inner + i; };
  for (int64_t c = 0; c < C; ++c) {
    double mean = 0.0, var = 0.0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i)
        mean += x.data[at(n, c, i)];
    mean /= count;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i)
        var += (x.data[at(n, c, i)] - mean) * (x.data[at(n, c, i)] - mean);
    double rstd = 1.0 / std::sqrt(var / count + eps);
    double sumDy = 0.0, sumDyXhat = 0.0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) {
        double d = dy.data[at(n, c, i)];
        sumDy += d;
        sumDyXhat += d * (x.data[at(n, c, i)] - mean) * rstd;
      }
    db.data[c] = sumDy;
    dg.data[c] = sumDyXhat;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) {
        double xhat = (x.data[at(n, c, i)] - mean) * rstd;
        dx.data[at(n, c, i)] =
            g.data[c] * rstd *
            (dy.data[at(n, c, i)] - sumDy / count - xhat * sumDyXhat / count);
      }
  }
  set(op.getGradInput(), std::move(dx));
  set(op.getGradScale(), std::move(dg));
  set(op.getGradBias(), std::move(db));
  return success();
}

/// scale * (softmax(x) - target) at the positions whose label is not
/// ignored, 0 elsewhere; an error on `op` for a label out of range.
static FailureOr<HostArray> crossEntropyGradient(Operation *op, const HostArray &x,
                                                 const HostArray &labels, double scale,
                                                 int64_t ignore, double eps) {
  int64_t classes = x.shape.back();
  HostArray r{x.shape, std::vector<double>(x.data.size(), 0.0)};
  for (size_t n = 0; n < labels.data.size(); ++n) {
    int64_t label = static_cast<int64_t>(labels.data[n]);
    if (label == ignore)
      continue;
    if (label < 0 || label >= classes)
      return op->emitError() << "label " << label << " is out of range for " << classes
                             << " classes";
    const double *p = x.data.data() + n * classes;
    double *d = r.data.data() + n * classes;
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < classes; ++c)
      mx = std::max(mx, p[c]);
    double sum = 0.0;
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(p[c] - mx);
    for (int64_t c = 0; c < classes; ++c) {
      double target = (c == label ? 1.0 - eps : 0.0) + eps / static_cast<double>(classes);
      d[c] = scale * (std::exp(p[c] - mx) / sum - target);
    }
  }
  return r;
}

LogicalResult Evaluator::evalCrossEntropyBackward(CrossEntropyBackwardOp op) {
  const HostArray &labels = get(op.getLabels());
  int64_t ignore = op.getIgnoreIndex(), count = 0;
  for (double label : labels.data)
    count += static_cast<int64_t>(label) != ignore;
  FailureOr<HostArray> r = crossEntropyGradient(
      op, get(op.getLogits()), labels, get(op.getGrad()).data[0] / static_cast<double>(count),
      ignore, op.getLabelSmoothing().convertToDouble());
  if (failed(r))
    return failure();
  set(op.getResult(), std::move(*r));
  return success();
}

LogicalResult Evaluator::evalCrossEntropyRowsBackward(CrossEntropyRowsBackwardOp op) {
  FailureOr<HostArray> r = crossEntropyGradient(
      op, get(op.getLogits()), get(op.getLabels()), get(op.getScale()).data[0],
      op.getIgnoreIndex(), op.getLabelSmoothing().convertToDouble());
  if (failed(r))
    return failure();
  set(op.getResult(), std::move(*r));
  return success();
}

LogicalResult Evaluator::evalSgd(SgdUpdateOp op) {
  const HostArray &p = get(op.getParam()), &g = get(op.getGrad()),
                  &buf = get(op.getMomentumBuffer());
  double lr = get(op.getLr()).data[0], step = get(op.getStep()).data[0];
  double momentum = op.getMomentum().convertToDouble();
  double dampening = op.getDampening().convertToDouble();
  double wd = op.getWeightDecay().convertToDouble();
  HostArray newP = p, newBuf = buf;
  for (size_t i = 0; i < p.data.size(); ++i) {
    double gi = wd != 0.0 ? g.data[i] + wd * p.data[i] : g.data[i];
    double dir = gi;
    if (momentum != 0.0) {
      // PyTorch creates the buffer from the first gradient, undampened.
      double b = step <= 1 ? gi : momentum * buf.data[i] + (1.0 - dampening) * gi;
      newBuf.data[i] = b;
      dir = op.getNesterov() ? gi + momentum * b : b;
    }
    newP.data[i] = p.data[i] - lr * dir;
  }
  set(op.getNewParam(), std::move(newP));
  set(op.getNewMomentumBuffer(), std::move(newBuf));
  return success();
}

LogicalResult Evaluator::evalAdam(AdamUpdateOp op) {
  const HostArray &p = get(op.getParam()), &g = get(op.getGrad()),
                  &m = get(op.getExpAvg()), &v = get(op.getExpAvgSq());
  double lr = get(op.getLr()).data[0], step = get(op.getStep()).data[0];
  double b1 = op.getBeta1().convertToDouble(), b2 = op.getBeta2().convertToDouble();
  double eps = op.getEpsilon().convertToDouble();
  double wd = op.getWeightDecay().convertToDouble();
  double bc1 = 1.0 - std::pow(b1, step), bc2 = 1.0 - std::pow(b2, step);
  double stepSize = lr / bc1, bc2Sqrt = std::sqrt(bc2);
  HostArray newP = p, newM = m, newV = v;
  for (size_t i = 0; i < p.data.size(); ++i) {
    double pi = p.data[i], gi = g.data[i];
    if (op.getDecoupled())
      pi *= 1.0 - lr * wd;
    else if (wd != 0.0)
      gi += wd * pi;
    double mi = b1 * m.data[i] + (1.0 - b1) * gi;
    double vi = b2 * v.data[i] + (1.0 - b2) * gi * gi;
    newP.data[i] = pi - stepSize * mi / (std::sqrt(vi) / bc2Sqrt + eps);
    newM.data[i] = mi;
    newV.data[i] = vi;
  }
  set(op.getNewParam(), std::move(newP));
  set(op.getNewExpAvg(), std::move(newM));
  set(op.getNewExpAvgSq(), std::move(newV));
  return success();
}

LogicalResult Evaluator::evalLamb(LambUpdateOp op) {
  const HostArray &p = get(op.getParam()), &g = get(op.getGrad()),
                  &m = get(op.getExpAvg()), &v = get(op.getExpAvgSq());
  double lr = get(op.getLr()).data[0], step = get(op.getStep()).data[0];
  double b1 = op.getBeta1().convertToDouble(), b2 = op.getBeta2().convertToDouble();
  double eps = op.getEpsilon().convertToDouble();
  double wd = op.getWeightDecay().convertToDouble();
  double bc1 = 1.0 - std::pow(b1, step), bc2 = 1.0 - std::pow(b2, step);
  HostArray newP = p, newM = m, newV = v;
  std::vector<double> update(p.data.size());
  for (size_t i = 0; i < p.data.size(); ++i) {
    double gi = g.data[i];
    newM.data[i] = b1 * m.data[i] + (1.0 - b1) * gi;
    newV.data[i] = b2 * v.data[i] + (1.0 - b2) * gi * gi;
    update[i] =
        (newM.data[i] / bc1) / (std::sqrt(newV.data[i] / bc2) + eps) + wd * p.data[i];
  }
  double pNorm = std::sqrt(sumOfSquares(p.data)), uNorm = std::sqrt(sumOfSquares(update));
  double trust = pNorm == 0.0 || uNorm == 0.0 ? 1.0 : pNorm / uNorm;
  for (size_t i = 0; i < p.data.size(); ++i)
    newP.data[i] = p.data[i] - lr * trust * update[i];
  set(op.getNewParam(), std::move(newP));
  set(op.getNewExpAvg(), std::move(newM));
  set(op.getNewExpAvgSq(), std::move(newV));
  return success();
}

LogicalResult Evaluator::evalLars(LarsUpdateOp op) {
  const HostArray &p = get(op.getParam()), &g = get(op.getGrad()),
                  &buf = get(op.getMomentumBuffer());
  double lr = get(op.getLr()).data[0];
  double momentum = op.getMomentum().convertToDouble();
  double wd = op.getWeightDecay().convertToDouble();
  double trustCoefficient = op.getTrustCoefficient().convertToDouble();
  double eps = op.getEpsilon().convertToDouble();
  double pNorm = std::sqrt(sumOfSquares(p.data)), gNorm = std::sqrt(sumOfSquares(g.data));
  double localLr = pNorm == 0.0 || gNorm == 0.0
                       ? 1.0
                       : trustCoefficient * pNorm / (gNorm + wd * pNorm + eps);
  HostArray newP = p, newBuf = buf;
  for (size_t i = 0; i < p.data.size(); ++i) {
    newBuf.data[i] = momentum * buf.data[i] + lr * localLr * (g.data[i] + wd * p.data[i]);
    newP.data[i] = p.data[i] - newBuf.data[i];
  }
  set(op.getNewParam(), std::move(newP));
  set(op.getNewMomentumBuffer(), std::move(newBuf));
  return success();
}

LogicalResult Evaluator::runTrainOp(Operation *op) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](GlobalStoreOp s) {
        return state.store(s, s.getGlobal(), get(s.getValue()));
      })
      .Case([&](ScatterAddOp s) { return evalScatterAdd(s); })
      .Case([&](SliceBackwardOp s) { return evalSliceBackward(s); })
      .Case([&](Conv2dBackwardInputOp c) { return evalConvBackward(c, false); })
      .Case([&](Conv2dBackwardFilterOp c) { return evalConvBackward(c, true); })
      .Case([&](MaxPool2dBackwardOp p) { return evalMaxPoolBackward(p); })
      .Case([&](AvgPool2dBackwardOp p) { return evalAvgPoolBackward(p); })
      .Case([&](BatchNormBackwardOp b) { return evalBatchNormBackward(b); })
      .Case([&](CrossEntropyBackwardOp c) { return evalCrossEntropyBackward(c); })
      .Case([&](CrossEntropyRowsBackwardOp c) { return evalCrossEntropyRowsBackward(c); })
      .Case([&](SgdUpdateOp u) { return evalSgd(u); })
      .Case([&](AdamUpdateOp u) { return evalAdam(u); })
      .Case([&](LambUpdateOp u) { return evalLamb(u); })
      .Case([&](LarsUpdateOp u) { return evalLars(u); })
      .Default([&](Operation *other) {
        return other->emitError()
               << "the interpreter does not support '" << other->getName() << "'";
      });
}

} // namespace interp
} // namespace colo
