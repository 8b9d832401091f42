#include "colo/Passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

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

void colo::registerPassesAndPipelines() {
  registerColoPasses();
  mlir::PassPipelineRegistration<>(
      "colo-import-pipeline",
      "Cleans up an imported graph: canonicalize, raise norms, GELU and "
      "attention, CSE",
      buildImportPipeline);
}
