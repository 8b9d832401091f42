//===- MapGenericsToGpu.cpp - colo-map-generics-to-gpu --------------------===//
//
// The CUDA kernels' loop nests: every linalg.generic on buffers (and every
// copy and named linalg op, generalized first) becomes
//
//   scf.forall (%block) in (ceil(N / T)) {
//     scf.forall (%thread) in (T) {
//       %i = %block * T + %thread        // one point of the parallel space
//       scf.if %i < N {                  // where T does not divide N
//         the point's indices (affine.delinearize_index over the parallel
//         dimensions), then the generic's body at that point, its reduction
//         dimensions as sequential loops in their order
//       }
//     } {mapping = [#gpu.thread<x>]}
//   } {mapping = [#gpu.block<x>]}
//
// with N the product of the parallel dimensions (after
// colo-collapse-parallel-loops an elementwise kernel's are one) and T the
// block size. Each thread owns its point's output elements, so the body
// reads and writes them as the generic's semantics say (load the inputs and
// the accumulator, compute, store), and a reduction runs in the order the
// CPU's unsplit loops run it. The nest is the input of the GPU lowering
// (mapped foralls -> gpu.launch) and, with scf-forall-to-for, also runs
// sequentially on the CPU, where tests compare it with the interpreter.
//
//===----------------------------------------------------------------------===//

#include "MapGenericsToGpu.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace {

/// Static loop ranges, outputs indexed by every parallel dimension (one
/// thread per output element: no two threads write the same one).
LogicalResult checkMappable(linalg::GenericOp g) {
  if (!g.hasPureBufferSemantics())
    return g.emitError("colo-map-generics-to-gpu runs on buffers (after bufferization)");
  if (llvm::any_of(g.getStaticLoopRanges(), ShapedType::isDynamic))
    return g.emitError("colo-map-generics-to-gpu needs static loop ranges");
  for (OpOperand &out : g.getDpsInitsMutable()) {
    AffineMap map = g.getMatchingIndexingMap(&out);
    for (unsigned d = 0; d < g.getNumLoops(); ++d)
      if (g.getIteratorTypesArray()[d] == utils::IteratorType::parallel &&
          !map.isFunctionOfDim(d))
        return g.emitError("an output of this generic does not depend on parallel loop ")
               << d << ": threads would write the same element";
  }
  return success();
}

/// The indices `map` gives at loop indices `loops`.
SmallVector<Value> indicesAt(OpBuilder &b, Location loc, AffineMap map, ArrayRef<Value> loops) {
  SmallVector<Value> indices;
  for (AffineExpr e : map.getResults())
    indices.push_back(getValueOrCreateConstantIndexOp(
        b, loc,
        affine::makeComposedFoldedAffineApply(b, loc, AffineMap::get(map.getNumDims(), 0, e),
                                              llvm::to_vector_of<OpFoldResult>(loops))));
  return indices;
}

/// The generic's body at loop indices `loops`: loads, the payload, stores.
void emitPoint(OpBuilder &b, Location loc, linalg::GenericOp g, ArrayRef<Value> loops) {
  IRMapping map;
  Block &body = g.getRegion().front();
  for (OpOperand &operand : g->getOpOperands()) {
    BlockArgument arg = body.getArgument(operand.getOperandNumber());
    if (!isa<MemRefType>(operand.get().getType())) { // a scalar operand
      map.map(arg, operand.get());
      continue;
    }
    if (arg.use_empty())
      continue;
    map.map(arg, memref::LoadOp::create(b, loc, operand.get(),
                                        indicesAt(b, loc, g.getMatchingIndexingMap(&operand),
                                                  loops)));
  }
  for (Operation &op : body.without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(op)) {
      map.map(index.getResult(), loops[index.getDim()]);
      continue;
    }
    b.clone(op, map);
  }
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  for (auto [value, out] : llvm::zip(yield.getValues(), g.getDpsInitsMutable()))
    memref::StoreOp::create(
        b, loc, map.lookupOrDefault(value), out.get(),
        indicesAt(b, loc, g.getMatchingIndexingMap(&out), loops));
}

