#ifndef COLO_PASSES_PATTERNUTILS_H
#define COLO_PASSES_PATTERNUTILS_H

#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>

namespace colo {

/// The value of a splat float constant (of any shape), if `v` is one.
std::optional<double> getSplatConstant(mlir::Value v);

/// True if `v` is a splat constant within a relative 1e-4 of `expected`.
bool isSplatConstant(mlir::Value v, double expected);

/// Peels constant scalings off `v`: `x * c`, `c * x` and `x / c` with `c` a
/// splat float constant (nonzero for a division) that does not broadcast `x`
/// to a larger shape. Multiplies `scale` by the factors it peels and returns
/// the innermost `x`. With `throughReshapes` it also looks through
/// colo.reshape, which commutes with a scalar factor.
mlir::Value stripConstantScale(mlir::Value v, double &scale,
                               bool throughReshapes = false);

/// Follows colo.reshape producers from `v` and returns the first value that no
/// reshape produced. A reshape keeps row-major order, so that value holds the
/// same elements in the same order as `v`.
mlir::Value stripReshapes(mlir::Value v);

/// Flattens a tree of colo.mul ops rooted at `v` into its factors. `leaf`, if
/// given, stays one factor even when it is itself a product.
void collectMulFactors(mlir::Value v, llvm::SmallVectorImpl<mlir::Value> &factors,
                       mlir::Value leaf = {});

/// Removes the first factor matching `pred` from `factors`; returns it.
template <typename Pred>
std::optional<mlir::Value> takeFactor(llvm::SmallVectorImpl<mlir::Value> &factors,
                                      Pred pred) {
  for (auto *it = factors.begin(); it != factors.end(); ++it) {
    if (pred(*it)) {
      mlir::Value v = *it;
      factors.erase(it);
      return v;
    }
  }
  return std::nullopt;
}

/// If `v` is `1 / sqrt(y)` in any spelling (rsqrt, reciprocal(sqrt),
/// div(1, sqrt)), returns y.
std::optional<mlir::Value> matchRsqrt(mlir::Value v);

/// If `v` is `reduce_mean(x, trailing dims from axis, keep_dims)`, returns
/// (x, axis).
std::optional<std::pair<mlir::Value, int64_t>> matchTrailingMean(mlir::Value v);

/// If `v` is `x^2` spelled `pow(x, 2)` or `mul(x, x)`, returns x.
std::optional<mlir::Value> matchSquare(mlir::Value v);

} // namespace colo

#endif
