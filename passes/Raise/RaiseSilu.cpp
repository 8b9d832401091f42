// colo-raise-silu: x * sigmoid(x) -> colo.silu.
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace colo {
#define GEN_PASS_DEF_COLORAISESILU
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
struct RaiseSiluPattern : OpRewritePattern<MulOp> {
  RaiseSiluPattern(MLIRContext *ctx, llvm::Statistic &count)
      : OpRewritePattern(ctx), count(count) {}
  LogicalResult matchAndRewrite(MulOp op, PatternRewriter &rewriter) const override {
    for (auto [x, s] : {std::pair(op.getLhs(), op.getRhs()),
                        std::pair(op.getRhs(), op.getLhs())}) {
      auto sigmoid = s.getDefiningOp<SigmoidOp>();
      if (!sigmoid || sigmoid.getInput() != x || x.getType() != op.getType())
        continue;
      rewriter.replaceOpWithNewOp<SiluOp>(op, op.getType(), x);
      ++count;
      return success();
    }
    return failure();
  }
  llvm::Statistic &count;
};

struct ColoRaiseSiluPass : colo::impl::ColoRaiseSiluBase<ColoRaiseSiluPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RaiseSiluPattern>(&getContext(), numRaised);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
