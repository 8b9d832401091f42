// colo-tensor-parallel-3d: 3-D tensor parallelism (Bian et al., 2021;
// Colossal-AI's parallel_3d) on @forward, over a q x q x q cube: the mesh
// axes "x", "y" and "z". An activation is in one of two layouts (TensorGrid):
// A, its features split over "y" and its samples over ("x", "z"); B, its
// features over "z" and its samples over ("x", "y"). The inputs are cut to
// A; every product with a weight goes from one layout to the other:
//
//   X in A [b/q², K/q]  --all_gather over "z"-->  X' [b/q, K/q]  (samples of x)
//   W [K/q², N/q]       --all_gather over "x"-->  W' [K/q, N/q]  (K block y, N block z)
//   X' W' [b/q, N/q], partial over "y"  --reduce_scatter over "y"-->  Y in B [b/q², N/q]
//
// and from B to A with "y" and "z" exchanged. Both gathers are read through
// colo.all_reduce_grad over their axis, so the backward reduce-scatters
// their gradients (dX summed over the output features' ranks, dW over the
// samples' x blocks) and gathers Y's; each rank keeps the block (K over
// (y, x), N over z) of every linear weight, none of it replicated. The
// residual stream stays in A: a transformer block's products come in pairs
// (q, k, v then the output projection; the MLP's two).
#include "Parallel/TensorGrid.h"
#include "colo/Passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace colo {
#define GEN_PASS_DEF_COLOTENSORPARALLEL3D
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
constexpr StringLiteral kPass = "colo-tensor-parallel-3d";

class Cube : public TensorGrid {
public:
  Cube(func::FuncOp func, MeshAxis x, MeshAxis y, MeshAxis z,
       const DenseMap<StringAttr, int64_t> &symbolUses)
      : TensorGrid(kPass, func, x.size,
                   {GridLayout(y, "y", {x.axis, z.axis}, x.size * x.size),
                    GridLayout(z, "z", {x.axis, y.axis}, x.size * x.size)},
                   "q * q", "two of the cube's axes", symbolUses),
        x(x) {}

private:
  LogicalResult product(MatmulOp op, Weight w, unsigned layout, bool batch) override {
    if (!batch)
      return unsupported(op, "its left operand's samples are not split");
    unsigned next = 1 - layout;
    const GridLayout &from = layouts[layout], &to = layouts[next];
    int64_t n = tensorType(op.getResult()).getRank() - 1;
    // [in, out]: in over (from's features, "x"), out over to's.
    FailureOr<int64_t> groups =
        shardProductWeight(op, w, {from.featuresName, "x"}, {to.featuresName});
    if (failed(groups))
      return failure();

    OpBuilder b(op);
    Location loc = op.getLoc();
    // Gathered along dimension 0 over `axis`, read through a sum of the
    // ranks' partial gradients (which the gather's gradient scatters).
    auto gather = [&](OpBuilder &b, Value v, MeshAxis axis) {
      RankedTensorType t = tensorType(v);
      Value all = make<shard::AllGatherOp>(b, loc, withDim(t, 0, t.getDimSize(0) * q), gridName(),
                                           ArrayRef<int16_t>{axis.axis}, v, APInt(64, 0));
      return make<AllReduceGradOp>(b, loc, all.getType(), all, gridName(),
                                   ArrayRef<int16_t>{axis.axis});
    };
    // Products that read the same input (Llama's q, k, v; gate and up)
    // share its gather, so that the backward sums their gradients of it
    // before one reduce-scatter.
    // The weight's gather is issued before the previous product (where the
    // weight is loaded by then), so that it travels while that one runs;
    // its gradient's reduce-scatter follows that product's backward.
    OpBuilder ahead(op);
    Operation *weight = op.getRhs().getDefiningOp();
    if (previous && (!weight || weight->isBeforeInBlock(previous)))
      ahead.setInsertionPoint(previous);
    Value rhs = gather(ahead, op.getRhs(), x);
    Value &lhs = gathered[op.getLhs()];
    Operation *start = nullptr;
    if (!lhs) {
      lhs = gather(b, op.getLhs(), to.features);
      start = lhs.getDefiningOp()->getOperand(0).getDefiningOp();
    }
    FeatureSplit split{n, *groups, next};
    if (failed(setLayout(op.getResult(), next, split, /*check=*/false)))
      return failure();
    RankedTensorType local = tensorType(op.getResult());
    Value partial = make<MatmulOp>(b, loc, withDim(local, 0, local.getDimSize(0) * q), lhs, rhs);
    previous = start ? start : partial.getDefiningOp();
    Value y = make<shard::ReduceScatterOp>(b, loc, local, gridName(),
                                           ArrayRef<int16_t>{from.features.axis}, partial,
                                           shard::ReductionKind::Sum, APInt(64, 0));
    op.getResult().replaceAllUsesWith(y);
    copyLayout(y, op.getResult(), next, split);
    erase(op);
    ++numProducts;
    return success();
  }

  MeshAxis x;
  DenseMap<Value, Value> gathered;
  /// Where the last product starts: its input's gather, or its own product
  /// where that gather was shared.
  Operation *previous = nullptr;
};

struct ColoTensorParallel3D
    : SplittingPass<colo::impl::ColoTensorParallel3DBase<ColoTensorParallel3D>> {
  using SplittingPass::SplittingPass;
  using Done = ColoDialect::TensorParallel3dAttrHelper;
  PlanTarget target() override {
    return {"q", q, "split", true, Done::getNameStr(), "split over a 3-D cube"};
  }

  LogicalResult runOnTarget(ModuleOp module, func::FuncOp f) override {
    // Without a mesh, the cube's alone (colo-create-mesh makes it with the
    // plan's other axes).
    if (module.getOps<shard::GridOp>().empty() &&
        failed(createMesh(module, {{"x", q}, {"y", q}, {"z", q}}, f)))
      return failure();
    FailureOr<MeshAxis> x = getOrCreateMeshAxis(module, "x", q, f);
    FailureOr<MeshAxis> y = getOrCreateMeshAxis(module, "y", q, f);
    FailureOr<MeshAxis> z = getOrCreateMeshAxis(module, "z", q, f);
    if (failed(x) || failed(y) || failed(z))
      return failure();
    DenseMap<StringAttr, int64_t> symbolUses = countSymbolUses(module);
    Cube splitter(f, *x, *y, *z, symbolUses);
    if (failed(splitter.run()))
      return failure();
    numProducts = splitter.numProducts;
    numNorms = splitter.numNorms;
    numSummed = splitter.summed();
    Done(&getContext()).setAttr(f, IntegerAttr::get(IntegerType::get(&getContext(), 64), q));
    return success();
  }
};
} // namespace
