#ifndef COLO_DIALECT_COLO_COLOOPS_H
#define COLO_DIALECT_COLO_COLOOPS_H

#include "colo/Dialect/Colo/ColoDialect.h"
#include "colo/Dialect/Colo/ColoInterfaces.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "colo/Dialect/Colo/ColoEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "colo/Dialect/Colo/ColoAttrs.h.inc"

#define GET_OP_CLASSES
#include "colo/Dialect/Colo/ColoOps.h.inc"

namespace colo {
/// NumPy broadcasting of two static shapes (the rule of every broadcasting
/// colo op); fails if they are incompatible.
mlir::LogicalResult broadcastShapes(llvm::ArrayRef<int64_t> a,
                                    llvm::ArrayRef<int64_t> b,
                                    llvm::SmallVectorImpl<int64_t> &out);

/// How a global is divided among the ranks: its `shard` attribute
/// (#colo.shard, ShardAttr) read as plain values. Along each dimension d,
/// the rank with coordinate c in the group of `axes[d]` holds block c of
/// `parts[d]` (of each of `groups` groups of it), or, `flat`, of the
/// flattened tensor.
struct GlobalShard {
  /// Per dimension (one entry, for the flattened tensor, when `flat`): the
  /// mesh axes that split it (none: whole) and its number of blocks.
  llvm::SmallVector<llvm::SmallVector<llvm::StringRef, 1>> axes;
  llvm::SmallVector<int64_t> parts;
  int64_t groups = 1;
  bool flat = false;
  /// ZeRO-3 over a split: the mesh axes that cut the rank's flattened block
  /// again, into `flatParts`.
  llvm::SmallVector<llvm::StringRef, 1> flatAxes;
  int64_t flatParts = 1;
  /// Whether a rank holds a flat block (of the tensor or of its split block).
  bool flattened() const { return flat || !flatAxes.empty(); }
  /// The dimensions that are split, ascending.
  llvm::SmallVector<int64_t> splitDims() const;
};
/// The global's shard, or nullopt if it is not sharded.
std::optional<GlobalShard> getGlobalShard(GlobalOp global);
/// The type one rank holds: the global's type, or its block if sharded.
mlir::RankedTensorType localType(GlobalOp global);

/// The dropout mask of colo.dropout with a key: whether the element at
/// row-major index `index` is dropped. The splitmix64 finalizer of
/// key * 0x9e3779b97f4a7c15 + index (an odd multiplier, so every bit of the
/// key counts), its top 24 bits against ratio * 2^24. The interpreter and the
/// generated kernels compute exactly this.
inline bool dropoutDrops(int64_t key, int64_t index, double ratio) {
  uint64_t z = static_cast<uint64_t>(key) * 0x9e3779b97f4a7c15ULL +
               static_cast<uint64_t>(index);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 40) < ratio * double(1 << 24);
}

namespace detail {
/// Output size of a convolution or pooling window along one dimension.
int64_t windowOutput(int64_t in, int64_t padBefore, int64_t padAfter,
                     int64_t kernel, int64_t stride, int64_t dilation);
} // namespace detail
} // namespace colo

#endif
