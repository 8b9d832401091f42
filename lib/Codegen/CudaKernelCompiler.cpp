//===- CudaKernelCompiler.cpp - colo kernels to PTX -----------------------===//
#include "colo/Codegen/CudaKernelCompiler.h"
#include "colo/Codegen/KernelCompiler.h"

#include "ForallToGpuLaunch.h"
#include "MapGenericsToGpu.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace colo {

void registerCudaKernelCompilerDialects(DialectRegistry &registry) {
  registerKernelCompilerDialects(registry);
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect>();
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}

void buildCudaKernelPipeline(OpPassManager &pm, const CudaKernelOptions &options) {
  // The CPU's passes up to fused linalg on buffers; reductions stay whole
  // (one thread per output element runs them in the CPU's loop order).
  buildKernelBufferPipeline(pm, /*splitReductions=*/false);
  pm.addPass(createMapGenericsToGpuPass(options.blockSize));
  pm.addPass(createForallToGpuLaunchPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Polynomials, not libdevice calls: the same f32 approximations as on the
  // CPU, and no device library to link.
  pm.addPass(createApproximateMathPass());
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  for (const std::string &chip : options.chips) {
    GpuNVVMAttachTargetOptions target;
    target.chip = chip;
    target.optLevel = options.optLevel;
    pm.addPass(createGpuNVVMAttachTarget(target));
  }
  // Views (collapse_shape, subview) as metadata arithmetic the NVVM
  // lowering takes.
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  ConvertGpuOpsToNVVMOpsOptions toNVVM;
  toNVVM.useBarePtrCallConv = true; // every shape is static
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps(toNVVM));
  pm.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa"; // PTX, from LLVM's NVPTX back end
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void registerCudaKernelCompilerPasses() {
  PassPipelineRegistration<>("colo-cuda-kernel-pipeline",
                             "colo kernels on tensors to GPU launches and PTX (sm_80, sm_90)",
                             [](OpPassManager &pm) { buildCudaKernelPipeline(pm); });
}

namespace {

/// The bytes of a constant buffer's global, as laid out in memory.
FailureOr<std::string> constantBytes(memref::GetGlobalOp get) {
  auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(get, get.getNameAttr());
  Attribute value = global ? global.getInitialValueAttr() : Attribute();
  MemRefType type = get.getType();
  int64_t elementBits = type.getElementTypeBitWidth();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(value); dense && elementBits % 8 == 0) {
    ArrayRef<char> raw = dense.getRawData();
    if (!dense.isSplat())
      return std::string(raw.begin(), raw.end());
    std::string bytes;
    for (int64_t i = 0; i < type.getNumElements(); ++i)
      bytes.append(raw.begin(), raw.end());
    return bytes;
  }
  if (auto resource = dyn_cast_or_null<DenseResourceElementsAttr>(value))
    if (AsmResourceBlob *blob = resource.getRawHandle().getBlob())
      return std::string(blob->getData().begin(), blob->getData().end());
  return get.emitError("a constant buffer's global has no initial value colo can upload");
}

/// The launches of kernel `fn` after outlining: geometry, and where each
/// buffer comes from (through views to an argument, a temporary or a large
/// constant, which joins `constants`). The host side holds nothing else:
/// launches, temporaries, views, constants.
FailureOr<CudaKernel> launchesOf(func::FuncOp fn, std::vector<CudaConstant> &constants,
                                 llvm::StringMap<int> &constantIndex) {
  CudaKernel kernel{fn.getSymName().str(), {}, {}};
  DenseMap<Value, int> temporaries;
  WalkResult walked = fn.walk([&](Operation *op) {
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      MemRefType type = alloc.getType();
      if (!type.hasStaticShape()) {
        alloc.emitError("a CUDA kernel's temporary must have a static shape");
        return WalkResult::interrupt();
      }
      temporaries[alloc] = int(kernel.temporaryBytes.size());
      kernel.temporaryBytes.push_back(type.getNumElements() *
                                      llvm::divideCeil(type.getElementTypeBitWidth(), 8));
      return WalkResult::advance();
    }
    if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
      std::optional<int64_t> grid = getConstantIntValue(launch.getGridSizeX());
      std::optional<int64_t> block = getConstantIntValue(launch.getBlockSizeX());
      if (!grid || !block) {
        launch.emitError("a kernel's launch geometry must be constant");
        return WalkResult::interrupt();
      }
      CudaLaunch l{launch.getKernelModuleName().str(), launch.getKernelName().str(), *grid,
                   *block, {}};
      for (Value operand : launch.getKernelOperands()) {
        Value root = operand;
        if (auto buffer = dyn_cast<MemrefValue>(operand))
          root = memref::skipViewLikeOps(buffer);
        if (auto arg = dyn_cast<BlockArgument>(root); arg && arg.getOwner()->isEntryBlock() &&
                                                     arg.getOwner()->getParentOp() == fn) {
          l.args.push_back({CudaArg::Argument, int(arg.getArgNumber())});
        } else if (auto it = temporaries.find(root); it != temporaries.end()) {
          l.args.push_back({CudaArg::Temporary, it->second});
        } else if (auto get = root.getDefiningOp<memref::GetGlobalOp>()) {
          auto [at, added] = constantIndex.try_emplace(get.getName(), int(constants.size()));
          if (added) {
            FailureOr<std::string> bytes = constantBytes(get);
            if (failed(bytes))
              return WalkResult::interrupt();
            constants.push_back({get.getName().str(), std::move(*bytes)});
          }
          l.args.push_back({CudaArg::Constant, at->second});
        } else {
          launch.emitError("a launch operand is neither a kernel argument, a temporary nor a "
                           "constant: ")
              << root;
          return WalkResult::interrupt();
        }
      }
      kernel.launches.push_back(std::move(l));
      return WalkResult::advance();
    }
    if (op == fn || isa<memref::DeallocOp, func::ReturnOp, ViewLikeOpInterface>(op) ||
        isPure(op))
      return WalkResult::advance();
    op->emitError("colo's CUDA kernels run nothing on the host but launches; this op is left "
                  "there: ")
        << *op;
    return WalkResult::interrupt();
  });
  if (walked.wasInterrupted())
    return failure();
  return kernel;
}

} // namespace

