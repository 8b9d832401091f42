//===- CollapseParallelLoops.cpp - colo-collapse-parallel-loops -----------===//
//
// An elementwise kernel loops over its tensor's dimensions, and the loop
// vectorizer takes only the innermost. Where that loop is short (a
// convolution's 3 x 3 filter: an AdamW update of a 64x512x3x3 weight ran as
// 32768 rows of 9) it fills few vector lanes, and when the kernel updates its
// buffers in place each row's unaligned loads wait for the previous row's
// stores: 7.8 ns an element where one loop over all 294912 takes 1.3. Every
// run of dimensions that each operand reads contiguously and in order becomes
// one loop (linalg::collapseOpIterationDims). It runs on buffers, after
// bufferization, where the collapsed operands are views (on tensors the
// bufferization would copy an output collapsed in place). The element
// order, and so every result, is unchanged: only all-parallel generics are
// collapsed.
//
//===----------------------------------------------------------------------===//

#include "CollapseParallelLoops.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace {

/// The maximal runs of consecutive loop dimensions that every indexing map
/// of `g` reads contiguously and in order (or not at all).
SmallVector<ReassociationIndices> collapsibleRuns(linalg::GenericOp g) {
  SmallVector<AffineMap> maps = g.getIndexingMapsArray();
  SmallVector<ReassociationIndices> runs;
  for (int64_t d = 0, n = g.getNumLoops(); d < n; ++d) {
    if (!runs.empty()) {
      ReassociationIndices longer = runs.back();
      longer.push_back(d);
      if (linalg::areDimSequencesPreserved(maps, {longer})) {
        runs.back() = std::move(longer);
        continue;
      }
    }
    runs.push_back({d});
  }
  return runs;
}

/// All-parallel, static, on buffers of the identity layout (contiguous: the
/// collapsed views are exact), and every operand indexed by loop dimensions
/// alone (collapseOpIterationDims does not rewrite a constant index, the
/// size-1 dimension of a broadcast operand).
bool collapsible(linalg::GenericOp g) {
  auto contiguous = [](Value v) {
    auto type = dyn_cast<MemRefType>(v.getType());
    return type && type.getLayout().isIdentity();
  };
  return g.hasPureBufferSemantics() && llvm::all_of(g->getOperands(), contiguous) &&
         g.getNumLoops() >= 2 && !g.hasIndexSemantics() &&
         g.getNumParallelLoops() == g.getNumLoops() &&
         llvm::none_of(g.getStaticLoopRanges(), ShapedType::isDynamic) &&
         llvm::all_of(g.getIndexingMapsArray(),
                      [](AffineMap m) { return m.isProjectedPermutation(); });
}

struct CollapseParallelLoopsPass
    : PassWrapper<CollapseParallelLoopsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CollapseParallelLoopsPass)
  StringRef getArgument() const final { return "colo-collapse-parallel-loops"; }
  StringRef getDescription() const final {
    return "Collapses an elementwise generic's loops into as few as its operands allow";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<linalg::LinalgDialect, memref::MemRefDialect>();
  }

  void runOnOperation() override {
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp g) {
      if (collapsible(g))
        generics.push_back(g);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp g : generics) {
      SmallVector<ReassociationIndices> runs = collapsibleRuns(g);
      if (int64_t(runs.size()) == g.getNumLoops())
        continue;
      rewriter.setInsertionPoint(g);
      FailureOr<linalg::CollapseResult> collapsed =
          linalg::collapseOpIterationDims(g, runs, rewriter);
      if (succeeded(collapsed))
        rewriter.eraseOp(g); // on buffers it has no results
    }
  }
};

} // namespace

std::unique_ptr<Pass> colo::createCollapseParallelLoopsPass() {
  return std::make_unique<CollapseParallelLoopsPass>();
}
