//===- KernelCompiler.cpp - colo kernels to a CPU shared object ----------===//
//
// The MLIR part is one pass pipeline (buildCpuKernelPipeline), so that every
// stage can be printed; two small passes of its own mark the kernels before
// bufferization and add the `void name(void **)` entry points at the end.
// The LLVM part translates, optimizes for the host CPU, emits an object and
// links it with the system C compiler driver.
//
//===----------------------------------------------------------------------===//
#include "colo/Codegen/KernelCompiler.h"
#include "colo/Dialect/Colo/ColoDialect.h"

#include "CollapseParallelLoops.h"
#include "ForallToGpuLaunch.h"
#include "KernelObjects.h"
#include "MapGenericsToGpu.h"
#include "FuseElementwise.h"

#include "colo/Passes/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/BufferizationToMemRef/BufferizationToMemRef.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdlib>

using namespace mlir;

namespace colo {
namespace {

/// The module attribute listing the kernels (their names) between the two
/// passes below.
constexpr llvm::StringLiteral kKernelsAttr = colo::ColoDialect::KernelsAttrHelper::getNameStr();

bool isKernelType(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  if (!tensor || !tensor.hasStaticShape())
    return false;
  Type e = tensor.getElementType();
  return isa<FloatType>(e) || e.isSignlessInteger();
}

/// After colo-lower-to-linalg: checks that every public function is a
/// kernel (static tensor signature, no colo op left), records the kernels on
/// the module and marks their arguments read-only for bufferization.
/// tanh, erf, exp and log as polynomials of arithmetic: libm's scalar calls
/// keep loops from vectorizing, the polynomials vectorize (f32, within a few
/// ulp, as PyTorch's vectorized Sleef functions are).
struct ApproximateMathPass
    : PassWrapper<ApproximateMathPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ApproximateMathPass)
  StringRef getArgument() const final { return "colo-approximate-math"; }
  StringRef getDescription() const final {
    return "Replaces f32 tanh, erf, exp and log by vectorizable polynomials";
  }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // The predicate sees operation names ("math.tanh").
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      return llvm::is_contained(
          {math::TanhOp::getOperationName(), math::ErfOp::getOperationName(),
           math::ExpOp::getOperationName(), math::LogOp::getOperationName()},
          name);
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

/// Reduces in kLanes interleaved lanes, then across the lanes in order:
/// element k of a reduced innermost dimension of length n (a multiple of
/// kLanes, at least 4 kLanes) goes to lane k % kLanes, each lane combines
/// its elements in order, and the lanes are combined into the initial value
/// 0, 1, ..., kLanes - 1. The order is written in the IR, not chosen by LLVM,
/// so the same reduction rounds the same way in every kernel and on every
/// rank, while the lanes are kLanes independent dependency chains instead of
/// one. Float sums, maxima and minima; other reductions, and those
/// linalg::splitReduction cannot split, keep their loops.
struct SplitReductionsPass
    : PassWrapper<SplitReductionsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(SplitReductionsPass)
  static constexpr int64_t kLanes = 16;
  StringRef getArgument() const final { return "colo-split-reductions"; }
  StringRef getDescription() const final {
    return "Splits innermost float reductions into interleaved lanes combined in order";
  }

  static bool splittable(linalg::GenericOp g) {
    if (g.getNumReductionLoops() != 1 || g.getNumDpsInits() != 1 ||
        !g.hasPureTensorSemantics())
      return false;
    SmallVector<utils::IteratorType> iterators = g.getIteratorTypesArray();
    if (iterators.back() != utils::IteratorType::reduction)
      return false;
    int64_t n = g.getStaticLoopRanges().back();
    if (ShapedType::isDynamic(n) || n % kLanes || n < 4 * kLanes)
      return false;
    SmallVector<Operation *> combiners;
    if (!matchReduction(g.getRegionOutputArgs(), 0, combiners) || combiners.size() != 1)
      return false;
    return isa<arith::AddFOp, arith::MaximumFOp, arith::MinimumFOp>(combiners[0]);
  }

