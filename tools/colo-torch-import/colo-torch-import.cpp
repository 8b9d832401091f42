// colo-torch-import: reads a TorchScript archive and writes the colo module
// as MLIR bytecode. The colo CLI runs it as a child process so that only
// TorchScript imports pay for loading libtorch.
#include "colo/Import/TorchScriptImporter.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

static cl::opt<std::string> input(cl::Positional, cl::desc("<model.pt>"));
static cl::opt<std::string> output("o", cl::desc("Bytecode output file"),
                                   cl::value_desc("file"));
static cl::opt<bool> supportedOps("supported-ops",
                                  cl::desc("Print the node kinds the importer translates"));
static cl::list<std::string> shapes("input-shape",
                                    cl::desc("Shape of each input, e.g. 2x16xi64"));

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "TorchScript archive -> colo bytecode\n");
  if (supportedOps) {
    for (const std::string &kind : colo::supportedTorchScriptOps())
      outs() << kind << "\n";
    return 0;
  }
  if (input.empty() || output.empty()) {
    WithColor::error(errs(), "colo") << "give a model.pt and -o FILE\n";
    return 1;
  }
  mlir::MLIRContext ctx;
  bool reported = false;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error && !reported) {
      WithColor::error(errs(), "colo") << d.str() << "\n";
      reported = true;
    }
    return mlir::success();
  });
  std::vector<std::string> specs(shapes.begin(), shapes.end());
  auto module = colo::importTorchScriptFile(input, ctx, specs);
  if (failed(module)) {
    if (!reported)
      WithColor::error(errs(), "colo") << "import of '" << input << "' failed\n";
    return 1;
  }
  std::string error;
  auto out = mlir::openOutputFile(output, &error);
  if (!out) {
    WithColor::error(errs(), "colo") << error << "\n";
    return 1;
  }
  if (failed(mlir::writeBytecodeToFile(**module, out->os())))
    return 1;
  out->keep();
  return 0;
}
