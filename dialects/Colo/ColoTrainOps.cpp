// Verifiers and costs of the training-only ops: each backward op checks that
// its operands are what the forward op it differentiates would have had.
#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace colo;
using colo::detail::windowOutput;

namespace {
RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

int64_t elementsOf(Value v) { return tensorType(v).getNumElements(); }

/// The shape of a window op's result for `input` (NCHW) with `channels` output
/// channels; empty if the attributes are malformed.
SmallVector<int64_t> windowResultShape(ArrayRef<int64_t> input, int64_t channels,
                                       ArrayRef<int64_t> kernel,
                                       ArrayRef<int64_t> strides,
                                       ArrayRef<int64_t> padding,
                                       ArrayRef<int64_t> dilations) {
  if (input.size() != 4 || kernel.size() != 2 || strides.size() != 2 ||
      padding.size() != 4 || dilations.size() != 2 ||
      llvm::any_of(strides, [](int64_t s) { return s < 1; }) ||
      llvm::any_of(dilations, [](int64_t s) { return s < 1; }) ||
      llvm::any_of(padding, [](int64_t s) { return s < 0; }))
    return {};
  return {input[0], channels,
          windowOutput(input[2], padding[0], padding[2], kernel[0], strides[0],
                       dilations[0]),
          windowOutput(input[3], padding[1], padding[3], kernel[1], strides[1],
                       dilations[1])};
}

LogicalResult verifyWindowGrad(Operation *op, RankedTensorType input,
                               RankedTensorType filterOrNull, ArrayRef<int64_t> kernel,
                               int64_t channels, ArrayRef<int64_t> strides,
                               ArrayRef<int64_t> padding, ArrayRef<int64_t> dilations,
                               int64_t groups, RankedTensorType grad) {
  if (filterOrNull) {
    if (filterOrNull.getRank() != 4 || groups < 1 ||
        input.getRank() != 4 || input.getDimSize(1) != filterOrNull.getDimSize(1) * groups ||
        filterOrNull.getDimSize(0) % groups != 0)
      return op->emitOpError() << "input " << input << " and filter " << filterOrNull
                               << " do not fit a convolution with " << groups
                               << " groups";
  }
  SmallVector<int64_t> expected = windowResultShape(
      input.getShape(), channels, kernel, strides, padding, dilations);
  if (expected.empty())
    return op->emitOpError() << "malformed window attributes or input " << input;
  if (ArrayRef<int64_t>(expected) != grad.getShape() ||
      input.getElementType() != grad.getElementType())
    return op->emitOpError() << "gradient " << grad
                             << " does not match the forward result shape ["
                             << llvm::make_range(expected.begin(), expected.end())
                             << "] of input " << input;
  return success();
}
} // namespace

//===----------------------------------------------------------------------===//
// Model state
//===----------------------------------------------------------------------===//

LogicalResult GlobalStoreOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto global = symbolTable.lookupNearestSymbolFrom<GlobalOp>(*this, getGlobalAttr());
  if (!global)
    return emitOpError() << "'" << getGlobal() << "' does not name a colo.global";
  if (localType(global) != getValue().getType())
    return emitOpError() << "value type " << getValue().getType()
                         << " does not match global type " << localType(global);
  return success();
}

OpFoldResult GradientOp::fold(FoldAdaptor) { return getInput(); }

LogicalResult GradientOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto global = symbolTable.lookupNearestSymbolFrom<GlobalOp>(*this, getParamAttr());
  if (!global || !global.getTrainable())
    return emitOpError() << "'" << getParam() << "' does not name a trainable colo.global";
  if (localType(global) != getType())
    return emitOpError() << "gradient type " << getType()
                         << " does not match parameter type " << localType(global);
  return success();
}

//===----------------------------------------------------------------------===//
// Tensor parallelism
//===----------------------------------------------------------------------===//

// The dialect does not depend on shard, so the grid is checked by name and
// its `shape` attribute.
LogicalResult AllReduceGradOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  Operation *grid = symbolTable.lookupNearestSymbolFrom(*this, getGridAttr());
  auto shape = grid ? grid->getAttrOfType<DenseI64ArrayAttr>("shape") : nullptr;
  if (!grid || grid->getName().getStringRef() != "shard.grid" || !shape)
    return emitOpError() << "'" << getGrid() << "' does not name a shard.grid";
  SmallVector<int16_t> seen;
  for (int16_t axis : getGridAxes()) {
    if (axis < 0 || axis >= static_cast<int64_t>(shape.size()))
      return emitOpError() << "grid axis " << axis << " out of range for a grid of rank "
                           << shape.size();
    if (llvm::is_contained(seen, axis))
      return emitOpError() << "grid axis " << axis << " is repeated";
    seen.push_back(axis);
  }
  return success();
}

