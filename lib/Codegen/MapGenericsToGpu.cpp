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
// the accumulator, compute, store), and a short reduction runs in the order
// the CPU's unsplit loops run it; a long float sum, maximum or minimum is
// shared by a block instead (mapBlockReduction). Loops lowered before this
// pass (a scatter-add's, whose rows may repeat an index) run in one thread
// of one block, in their order. The nest is the input of the GPU lowering
// (mapped foralls -> gpu.launch) and, with scf-forall-to-for, also runs
// sequentially on the CPU, where tests compare it with the interpreter.
//
//===----------------------------------------------------------------------===//

#include "MapGenericsToGpu.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
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

/// Reductions of at least this many elements per output are shared by a
/// block's threads; shorter ones run in one thread each.
constexpr int64_t kBlockReductionMin = 64;

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

/// Clones the generic's body at loop indices `loops` (its operands loaded
/// through their maps) except `skip`; returns the mapping of its values.
IRMapping computeAt(OpBuilder &b, Location loc, linalg::GenericOp g, ArrayRef<Value> loops,
                    Operation *skip = nullptr) {
  IRMapping map;
  Block &body = g.getRegion().front();
  for (OpOperand &operand : g->getOpOperands()) {
    BlockArgument arg = body.getArgument(operand.getOperandNumber());
    if (!isa<MemRefType>(operand.get().getType())) { // a scalar operand
      map.map(arg, operand.get());
      continue;
    }
    if (arg.use_empty() || (skip && arg.hasOneUse() && *arg.user_begin() == skip &&
                            g.isDpsInit(&operand)))
      continue;
    map.map(arg, memref::LoadOp::create(b, loc, operand.get(),
                                        indicesAt(b, loc, g.getMatchingIndexingMap(&operand),
                                                  loops)));
  }
  for (Operation &op : body.without_terminator()) {
    if (&op == skip)
      continue;
    if (auto index = dyn_cast<linalg::IndexOp>(op)) {
      map.map(index.getResult(), loops[index.getDim()]);
      continue;
    }
    b.clone(op, map);
  }
  return map;
}

/// The generic's body at loop indices `loops`: loads, the payload, stores.
void emitPoint(OpBuilder &b, Location loc, linalg::GenericOp g, ArrayRef<Value> loops) {
  IRMapping map = computeAt(b, loc, g, loops);
  auto yield = cast<linalg::YieldOp>(g.getRegion().front().getTerminator());
  for (auto [value, out] : llvm::zip(yield.getValues(), g.getDpsInitsMutable()))
    memref::StoreOp::create(
        b, loc, map.lookupOrDefault(value), out.get(),
        indicesAt(b, loc, g.getMatchingIndexingMap(&out), loops));
}

/// `index` split over the loop dimensions `dims` (of sizes `ranges`) into
/// `loops`.
void delinearizeInto(OpBuilder &b, Location loc, Value index, ArrayRef<int64_t> dims,
                     ArrayRef<int64_t> ranges, SmallVectorImpl<Value> &loops) {
  if (dims.size() == 1) {
    loops[dims.front()] = index;
    return;
  }
  if (dims.empty())
    return;
  SmallVector<int64_t> basis;
  for (int64_t d : dims)
    basis.push_back(ranges[d]);
  auto split = affine::AffineDelinearizeIndexOp::create(b, loc, index, basis,
                                                        /*hasOuterBound=*/true);
  for (auto [d, value] : llvm::zip(dims, split.getResults()))
    loops[d] = value;
}

/// A forall of `size` threads (or blocks) at the builder's point; the
/// builder moves into its body.
scf::ForallOp mappedForall(OpBuilder &b, Location loc, int64_t size, Attribute mapping) {
  auto forall = scf::ForallOp::create(b, loc, ArrayRef<OpFoldResult>{b.getIndexAttr(size)},
                                      ValueRange{}, b.getArrayAttr({mapping}));
  b.setInsertionPointToStart(forall.getBody());
  return forall;
}

/// The loop dimensions of `g` that are parallel and that reduce.
void splitDims(linalg::GenericOp g, SmallVectorImpl<int64_t> &parallel,
               SmallVectorImpl<int64_t> &reduction) {
  for (auto [d, it] : llvm::enumerate(g.getIteratorTypesArray()))
    (it == utils::IteratorType::parallel ? parallel : reduction).push_back(int64_t(d));
}

