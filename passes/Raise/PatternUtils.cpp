#include "Raise/PatternUtils.h"

#include "colo/Dialect/Colo/ColoOps.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace colo {

std::optional<double> getSplatConstant(Value v) {
  SplatElementsAttr splat;
  if (!v || !matchPattern(v, m_Constant(&splat)) ||
      !isa<FloatType>(splat.getElementType()))
    return std::nullopt;
  return splat.getSplatValue<APFloat>().convertToDouble();
}

bool isSplatConstant(Value v, double expected) {
  std::optional<double> c = getSplatConstant(v);
  return c && std::abs(*c - expected) <= 1e-4 * std::max(1.0, std::abs(expected));
}

Value stripConstantScale(Value v, double &scale, bool throughReshapes) {
  while (true) {
    if (auto mul = v.getDefiningOp<MulOp>()) {
      std::optional<double> c;
      Value x;
      if ((c = getSplatConstant(mul.getRhs())))
        x = mul.getLhs();
      else if ((c = getSplatConstant(mul.getLhs())))
        x = mul.getRhs();
      if (x && x.getType() == mul.getType()) {
        scale *= *c;
        v = x;
        continue;
      }
    }
    if (auto div = v.getDefiningOp<DivOp>()) {
      std::optional<double> c = getSplatConstant(div.getRhs());
      if (c && *c != 0 && div.getLhs().getType() == div.getType()) {
        scale /= *c;
        v = div.getLhs();
        continue;
      }
    }
    if (auto reshape = v.getDefiningOp<ReshapeOp>(); reshape && throughReshapes) {
      v = reshape.getInput();
      continue;
    }
    return v;
  }
}

Value stripReshapes(Value v) {
  while (auto reshape = v.getDefiningOp<ReshapeOp>())
    v = reshape.getInput();
  return v;
}

void collectMulFactors(Value v, SmallVectorImpl<Value> &factors, Value leaf) {
  if (auto mul = v.getDefiningOp<MulOp>(); mul && v != leaf) {
    collectMulFactors(mul.getLhs(), factors, leaf);
    collectMulFactors(mul.getRhs(), factors, leaf);
    return;
  }
  factors.push_back(v);
}

std::optional<Value> matchRsqrt(Value v) {
  if (auto r = v.getDefiningOp<RsqrtOp>())
    return r.getInput();
  Value sqrtOf;
  if (auto r = v.getDefiningOp<ReciprocalOp>())
    sqrtOf = r.getInput();
  else if (auto d = v.getDefiningOp<DivOp>(); d && isSplatConstant(d.getLhs(), 1.0))
    sqrtOf = d.getRhs();
  if (auto s = sqrtOf ? sqrtOf.getDefiningOp<SqrtOp>() : SqrtOp())
    return s.getInput();
  return std::nullopt;
}

std::optional<std::pair<Value, int64_t>> matchTrailingMean(Value v) {
  auto mean = v.getDefiningOp<ReduceMeanOp>();
  if (!mean || !mean.getKeepDims() || mean.getDims().empty())
    return std::nullopt;
  int64_t rank = cast<RankedTensorType>(mean.getInput().getType()).getRank();
  ArrayRef<int64_t> dims = mean.getDims();
  if (dims.back() != rank - 1 ||
      dims.front() != rank - static_cast<int64_t>(dims.size()))
    return std::nullopt;
  return std::make_pair(mean.getInput(), dims.front());
}

std::optional<Value> matchSquare(Value v) {
  if (auto p = v.getDefiningOp<PowOp>(); p && isSplatConstant(p.getRhs(), 2.0))
    return p.getLhs();
  if (auto m = v.getDefiningOp<MulOp>(); m && m.getLhs() == m.getRhs())
    return m.getLhs();
  return std::nullopt;
}

} // namespace colo
