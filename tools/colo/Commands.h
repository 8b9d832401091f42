// The subcommands of the colo tool, one file each.
#ifndef COLO_TOOLS_COLO_COMMANDS_H
#define COLO_TOOLS_COLO_COMMANDS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"

namespace colo::tool {

/// Prints "colo: error: <msg>"; returns the exit code 1.
int reportError(const llvm::Twine &msg);

/// Reports the first error diagnostic of `ctx` as one line, drops the rest.
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

int runImport(mlir::MLIRContext &ctx);
int runModel(mlir::MLIRContext &ctx);
int runCluster();
int runPlan(mlir::MLIRContext &ctx);

} // namespace colo::tool

#endif
