// colo compile: train-step pipeline, step programs (exec IR) and their
// passes, program.pb, kernels, state.
#include "colo/Compiler/Compiler.h"

#include "ExecutableBuilder.h"
#include "StateWriter.h"

#include "colo/Analysis/ActivationStash.h"
#include "colo/Codegen/KernelCompiler.h"
#include "colo/Passes/Passes.h"
#include "colo/Runtime/Verify.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <fstream>

using namespace mlir;
using namespace colo;

namespace {
LogicalResult writeText(ModuleOp where, StringRef path, Operation *op) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return where.emitError() << "cannot write '" << path << "': " << ec.message();
  op->print(os);
  os << "\n"; // as colo-opt ends its output
  return success();
}
} // namespace

/// The first kernel of `program` (or of one of its pipeline stages) with a
/// buffer outside device memory: the host's ops, which a GPU cannot run.
static std::string hostKernel(const runtime::Program &program) {
  for (const runtime::Step &step : program.steps())
    if (step.has_kernel())
      for (int32_t id : step.kernel().args())
        if (program.buffers(id).space() != runtime::Buffer::DEVICE)
          return step.kernel().symbol();
  for (const runtime::Program &stage : program.stages())
    if (std::string found = hostKernel(stage); !found.empty())
      return found;
  return "";
}

LogicalResult colo::compileTrainStep(ModuleOp module, StringRef exeDir,
                                     const CompileOptions &options) {
  TimingScope untimed;
  return compileTrainStep(module, exeDir, options, untimed);
}