  /// linalg::splitReduction takes an operand's constant index (a size-1
  /// dimension read by broadcasting, `(d0, d1, d2) -> (d0, d1, 0)`) for a
  /// loop dimension and builds an invalid generic, so such dimensions are
  /// first collapsed into a neighbour (or the operand into a scalar).
  static void collapseConstantIndices(RewriterBase &rw, linalg::GenericOp g) {
    SmallVector<AffineMap> maps = g.getIndexingMapsArray();
    bool changed = false;
    for (OpOperand *operand : g.getDpsInputOperands()) {
      AffineMap map = maps[operand->getOperandNumber()];
      auto type = dyn_cast<RankedTensorType>(operand->get().getType());
      if (!type || llvm::none_of(map.getResults(), llvm::IsaPred<AffineConstantExpr>))
        continue;
      SmallVector<ReassociationIndices> groups;
      SmallVector<AffineExpr> exprs;
      ReassociationIndices pending;
      for (auto [i, e] : llvm::enumerate(map.getResults())) {
        pending.push_back(i);
        if (isa<AffineConstantExpr>(e))
          continue;
        groups.push_back(std::move(pending));
        pending.clear();
        exprs.push_back(e);
      }
      if (!groups.empty())
        llvm::append_range(groups.back(), pending);
      Value collapsed = tensor::CollapseShapeOp::create(rw, g.getLoc(), operand->get(), groups);
      operand->set(collapsed);
      maps[operand->getOperandNumber()] =
          AffineMap::get(map.getNumDims(), 0, exprs, g.getContext());
      changed = true;
    }
    if (changed)
      g.setIndexingMapsAttr(rw.getAffineMapArrayAttr(maps));
  }

  void runOnOperation() override {
    SmallVector<linalg::GenericOp> ops;
    getOperation()->walk([&](linalg::GenericOp g) {
      if (splittable(g))
        ops.push_back(g);
    });
    IRRewriter rw(&getContext());
    for (linalg::GenericOp g : ops) {
      rw.setInsertionPoint(g);
      collapseConstantIndices(rw, g);
      auto control = [](linalg::LinalgOp op) {
        return linalg::SplitReductionOptions{
            kLanes, static_cast<unsigned>(op.getRank(op.getDpsInitOperand(0))),
            /*innerParallel=*/true};
      };
      (void)linalg::splitReduction(rw, cast<linalg::LinalgOp>(g.getOperation()), control);
    }
  }
};

struct PrepareKernelsPass
    : PassWrapper<PrepareKernelsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PrepareKernelsPass)
  StringRef getArgument() const final { return "colo-prepare-cpu-kernels"; }
  StringRef getDescription() const final {
    return "Checks and marks the kernels before bufferization";
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    bool ok = true;
    module.walk([&](Operation *op) {
      if (op->getName().getDialectNamespace() != "colo")
        return;
      op->emitError() << "'" << op->getName()
                      << "' has no CPU kernel lowering; kernels hold elementwise, "
                         "reduction, normalization, data-movement and loss ops "
                         "(matrix products and convolutions are library calls)";
      ok = false;
    });
    SmallVector<Attribute> names;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.isPublic())
        continue;
      FunctionType type = func.getFunctionType();
      for (auto [what, types] : {std::pair("argument", type.getInputs()),
                                 std::pair("result", type.getResults())})
        for (auto [i, t] : llvm::enumerate(types))
          if (!isKernelType(t)) {
            func.emitError() << "kernel " << what << " " << i << " has type " << t
                             << "; kernels take and return static tensors of "
                                "integers or floats";
            ok = false;
          }
      names.push_back(func.getSymNameAttr());
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        func.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                        BoolAttr::get(ctx, false));
    }
    if (names.empty()) {
      module.emitError() << "no kernel to compile: the module has no public "
                            "func.func with a body";
      ok = false;
    }
    if (!ok)
      return signalPassFailure();
    module->setAttr(kKernelsAttr, ArrayAttr::get(ctx, names));
  }
};

