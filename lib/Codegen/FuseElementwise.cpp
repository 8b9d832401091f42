//===- FuseElementwise.cpp - linalg elementwise fusion for CPU kernels ----===//
//
// Upstream's linalg elementwise fusion, with one more rule: a producer whose
// body is a few additions, multiplications, comparisons and casts is fused
// into each of its users, not only into a single one. Recomputing it costs a
// few vector instructions per element; keeping it costs a write and a read
// of a whole tensor per user (the scaled and masked scores of attention,
// read by softmax's max and exponential passes, took a third of that
// kernel's time). Producers with transcendental functions, divisions or
// many operations are still fused only into a single user.
//
//===----------------------------------------------------------------------===//
#include "FuseElementwise.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace colo {
namespace {

/// The most users a cheap producer is recomputed for, and the most
/// operations its body may have.
constexpr unsigned kMaxUsers = 4;
constexpr unsigned kMaxOps = 6;

bool isCheapArith(Operation &op) {
  return isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::NegFOp, arith::AddIOp,
             arith::SubIOp, arith::MulIOp, arith::MaximumFOp, arith::MinimumFOp,
             arith::CmpFOp, arith::CmpIOp, arith::SelectOp, arith::ExtFOp,
             arith::TruncFOp, arith::SIToFPOp, arith::UIToFPOp, arith::ExtUIOp,
             arith::ExtSIOp, arith::ConstantOp, linalg::YieldOp>(op);
}

/// An all-parallel generic of a few cheap operations and one result.
bool cheapToRecompute(Operation *producer) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(producer);
  if (!generic || generic.getNumResults() != 1 ||
      generic.getNumParallelLoops() != generic.getNumLoops())
    return false;
  Block &body = generic.getRegion().front();
  return body.getOperations().size() <= kMaxOps + 1 &&
         llvm::all_of(body, [](Operation &op) { return isCheapArith(op); });
}

/// Upstream's rule: a producer of a single user.
bool singleUser(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  return producer && producer->hasOneUse();
}

bool shouldFuse(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  return singleUser(fused) ||
         (cheapToRecompute(producer) && llvm::range_size(producer->getUses()) <= kMaxUsers);
}

struct FuseElementwisePass : PassWrapper<FuseElementwisePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FuseElementwisePass)
  StringRef getArgument() const final { return "colo-fuse-elementwise"; }
  StringRef getDescription() const final {
    return "Fuses elementwise linalg generics, recomputing cheap ones for each user";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<affine::AffineDialect, linalg::LinalgDialect, tensor::TensorDialect>();
  }
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    // What upstream's -linalg-fuse-elementwise-ops adds; only the fusion of
    // generics into generics takes the wider rule.
    linalg::populateElementwiseOpsFusionPatterns(patterns, shouldFuse);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, singleUser);
    tensor::populateBubbleUpExpandShapePatterns(patterns);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, ctx);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    ctx->getLoadedDialect<linalg::LinalgDialect>()->getCanonicalizationPatterns(patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, singleUser);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     GreedyRewriteConfig().setUseTopDownTraversal())))
      signalPassFailure();
  }
};

} // namespace

std::unique_ptr<Pass> createFuseElementwisePass() {
  return std::make_unique<FuseElementwisePass>();
}

} // namespace colo
