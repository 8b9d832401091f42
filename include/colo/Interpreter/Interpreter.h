//===- Interpreter.h - Reference evaluation of colo modules -----*- C++ -*-===//
//
// A slow, straightforward interpreter of the colo dialect in double precision:
// the reference that imported models are checked against PyTorch with.
//
//===----------------------------------------------------------------------===//
#ifndef COLO_INTERPRETER_INTERPRETER_H
#define COLO_INTERPRETER_INTERPRETER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <vector>

namespace colo {

/// A host tensor: row-major values of any element type, held as double.
struct HostArray {
  std::vector<int64_t> shape;
  std::vector<double> data;
};

/// Evaluates `func.func @forward` of `module` on `inputs` (one per argument)
/// in double precision and returns one array per result.
///
/// Globals are read from inline data (dense or dense_resource of f64, f32,
/// f16, bf16, i64, i32, i8, i1), from `#colo.external` files, or generated
/// from `#colo.init` (normal and uniform from a fixed per-global seed, zeros,
/// ones). Only `colo.convert` rounds to its result type; every other op
/// computes in double.
///
/// Evaluation is in inference form for randomness: `colo.dropout` is the
/// identity and `colo.attention` ignores its `dropout`. `colo.batch_norm`
/// follows its `training` flag (batch statistics, biased variance for the
/// normalization and unbiased for the running-statistics update, as PyTorch's
/// train mode does).
///
/// The losses reduce to a scalar mean: `colo.cross_entropy` over the
/// positions whose label is not `ignore_index` (NaN if there are none, as in
/// PyTorch; a label outside `[0, C)` is an error), `colo.mse_loss` over all
/// elements.
///
/// Errors (an unsupported op, inputs of the wrong count or shape, unreadable
/// data) are reported with emitError on the op and return failure.
mlir::FailureOr<std::vector<HostArray>>
interpret(mlir::ModuleOp module, llvm::ArrayRef<HostArray> inputs);

} // namespace colo

#endif // COLO_INTERPRETER_INTERPRETER_H
