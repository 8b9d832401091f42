//===- DimensionMap.h - Where each operand dimension goes -------*- C++ -*-===//
//
// The passes that split a tensor dimension over ranks (colo-split-batch for
// the batch, colo-tensor-parallel for the features) follow the split through
// a function by asking, op by op, which result dimension each operand
// dimension becomes. A value stays split along d after an op only if d maps
// to a result dimension; otherwise the op reduces or mixes along d.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_PASSES_DIMENSIONMAP_H
#define COLO_PASSES_DIMENSIONMAP_H

#include "colo/Dialect/Colo/ColoInterfaces.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"

#include <optional>

namespace colo {

/// `t` with dimension `dim` resized to `size` (a value's per-rank type).
inline mlir::RankedTensorType withDim(mlir::RankedTensorType t, int64_t dim, int64_t size) {
  llvm::SmallVector<int64_t> shape(t.getShape());
  shape[dim] = size;
  return t.clone(shape);
}

/// Whether `op`'s type inference (if it has one) gives its first result
/// `type` from its operands as they are now.
bool inferredTypeIs(mlir::Operation *op, mlir::RankedTensorType type);

/// Checks that `local`, the per-rank type a splitting pass gives `op`'s
/// result, is what the op's type inference computes from its (already local)
/// operands; otherwise an error on `op` naming `pass`.
mlir::LogicalResult verifyLocalType(mlir::Operation *op, mlir::RankedTensorType local,
                                    llvm::StringRef pass);

/// The op's DimensionMapOpInterface map (every colo op that maps
/// dimensions: all but reshape, see reshapeAlignedDims); std::nullopt for
/// the others (model state, training-step ops).
std::optional<DimMap> dimMap(mlir::Operation *op);

/// Where splits of some operands of an op, each along one dimension, go:
/// `dim`, the result dimension they all carry their split to, or, at the
/// first split that does not reach one, kReduced or kMixed (`operand` and
/// `operandDim` say which split stopped) or kDisagree (`before`, where the
/// operands before it go, `other`, where this one goes). One step of the
/// propagation that every splitting pass makes; the pass decides what a
/// stop means.
constexpr int64_t kDisagree = -3;
struct CarriedSplit {
  int64_t dim = kMixed;
  unsigned operand = 0;
  int64_t operandDim = 0, before = 0, other = 0;
  explicit operator bool() const { return dim >= 0; }
};
CarriedSplit carrySplit(const DimMap &map,
                        llvm::ArrayRef<std::pair<unsigned, int64_t>> splits);

/// The dimension of operand #`i`, `operand`, that meets result dimension
/// `dim` (a value that is not split but lines up with the split: the pass
/// cuts it, shards it or reads it whole), or nullopt where none does or
/// the operand broadcasts along it (size 1).
std::optional<int64_t> alignedDim(const DimMap &map, unsigned i, mlir::Value operand,
                                  int64_t dim);

/// The dimensions of a reshape's result `out` that start where dimension
/// `dim` of its input `in` starts: as many elements lie before them as before
/// `dim`. If `dim` is cut into `parts` contiguous chunks and one of these
/// dimensions has a size divisible by `parts`, the chunks are that
/// dimension's chunks: the split survives the reshape.
llvm::SmallVector<int64_t> reshapeAlignedDims(llvm::ArrayRef<int64_t> in,
                                              int64_t dim,
                                              llvm::ArrayRef<int64_t> out);

/// Where a reshape takes features split into blocks: dimension `dim` of
/// `in`, viewed as `groups` equal groups of which every rank holds its
/// block of each. The result dimension e where the split dimension starts
/// must be [a, rest] with `a` outer elements merged in and `rest` a
/// multiple of a group (inner dimensions merged in) or a factor of it
/// (heads split off the features): each rank then holds its block of each
/// of the `a` groups of e. Returns (e, a), or nullopt where the reshape
/// moves the blocks apart.
std::optional<std::pair<int64_t, int64_t>>
reshapeGroupedSplit(llvm::ArrayRef<int64_t> in, int64_t dim, int64_t groups,
                    llvm::ArrayRef<int64_t> out);

/// The groups of a tensor-parallel split of `root`'s dimension `dim`: the
/// pieces that slices along it cut it into (GPT-2's fused q|k|v), found
/// ahead through reshapes and ops that keep the dimension whole (not
/// through products or attention).
int64_t inferSliceGroups(mlir::Value root, int64_t dim);

/// An axis attribute (I64Attr getters return uint64_t) counted from the end
/// when negative.
inline int64_t normalizeAxis(uint64_t axis, int64_t rank) {
  auto a = static_cast<int64_t>(axis);
  return a < 0 ? a + rank : a;
}

} // namespace colo

#endif
