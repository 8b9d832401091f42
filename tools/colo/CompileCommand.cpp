// colo compile: a model into an executable training step for the CPU runtime;
// colo train: compile, then run it (the options of both commands).
#include "Commands.h"

#include "colo/Compiler/Compiler.h"
#include "colo/Driver/Driver.h"
#include "colo/Planner/Plan.h"

#include "llvm/Support/Path.h"

using namespace llvm;
using namespace colo::tool;

namespace {
cl::SubCommand compileCmd("compile",
                          "Compile a model's training step (loss, backward, "
                          "optimizer) into an executable directory for 'colo run'");
cl::opt<std::string> compileInput(cl::Positional,
                                  cl::desc("<model.onnx|model.pt|model.mlir>"),
                                  cl::Required, cl::sub(compileCmd),
                                  cl::sub(trainCommand()));
cl::opt<std::string> compileOutput("o", cl::desc("The executable directory to write"),
                                   cl::value_desc("dir"), cl::Required,
                                   cl::sub(compileCmd));
cl::opt<std::string> compileTrain(
    "train",
    cl::desc("The training step, as key=value pairs separated by commas: "
             "loss=cross-entropy|lm|mse|output, optimizer=sgd|adam|adamw|lamb|lars, "
             "lr, momentum, nesterov, dampening, beta1, beta2, eps, weight-decay, "
             "max-grad-norm, schedule=constant|cosine, warmup-steps, total-steps, "
             "ignore-index, label-smoothing, trust-coefficient, seed, "
             "precision=fp32|bf16|fp16, loss-scale=none|dynamic|N, init-scale, "
             "scale-window (default: loss=cross-entropy,optimizer=adamw,lr=1e-3)"),
    cl::value_desc("options"), cl::sub(compileCmd),
    cl::sub(trainCommand()));
cl::list<std::string> compileShapes(
    "input-shape",
    cl::desc("Shape of a model input, e.g. 2x16xi64 (needed for TorchScript)"),
    cl::value_desc("shape"), cl::sub(compileCmd),
    cl::sub(trainCommand()));
cl::opt<std::string> compileDumpIr(
    "dump-ir",
    cl::desc("Write the IR of each stage (forward, train step, kernels) and the "
             "readable program into this directory"),
    cl::value_desc("dir"), cl::sub(compileCmd),
    cl::sub(trainCommand()));
cl::opt<std::string> compilePlan(
    "plan",
    cl::desc("Spread the step over ranks: a plan file (colo plan -o) or inline, "
             "e.g. dp=2,tp=2 (docs/plan-format.md)"),
    cl::value_desc("plan"), cl::sub(compileCmd), cl::sub(trainCommand()));
cl::opt<double> compileBucketMb(
    "bucket-mb",
    cl::desc("Data parallelism: gradient MiB per all-reduce (default 25)"),
    cl::init(25.0), cl::sub(compileCmd), cl::sub(trainCommand()));
cl::opt<int64_t> compileKernelPieces(
    "kernel-pieces",
    cl::desc("Split kernels whose rows are independent into this many calls that "
             "'colo run' spreads over its threads (halved where it does not divide; "
             "1: keep every kernel whole; results are the same bits either way)"),
    cl::init(8), cl::sub(compileCmd), cl::sub(trainCommand()));
cl::opt<std::string> trainExeDir(
    "exe-dir",
    cl::desc("Where to write the executable (default: <model name>.colo in the "
             "current directory)"),
    cl::value_desc("dir"), cl::sub(trainCommand()));
} // namespace

cl::SubCommand &colo::tool::compileCommand() { return compileCmd; }

cl::SubCommand &colo::tool::trainCommand() {
  static cl::SubCommand cmd("train", "Compile a model's training step and run it: "
                                     "'colo compile' then 'colo run'");
  return cmd;
}

