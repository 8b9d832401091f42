//===- Autodiff.h - Reverse-mode gradient rules of the colo ops -*- C++ -*-===//
//
// The vector-Jacobian product of every differentiable colo op, built as colo
// ops: given the gradients of an op's results, the gradients of its operands.
// colo-build-train-step drives these rules over a whole graph.
//
//===----------------------------------------------------------------------===//
#ifndef COLO_PASSES_AUTODIFF_H
#define COLO_PASSES_AUTODIFF_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

namespace colo {

/// Builds, at `builder`'s insertion point, the gradients of `op`'s operands
/// from `resultGrads` (one per result; a null entry is a zero gradient). The
/// returned vector has one entry per operand, null where the operand gets no
/// gradient (integer operands, masks, constants' inputs). Fails with an error
/// on `op` if the op has no gradient rule.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
buildOperandGradients(mlir::OpBuilder &builder, mlir::Operation *op,
                      llvm::ArrayRef<mlir::Value> resultGrads);

/// Sums `grad` over the dimensions that broadcasting added or expanded so
/// that it has `type`'s shape (the adjoint of NumPy broadcasting).
mlir::Value sumToShape(mlir::OpBuilder &builder, mlir::Location loc,
                       mlir::Value grad, mlir::RankedTensorType type);

} // namespace colo

#endif
