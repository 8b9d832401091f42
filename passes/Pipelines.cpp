#include "colo/Passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <algorithm>

namespace colo {
#define GEN_PASS_REGISTRATION
#include "colo/Passes/Passes.h.inc"
} // namespace colo

void colo::buildImportPipeline(mlir::OpPassManager &pm) {
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(createColoRaiseLayerNorm());
  pm.addPass(createColoRaiseRmsNorm());
  pm.addPass(createColoRaiseGelu());
  pm.addPass(createColoRaiseSilu());
  pm.addPass(createColoRaiseAttention());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}

mlir::LogicalResult colo::buildTrainStepPipeline(mlir::OpPassManager &pm,
                                                 llvm::StringRef options,
                                                 const ParallelOptions &parallel,
                                                 llvm::raw_ostream &errors) {
  if (parallel.dp > 1)
    pm.addPass(createColoSplitBatch(ColoSplitBatchOptions{parallel.dp}));
  // The CLI writes "loss=lm,lr=3e-4"; pass options are separated by spaces.
  std::string spaced = options.str();
  std::replace(spaced.begin(), spaced.end(), ',', ' ');
  std::unique_ptr<mlir::Pass> pass = createColoBuildTrainStep();
  if (failed(pass->initializeOptions(spaced, [&](const llvm::Twine &msg) {
        errors << msg;
        return mlir::failure();
      })))
    return mlir::failure();
  pm.addPass(std::move(pass));
  if (parallel.dp > 1)
    pm.addPass(createColoDataParallel(
        ColoDataParallelOptions{parallel.dp, parallel.bucketMb}));
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  return mlir::success();
}

void colo::registerPassesAndPipelines() {
  registerColoPasses();
  mlir::PassPipelineRegistration<>(
      "colo-import-pipeline",
      "Cleans up an imported graph: canonicalize, raise norms, GELU and "
      "attention, CSE",
      buildImportPipeline);
}