/// After bufferization: every result of a function gets a buffer of its
/// own. A buffer returned twice is copied into a new allocation for its second
/// and later appearances, so that buffer-results-to-out-params can replace
/// each returned allocation by one out-param (it cannot hoist one allocation
/// into two).
/// One-shot bufferization creates the constants' memref.globals in an order
/// that varies from run to run (it visits the functions in an order of its
/// own), which moves them in the object file. This pass renames them by
/// their first use in the module and puts them at its start in that order,
/// so that the same kernels always give the same bytes.
struct OrderGlobalsPass : PassWrapper<OrderGlobalsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(OrderGlobalsPass)
  StringRef getArgument() const final { return "colo-order-globals"; }
  StringRef getDescription() const final {
    return "Names and orders the memref.globals by their first use";
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    llvm::MapVector<memref::GlobalOp, StringAttr> renamed;
    module.walk([&](memref::GetGlobalOp use) {
      auto global = symbols.lookup<memref::GlobalOp>(use.getName());
      if (!global)
        return;
      auto [it, first] = renamed.try_emplace(global, StringAttr());
      if (first)
        it->second = StringAttr::get(&getContext(),
                                     "__colo_constant_" + Twine(renamed.size() - 1));
      use.setNameAttr(FlatSymbolRefAttr::get(it->second));
    });
    Block *body = module.getBody();
    Operation *start = &body->front();
    for (auto [global, name] : renamed) {
      global.setSymName(name);
      if (global.getOperation() != start)
        global->moveBefore(start);
      else
        start = start->getNextNode();
    }
  }
};

struct DistinctResultBuffersPass
    : PassWrapper<DistinctResultBuffersPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(DistinctResultBuffersPass)
  StringRef getArgument() const final { return "colo-distinct-result-buffers"; }
  StringRef getDescription() const final {
    return "Copies a buffer returned more than once";
  }
  void runOnOperation() override {
    getOperation().walk([](func::ReturnOp ret) {
      llvm::SmallDenseSet<Value> seen;
      OpBuilder b(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        Value v = operand.get();
        auto type = dyn_cast<MemRefType>(v.getType());
        if (!type || seen.insert(v).second)
          continue;
        auto fresh = memref::AllocOp::create(
            b, ret.getLoc(), MemRefType::get(type.getShape(), type.getElementType()));
        memref::CopyOp::create(b, ret.getLoc(), v, fresh);
        operand.set(fresh);
      }
    });
  }
};

/// Copies between strided views (a slice that is returned, say) become
/// linalg.copy, which lowers to loops; contiguous ones stay memref.copy
/// (llvm.memcpy). Without this, MLIR would call its C runner library.
struct StridedCopiesToLoopsPass
    : PassWrapper<StridedCopiesToLoopsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(StridedCopiesToLoopsPass)
  StringRef getArgument() const final { return "colo-strided-copies-to-loops"; }
  StringRef getDescription() const final {
    return "Rewrites non-contiguous memref.copy into linalg.copy";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<linalg::LinalgDialect>();
  }
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      auto contiguous = [](Value v) {
        auto t = dyn_cast<MemRefType>(v.getType());
        return t && memref::isStaticShapeAndContiguousRowMajor(t);
      };
      if (!contiguous(copy.getSource()) || !contiguous(copy.getTarget()))
        copies.push_back(copy);
    });
    for (memref::CopyOp copy : copies) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(), copy.getTarget());
      copy.erase();
    }
  }
};

