// DimensionMapOpInterface: where each operand dimension of an op goes in its
// result. Batch splitting, tensor, sequence and Ulysses parallelism and the
// compiler's kernel pieces follow splits through ops by these maps alone.
#include "colo/Dialect/Colo/ColoOps.h"

using namespace mlir;
using namespace colo;

namespace {
int64_t rankOf(Value v) { return cast<RankedTensorType>(v.getType()).getRank(); }

int64_t normalized(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

/// NumPy broadcasting: dimension i of a rank-r operand is result dimension
/// rank - r + i.
SmallVector<int64_t> rightAligned(Value v, int64_t rank) {
  SmallVector<int64_t> m;
  for (int64_t i = 0, r = rankOf(v); i < r; ++i)
    m.push_back(rank - r + i);
  return m;
}

SmallVector<int64_t> identity(Value v) { return rightAligned(v, rankOf(v)); }
SmallVector<int64_t> all(Value v, int64_t what) { return SmallVector<int64_t>(rankOf(v), what); }

/// Identity except that dimensions from `axis` on are normalized over.
SmallVector<int64_t> normalizedFrom(Value v, int64_t axis) {
  SmallVector<int64_t> m = identity(v);
  for (int64_t i = normalized(axis, rankOf(v)); i < rankOf(v); ++i)
    m[i] = kReduced;
  return m;
}

template <typename Op> DimMap softmaxMap(Op op) {
  SmallVector<int64_t> m = identity(op.getInput());
  m[normalized(int64_t(op.getAxis()), m.size())] = kReduced;
  return {m};
}

template <typename Op> DimMap normMap(Op op) {
  DimMap m{normalizedFrom(op.getInput(), int64_t(op.getAxis()))};
  for (Value p : op->getOperands().drop_front())
    m.push_back(all(p, kReduced));
  return m;
}

template <typename Op> DimMap reduceMap(Op op) {
  SmallVector<int64_t> m;
  int64_t out = 0;
  for (int64_t i = 0; i < rankOf(op.getInput()); ++i) {
    bool reduced = llvm::is_contained(op.getDims(), i);
    m.push_back(reduced ? kReduced : out);
    out += !reduced || op.getKeepDims();
  }
  return {m};
}

DimMap lossMap(Operation *op) {
  DimMap m;
  for (Value v : op->getOperands())
    m.push_back(all(v, kReduced));
  return m;
}

/// Batch and channels carried; the window mixes positions.
DimMap poolMap() { return {{0, 1, kMixed, kMixed}}; }
} // namespace

DimMap colo::detail::broadcastingDimensionMap(Operation *op) {
  int64_t rank = rankOf(op->getResult(0));
  DimMap m;
  for (Value v : op->getOperands())
    m.push_back(rightAligned(v, rank));
  return m;
}

DimMap SoftmaxOp::getDimensionMap() { return softmaxMap(*this); }
DimMap LogSoftmaxOp::getDimensionMap() { return softmaxMap(*this); }
DimMap CumSumOp::getDimensionMap() { return softmaxMap(*this); }
DimMap LayerNormOp::getDimensionMap() { return normMap(*this); }
DimMap RmsNormOp::getDimensionMap() { return normMap(*this); }
DimMap ReduceSumOp::getDimensionMap() { return reduceMap(*this); }
DimMap ReduceMeanOp::getDimensionMap() { return reduceMap(*this); }
DimMap ReduceMaxOp::getDimensionMap() { return reduceMap(*this); }
DimMap MaxPool2dOp::getDimensionMap() { return poolMap(); }
DimMap AvgPool2dOp::getDimensionMap() { return poolMap(); }
DimMap CrossEntropyOp::getDimensionMap() { return lossMap(*this); }
DimMap MseLossOp::getDimensionMap() { return lossMap(*this); }

/// Each position's loss is taken over its classes.
DimMap CrossEntropyRowsOp::getDimensionMap() {
  return {normalizedFrom(getLogits(), -1), identity(getLabels())};
}
DimMap CrossEntropyRowsBackwardOp::getDimensionMap() {
  return {normalizedFrom(getLogits(), -1), identity(getLabels()), SmallVector<int64_t>{}};
}

/// Batch dimensions broadcast among themselves; k is contracted.
DimMap MatmulOp::getDimensionMap() {
  int64_t rank = rankOf(getResult());
  auto side = [&](Value v, bool lhs) {
    SmallVector<int64_t> m = rightAligned(v, rank);
    m[m.size() - (lhs ? 1 : 2)] = kReduced;
    return m;
  };
  return {side(getLhs(), true), side(getRhs(), false)};
}

DimMap Conv2dOp::getDimensionMap() {
  DimMap m{{0, kReduced, kMixed, kMixed}, all(getFilter(), kMixed)};
  if (getBias())
    m.push_back(all(getBias(), kMixed));
  return m;
}

/// Only the leading dimension: heads are grouped, queries are masked
/// causally by position and keys are summed over.
DimMap AttentionOp::getDimensionMap() {
  DimMap m(3, SmallVector<int64_t>{0, kMixed, kReduced, kReduced});
  m[0][2] = kMixed;
  m[2][3] = kMixed;
  if (Value mask = getMask()) {
    SmallVector<int64_t> mm = rightAligned(mask, 4);
    for (int64_t &d : mm)
      d = d == 0 ? 0 : d == 3 ? kReduced : kMixed;
    m.push_back(mm);
  }
  return m;
}

/// Training mode reduces over the batch: each slice of a split batch
/// normalizes with its own statistics (colo-split-batch's description).
DimMap BatchNormOp::getDimensionMap() {
  SmallVector<int64_t> in = all(getInput(), kReduced);
  in[0] = 0;
  in[1] = kMixed;
  DimMap m{in};
  for (Value p : getOperation()->getOperands().drop_front())
    m.push_back(all(p, kMixed));
  return m;
}

DimMap TransposeOp::getDimensionMap() {
  SmallVector<int64_t> m(getPermutation().size());
  for (auto [i, p] : llvm::enumerate(getPermutation()))
    m[p] = i;
  return {m};
}

DimMap SliceOp::getDimensionMap() { return {identity(getInput())}; }

DimMap ConcatOp::getDimensionMap() {
  DimMap m;
  for (Value v : getInputs()) {
    m.push_back(identity(v));
    m.back()[normalized(int64_t(getAxis()), rankOf(v))] = kMixed;
  }
  return m;
}

DimMap GatherOp::getDimensionMap() {
  int64_t r = rankOf(getInput()), ri = rankOf(getIndices());
  int64_t axis = normalized(int64_t(getAxis()), r);
  SmallVector<int64_t> in;
  for (int64_t i = 0; i < r; ++i)
    in.push_back(i < axis ? i : i == axis ? kMixed : i - 1 + ri);
  return {in, rightAligned(getIndices(), axis + ri)};
}

DimMap EmbeddingOp::getDimensionMap() {
  return {all(getTable(), kMixed), identity(getIds())};
}
