// colo-ring-attention: ring attention (Liu et al., 2023) on @forward. Every
// rank of the mesh's `sp` axis holds a block of s / n positions of every
// sample, in zigzag order by default (SequenceSplit.h). Each colo.attention
// keeps the rank's queries and passes the key and value blocks around the
// ring: at step t the rank holds the keys and values of rank (r - t) mod n
// (shard.shift by one, n - 1 times), scores its queries against them and
// folds the block into an online softmax:
//
//   m_t = max(m_{t-1}, rowmax(S_t))        (S_t = scale q k_t^T + mask_t)
//   o_t = exp(m_{t-1} - m_t) o_{t-1} + exp(S_t - m_t) v_t
//   l_t = exp(m_{t-1} - m_t) l_{t-1} + rowsum(exp(S_t - m_t))
//
// and the output is o_{n-1} / l_{n-1}. The running maximum only keeps the
// exponentials finite; the result does not depend on it, so it carries no
// gradient (colo.stop_gradient), as in FlashAttention. A causal mask
// between the rank's query positions and block t's key positions depends on
// the rank: it is a constant with one block per rank, each rank taking its
// own (shard.all_slice). Block 0 holds each query's own position, so m_0 is
// finite; keys a query may not see contribute exp(-inf) = 0. The gradient
// of a shift is the shift back: the backward sends the key and value
// gradients around the ring the other way.
#include "Parallel/SequenceSplit.h"
#include "colo/Passes/Passes.h"

#include <limits>

namespace colo {
#define GEN_PASS_DEF_COLORINGATTENTION
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
class RingSplitter : public SequenceSplitter {
public:
  RingSplitter(func::FuncOp func, MeshAxis axis, bool zigzag)
      : SequenceSplitter(func, axis, "colo-ring-attention", "ring", zigzag) {}

  int64_t numShifts = 0;

private:
  LogicalResult visitAttention(AttentionOp op) override {
    if (!splitAlongPositions(op))
      return whole(op);
    if (op.getDropout().convertToDouble() != 0.0)
      return op.emitError() << pass << ": attention dropout is not implemented with ring "
                            << "attention (each rank would need the one-rank run's mask "
                               "blocks)"
                            << nodeName(op);
    if (op.getMask())
      return op.emitError() << pass << ": an attention mask operand is not implemented "
                            << "with ring attention (only the causal flag)" << nodeName(op);
    RankedTensorType qt = tensorType(op.getQuery());
    int64_t groups = qt.getDimSize(1) / tensorType(op.getKey()).getDimSize(1);
    int64_t length = splits.split.lookup(op.getQuery()).global.getDimSize(2);

    OpBuilder b(op);
    Location loc = op.getLoc();
    Type stored = qt.getElementType();
    Type f32 = b.getF32Type();
    auto scalar = [&](double v) {
      auto t = RankedTensorType::get({}, f32);
      return make<ConstantOp>(b, loc, DenseElementsAttr::get(t, b.getFloatAttr(f32, v)));
    };
    auto toF32 = [&](Value v) {
      RankedTensorType t = tensorType(v);
      return t.getElementType() == f32 ? v : make<ConvertOp>(b, loc, t.clone(f32), v);
    };
    auto lastDim = b.getDenseI64ArrayAttr({3});
    auto rowMax = [&](Value v) { return make<ReduceMaxOp>(b, loc, v, lastDim, b.getUnitAttr()); };
    auto rowSum = [&](Value v) { return make<ReduceSumOp>(b, loc, v, lastDim, b.getUnitAttr()); };
    Value scale = scalar(op.getScale().convertToDouble());
    Value key = op.getKey(), value = op.getValue();
    Value out, sum, max;
    for (int64_t t = 0; t < n; ++t) {
      // The next blocks travel while this one is scored.
      Value nextKey, nextValue;
      if (t + 1 < n) {
        nextKey = shift(b, loc, key);
        nextValue = shift(b, loc, value);
      }
      Value k = repeatHeads(b, loc, key, groups), v = repeatHeads(b, loc, value, groups);
      Value scores = make<MatmulOp>(b, loc, op.getQuery(),
                                    transpose(b, loc, k, ArrayRef<int64_t>{0, 1, 3, 2}));
      scores = make<MulOp>(b, loc, toF32(scores), scale);
      if (op.getCausal())
        scores = make<AddOp>(b, loc, scores, causalMask(b, loc, t, length));
      Value blockMax = make<StopGradientOp>(b, loc, rowMax(scores));
      Value newMax = t == 0 ? blockMax : make<MaximumOp>(b, loc, max, blockMax);
      Value probs = make<ExpOp>(b, loc, make<SubOp>(b, loc, scores, newMax));
      Value pv = make<MatmulOp>(
          b, loc,
          stored == f32 ? probs : make<ConvertOp>(b, loc, tensorType(probs).clone(stored), probs),
          v);
      pv = toF32(pv);
      Value blockSum = rowSum(probs);
      if (t == 0) {
        out = pv, sum = blockSum;
      } else {
        Value rescale = make<ExpOp>(b, loc, make<SubOp>(b, loc, max, newMax));
        out = make<AddOp>(b, loc, make<MulOp>(b, loc, out, rescale), pv);
        sum = make<AddOp>(b, loc, make<MulOp>(b, loc, sum, rescale), blockSum);
      }
      max = newMax;
      key = nextKey, value = nextValue;
    }
    Value result = make<DivOp>(b, loc, out, sum);
    if (stored != f32)
      result = make<ConvertOp>(b, loc, tensorType(result).clone(stored), result);
    splits.split[result] = Split{op.getType(), 2, 1, 1};
    op.getResult().replaceAllUsesWith(result);
    op.erase();
    return success();
  }

