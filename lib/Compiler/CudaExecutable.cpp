//===- CudaExecutable.cpp - kernels.cuda.pb -------------------------------===//
//
// colo compile --target cuda: the kernels through compileCudaKernels, written
// as the executable's CudaKernels message (runtime/Program.proto): each
// kernel's launches and temporaries, each outlined module's PTX per chip.
//
//===----------------------------------------------------------------------===//
#include "ExecutableBuilder.h"

#include "colo/Codegen/CudaKernelCompiler.h"
#include "colo/Runtime/Executable.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <fstream>

using namespace mlir;

LogicalResult colo::writeCudaKernels(ModuleOp kernels, StringRef path, StringRef dumpDir) {
  CudaKernelOptions options;
  FailureOr<CudaKernels> compiled = compileCudaKernels(kernels, options);
  if (failed(compiled))
    return failure();
  runtime::CudaKernels out;
  for (const std::string &chip : options.chips)
    out.add_chips(chip);
  for (const CudaKernel &kernel : compiled->kernels) {
    runtime::CudaKernel *k = out.add_kernels();
    k->set_name(kernel.name);
    for (int64_t bytes : kernel.temporaryBytes)
      k->add_temporary_bytes(bytes);
    for (const CudaLaunch &launch : kernel.launches) {
      runtime::CudaLaunch *l = k->add_launches();
      l->set_module(launch.module);
      l->set_function(launch.function);
      l->set_grid(launch.grid);
      l->set_block(launch.block);
      for (const CudaArg &arg : launch.args) {
        runtime::CudaArg *a = l->add_args();
        switch (arg.kind) {
        case CudaArg::Argument:
          a->set_argument(arg.index);
          break;
        case CudaArg::Temporary:
          a->set_temporary(arg.index);
          break;
        case CudaArg::Constant:
          a->set_constant(arg.index);
          break;
        }
      }
    }
  }
  for (const CudaConstant &constant : compiled->constants) {
    runtime::CudaConstant *c = out.add_constants();
    c->set_name(constant.name);
    c->set_bytes(constant.bytes);
  }
  for (const CudaModule &module : compiled->modules) {
    runtime::CudaModule *m = out.add_modules();
    m->set_name(module.name);
    for (const auto &[chip, ptx] : module.ptx) {
      (*m->mutable_ptx())[chip] = ptx;
      if (dumpDir.empty())
        continue;
      SmallString<256> file(dumpDir);
      llvm::sys::path::append(file, "ptx", module.name + "." + chip + ".ptx");
      std::error_code ec = llvm::sys::fs::create_directories(llvm::sys::path::parent_path(file));
      std::ofstream os(file.str().str());
      if (ec || !(os << ptx) || !os.flush())
        return kernels.emitError() << "cannot write '" << file << "'";
    }
  }
  std::string bytes;
  if (!out.SerializeToString(&bytes))
    return kernels.emitError() << "cannot serialize the CUDA kernels";
  std::ofstream os(path.str(), std::ios::binary);
  if (!os.write(bytes.data(), std::streamsize(bytes.size())) || !os.flush())
    return kernels.emitError() << "cannot write '" << path << "'";
  return success();
}
