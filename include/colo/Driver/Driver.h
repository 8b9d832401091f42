#ifndef COLO_DRIVER_DRIVER_H
#define COLO_DRIVER_DRIVER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace colo {

/// Registers what colo's modules contain, for tools that parse or print them.
void registerDialects(mlir::DialectRegistry &registry);

/// Imports a model file (format from the extension: .onnx, .pt; .mlir is
/// parsed)
/// and runs the import pipeline on it. Errors go to the context's
/// diagnostic handlers.
struct ImportOptions {
  /// Run the import pipeline (canonicalize, raise, CSE).
  bool runPipeline = true;
  /// Input shapes for formats that record none (TorchScript), e.g. "2x16xi64".
  std::vector<std::string> inputShapes;
  /// Glob patterns of parameters to keep fixed (colo-freeze).
  std::vector<std::string> freeze;
};

mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
importModel(llvm::StringRef path, mlir::MLIRContext &context,
            const ImportOptions &options = {});

} // namespace colo

#endif
