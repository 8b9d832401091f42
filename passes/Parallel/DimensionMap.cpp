// What the splitting passes share: the ops' dimension maps
// (DimensionMapOpInterface), the per-op step of the propagation
// (SplitPropagation.h), reshapes, and the check of local types.
#include "colo/Passes/SplitPropagation.h"

#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/Interfaces/InferTypeOpInterface.h"

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
