// The pass sequences that the CLI, colo-opt and Python share: import and
// raising, and the training step with its plan's passes (not pipeline
// parallelism: that is Pipeline.cpp).
#include "colo/Passes/Passes.h"

#include "colo/Passes/PassEnums.cpp.inc"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"

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

void colo::buildStepProgramPipeline(mlir::OpPassManager &pm) {
  mlir::OpPassManager &program = pm.nest<exec::ProgramOp>();
  program.addPass(createColoOverlapCollectives());
  program.addPass(createColoInsertFrees());
  program.addPass(createColoPlanMemory());
}

namespace {
/// Whether `value` names a case of a pass enum; if not, says so with every
/// case ("unknown optimizer 'x' (expected sgd, adam, ... or lars)"). llvm::cl
/// would reject it too, but only on stderr, which Python never sees.
template <typename E>
bool checkCase(llvm::StringRef what, llvm::StringRef value,
               std::optional<E> (*symbolize)(llvm::StringRef),
               llvm::StringRef (*stringify)(E), unsigned maxValue, llvm::raw_ostream &errors) {
  if (symbolize(value))
    return true;
  llvm::SmallVector<llvm::StringRef> cases;
  for (unsigned i = 0; i <= maxValue; ++i)
    cases.push_back(stringify(static_cast<E>(i)));
  errors << "unknown " << what << " '" << value << "' (expected "
         << llvm::join(llvm::ArrayRef(cases).drop_back(), ", ") << " or " << cases.back()
         << ")";
  return false;
}

/// False, with the message, where `key` is an option with a fixed set of
/// values and `value` is none of them.
bool checkEnumValue(llvm::StringRef key, llvm::StringRef value, llvm::raw_ostream &errors) {
  using namespace colo;
  if (key == "precision")
    return checkCase<Precision>(key, value, symbolizePrecision, stringifyPrecision,
                                getMaxEnumValForPrecision(), errors);
  if (key == "loss")
    return checkCase<Loss>(key, value, symbolizeLoss, stringifyLoss, getMaxEnumValForLoss(),
                           errors);
  if (key == "optimizer")
    return checkCase<Optimizer>(key, value, symbolizeOptimizer, stringifyOptimizer,
                                getMaxEnumValForOptimizer(), errors);
  if (key == "schedule")
    return checkCase<LrSchedule>(key, value, symbolizeLrSchedule, stringifyLrSchedule,
                                 getMaxEnumValForLrSchedule(), errors);
  return true;
}
} // namespace

mlir::FailureOr<colo::TrainStepOptions>
colo::parseTrainStepOptions(llvm::StringRef text, llvm::raw_ostream &errors) {
  TrainStepOptions options;
  llvm::SmallVector<llvm::StringRef> words;
  llvm::SplitString(text, words, ", ");
  llvm::SmallVector<llvm::StringRef> stepWords;
  bool lossScaleGiven = false;
  for (llvm::StringRef word : words) {
    auto [key, value] = word.split('=');
    if (!checkEnumValue(key, value, errors))
      return mlir::failure();
    if (key == "precision") {
      options.precision = *symbolizePrecision(value);
      continue;
    }
    lossScaleGiven |= key == "loss-scale";
    stepWords.push_back(word);
  }
  // The option parser reports a bad value itself (on stderr) and calls the
  // handler with an empty message.
  std::string message;
  if (failed(parseBuildTrainStepOptions(llvm::join(stepWords, " "), options.step,
                                        [&](const llvm::Twine &msg) {
                                          message = msg.str();
                                          return mlir::failure();
                                        }))) {
    llvm::StringRef m = llvm::StringRef(message).trim();
    m.consume_front("<Pass-Options-Parser>: ");
    if (m.empty())
      errors << "cannot read '" << text << "' (key=value pairs separated by commas)";
    else
      errors << m;
    return mlir::failure();
  }
  if (options.precision == Precision::Fp16 && !lossScaleGiven)
    options.step.lossScale = "dynamic";
  return options;
}

