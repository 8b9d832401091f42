// colo: the command-line front end. Subcommands share one diagnostic style:
// "colo: error: <one line>" and exit code 1.
#include "Commands.h"

#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

colo::tool::OneLineDiagnostics::OneLineDiagnostics(mlir::MLIRContext &ctx)
    : handler(&ctx, [this](mlir::Diagnostic &d) {
        if (d.getSeverity() == mlir::DiagnosticSeverity::Error && !any) {
          reportError(d.str());
          any = true;
        } else if (d.getSeverity() == mlir::DiagnosticSeverity::Warning) {
          llvm::errs() << "colo: warning: " << d.str() << "\n";
        }
        return mlir::success();
      }) {}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  using namespace colo::tool;
  // Touch every subcommand so its options are registered before parsing.
  cl::SubCommand *commands[] = {&importCommand(), &modelCommand(), &clusterCommand(),
                                &planCommand(), &compileCommand(), &runCommand(),
                                &trainCommand(), &checkpointCommand()};
  (void)commands;
  cl::ParseCommandLineOptions(
      argc, argv,
      "colo: compile and plan the training of neural networks\n\n"
      "  colo import MODEL.onnx --summary          what the model holds and costs\n"
      "  colo import MODEL.onnx -o M.mlir          the model in the colo dialect\n"
      "  colo model gpt --preset gpt3-175b -o M.mlir   a synthetic model, no weights\n"
      "  colo cluster show a100-80g                a cluster preset or file\n"
      "  colo plan M.mlir --cluster a100-80g:128x8 --global-batch 1536\n"
      "  colo compile M.onnx --train loss=lm,optimizer=adamw,lr=3e-4 -o EXE_DIR\n"
      "  colo train M.onnx --train loss=lm --data tokens.bin --token-dtype uint16\n"
      "  colo run EXE_DIR --steps 100 --data train.npz   train on the CPU\n"
      "  colo checkpoint export CKPT_DIR -o HF_DIR     Hugging Face safetensors\n\n"
      "Run 'colo <subcommand> --help' for the options of a subcommand.\n");
  if (runCommand())
    return runRun();
  if (checkpointCommand())
    return runCheckpoint();
  mlir::MLIRContext ctx;
  if (trainCommand())
    return runTrain(ctx);
  if (importCommand())
    return runImport(ctx);
  if (modelCommand())
    return runModel(ctx);
  if (clusterCommand())
    return runCluster();
  if (planCommand())
    return runPlan(ctx);
  if (compileCommand())
    return runCompile(ctx);
  errs() << "colo: no subcommand given; try 'colo --help'\n";
  return 1;
}
