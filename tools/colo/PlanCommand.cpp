// colo plan: predict the time and memory of parallel plans on a cluster and
// search for the fastest that fits.
#include "Commands.h"

#include "colo/Compiler/Compiler.h"
#include "colo/Driver/Driver.h"
#include "colo/Models/SyntheticModels.h"
#include "colo/Planner/Search.h"
#include "colo/Planner/StepTimes.h"
#include "colo/Runtime/MemoryTimeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <mutex>

using namespace llvm;
using namespace colo::tool;
using namespace colo::planner;

namespace {
cl::SubCommand planCmd("plan", "Predict and search parallel training plans");
cl::opt<std::string> planModel(cl::Positional,
                               cl::desc("<model.mlir|model.onnx|model.pt|preset>"),
                               cl::Required, cl::sub(planCmd));
cl::opt<std::string> planCluster("cluster",
                                 cl::desc("Cluster: preset[:NODESxDEVICES] or JSON file"),
                                 cl::Required, cl::sub(planCmd));
cl::opt<int64_t> planBatch("global-batch", cl::desc("Samples per training step"),
                           cl::sub(planCmd));
cl::opt<int64_t> planSeq("seq", cl::desc("Sequence length (for a preset model)"),
                         cl::sub(planCmd));
cl::opt<int64_t> planTop("top", cl::desc("Plans to list (default 10)"), cl::init(10),
                         cl::sub(planCmd));
cl::opt<bool> planJson("json", cl::desc("Print JSON"), cl::sub(planCmd));
cl::opt<std::string> planOutput("o", cl::desc("Write the best plan to this plan file"),
                                cl::value_desc("plan.json"), cl::sub(planCmd));
cl::opt<std::string> planExplain(
    "explain", cl::desc("Explain one plan (inline dp=..,tp=.. or a plan file) instead "
                        "of searching"),
    cl::value_desc("plan"), cl::sub(planCmd));
cl::opt<std::string> planTrain(
    "train",
    cl::desc("With --explain: also compile the step for the plan with these training options "
             "(as colo compile --train; no kernels, nothing written) and report what the "
             "compiled program holds per rank beside the prediction"),
    cl::value_desc("options"), cl::sub(planCmd));
cl::opt<std::string> planTimeline(
    "timeline",
    cl::desc("With --explain and --train: draw the device and host memory the compiled "
             "program holds over one step, over the cost model's time for each of its steps "
             "(offload, prefetch and recompute marked), into this SVG file"),
    cl::value_desc("memory.svg"), cl::sub(planCmd));
cl::opt<bool> planNoOffload("no-offload", cl::desc("Do not consider offload"),
                            cl::sub(planCmd));
cl::opt<bool> planOffloadActivations(
    "offload-activations",
    cl::desc("Also consider keeping the activations the backward reads in host memory "
             "(offload=activations; its copies need each device's host link through the "
             "whole forward and backward, and a cluster gives one device's link alone)"),
    cl::sub(planCmd));
cl::opt<bool> planNoRecompute("no-recompute",
                              cl::desc("Do not consider activation recomputation"),
                              cl::sub(planCmd));
cl::opt<bool> planVocabParallel(
    "vocab-parallel",
    cl::desc("Split the embedding and LM head over the vocabulary under tensor "
             "parallelism, as Megatron-LM does (the plan key vocab)"),
    cl::sub(planCmd));
cl::opt<unsigned> planThreads("threads", cl::desc("Search threads (default: all cores)"),
                              cl::init(0), cl::sub(planCmd));
cl::list<std::string> planShapes("input-shape",
                                 cl::desc("Input shapes of a TorchScript model"),
                                 cl::sub(planCmd));
cl::list<std::string> planFreeze("freeze", cl::desc(kFreezeHelp), cl::value_desc("pattern"),
                                 cl::CommaSeparated, cl::sub(planCmd));

mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>> loadModel(mlir::MLIRContext &ctx) {
  if (!sys::fs::exists(planModel)) {
    Expected<colo::TransformerConfig> cfg = colo::modelPreset(planModel);
    if (!cfg) {
      consumeError(cfg.takeError());
      reportError("'" + planModel + "' is neither a model file nor a model preset");
      return mlir::failure();
    }
    if (planSeq.getNumOccurrences())
      cfg->seq = planSeq;
    if (Error e = colo::validate(*cfg)) {
      reportError(toString(std::move(e)));
      return mlir::failure();
    }
    return colo::buildSyntheticModel(*cfg, ctx);
  }
  colo::ImportOptions options;
  options.runPipeline = sys::path::extension(planModel) != ".mlir";
  options.inputShapes.assign(planShapes.begin(), planShapes.end());
  options.freeze.assign(planFreeze.begin(), planFreeze.end());
  return colo::importModel(planModel, ctx, options);
}

/// The step compiled for `plan` as colo compile --train would build it; a
/// recompute=budget plan for the cluster's device memory.
mlir::FailureOr<colo::CompiledStep> compileForExplain(mlir::ModuleOp module, const Plan &plan,
                                                      const ClusterSpec &cluster) {
  std::string errors;
  raw_string_ostream es(errors);
  mlir::FailureOr<colo::TrainStepOptions> train = colo::parseTrainStepOptions(planTrain, es);
  if (failed(train)) {
    reportError("invalid --train options: " + errors);
    return mlir::failure();
  }
  colo::CompileOptions options;
  options.plan = plan;
  options.train = *train;
  if (plan.recompute == Recompute::Budget)
    options.deviceMemory = int64_t(cluster.deviceMemory);
  return colo::compileStepFootprint(module, options);
}

json::Value compiledJSON(const colo::CompiledStep &c, const StepTimes &t) {
  auto gib = [](double b) { return b / (1 << 30); };
  const colo::runtime::PlannedMemory &m = c.memory;
  json::Object memory{{"total", gib(double(m.total()))},
                      {"arena", gib(double(m.arena))},
                      {"state_and_inputs", gib(double(m.stateAndInputs))},
                      {"scratch", gib(double(m.scratch))}};
  if (c.stashBytes >= 0)
    memory["activations"] = gib(double(c.stashBytes));
  return json::Object{{"memory_gib", std::move(memory)},
                      {"host_memory_gib", gib(double(m.host))},
                      {"link_bytes_per_step", m.linkBytes},
                      {"recomputed_ops", c.recomputedOps},
                      {"step_time_s", t.total}};
}

void printCompiled(const colo::CompiledStep &c, const StepTimes &t, raw_ostream &os) {
  auto gib = [](int64_t b) { return double(b) / (1 << 30); };
  const colo::runtime::PlannedMemory &m = c.memory;
  os << formatv("compiled     {0:F2} GiB per device (the rank that plans most): arena {1:F2}, "
                "state and inputs {2:F2}, operand scratch {3:F2}\n",
                gib(m.total()), gib(m.arena), gib(m.stateAndInputs), gib(m.scratch));
  if (c.stashBytes >= 0)
    os << formatv("             activations kept for the backward {0:F4} GiB (in the arena)\n",
                  gib(c.stashBytes));
  os << formatv("             host {0:F2} GiB, {1:F1} MB over the link per step, {2} ops "
                "recomputed\n",
                gib(m.host), double(m.linkBytes) / 1e6, c.recomputedOps);
  os << formatv("             its {0} steps take {1:F2} ms on this cluster (each step's "
                "FLOPs and bytes, the copies and collectives on their queues)\n",
                c.program.steps_size(), t.total * 1e3);
}

json::Object termsJSON(const std::vector<std::pair<const char *, double>> &terms) {
  json::Object out;
  for (auto [name, seconds] : terms)
    out[name] = seconds;
  return out;
}

json::Value predictionJSON(const Prediction &p) {
  auto gib = [](double b) { return b / (1 << 30); };
  return json::Object{
      {"plan", p.plan.str()},
      {"plan_file", toJSON(p.plan)},
      {"step_time_s", p.stepTime},
      {"tokens_per_s", p.tokensPerSecond},
      {"tflops_per_device", p.tflopsPerDevice},
      {"mfu", p.mfu},
      {"fits", p.fits},
      {"memory_gib", json::Object{{"total", gib(p.memory.total())},
                                  {"parameters", gib(p.memory.params)},
                                  {"gradients", gib(p.memory.grads)},
                                  {"reused", gib(p.memory.reused)},
                                  {"optimizer", gib(p.memory.optimizer)},
                                  {"activations", gib(p.memory.activations)},
                                  {"buffers", gib(p.memory.buffers)},
                                  {"staging", gib(p.memory.staging)}}},
      {"host_memory_gib", gib(p.hostMemory)},
      {"communication_bytes",
       json::Object{{"per_device", p.commBytesDevice}, {"all_devices", p.commBytesAll}}},
      {"compute_s", json::Object{{"matmul", p.computeMatmul},
                                 {"memory_bound", p.computeMemory},
                                 {"launch", p.computeLaunch}}},
      {"time_s", termsJSON(timeTerms(p.time))},
  };
}

/// Why the best plan beats the runner-up, as `colo plan` prints it: the
/// runner-up's terms minus the best's.
json::Value versusJSON(const Prediction &best, const Prediction &other) {
  return json::Object{{"plan", other.plan.str()},
                      {"step_time_s", other.stepTime - best.stepTime},
                      {"memory_gib", (other.memory.total() - best.memory.total()) / (1 << 30)},
                      {"time_s", termsJSON(termsBetween(best, other))}};
}

void printVersus(const Prediction &best, const Prediction &other, raw_ostream &os) {
  os << formatv("\n#1 is {0:F4} s ({1:F1}%) faster than #2 ({2}):", other.stepTime - best.stepTime,
                100 * (other.stepTime - best.stepTime) / other.stepTime, other.plan.str());
  std::vector<std::pair<const char *, double>> terms = termsBetween(best, other);
  if (terms.empty())
    os << (best.memory.total() < other.memory.total()
               ? " the same step time; #1 holds less device memory"
               : " the same step time and memory; the plans' text breaks the tie");
  for (auto [i, term] : llvm::enumerate(terms))
    os << formatv("{0} {1} {2}{3:F4} s", i ? "," : "", term.first, term.second > 0 ? "+" : "",
                  term.second);
  os << formatv("\n   (#2's terms minus #1's); memory {0:F1} vs {1:F1} GiB per device\n",
                best.memory.total() / (1 << 30), other.memory.total() / (1 << 30));
}

/// The memory component that dominates, for the "does not fit" message.
std::string bindingConstraint(const MemoryBreakdown &m) {
  std::pair<double, const char *> parts[] = {
      {m.params, "parameters"}, {m.grads, "gradients"}, {m.optimizer, "optimizer state"},
      {m.activations, "activations"}, {m.buffers, "buffers"}};
  auto *it = std::max_element(std::begin(parts), std::end(parts));
  return formatv("{0} ({1:F1} GiB)", it->second, it->first / (1 << 30)).str();
}
} // namespace