/// At the end: renames every kernel `@name` (now an llvm.func taking one
/// pointer per argument and result) to an internal `@name_impl` and adds
/// the exported `void name(void **args)` that calls it.
struct EntryPointsPass : PassWrapper<EntryPointsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(EntryPointsPass)
  explicit EntryPointsPass(bool noAlias) : noAlias(noAlias) {}
  bool noAlias;
  StringRef getArgument() const final { return "colo-cpu-kernel-entry-points"; }
  StringRef getDescription() const final {
    return "Adds the void name(void **) entry point of every kernel";
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto names = module->getAttrOfType<ArrayAttr>(kKernelsAttr);
    if (!names) {
      module.emitError() << "no kernels recorded (run colo-prepare-cpu-kernels first)";
      return signalPassFailure();
    }
    module->removeAttr(kKernelsAttr);
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto voidType = LLVM::LLVMVoidType::get(ctx);
    SymbolTable symbols(module);
    // The symbols something refers to, found in one walk: renaming the
    // others needs no walk each (which made the pass quadratic in kernels).
    llvm::DenseSet<StringAttr> referenced;
    if (std::optional<SymbolTable::UseRange> uses = SymbolTable::getSymbolUses(module))
      for (const SymbolTable::SymbolUse &use : *uses)
        referenced.insert(use.getSymbolRef().getRootReference());
    OpBuilder b(ctx);
    for (auto name : names.getAsValueRange<StringAttr>()) {
      auto impl = symbols.lookup<LLVM::LLVMFuncOp>(name);
      if (!impl || impl.isExternal()) {
        module.emitError() << "kernel @" << name << " was lost in the lowering";
        return signalPassFailure();
      }
      LLVM::LLVMFunctionType type = impl.getFunctionType();
      if (type.getReturnType() != voidType ||
          llvm::any_of(type.getParams(), [&](Type t) { return t != ptr; })) {
        impl.emitError() << "kernel @" << name
                         << " was not lowered to one pointer per buffer: " << type;
        return signalPassFailure();
      }
      std::string implName = (name + "_impl").str();
      for (int n = 1; symbols.lookup(implName); ++n)
        implName = (name + "_impl" + Twine(n)).str();
      if (!referenced.contains(impl.getSymNameAttr())) {
        symbols.remove(impl);
        impl.setSymName(implName);
        symbols.insert(impl);
      } else if (failed(symbols.rename(impl, StringAttr::get(ctx, implName)))) {
        return signalPassFailure();
      }
      impl.setLinkage(LLVM::Linkage::Internal);
      for (unsigned i = 0; noAlias && i < type.getNumParams(); ++i)
        impl.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(), UnitAttr::get(ctx));

      Location loc = impl.getLoc();
      b.setInsertionPointAfter(impl);
      auto entry = LLVM::LLVMFuncOp::create(b, loc, name,
                                            LLVM::LLVMFunctionType::get(voidType, {ptr}));
      symbols.insert(entry);
      Block *body = entry.addEntryBlock(b);
      b.setInsertionPointToStart(body);
      SmallVector<Value> buffers;
      for (unsigned i = 0; i < type.getNumParams(); ++i) {
        Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, body->getArgument(0),
                                         ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
        buffers.push_back(LLVM::LoadOp::create(b, loc, ptr, slot));
      }
      LLVM::CallOp::create(b, loc, impl, buffers);
      LLVM::ReturnOp::create(b, loc, ValueRange{});
    }
  }
};

} // namespace

