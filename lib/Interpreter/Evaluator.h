//===- Evaluator.h - Internals of the reference interpreter -----*- C++ -*-===//
//
// Shared by Interpreter.cpp (model state, forward ops) and
// InterpreterTrainOps.cpp (backward ops, optimizer updates, global_store).
//
//===----------------------------------------------------------------------===//
#ifndef COLO_LIB_INTERPRETER_EVALUATOR_H
#define COLO_LIB_INTERPRETER_EVALUATOR_H

#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Interpreter/Interpreter.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <string>

namespace colo {

/// The model state of an Interpreter: the globals read or stored so far.
class Interpreter::Impl {
public:
  explicit Impl(mlir::ModuleOp module) : module(module), symbols(module) {}

  /// The value of global `name`, read on first use; null after an error on
  /// `user` (or on the module when there is no user).
  HostArray *global(mlir::Operation *user, llvm::StringRef name);
  /// Stores `value` rounded to the global's element type.
  mlir::LogicalResult store(mlir::Operation *user, llvm::StringRef name, HostArray value);

  mlir::ModuleOp module;
  mlir::SymbolTable symbols;
  llvm::StringMap<HostArray> globals;
};

namespace interp {

using Shape = std::vector<int64_t>;

int64_t numElements(llvm::ArrayRef<int64_t> shape);
Shape shapeOf(mlir::Value v);
/// Row-major offsets of a strided view (broadcasts, transposes, slices).
std::vector<int64_t> stridedOffsets(llvm::ArrayRef<int64_t> out,
                                    llvm::ArrayRef<int64_t> step, int64_t start = 0);
Shape stridesOf(llvm::ArrayRef<int64_t> shape);
/// For every element of `out`, the element of `in` NumPy broadcasting reads.
std::vector<int64_t> broadcastIndex(llvm::ArrayRef<int64_t> in,
                                    llvm::ArrayRef<int64_t> out);
/// "2x3x4", as error messages show shapes.
std::string formatShape(llvm::ArrayRef<int64_t> shape);
/// `x` rounded to the values of `type` (a float or integer type).
double roundTo(double x, mlir::Type type);

/// The index of the element of a window that max pooling picks, as PyTorch
/// does: the first maximal element in row-major order (a NaN wins), padding
/// skipped. `at(ih, iw)` reads the input; the result is `ih * W + iw`, or -1
/// for a window entirely in the padding.
int64_t maxPoolArgmax(int64_t H, int64_t W, int64_t h0, int64_t w0, int64_t KH,
                      int64_t KW, llvm::function_ref<double(int64_t)> at);

/// The evaluation of one function body: the values of its SSA names.
class Evaluator {
public:
  explicit Evaluator(Interpreter::Impl &state) : state(state) {}

  mlir::LogicalResult run(mlir::Operation *op);

  llvm::DenseMap<mlir::Value, HostArray> values;

private:
  const HostArray &get(mlir::Value v) { return values.find(v)->second; }
  void set(mlir::Value v, HostArray a) { values[v] = std::move(a); }

  HostArray unary(mlir::Operation *op, llvm::function_ref<double(double)> f);
  HostArray binary(mlir::Operation *op, llvm::function_ref<double(double, double)> f);
  mlir::LogicalResult evalMatmul(MatmulOp op);
  mlir::LogicalResult evalConv(Conv2dOp op);
  mlir::LogicalResult evalAttention(AttentionOp op);
  mlir::LogicalResult evalSoftmax(mlir::Operation *op, int64_t axis, bool log);
  mlir::LogicalResult evalCumSum(CumSumOp op);
  mlir::LogicalResult evalNorm(mlir::Operation *op, mlir::Value input, mlir::Value scale,
                               mlir::Value bias, int64_t axis, double eps, bool rms);
  mlir::LogicalResult evalBatchNorm(BatchNormOp op);
  template <typename OpTy> mlir::LogicalResult evalReduce(OpTy op, int kind);
  template <typename OpTy> mlir::LogicalResult evalPool(OpTy op, bool isMax);
  mlir::LogicalResult evalGather(mlir::Operation *op, mlir::Value input,
                                 mlir::Value indices, int64_t axis);
  mlir::LogicalResult evalCrossEntropy(CrossEntropyOp op);
  mlir::LogicalResult evalCrossEntropyRows(CrossEntropyRowsOp op);
  mlir::LogicalResult evalMseLoss(MseLossOp op);

  // InterpreterTrainOps.cpp: the ops of ColoTrainOps.td.
  mlir::LogicalResult runTrainOp(mlir::Operation *op);
  mlir::LogicalResult evalScatterAdd(ScatterAddOp op);
  mlir::LogicalResult evalSliceBackward(SliceBackwardOp op);
  mlir::LogicalResult evalConvBackward(mlir::Operation *op, bool filter);
  mlir::LogicalResult evalMaxPoolBackward(MaxPool2dBackwardOp op);
  mlir::LogicalResult evalAvgPoolBackward(AvgPool2dBackwardOp op);
  mlir::LogicalResult evalBatchNormBackward(BatchNormBackwardOp op);
  mlir::LogicalResult evalCrossEntropyBackward(CrossEntropyBackwardOp op);
  mlir::LogicalResult evalCrossEntropyRowsBackward(CrossEntropyRowsBackwardOp op);
  mlir::LogicalResult evalSgd(SgdUpdateOp op);
  mlir::LogicalResult evalAdam(AdamUpdateOp op);
  mlir::LogicalResult evalLamb(LambUpdateOp op);
  mlir::LogicalResult evalLars(LarsUpdateOp op);

  Interpreter::Impl &state;
};

} // namespace interp
} // namespace colo

#endif // COLO_LIB_INTERPRETER_EVALUATOR_H
