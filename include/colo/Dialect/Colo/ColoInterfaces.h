#ifndef COLO_DIALECT_COLO_COLOINTERFACES_H
#define COLO_DIALECT_COLO_COLOINTERFACES_H

#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"
#include <type_traits>

namespace colo {

/// The throughput an op runs at: dense math on tensor cores / BLAS, or work
/// bounded by memory bandwidth.
enum class CostClass { Matmul, Memory };

/// DimensionMapOpInterface's entries other than a result dimension (>= 0).
constexpr int64_t kReduced = -1; // summed, averaged, normalized, contracted
constexpr int64_t kMixed = -2;   // combined across positions (windows, indices,
                                 // heads, concatenation) or not split (weights)

/// [operand][operand dimension] -> result dimension of result 0.
using DimMap = llvm::SmallVector<llvm::SmallVector<int64_t>>;

namespace detail {
/// NumPy broadcasting: dimension i of a rank-r operand is result dimension
/// rank - r + i.
DimMap broadcastingDimensionMap(mlir::Operation *op);
/// The bytes a value of `type` occupies (a static tensor; 0 otherwise).
int64_t typeBytes(mlir::Type type);
int64_t operandBytes(mlir::Operation *op);
int64_t resultBytes(mlir::Operation *op);
int64_t resultElements(mlir::Operation *op);

template <typename OpT, typename = void>
struct HasFlopsPerElement : std::false_type {};
template <typename OpT>
struct HasFlopsPerElement<OpT, std::void_t<decltype(OpT::kFlopsPerElement)>>
    : std::true_type {};

/// Ops that declare `kFlopsPerElement` cost that many FLOPs per result
/// element; everything else (data movement) costs none.
template <typename OpT>
int64_t defaultElementwiseFlops(OpT op) {
  if constexpr (HasFlopsPerElement<OpT>::value)
    return OpT::kFlopsPerElement * resultElements(op.getOperation());
  else
    return 0;
}
} // namespace detail
} // namespace colo

#include "colo/Dialect/Colo/ColoInterfaces.h.inc"

#endif
