// colo-raise-gelu: erf and tanh spellings of GELU -> colo.gelu.
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/Passes.h"
#include "Raise/PatternUtils.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace colo {
#define GEN_PASS_DEF_COLORAISEGELU
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
/// If `v` is `x * c` or `x / (1/c)` with `c` the given constant, returns x.
std::optional<Value> matchScaled(Value v, double c) {
  if (auto div = v.getDefiningOp<DivOp>(); div && isSplatConstant(div.getRhs(), 1 / c))
    return div.getLhs();
  // Only the direct operands: x may itself be a product.
  if (auto mul = v.getDefiningOp<MulOp>()) {
    if (isSplatConstant(mul.getRhs(), c))
      return mul.getLhs();
    if (isSplatConstant(mul.getLhs(), c))
      return mul.getRhs();
  }
  return std::nullopt;
}

/// erf(x / sqrt(2)), returns x.
std::optional<Value> matchErfArg(Value v) {
  auto erf = v.getDefiningOp<ErfOp>();
  if (!erf)
    return std::nullopt;
  return matchScaled(erf.getInput(), 1 / std::sqrt(2.0));
}

/// tanh(sqrt(2/pi) * (x + 0.044715 * x^3)), returns x.
std::optional<Value> matchTanhArg(Value v) {
  auto tanh = v.getDefiningOp<TanhOp>();
  if (!tanh)
    return std::nullopt;
  std::optional<Value> inner = matchScaled(tanh.getInput(), std::sqrt(2 / M_PI));
  auto add = inner ? inner->getDefiningOp<AddOp>() : AddOp();
  if (!add)
    return std::nullopt;
  for (auto [x, cube] : {std::pair(add.getLhs(), add.getRhs()),
                         std::pair(add.getRhs(), add.getLhs())}) {
    std::optional<Value> c = matchScaled(cube, 0.044715);
    auto pow = c ? c->getDefiningOp<PowOp>() : PowOp();
    if (pow && pow.getLhs() == x && isSplatConstant(pow.getRhs(), 3.0))
      return x;
  }
  return std::nullopt;
}

/// 1 + f(x): returns (x, approximation) for f one of the two CDF kernels.
std::optional<std::pair<Value, GeluApproximation>> matchOnePlusKernel(Value v) {
  auto add = v.getDefiningOp<AddOp>();
  if (!add)
    return std::nullopt;
  for (auto [one, k] : {std::pair(add.getLhs(), add.getRhs()),
                        std::pair(add.getRhs(), add.getLhs())}) {
    if (!isSplatConstant(one, 1.0))
      continue;
    if (std::optional<Value> x = matchErfArg(k))
      return std::make_pair(*x, GeluApproximation::none);
    if (std::optional<Value> x = matchTanhArg(k))
      return std::make_pair(*x, GeluApproximation::tanh);
  }
  return std::nullopt;
}

/// The root is a product whose factors are exactly {x, 0.5, 1 + kernel(x)}.
struct RaiseGeluPattern : OpRewritePattern<MulOp> {
  RaiseGeluPattern(MLIRContext *ctx, llvm::Statistic &count)
      : OpRewritePattern(ctx), count(count) {}
  LogicalResult matchAndRewrite(MulOp op, PatternRewriter &rewriter) const override {
    SmallVector<Value> candidates;
    collectMulFactors(op.getResult(), candidates);
    for (Value onePlus : candidates) {
      auto kernel = matchOnePlusKernel(onePlus);
      if (!kernel || kernel->first.getType() != op.getType())
        continue;
      Value x = kernel->first;
      // Flatten again with x whole, since x may itself be a product.
      SmallVector<Value> factors;
      collectMulFactors(op.getResult(), factors, x);
      if (factors.size() != 3 ||
          !takeFactor(factors, [](Value f) { return isSplatConstant(f, 0.5); }) ||
          !takeFactor(factors, [&](Value f) { return f == x; }) ||
          factors.front() != onePlus)
        continue;
      rewriter.replaceOpWithNewOp<GeluOp>(
          op, x, GeluApproximationAttr::get(getContext(), kernel->second));
      ++count;
      return success();
    }
    return failure();
  }
  llvm::Statistic &count;
};

struct ColoRaiseGeluPass : colo::impl::ColoRaiseGeluBase<ColoRaiseGeluPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RaiseGeluPattern>(&getContext(), numRaised);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
