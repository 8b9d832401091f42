// The subcommands of the colo tool, one file each.
#ifndef COLO_TOOLS_COLO_COMMANDS_H
#define COLO_TOOLS_COLO_COMMANDS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"

#include <optional>

namespace colo::tool {

/// Prints "colo: error: <msg>"; returns the exit code 1.
int reportError(const llvm::Twine &msg);

/// Reports the first error diagnostic of `ctx` as one line and every
/// warning, drops the rest.
class OneLineDiagnostics {
public:
  explicit OneLineDiagnostics(mlir::MLIRContext &ctx);
  bool reported() const { return any; }

private:
  bool any = false;
  mlir::ScopedDiagnosticHandler handler;
};

llvm::cl::SubCommand &importCommand();
llvm::cl::SubCommand &modelCommand();
llvm::cl::SubCommand &clusterCommand();
llvm::cl::SubCommand &planCommand();
llvm::cl::SubCommand &runCommand();
llvm::cl::SubCommand &compileCommand();
llvm::cl::SubCommand &trainCommand();
llvm::cl::SubCommand &checkpointCommand();

/// The help of --freeze (import, plan, compile and train).
inline constexpr const char *kFreezeHelp =
    "Keep the parameters these glob patterns name fixed (comma-separated or repeated, "
    "e.g. 'encoder.*'): for fine-tuning, and for buffers an ONNX export from the "
    "TorchScript-based exporter does not mark as such";

int runImport(mlir::MLIRContext &ctx);
int runModel(mlir::MLIRContext &ctx);
int runCluster();
int runPlan(mlir::MLIRContext &ctx);
int runRun();
int runCompile(mlir::MLIRContext &ctx);
int runTrain(mlir::MLIRContext &ctx);
int runCheckpoint();

/// "1073741824", "512M", "1.5G", "64KiB" as bytes (binary multiples); none
/// if it is not a positive size.
std::optional<int64_t> parseBytes(llvm::StringRef text);

/// Trains with the executable in `dir` as `colo run` does, with the run
/// options of the command line (shared by `colo run` and `colo train`).
int runExecutable(llvm::StringRef dir);

/// Runs `colo run dir runArgs...` on `ranks` processes through mpirun and
/// returns its exit code.
int launchRanks(llvm::StringRef dir, int64_t ranks, llvm::ArrayRef<std::string> runArgs);

/// Imports `model` and compiles its training step into `exeDir` (what
/// `colo compile` does); returns the exit code, errors printed.
int compileModel(mlir::MLIRContext &ctx, llvm::StringRef model, llvm::StringRef exeDir,
                 llvm::StringRef train, llvm::StringRef dumpIr);

} // namespace colo::tool

#endif
