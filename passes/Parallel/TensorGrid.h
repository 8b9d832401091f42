//===- TensorGrid.h - Tensor parallelism over a grid of ranks ---*- C++ -*-===//
//
// What 2-D, 2.5-D and 3-D tensor parallelism (colo-tensor-parallel-2d,
// colo-tensor-parallel-3d) share: a walk over @forward before
// differentiation that gives every activation a layout, its samples split
// over some mesh axes and its features over another, and makes each op
// compute the rank's block. The passes differ in their layouts (one for a
// 2-D grid; two, alternating at each product, for a 3-D cube) and in how a
// product of split features with a weight is computed (`product`: SUMMA's
// broadcasts, or the cube's all-gathers and reduce-scatter).
//
// What keeps the value's layout: per-feature weights (biases, norm scales,
// embedding and position tables) hold the layout's block of their features,
// their gradients summed over its sample axes (colo.all_reduce_grad);
// layer and RMS norms sum their statistics over its feature axis; attention
// is local (the rank's samples and heads); a product of two feature-split
// operands (an LM head on the tied embedding table) is summed over the
// feature axis (the logits reduce-scattered along the classes); a convolution with trainable
// filters (a ViT's patch embedding) computes the rank's output channels, and a weight broadcast to
// the batch (its class token) the rank's features of its samples; the
// function's inputs are cut to the first layout's samples and its results
// gathered whole, but for the first (the logits), which the loss reads as
// the rank's block (buildSplitCrossEntropy).
//
//===----------------------------------------------------------------------===//

#ifndef COLO_PASSES_PARALLEL_TENSORGRID_H
#define COLO_PASSES_PARALLEL_TENSORGRID_H

#include "Parallel/Mesh.h"
#include "Parallel/Weight.h"
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/SplitPropagation.h"

#include "llvm/ADT/DenseSet.h"

namespace colo {

/// How activations of one layout are split: their features over
/// `features`, their samples over `batchAxes` (the first slowest).
struct GridLayout {
  GridLayout(MeshAxis features, llvm::StringRef featuresName,
             llvm::ArrayRef<mlir::shard::GridAxis> batchAxes, int64_t batchParts)
      : features(features), featuresName(featuresName), batchAxes(batchAxes),
        batchParts(batchParts), batchSums(features.grid, batchAxes), featureSums(features) {}
  MeshAxis features;
  llvm::StringRef featuresName;
  llvm::SmallVector<mlir::shard::GridAxis, 2> batchAxes;
  int64_t batchParts;
  /// Gradients summed over the sample axes (what every sample block reads
  /// whole), and over the feature axis.
  GradientSums batchSums, featureSums;
};

/// Features split over a layout's feature axis: dimension `dim`, viewed as
/// `groups` equal groups of which every rank holds its block of each (a
/// fused q|k|v).
struct FeatureSplit {
  int64_t dim;
  int64_t groups = 1;
  unsigned layout = 0;
};

class TensorGrid {
public:
  /// `batchPartsName` names a layout's sample parts in errors where they
  /// are not q ("q * depth"), `splitSamples` what splits them ("the grid's
  /// rows").
  TensorGrid(llvm::StringRef pass, mlir::func::FuncOp func, int64_t q,
             llvm::SmallVector<GridLayout, 2> layouts, llvm::StringRef batchPartsName,
             llvm::StringRef splitSamples,
             const llvm::DenseMap<mlir::StringAttr, int64_t> &symbolUses)
      : pass(pass), func(func), q(q), layouts(std::move(layouts)), batchPartsName(batchPartsName),
        splitSamples(splitSamples), symbolUses(symbolUses) {}
  virtual ~TensorGrid() = default;

  mlir::LogicalResult run();

  int64_t numProducts = 0, numNorms = 0;
  /// How many values have their gradients summed.
  virtual int64_t summed() const;

protected:
  /// x @ w with x's features (its last dimension, contracted) split in
  /// `layout` and w a weight read once; `batch`: whether x's samples are.
  virtual mlir::LogicalResult product(MatmulOp op, Weight w, unsigned layout, bool batch) = 0;

  std::optional<unsigned> batchOf(mlir::Value v) const;
  std::optional<FeatureSplit> featuresOf(mlir::Value v) const;
  /// The whole type of `v` (its type before it was made local).
  mlir::RankedTensorType wholeType(mlir::Value v) const;
  /// Records `v`'s layout (its samples split in layout `batch`, its
  /// features as `features` says) and gives it its local type, checked
  /// against the op's type inference where `check`.
  mlir::LogicalResult setLayout(mlir::Value v, std::optional<unsigned> batch,
                                std::optional<FeatureSplit> features, bool check = true);
  /// Records the layout of a value created whole-typed as `like` says.
  void copyLayout(mlir::Value v, mlir::Value like, std::optional<unsigned> batch,
                  std::optional<FeatureSplit> features);

