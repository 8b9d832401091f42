// What both importers share: building colo ops through their type inference
// and verifier, so that a model's shape error becomes a diagnostic on the
// node being imported instead of an abort.
#ifndef COLO_LIB_IMPORT_IMPORTBASE_H
#define COLO_LIB_IMPORT_IMPORTBASE_H

#include "HostTensor.h"

#include "colo/Dialect/Colo/ColoOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>
#include <vector>

namespace colo {

/// An input shape given on the command line: dims joined by 'x' and an
/// optional element type ("2x16xi64", "1x3x224x224").
struct InputShape {
  llvm::SmallVector<int64_t> dims;
  mlir::Type elementType; // null when the spec names none
};
mlir::FailureOr<InputShape> parseInputShape(llvm::StringRef spec, mlir::MLIRContext &ctx);

/// The [out][in] matrix of adaptive average pooling from `in` to `out`
/// (PyTorch's windows: [floor(i in / out), ceil((i + 1) in / out))).
std::vector<std::vector<double>> adaptiveAverageWeights(int64_t in, int64_t out);

/// How one axis is resized from `in` to `out` elements, ONNX Resize's way
/// (PyTorch's upsampling exports as it): `mode` "linear" or "nearest",
/// `coordinates` its coordinate_transformation_mode (half_pixel,
/// pytorch_half_pixel, align_corners, asymmetric), `nearest` its
/// nearest_mode, `scale` out / in unless the op gave one. The [out][in]
/// weights, or an error naming what is not supported.
llvm::FailureOr<std::vector<std::vector<double>>>
resizeWeights(int64_t in, int64_t out, double scale, llvm::StringRef mode,
              llvm::StringRef coordinates, llvm::StringRef nearest, std::string &error);

class ImportBase {
public:
  explicit ImportBase(mlir::MLIRContext &ctx) : ctx(ctx), builder(&ctx) {}

  /// Records `msg` as the failure of the node being imported.
  mlir::LogicalResult fail(const llvm::Twine &msg) {
    nodeError = msg.str();
    return mlir::failure();
  }

  /// Creates a colo op whose result types are inferred.
  template <typename OpTy, typename... Args>
  mlir::FailureOr<OpTy> create(Args &&...args) {
    auto op = OpTy::create(builder, loc, mlir::NoneType::get(&ctx),
                           std::forward<Args>(args)...);
    if (mlir::failed(inferTypes(op.getOperation()))) {
      op->erase();
      return mlir::failure();
    }
    return op;
  }

  /// Creates an op with explicit result types, then verifies it.
  template <typename OpTy, typename... Args>
  mlir::FailureOr<OpTy> createTyped(Args &&...args) {
    auto op = OpTy::create(builder, loc, std::forward<Args>(args)...);
    if (mlir::failed(mlir::verify(op, /*verifyRecursively=*/false))) {
      op->erase();
      return mlir::failure();
    }
    return op;
  }

  /// Creates the one-operand elementwise colo op `colo.<mnemonic>` (relu,
  /// exp, ...) on `x`, verified.
  mlir::FailureOr<mlir::Value> createUnary(llvm::StringRef mnemonic, mlir::Value x);

  /// 2-D max or average pooling of NCHW `x` as both exporters describe it:
  /// `pads` top, left, bottom, right; `ceilMode` rounds the output size up
  /// (a last window that starts in the input or its leading padding), which
  /// becomes more padding at the end that no average counts.
  mlir::FailureOr<mlir::Value> pool2d(bool max, mlir::Value x, llvm::ArrayRef<int64_t> kernel,
                                      llvm::ArrayRef<int64_t> strides,
                                      llvm::ArrayRef<int64_t> pads, bool ceilMode,
                                      bool countIncludePad);

  /// clamp(alpha * x + beta, 0, 1), times x for hard swish (MobileNetV3's
  /// activations; PyTorch's alpha is 1/6, beta 1/2).
  mlir::FailureOr<mlir::Value> hardSigmoid(mlir::Value x, double alpha, double beta,
                                           bool swish);

  /// min(max(x, lo), hi) with either bound absent: colo.relu or colo.clamp on
  /// floats, colo.maximum and colo.minimum with constants on integers
  /// (ONNX Clip, aten::clamp; Gemma-2's positions).
  mlir::FailureOr<mlir::Value> clamp(mlir::Value x, std::optional<double> lo,
                                     std::optional<double> hi);

  /// ONNX's GatherND or GatherElements (`op`) of a run-time tensor at
  /// indices known now: one colo.gather of its flat form at the offsets
  /// HostTensor.h's gatherOffsets computes (Swin's relative position bias,
  /// GPT-J's rotary table, `x[rows, cols]`).
  mlir::FailureOr<mlir::Value> gatherAt(llvm::StringRef op, mlir::Value data,
                                        const onnx_import::HostTensor &indices,
                                        const onnx_import::NodeAttrs &attrs);

  /// ONNX's ScatterND or ScatterElements (`op`, reduction none) of run-time
  /// tensors at indices known now: each element of the result reads data's
  /// own element or the update last written there, one colo.gather of the
  /// two flat tensors joined (BEiT's relative position index; in-place
  /// writes into views of run-time tensors).
  mlir::FailureOr<mlir::Value> scatterAt(llvm::StringRef op, mlir::Value data,
                                         const onnx_import::HostTensor &indices,
                                         mlir::Value updates,
                                         const onnx_import::NodeAttrs &attrs);

  /// `data` with element targets[i] of its flat form replaced by element i of
  /// `updates` (later writes win), as scatterAt does it.
  mlir::FailureOr<mlir::Value> scatterFlat(mlir::Value data, llvm::ArrayRef<int64_t> targets,
                                           mlir::Value updates);

  /// The elements of `data` at the flat `offsets` (int64, computed now),
  /// shaped like them: one colo.gather of data's flat form.
  mlir::FailureOr<mlir::Value> gatherFlat(mlir::Value data,
                                          const onnx_import::HostTensor &offsets);

  /// x with dimension `axis` mixed by the matrix `m` ([out][in], computed
  /// now): y[.., i, ..] = sum_j m[i][j] x[.., j, ..], one colo.matmul
  /// (between transposes that bring the axis last). Resizing and adaptive
  /// pooling are such mixes along each axis they change.
  mlir::FailureOr<mlir::Value> mixAxis(mlir::Value x, int64_t axis,
                                       const std::vector<std::vector<double>> &m);

  /// An Einsum of run-time tensors as reductions, transposes, reshapes and
  /// batched matmuls (Einsum.cpp).
  mlir::FailureOr<mlir::Value> einsum(llvm::StringRef equation,
                                      llvm::ArrayRef<mlir::Value> operands);

  /// Runs `importOne` with diagnostics captured; on failure returns the
  /// problem (the recorded node error, else the first diagnostic).
  std::optional<std::string> capture(llvm::function_ref<mlir::LogicalResult()> importOne);

  mlir::MLIRContext &ctx;
  mlir::OpBuilder builder;
  /// Within capture(): the first error diagnostic so far (an op's verifier
  /// or type inference), for messages that name where it happened.
  std::string firstDiagnostic;
  mlir::Location loc = mlir::UnknownLoc::get(&ctx);
  std::string nodeError;

private:
  mlir::LogicalResult inferTypes(mlir::Operation *op);
};

} // namespace colo

#endif
