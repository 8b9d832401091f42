// The native part of the `colo` Python module: plain strings in and out; the
// MLIR diagnostics become a Python exception.
#include "colo/Analysis/ModelSummary.h"
#include "colo/Driver/Driver.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FormatVariadic.h"

#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace {
/// Imports `path` and returns (IR text, summary JSON); the GIL is released
/// while the compiler works.
std::pair<std::string, std::string> importModel(const std::string &path,
                                                PyObject *errorType) {
  std::string error, ir, summary;
  {
    py::gil_scoped_release release;
    mlir::MLIRContext ctx;
    mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
      if (d.getSeverity() == mlir::DiagnosticSeverity::Error && error.empty())
        error = d.str();
      return mlir::success();
    });
    auto module = colo::importModel(path, ctx);
    if (succeeded(module)) {
      llvm::raw_string_ostream os(ir);
      (*module)->print(os);
      summary = llvm::formatv("{0}", colo::toJSON(colo::summarize(**module))).str();
    } else if (error.empty()) {
      error = "import of '" + path + "' failed";
    }
  }
  if (!error.empty()) {
    PyErr_SetString(errorType, error.c_str());
    throw py::error_already_set();
  }
  return {ir, summary};
}
} // namespace

PYBIND11_MODULE(_colo, m) {
  static py::exception<std::runtime_error> coloError(m, "ColoError");
  m.def(
      "_import_model",
      [](const std::string &path) { return importModel(path, coloError.ptr()); },
      py::arg("path"));
}