/// The combiner of a float sum, maximum or minimum of `g` into its one
/// output, which reads the accumulator nowhere else; null for other
/// generics.
Operation *blockReducible(linalg::GenericOp g) {
  if (g.getNumDpsInits() != 1 || g.getNumReductionLoops() == 0)
    return nullptr;
  SmallVector<Operation *> combiners;
  if (!matchReduction(g.getRegionOutputArgs(), 0, combiners) || combiners.size() != 1)
    return nullptr;
  Operation *c = combiners.front();
  auto yield = cast<linalg::YieldOp>(g.getRegion().front().getTerminator());
  if (!isa<arith::AddFOp, arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
           arith::MinNumFOp>(c) ||
      yield.getValues()[0] != c->getResult(0) || !g.getRegionOutputArgs()[0].hasOneUse())
    return nullptr;
  return c;
}

/// Replaces the reduction `g` (blockReducible: `combiner`) by one block per
/// output element: T threads (a power of two, at most the block size and
/// the reduced elements K) fold elements t, t + T, t + 2T, ... in order
/// into partials in shared memory, a tree combines the partials (T/2
/// threads add partial t + T/2 into t, then T/4, ..., each level a thread
/// forall, so a barrier apart on the GPU), and one thread combines the
/// output's initial value with the total. The order is the IR's: the same
/// on the GPU and run sequentially on the CPU.
void mapBlockReduction(RewriterBase &b, linalg::GenericOp g, Operation *combiner,
                       int64_t blockSize) {
  Location loc = g.getLoc();
  MLIRContext *ctx = g.getContext();
  SmallVector<int64_t> ranges = g.getStaticLoopRanges();
  SmallVector<int64_t> parallel, reduction;
  splitDims(g, parallel, reduction);
  int64_t rows = 1, elements = 1;
  for (int64_t d : parallel)
    rows *= ranges[d];
  for (int64_t d : reduction)
    elements *= ranges[d];
  int64_t threads = int64_t(llvm::bit_floor(uint64_t(std::min(blockSize, elements))));
  BlockArgument acc = g.getRegionOutputArgs()[0];
  Value elementValue = combiner->getOperand(0) == acc ? combiner->getOperand(1)
                                                      : combiner->getOperand(0);
  auto combine = [&](Value into, Value more) {
    IRMapping map;
    map.map(acc, into);
    map.map(elementValue, more);
    return b.clone(*combiner, map)->getResult(0);
  };
  Type elementType = combiner->getResult(0).getType();
  auto threadX = gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimX);

  b.setInsertionPoint(g);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  scf::ForallOp rowForall =
      mappedForall(b, loc, rows, gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimX));
  // Each level below goes at the end of the row's body.
  auto atRowEnd = [&] { b.setInsertionPoint(rowForall.getBody()->getTerminator()); };
  SmallVector<Value> loops(ranges.size());
  delinearizeInto(b, loc, rowForall.getInductionVar(0), parallel, ranges, loops);
  Value partials = memref::AllocOp::create(b, loc, MemRefType::get({threads}, elementType));

  // Each thread's elements, in order.
  atRowEnd();
  scf::ForallOp fold = mappedForall(b, loc, threads, threadX);
  Value t = fold.getInductionVar(0);
  auto elementAt = [&](Value k) {
    SmallVector<Value> at = loops;
    delinearizeInto(b, loc, k, reduction, ranges, at);
    return computeAt(b, loc, g, at, combiner).lookupOrDefault(elementValue);
  };
  Value first = elementAt(t);
  auto rest = scf::ForOp::create(
      b, loc, arith::AddIOp::create(b, loc, t, arith::ConstantIndexOp::create(b, loc, threads)),
      arith::ConstantIndexOp::create(b, loc, elements),
      arith::ConstantIndexOp::create(b, loc, threads), ValueRange{first});
  b.setInsertionPointToStart(rest.getBody());
  Value folded = combine(rest.getRegionIterArg(0), elementAt(rest.getInductionVar()));
  scf::YieldOp::create(b, loc, folded);
  b.setInsertionPointAfter(rest);
  memref::StoreOp::create(b, loc, rest.getResult(0), partials, ValueRange{t});

  // The tree.
  for (int64_t half = threads / 2; half >= 1; half /= 2) {
    atRowEnd();
    scf::ForallOp level = mappedForall(b, loc, half, threadX);
    Value i = level.getInductionVar(0);
    Value other = arith::AddIOp::create(b, loc, i, arith::ConstantIndexOp::create(b, loc, half));
    Value sum = combine(memref::LoadOp::create(b, loc, partials, ValueRange{i}),
                        memref::LoadOp::create(b, loc, partials, ValueRange{other}));
    memref::StoreOp::create(b, loc, sum, partials, ValueRange{i});
  }

  // The output's initial value and the total.
  atRowEnd();
  mappedForall(b, loc, 1, threadX);
  OpOperand *out = g.getDpsInitOperand(0);
  SmallVector<Value> outAt = indicesAt(b, loc, g.getMatchingIndexingMap(out), loops);
  Value init = memref::LoadOp::create(b, loc, out->get(), outAt);
  Value total = combine(init, memref::LoadOp::create(b, loc, partials, ValueRange{zero}));
  memref::StoreOp::create(b, loc, total, out->get(), outAt);
  atRowEnd();
  memref::DeallocOp::create(b, loc, partials);
  b.eraseOp(g);
}

