#include "colo/Driver/Driver.h"

#include "colo/Dialect/Colo/ColoDialect.h"
#include "colo/Import/OnnxImporter.h"
#include "colo/Import/TorchScriptImporter.h"
#include "colo/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;

void colo::registerDialects(DialectRegistry &registry) {
  registry.insert<ColoDialect, func::FuncDialect, shard::ShardDialect>();
}

FailureOr<OwningOpRef<ModuleOp>> colo::importModel(llvm::StringRef path,
                                                   MLIRContext &context,
                                                   const ImportOptions &options) {
  DialectRegistry registry;
  registerDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();

  if (llvm::sys::fs::is_directory(path))
    return emitError(UnknownLoc::get(&context)) << "'" << path << "' is a directory";
  if (!llvm::sys::fs::exists(path))
    return emitError(UnknownLoc::get(&context))
           << "cannot open '" << path << "': no such file";
  llvm::StringRef ext = llvm::sys::path::extension(path);
  FailureOr<OwningOpRef<ModuleOp>> module = failure();
  if (ext == ".mlir" || ext == ".mlirbc") {
    OwningOpRef<ModuleOp> parsed = parseSourceFile<ModuleOp>(path, &context);
    if (!parsed)
      return failure();
    module = std::move(parsed);
  } else if (ext == ".onnx") {
    module = importOnnxFile(path, context, options.inputShapes);
  } else if (ext == ".pt" || ext == ".pth" || ext == ".ts") {
    module = importTorchScriptFile(path, context, options.inputShapes);
  } else {
    return emitError(UnknownLoc::get(&context))
           << "'" << path << "': unknown model format '" << ext
           << "' (expected .onnx, .pt or .mlir)";
  }
  if (failed(module))
    return module;
  PassManager pm(&context);
  if (!options.freeze.empty()) {
    ColoFreezeOptions freeze;
    freeze.globals.assign(options.freeze.begin(), options.freeze.end());
    pm.addPass(createColoFreeze(freeze));
  }
  if (options.runPipeline)
    buildImportPipeline(pm);
  if (failed(pm.run(**module)))
    return failure();
  return module;
}
