//===- Compiler.h - From a train step to an executable ----------*- C++ -*-===//
//
// `colo compile`: a module with @forward becomes an executable directory that
// the runtime runs without MLIR (docs/program-format.md):
//   program.pb          the step list (colo.runtime.Program)
//   kernels.so          the generated kernels (linalg -> LLVM)
//   state.safetensors   initial parameters, buffers and optimizer state
//
//===----------------------------------------------------------------------===//
#ifndef COLO_COMPILER_COMPILER_H
#define COLO_COMPILER_COMPILER_H

#include "colo/Passes/Passes.h"
#include "colo/Planner/Plan.h"
#include "colo/Runtime/Verify.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/Error.h"

#include <string>

namespace colo {

struct CompileOptions {
  /// The training step (parseTrainStepOptions reads `--train`'s text).
  TrainStepOptions train;
  /// Write the IR after each stage into this directory (empty: don't).
  std::string dumpIrDir;
  /// How the step is spread over ranks (default: one rank).
  planner::Plan plan;
  /// The device the kernels are compiled for: "cpu" (kernels.so) or "cuda"
  /// (kernels.cuda.pb: PTX for sm_80 and sm_90, and each kernel's launches;
  /// docs/cuda.md).
  std::string target = "cpu";
  /// Data parallelism: gradient MiB per all-reduce.
  double bucketMb = 25;
  /// Kernels whose rows are independent compute 1/kernelPieces of them per
  /// call (or 1/2, 1/4 ... where that does not divide), and the runtime
  /// runs the calls on its threads; 1 keeps every kernel whole.
  int64_t kernelPieces = 8;
  /// Device memory per rank that the program must fit (0: no bound): a step
  /// that plans more is an error; the bound is recorded for `colo run`.
  int64_t deviceMemory = 0;
  /// recompute=budget: MiB for the layers' activations (colo-recompute's
  /// budget-mb). compileTrainStep chooses it from deviceMemory: the largest
  /// that fits, so that the least is recomputed.
  double recomputeBudgetMb = 0;
  /// offload=optimizer+params: MiB of parameter chunks the device keeps
  /// between their uses (colo-offload's resident-mb). compileTrainStep
  /// chooses it from deviceMemory like the recompute budget: the largest
  /// that fits, so that the fewest chunks are fetched twice. Negative and
  /// without deviceMemory: one chunk.
  double residentMb = -1;
  /// offload=optimizer+params: MiB of parameters per chunk (colo-offload's
  /// chunk-mb).
  double chunkMb = 32;
};

/// The plan passes' options for `plan`, or an error naming the part of the
/// plan that colo does not compile yet (the planner prices more than the
/// compiler builds).
llvm::Expected<ParallelOptions> parallelOptionsFor(const planner::Plan &plan, double bucketMb);

/// The passes from an imported forward to @train_step: buildTrainStepPipeline
/// for the options' training step and plan, then the loss's CPU form. `colo
/// compile`, `colo-opt --colo-train-step-pipeline` and Python's
/// colo.compile all build the step with it. Invalid options are described
/// on `errors`.
mlir::LogicalResult buildCompilePipeline(mlir::OpPassManager &pm, const CompileOptions &options,
                                         llvm::raw_ostream &errors);

/// Registers `colo-train-step-pipeline` (options train=, plan=, bucket-mb=)
/// with the global registry, for colo-opt.
void registerCompilePipeline();

/// Builds @train_step (buildCompilePipeline), splits it
/// into library calls (GEMM, convolution, pooling) and generated kernels,
/// plans the temporaries' memory and writes the executable into `exeDir`.
/// Errors are reported through the context's diagnostics. Each pass and
/// each later phase is timed under `timing` (`colo compile --timing`; an
/// empty scope times nothing).
mlir::LogicalResult compileTrainStep(mlir::ModuleOp module, llvm::StringRef exeDir,
                                     const CompileOptions &options,
                                     mlir::TimingScope &timing);

/// What the step compiled for `options` holds, on the rank that plans most
/// device memory: that memory as `colo run`'s pool holds it (arena, state
/// and inputs, the CPU device's operand scratch), the host memory of what
/// is offloaded, the bytes crossing the link per step, and the ops
/// colo-recompute cloned. Compiles as compileTrainStep does (choosing the
/// recompute budget and resident chunks from options.deviceMemory) without
/// generating kernels or writing anything; `colo plan --explain --train`
/// reports it beside the prediction. Errors go to the context's diagnostics.
struct CompiledStep {
  runtime::PlannedMemory memory;
  /// The step program of the rank (the pipeline stage) that plans most.
  runtime::Program program;
  int64_t recomputedOps = 0;
  /// The bytes of the activations the step keeps from its forward for its
  /// backward (colo/Analysis/ActivationStash.h), on a plan of one stage and
  /// one microbatch; -1 on others (their forwards and backwards interleave).
  int64_t stashBytes = -1;
  /// The generated kernels of every rank, before their lowering (what
  /// compileKernels and compileCudaKernels take).
  mlir::OwningOpRef<mlir::ModuleOp> kernels;
};
mlir::FailureOr<CompiledStep> compileStepFootprint(mlir::ModuleOp module,
                                                   const CompileOptions &options);
mlir::LogicalResult compileTrainStep(mlir::ModuleOp module, llvm::StringRef exeDir,
                                     const CompileOptions &options);

} // namespace colo

#endif
