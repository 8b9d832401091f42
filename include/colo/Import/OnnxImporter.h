#ifndef COLO_IMPORT_ONNXIMPORTER_H
#define COLO_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace colo {

/// Opsets of the default ONNX domain that the importer reads.
constexpr int64_t kMinOnnxOpset = 13;
constexpr int64_t kMaxOnnxOpset = 24;

/// Imports an ONNX model file into a module holding `colo.global`s for its
/// state and a `func.func @forward` on static shapes. Shape subgraphs are
/// folded; weights stay lazy (external data is referenced, never read).
/// Errors are reported as one diagnostic naming the node and op type.
/// `inputShapes` (optional, one per graph input) fix dynamic dimensions,
/// e.g. "2x16" for an input of shape [batch, sequence].
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
importOnnxFile(llvm::StringRef path, mlir::MLIRContext &context,
               llvm::ArrayRef<std::string> inputShapes = {});

/// The ONNX operators (default domain) the importer translates, sorted:
/// the keys of its table of handlers.
std::vector<std::string> supportedOnnxOps();

} // namespace colo

#endif
