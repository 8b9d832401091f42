#ifndef COLO_IMPORT_TORCHSCRIPTIMPORTER_H
#define COLO_IMPORT_TORCHSCRIPTIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace colo {

/// Whether this build can read TorchScript archives (it links the libtorch of
/// the pinned torch wheel).
bool haveTorchScriptImporter();

/// Imports a TorchScript archive (torch.jit.trace or torch.jit.script, saved
/// with .save) through libtorch: submodule calls are inlined with their module
/// path as location, parameters and buffers become colo.globals named like
/// the state_dict keys, aten ops become colo ops on static shapes (the input
/// `inputShapes`, one per input of forward, such as "2x16xi64" or "1x3x64x64"
/// (f32 unless an element type ends it), since archives record no shapes).
/// Errors are one diagnostic naming the op and the module scope.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
importTorchScriptFile(llvm::StringRef path, mlir::MLIRContext &context,
                      llvm::ArrayRef<std::string> inputShapes);

/// The TorchScript node kinds the importer translates ("aten::add",
/// "prim::Constant", ...), sorted: the keys of its table of handlers (empty
/// without libtorch; through colo-torch-import for processes without it).
std::vector<std::string> supportedTorchScriptOps();

} // namespace colo

#endif
