#ifndef COLO_DRIVER_DRIVER_H
#define COLO_DRIVER_DRIVER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace colo {

/// Registers what colo's modules contain, for tools that parse or print them.
void registerDialects(mlir::DialectRegistry &registry);

/// Imports a model file (format from the extension: .onnx; .mlir is parsed)
/// and runs the import pipeline on it. Errors go to the context's
/// diagnostic handlers.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
importModel(llvm::StringRef path, mlir::MLIRContext &context,
            bool runPipeline = true);

} // namespace colo

#endif
