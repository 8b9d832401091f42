//===- VocabParallel.h - Megatron's vocabulary parallelism ------*- C++ -*-===//
//
// colo-vocab-parallel leaves @forward returning each tp rank's block of the
// logits and marks it with `colo.vocab_parallel = tp`; colo-build-train-step then
// builds the loss with buildVocabParallelCrossEntropy, before
// differentiating, so the backward follows from the ops' gradient rules.
//
//===----------------------------------------------------------------------===//
#ifndef COLO_PASSES_VOCABPARALLEL_H
#define COLO_PASSES_VOCABPARALLEL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace colo {

/// The mean cross-entropy (colo.cross_entropy's semantics, ignore_index and
/// label smoothing included) of logits whose last dimension is the rank's
/// block of the vocabulary, on every rank of `func`'s vocab-parallel axis,
/// without gathering the logits.
mlir::FailureOr<mlir::Value>
buildVocabParallelCrossEntropy(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::func::FuncOp func, mlir::Value logits,
                               mlir::Value labels, int64_t ignoreIndex,
                               double labelSmoothing);

} // namespace colo

#endif // COLO_PASSES_VOCABPARALLEL_H
