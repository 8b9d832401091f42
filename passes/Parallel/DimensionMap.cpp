// What the splitting passes share: the ops' dimension maps
// (DimensionMapOpInterface), the per-op step of the propagation
// (SplitPropagation.h), reshapes, and the check of local types.
#include "colo/Passes/SplitPropagation.h"

#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/DenseSet.h"

#include <numeric>

using namespace mlir;
using namespace colo;

std::optional<DimMap> colo::dimMap(Operation *op) {
  if (auto map = dyn_cast<DimensionMapOpInterface>(op))
    return map.getDimensionMap();
  return std::nullopt;
}

CarriedSplit colo::carrySplit(const DimMap &map, ArrayRef<std::pair<unsigned, int64_t>> splits) {
  CarriedSplit c;
  for (auto [n, split] : llvm::enumerate(splits)) {
    auto [i, d] = split;
    int64_t to = map[i][d];
    if (to < 0 || (n > 0 && to != c.dim)) {
      c.operand = i;
      c.operandDim = d;
      c.other = to;
      c.before = c.dim;
      c.dim = to < 0 ? to : kDisagree;
      return c;
    }
    c.dim = to;
  }
  return c;
}

std::optional<int64_t> colo::alignedDim(const DimMap &map, unsigned i, Value operand,
                                        int64_t dim) {
  const SmallVector<int64_t> &m = map[i];
  const int64_t *it = llvm::find(m, dim);
  if (it == m.end())
    return std::nullopt;
  int64_t d = it - m.begin();
  if (cast<RankedTensorType>(operand.getType()).getDimSize(d) == 1)
    return std::nullopt;
  return d;
}

OperandAlignment colo::alignOperands(Operation *op, const DimMap &map, int64_t dim,
                                     function_ref<bool(Value)> isSplit) {
  OperandAlignment a;
  for (OpOperand &use : op->getOpOperands()) {
    if (isSplit(use.get()) || !isa<RankedTensorType>(use.get().getType()))
      continue;
    if (std::optional<int64_t> d = alignedDim(map, use.getOperandNumber(), use.get(), dim))
      a.aligned.push_back({&use, *d});
    else
      a.whole.push_back(&use);
  }
  return a;
}

SmallVector<int64_t> colo::reshapeAlignedDims(ArrayRef<int64_t> in, int64_t dim,
                                              ArrayRef<int64_t> out) {
  int64_t before = 1, outBefore = 1;
  for (int64_t i = 0; i < dim; ++i)
    before *= in[i];
  SmallVector<int64_t> dims;
  for (int64_t e = 0; e < static_cast<int64_t>(out.size()) && outBefore <= before; ++e) {
    if (outBefore == before)
      dims.push_back(e);
    outBefore *= out[e];
  }
  return dims;
}

std::optional<std::pair<int64_t, int64_t>>
colo::reshapeGroupedSplit(ArrayRef<int64_t> in, int64_t dim, int64_t groups,
                          ArrayRef<int64_t> out) {
  int64_t outer = groups, piece = in[dim] / groups, before = 1;
  for (int64_t i = 0; i < dim; ++i)
    outer *= in[i];
  for (auto [e, size] : llvm::enumerate(out)) {
    if (before * size <= outer) {
      before *= size;
      continue;
    }
    int64_t a = outer / before;
    if (outer % before || size % a || ((size / a) % piece && piece % (size / a)))
      return std::nullopt;
    return std::make_pair(int64_t(e), a);
  }
  return std::nullopt;
}

int64_t colo::inferSliceGroups(Value root, int64_t rootDim) {
  auto shape = [](Value v) { return cast<RankedTensorType>(v.getType()).getShape(); };
  int64_t size = shape(root)[rootDim], piece = size;
  SmallVector<std::pair<Value, int64_t>> work{{root, rootDim}};
  DenseSet<Value> seen{root};
  auto follow = [&](Value v, int64_t d) {
    if (shape(v)[d] == size && seen.insert(v).second)
      work.push_back({v, d});
  };
  while (!work.empty()) {
    auto [v, d] = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (auto slice = dyn_cast<SliceOp>(user)) {
        if (slice.getStride()[d] != 1)
          continue;
        piece = std::gcd(piece, std::gcd(slice.getStart()[d], slice.getLimit()[d]));
        if (slice.getStart()[d] == 0 && slice.getLimit()[d] == size)
          follow(slice.getResult(), d);
      } else if (auto reshape = dyn_cast<ReshapeOp>(user)) {
        for (int64_t e : reshapeAlignedDims(shape(v), d, reshape.getType().getShape()))
          follow(reshape.getResult(), e);
      } else if (user->getNumResults() == 1 && !isa<MatmulOp, AttentionOp>(user)) {
        if (std::optional<DimMap> map = dimMap(user)) {
          int64_t e = (*map)[use.getOperandNumber()][d];
          if (e >= 0)
            follow(user->getResult(0), e);
        }
      }
    }
  }
  return size / piece;
}

bool colo::inferredTypeIs(Operation *op, RankedTensorType type) {
  auto infer = dyn_cast<InferTypeOpInterface>(op);
  if (!infer)
    return true;
  SmallVector<Type> inferred;
  return succeeded(infer.inferReturnTypes(op->getContext(), op->getLoc(), op->getOperands(),
                                          op->getAttrDictionary(), op->getPropertiesStorage(),
                                          op->getRegions(), inferred)) &&
         !inferred.empty() && inferred.front() == type;
}

LogicalResult colo::verifyLocalType(Operation *op, RankedTensorType local, StringRef pass) {
  if (inferredTypeIs(op, local))
    return success();
  return op->emitError() << pass << ": local result type " << local
                         << " disagrees with the op's type inference";
}
