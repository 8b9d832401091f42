// colo-tensor-parallel-2d: 2-D tensor parallelism (Xu et al., 2021;
// Colossal-AI's parallel_2d) on @forward, over a q x q grid: the mesh axes
// "row" (i) and "col" (j). Rank (i, j) holds block i of the batch and block
// j of the features of every activation (TensorGrid's one layout), and
// block (i, j) of every linear layer's weight [in, out]. A product Y = X W
// takes SUMMA's q steps: at step k the ranks of row i receive X_ik from rank
// (i, k) (shard.broadcast over "col"), the ranks of column j receive W_kj
// from rank (k, j) (over "row"), and each adds X_ik W_kj to its Y_ij. The
// next step's broadcasts come before the current product, so that two
// blocks are held at a time. The backward follows from the broadcasts'
// gradient rule: the gradients of X_ik and W_kj are summed to their roots
// (shard.reduce), Colossal-AI's ABT and ATB products.
//
// With depth d > 1, 2.5-D tensor parallelism (Wang et al., 2021, Tesseract;
// Colossal-AI's parallel_2p5d): d copies of the grid on the mesh axis
// "depth", copy k on block k of the batch. Everything above runs within a
// copy; the batch is cut over ("depth", "row"), and the gradients of the
// linear weights, whole on every copy, are summed over "depth" too.
#include "Parallel/TensorGrid.h"
#include "colo/Passes/Passes.h"

#include "mlir/IR/Builders.h"

namespace colo {
#define GEN_PASS_DEF_COLOTENSORPARALLEL2D
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
constexpr StringLiteral kPass = "colo-tensor-parallel-2d";

class Grid2D : public TensorGrid {
public:
  /// `depth`: 2.5-D's copies of the grid, each on its part of the batch.
  Grid2D(func::FuncOp func, MeshAxis row, MeshAxis col, std::optional<MeshAxis> depth,
         const DenseMap<StringAttr, int64_t> &symbolUses)
      : TensorGrid(kPass, func, row.size,
                   {GridLayout(col, "col",
                               depth ? SmallVector<shard::GridAxis, 2>{depth->axis, row.axis}
                                     : SmallVector<shard::GridAxis, 2>{row.axis},
                               row.size * (depth ? depth->size : 1))},
                   "q * depth", "the grid's rows", symbolUses),
        row(row), col(col) {
    if (depth)
      depthSums.emplace(*depth);
  }

  int64_t summed() const override {
    return TensorGrid::summed() + (depthSums ? depthSums->size() : 0);
  }

private:
  LogicalResult product(MatmulOp op, Weight w, unsigned layout, bool batch) override {
    int64_t n = tensorType(op.getResult()).getRank() - 1;
    // [in, out] split over ("row", "col").
    FailureOr<int64_t> groups = shardProductWeight(op, w, {"row"}, {"col"});
    if (failed(groups))
      return failure();
    // Whole on every copy of a 2.5-D grid, which each reads with its samples.
    if (depthSums)
      op.getRhsMutable().assign(depthSums->of(op.getRhs()));

    // Step k's broadcasts are issued before step k - 1's product.
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto blocks = [&](int64_t step) {
      SmallVector<int64_t, 1> root{step};
      Value x =
          make<shard::BroadcastOp>(b, loc, op.getLhs().getType(), gridName(),
                                   ArrayRef<int16_t>{col.axis}, op.getLhs(), root, ValueRange{});
      Value y =
          make<shard::BroadcastOp>(b, loc, op.getRhs().getType(), gridName(),
                                   ArrayRef<int16_t>{row.axis}, op.getRhs(), root, ValueRange{});
      return std::make_pair(x, y);
    };
    std::optional<unsigned> rows = batch ? std::optional<unsigned>(layout) : std::nullopt;
    FeatureSplit split{n, *groups, layout};
    if (failed(setLayout(op.getResult(), rows, split)))
      return failure();
    Type type = op.getResult().getType();
    Value sum;
    auto next = blocks(0);
    for (int64_t step = 0; step < q; ++step) {
      auto [x, y] = next;
      if (step + 1 < q)
        next = blocks(step + 1);
      Value product = make<MatmulOp>(b, loc, type, x, y);
      sum = sum ? make<AddOp>(b, loc, type, sum, product) : product;
    }
    op.getResult().replaceAllUsesWith(sum);
    copyLayout(sum, op.getResult(), rows, split);
    erase(op);
    ++numProducts;
    return success();
  }

  MeshAxis row, col;
  std::optional<GradientSums> depthSums;
};

struct ColoTensorParallel2D
    : SplittingPass<colo::impl::ColoTensorParallel2DBase<ColoTensorParallel2D>> {
  using SplittingPass::SplittingPass;
  using Done = ColoDialect::TensorParallel2dAttrHelper;
  PlanTarget target() override {
    return {"q", q, "split", true, Done::getNameStr(), "split over a 2-D grid"};
  }

  LogicalResult runOnTarget(ModuleOp module, func::FuncOp f) override {
    // Without a mesh, the grid's alone (colo-create-mesh makes it with the
    // plan's other axes).
    if (depth < 1)
      return f.emitError() << kPass << ": depth must be at least 1, got "
                           << static_cast<int64_t>(depth);
    SmallVector<std::pair<StringRef, int64_t>, 3> grid{{"row", q}, {"col", q}};
    if (depth > 1)
      grid.insert(grid.begin(), {"depth", depth});
    if (module.getOps<shard::GridOp>().empty() && failed(createMesh(module, grid, f)))
      return failure();
    FailureOr<MeshAxis> row = getOrCreateMeshAxis(module, "row", q, f);
    FailureOr<MeshAxis> col = getOrCreateMeshAxis(module, "col", q, f);
    if (failed(row) || failed(col))
      return failure();
    std::optional<MeshAxis> copies;
    if (depth > 1) {
      FailureOr<MeshAxis> d = getOrCreateMeshAxis(module, "depth", depth, f);
      if (failed(d))
        return failure();
      copies = *d;
    }
    DenseMap<StringAttr, int64_t> symbolUses = countSymbolUses(module);
    Grid2D splitter(f, *row, *col, copies, symbolUses);
    if (failed(splitter.run()))
      return failure();
    numSumma = splitter.numProducts;
    numNorms = splitter.numNorms;
    numSummed = splitter.summed();
    Done(&getContext()).setAttr(f, IntegerAttr::get(IntegerType::get(&getContext(), 64), q));
    return success();
  }
};
} // namespace
