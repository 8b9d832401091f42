//===- ForallToGpuLaunch.cpp - colo-forall-to-gpu-launch ------------------===//
//
// Turns each block x thread scf.forall nest (colo-map-generics-to-gpu's) into
// a gpu.launch: a grid of the outer forall's size, blocks of the inner's,
// the block and thread ids in place of the induction variables. The launch
// captures what the body reads from above (buffers, constants);
// gpu-kernel-outlining then makes it a gpu.func and a gpu.launch_func.
// Other shapes of forall are refused: the nest is the contract between the
// two passes.
//
//===----------------------------------------------------------------------===//

#include "ForallToGpuLaunch.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace {

/// The forall's single static size if it is one-dimensional, has no
/// results, and is mapped to `mapping`.
std::optional<int64_t> mappedSize(scf::ForallOp forall, Attribute mapping) {
  std::optional<ArrayAttr> attr = forall.getMapping();
  if (!attr || attr->size() != 1 || (*attr)[0] != mapping || forall.getRank() != 1 ||
      forall.getNumResults() != 0)
    return std::nullopt;
  int64_t ub = forall.getStaticUpperBound()[0];
  if (forall.getStaticLowerBound()[0] != 0 || forall.getStaticStep()[0] != 1 ||
      ShapedType::isDynamic(ub))
    return std::nullopt;
  return ub;
}

LogicalResult toLaunch(RewriterBase &rewriter, scf::ForallOp blocks) {
  MLIRContext *ctx = blocks.getContext();
  auto blockX = gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimX);
  auto threadX = gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimX);
  std::optional<int64_t> grid = mappedSize(blocks, blockX);
  Block *body = blocks.getBody();
  auto threads = dyn_cast<scf::ForallOp>(body->front());
  std::optional<int64_t> block = threads ? mappedSize(threads, threadX) : std::nullopt;
  // The block forall holds the thread forall and its terminator, no more.
  if (!grid || !block || body->getOperations().size() != 2)
    return blocks.emitError("colo-forall-to-gpu-launch takes a one-dimensional forall mapped to "
                            "#gpu.block<x> holding only one mapped to #gpu.thread<x>");
  Location loc = blocks.getLoc();
  rewriter.setInsertionPoint(blocks);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  auto launch = gpu::LaunchOp::create(
      rewriter, loc, arith::ConstantIndexOp::create(rewriter, loc, *grid), one, one,
      arith::ConstantIndexOp::create(rewriter, loc, *block), one, one);
  rewriter.setInsertionPointToEnd(&launch.getBody().front());
  IRMapping map;
  map.map(blocks.getInductionVar(0), launch.getBlockIds().x);
  map.map(threads.getInductionVar(0), launch.getThreadIds().x);
  for (Operation &op : threads.getBody()->without_terminator())
    rewriter.clone(op, map);
  gpu::TerminatorOp::create(rewriter, loc);
  rewriter.eraseOp(blocks);
  return success();
}

struct ForallToGpuLaunchPass : PassWrapper<ForallToGpuLaunchPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ForallToGpuLaunchPass)
  StringRef getArgument() const final { return "colo-forall-to-gpu-launch"; }
  StringRef getDescription() const final {
    return "Turns block x thread scf.forall nests into gpu.launch ops";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, gpu::GPUDialect>();
  }
  void runOnOperation() override {
    SmallVector<scf::ForallOp> outer;
    getOperation().walk([&](scf::ForallOp f) {
      if (!f->getParentOfType<scf::ForallOp>())
        outer.push_back(f);
    });
    IRRewriter rewriter(&getContext());
    for (scf::ForallOp f : outer)
      if (failed(toLaunch(rewriter, f)))
        return signalPassFailure();
  }
};

} // namespace

std::unique_ptr<Pass> colo::createForallToGpuLaunchPass() {
  return std::make_unique<ForallToGpuLaunchPass>();
}