/// The parts of `text`'s plan that the plan passes implement; anything else is
/// rejected by name before anything is compiled.
static FailureOr<colo::ParallelOptions> parallelOptions(StringRef text) {
  colo::ParallelOptions options;
  options.bucketMb = compileBucketMb;
  if (!(options.bucketMb > 0))
    return reportError("--bucket-mb must be positive"), failure();
  if (text.empty())
    return options;
  Expected<colo::planner::Plan> plan = colo::planner::parsePlan(text);
  if (!plan)
    return reportError("invalid --plan: " + toString(plan.takeError())), failure();
  auto unsupported = [&](StringRef what) {
    reportError("--plan " + plan->str() + ": " + what +
                " is not implemented yet (data, tensor and pipeline parallelism, "
                "ZeRO and microbatches are)");
    return failure();
  };
  if (plan->pp > 1 && plan->zero > 1)
    return unsupported("ZeRO stage 2 or 3 with pipeline parallelism");
  // colo-pipeline-stages checks the ends against the model's layers.
  int64_t chunks = plan->pp * plan->virtualStages;
  if (!plan->stages.empty() && static_cast<int64_t>(plan->stages.size()) != chunks)
    return reportError("--plan " + plan->str() + ": it gives " + Twine(plan->stages.size()) +
                       " stages for pp x v = " + Twine(chunks) + " pipeline chunks"),
           failure();
  for (auto [i, range] : llvm::enumerate(plan->stages)) {
    int64_t begin = i ? plan->stages[i - 1].second : 0;
    if (range.first != begin || range.second <= range.first)
      return reportError("--plan " + plan->str() + ": stage " + Twine(i) + " is layers [" +
                         Twine(range.first) + ", " + Twine(range.second) +
                         "); the stages must cover the layers in order from 0, "
                         "without gaps"),
             failure();
    options.stageLayerEnds.push_back(range.second);
  }
  if (plan->zero > 3)
    return reportError("--plan " + plan->str() + ": ZeRO stage " + Twine(plan->zero) +
                       " is not implemented (stages 1, 2 and 3 are)"),
           failure();
  if (plan->zero == 3 && plan->tp > 1)
    return unsupported("ZeRO stage 3 with tensor parallelism");
  if (plan->recompute != colo::planner::Recompute::None)
    return unsupported("recomputation");
  if (plan->offload != colo::planner::Offload::None)
    return unsupported("offload");
  options.dp = plan->dp;
  // colo-tensor-parallel reports sizes tp does not divide, on the op.
  options.tp = plan->tp;
  // The parser rejects sp without tp; colo-sequence-parallel reports token
  // counts tp does not divide, on the op.
  options.sequenceParallel = plan->sequenceParallel;
  // The parser rejects vocab without tp; colo-vocab-parallel reports a
  // vocabulary tp does not divide.
  if (plan->vocabParallel && (plan->pp > 1 || plan->microBatches > 1))
    return unsupported("vocab parallelism with pipeline parallelism or microbatches");
  options.vocabParallel = plan->vocabParallel;
  options.zero = plan->zero;
  options.pp = plan->pp;
  options.micro = plan->microBatches;
  options.virtualStages = plan->virtualStages;
  // colo-ulysses reports sequences and heads sp does not divide, on the op.
  if (plan->ulysses > 1 && (plan->tp > 1 || plan->pp > 1 || plan->microBatches > 1))
    return unsupported("ulysses with tensor or pipeline parallelism or microbatches");
  options.ulysses = plan->ulysses;
  if (plan->schedule != colo::planner::Schedule::None)
    options.schedule = colo::planner::scheduleName(plan->schedule).str();
  else if (plan->virtualStages > 1)
    options.schedule = "interleaved";
  return options;
}

int colo::tool::compileModel(mlir::MLIRContext &ctx, StringRef model, StringRef exeDir,
                             StringRef train, ArrayRef<std::string> inputShapes,
                             StringRef dumpIr) {
  OneLineDiagnostics diagnostics(ctx);
  colo::ImportOptions importOptions;
  importOptions.inputShapes.assign(inputShapes.begin(), inputShapes.end());
  auto module = colo::importModel(model, ctx, importOptions);
  if (failed(module)) {
    if (!diagnostics.reported())
      reportError("import of '" + model + "' failed");
    return 1;
  }
  FailureOr<colo::ParallelOptions> parallel = parallelOptions(compilePlan);
  if (failed(parallel))
    return 1;
  colo::CompileOptions options;
  options.parallel = *parallel;
  options.train = train.str();
  options.dumpIrDir = dumpIr.str();
  if (compileKernelPieces < 1) {
    reportError("--kernel-pieces must be at least 1, got " +
                std::to_string(compileKernelPieces));
    return 1;
  }
  options.kernelPieces = compileKernelPieces;
  if (failed(colo::compileTrainStep(**module, exeDir, options))) {
    if (!diagnostics.reported())
      reportError("compilation of '" + model + "' failed");
    return 1;
  }
  return 0;
}

int colo::tool::runCompile(mlir::MLIRContext &ctx) {
  if (int rc = compileModel(ctx, compileInput, compileOutput, compileTrain,
                            compileShapes, compileDumpIr))
    return rc;
  outs() << "compiled " << compileInput << " -> " << compileOutput << "\n";
  return 0;
}

int colo::tool::runTrain(mlir::MLIRContext &ctx) {
  std::string dir = trainExeDir;
  if (dir.empty())
    dir = (sys::path::stem(compileInput) + ".colo").str();
  if (int rc = compileModel(ctx, compileInput, dir, compileTrain, compileShapes,
                            compileDumpIr))
    return rc;
  outs() << "compiled " << compileInput << " -> " << dir << "\n";
  return runExecutable(dir);
}