cl::SubCommand &colo::tool::planCommand() { return planCmd; }

int colo::tool::runPlan(mlir::MLIRContext &ctx) {
  OneLineDiagnostics diagnostics(ctx);
  Expected<ClusterSpec> cluster = resolveCluster(planCluster);
  if (!cluster)
    return reportError(toString(cluster.takeError()));
  auto module = loadModel(ctx);
  if (failed(module))
    return 1;
  mlir::FailureOr<ModelProfile> model = profileModel(**module);
  if (failed(model))
    return 1;
  timeConvolutions(*model, *cluster);
  model->vocabParallel = planVocabParallel;

  if (!planTimeline.empty() && (planExplain.empty() || planTrain.empty()))
    return reportError("--timeline draws a compiled plan: give --explain PLAN and --train "
                       "OPTIONS with it");
  if (!planExplain.empty()) {
    Expected<Plan> plan = parsePlan(planExplain);
    if (!plan)
      return reportError(toString(plan.takeError()));
    model->vocabParallel = model->vocabParallel || plan->vocabParallel;
    if (planBatch.getNumOccurrences() && plan->globalBatch() != planBatch)
      return reportError(formatv("the plan's global batch dp*mbs*micro = {0} differs "
                                 "from --global-batch {1}",
                                 plan->globalBatch(), planBatch.getValue()));
    Expected<Prediction> p = predict(*model, *cluster, *plan);
    if (!p)
      return reportError("invalid plan: " + toString(p.takeError()));
    std::optional<colo::CompiledStep> compiled;
    StepTimes times;
    if (!planTrain.empty()) {
      mlir::FailureOr<colo::CompiledStep> step = compileForExplain(**module, *plan, *cluster);
      if (failed(step))
        return 1;
      compiled = std::move(*step);
      times = predictStepTimes(compiled->program, *cluster);
    }
    if (planJson) {
      json::Value out = predictionJSON(*p);
      if (compiled)
        out.getAsObject()->insert({"compiled", compiledJSON(*compiled, times)});
      outs() << formatv("{0:2}", out) << "\n";
    } else {
      printExplanation(*model, *cluster, *p, outs());
      if (compiled)
        printCompiled(*compiled, times, outs());
    }
    if (compiled && !planTimeline.empty()) {
      colo::runtime::TimelineInput in;
      in.program = &compiled->program;
      in.scratchBytes = compiled->memory.scratch;
      in.predicted = times.seconds;
      in.title = p->plan.str() + " on " + cluster->name;
      try {
        colo::runtime::writeMemoryTimeline(in, planTimeline);
      } catch (const std::exception &e) {
        return reportError(e.what());
      }
      (planJson ? errs() : outs()) << "wrote the memory timeline to " << planTimeline << "\n";
    }
    return 0;
  }

  if (planBatch <= 0)
    return reportError("give --global-batch (samples per step) or --explain PLAN");
  SearchOptions options;
  options.globalBatch = planBatch;
  options.topK = planTop;
  options.allowOffload = !planNoOffload;
  options.allowActivationOffload = planOffloadActivations;
  options.allowRecompute = !planNoRecompute;
  options.threads = planThreads;
  std::mutex progressMutex;
  bool terminal = sys::Process::StandardErrIsDisplayed() && !planJson;
  if (terminal)
    options.progress = [&](int64_t done, int64_t total) {
      std::lock_guard<std::mutex> lock(progressMutex);
      errs() << formatv("\rsearching {0,3}% ({1} / {2} plans)", done * 100 / total, done,
                        total);
    };
  Expected<SearchResult> result = searchPlans(*model, *cluster, options);
  if (terminal)
    errs() << "\r" << std::string(60, ' ') << "\r";
  if (!result)
    return reportError(toString(result.takeError()));
  if (planJson) {
    json::Array plans;
    for (const Prediction &p : result->best)
      plans.push_back(predictionJSON(p));
    json::Object out{{"cluster", cluster->name},
                     {"devices", cluster->worldSize()},
                     {"global_batch", planBatch.getValue()},
                     {"parameters", model->totalParams()},
                     {"evaluated", result->evaluated},
                     {"pruned", result->pruned},
                     {"plans", std::move(plans)}};
    if (result->closest)
      out["closest"] = predictionJSON(*result->closest);
    if (result->best.size() > 1)
      out["versus_runner_up"] = versusJSON(result->best[0], result->best[1]);
    out["suggestions"] = json::Array(result->suggestions);
    outs() << formatv("{0:2}", json::Value(std::move(out))) << "\n";
  } else if (!result->best.empty()) {
    outs() << formatv("{0} plans evaluated ({1} pruned by memory) for {2:e2} parameters "
                      "on {3} ({4} devices), global batch {5}\n\n",
                      result->evaluated, result->pruned, model->totalParams(),
                      cluster->name, cluster->worldSize(), planBatch.getValue());
    outs() << format("%-4s %-62s %9s %11s %8s %6s %9s\n", "#", "plan", "step (s)",
                     "tokens/s", "TFLOP/s", "MFU", "mem GiB");
    int rank = 1;
    for (const Prediction &p : result->best)
      outs() << format("%-4d %-62s %9.4g %11.0f %8.1f %5.1f%% %9.1f\n", rank++,
                       p.plan.str().c_str(), p.stepTime, p.tokensPerSecond,
                       p.tflopsPerDevice, 100 * p.mfu, p.memory.total() / (1 << 30));
    if (result->best.size() > 1)
      printVersus(result->best[0], result->best[1], outs());
  }

  if (result->best.empty()) {
    raw_ostream &os = planJson ? errs() : outs();
    os << "no plan fits in " << formatv("{0:F1}", cluster->deviceMemory / (1 << 30))
       << " GiB per device.\n";
    if (result->closest) {
      const Prediction &c = *result->closest;
      os << formatv("closest: {0} needs {1:F1} GiB per device, {2:F1} GiB over; the "
                    "binding constraint is {3}\n",
                    c.plan.str(), c.memory.total() / (1 << 30),
                    (c.memory.total() - 0.92 * cluster->deviceMemory) / (1 << 30),
                    bindingConstraint(c.memory));
    }
    for (const std::string &s : result->suggestions)
      os << "would fit " << s << "\n";
    if (result->suggestions.empty())
      os << "nothing tried fits: use larger devices or more of them\n";
    return 1;
  }

  if (!planOutput.empty()) {
    std::error_code ec;
    raw_fd_ostream out(planOutput, ec);
    if (ec)
      return reportError("cannot write '" + planOutput + "': " + ec.message());
    json::Object plan = *toJSON(result->best.front().plan).getAsObject();
    plan["predicted"] = predictionJSON(result->best.front());
    out << formatv("{0:2}", json::Value(std::move(plan))) << "\n";
  }
  return 0;
}