/// Replaces `g` by its block x thread forall nest.
void mapGeneric(RewriterBase &rewriter, linalg::GenericOp g, int64_t blockSize) {
  Location loc = g.getLoc();
  SmallVector<int64_t> ranges = g.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = g.getIteratorTypesArray();
  SmallVector<int64_t> parallel, reduction;
  for (auto [d, it] : llvm::enumerate(iterators))
    (it == utils::IteratorType::parallel ? parallel : reduction).push_back(int64_t(d));
  int64_t points = 1;
  for (int64_t d : parallel)
    points *= ranges[d];
  int64_t threads = std::min(blockSize, points);
  int64_t blocks = llvm::divideCeil(points, threads);

  rewriter.setInsertionPoint(g);
  MLIRContext *ctx = g.getContext();
  auto blockForall = scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(blocks)}, ValueRange{},
      rewriter.getArrayAttr({gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimX)}));
  rewriter.setInsertionPointToStart(blockForall.getBody());
  auto threadForall = scf::ForallOp::create(
      rewriter, loc, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(threads)}, ValueRange{},
      rewriter.getArrayAttr({gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimX)}));
  rewriter.setInsertionPointToStart(threadForall.getBody());

  AffineExpr b, t;
  bindDims(ctx, b, t);
  Value point = affine::AffineApplyOp::create(
      rewriter, loc, AffineMap::get(2, 0, b * threads + t),
      ValueRange{blockForall.getInductionVar(0), threadForall.getInductionVar(0)});
  if (points % threads != 0) {
    Value inside = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::ult, point,
        arith::ConstantIndexOp::create(rewriter, loc, points));
    auto guard = scf::IfOp::create(rewriter, loc, inside, /*withElseRegion=*/false);
    rewriter.setInsertionPointToStart(guard.thenBlock());
  }
  SmallVector<Value> loops(ranges.size());
  if (parallel.size() == 1) {
    loops[parallel.front()] = point;
  } else if (!parallel.empty()) {
    SmallVector<int64_t> basis;
    for (int64_t d : parallel)
      basis.push_back(ranges[d]);
    auto split = affine::AffineDelinearizeIndexOp::create(rewriter, loc, point, basis,
                                                          /*hasOuterBound=*/true);
    for (auto [d, index] : llvm::zip(parallel, split.getResults()))
      loops[d] = index;
  }
  // The reduction dimensions, outermost first: the CPU's order.
  for (int64_t d : reduction) {
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value end = arith::ConstantIndexOp::create(rewriter, loc, ranges[d]);
    auto loop = scf::ForOp::create(rewriter, loc, zero, end, one);
    loops[d] = loop.getInductionVar();
    rewriter.setInsertionPointToStart(loop.getBody());
  }
  emitPoint(rewriter, loc, g, loops);
  rewriter.eraseOp(g);
}

struct MapGenericsToGpuPass : PassWrapper<MapGenericsToGpuPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MapGenericsToGpuPass)
  MapGenericsToGpuPass() = default;
  MapGenericsToGpuPass(const MapGenericsToGpuPass &other) : PassWrapper(other) {}
  explicit MapGenericsToGpuPass(int64_t size) { blockSize = size; }
  StringRef getArgument() const final { return "colo-map-generics-to-gpu"; }
  StringRef getDescription() const final {
    return "Maps every linalg op and copy on buffers to a block x thread scf.forall nest";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<affine::AffineDialect, arith::ArithDialect, gpu::GPUDialect,
                    linalg::LinalgDialect, memref::MemRefDialect, scf::SCFDialect>();
  }
  Option<int64_t> blockSize{*this, "block-size",
                            llvm::cl::desc("Threads per block (at most the points)"),
                            llvm::cl::init(256)};

  void runOnOperation() override {
    if (blockSize <= 0) {
      getOperation().emitError("colo-map-generics-to-gpu: block-size must be positive");
      return signalPassFailure();
    }
    IRRewriter rewriter(&getContext());
    // Copies and named ops (linalg.copy, linalg.fill) as generics first:
    // on a GPU every element is a thread's work.
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp c) { copies.push_back(c); });
    for (memref::CopyOp c : copies) {
      rewriter.setInsertionPoint(c);
      linalg::CopyOp::create(rewriter, c.getLoc(), c.getSource(), c.getTarget());
      rewriter.eraseOp(c);
    }
    SmallVector<linalg::LinalgOp> named;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (!isa<linalg::GenericOp>(op))
        named.push_back(op);
    });
    for (linalg::LinalgOp op : named) {
      rewriter.setInsertionPoint(op);
      if (failed(linalg::generalizeNamedOp(rewriter, op))) {
        op.emitError("colo-map-generics-to-gpu cannot generalize this op");
        return signalPassFailure();
      }
    }
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp g) { generics.push_back(g); });
    for (linalg::GenericOp g : generics) {
      if (failed(checkMappable(g)))
        return signalPassFailure();
      mapGeneric(rewriter, g, blockSize);
    }
  }
};

} // namespace

std::unique_ptr<Pass> colo::createMapGenericsToGpuPass(int64_t blockSize) {
  return std::make_unique<MapGenericsToGpuPass>(blockSize);
}
