// colo model FAMILY: a synthetic transformer in the colo dialect, without
// weights (globals carry initializer specs), for planning at any size.
#include "Commands.h"

#include "colo/Analysis/ModelSummary.h"
#include "colo/Models/SyntheticModels.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace llvm;
using namespace colo::tool;

namespace {
cl::SubCommand modelCmd("model", "Build a synthetic transformer (gpt, llama, bert, vit) "
                                 "without weights");
cl::opt<std::string> modelFamily(cl::Positional, cl::desc("<gpt|llama|bert|vit>"),
                                 cl::sub(modelCmd));
cl::opt<std::string> modelPresetName("preset",
                                     cl::desc("Start from a preset (gpt2-small ... "
                                              "gpt3-175b, llama2-7b, ...; 'list' lists)"),
                                     cl::sub(modelCmd));
cl::opt<int64_t> modelLayers("layers", cl::desc("Transformer layers"), cl::sub(modelCmd));
cl::opt<int64_t> modelHidden("hidden", cl::desc("Hidden size"), cl::sub(modelCmd));
cl::opt<int64_t> modelHeads("heads", cl::desc("Attention heads"), cl::sub(modelCmd));
cl::opt<int64_t> modelKvHeads("kv-heads", cl::desc("Key/value heads (GQA)"),
                              cl::sub(modelCmd));
cl::opt<int64_t> modelFfn("ffn", cl::desc("MLP hidden size"), cl::sub(modelCmd));
cl::opt<int64_t> modelVocab("vocab", cl::desc("Vocabulary size"), cl::sub(modelCmd));
cl::opt<int64_t> modelSeq("seq", cl::desc("Sequence length"), cl::sub(modelCmd));
cl::opt<int64_t> modelBatch("batch", cl::desc("Batch size of the IR (default 1)"),
                            cl::sub(modelCmd));
cl::opt<double> modelDropout("dropout",
                             cl::desc("Dropout probability (the presets: Hugging Face's "
                                      "defaults; 0 builds no dropout)"),
                             cl::sub(modelCmd));
cl::opt<std::string> modelDtype("dtype", cl::desc("bf16 (default), f16 or f32"),
                                cl::sub(modelCmd));
cl::opt<std::string> modelOutput("o", cl::desc("Write the IR to this file"),
                                 cl::value_desc("file"), cl::sub(modelCmd));
cl::opt<bool> modelSummary("summary", cl::desc("Print the summary"), cl::sub(modelCmd));
} // namespace

cl::SubCommand &colo::tool::modelCommand() { return modelCmd; }

int colo::tool::runModel(mlir::MLIRContext &ctx) {
  if (modelPresetName == "list") {
    for (const std::string &name : colo::modelPresetNames())
      outs() << name << "\n";
    return 0;
  }
  colo::TransformerConfig cfg;
  if (!modelPresetName.empty()) {
    Expected<colo::TransformerConfig> preset = colo::modelPreset(modelPresetName);
    if (!preset)
      return reportError(toString(preset.takeError()));
    cfg = *preset;
    if (!modelFamily.empty() && modelFamily != cfg.family)
      return reportError("preset '" + modelPresetName + "' is a " + cfg.family +
                         " model, not " + modelFamily);
  } else if (modelFamily.empty()) {
    return reportError("give a family (gpt, llama, bert, vit) or --preset");
  } else {
    cfg.family = modelFamily;
  }
  auto set = [](cl::opt<int64_t> &opt, int64_t &field) {
    if (opt.getNumOccurrences())
      field = opt;
  };
  set(modelLayers, cfg.layers);
  set(modelHidden, cfg.hidden);
  set(modelHeads, cfg.heads);
  set(modelKvHeads, cfg.kvHeads);
  set(modelFfn, cfg.ffn);
  set(modelVocab, cfg.vocab);
  set(modelSeq, cfg.seq);
  set(modelBatch, cfg.batch);
  if (!modelDtype.empty())
    cfg.dtype = modelDtype;
  if (modelDropout.getNumOccurrences()) {
    if (!(modelDropout >= 0 && modelDropout < 1))
      return reportError(
          formatv("--dropout must be at least 0 and below 1, got {0}", modelDropout.getValue())
              .str());
    cfg.dropout = modelDropout;
  }
  if (Error e = colo::validate(cfg))
    return reportError(toString(std::move(e)));
  mlir::OwningOpRef<mlir::ModuleOp> module = colo::buildSyntheticModel(cfg, ctx);
  if (!module)
    return reportError("could not build the model");
  if (modelSummary)
    colo::printSummary(colo::summarize(*module), outs());
  if (modelSummary && modelOutput.empty())
    return 0;
  std::string error;
  auto out = mlir::openOutputFile(modelOutput.empty() ? std::string("-")
                                                      : modelOutput.getValue(),
                                  &error);
  if (!out)
    return reportError(error);
  // Locations carry the module paths the planner groups layers by.
  mlir::OpPrintingFlags flags;
  flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  module->print(out->os(), flags);
  out->os() << "\n";
  out->keep();
  return 0;
}
