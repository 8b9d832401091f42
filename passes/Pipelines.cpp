#include "colo/Passes/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <optional>

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

/// Whether the optimizer needs norms of whole parameters (LAMB and LARS
/// trust ratios), which its update ops compute on what the rank holds: under
/// tensor parallelism, blocks of the sharded parameters.
static bool needsWholeNorms(llvm::StringRef spacedOptions) {
  llvm::SmallVector<llvm::StringRef> words;
  spacedOptions.split(words, ' ', -1, /*KeepEmpty=*/false);
  return llvm::any_of(words, [](llvm::StringRef word) {
    auto [key, value] = word.split('=');
    return key == "optimizer" && (value == "lamb" || value == "lars");
  });
}

/// Removes `key=value` from the comma-separated `options` and returns the
/// value (the last, if repeated): keys that choose passes rather than
/// configure colo-build-train-step.
static std::optional<std::string> takeOption(std::string &options, llvm::StringRef key) {
  llvm::SmallVector<llvm::StringRef> words, kept;
  llvm::StringRef(options).split(words, ',', -1, /*KeepEmpty=*/false);
  std::optional<std::string> value;
  for (llvm::StringRef word : words) {
    auto [k, v] = word.split('=');
    if (k.trim() == key)
      value = v.trim().str();
    else
      kept.push_back(word);
  }
  options = llvm::join(kept, ",");
  return value;
}

mlir::LogicalResult colo::buildTrainStepPipeline(mlir::OpPassManager &pm,
                                                 llvm::StringRef trainOptions,
                                                 const ParallelOptions &parallel,
                                                 llvm::raw_ostream &errors) {
  std::string options = trainOptions.str();
  std::replace(options.begin(), options.end(), ' ', ',');
  if (parallel.dp > 1 || parallel.tp > 1 || parallel.pp > 1 || parallel.ulysses > 1)
    pm.addPass(createColoCreateMesh(ColoCreateMeshOptions{
        parallel.dp, parallel.tp, parallel.pp, parallel.ulysses}));
  if (parallel.dp * parallel.micro > 1)
    pm.addPass(createColoSplitBatch(ColoSplitBatchOptions{parallel.dp * parallel.micro}));
  if (parallel.ulysses > 1)
    pm.addPass(createColoUlysses(ColoUlyssesOptions{parallel.ulysses}));
  if (parallel.vocabParallel && parallel.tp < 2) {
    errors << "vocab parallelism needs tensor parallelism (tp > 1)";
    return mlir::failure();
  }
  // Before colo-tensor-parallel, so that it leaves the split LM head alone.
  if (parallel.vocabParallel)
    pm.addPass(createColoVocabParallel(ColoVocabParallelOptions{parallel.tp}));
  // The backward is derived from the sharded forward.
  if (parallel.tp > 1)
    pm.addPass(createColoTensorParallel(ColoTensorParallelOptions{parallel.tp}));
  if (parallel.sequenceParallel && parallel.tp < 2) {
    errors << "sequence parallelism needs tensor parallelism (tp > 1)";
    return mlir::failure();
  }
  if (parallel.sequenceParallel)
    pm.addPass(createColoSequenceParallel(ColoSequenceParallelOptions{parallel.tp}));
  std::string precision = takeOption(options, "precision").value_or("fp32");
  if (precision != "fp32" && precision != "bf16" && precision != "fp16") {
    errors << "unknown precision '" << precision << "' (expected fp32, bf16 or fp16)";
    return mlir::failure();
  }
  if (precision != "fp32")
    pm.addPass(createColoAutocast(ColoAutocastOptions{precision}));
  // fp16 gradients overflow and underflow without it (bf16 has f32's range).
  if (precision == "fp16" && !llvm::StringRef(options).contains("loss-scale="))
    options += ",loss-scale=dynamic";
  bool pipelined = parallel.pp > 1 || parallel.micro > 1;
  if (pipelined)
    pm.addPass(createColoPipelineStages(
        ColoPipelineStagesOptions{parallel.pp * parallel.virtualStages,
                                  llvm::SmallVector<int64_t>(parallel.stageLayerEnds.begin(),
                                                             parallel.stageLayerEnds.end())}));
  // The CLI writes "loss=lm,lr=3e-4"; pass options are separated by spaces.
  std::string spaced = options;
  std::replace(spaced.begin(), spaced.end(), ',', ' ');
  if (parallel.tp > 1 && needsWholeNorms(spaced)) {
    errors << "lamb and lars are not implemented with tensor parallelism yet "
              "(their trust ratios need norms of whole parameters, of which each "
              "tp rank holds a block)";
    return mlir::failure();
  }
  std::unique_ptr<mlir::Pass> pass = createColoBuildTrainStep();
  if (failed(pass->initializeOptions(spaced, [&](const llvm::Twine &msg) {
        errors << msg;
        return mlir::failure();
      })))
    return mlir::failure();
  pm.addPass(std::move(pass));
  if (pipelined)
    pm.addPass(createColoPipeline(ColoPipelineOptions{
        parallel.pp, parallel.virtualStages, parallel.micro, parallel.schedule}));
  // Data parallelism and ZeRO apply to each pipeline rank's function.
  for (int64_t r = 0; r < parallel.pp; ++r) {
    std::string func =
        parallel.pp > 1 ? "train_step_stage" + std::to_string(r) : "train_step";
    if (parallel.dp > 1 && parallel.zero > 0)
      pm.addPass(createColoZero(
          ColoZeroOptions{parallel.zero, parallel.dp, parallel.bucketMb, func}));
    else if (parallel.dp > 1)
      pm.addPass(createColoDataParallel(
          ColoDataParallelOptions{parallel.dp, parallel.bucketMb, func}));
  }
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