  /// Shards `global` (every load of it) as `axes` say per dimension (the
  /// last split dimension holds `groups`); its loads take the block's type
  /// and `features`.
  mlir::LogicalResult shardGlobal(mlir::Operation *user, GlobalOp global,
                                  llvm::ArrayRef<llvm::SmallVector<llvm::StringRef, 2>> axes,
                                  int64_t groups, std::optional<FeatureSplit> features);
  /// Shards the weight [in, out] that `op` alone reads as `in` and `out`
  /// say (read transposed from [out, in]); the groups of `op`'s output
  /// features (a fused q|k|v's).
  mlir::FailureOr<int64_t> shardProductWeight(MatmulOp op, Weight w,
                                              llvm::SmallVector<llvm::StringRef, 2> in,
                                              llvm::SmallVector<llvm::StringRef, 2> out);
  /// Erases `op` and what the walk recorded of its results: a value created
  /// later may reuse their storage, and with it their keys.
  void erase(mlir::Operation *op);
  /// A transpose [1, 0] of a sharded load takes the transposed block.
  mlir::LogicalResult transposeLayout(TransposeOp t);

  /// `parts` (q, or the layout's sample parts) does not divide `what`.
  mlir::LogicalResult error(mlir::Operation *op, const llvm::Twine &what, int64_t parts = 0);
  mlir::LogicalResult unsupported(mlir::Operation *op, const llvm::Twine &why);
  static std::string typeString(mlir::Type t);

  template <typename OpTy, typename... Args> mlir::Value make(mlir::OpBuilder &b, Args &&...args) {
    auto op = OpTy::create(b, std::forward<Args>(args)...);
    created.insert(op);
    return op->getResult(0);
  }
  /// The mesh's name, for the collectives.
  llvm::StringRef gridName() { return layouts.front().features.grid.getSymName(); }

  llvm::StringRef pass;
  mlir::func::FuncOp func;
  int64_t q;
  llvm::SmallVector<GridLayout, 2> layouts;
  llvm::StringRef batchPartsName, splitSamples;
  const llvm::DenseMap<mlir::StringAttr, int64_t> &symbolUses;

private:
  mlir::LogicalResult cutInputs();
  mlir::LogicalResult gatherResults(mlir::func::ReturnOp ret);
  llvm::SmallVector<GlobalLoadOp> loadsOf(GlobalOp global);
  mlir::LogicalResult shardAlong(mlir::Operation *user, Weight w, int64_t dim, int64_t groups,
                                 unsigned layout);

  mlir::LogicalResult visit(mlir::Operation *op);
  mlir::LogicalResult shardTable(mlir::Operation *op);
  mlir::LogicalResult shardFilters(Conv2dOp op);
  mlir::LogicalResult localBroadcast(mlir::Operation *user, BroadcastToOp op, int64_t dim,
                                     int64_t groups, unsigned layout, bool batch);
  mlir::LogicalResult visitElementwise(mlir::Operation *op);
  void sumKeepingBatch(GradientSums &sums, llvm::ArrayRef<mlir::OpOperand *> uses);
  std::optional<DimMap> attentionMap(AttentionOp op);
  mlir::FailureOr<int64_t> sliceGroups(SliceOp op, FeatureSplit s);
  mlir::Value splatBlock(mlir::Value v, int64_t dim);
  mlir::Value cutBatch(mlir::Value v, unsigned layout);
  mlir::LogicalResult visitReshape(ReshapeOp op, std::optional<unsigned> batch);
  mlir::LogicalResult visitProduct(MatmulOp op);
  bool isLogits(mlir::Value v) const;
  mlir::LogicalResult scatterLogits(mlir::OpBuilder &b, MatmulOp op, unsigned batch,
                                    unsigned layout);
  mlir::LogicalResult visitNorm(mlir::Operation *op);

  llvm::DenseMap<mlir::Value, unsigned> batchSplit;
  llvm::DenseMap<mlir::Value, FeatureSplit> featureSplit;
  llvm::DenseMap<mlir::Value, mlir::RankedTensorType> whole;
  llvm::DenseMap<std::pair<mlir::Value, unsigned>, mlir::Value> batchCuts;

protected:
  llvm::DenseSet<mlir::Operation *> created;
};

/// How many ops of the module's body read each symbol.
llvm::DenseMap<mlir::StringAttr, int64_t> countSymbolUses(mlir::ModuleOp module);

} // namespace colo

#endif