void registerKernelCompilerDialects(DialectRegistry &registry) {
  registry.insert<affine::AffineDialect, gpu::GPUDialect>();
  registry.insert<arith::ArithDialect, bufferization::BufferizationDialect,
                  cf::ControlFlowDialect, func::FuncDialect, linalg::LinalgDialect,
                  LLVM::LLVMDialect, math::MathDialect, memref::MemRefDialect,
                  scf::SCFDialect, tensor::TensorDialect>();
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  arith::registerBufferDeallocationOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(registry);
  cf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  linalg::registerSubsetOpInterfaceExternalModels(registry);
  memref::registerAllocationOpInterfaceExternalModels(registry);
  scf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerSubsetOpInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

std::unique_ptr<Pass> createApproximateMathPass() {
  return std::make_unique<ApproximateMathPass>();
}

void buildKernelBufferPipeline(OpPassManager &pm, bool splitReductions) {
  // colo -> linalg on tensors, fused.
  pm.addPass(createColoJoinSliceGradients());
  pm.addPass(createColoLowerToLinalg());
  pm.addPass(std::make_unique<PrepareKernelsPass>());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createLinalgGeneralizeNamedOpsPass());
  pm.addPass(createFuseElementwisePass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (splitReductions)
    pm.addPass(std::make_unique<SplitReductionsPass>());

  // Tensors -> buffers. Function boundaries take identity-layout memrefs;
  // results become out-params, and a result allocated in the kernel is
  // replaced by its out-param, so the kernel writes into the caller's memory.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(std::make_unique<OrderGlobalsPass>());
  pm.addPass(std::make_unique<DistinctResultBuffersPass>());
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  pm.addPass(createCanonicalizerPass());
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addPass(createCollapseParallelLoopsPass());
}

void buildCpuKernelPipeline(OpPassManager &pm, const CpuKernelPipelineOptions &options) {
  buildKernelBufferPipeline(pm, /*splitReductions=*/!options.gpuLoopNests);
  pm.addPass(std::make_unique<StridedCopiesToLoopsPass>());
  if (options.gpuLoopNests) {
    pm.addPass(createMapGenericsToGpuPass());
    pm.addPass(createForallToForLoopPass());
  }

  // Buffers -> loops -> LLVM, with the bare-pointer calling convention
  // (every shape is static).
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(std::make_unique<ApproximateMathPass>());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true; // bf16 <-> f32 in integer ops, no libgcc helpers
  pm.addPass(arith::createArithExpandOpsPass(expand));
  // aligned_alloc, not malloc and a pointer rounded up through an integer:
  // LLVM knows the former's result aliases nothing, and so keeps a split
  // reduction's lanes in registers instead of versioning its loops on
  // run-time overlap checks and storing the lanes back at every element.
  FinalizeMemRefToLLVMConversionPassOptions memrefToLLVM;
  memrefToLLVM.useAlignedAlloc = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefToLLVM));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass()); // erf and what LLVM has no intrinsic for
  ConvertFuncToLLVMPassOptions funcToLLVM;
  funcToLLVM.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(funcToLLVM));
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(std::make_unique<EntryPointsPass>(options.noAlias));
  pm.addPass(createCanonicalizerPass());
}

void registerKernelCompilerPasses() {
  PassRegistration<ApproximateMathPass>();
  PassRegistration<SplitReductionsPass>();
  PassRegistration<PrepareKernelsPass>();
  PassRegistration<OrderGlobalsPass>();
  PassRegistration<DistinctResultBuffersPass>();
  PassRegistration<StridedCopiesToLoopsPass>();
  PassRegistration<Pass>([] { return createFuseElementwisePass(); });
  PassRegistration<Pass>([] { return createCollapseParallelLoopsPass(); });
  PassRegistration<Pass>([] { return createMapGenericsToGpuPass(); });
  PassRegistration<Pass>([] { return createForallToGpuLaunchPass(); });
  PassPipelineRegistration<>("colo-cpu-kernel-pipeline",
                             "colo kernels on tensors to the LLVM dialect",
                             [](OpPassManager &pm) { buildCpuKernelPipeline(pm, {}); });
}

