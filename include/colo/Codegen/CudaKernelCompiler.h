//===- CudaKernelCompiler.h - colo kernels to PTX ----------------*- C++ -*-===//
//
// The CUDA side of the kernel compiler: the same kernels the CPU path
// compiles (colo ops on tensors, one func.func each), through the same
// fused, bufferized linalg, then
//
//   colo-map-generics-to-gpu (block x thread scf.forall nests)
//   -> colo-forall-to-gpu-launch -> gpu-kernel-outlining
//   -> nvvm-attach-target (one per chip) -> convert-gpu-to-nvvm
//   -> gpu-module-to-binary (PTX per chip, LLVM's NVPTX back end)
//
// Each kernel function is left as its launch sequence on the host side
// (gpu.launch_func of an outlined gpu.module, its grid and block constant),
// and each gpu.module becomes a gpu.binary holding one PTX per chip. No GPU
// and no CUDA toolkit is needed to compile; ptxas (where the toolkit is
// installed) checks the PTX in the tests.
//
//===----------------------------------------------------------------------===//
#ifndef COLO_CODEGEN_CUDAKERNELCOMPILER_H
#define COLO_CODEGEN_CUDAKERNELCOMPILER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace colo {

struct CudaKernelOptions {
  /// The GPU architectures to emit PTX for (sm_80: A100, sm_90: H100/H200).
  std::vector<std::string> chips = {"sm_80", "sm_90"};
  /// Threads per block of the mapped loop nests.
  int64_t blockSize = 256;
  /// NVPTX optimization level.
  unsigned optLevel = 3;
};

/// Where a launch's buffer comes from: the kernel's argument `index` (the
/// CPU kernel ABI's order: inputs, then outputs) or its temporary `index`.
struct CudaArg {
  /// The kernel's argument `index`, its temporary `index`, or the constant
  /// `index` of CudaKernels::constants.
  enum Kind { Argument, Temporary, Constant } kind = Argument;
  int index = 0;
};

/// One launch of a kernel: its outlined GPU function, geometry and buffers.
struct CudaLaunch {
  std::string module;   ///< the outlined module (one PTX per chip)
  std::string function; ///< the entry in it
  int64_t grid = 1, block = 1;
  std::vector<CudaArg> args;
};

/// What a kernel runs: its launches in order, on its arguments and on
/// temporaries of these sizes (bytes) that the device provides.
struct CudaKernel {
  std::string name;
  std::vector<CudaLaunch> launches;
  std::vector<int64_t> temporaryBytes;
};

/// One outlined GPU module: its PTX for each chip, in the options' order.
struct CudaModule {
  std::string name;
  std::vector<std::pair<std::string, std::string>> ptx; ///< (chip, PTX text)
};

/// A constant buffer larger than kMaxPtxConstantBytes: launches take it as
/// an argument and the device uploads its bytes once, rather than PTX
/// carrying it as an initialized global (a byte is four characters of PTX,
/// and the driver compiles them at every load).
struct CudaConstant {
  std::string name; ///< the memref.global's
  std::string bytes;
};
inline constexpr int64_t kMaxPtxConstantBytes = 16 * 1024;

struct CudaKernels {
  std::vector<CudaKernel> kernels;
  std::vector<CudaModule> modules;
  std::vector<CudaConstant> constants;
};

/// Registers the dialects, interfaces and translations the CUDA pipeline needs.
void registerCudaKernelCompilerDialects(mlir::DialectRegistry &registry);

/// Registers the pipeline as `colo-cuda-kernel-pipeline` for colo-opt.
void registerCudaKernelCompilerPasses();

/// Adds the passes from colo kernels on tensors to launch sequences and PTX.
void buildCudaKernelPipeline(mlir::OpPassManager &pm, const CudaKernelOptions &options = {});

/// Compiles every kernel of `kernels` (left unchanged) for CUDA. Errors are
/// diagnostics on the offending op.
mlir::FailureOr<CudaKernels> compileCudaKernels(mlir::ModuleOp kernels,
                                                const CudaKernelOptions &options = {});

} // namespace colo

#endif // COLO_CODEGEN_CUDAKERNELCOMPILER_H
