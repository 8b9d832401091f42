//===- KernelCompiler.h - colo kernels to a CPU shared object ---*- C++ -*-===//
//
// Compiles the kernels of a training step (the elementwise, reduction,
// normalization, data-movement and loss parts; matrix products and
// convolutions are library calls) through MLIR into a shared object:
//
//   colo-lower-to-linalg -> linalg elementwise fusion -> one-shot
//   bufferization (results become out-params) -> loops -> LLVM dialect
//   -> LLVM IR at O3 for the host CPU -> one object per kernel, compiled in
//   parallel or read from the cache -> `cc -shared`.
//
// A kernel is a public `func.func` with a body whose arguments and results
// are static ranked tensors of integer or float elements.
//
// The ABI of the shared object: for every kernel `@name` it exports
//
//   extern "C" void name(void **args);
//
// where `args[i]` points to the contiguous, row-major data of the i-th
// argument for i < #arguments, then of the i-th result: inputs first, then
// outputs. The kernel reads the inputs (never writes them) and writes every
// element of the outputs; outputs must not overlap inputs or each other.
// Elements are stored as C stores them: f32 `float`, f64 `double`, i64
// `int64_t`, i32 `int32_t`, f16/bf16 as their 16-bit patterns, i1 one byte
// holding 0 or 1. Nothing the kernel allocates escapes it; temporaries are
// freed before it returns. The implementation is the internal function
// `name_impl` (bare-pointer calling convention), inlined into the entry.
//
//===----------------------------------------------------------------------===//
#ifndef COLO_CODEGEN_KERNELCOMPILER_H
#define COLO_CODEGEN_KERNELCOMPILER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/LLVM.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace colo {

struct KernelCompileOptions {
  /// Prints the IR after every pass of the MLIR lowering to this stream
  /// (as --mlir-print-ir-after-all does); null prints nothing.
  llvm::raw_ostream *irDump = nullptr;
  /// Prints the optimized LLVM IR to this stream; null prints nothing.
  llvm::raw_ostream *llvmIRDump = nullptr;
  /// LLVM optimization level, 0 to 3.
  unsigned optLevel = 3;
  /// Target CPU and features (LLVM names, "+avx2,-avx512f"). An empty `cpu`
  /// means the host's (llvm::sys::getHostCPUName), and then empty `features`
  /// means the host's (getHostCPUFeatures); with a `cpu` given, empty
  /// `features` means that CPU's defaults.
  std::string cpu;
  std::string features;
  /// The C compiler driver that links the shared object (`<linker> -shared
  /// -o x.so x.o -lm`): a path, or a name looked up on PATH.
  std::string linker = "cc";
  /// The directory of compiled kernels to read and add to (one object per
  /// kernel, named by its MLIR, the target, these options and the compiler:
  /// lib/Codegen/KernelObjects.h); empty compiles every kernel.
  /// defaultKernelCacheDir() is colo's.
  std::string cacheDir;
  /// Marks the buffers `noalias` for LLVM (they may not overlap: see the
  /// ABI above), which saves the vectorizer its runtime overlap checks.
  bool noAlias = true;
  /// CpuKernelPipelineOptions::gpuLoopNests.
  bool gpuLoopNests = false;
  /// Times the MLIR passes and the LLVM phases under this scope; null (or
  /// an empty scope) times nothing.
  mlir::TimingScope *timing = nullptr;
};

/// Options of the pipeline itself (the part of KernelCompileOptions that
/// changes the MLIR lowering).
struct CpuKernelPipelineOptions {
  bool noAlias = true;
  /// Runs the CUDA kernels' loop nests (colo-map-generics-to-gpu, reductions
  /// unsplit) sequentially instead of the CPU's loops: how tests check on
  /// the CPU what a GPU would compute.
  bool gpuLoopNests = false;
};

/// Registers the dialects and the interface implementations (bufferization,
/// deallocation, LLVM IR translation) the kernel pipeline needs.
void registerKernelCompilerDialects(mlir::DialectRegistry &registry);

/// Registers the kernel pipeline as `colo-cpu-kernel-pipeline` and its own
/// passes, so that colo-opt runs them (and lit tests check them) one by one.
void registerKernelCompilerPasses();

/// Adds the passes the CPU and CUDA pipelines share: colo kernels on tensors
/// to fused linalg on buffers (function results as out-parameters, the
/// elementwise loops collapsed), with the CPU's split reductions or not.
void buildKernelBufferPipeline(mlir::OpPassManager &pm, bool splitReductions);

/// f32 tanh, erf, exp and log as vectorizable polynomials (colo-approximate-math).
std::unique_ptr<mlir::Pass> createApproximateMathPass();

/// Adds the passes from colo kernels on tensors to the LLVM dialect, with the
/// `void name(void **)` entry points, to `pm` (on a ModuleOp).
void buildCpuKernelPipeline(mlir::OpPassManager &pm,
                            const CpuKernelPipelineOptions &options = {});

/// Runs buildCpuKernelPipeline on `module` in place; the result is an LLVM
/// dialect module that mlir-translate --mlir-to-llvmir accepts. Errors are
/// reported as diagnostics on the offending op.
mlir::LogicalResult lowerKernelsToLLVM(mlir::ModuleOp module,
                                       const KernelCompileOptions &opts = {});

/// $COLO_KERNEL_CACHE, else $XDG_CACHE_HOME/colo/kernels, else
/// $HOME/.cache/colo/kernels; empty (no cache) when COLO_KERNEL_CACHE is
/// "off" or empty, or no home is known.
std::string defaultKernelCacheDir();

/// Compiles every kernel of `kernels` (which is left unchanged) into the
/// shared object `soPath`. Errors (an op without a CPU lowering, a dynamic
/// shape, no linker on PATH, a failing link) are reported as diagnostics on
/// the offending op or the module, never by crashing.
mlir::LogicalResult compileKernels(mlir::ModuleOp kernels, llvm::StringRef soPath,
                                   const KernelCompileOptions &opts = {});

} // namespace colo

#endif // COLO_CODEGEN_KERNELCOMPILER_H