LogicalResult lowerKernelsToLLVM(ModuleOp module, const KernelCompileOptions &opts) {
  MLIRContext *ctx = module.getContext();
  DialectRegistry registry;
  registerKernelCompilerDialects(registry);
  ctx->appendDialectRegistry(registry);

  PassManager pm(ctx, ModuleOp::getOperationName());
  CpuKernelPipelineOptions pipeline;
  pipeline.noAlias = opts.noAlias;
  pipeline.gpuLoopNests = opts.gpuLoopNests;
  buildCpuKernelPipeline(pm, pipeline);
  if (opts.irDump)
    pm.enableIRPrinting([](Pass *, Operation *) { return false; },
                        [](Pass *, Operation *) { return true; },
                        /*printModuleScope=*/false, /*printAfterOnlyOnChange=*/true,
                        /*printAfterOnlyOnFailure=*/false, *opts.irDump);
  if (opts.timing && *opts.timing)
    pm.enableTiming(*opts.timing);
  return pm.run(module);
}

std::string defaultKernelCacheDir() {
  if (const char *dir = std::getenv("COLO_KERNEL_CACHE"))
    return StringRef(dir) == "off" ? "" : dir;
  SmallString<128> dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    dir = xdg;
  else if (const char *home = std::getenv("HOME"); home && *home)
    llvm::sys::path::append(dir, home, ".cache");
  else
    return "";
  llvm::sys::path::append(dir, "colo", "kernels");
  return dir.str().str();
}

LogicalResult compileKernels(ModuleOp kernels, StringRef soPath,
                             const KernelCompileOptions &opts) {
  TimingScope untimed;
  TimingScope &timing = opts.timing ? *opts.timing : untimed;
  std::string error;
  FailureOr<KernelTarget> target = resolveKernelTarget(opts, error);
  if (failed(target))
    return kernels.emitError() << error;

  // Each kernel's object: from the cache, or compiled below (into the cache,
  // or a directory removed after the link). Kernels already there, and
  // second kernels with the body of a first, leave the module to compile.
  TimingScope phase = timing.nest("kernel cache");
  OwningOpRef<ModuleOp> module(cast<ModuleOp>(kernels->clone()));
  std::string dir = openKernelCache(opts);
  SmallString<128> scratch;
  if (dir.empty()) {
    if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("colo-kernels", scratch))
      return kernels.emitError() << "cannot create a temporary directory: " << ec.message();
    dir = scratch.str().str();
  }
  llvm::scope_exit removeScratch([&] {
    if (!scratch.empty())
      llvm::sys::fs::remove_directories(scratch);
  });
  SmallVector<KernelObject> objects, toCompile;
  llvm::StringSet<> keys;
  for (func::FuncOp fn : llvm::make_early_inc_range(module->getOps<func::FuncOp>())) {
    if (fn.isPrivate() || fn.isExternal())
      continue;
    KernelKey key = kernelKey(fn, *target, opts);
    SmallString<128> path(dir);
    llvm::sys::path::append(path, key.file + ".o");
    objects.push_back({fn.getSymName().str(), "colo_k_" + key.content, path.str().str()});
    if (keys.insert(key.file).second && !llvm::sys::fs::exists(path))
      toCompile.push_back(objects.back());
    else
      fn.erase();
  }

  if (!toCompile.empty()) {
    phase.stop();
    if (failed(lowerKernelsToLLVM(*module, opts)))
      return failure();
    phase = timing.nest("LLVM IR translation");
    llvm::LLVMContext llvmContext;
    std::unique_ptr<llvm::Module> llvmModule =
        translateModuleToLLVMIR(*module, llvmContext, "colo_kernels");
    if (!llvmModule)
      return kernels.emitError() << "cannot translate the lowered kernels to LLVM IR";
    phase = timing.nest("LLVM optimization and code generation");
    error = emitKernelObjects(*llvmModule, toCompile, *target, opts);
    if (!error.empty())
      return kernels.emitError() << error;
  }
  phase = timing.nest("link");
  error = linkKernelObjects(objects, soPath, opts);
  if (!error.empty())
    return kernels.emitError() << error;
  return success();
}

} // namespace colo
