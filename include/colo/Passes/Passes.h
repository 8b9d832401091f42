#ifndef COLO_PASSES_PASSES_H
#define COLO_PASSES_PASSES_H

#include "mlir/Pass/Pass.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/PassManager.h"

namespace colo {

#define GEN_PASS_DECL
#include "colo/Passes/Passes.h.inc"

/// colo.attention as matmul, masks, softmax and matmul (colo-decompose-attention).
void populateDecomposeAttentionPatterns(mlir::RewritePatternSet &patterns);

/// The cleanup every imported graph goes through: canonicalization, raising
/// of decomposed norms, activations and attention, CSE. The CLI, colo-opt
/// (`--colo-import-pipeline`) and Python all call this one function.
void buildImportPipeline(mlir::OpPassManager &pm);

/// The train-step pipeline: colo-build-train-step with `options` (its pass
/// options as `key=value` separated by commas or spaces), canonicalize, CSE.
/// Invalid options are described on `errors`.
mlir::LogicalResult buildTrainStepPipeline(mlir::OpPassManager &pm,
                                           llvm::StringRef options,
                                           llvm::raw_ostream &errors);

/// Registers every colo pass and the colo pipelines with the global registry.
void registerPassesAndPipelines();

} // namespace colo

#endif
