// The native part of the `colo` Python module: plain strings in and out; the
// MLIR diagnostics become a Python exception.
#include "colo/Analysis/ModelSummary.h"
#include "colo/Driver/Driver.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FormatVariadic.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace py = pybind11;

namespace {
/// Imports `path` and returns (IR, summary JSON, summary text); the GIL is released
/// while the compiler works.
std::tuple<std::string, std::string, std::string> importModel(const std::string &path,
                                                std::vector<std::string> shapes,
                                                PyObject *errorType) {
  std::string error, ir, summary, text;
  {
    py::gil_scoped_release release;
    mlir::MLIRContext ctx;
    mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
      if (d.getSeverity() == mlir::DiagnosticSeverity::Error && error.empty())
        error = d.str();
      return mlir::success();
    });
    colo::ImportOptions options;
    options.inputShapes = std::move(shapes);
    auto module = colo::importModel(path, ctx, options);
    if (succeeded(module)) {
      llvm::raw_string_ostream os(ir);
      (*module)->print(os);
      colo::ModelSummary s = colo::summarize(**module);
      summary = llvm::formatv("{0}", colo::toJSON(s)).str();
      llvm::raw_string_ostream textOs(text);
      colo::printSummary(s, textOs);
    } else if (error.empty()) {
      error = "import of '" + path + "' failed";
    }
  }
  if (!error.empty()) {
    PyErr_SetString(errorType, error.c_str());
    throw py::error_already_set();
  }
  return {ir, summary, text};
}
} // namespace

PYBIND11_MODULE(_colo, m) {
  static py::exception<std::runtime_error> coloError(m, "ColoError");
  m.def(
      "_import_model",
      [](const std::string &path, std::vector<std::string> shapes) {
        return importModel(path, std::move(shapes), coloError.ptr());
      },
      py::arg("path"), py::arg("input_shapes") = std::vector<std::string>());
}
