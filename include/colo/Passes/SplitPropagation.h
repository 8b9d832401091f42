//===- SplitPropagation.h - The walk every splitting pass shares -*- C++ -*-===//
//
// colo-split-batch (the batch), colo-tensor-parallel (the features),
// colo-sequence-parallel and colo-ulysses (the tokens) follow a split of one
// tensor dimension forward through a function, and the compiler's kernel
// splitter follows one backward from a kernel's outputs. They share this
// engine: the walk over the ops, the record of each value's split, and the
// per-op step read off the op's dimension map (DimensionMap.h): where the
// split operands carry the split, and how each unsplit operand meets it.
// Each pass supplies only its policy: what a value's split records beyond
// its dimension, what stops it, what to do with an unsplit operand that
// meets the split (cut it, shard it, reject the op) and which communication
// to insert.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_PASSES_SPLITPROPAGATION_H
#define COLO_PASSES_SPLITPROPAGATION_H

#include "colo/Passes/DimensionMap.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace colo {

inline mlir::RankedTensorType tensorType(mlir::Value v) {
  return llvm::cast<mlir::RankedTensorType>(v.getType());
}

/// How the unsplit tensor operands of an op meet result dimension `dim`.
struct OperandAlignment {
  /// Operands with a dimension of full size that becomes `dim` (a bias, a
  /// mask, a position table), and that dimension: the pass cuts them,
  /// shards them, or cannot split the op.
  llvm::SmallVector<std::pair<mlir::OpOperand *, int64_t>> aligned;
  /// The others (broadcast along `dim`, or not reaching it): every part
  /// reads them whole.
  llvm::SmallVector<mlir::OpOperand *> whole;
};
/// The alignment of `op`'s tensor operands for which `isSplit` is false.
OperandAlignment alignOperands(mlir::Operation *op, const DimMap &map, int64_t dim,
                               llvm::function_ref<bool(mlir::Value)> isSplit);

/// One op's forward step: the result dimension its split operands carry the
/// split to (or why they stop), and its unsplit operands' alignment with it
/// (meaningful when `carried` holds).
struct SplitStep {
  CarriedSplit carried;
  OperandAlignment operands;
};

/// The forward propagation: the ops of a block in order, each given to the
/// pass's visitor with the split operands it reads (operand number and the
/// pass's record `Split`, which has a `dim`); the visitor records the
/// splits of results in `split`.
template <typename Split> class SplitPropagation {
public:
  using Carried = llvm::SmallVector<std::pair<unsigned, Split>>;
  using Visitor = llvm::function_ref<mlir::LogicalResult(mlir::Operation *, const Carried &)>;

  /// Visits the ops of `body` in order; the visitor may erase the current
  /// op, and ops it inserts right after it are not visited. Stops at the
  /// first failure.
  mlir::LogicalResult run(mlir::Block &body, Visitor visit) {
    for (mlir::Operation &op : llvm::make_early_inc_range(body))
      if (mlir::failed(visit(&op, carried(&op))))
        return mlir::failure();
    return mlir::success();
  }

  /// The split operands of `op`, in operand order.
  Carried carried(mlir::Operation *op) const {
    Carried c;
    for (mlir::OpOperand &use : op->getOpOperands())
      if (auto it = split.find(use.get()); it != split.end())
        c.push_back({use.getOperandNumber(), it->second});
    return c;
  }

  bool isSplit(mlir::Value v) const { return split.count(v); }

  /// The step of `op` under `map` for the splits `c` it reads.
  SplitStep step(mlir::Operation *op, const DimMap &map, const Carried &c) const {
    llvm::SmallVector<std::pair<unsigned, int64_t>> dims;
    for (auto &[i, s] : c)
      dims.push_back({i, s.dim});
    SplitStep s{carrySplit(map, dims), {}};
    if (s.carried)
      s.operands = alignOperands(op, map, s.carried.dim,
                                 [&](mlir::Value v) { return isSplit(v); });
    return s;
  }

  /// Gives `op`'s one result its local type, dimension `dim` divided by
  /// `parts`, where the op's type inference agrees (else an error naming
  /// `pass`), and records `s` for it.
  mlir::LogicalResult setLocal(mlir::Operation *op, int64_t dim, int64_t parts, Split s,
                               llvm::StringRef pass) {
    mlir::Value result = op->getResult(0);
    mlir::RankedTensorType global = tensorType(result);
    mlir::RankedTensorType local = withDim(global, dim, global.getDimSize(dim) / parts);
    if (mlir::failed(verifyLocalType(op, local, pass)))
      return mlir::failure();
    result.setType(local);
    split[result] = s;
    return mlir::success();
  }

  llvm::DenseMap<mlir::Value, Split> split;
};

} // namespace colo

#endif