namespace {
/// Replaces a marker op that only carries a gradient rule by its input, once
/// differentiation is done: in the functions colo-build-train-step made,
/// not in @forward, the model it differentiates (the import pipeline
/// canonicalizes it, and an imported detach must survive). Not a folder: the
/// greedy driver that colo-build-train-step runs before differentiating
/// (attention decomposition) folds, and would drop the rule with it.
template <typename MarkerOp> struct DropMarker : OpRewritePattern<MarkerOp> {
  using OpRewritePattern<MarkerOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(MarkerOp op, PatternRewriter &rewriter) const override {
    auto f = op->template getParentOfType<SymbolOpInterface>();
    if (f && f.getName() == "forward")
      return rewriter.notifyMatchFailure(op, "the model keeps its gradient rules");
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};
} // namespace

void AllReduceGradOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                  MLIRContext *context) {
  results.add<DropMarker<AllReduceGradOp>>(context);
}

void StopGradientOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                 MLIRContext *context) {
  results.add<DropMarker<StopGradientOp>>(context);
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

LogicalResult ScatterAddOp::verify() {
  RankedTensorType result = getType(), updates = tensorType(getUpdates());
  int64_t rank = result.getRank(), axis = getAxis();
  if (rank == 0 || axis < -rank || axis >= rank)
    return emitOpError() << "axis " << axis << " out of range for rank " << rank;
  if (axis < 0)
    axis += rank;
  SmallVector<int64_t> expected(result.getShape().take_front(axis));
  llvm::append_range(expected, tensorType(getIndices()).getShape());
  llvm::append_range(expected, result.getShape().drop_front(axis + 1));
  if (ArrayRef<int64_t>(expected) != updates.getShape() ||
      updates.getElementType() != result.getElementType())
    return emitOpError() << "updates " << updates << " do not match gathering "
                         << tensorType(getIndices()) << " from " << result;
  return success();
}

LogicalResult SliceBackwardOp::verify() {
  RankedTensorType result = getType(), grad = tensorType(getGrad());
  ArrayRef<int64_t> start = getStart(), limit = getLimit(), stride = getStride();
  int64_t rank = result.getRank();
  if (static_cast<int64_t>(start.size()) != rank ||
      static_cast<int64_t>(limit.size()) != rank ||
      static_cast<int64_t>(stride.size()) != rank || grad.getRank() != rank)
    return emitOpError() << "expected rank " << rank
                         << " starts, limits, strides and gradient";
  for (int64_t i = 0; i < rank; ++i) {
    if (stride[i] < 1 || start[i] < 0 || start[i] > limit[i] ||
        limit[i] > result.getDimSize(i))
      return emitOpError() << "dimension " << i << ": slice [" << start[i] << ", "
                           << limit[i] << ") step " << stride[i]
                           << " out of bounds for size " << result.getDimSize(i);
    if (grad.getDimSize(i) != (limit[i] - start[i] + stride[i] - 1) / stride[i])
      return emitOpError() << "gradient " << grad << " does not match the slice of "
                           << result << " in dimension " << i;
  }
  if (grad.getElementType() != result.getElementType())
    return emitOpError() << "element type mismatch: " << grad << " vs " << result;
  return success();
}

LogicalResult Conv2dBackwardInputOp::verify() {
  RankedTensorType w = tensorType(getFilter());
  if (w.getRank() != 4)
    return emitOpError() << "filter must have rank 4, got " << w;
  return verifyWindowGrad(*this, getType(), w, w.getShape().take_back(2),
                          w.getDimSize(0), getStrides(), getPadding(),
                          getDilations(), getGroups(), tensorType(getGrad()));
}

LogicalResult Conv2dBackwardFilterOp::verify() {
  RankedTensorType w = getType();
  if (w.getRank() != 4)
    return emitOpError() << "filter must have rank 4, got " << w;
  return verifyWindowGrad(*this, tensorType(getInput()), w,
                          w.getShape().take_back(2), w.getDimSize(0), getStrides(),
                          getPadding(), getDilations(), getGroups(),
                          tensorType(getGrad()));
}

LogicalResult MaxPool2dBackwardOp::verify() {
  RankedTensorType in = tensorType(getInput());
  return verifyWindowGrad(*this, in, {}, getKernel(),
                          in.getRank() == 4 ? in.getDimSize(1) : 0, getStrides(),
                          getPadding(), {1, 1}, 1, tensorType(getGrad()));
}

LogicalResult AvgPool2dBackwardOp::verify() {
  RankedTensorType in = getType();
  return verifyWindowGrad(*this, in, {}, getKernel(),
                          in.getRank() == 4 ? in.getDimSize(1) : 0, getStrides(),
                          getPadding(), {1, 1}, 1, tensorType(getGrad()));
}

LogicalResult BatchNormBackwardOp::verify() {
  RankedTensorType in = tensorType(getInput()), scale = tensorType(getScale());
  if (in.getRank() < 2 || scale.getRank() != 1 ||
      scale.getDimSize(0) != in.getDimSize(1))
    return emitOpError() << "scale " << scale << " does not match the channels of "
                         << in;
  return success();
}

int64_t Conv2dBackwardInputOp::getFlops() {
  auto w = tensorType(getFilter());
  return 2 * elementsOf(getGrad()) * w.getDimSize(1) * w.getDimSize(2) *
         w.getDimSize(3);
}
CostClass Conv2dBackwardInputOp::getCostClass() { return CostClass::Matmul; }

int64_t Conv2dBackwardFilterOp::getFlops() {
  auto w = getType();
  return 2 * elementsOf(getGrad()) * w.getDimSize(1) * w.getDimSize(2) *
         w.getDimSize(3);
}
CostClass Conv2dBackwardFilterOp::getCostClass() { return CostClass::Matmul; }

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

namespace {
LogicalResult verifyUnitInterval(Operation *op, StringRef name, double value,
                                 bool closedAbove = false) {
  if (!(value >= 0 && (closedAbove ? value <= 1 : value < 1)))
    return op->emitOpError() << name << " " << value << " outside [0, 1"
                             << (closedAbove ? "]" : ")");
  return success();
}
LogicalResult verifyNonNegative(Operation *op, StringRef name, double value) {
  if (!(value >= 0))
    return op->emitOpError() << name << " " << value << " is negative";
  return success();
}
} // namespace

LogicalResult SgdUpdateOp::verify() {
  return success(succeeded(verifyUnitInterval(*this, "momentum",
                                              getMomentum().convertToDouble())) &&
                 succeeded(verifyUnitInterval(*this, "dampening",
                                              getDampening().convertToDouble(), true)) &&
                 succeeded(verifyNonNegative(*this, "weight_decay",
                                             getWeightDecay().convertToDouble())));
}

/// Adam and LAMB share their hyperparameters' ranges.
template <typename OpTy>
LogicalResult verifyAdamLike(OpTy op) {
  return success(
      succeeded(verifyUnitInterval(op, "beta1", op.getBeta1().convertToDouble())) &&
      succeeded(verifyUnitInterval(op, "beta2", op.getBeta2().convertToDouble())) &&
      succeeded(verifyNonNegative(op, "epsilon", op.getEpsilon().convertToDouble())) &&
      succeeded(verifyNonNegative(op, "weight_decay",
                                  op.getWeightDecay().convertToDouble())));
}

LogicalResult AdamUpdateOp::verify() { return verifyAdamLike(*this); }

LogicalResult LambUpdateOp::verify() { return verifyAdamLike(*this); }

LogicalResult LarsUpdateOp::verify() {
  return success(
      succeeded(verifyUnitInterval(*this, "momentum", getMomentum().convertToDouble())) &&
      succeeded(verifyNonNegative(*this, "weight_decay",
                                  getWeightDecay().convertToDouble())) &&
      succeeded(verifyNonNegative(*this, "trust_coefficient",
                                  getTrustCoefficient().convertToDouble())) &&
      succeeded(verifyNonNegative(*this, "epsilon", getEpsilon().convertToDouble())));
}

int64_t TransferOp::getLinkBytes() { return colo::detail::resultBytes(*this); }
int64_t TransferOp::getFlops() { return 0; }
