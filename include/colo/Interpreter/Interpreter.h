//===- Interpreter.h - Reference evaluation of colo modules -----*- C++ -*-===//
//
// A slow, straightforward interpreter of the colo dialect in double precision:
// the reference that imported models, gradients, training steps and compiled
// kernels are checked against.
//
//===----------------------------------------------------------------------===//
#ifndef COLO_INTERPRETER_INTERPRETER_H
#define COLO_INTERPRETER_INTERPRETER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace colo {

class GlobalOp;

/// A host tensor: row-major values of any element type, held as double.
struct HostArray {
  std::vector<int64_t> shape;
  std::vector<double> data;
};

/// Evaluates the functions of a colo module in double precision, with model
/// state (the values of the `colo.global`s) that persists from one call to
/// the next, so that a training step can be run several times:
///
///   colo::Interpreter interp(module);
///   for (int i = 0; i < 3; ++i)
///     if (failed(interp.call("train_step", {x, labels})))
///       return failure();
///   const colo::HostArray *w = interp.global("fc.weight");
///
/// Globals are read on first use: from inline data (dense or dense_resource
/// of f64, f32, f16, bf16, i64, i32, i8, i1), from `#colo.external` files, or
/// generated from `#colo.init` (normal and uniform from a fixed per-global
/// seed, zeros, ones). `colo.global_store` replaces a global's value, rounded
/// to the global's element type. Inputs are rounded to the argument types;
/// apart from that only `colo.convert` rounds to its result type, and every
/// other op computes in double.
///
/// `colo.dropout` applies its counter-based mask when it has a key (as train
/// steps build it) and is the identity without one; `colo.attention` ignores
/// its `dropout` (train steps decompose attention first). `colo.batch_norm`
/// follows its `training` flag (batch statistics, biased variance for the
/// normalization and unbiased for the running-statistics update, as PyTorch's
/// train mode does).
///
/// The losses reduce to a scalar mean: `colo.cross_entropy` over the
/// positions whose label is not `ignore_index` (NaN if there are none, as in
/// PyTorch; a label outside `[0, C)` is an error), `colo.mse_loss` over all
/// elements. The backward ops and optimizer updates of ColoTrainOps.td follow
/// their descriptions (which are PyTorch's formulas).
///
/// Errors (an unsupported op, inputs of the wrong count or shape, unreadable
/// data) are reported with emitError and return failure; the model state
/// then holds whatever the stores before the failing op wrote.
class Interpreter {
public:
  /// `module` must outlive the interpreter.
  explicit Interpreter(mlir::ModuleOp module);
  ~Interpreter();
  Interpreter(const Interpreter &) = delete;
  Interpreter &operator=(const Interpreter &) = delete;

  /// Evaluates `func.func @<func>` on `inputs` (one per argument) and returns
  /// one array per result.
  mlir::FailureOr<std::vector<HostArray>> call(llvm::StringRef func,
                                               llvm::ArrayRef<HostArray> inputs);

  /// The current value of global `name`, read from its initial value on
  /// first use. Null, after an error, if there is no such global or its data
  /// cannot be read. Writing through the pointer changes the model state
  /// (without rounding; see setGlobal).
  HostArray *global(llvm::StringRef name);

  /// Replaces the value of global `name` as `colo.global_store` does
  /// (rounded to its element type); fails on an unknown name or a value of
  /// the wrong shape.
  mlir::LogicalResult setGlobal(llvm::StringRef name, HostArray value);

  class Impl;

private:
  std::unique_ptr<Impl> impl;
};

/// The seed of a #colo.init global's draws (std::mt19937_64): a hash of its
/// name, or of its colo.param_name (a pipeline rank's copy draws the same).
uint64_t initializerSeed(GlobalOp global);

/// Evaluates `func.func @forward` of `module` on `inputs` with fresh model
/// state: `Interpreter(module).call("forward", inputs)`.
mlir::FailureOr<std::vector<HostArray>> interpret(mlir::ModuleOp module,
                                                  llvm::ArrayRef<HostArray> inputs);

} // namespace colo

#endif // COLO_INTERPRETER_INTERPRETER_H
