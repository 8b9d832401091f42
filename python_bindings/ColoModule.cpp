// The native part of the `colo` Python module: a module handle over the C++
// API the colo tool uses, plain strings and numbers in and out; MLIR
// diagnostics become Python exceptions, and the GIL is released while the
// compiler works.
#include "colo/Analysis/ModelSummary.h"
#include "colo/Compiler/Compiler.h"
#include "colo/Driver/Driver.h"
#include "colo/Planner/Search.h"
#include "colo/Runtime/CpuGemm.h"
#include "colo/Runtime/CpuOps.h"
#include "colo/Runtime/DataSource.h"
#include "colo/Runtime/Error.h"
#include "colo/Runtime/Executable.h"
#include "colo/Runtime/Files.h"
#include "colo/Runtime/Session.h"
#include "colo/Runtime/TrainLoop.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FormatVariadic.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>

namespace py = pybind11;

namespace {
PyObject *coloErrorType = nullptr;

[[noreturn]] void raise(const std::string &message) {
  PyErr_SetString(coloErrorType, message.c_str());
  throw py::error_already_set();
}

/// Runs `fn` without the GIL, with the context's first error captured.
template <typename Fn>
void withDiagnostics(mlir::MLIRContext &ctx, Fn fn) {
  std::string error;
  bool ok;
  {
    py::gil_scoped_release release;
    mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
      if (d.getSeverity() == mlir::DiagnosticSeverity::Error && error.empty())
        error = d.str();
      return mlir::success();
    });
    ok = fn(error);
  }
  if (!ok)
    raise(error.empty() ? std::string("colo failed") : error);
}

struct Module {
  std::unique_ptr<mlir::MLIRContext> ctx = std::make_unique<mlir::MLIRContext>();
  mlir::OwningOpRef<mlir::ModuleOp> module;

  std::string ir(bool locations) {
    std::string text;
    llvm::raw_string_ostream os(text);
    mlir::OpPrintingFlags flags;
    if (locations)
      flags.enableDebugInfo(true, false);
    module->print(os, flags);
    return text;
  }

  std::pair<std::string, std::string> summary() {
    colo::ModelSummary s = colo::summarize(*module);
    std::string text;
    llvm::raw_string_ostream os(text);
    colo::printSummary(s, os);
    return {llvm::formatv("{0}", colo::toJSON(s)).str(), text};
  }

  std::string plan(const std::string &clusterSpec, int64_t globalBatch, int64_t top,
                   bool offload, bool recompute) {
    using namespace colo::planner;
    std::string result;
    withDiagnostics(*ctx, [&](std::string &error) {
      llvm::Expected<ClusterSpec> cluster = resolveCluster(clusterSpec);
      if (!cluster) {
        error = llvm::toString(cluster.takeError());
        return false;
      }
      mlir::FailureOr<ModelProfile> model = profileModel(*module);
      if (mlir::failed(model))
        return false;
      SearchOptions options;
      options.globalBatch = globalBatch;
      options.topK = top;
      options.allowOffload = offload;
      options.allowRecompute = recompute;
      llvm::Expected<SearchResult> found = searchPlans(*model, *cluster, options);
      if (!found) {
        error = llvm::toString(found.takeError());
        return false;
      }
      llvm::json::Array plans;
      for (const Prediction &p : found->best)
        plans.push_back(llvm::json::Object{
            {"plan", p.plan.str()},
            {"plan_file", toJSON(p.plan)},
            {"step_time_s", p.stepTime},
            {"tokens_per_s", p.tokensPerSecond},
            {"tflops_per_device", p.tflopsPerDevice},
            {"mfu", p.mfu},
            {"memory_gib", p.memory.total() / (1 << 30)}});
      llvm::json::Object out{{"plans", std::move(plans)},
                             {"suggestions", llvm::json::Array(found->suggestions)}};
      if (found->closest)
        out["closest"] = found->closest->plan.str();
      result = llvm::formatv("{0}", llvm::json::Value(std::move(out))).str();
      return true;
    });
    return result;
  }

  /// Compiles a copy of the module, as `colo compile` does: this one stays
  /// as imported, for more plans and compiles.
  void compile(const std::string &dir, const std::string &train, const std::string &plan,
               double bucketMb, int64_t kernelPieces) {
    withDiagnostics(*ctx, [&](std::string &error) {
      colo::CompileOptions options;
      if (!plan.empty()) {
        llvm::Expected<colo::planner::Plan> parsed = colo::planner::parsePlan(plan);
        if (!parsed) {
          error = "invalid plan: " + llvm::toString(parsed.takeError());
          return false;
        }
        options.plan = *parsed;
      }
      llvm::raw_string_ostream es(error);
      mlir::FailureOr<colo::TrainStepOptions> trainOptions =
          colo::parseTrainStepOptions(train, es);
      if (mlir::failed(trainOptions)) {
        error = "invalid train options: " + error;
        return false;
      }
      options.train = *trainOptions;
      options.bucketMb = bucketMb;
      options.kernelPieces = kernelPieces;
      mlir::OwningOpRef<mlir::ModuleOp> copy = module->clone();
      if (mlir::failed(colo::compileTrainStep(*copy, dir, options))) {
        if (error.empty())
          error = "compilation failed";
        return false;
      }
      return true;
    });
  }
};

