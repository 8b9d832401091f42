#ifndef COLO_ANALYSIS_MODELSUMMARY_H
#define COLO_ANALYSIS_MODELSUMMARY_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace colo {

/// A run of identical consecutive blocks, `prefix.first` ... `prefix.last`
/// (transformer layers, ResNet stages' residual blocks).
struct RepeatedBlocks {
  std::string prefix;
  int64_t first = 0, count = 0;
  int64_t opsPerBlock = 0, flopsPerBlock = 0, parametersPerBlock = 0;

  /// The module path of the i-th block of the run (from 0): "h" -> "h.3",
  /// "layers.encoder_layer_" -> "layers.encoder_layer_3".
  std::string path(int64_t i) const;
  /// The block (from 0) an op of module path `path` belongs to, if any.
  std::optional<int64_t> blockOf(llvm::StringRef path) const;
};

struct ModelSummary {
  std::string source;
  std::vector<std::string> inputs, outputs;
  int64_t batch = 1;
  int64_t parameters = 0, parameterTensors = 0;
  int64_t bufferElements = 0, bufferTensors = 0;
  int64_t flops = 0, matmulFlops = 0, bytesRead = 0, bytesWritten = 0;
  std::map<std::string, int64_t> opCounts;
  std::vector<RepeatedBlocks> blocks;
};

/// The module path an op came from, from its location: an ONNX node name
/// "/model/h.0/attn/MatMul" or a scoped name "model.h.0.attn/node_MatMul_3"
/// both give "model.h.0.attn".
std::string modulePath(mlir::Location loc);

/// Summarizes the `forward` function of an imported module: parameters
/// (trainable globals), forward cost from the cost interface, op counts and
/// repeated blocks found from the module paths.
ModelSummary summarize(mlir::ModuleOp module);

/// The model's layers: the run of repeated blocks covering the most ops;
/// null when there is none.
const RepeatedBlocks *findLayers(const ModelSummary &summary);

void printSummary(const ModelSummary &summary, llvm::raw_ostream &os);
llvm::json::Value toJSON(const ModelSummary &summary);

} // namespace colo

#endif