FailureOr<CudaKernels> compileCudaKernels(ModuleOp kernels, const CudaKernelOptions &options) {
  OwningOpRef<ModuleOp> module(cast<ModuleOp>(kernels->clone()));
  MLIRContext *ctx = kernels.getContext();
  DialectRegistry registry;
  registerCudaKernelCompilerDialects(registry);
  ctx->appendDialectRegistry(registry);
  PassManager pm(ctx, ModuleOp::getOperationName());
  buildCudaKernelPipeline(pm, options);
  if (failed(pm.run(*module)))
    return failure();

  CudaKernels out;
  llvm::StringMap<int> constantIndex;
  for (auto fn : module->getOps<func::FuncOp>()) {
    if (fn.isPrivate() || fn.isExternal())
      continue;
    FailureOr<CudaKernel> kernel = launchesOf(fn, out.constants, constantIndex);
    if (failed(kernel))
      return failure();
    out.kernels.push_back(std::move(*kernel));
  }
  for (auto binary : module->getOps<gpu::BinaryOp>()) {
    CudaModule m{binary.getSymName().str(), {}};
    for (Attribute attr : binary.getObjects()) {
      auto object = cast<gpu::ObjectAttr>(attr);
      auto target = cast<NVVM::NVVMTargetAttr>(object.getTarget());
      m.ptx.push_back({target.getChip().str(), object.getObject().getValue().str()});
    }
    out.modules.push_back(std::move(m));
  }
  return out;
}

} // namespace colo