/// `steps` training steps of a one-rank executable in this process, as
/// `colo run` takes them (the same session and data sources); the losses
/// of the steps. Stops with an error at a loss that is not finite.
std::vector<double> runSteps(const std::string &dir, const std::string &data, int64_t steps,
                             int threads, uint64_t seed, const std::string &tokenDType,
                             bool shiftLabels, const std::string &weights,
                             const std::string &output) {
  namespace rt = colo::runtime;
  std::vector<double> losses;
  std::string error;
  {
    py::gil_scoped_release release;
    try {
      if (steps < 0)
        throw rt::Error("steps must not be negative");
      auto exe = rt::Executable::load(dir);
      if (exe->worldSize() > 1)
        throw rt::Error("'" + dir + "' is compiled for " + std::to_string(exe->worldSize()) +
                        " ranks: run it with 'colo run " + dir + " --np " +
                        std::to_string(exe->worldSize()) + "' (colo.run runs one rank)");
      rt::setThreads(threads);
      rt::Session session(exe);
      if (!weights.empty())
        session.loadWeights(weights);
      std::unique_ptr<rt::DataSource> source;
      if (!exe->inputs().empty()) {
        if (data.empty())
          throw rt::Error("the program has inputs: give data= (.npy, .npz, a token file "
                          "with token_dtype=, or \"synthetic\")");
        rt::DataOptions options;
        options.tokenDType = tokenDType;
        options.shiftLabels = shiftLabels;
        options.seed = seed;
        source = rt::openDataSource(data, *exe, options);
      }
      // As colo run: a step whose loss or update is not finite stops the
      // run, and the weights written are those from before it.
      session.setSnapshots(session.snapshotBytes() <= rt::kSnapshotLimit);
      std::string out =
          output.empty() ? rt::joinPath(exe->directory(), "weights.safetensors") : output;
      rt::TrainLoopResult result = rt::runTrainLoop(session, source.get(), steps, nullptr);
      if (result.stop != rt::TrainStop::Done) {
        std::string written = " (" + out + " was left as it was)";
        if (rt::keepLastGoodWeights(session) == rt::GoodWeights::Restored) {
          session.saveWeights(out);
          written = "; wrote the weights from before it to " + out;
        }
        throw rt::Error(result.message() + written);
      }
      losses = std::move(result.losses);
      session.saveWeights(out);
    } catch (const rt::Error &e) {
      error = e.what();
    }
  }
  if (!error.empty())
    raise(error);
  return losses;
}

std::unique_ptr<Module> importModel(const std::string &path, std::vector<std::string> shapes,
                                    std::vector<std::string> freeze) {
  auto m = std::make_unique<Module>();
  withDiagnostics(*m->ctx, [&](std::string &error) {
    colo::ImportOptions options;
    options.inputShapes = std::move(shapes);
    options.freeze = std::move(freeze);
    auto module = colo::importModel(path, *m->ctx, options);
    if (mlir::failed(module)) {
      if (error.empty())
        error = "import of '" + path + "' failed";
      return false;
    }
    m->module = std::move(*module);
    return true;
  });
  return m;
}
} // namespace

PYBIND11_MODULE(_colo, m) {
  static py::exception<std::runtime_error> coloError(m, "ColoError");
  coloErrorType = coloError.ptr();
  py::class_<Module>(m, "_Module")
      .def("ir", &Module::ir, py::arg("locations") = false)
      .def("summary", &Module::summary)
      .def("plan", &Module::plan, py::arg("cluster"), py::arg("global_batch"),
           py::arg("top") = 10, py::arg("offload") = true, py::arg("recompute") = true)
      .def("compile", &Module::compile, py::arg("dir"), py::arg("train"), py::arg("plan"),
           py::arg("bucket_mb"), py::arg("kernel_pieces"));
  m.def("_run", &runSteps, py::arg("dir"), py::arg("data"), py::arg("steps"),
        py::arg("threads"), py::arg("seed"), py::arg("token_dtype"), py::arg("shift_labels"),
        py::arg("weights"), py::arg("output"));
  m.def("_import_model", &importModel, py::arg("path"),
        py::arg("input_shapes") = std::vector<std::string>(),
        py::arg("freeze") = std::vector<std::string>());
}