/// Replaces `g` by its block x thread forall nest, a thread per point.
void mapGeneric(RewriterBase &rewriter, linalg::GenericOp g, int64_t blockSize) {
  Location loc = g.getLoc();
  MLIRContext *ctx = g.getContext();
  SmallVector<int64_t> ranges = g.getStaticLoopRanges();
  SmallVector<int64_t> parallel, reduction;
  splitDims(g, parallel, reduction);
  int64_t points = 1;
  for (int64_t d : parallel)
    points *= ranges[d];
  int64_t threads = std::min(blockSize, points);

  rewriter.setInsertionPoint(g);
  scf::ForallOp blocks =
      mappedForall(rewriter, loc, llvm::divideCeil(points, threads),
                   gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimX));
  scf::ForallOp lanes = mappedForall(rewriter, loc, threads,
                                     gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimX));
  AffineExpr b, t;
  bindDims(ctx, b, t);
  Value point = affine::AffineApplyOp::create(
      rewriter, loc, AffineMap::get(2, 0, b * threads + t),
      ValueRange{blocks.getInductionVar(0), lanes.getInductionVar(0)});
  if (points % threads != 0) {
    Value inside = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::ult, point,
        arith::ConstantIndexOp::create(rewriter, loc, points));
    auto guard = scf::IfOp::create(rewriter, loc, inside, /*withElseRegion=*/false);
    rewriter.setInsertionPointToStart(guard.thenBlock());
  }
  SmallVector<Value> loops(ranges.size());
  delinearizeInto(rewriter, loc, point, parallel, ranges, loops);
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
    // Loops lowered before (a scatter-add's, whose rows may repeat an index)
    // run in one thread, as they run on the CPU.
    SmallVector<Operation *> serial;
    getOperation().walk([&](func::FuncOp fn) {
      for (Operation &op : fn.getBody().getOps())
        if (isa<scf::ForOp, scf::IfOp, memref::StoreOp>(op))
          serial.push_back(&op);
    });
    MLIRContext *ctx = &getContext();
    for (Operation *op : serial) {
      rewriter.setInsertionPoint(op);
      mappedForall(rewriter, op->getLoc(), 1,
                   gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimX));
      mappedForall(rewriter, op->getLoc(), 1,
                   gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimX));
      rewriter.moveOpBefore(op, rewriter.getInsertionBlock()->getTerminator());
    }
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp g) { generics.push_back(g); });
    for (linalg::GenericOp g : generics) {
      if (failed(checkMappable(g)))
        return signalPassFailure();
      Operation *combiner = blockReducible(g);
      int64_t elements = 1;
      for (auto [range, it] : llvm::zip(g.getStaticLoopRanges(), g.getIteratorTypesArray()))
        if (it == utils::IteratorType::reduction)
          elements *= range;
      if (combiner && elements >= kBlockReductionMin)
        mapBlockReduction(rewriter, g, combiner, blockSize);
      else
        mapGeneric(rewriter, g, blockSize);
    }
  }
};

} // namespace

std::unique_ptr<Pass> colo::createMapGenericsToGpuPass(int64_t blockSize) {
  return std::make_unique<MapGenericsToGpuPass>(blockSize);
}
