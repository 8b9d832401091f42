//===- KernelObjects.h - kernels to objects, cached, in parallel -*- C++ -*-===//
//
// The back half of compileKernels: one object file per kernel, so that
// kernels compile in parallel and a kernel compiled once (by any plan, any
// model, any earlier run) is read from a cache instead of compiled again.
//
// A kernel's object is named by a key: the SHA-256 of its MLIR (bytecode,
// locations and name dropped), the target, the options, and the identity of
// the compiler (the file holding this code: path, size, modification time),
// so that a rebuilt colo never reads what an older one wrote. The object
// defines the symbol `colo_k_<content key>` (the key without the compiler's
// identity, so that the colo CLI and the Python module write the same
// kernels.so), its other symbols named after it; the link gives each kernel its own name
// as an alias of it (`--defsym`), so that kernels with the same body under
// different names (`k3_add` in one plan, `k7_add` in another) share one
// object. Objects are written under a unique name and renamed into place,
// so concurrent compiles never read half an object.
//
//===----------------------------------------------------------------------===//
#ifndef COLO_CODEGEN_KERNELOBJECTS_H
#define COLO_CODEGEN_KERNELOBJECTS_H

#include "colo/Codegen/KernelCompiler.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CodeGen.h"

#include <string>

namespace colo {

/// The machine the kernels are compiled for, the host's unless the options
/// name one.
struct KernelTarget {
  std::string triple, cpu, features;
  llvm::CodeGenOptLevel level;
};
mlir::FailureOr<KernelTarget> resolveKernelTarget(const KernelCompileOptions &opts,
                                                  std::string &error);

/// One kernel's object: the kernel's name, the symbol its object defines and
/// where the object is.
struct KernelObject {
  std::string name, symbol, path;
};

/// A kernel's keys (64 hex digits each): `content` hashes its MLIR, the
/// target and the options, and names the symbol its object defines (the
/// same bytes whichever colo binary compiled it); `file` adds the
/// compiler's identity and names the cached object.
struct KernelKey {
  std::string content, file;
};
KernelKey kernelKey(mlir::func::FuncOp kernel, const KernelTarget &target,
                    const KernelCompileOptions &opts);

/// The directory of cached objects opts.cacheDir names, created if need be;
/// empty (compile everything) when it names none, cannot be created, the
/// optimized IR is to be printed, or the compiler's identity is unknown.
std::string openKernelCache(const KernelCompileOptions &opts);

/// Optimizes and emits each of `objects` (a public function named `name` in
/// `module`) to its `path`, in parallel on the machine's cores. The optimized
/// LLVM IR goes to opts.llvmIRDump in the order of `objects`. Returns the
/// first error, or an empty string.
std::string emitKernelObjects(const llvm::Module &module,
                              llvm::ArrayRef<KernelObject> objects,
                              const KernelTarget &target, const KernelCompileOptions &opts);

/// Links `objects` into the shared object `soPath`, each kernel exported
/// under its name, with the C compiler driver opts.linker. Returns the
/// error, or an empty string.
std::string linkKernelObjects(llvm::ArrayRef<KernelObject> objects, llvm::StringRef soPath,
                              const KernelCompileOptions &opts);

} // namespace colo

#endif
