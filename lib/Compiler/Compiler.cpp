// colo compile: train-step pipeline, executable plan, kernels, state.
#include "colo/Compiler/Compiler.h"

#include "ExecutableBuilder.h"
#include "StateWriter.h"

#include "colo/Codegen/KernelCompiler.h"
#include "colo/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <fstream>

using namespace mlir;
using namespace colo;

namespace {
LogicalResult writeText(ModuleOp where, StringRef path, Operation *op) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return where.emitError() << "cannot write '" << path << "': " << ec.message();
  op->print(os);
  return success();
}
} // namespace

LogicalResult colo::compileTrainStep(ModuleOp module, StringRef exeDir,
                                     const CompileOptions &options) {
  auto dump = [&](StringRef name, Operation *op) -> LogicalResult {
    if (options.dumpIrDir.empty())
      return success();
    if (std::error_code ec = llvm::sys::fs::create_directories(options.dumpIrDir))
      return module.emitError() << "cannot create '" << options.dumpIrDir
                                << "': " << ec.message();
    SmallString<256> path(options.dumpIrDir);
    llvm::sys::path::append(path, name);
    return writeText(module, path, op);
  };

  PassManager pm(module.getContext());
  std::string errors;
  llvm::raw_string_ostream es(errors);
  if (failed(buildTrainStepPipeline(pm, options.train, options.parallel, es)))
    return module.emitError() << "invalid --train options: " << errors;
  if (failed(dump("0-forward.mlir", module)) || failed(pm.run(module)) ||
      failed(dump("1-train-step.mlir", module)))
    return failure();

  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  FailureOr<ExecutablePlan> plan = buildExecutablePlan(step);
  if (failed(plan) || failed(dump("2-kernels.mlir", *plan->kernels)))
    return failure();

  if (std::error_code ec = llvm::sys::fs::create_directories(exeDir))
    return module.emitError() << "cannot create '" << exeDir << "': " << ec.message();
  auto in = [&](StringRef file) {
    SmallString<256> path(exeDir);
    llvm::sys::path::append(path, file);
    return std::string(path);
  };
  {
    std::ofstream os(in("program.pb"), std::ios::binary);
    if (!plan->program.SerializeToOstream(&os) || !os.flush())
      return module.emitError() << "cannot write '" << in("program.pb") << "'";
  }
  if (options.dumpIrDir.size()) {
    std::ofstream os(in("program.txt"));
    os << plan->program.DebugString();
  }
  KernelCompileOptions kernelOptions;
  if (failed(compileKernels(*plan->kernels, in("kernels.so"), kernelOptions)))
    return failure();
  return writeInitialState(*plan, module, in("state.safetensors"));
}
