// The ONNX importer's state, shared by the graph walk (OnnxImporter.cpp) and
// the op translations (OnnxOps.cpp).
#ifndef COLO_LIB_IMPORT_ONNXIMPORTERIMPL_H
#define COLO_LIB_IMPORT_ONNXIMPORTERIMPL_H

#include "HostTensor.h"
#include "ImportBase.h"

#include "colo/Dialect/Colo/ColoOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include "onnx.pb.h"

namespace colo::onnx_import {

/// An ONNX value during import: known on the host, an SSA value, or a
/// sequence (SplitToSequence) of either.
struct Val {
  mlir::Value value;
  std::optional<HostTensor> host;
  std::optional<std::vector<Val>> sequence;
  bool defined() const { return value || host || sequence; }
};

class Importer : public ImportBase {
public:
  Importer(mlir::MLIRContext &ctx, llvm::StringRef path,
           llvm::ArrayRef<std::string> inputShapes)
      : ImportBase(ctx), path(path.str()),
        inputShapes(inputShapes.begin(), inputShapes.end()) {}

  mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>> run();

  // --- used by the op translations ---------------------------------------
  using Inputs = llvm::ArrayRef<Val *>;
  using Outputs = llvm::SmallVectorImpl<Val>;
  using Handler = mlir::LogicalResult (Importer::*)(const onnx::NodeProto &, Inputs,
                                                    Outputs &);
  static const llvm::StringMap<Handler> &handlers();

  /// The SSA value of an input, materializing host tensors as constants.
  mlir::Value use(Val &v);
  /// Host values of a required constant input (shape, axes, ...).
  mlir::FailureOr<std::vector<int64_t>> constInts(Val *v, llvm::StringRef what);
  NodeAttrs attrs(const onnx::NodeProto &node);

  int64_t opset = 0;

private:
  mlir::LogicalResult load();
  mlir::LogicalResult classifyInitializers();
  mlir::LogicalResult importGraphInputs();
  mlir::LogicalResult importNode(const onnx::NodeProto &node, size_t index);
  /// Runs a Loop body or If branch at import time with `inputs` bound to
  /// its inputs (OnnxControlFlow.cpp); its values are visible to it only.
  mlir::LogicalResult runSubgraph(const onnx::GraphProto &graph, llvm::ArrayRef<Val> inputs,
                                  llvm::SmallVectorImpl<Val> &outputs);
  /// The value of a node input: an earlier node's output, a graph input or
  /// an initializer (imported on first use).
  mlir::FailureOr<Val *> initializerOrValue(const std::string &name);
  mlir::LogicalResult lookupInputs(const onnx::NodeProto &node,
                                   llvm::SmallVectorImpl<Val *> &ins);
  mlir::FailureOr<Val> initializerValue(const onnx::TensorProto &t);
  mlir::FailureOr<HostTensor> hostTensorOf(const onnx::TensorProto &t);
  /// The absolute path of `t`'s external data file, checked to stay inside
  /// the model's directory (as onnx's checker does): a relative location
  /// without `..` that no symbolic link leads out of.
  mlir::FailureOr<std::string> externalDataFile(const onnx::TensorProto &t);
  mlir::FailureOr<mlir::Attribute> globalInitialValue(const onnx::TensorProto &t,
                                                      mlir::RankedTensorType type);
  mlir::Location nodeLocation(const onnx::NodeProto &node, size_t index);

  // Op translations, one per ONNX op family (OnnxOps.cpp).
#define COLO_ONNX_HANDLER(NAME)                                                \
  mlir::LogicalResult NAME(const onnx::NodeProto &, Inputs, Outputs &);
#include "OnnxHandlers.def"
#undef COLO_ONNX_HANDLER

  std::string path, dir;
  /// The node's first attribute of the wrong type (NodeAttrs' getters).
  std::string attributeError;
  std::vector<std::string> inputShapes;
  onnx::ModelProto model;
  mlir::ModuleOp module;
  mlir::func::FuncOp func;
  llvm::StringMap<Val> values;
  llvm::StringMap<const onnx::TensorProto *> initializers;
  llvm::StringSet<> params, stateBuffers;
  /// An initializer the exporter folded from one parameter by transposing
  /// it (the dynamo exporter's pre-transposed LM head, tied to the
  /// embedding): imported as the parameter's transpose, so that the tie
  /// stays one global with one summed gradient.
  llvm::StringMap<std::string> transposeOf;
};

} // namespace colo::onnx_import

#endif