namespace {
using DumpFn = llvm::function_ref<LogicalResult(StringRef, Operation *)>;

/// The train step's passes on `module`, its step programs (one, or one per
/// pipeline stage sharing `kernels`) and their passes, serialized and
/// checked: what compileTrainStep writes, before the kernels are compiled.
LogicalResult buildProgram(ModuleOp module, const CompileOptions &options, TimingScope &timing,
                           DumpFn dump, KernelLibrary &kernels, runtime::Program &out) {
  PassManager pm(module.getContext());
  std::string errors;
  llvm::raw_string_ostream es(errors);
  if (failed(buildCompilePipeline(pm, options, es)))
    return module.emitError() << errors;
  if (timing)
    pm.enableTiming(timing);
  if (failed(dump("0-forward.mlir", module)) || failed(pm.run(module)) ||
      failed(dump("1-train-step.mlir", module)))
    return failure();

  SmallVector<func::FuncOp> steps;
  ColoDialect::PipelineStageAttrHelper stageOf(module.getContext());
  for (auto f : module.getOps<func::FuncOp>())
    if (stageOf.isAttrPresent(f))
      steps.push_back(f);
  llvm::sort(steps, [&](func::FuncOp a, func::FuncOp b) {
    return stageOf.getAttr(a).getInt() < stageOf.getAttr(b).getInt();
  });
  if (steps.empty())
    steps.push_back(module.lookupSymbol<func::FuncOp>("train_step"));
  TimingScope phase = timing.nest("step programs");
  module.getContext()->getOrLoadDialect<exec::ExecDialect>();
  OwningOpRef<ModuleOp> programs = ModuleOp::create(module.getLoc());
  OpBuilder b = OpBuilder::atBlockEnd(programs->getBody());
  for (auto [i, step] : llvm::enumerate(steps)) {
    bool staged = steps.size() > 1;
    auto program = exec::ProgramOp::create(
        b, step.getLoc(), staged ? "stage" + std::to_string(i) : "train_step", nullptr,
        nullptr, nullptr, staged ? b.getI64IntegerAttr(i) : nullptr, nullptr, nullptr);
    program.getBody().emplaceBlock();
    if (failed(buildStepProgram(step, kernels, program, staged ? "s" + std::to_string(i) + "_" : "",
                                options.kernelPieces)))
      return failure();
  }
  PassManager stepPm(module.getContext());
  buildStepProgramPipeline(stepPm);
  if (timing)
    stepPm.enableTiming(phase);
  if (failed(stepPm.run(*programs)) || failed(dump("2-program.mlir", *programs)) ||
      failed(dump("3-kernels.mlir", kernels.module())))
    return failure();
  phase = timing.nest("serialize");
  FailureOr<runtime::Program> serialized = serializeExecutable(*programs);
  if (failed(serialized))
    return failure();
  out = std::move(*serialized);
  phase = timing.nest("verify shards and communication");
  if (std::string problem = runtime::verifyShards(out); !problem.empty())
    return module.emitError() << "the per-rank programs do not shard the state correctly: "
                              << problem;
  if (std::string problem = runtime::verifyCommunication(out); !problem.empty())
    return module.emitError() << "the per-rank programs do not communicate correctly: "
                              << problem;
  return success();
}

/// The device memory the largest rank's program plans.
int64_t largestPlanned(const runtime::Program &program) {
  int64_t most = runtime::plannedMemory(program).total();
  for (const runtime::Program &stage : program.stages())
    most = std::max(most, runtime::plannedMemory(stage).total());
  return most;
}

/// The largest of the MiB options that `budget` selects (recompute=budget's
/// activations, or the parameter chunks kept resident) whose program fits
/// options.deviceMemory (the least recomputation, the fewest fetches), by
/// bisection over trial compilations without kernels; if none fits, the
/// smallest the pass accepts, so that the real compilation says by how much
/// it overflows.
double chooseLargestFitting(ModuleOp module, const CompileOptions &options,
                            double CompileOptions::*budget) {
  constexpr double kMiB = 1024.0 * 1024.0;
  // The planned bytes with `mb`, or nothing where the pass finds the budget
  // too small for any choice.
  auto plannedWith = [&](double mb) -> std::optional<int64_t> {
    OwningOpRef<ModuleOp> trial = module.clone();
    CompileOptions o = options;
    o.*budget = mb;
    ScopedDiagnosticHandler quiet(module.getContext(), [](Diagnostic &) { return success(); });
    KernelLibrary kernels(module.getContext());
    runtime::Program program;
    TimingScope untimed;
    if (failed(buildProgram(*trial, o, untimed,
                            [](StringRef, Operation *) { return success(); }, kernels,
                            program)))
      return std::nullopt;
    return largestPlanned(program);
  };
  double hi = double(options.deviceMemory) / kMiB, lo = 0;
  if (std::optional<int64_t> all = plannedWith(hi); all && *all <= options.deviceMemory)
    return hi;
  std::optional<double> best, accepted;
  for (int i = 0; i < 10; ++i) {
    double mid = (lo + hi) / 2;
    std::optional<int64_t> planned = plannedWith(mid);
    if (planned)
      accepted = mid;
    if (planned && *planned <= options.deviceMemory) {
      best = mid;
      lo = mid;
    } else if (planned) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return best ? *best : accepted.value_or(hi);
}

/// `given` with the budgets the passes plan for chosen from its device
/// memory: recompute=budget's activations, offload=optimizer+params's
/// resident chunks.
FailureOr<CompileOptions> chooseBudgets(ModuleOp module, const CompileOptions &given) {
  CompileOptions options = given;
  if (options.plan.recompute == planner::Recompute::Budget) {
    if (options.deviceMemory <= 0)
      options.deviceMemory = options.plan.deviceMemory; // as the planner chose it
    if (options.deviceMemory <= 0)
      return module.emitError("recompute=budget recomputes as little as fits the device: give "
                              "the device's memory with colo compile --device-memory (or the plan file's "
                              "device_memory)");
    if (options.recomputeBudgetMb <= 0)
      options.recomputeBudgetMb =
          chooseLargestFitting(module, options, &CompileOptions::recomputeBudgetMb);
  }
  if (options.plan.offload == planner::Offload::OptimizerParams && options.deviceMemory > 0 &&
      options.residentMb < 0)
    options.residentMb = chooseLargestFitting(module, options, &CompileOptions::residentMb);
  return options;
}
} // namespace

FailureOr<CompiledStep> colo::compileStepFootprint(ModuleOp module,
                                                   const CompileOptions &given) {
  FailureOr<CompileOptions> options = chooseBudgets(module, given);
  if (failed(options))
    return failure();
  KernelLibrary kernels(module.getContext());
  runtime::Program program;
  TimingScope untimed;
  CompiledStep step;
  // The stash is read where the train step is built, before its lowering.
  auto measureStash = [&](StringRef phase, Operation *) {
    if (phase != "1-train-step.mlir" || options->plan.pp > 1 || options->plan.microBatches > 1)
      return success();
    auto train = module.lookupSymbol<func::FuncOp>("train_step");
    Operation *loss = returnedLoss(train);
    if (!loss)
      return success();
    step.stashBytes = 0;
    for (const StashedActivation &a : stashedActivations(train, loss))
      step.stashBytes += a.bytes;
    return success();
  };
  if (failed(buildProgram(module, *options, untimed, measureStash, kernels, program)))
    return failure();
  step.memory = runtime::plannedMemory(program);
  const runtime::Program *most = &program;
  for (const runtime::Program &stage : program.stages())
    if (runtime::PlannedMemory m = runtime::plannedMemory(stage);
        m.total() > step.memory.total()) {
      step.memory = m;
      most = &stage;
    }
  step.program = *most;
  step.kernels = cast<ModuleOp>(kernels.module()->clone());
  module.walk([&](Operation *op) {
    step.recomputedOps += ColoDialect::RecomputedAttrHelper(op->getContext()).isAttrPresent(op);
  });
  return step;
}

LogicalResult colo::compileTrainStep(ModuleOp module, StringRef exeDir,
                                     const CompileOptions &given, TimingScope &timing) {
  auto dump = [&](StringRef name, Operation *op) -> LogicalResult {
    if (given.dumpIrDir.empty())
      return success();
    if (std::error_code ec = llvm::sys::fs::create_directories(given.dumpIrDir))
      return module.emitError() << "cannot create '" << given.dumpIrDir
                                << "': " << ec.message();
    SmallString<256> path(given.dumpIrDir);
    llvm::sys::path::append(path, name);
    return writeText(module, path, op);
  };

  if (given.target != "cpu" && given.target != "cuda")
    return module.emitError() << "unknown target '" << given.target << "' (cpu or cuda)";
  if (given.kernelPieces < 1)
    return module.emitError() << "kernel pieces (--kernel-pieces) must be at least 1, got "
                              << given.kernelPieces;
  FailureOr<CompileOptions> chosen = chooseBudgets(module, given);
  if (failed(chosen))
    return failure();
  const CompileOptions &options = *chosen;
  KernelLibrary kernels(module.getContext());
  runtime::Program program;
  if (failed(buildProgram(module, options, timing, dump, kernels, program)))
    return failure();
  TimingScope phase = timing.nest("device memory");
  if (options.deviceMemory > 0) {
    if (std::string problem = runtime::verifyDeviceMemory(program, options.deviceMemory);
        !problem.empty())
      return module.emitError() << problem << " (recompute=full or budget, offload=optimizer "
                                << "or optimizer+params, ZeRO or more ranks hold less)";
    program.set_device_memory(options.deviceMemory);
  }

  if (options.target == "cuda")
    if (std::string host = hostKernel(program); !host.empty())
      return module.emitError()
             << "--target cuda runs every kernel on the GPU, and this plan computes on the "
                "host: kernel '"
             << host << "' reads or writes host memory (offload=optimizer and "
             << "optimizer+params update on the host; offload=activations alone does not)";

  if (std::error_code ec = llvm::sys::fs::create_directories(exeDir))
    return module.emitError() << "cannot create '" << exeDir << "': " << ec.message();
  auto in = [&](StringRef file) {
    SmallString<256> path(exeDir);
    llvm::sys::path::append(path, file);
    return std::string(path);
  };
  if (options.target == "cuda")
    program.set_target("cuda");
  // Before program.pb: the state's fills and specs go into the program.
  phase = timing.nest("initial state and program.pb");
  if (failed(writeInitialState(program, module, in("state.safetensors"))))
    return failure();
  {
    // Deterministic: map fields (param_names) in key order, so that the same
    // program always gives the same bytes.
    std::string bytes;
    bool serialized;
    {
      google::protobuf::io::StringOutputStream raw(&bytes);
      google::protobuf::io::CodedOutputStream coded(&raw);
      coded.SetSerializationDeterministic(true);
      serialized = program.SerializeToCodedStream(&coded);
    }
    std::ofstream os(in("program.pb"), std::ios::binary);
    if (!serialized || !os.write(bytes.data(), std::streamsize(bytes.size())) || !os.flush())
      return module.emitError() << "cannot write '" << in("program.pb") << "'";
  }
  if (options.dumpIrDir.size()) {
    std::ofstream os(in("program.txt"));
    os << program.DebugString();
  }
  if (options.target == "cuda") {
    phase = timing.nest("kernels.cuda.pb");
    return writeCudaKernels(kernels.module(), in("kernels.cuda.pb"), options.dumpIrDir);
  }
  phase = timing.nest("kernels.so");
  KernelCompileOptions kernelOptions;
  kernelOptions.timing = &phase;
  kernelOptions.cacheDir = defaultKernelCacheDir();
  return compileKernels(kernels.module(), in("kernels.so"), kernelOptions);
}
