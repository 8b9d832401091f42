//===- LowerToLinalg.h - Shared pieces of colo-lower-to-linalg --*- C++ -*-===//
//
// Private to the passes/LowerToLinalg*.cpp files: the builders every pattern
// uses (broadcasting elementwise generics, reductions, reshapes, scalar
// casts) and the populate functions of the three pattern families.
//
// Arithmetic on 16-bit floats (f16, bf16) is done in f32: generics extend
// their float inputs to f32 and truncate the result once, when it is stored.
// Reductions accumulate in that type too, so an f32 (or f16/bf16) reduction
// accumulates in f32 and an f64 one in f64 (the interpreter accumulates in
// double; the difference stays within f32 rounding for the sizes kernels see).
//
//===----------------------------------------------------------------------===//
#ifndef COLO_PASSES_LOWERTOLINALG_H
#define COLO_PASSES_LOWERTOLINALG_H

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/PatternMatch.h"

#include <utility>

namespace colo::lowering {

/// The type arithmetic on `elementType` is done in: f32 for floats narrower
/// than 32 bits, the type itself otherwise (integers, f32, f64).
mlir::Type computeType(mlir::Type elementType);

/// `v` extended to computeType(v's type).
mlir::Value promote(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v);

/// Converts a scalar to `to` as colo.convert does: float<->float rounds to
/// nearest, float->int truncates toward zero, int->int wraps or sign-extends,
/// anything->i1 is `!= 0`, i1->anything is 0 or 1.
mlir::Value convertScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                          mlir::Type to);

/// A scalar constant of a float or integer type.
mlir::Value constantOf(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type,
                       double value);

/// Scalar arithmetic at one insertion point, on values of one type (float or
/// integer where both exist).
/// Scalar arithmetic; binary float ops on different widths compute in the
/// wider one.
struct Arith {
  mlir::OpBuilder &b;
  mlir::Location loc;
  /// A constant of type `t`.
  mlir::Value c(mlir::Type t, double v);
  mlir::Value add(mlir::Value x, mlir::Value y);
  mlir::Value sub(mlir::Value x, mlir::Value y); // float
  mlir::Value mul(mlir::Value x, mlir::Value y); // float
  mlir::Value div(mlir::Value x, mlir::Value y);
  mlir::Value max(mlir::Value x, mlir::Value y);
  mlir::Value exp(mlir::Value x);
  mlir::Value log(mlir::Value x);
  mlir::Value sqrt(mlir::Value x);
  mlir::Value pow(mlir::Value x, mlir::Value y); // float
  /// 1 / sqrt(x), spelled as the interpreter computes it.
  mlir::Value invSqrt(mlir::Value x);
  mlir::Value select(mlir::Value cond, mlir::Value x, mlir::Value y);
  /// `x` converted to type `t` (see convertScalar).
  mlir::Value to(mlir::Value x, mlir::Type t);
};

/// The map from an iteration space of shape `out` to an operand of shape `in`
/// that NumPy broadcasting reads (`in` aligned to the trailing dimensions;
/// its dimensions of size 1 read index 0).
mlir::AffineMap broadcastMap(llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> out,
                             mlir::MLIRContext *ctx);

/// The map from an iteration space of rank `rank` to the tensor that keeps
/// only the dimensions not in `dropped`.
mlir::AffineMap dropDimsMap(int64_t rank, llvm::ArrayRef<int64_t> dropped,
                            mlir::MLIRContext *ctx);

/// A tensor operand of a generic with the map it is read through.
using MappedOperand = std::pair<mlir::Value, mlir::AffineMap>;

/// Computes one scalar from the promoted scalars of the operands.
using ScalarFn = llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                                mlir::ValueRange)>;

/// A parallel linalg.generic over `resultType`'s shape reading `operands`
/// through their maps. `fn` gets their elements (16-bit floats extended to
/// f32) and returns the result element, which is truncated to the result's
/// element type if it is a wider float.
mlir::Value buildMapped(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::RankedTensorType resultType,
                        llvm::ArrayRef<MappedOperand> operands, ScalarFn fn);

/// Computes one scalar per result from the promoted scalars of the operands.
using MultiScalarFn = llvm::function_ref<llvm::SmallVector<mlir::Value>(
    mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>;

/// buildMapped with several results of one shape (the first result's): `fn`
/// returns one element per result, each stored as its result's element type.
llvm::SmallVector<mlir::Value>
buildMappedResults(mlir::OpBuilder &b, mlir::Location loc,
                   llvm::ArrayRef<mlir::RankedTensorType> resultTypes,
                   llvm::ArrayRef<MappedOperand> operands, MultiScalarFn fn);

/// buildMapped with NumPy broadcasting of every operand to the result shape.
mlir::Value buildElementwise(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::RankedTensorType resultType,
                             mlir::ValueRange operands, ScalarFn fn);

/// Updates the accumulators from the promoted input elements.
using ReduceFn = llvm::function_ref<llvm::SmallVector<mlir::Value>(
    mlir::OpBuilder &, mlir::Location, mlir::ValueRange inputs,
    mlir::ValueRange accumulators)>;

/// A linalg.generic over the iteration space `shape` that reduces the
/// dimensions `reduced` (sorted): one result per initial value, of the shape
/// without those dimensions and of the initial value's type, filled with it
/// and updated by `fn` for every point of the space.
llvm::SmallVector<mlir::Value>
buildReduction(mlir::OpBuilder &b, mlir::Location loc, llvm::ArrayRef<int64_t> shape,
               llvm::ArrayRef<int64_t> reduced, llvm::ArrayRef<MappedOperand> inputs,
               llvm::ArrayRef<mlir::TypedAttr> inits, ReduceFn fn);

/// `v` reinterpreted in the same-sized static shape of `type`: one
/// tensor.collapse_shape or tensor.expand_shape where the shapes allow, a
/// collapse to 1-D and an expand otherwise.
mlir::Value reshapeTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                      mlir::RankedTensorType type);

/// `axis` in [0, rank), counting negative values from the end.
inline int64_t normalizeAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// Unary, binary, clamp, gelu, compare, select, convert, constant,
/// broadcast_to, dropout; the optimizer updates sgd_update, adam_update,
/// lamb_update, lars_update.
void populateElementwisePatterns(mlir::RewritePatternSet &patterns);
/// reduce_*, softmax, log_softmax, layer_norm, rms_norm, batch_norm,
/// cross_entropy, mse_loss, batch_norm_backward, cross_entropy_backward.
void populateReductionPatterns(mlir::RewritePatternSet &patterns);
/// transpose, reshape, slice, concat, gather, embedding, slice_backward,
/// scatter_add.
void populateDataMovementPatterns(mlir::RewritePatternSet &patterns);

} // namespace colo::lowering

#endif // COLO_PASSES_LOWERTOLINALG_H