  /// `x`'s block from the previous rank of the ring.
  Value shift(OpBuilder &b, Location loc, Value x) {
    ++numShifts;
    return make<shard::ShiftOp>(b, loc, x.getType(), axis.grid.getSymName(),
                                ArrayRef<int16_t>{axis.axis}, x, APInt(64, axis.axis), int64_t(1),
                                /*rotate=*/true);
  }

  /// Each of `kv`'s heads `groups` times: [b, hkv, t, d] -> [b, hkv*groups, t, d].
  Value repeatHeads(OpBuilder &b, Location loc, Value kv, int64_t groups) {
    if (groups == 1)
      return kv;
    RankedTensorType t = tensorType(kv);
    ArrayRef<int64_t> s = t.getShape();
    Type e = t.getElementType();
    Value x = reshape(b, loc, kv, {s[0], s[1], 1, s[2], s[3]});
    x = make<BroadcastToOp>(b, loc, RankedTensorType::get({s[0], s[1], groups, s[2], s[3]}, e), x);
    return reshape(b, loc, x, {s[0], s[1] * groups, s[2], s[3]});
  }

  /// The causal mask between this rank's query positions and the key
  /// positions of rank (r - t) mod n: [n, sl, sl] with rank r's block at r,
  /// of which each rank takes its own. Made once per step and length.
  Value causalMask(OpBuilder &b, Location loc, int64_t t, int64_t length) {
    Value &mask = masks[{t, length}];
    if (mask)
      return mask;
    int64_t local = length / n;
    std::vector<float> values;
    values.reserve(size_t(n * local * local));
    for (int64_t r = 0; r < n; ++r) {
      SmallVector<int64_t> queries = positionsOf(r, length);
      SmallVector<int64_t> keys = positionsOf(((r - t) % n + n) % n, length);
      for (int64_t q : queries)
        for (int64_t k : keys)
          values.push_back(k <= q ? 0.0f : -std::numeric_limits<float>::infinity());
    }
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&func.front());
    // The layers share the masks, which belong to none of them (so that the
    // layers stay alike for colo-recompute and the planner).
    loc = NameLoc::get(b.getStringAttr("ring_attention/causal_mask_" + Twine(t)));
    auto all = RankedTensorType::get({n, local, local}, b.getF32Type());
    Value whole = make<ConstantOp>(b, loc, DenseElementsAttr::get(all, ArrayRef(values)));
    Value mine = make<shard::AllSliceOp>(b, loc, all.clone({1, local, local}), whole,
                                         axis.grid.getSymName(), ArrayRef<int16_t>{axis.axis}, 0);
    return mask = reshape(b, loc, mine, {local, local});
  }

  DenseMap<std::pair<int64_t, int64_t>, Value> masks;
};

struct ColoRingAttention : SplittingPass<colo::impl::ColoRingAttentionBase<ColoRingAttention>> {
  using SplittingPass::SplittingPass;
  using Done = ColoDialect::RingAttrHelper;
  PlanTarget target() override {
    return {"ring", ring, "split", true, Done::getNameStr(), "split over a ring"};
  }

  LogicalResult runOnTarget(ModuleOp module, func::FuncOp f) override {
    FailureOr<MeshAxis> axis = getOrCreateMeshAxis(module, "sp", ring, f);
    if (failed(axis))
      return failure();
    RingSplitter splitter(f, *axis, zigzag);
    if (failed(splitter.run()))
      return failure();
    numShifts = splitter.numShifts;
    numGathered = splitter.numGathered;
    numSummed = splitter.numSummed;
    Done(&getContext()).setAttr(f, IntegerAttr::get(IntegerType::get(&getContext(), 64), ring));
    return success();
  }
};
} // namespace
