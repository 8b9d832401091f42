// libFuzzer target: ONNX models (lib/Import/OnnxImporter.cpp). The importer
// reports a bad model as a diagnostic; anything else (a crash, a sanitizer
// report, an allocation past -malloc_limit_mb) is a bug. The imported module
// is verified too: the importer must not build invalid IR from any input.
#include "FuzzInput.h"

#include "colo/Dialect/Colo/ColoDialect.h"
#include "colo/Import/OnnxImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = colo::fuzz::writeInput("input.onnx", data, size);
  mlir::MLIRContext context;
  context.loadDialect<colo::ColoDialect, mlir::func::FuncDialect>();
  bool diagnosed = false;
  mlir::ScopedDiagnosticHandler quiet(&context, [&](mlir::Diagnostic &) {
    diagnosed = true;
    return mlir::success();
  });
  auto module = colo::importOnnxFile(path, context);
  if (mlir::succeeded(module) && !diagnosed && mlir::failed(mlir::verify(**module)))
    std::abort(); // valid input, invalid IR
  return 0;
}
