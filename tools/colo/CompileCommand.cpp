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
cl::list<std::string> compileFreeze("freeze", cl::desc(kFreezeHelp), cl::value_desc("pattern"),
                                   cl::CommaSeparated, cl::sub(compileCmd),
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
cl::opt<bool> compileTiming(
    "timing",
    cl::desc("Print how long the import, each pass and each later phase took (MLIR's "
             "pass timing, on stderr)"),
    cl::sub(compileCmd), cl::sub(trainCommand()));
cl::opt<int64_t> compileKernelPieces(
    "kernel-pieces",
    cl::desc("Split kernels whose rows are independent into this many calls that "
             "'colo run' spreads over its threads (halved where it does not divide; "
             "1: keep every kernel whole; results are the same bits either way)"),
    cl::init(8), cl::sub(compileCmd), cl::sub(trainCommand()));
cl::opt<std::string> compileTarget(
    "target",
    cl::desc("The device the kernels are compiled for: cpu (kernels.so; the default) or cuda "
             "(kernels.cuda.pb: PTX for sm_80 and sm_90 and each kernel's launches; "
             "'colo run' cannot run it yet, docs/cuda.md)"),
    cl::init("cpu"), cl::sub(compileCmd));
cl::opt<double> compileChunkMb(
    "chunk-mb",
    cl::desc("offload=optimizer+params: the most MiB of parameters one chunk holds; chunks "
             "are fetched to the device whole, in the order the step first reads them "
             "(default 32)"),
    cl::init(32), cl::sub(compileCmd), cl::sub(trainCommand()));
cl::opt<std::string> compileDeviceMemory(
    "device-memory",
    cl::desc("The device memory each rank has: bytes, or with K, M, G (binary). A step "
             "that plans more is an error; 'colo run' caps each rank at it"),
    cl::value_desc("SIZE"), cl::sub(compileCmd));
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

int colo::tool::compileModel(mlir::MLIRContext &ctx, StringRef model, StringRef exeDir,
                             StringRef train, StringRef dumpIr) {
  if (compileTarget != "cpu" && compileTarget != "cuda")
    return reportError("--target '" + compileTarget + "' is not a target (cpu or cuda)");
  OneLineDiagnostics diagnostics(ctx);
  mlir::DefaultTimingManager timingManager;
  timingManager.setEnabled(compileTiming);
  timingManager.setDisplayMode(mlir::DefaultTimingManager::DisplayMode::Tree);
  mlir::TimingScope timing = timingManager.getRootScope();
  colo::ImportOptions importOptions;
  importOptions.inputShapes.assign(compileShapes.begin(), compileShapes.end());
  importOptions.freeze.assign(compileFreeze.begin(), compileFreeze.end());
  mlir::TimingScope importTiming = timing.nest("import");
  auto module = colo::importModel(model, ctx, importOptions);
  importTiming.stop();
  if (failed(module)) {
    if (!diagnostics.reported())
      reportError("import of '" + model + "' failed");
    return 1;
  }
  colo::CompileOptions options;
  if (!compilePlan.empty()) {
    Expected<colo::planner::Plan> plan = colo::planner::parsePlan(compilePlan);
    if (!plan)
      return reportError("invalid --plan: " + toString(plan.takeError()));
    options.plan = *plan;
  }
  options.bucketMb = compileBucketMb;
  std::string trainErrors;
  raw_string_ostream es(trainErrors);
  FailureOr<colo::TrainStepOptions> trainOptions = colo::parseTrainStepOptions(train, es);
  if (failed(trainOptions))
    return reportError("invalid --train options: " + trainErrors);
  options.train = *trainOptions;
  options.dumpIrDir = dumpIr.str();
  options.target = compileTarget;
  options.kernelPieces = compileKernelPieces;
  // Pieces spread a kernel over the CPU's threads; a GPU runs it whole.
  if (options.target == "cuda" && !compileKernelPieces.getNumOccurrences())
    options.kernelPieces = 1;
  if (!(compileChunkMb > 0))
    return reportError(formatv("--chunk-mb must be a positive number of MiB, got {0}",
                               compileChunkMb.getValue()));
  options.chunkMb = compileChunkMb;
  if (!compileDeviceMemory.empty()) {
    std::optional<int64_t> bytes = parseBytes(compileDeviceMemory);
    if (!bytes)
      return reportError("--device-memory '" + compileDeviceMemory +
                         "' is not a size (bytes, or a number with K, M or G)");
    options.deviceMemory = *bytes;
  }
  if (failed(colo::compileTrainStep(**module, exeDir, options, timing))) {
    if (!diagnostics.reported())
      reportError("compilation of '" + model + "' failed");
    return 1;
  }
  return 0;
}

int colo::tool::runCompile(mlir::MLIRContext &ctx) {
  if (int rc = compileModel(ctx, compileInput, compileOutput, compileTrain, compileDumpIr))
    return rc;
  outs() << "compiled " << compileInput << " -> " << compileOutput << "\n";
  return 0;
}

int colo::tool::runTrain(mlir::MLIRContext &ctx) {
  std::string dir = trainExeDir;
  if (dir.empty())
    dir = (sys::path::stem(compileInput) + ".colo").str();
  if (int rc = compileModel(ctx, compileInput, dir, compileTrain, compileDumpIr))
    return rc;
  outs() << "compiled " << compileInput << " -> " << dir << "\n";
  return runExecutable(dir);
}
