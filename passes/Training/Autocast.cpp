// colo-autocast: mixed precision as torch.autocast runs it. Matrix products
// and attention read 16-bit copies of their float operands and give 16-bit
// results, which their users read back as float: the GEMMs, and what autodiff
// saves for them, are 16-bit, while norms, softmax, losses and the optimizer
// stay float and the parameters remain float master weights (their gradients
// come back through the converts' gradients as float).
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace colo {
#define GEN_PASS_DEF_COLOAUTOCAST
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Folds a convert back to the type a value was converted from.
Value convert(OpBuilder &b, Location loc, Value v, Type element) {
  return b.createOrFold<ConvertOp>(loc, tensorType(v).clone(element), v);
}

/// `v` as `low`, converted once however many products read it. A transposed
/// operand is converted before the transpose, so that the GEMM still absorbs
/// the transpose.
Value narrow(OpBuilder &b, Location loc, Value v, Type low, DenseMap<Value, Value> &narrowed) {
  if (!tensorType(v).getElementType().isF32())
    return v;
  Value &slot = narrowed[v];
  if (slot)
    return slot;
  if (auto t = v.getDefiningOp<TransposeOp>(); t && t->hasOneUse()) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(t);
    Value input = convert(b, t.getLoc(), t.getInput(), low);
    return slot = TransposeOp::create(b, t.getLoc(), input, t.getPermutation());
  }
  return slot = convert(b, loc, v, low);
}

struct ColoAutocast : colo::impl::ColoAutocastBase<ColoAutocast> {
  using ColoAutocastBase::ColoAutocastBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto f = module.lookupSymbol<func::FuncOp>(func);
    if (!f || f.isExternal()) {
      module.emitError() << "colo-autocast: no function @" << func;
      return signalPassFailure();
    }
    Builder types(&getContext());
    Type low;
    switch (precision) {
    case Precision::Bf16:
      low = types.getBF16Type();
      break;
    case Precision::Fp16:
      low = types.getF16Type();
      break;
    case Precision::Fp32:
      module.emitError("colo-autocast: precision fp32 has no 16-bit type to cast to");
      return signalPassFailure();
    }

    SmallVector<Operation *> casts;
    f.walk([&](Operation *op) {
      if (isa<MatmulOp, AttentionOp>(op) &&
          tensorType(op->getResult(0)).getElementType().isF32())
        casts.push_back(op);
    });
    OpBuilder b(&getContext());
    DenseMap<Value, Value> narrowed;
    for (Operation *op : casts) {
      // Attention's additive mask (operand 3) keeps its type: it is added
      // in float.
      unsigned count = isa<MatmulOp>(op) ? 2 : 3;
      b.setInsertionPoint(op);
      SmallVector<Value> operands;
      for (unsigned i = 0; i < count; ++i)
        operands.push_back(narrow(b, op->getLoc(), op->getOperand(i), low, narrowed));
      b.setInsertionPointAfter(op);
      Operation *lowOp = b.clone(*op);
      for (auto [i, v] : llvm::enumerate(operands))
        lowOp->setOperand(i, v);
      Value result = op->getResult(0);
      lowOp->getResult(0).setType(tensorType(result).clone(low));
      result.replaceAllUsesWith(
          convert(b, op->getLoc(), lowOp->getResult(0), b.getF32Type()));
      op->erase();
    }
  }
};
} // namespace
