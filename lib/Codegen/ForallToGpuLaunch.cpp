//===- ForallToGpuLaunch.cpp - colo-forall-to-gpu-launch ------------------===//
//
// Turns each block x thread scf.forall nest (colo-map-generics-to-gpu's) into
// a gpu.launch: a grid of the outer forall's size, blocks of its largest
// inner forall's, the block and thread ids in place of the induction
// variables. A block forall may hold several thread foralls (phases, such
// as a reduction's levels): each runs on the threads below its size, with a
// gpu.barrier between phases, and the static allocations beside them become
// the launch's workgroup (shared) memory. What the body computes from above
// without side effects moves inside (sinkInto); it captures the rest, the
// kernel's buffers and temporaries; gpu-kernel-outlining then makes it
// a gpu.func and a gpu.launch_func. Other shapes are refused: the nest is
// the contract between the two passes.
//
//===----------------------------------------------------------------------===//

#include "ForallToGpuLaunch.h"
#include "colo/Codegen/CudaKernelCompiler.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

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

/// No op between `from` and `to` (in their block) touches `memref`'s
/// buffer other than to read it.
bool onlyReadBetween(Value memref, Operation *from, Operation *to) {
  Value root = memref::skipViewLikeOps(cast<MemrefValue>(memref));
  for (Operation *op = from->getNextNode(); op && op != to; op = op->getNextNode()) {
    WalkResult touched = op->walk([&](Operation *inner) {
      if (isa<memref::LoadOp>(inner))
        return WalkResult::advance();
      for (Value operand : inner->getOperands()) {
        auto buffer = dyn_cast<MemrefValue>(operand);
        if (buffer && memref::skipViewLikeOps(buffer) == root)
          return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (touched.wasInterrupted())
      return false;
  }
  return true;
}

/// Whether a constant buffer is small enough to travel inside the PTX.
bool smallConstant(memref::GetGlobalOp get) {
  MemRefType type = get.getType();
  return type.hasStaticShape() &&
         type.getNumElements() * llvm::divideCeil(type.getElementTypeBitWidth(), 8) <=
             colo::kMaxPtxConstantBytes;
}

/// Moves into `launch` what its body computes from
/// above without side effects: constants, index arithmetic, views, small
/// constant buffers (memref.get_global: outlining then copies their globals
/// into the GPU module, since the device cannot read the host's), and loads
/// of scalars (a step counter) that nothing writes between the load and the
/// launch. What stays above is captured: the kernel's buffers and
/// temporaries, and the large constant buffers, which the runtime uploads.
void sinkInto(RewriterBase &rewriter, gpu::LaunchOp launch) {
  Block &body = launch.getBody().front();
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(&body);
  IRMapping sunk;
  SmallVector<Operation *> moved;
  std::function<Value(Value)> sink = [&](Value v) -> Value {
    if (Value done = sunk.lookupOrNull(v))
      return done;
    Operation *def = v.getDefiningOp();
    if (!def || launch->isAncestor(def) || def->getNumRegions() != 0)
      return v;
    auto load = dyn_cast<memref::LoadOp>(def);
    auto global = dyn_cast<memref::GetGlobalOp>(def);
    if (!((isPure(def) && !global) || (global && smallConstant(global)) ||
          (load && onlyReadBetween(load.getMemRef(), def, launch))))
      return v;
    for (Value operand : def->getOperands())
      sunk.map(operand, sink(operand));
    Operation *clone = rewriter.clone(*def, sunk);
    for (auto [from, to] : llvm::zip(def->getResults(), clone->getResults()))
      sunk.map(from, to);
    moved.push_back(def);
    return sunk.lookup(v);
  };
  launch.getBody().walk([&](Operation *inner) {
    for (OpOperand &use : inner->getOpOperands())
      if (Operation *def = use.get().getDefiningOp(); def && !launch->isAncestor(def))
        use.set(sink(use.get()));
  });
  // The originals nothing else reads, users first.
  for (Operation *op : llvm::reverse(moved))
    if (isOpTriviallyDead(op))
      rewriter.eraseOp(op);
}

LogicalResult toLaunch(RewriterBase &rewriter, scf::ForallOp blocks) {
  MLIRContext *ctx = blocks.getContext();
  auto blockX = gpu::GPUBlockMappingAttr::get(ctx, gpu::MappingId::DimX);
  auto threadX = gpu::GPUThreadMappingAttr::get(ctx, gpu::MappingId::DimX);
  auto refuse = [&](Operation *op) {
    return op->emitError("colo-forall-to-gpu-launch takes a one-dimensional forall mapped to "
                         "#gpu.block<x> holding one-dimensional foralls mapped to "
                         "#gpu.thread<x>, static allocations for them to share, and "
                         "operations without side effects");
  };
  std::optional<int64_t> grid = mappedSize(blocks, blockX);
  if (!grid)
    return refuse(blocks);
  // The phases (thread foralls), what they share, and the block's size:
  // the largest phase.
  int64_t block = 0;
  DenseSet<Value> shared;
  for (Operation &op : blocks.getBody()->without_terminator()) {
    if (auto threads = dyn_cast<scf::ForallOp>(op)) {
      std::optional<int64_t> size = mappedSize(threads, threadX);
      if (!size)
        return refuse(threads);
      block = std::max(block, *size);
    } else if (auto alloc = dyn_cast<memref::AllocOp>(op);
               alloc && alloc.getType().hasStaticShape() && alloc->getNumOperands() == 0) {
      shared.insert(alloc.getResult());
    } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op);
               !(dealloc && shared.contains(dealloc.getMemref())) && !isPure(&op)) {
      return refuse(&op);
    }
  }
  if (block == 0)
    return refuse(blocks);

  Location loc = blocks.getLoc();
  rewriter.setInsertionPoint(blocks);
  Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
  auto launch = gpu::LaunchOp::create(
      rewriter, loc, arith::ConstantIndexOp::create(rewriter, loc, *grid), one, one,
      arith::ConstantIndexOp::create(rewriter, loc, block), one, one);
  rewriter.setInsertionPointToEnd(&launch.getBody().front());
  Value tid = launch.getThreadIds().x;
  IRMapping map;
  map.map(blocks.getInductionVar(0), launch.getBlockIds().x);
  bool phaseBefore = false;
  for (Operation &op : blocks.getBody()->without_terminator()) {
    if (auto alloc = dyn_cast<memref::AllocOp>(op); alloc && shared.contains(alloc)) {
      MemRefType type = alloc.getType();
      auto workgroup = MemRefType::get(
          type.getShape(), type.getElementType(), MemRefLayoutAttrInterface{},
          gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
      map.map(alloc.getResult(), launch.addWorkgroupAttribution(workgroup, alloc.getLoc()));
      continue;
    }
    if (isa<memref::DeallocOp>(op))
      continue;
    auto threads = dyn_cast<scf::ForallOp>(op);
    if (!threads) {
      rewriter.clone(op, map);
      continue;
    }
    // A phase reads what the one before wrote: all threads wait between.
    if (phaseBefore)
      gpu::BarrierOp::create(rewriter, loc);
    phaseBefore = true;
    int64_t size = *mappedSize(threads, threadX);
    OpBuilder::InsertionGuard guard(rewriter);
    if (size < block) {
      Value active = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ult, tid,
                                           arith::ConstantIndexOp::create(rewriter, loc, size));
      auto inside = scf::IfOp::create(rewriter, loc, active, /*withElseRegion=*/false);
      rewriter.setInsertionPointToStart(inside.thenBlock());
    }
    map.map(threads.getInductionVar(0), tid);
    for (Operation &inner : threads.getBody()->without_terminator())
      rewriter.clone(inner, map);
  }
  gpu::TerminatorOp::create(rewriter, loc);
  rewriter.eraseOp(blocks);
  sinkInto(rewriter, launch);
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
