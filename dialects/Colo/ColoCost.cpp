// Cost model of single ops: FLOPs and bytes for their static shapes.
#include "colo/Dialect/Colo/ColoOps.h"

using namespace mlir;
using namespace colo;

namespace {
/// Storage bits of one element; 0 for types without a defined size.
int64_t elementBits(Type type) {
  if (auto complex = dyn_cast<ComplexType>(type))
    return 2 * elementBits(complex.getElementType());
  if (type.isIndex())
    return IndexType::kInternalStorageBitWidth;
  return type.isIntOrFloat() ? type.getIntOrFloatBitWidth() : 0;
}
int64_t elementsOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getNumElements();
}
} // namespace

int64_t colo::detail::typeBytes(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return 0;
  return (t.getNumElements() * elementBits(t.getElementType()) + 7) / 8;
}

int64_t colo::detail::operandBytes(Operation *op) {
  int64_t total = 0;
  for (Type t : op->getOperandTypes())
    total += typeBytes(t);
  return total;
}

int64_t colo::detail::resultBytes(Operation *op) {
  int64_t total = 0;
  for (Type t : op->getResultTypes())
    total += typeBytes(t);
  return total;
}

int64_t colo::detail::resultElements(Operation *op) {
  int64_t total = 0;
  for (Value v : op->getResults())
    total += elementsOf(v);
  return total;
}

int64_t MatmulOp::getFlops() {
  int64_t k = cast<RankedTensorType>(getLhs().getType()).getShape().back();
  return 2 * elementsOf(getResult()) * k;
}
CostClass MatmulOp::getCostClass() { return CostClass::Matmul; }

int64_t Conv2dOp::getFlops() {
  auto w = cast<RankedTensorType>(getFilter().getType());
  int64_t macsPerOutput = w.getDimSize(1) * w.getDimSize(2) * w.getDimSize(3);
  return 2 * elementsOf(getResult()) * macsPerOutput +
         (getBias() ? elementsOf(getResult()) : 0);
}
CostClass Conv2dOp::getCostClass() { return CostClass::Matmul; }

int64_t AttentionOp::getFlops() {
  auto q = cast<RankedTensorType>(getQuery().getType());
  auto k = cast<RankedTensorType>(getKey().getType());
  auto v = cast<RankedTensorType>(getValue().getType());
  int64_t scores = q.getDimSize(0) * q.getDimSize(1) * q.getDimSize(2) * k.getDimSize(2);
  // q k^T, then p v; the softmax and scaling are ~5 FLOPs per score, dropout
  // (a draw and a select-and-scale) 2 more.
  int64_t perScore = 5 + (getDropout().isZero() ? 0 : DropoutOp::kFlopsPerElement);
  return 2 * scores * q.getDimSize(3) + 2 * scores * v.getDimSize(3) +
         perScore * scores;
}
CostClass AttentionOp::getCostClass() { return CostClass::Matmul; }

template <typename PoolOp>
static int64_t poolFlops(PoolOp op) {
  ArrayRef<int64_t> k = op.getKernel();
  return elementsOf(op.getResult()) * k[0] * k[1];
}
int64_t MaxPool2dOp::getFlops() { return poolFlops(*this); }
int64_t AvgPool2dOp::getFlops() { return poolFlops(*this); }

// A reshape is a view: nothing moves.
int64_t ReshapeOp::getBytesRead() { return 0; }
int64_t ReshapeOp::getBytesWritten() { return 0; }

// A lookup reads the ids and the rows it returns, not the whole table.
int64_t EmbeddingOp::getBytesRead() {
  return detail::typeBytes(getIds().getType()) + detail::typeBytes(getType());
}

// Log-softmax over every logit (~5 FLOPs each), then one pick-and-add per
// position.
static int64_t crossEntropyFlops(Value logits, Value labels) {
  return LogSoftmaxOp::kFlopsPerElement * elementsOf(logits) + elementsOf(labels);
}
int64_t CrossEntropyOp::getFlops() { return crossEntropyFlops(getLogits(), getLabels()); }
int64_t CrossEntropyRowsOp::getFlops() { return crossEntropyFlops(getLogits(), getLabels()); }

// A subtract, a square and an add per element.
int64_t MseLossOp::getFlops() { return 3 * elementsOf(getPred()); }
