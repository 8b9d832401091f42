// Small tensors known at import time (shapes, masks, position tables) and the
// evaluator that folds ONNX shape subgraphs on them.
#ifndef COLO_LIB_IMPORT_HOSTTENSOR_H
#define COLO_LIB_IMPORT_HOSTTENSOR_H

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace colo::onnx_import {

/// ONNX TensorProto.DataType values the importer understands.
enum DType : int32_t {
  kFloat = 1, kUInt8 = 2, kInt8 = 3, kInt16 = 5, kInt32 = 6, kInt64 = 7,
  kBool = 9, kFloat16 = 10, kDouble = 11, kBFloat16 = 16,
};

/// Host tensors larger than this are not folded at import.
constexpr int64_t kMaxHostElements = int64_t{1} << 26;

bool isSupportedDType(int32_t dtype);
/// The ONNX data type of an MLIR element type (0 if none).
int32_t dtypeOf(mlir::Type type);
bool isFloatDType(int32_t dtype);
llvm::StringRef dtypeName(int32_t dtype);
/// The MLIR element type of an ONNX data type (null if unsupported).
mlir::Type elementTypeOf(mlir::MLIRContext *ctx, int32_t dtype);

/// Values are kept as doubles: exact for every integer a shape computation
/// produces; INT64 sentinels (slice ends) saturate on the way back.
struct HostTensor {
  int32_t dtype = kFloat;
  llvm::SmallVector<int64_t> shape;
  std::vector<double> values;

  int64_t numel() const;
  int64_t asInt(size_t i) const;
  std::vector<int64_t> asInts() const;
  /// Stores `v` rounded as the data type would hold it.
  static double convert(double v, int32_t dtype);
  static HostTensor scalar(double v, int32_t dtype);
  static HostTensor vector(llvm::ArrayRef<int64_t> v);

  mlir::DenseElementsAttr toAttr(mlir::MLIRContext *ctx) const;
};

/// One ONNX attribute, decoded, as the evaluator and op importers read it.
struct NodeAttrs {
  std::function<std::optional<int64_t>(llvm::StringRef)> getInt;
  std::function<std::optional<double>(llvm::StringRef)> getFloat;
  std::function<std::optional<std::vector<int64_t>>(llvm::StringRef)> getInts;
  std::function<std::optional<HostTensor>(llvm::StringRef)> getTensor;
  std::function<std::optional<std::string>(llvm::StringRef)> getString;
  int64_t opset = 0;
};

/// Result of trying to fold a node on the host.
struct EvalResult {
  enum Kind { NotFoldable, Folded, Error } kind = NotFoldable;
  std::vector<HostTensor> outputs;
  std::string error;
  static EvalResult notFoldable() { return {}; }
  static EvalResult fail(std::string msg) { return {Error, {}, std::move(msg)}; }
  static EvalResult ok(std::vector<HostTensor> out) { return {Folded, std::move(out), {}}; }
};

/// Evaluates an ONNX node whose inputs are all known (a missing optional
/// input is null). Ops outside the shape-computation set are NotFoldable.
EvalResult evaluate(llvm::StringRef opType, llvm::ArrayRef<const HostTensor *> inputs,
                    const NodeAttrs &attrs);

/// Where each element of an ONNX GatherND or GatherElements (`op`) of a
/// tensor of shape `data` with these indices reads from: the flat offsets in
/// `data`, int64, shaped like the result. The importer gathers a run-time
/// tensor at constant indices with one colo.gather of its flat form.
EvalResult gatherOffsets(llvm::StringRef op, llvm::ArrayRef<int64_t> data,
                         const HostTensor &indices, const NodeAttrs &attrs);

/// Where each update of an ONNX ScatterND or ScatterElements (`op`) into a
/// tensor of shape `data` is written: flat offsets in `data`, int64, shaped
/// like the updates. Checks the reduction attribute and the updates' shape.
EvalResult scatterTargets(llvm::StringRef op, llvm::ArrayRef<int64_t> data,
                          const HostTensor &indices, llvm::ArrayRef<int64_t> updates,
                          const NodeAttrs &attrs);

/// NumPy broadcast of two shapes; false if incompatible.
bool broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b,
                     llvm::SmallVectorImpl<int64_t> &out);

/// ONNX Reshape target shape: 0 copies the input dim (unless allowzero), -1
/// is inferred. Returns an error message on failure.
std::optional<std::string> resolveReshape(llvm::ArrayRef<int64_t> in,
                                          llvm::ArrayRef<int64_t> target,
                                          bool allowZero,
                                          llvm::SmallVectorImpl<int64_t> &out);

/// ONNX Slice on one axis, with clamping: returns (start, stop, step) in
/// positive-step form or nullopt for a negative step.
struct SliceBounds { int64_t start, stop, step, size; };
SliceBounds resolveSlice(int64_t dim, int64_t start, int64_t end, int64_t step);

/// Row-major element strides of `shape`.
llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);

} // namespace colo::onnx_import

#endif
