// colo import: a model file into the colo dialect, or its summary.
#include "Commands.h"

#include "colo/Analysis/ModelSummary.h"
#include "colo/Driver/Driver.h"
#include "colo/Import/OnnxImporter.h"
#include "colo/Import/TorchScriptImporter.h"

#include "mlir/IR/AsmState.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace llvm;
using namespace colo::tool;

namespace {
cl::SubCommand importCmd("import",
                         "Import an ONNX model (or parse a .mlir module) into "
                         "the colo dialect; print its IR or a summary");
cl::opt<std::string> importInput(cl::Positional, cl::desc("<model.onnx|model.pt|model.mlir>"),
                                 cl::sub(importCmd));
cl::opt<bool> importSupportedOps(
    "supported-ops",
    cl::desc("List the ONNX operators, then the TorchScript node kinds (aten::, prim::), "
             "the importers translate, one per line, and exit"),
    cl::sub(importCmd));
cl::opt<std::string> importOutput("o", cl::desc("Write the IR to this file"),
                                  cl::value_desc("file"), cl::sub(importCmd));
cl::opt<bool> importSummary("summary",
                            cl::desc("Print parameters, forward FLOPs, op counts "
                                     "and repeated blocks instead of the IR"),
                            cl::sub(importCmd));
cl::opt<bool> importJson("json", cl::desc("With --summary: print JSON"),
                         cl::sub(importCmd));
cl::opt<bool> importRaw("no-cleanup",
                        cl::desc("Skip the import pipeline (canonicalize, "
                                 "raise norms, activations and attention, CSE)"),
                        cl::sub(importCmd));
cl::opt<bool> importElide(
    "elide-weights",
    cl::desc("Print inline weights as __elided__ (the IR cannot be re-read)"),
    cl::sub(importCmd));

cl::list<std::string> importShapes(
    "input-shape",
    cl::desc("Shape of a model input, one per input in order: dims joined by 'x' "
             "and an optional element type, e.g. 2x16xi64. Needed for TorchScript "
             "(f32 by default); for ONNX it fixes dynamic dimensions"),
    cl::value_desc("shape"), cl::sub(importCmd));
cl::list<std::string> importFreeze("freeze", cl::desc(kFreezeHelp), cl::value_desc("pattern"),
                                  cl::CommaSeparated, cl::sub(importCmd));
cl::opt<bool> importLocations(
    "print-locations",
    cl::desc("Print each op's location (node name and module path); files "
             "written with -o always have them"),
    cl::sub(importCmd));

} // namespace

cl::SubCommand &colo::tool::importCommand() { return importCmd; }

int colo::tool::runImport(mlir::MLIRContext &ctx) {
  if (importSupportedOps) {
    for (const std::string &op : colo::supportedOnnxOps())
      outs() << op << "\n";
    for (const std::string &kind : colo::supportedTorchScriptOps())
      outs() << kind << "\n";
    return 0;
  }
  if (importInput.empty())
    return reportError("give a model file to import (model.onnx, model.pt or model.mlir)");
  OneLineDiagnostics diagnostics(ctx);
  colo::ImportOptions options;
  options.runPipeline = !importRaw;
  options.inputShapes.assign(importShapes.begin(), importShapes.end());
  options.freeze.assign(importFreeze.begin(), importFreeze.end());
  auto module = colo::importModel(importInput, ctx, options);
  if (failed(module)) {
    if (!diagnostics.reported())
      reportError("import of '" + importInput + "' failed");
    return 1;
  }
  if (importSummary) {
    colo::ModelSummary summary = colo::summarize(**module);
    if (importJson)
      outs() << formatv("{0:2}", colo::toJSON(summary)) << "\n";
    else
      colo::printSummary(summary, outs());
    if (importOutput.empty())
      return 0;
  }
  std::string error;
  auto out = mlir::openOutputFile(importOutput.empty() ? std::string("-") : importOutput.getValue(), &error);
  if (!out)
    return reportError(error);
  mlir::OpPrintingFlags flags;
  if (importElide)
    flags.elideLargeResourceString(64);
  // Locations carry the module paths the planner groups layers by: files
  // always keep them.
  if (importLocations || !importOutput.empty())
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  (*module)->print(out->os(), flags);
  out->os() << "\n";
  out->keep();
  return 0;
}
