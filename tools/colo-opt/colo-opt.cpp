// mlir-opt for colo: the colo dialect and passes plus the upstream pieces
// colo's pipelines use.
#include "colo/Codegen/CudaKernelCompiler.h"
#include "colo/Codegen/KernelCompiler.h"
#include "colo/Compiler/Compiler.h"
#include "colo/InitAll.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  colo::registerAllDialects(registry);
  colo::registerCudaKernelCompilerDialects(registry);
  registry.insert<mlir::func::FuncDialect>();
  colo::registerAllPasses();
  colo::registerCompilePipeline();
  colo::registerKernelCompilerPasses();
  colo::registerCudaKernelCompilerPasses();
  mlir::registerLinalgPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "colo optimizer driver\n", registry));
}
