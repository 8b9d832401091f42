// The one way from an imported forward to @train_step: the plan's pass
// options, the train-step pipeline, and its registration for colo-opt.
#include "colo/Compiler/Compiler.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/Twine.h"

using namespace mlir;
using namespace colo;

llvm::Expected<ParallelOptions> colo::parallelOptionsFor(const planner::Plan &plan,
                                                         double bucketMb) {
  auto error = [&](const llvm::Twine &what) {
    return llvm::createStringError("plan " + plan.str() + ": " + what);
  };
  auto unsupported = [&](const llvm::Twine &what) {
    return error(what + " is not implemented yet (data, tensor and pipeline parallelism, "
                        "ZeRO, microbatches, recomputation and optimizer offload are)");
  };
  if (!(bucketMb > 0))
    return llvm::createStringError("the gradient bucket size (--bucket-mb) must be positive");
  if (llvm::Error e = planner::checkCompilable(plan))
    return unsupported(llvm::toString(std::move(e)));
  ParallelOptions options;
  options.bucketMb = bucketMb;
  // colo-pipeline-stages checks the ends against the model's layers.
  int64_t chunks = plan.pp * plan.virtualStages;
  if (!plan.stages.empty() && static_cast<int64_t>(plan.stages.size()) != chunks)
    return error("it gives " + llvm::Twine(plan.stages.size()) + " stages for pp x v = " +
                 llvm::Twine(chunks) + " pipeline chunks");
  for (auto [i, range] : llvm::enumerate(plan.stages)) {
    int64_t begin = i ? plan.stages[i - 1].second : 0;
    if (range.first != begin || range.second <= range.first)
      return error("stage " + llvm::Twine(i) + " is layers [" + llvm::Twine(range.first) +
                   ", " + llvm::Twine(range.second) +
                   "); the stages must cover the layers in order from 0, without gaps");
    options.stageLayerEnds.push_back(range.second);
  }
  if (plan.zero > 3)
    return error("ZeRO stage " + llvm::Twine(plan.zero) +
                 " is not implemented (stages 1, 2 and 3 are)");
  options.offloadOptimizer = plan.offload != planner::Offload::None;
  options.offloadParams = plan.offload == planner::Offload::OptimizerParams;
  options.offloadActivations = plan.offloadActivations;
  options.dp = plan.dp;
  switch (plan.recompute) {
  case planner::Recompute::None:
    break;
  case planner::Recompute::Selective:
    options.recompute = RecomputePolicy::Selective;
    break;
  case planner::Recompute::Full:
    options.recompute = RecomputePolicy::Full;
    break;
  case planner::Recompute::Budget:
    options.recompute = RecomputePolicy::Budget;
    break;
  }
  // colo-tensor-parallel reports sizes tp does not divide, on the op.
  options.tp = plan.tp;
  // colo-tensor-parallel-2d reports sizes the grid's side does not divide.
  options.tp2d = plan.tp2d;
  options.tp2dDepth = plan.tp2dDepth;
  options.tp3d = plan.tp3d;
  // The parser rejects sp without tp; colo-sequence-parallel reports token
  // counts tp does not divide, on the op.
  options.sequenceParallel = plan.sequenceParallel;
  // The parser rejects vocab without tp; colo-vocab-parallel reports a
  // vocabulary tp does not divide.
  options.vocabParallel = plan.vocabParallel;
  options.zero = plan.zero;
  options.localBatchNorm = plan.localBatchNorm;
  options.pp = plan.pp;
  options.micro = plan.microBatches;
  options.virtualStages = plan.virtualStages;
  // colo-ulysses reports sequences and heads sp does not divide, on the op.
  options.ulysses = plan.ulysses;
  // colo-ring-attention reports sequences the ring does not divide, on the op.
  options.ring = plan.ring;
  options.zigzag = plan.zigzag;
  switch (plan.schedule) {
  case planner::Schedule::GPipe:
    options.schedule = PipelineSchedule::GPipe;
    break;
  case planner::Schedule::OneFOneB:
    options.schedule = PipelineSchedule::OneFOneB;
    break;
  case planner::Schedule::Interleaved:
    options.schedule = PipelineSchedule::Interleaved;
    break;
  case planner::Schedule::ZeroBubbleH1:
    options.schedule = PipelineSchedule::ZeroBubbleH1;
    break;
  case planner::Schedule::None:
    if (plan.virtualStages > 1)
      options.schedule = PipelineSchedule::Interleaved;
    break;
  }
  return options;
}

LogicalResult colo::buildCompilePipeline(OpPassManager &pm, const CompileOptions &options,
                                         llvm::raw_ostream &errors) {
  llvm::Expected<ParallelOptions> parallel = parallelOptionsFor(options.plan, options.bucketMb);
  if (!parallel) {
    errors << llvm::toString(parallel.takeError());
    return failure();
  }
  parallel->recomputeBudgetMb = options.recomputeBudgetMb;
  parallel->residentMb = options.residentMb;
  parallel->chunkMb = options.chunkMb;
  std::string trainErrors;
  llvm::raw_string_ostream es(trainErrors);
  if (failed(buildTrainStepPipeline(pm, options.train, *parallel, es))) {
    errors << "invalid --train options: " << trainErrors;
    return failure();
  }
  // The CPU lowering computes the loss's positions in pieces.
  pm.addPass(createColoDecomposeLoss());
  pm.addPass(createCSEPass());
  return success();
}

namespace {
struct CompilePipelineOptions : PassPipelineOptions<CompilePipelineOptions> {
  Option<std::string> train{*this, "train",
                            llvm::cl::desc("The training step, as colo compile --train "
                                           "takes it: train={loss=lm,lr=3e-4}")};
  Option<std::string> plan{*this, "plan",
                           llvm::cl::desc("The plan, inline (plan={dp=2,tp=2}) or a plan "
                                          "file (default: one rank)")};
  Option<double> bucketMb{*this, "bucket-mb",
                          llvm::cl::desc("Data parallelism: gradient MiB per all-reduce"),
                          llvm::cl::init(25.0)};
};
} // namespace

void colo::registerCompilePipeline() {
  registerPassPipeline(
      "colo-train-step-pipeline",
      "From an imported forward to @train_step, as colo compile builds it: the plan's "
      "passes, the training step, the loss's CPU form",
      [](OpPassManager &pm, StringRef text,
         llvm::function_ref<LogicalResult(const llvm::Twine &)> errorHandler) {
        CompilePipelineOptions parsed;
        if (failed(parsed.parseFromString(text)))
          return failure();
        CompileOptions options;
        std::string trainErrors;
        llvm::raw_string_ostream trainStream(trainErrors);
        FailureOr<TrainStepOptions> train = parseTrainStepOptions(parsed.train, trainStream);
        if (failed(train))
          return errorHandler("invalid train options: " + trainErrors);
        options.train = *train;
        options.bucketMb = parsed.bucketMb;
        if (!parsed.plan.empty()) {
          llvm::Expected<planner::Plan> plan = planner::parsePlan(parsed.plan);
          if (!plan)
            return errorHandler("invalid plan: " + llvm::toString(plan.takeError()));
          options.plan = *plan;
        }
        std::string errors;
        llvm::raw_string_ostream es(errors);
        if (failed(buildCompilePipeline(pm, options, es)))
          return errorHandler(errors);
        return success();
      },
      [](llvm::function_ref<void(const detail::PassOptions &)> handler) {
        handler(CompilePipelineOptions());
      });
}