mlir::LogicalResult colo::buildTrainStepPipeline(mlir::OpPassManager &pm,
                                                 const TrainStepOptions &train,
                                                 const ParallelOptions &parallel,
                                                 llvm::raw_ostream &errors) {
  int64_t sequenceRanks = parallel.ulysses * parallel.ring;
  if (parallel.dp > 1 || parallel.tp > 1 || parallel.pp > 1 || sequenceRanks > 1 ||
      parallel.tp2d > 1 || parallel.tp3d > 1)
    pm.addPass(createColoCreateMesh(ColoCreateMeshOptions{parallel.dp, parallel.tp, parallel.pp,
                                                          sequenceRanks, parallel.tp2d,
                                                          parallel.tp2dDepth, parallel.tp3d}));
  if (parallel.dp * parallel.micro > 1)
    pm.addPass(createColoSplitBatch(ColoSplitBatchOptions{
        parallel.dp * parallel.micro, parallel.localBatchNorm ? 1 : parallel.dp}));
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
  if (parallel.tp2d > 1)
    pm.addPass(
        createColoTensorParallel2D(ColoTensorParallel2DOptions{parallel.tp2d, parallel.tp2dDepth}));
  if (parallel.tp3d > 1)
    pm.addPass(createColoTensorParallel3D(ColoTensorParallel3DOptions{parallel.tp3d}));
  // After tensor parallelism, as DeepSpeed-Ulysses composes with Megatron:
  // the all-to-alls exchange the rank's tp heads.
  if (parallel.ulysses > 1)
    pm.addPass(createColoUlysses(ColoUlyssesOptions{parallel.ulysses}));
  // Likewise: each rank's tp heads go around the ring.
  if (parallel.ring > 1)
    pm.addPass(createColoRingAttention(ColoRingAttentionOptions{parallel.ring, parallel.zigzag}));
  if (parallel.sequenceParallel && parallel.tp < 2) {
    errors << "sequence parallelism needs tensor parallelism (tp > 1)";
    return mlir::failure();
  }
  if (parallel.sequenceParallel)
    pm.addPass(createColoSequenceParallel(ColoSequenceParallelOptions{parallel.tp}));
  if (train.precision != Precision::Fp32)
    pm.addPass(createColoAutocast(ColoAutocastOptions{train.precision}));
  bool pipelined = parallel.pp > 1 || parallel.micro > 1;
  if (pipelined)
    pm.addPass(createColoPipelineStages(
        ColoPipelineStagesOptions{parallel.pp * parallel.virtualStages,
                                  llvm::SmallVector<int64_t>(parallel.stageLayerEnds.begin(),
                                                             parallel.stageLayerEnds.end())}));
  // LAMB and LARS trust ratios need norms of whole parameters, which their
  // update ops compute on what the rank holds: under tensor parallelism,
  // blocks of the sharded parameters.
  if (parallel.tp > 1 && (train.step.optimizer == Optimizer::Lamb ||
                         train.step.optimizer == Optimizer::Lars)) {
    errors << "lamb and lars are not implemented with tensor parallelism yet "
              "(their trust ratios need norms of whole parameters, of which each "
              "tp rank holds a block)";
    return mlir::failure();
  }
  pm.addPass(createColoBuildTrainStep(train.step));
  // Before colo-pipeline, which schedules each microbatch's recomputation
  // with its backward.
  if (parallel.recompute != RecomputePolicy::None)
    pm.addPass(createColoRecompute(
        ColoRecomputeOptions{parallel.recompute, parallel.recomputeBudgetMb}));
  // After colo-recompute, whose kept checkpoints it moves, and before
  // colo-pipeline, which clones each transfer with its microbatch.
  if (parallel.offloadActivations)
    pm.addPass(createColoOffloadActivations(ColoOffloadActivationsOptions{parallel.chunkMb}));
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
  // After the plan's passes, on what each rank updates, and after the
  // gradients' markers are gone, so that each transfer follows the op that
  // computes its gradient.
  if (parallel.offloadOptimizer) {
    pm.addPass(createColoOffload(ColoOffloadOptions{
        /*optimizer=*/true, parallel.offloadParams, parallel.chunkMb, parallel.residentMb}));
    pm.addPass(mlir::createCSEPass());
  }
  return mlir::success();
}

void colo::registerPassesAndPipelines() {
  registerColoPasses();
  mlir::PassPipelineRegistration<>(
      "colo-import-pipeline",
      "Cleans up an imported graph: canonicalize, raise norms, GELU and "
      "attention, CSE",
      buildImportPipeline);
  mlir::PassPipelineRegistration<>(
      "colo-step-program-pipeline",
      "Schedules the step programs of a module and plans their memory: "
      "overlap collectives, insert frees, plan memory",
      buildStepProgramPipeline);
}
