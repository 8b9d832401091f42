// The dimension tables of colo-split-batch and colo-tensor-parallel: for
// every op, where each operand dimension goes in the result.
#include "colo/Passes/DimensionMap.h"

#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace colo;

namespace {
RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }
int64_t rankOf(Value v) { return tensorType(v).getRank(); }

/// NumPy broadcasting: dimension i of a rank-r operand is result dimension
/// rank - r + i.
SmallVector<int64_t> rightAligned(Value v, int64_t rank) {
  SmallVector<int64_t> m;
  for (int64_t i = 0, r = rankOf(v); i < r; ++i)
    m.push_back(rank - r + i);
  return m;
}

SmallVector<int64_t> identity(Value v) { return rightAligned(v, rankOf(v)); }
SmallVector<int64_t> all(Value v, int64_t what) {
  return SmallVector<int64_t>(rankOf(v), what);
}

/// Identity except that dimensions from `axis` on are normalized over.
SmallVector<int64_t> normalizedFrom(Value v, int64_t axis) {
  SmallVector<int64_t> m = identity(v);
  for (int64_t i = normalizeAxis(axis, rankOf(v)); i < rankOf(v); ++i)
    m[i] = kReduced;
  return m;
}
} // namespace

std::optional<DimMap> colo::dimMap(Operation *op) {
  using Result = std::optional<DimMap>;
  auto broadcasting = [](Operation *op) -> Result {
    int64_t rank = rankOf(op->getResult(0));
    DimMap m;
    for (Value v : op->getOperands())
      m.push_back(rightAligned(v, rank));
    return m;
  };
  auto softmax = [](auto op) -> Result {
    SmallVector<int64_t> m = identity(op.getInput());
    m[normalizeAxis(op.getAxis(), m.size())] = kReduced;
    return DimMap{m};
  };
  auto norm = [](auto op) -> Result {
    DimMap m{normalizedFrom(op.getInput(), op.getAxis())};
    for (Value p : op->getOperands().drop_front())
      m.push_back(all(p, kReduced));
    return m;
  };
  auto reduce = [](auto op) -> Result {
    SmallVector<int64_t> m;
    int64_t out = 0;
    for (int64_t i = 0; i < rankOf(op.getInput()); ++i) {
      bool reduced = llvm::is_contained(op.getDims(), i);
      m.push_back(reduced ? kReduced : out);
      out += !reduced || op.getKeepDims();
    }
    return DimMap{m};
  };
  auto pool = [](Operation *op) -> Result {
    return DimMap{{0, 1, kMixed, kMixed}};
  };
  auto loss = [](Operation *op) -> Result {
    DimMap m;
    for (Value v : op->getOperands())
      m.push_back(all(v, kReduced));
    return m;
  };
  return TypeSwitch<Operation *, Result>(op)
      .Case<NegOp, ExpOp, LogOp, SqrtOp, RsqrtOp, ReciprocalOp, TanhOp, ErfOp,
            SigmoidOp, ReluOp, SiluOp, CosOp, SinOp, GeluOp, ClampOp, AddOp,
            SubOp, MulOp, DivOp, PowOp, MaximumOp, MinimumOp, CompareOp,
            SelectOp, ConvertOp, DropoutOp, BroadcastToOp>(broadcasting)
      .Case<SoftmaxOp>(softmax)
      .Case<LogSoftmaxOp>(softmax)
      .Case<LayerNormOp>(norm)
      .Case<RmsNormOp>(norm)
      .Case<ReduceSumOp>(reduce)
      .Case<ReduceMeanOp>(reduce)
      .Case<ReduceMaxOp>(reduce)
      .Case<MaxPool2dOp, AvgPool2dOp>(pool)
      .Case<CrossEntropyOp, MseLossOp>(loss)
      .Case([](CrossEntropyRowsOp op) -> Result {
        // Each position's loss is taken over its classes.
        return DimMap{normalizedFrom(op.getLogits(), -1), identity(op.getLabels())};
      })
      .Case([](CrossEntropyRowsBackwardOp op) -> Result {
        return DimMap{normalizedFrom(op.getLogits(), -1), identity(op.getLabels()),
                      SmallVector<int64_t>{}};
      })
      .Case([](MatmulOp op) -> Result {
        // Batch dimensions broadcast among themselves; k is contracted.
        int64_t rank = rankOf(op.getResult());
        auto side = [&](Value v, bool lhs) {
          SmallVector<int64_t> m = rightAligned(v, rank);
          m[m.size() - (lhs ? 1 : 2)] = kReduced;
          return m;
        };
        return DimMap{side(op.getLhs(), true), side(op.getRhs(), false)};
      })
      .Case([](Conv2dOp op) -> Result {
        DimMap m{{0, kReduced, kMixed, kMixed}, all(op.getFilter(), kMixed)};
        if (op.getBias())
          m.push_back(all(op.getBias(), kMixed));
        return m;
      })
      .Case([](AttentionOp op) -> Result {
        // Only the leading dimension: heads are grouped, queries are masked
        // causally by position and keys are summed over.
        DimMap m(3, SmallVector<int64_t>{0, kMixed, kReduced, kReduced});
        m[0][2] = kMixed;
        m[2][3] = kMixed;
        if (Value mask = op.getMask()) {
          SmallVector<int64_t> mm = rightAligned(mask, 4);
          for (int64_t &d : mm)
            d = d == 0 ? 0 : d == 3 ? kReduced : kMixed;
          m.push_back(mm);
        }
        return m;
      })
      .Case([](BatchNormOp op) -> Result {
        // Training mode reduces over the batch: each slice normalizes with
        // its own statistics (see the pass description).
        SmallVector<int64_t> in = all(op.getInput(), kReduced);
        in[0] = 0;
        in[1] = kMixed;
        DimMap m{in};
        for (Value p : op->getOperands().drop_front())
          m.push_back(all(p, kMixed));
        return m;
      })
      .Case([](TransposeOp op) -> Result {
        SmallVector<int64_t> m(op.getPermutation().size());
        for (auto [i, p] : llvm::enumerate(op.getPermutation()))
          m[p] = i;
        return DimMap{m};
      })
      .Case([](SliceOp op) -> Result { return DimMap{identity(op.getInput())}; })
      .Case([](ConcatOp op) -> Result {
        DimMap m;
        for (Value v : op.getInputs()) {
          m.push_back(identity(v));
          m.back()[normalizeAxis(op.getAxis(), rankOf(v))] = kMixed;
        }
        return m;
      })
      .Case([](GatherOp op) -> Result {
        int64_t r = rankOf(op.getInput()), ri = rankOf(op.getIndices());
        int64_t axis = normalizeAxis(op.getAxis(), r);
        SmallVector<int64_t> in;
        for (int64_t i = 0; i < r; ++i)
          in.push_back(i < axis ? i : i == axis ? kMixed : i - 1 + ri);
        SmallVector<int64_t> idx = rightAligned(op.getIndices(), axis + ri);
        return DimMap{in, idx};
      })
      .Case([](EmbeddingOp op) -> Result {
        return DimMap{all(op.getTable(), kMixed), identity(op.getIds())};
      })
      .Default([](Operation *) -> Result { return std::nullopt; });
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

LogicalResult colo::verifyLocalType(Operation *op, RankedTensorType local, StringRef pass) {
  auto infer = dyn_cast<InferTypeOpInterface>(op);
  if (!infer)
    return success();
  SmallVector<Type> inferred;
  if (succeeded(infer.inferReturnTypes(op->getContext(), op->getLoc(), op->getOperands(),
                                       op->getAttrDictionary(), op->getPropertiesStorage(),
                                       op->getRegions(), inferred)) &&
      !inferred.empty() && inferred.front() == local)
    return success();
  return op->emitError() << pass << ": local result type " << local
                         << " disagrees with the op's type inference";
}
