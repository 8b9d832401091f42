// colo-ulysses: DeepSpeed-Ulysses sequence parallelism (Jacobs et al., 2023)
// on @forward. Every rank of the mesh's `sp` axis holds a contiguous block of
// s / sp positions of every sample (SequenceSplit.h). Before each
// colo.attention an all-to-all turns the q, k and v sequence blocks
// [b, h, s/sp, d] into head blocks [b, h/sp, s, d]: attention runs on whole
// sequences and the rank's heads (the causal mask needs no change), and
// another all-to-all turns its output back. The runtime's all-to-all splits
// and concatenates along its outermost dimension: reshapes and transposes
// bring the sp blocks there.
#include "Parallel/SequenceSplit.h"
#include "colo/Passes/Passes.h"

namespace colo {
#define GEN_PASS_DEF_COLOULYSSES
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
class UlyssesSplitter : public SequenceSplitter {
public:
  UlyssesSplitter(func::FuncOp func, MeshAxis axis)
      : SequenceSplitter(func, axis, "colo-ulysses", "sp", /*zigzag=*/false) {}

  int64_t numAllToAll = 0;

private:
  /// Sequence blocks [b, h, s/sp, d] of q, k and v become head blocks
  /// [b, h/sp, s, d]; the output goes back.
  LogicalResult visitAttention(AttentionOp op) override {
    if (!splitAlongPositions(op))
      return whole(op);
    for (Value v : {op.getQuery(), op.getKey()}) {
      int64_t heads = splits.split.lookup(v).global.getDimSize(1);
      if (heads % n != 0)
        return op.emitError() << "colo-ulysses: sp = " << n << " does not divide the "
                              << heads << (v == op.getQuery() ? " query" : " key/value")
                              << " heads of " << splits.split.lookup(v).global << nodeName(op)
                              << ": Ulysses gives each rank heads / sp whole heads";
    }
    if (Value mask = op.getMask()) {
      if (splits.isSplit(mask))
        op.getMaskMutable().assign(gather(mask));
      RankedTensorType mt = tensorType(op.getMask());
      if (mt.getRank() == 4 && mt.getDimSize(1) != 1)
        return op.emitError() << "colo-ulysses: the attention mask " << mt
                              << " differs between heads" << nodeName(op)
                              << " (not implemented: each rank computes heads / sp heads)";
    }
    OpBuilder b(op);
    for (OpOperand &use : op->getOpOperands().take_front(3))
      use.set(toHeads(b, use.get()));
    RankedTensorType global = op.getType();
    op.getResult().setType(withDim(global, 1, global.getDimSize(1) / n));
    b.setInsertionPointAfter(op);
    Value back = toSequence(b, op.getResult());
    op.getResult().replaceAllUsesExcept(back, producers(back, op.getResult()));
    splits.split[back] = Split{global, 2, 1, 1};
    return success();
  }

  Value allToAll(OpBuilder &b, Location loc, Value v) {
    ++numAllToAll;
    return make<shard::AllToAllOp>(b, loc, v.getType(), axis.grid.getSymName(),
                                   ArrayRef<int16_t>{axis.axis}, v, APInt(64, 0),
                                   APInt(64, 0));
  }

  /// [b, h, s/sp, d] -> [sp, b, h/sp, s/sp, d] -> all-to-all -> [b, h/sp, s, d].
  Value toHeads(OpBuilder &b, Value v) {
    Location loc = v.getLoc();
    ArrayRef<int64_t> s = tensorType(v).getShape();
    int64_t h = s[1] / n;
    Value x = reshape(b, loc, v, {s[0], n, h, s[2], s[3]});
    x = transpose(b, loc, x, {1, 0, 2, 3, 4});
    x = allToAll(b, loc, x);
    x = transpose(b, loc, x, {1, 2, 0, 3, 4});
    return reshape(b, loc, x, {s[0], h, s[2] * n, s[3]});
  }

  /// [b, h/sp, s, d] -> [sp, b, h/sp, s/sp, d] -> all-to-all -> [b, h, s/sp, d].
  Value toSequence(OpBuilder &b, Value v) {
    Location loc = v.getLoc();
    ArrayRef<int64_t> s = tensorType(v).getShape();
    int64_t t = s[2] / n;
    Value x = reshape(b, loc, v, {s[0], s[1], n, t, s[3]});
    x = transpose(b, loc, x, {2, 0, 1, 3, 4});
    x = allToAll(b, loc, x);
    x = transpose(b, loc, x, {1, 0, 2, 3, 4});
    return reshape(b, loc, x, {s[0], s[1] * n, t, s[3]});
  }
};

struct ColoUlysses : SplittingPass<colo::impl::ColoUlyssesBase<ColoUlysses>> {
  using SplittingPass::SplittingPass;
  using Done = ColoDialect::UlyssesAttrHelper;
  PlanTarget target() override { return {"sp", sp, "split", true, Done::getNameStr(), "split over sp"}; }

  LogicalResult runOnTarget(ModuleOp module, func::FuncOp f) override {
    FailureOr<MeshAxis> axis = getOrCreateMeshAxis(module, "sp", sp, f);
    if (failed(axis))
      return failure();
    UlyssesSplitter splitter(f, *axis);
    if (failed(splitter.run()))
      return failure();
    numAllToAll = splitter.numAllToAll;
    numGathered = splitter.numGathered;
    numSummed = splitter.numSummed;
    ColoDialect::UlyssesAttrHelper(&getContext())
        .setAttr(f, IntegerAttr::get(IntegerType::get(&getContext(), 64), sp));
    return success();
  }
};
} // namespace
