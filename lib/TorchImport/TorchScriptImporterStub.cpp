// Built when no torch is installed: TorchScript archives cannot be read.
#include "colo/Import/TorchScriptImporter.h"

#include "mlir/IR/Diagnostics.h"

bool colo::haveTorchScriptImporter() { return false; }

std::vector<std::string> colo::supportedTorchScriptOps() { return {}; }

mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
colo::importTorchScriptFile(llvm::StringRef path, mlir::MLIRContext &context,
                            llvm::ArrayRef<std::string>) {
  return mlir::emitError(mlir::UnknownLoc::get(&context))
         << "'" << path << "': this colo was built without libtorch; run "
            "scripts/setup.sh to read TorchScript archives";
}
