// The TorchScript importer's state, shared by the graph walk
// (TorchScriptImporter.cpp) and the op translations (TorchScriptOps.cpp).
#ifndef COLO_LIB_TORCHIMPORT_TORCHSCRIPTIMPORTERIMPL_H
#define COLO_LIB_TORCHIMPORT_TORCHSCRIPTIMPORTERIMPL_H

#include "../Import/HostTensor.h"
#include "../Import/ImportBase.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"

#include <torch/csrc/jit/ir/ir.h>
#include <torch/script.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <functional>
#include <unordered_map>
#include <vector>

namespace colo::torch_import {

struct TVal;

/// Where a slice or selection lies in the tensor it was taken from, so that
/// an in-place write to it (aten::copy_) updates that tensor: the root value
/// and the slices that lead from it to the view, replayed on the root's
/// element offsets only when something writes.
struct TensorView {
  TVal *root;
  std::vector<std::function<onnx_import::EvalResult(const onnx_import::HostTensor &)>> steps;
};

/// A TorchScript value during import.
struct TVal {
  mlir::Value value;                           // a tensor computed at run time
  std::optional<onnx_import::HostTensor> host; // a tensor or number known now
  std::optional<std::vector<TVal>> list;       // lists and tuples
  std::optional<torch::jit::Module> module;
  std::string name;                            // module path, or buffer name
  std::optional<std::string> str;
  bool none = false;
  std::shared_ptr<TensorView> view;            // a slice of another value
};

int32_t dtypeOf(c10::ScalarType t);

onnx_import::NodeAttrs attrs(std::map<std::string, int64_t> ints = {},
                             std::map<std::string, std::vector<int64_t>> lists = {});

inline int64_t normDim(int64_t d, int64_t rank) { return d < 0 ? d + rank : d; }

inline TVal runtime(mlir::Value v) {
  TVal t;
  t.value = v;
  return t;
}

class TsImporter : public ImportBase {
public:
  TsImporter(mlir::MLIRContext &ctx, llvm::StringRef path,
             llvm::ArrayRef<std::string> shapes)
      : ImportBase(ctx), path(path.str()), inputShapes(shapes.begin(), shapes.end()) {}
  mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>> run();
  /// The node kinds that have a translation, sorted.
  static std::vector<std::string> kinds();

  // --- used by the op translations ---------------------------------------
  using Inputs = llvm::ArrayRef<TVal *>;
  using Outputs = std::vector<TVal>;

private:
  using Env = std::unordered_map<const torch::jit::Value *, TVal>;
  mlir::LogicalResult importGraph(torch::jit::Graph &graph, const std::string &scope,
                                  std::vector<TVal> args, std::vector<TVal> &results);
  mlir::LogicalResult importBlock(torch::jit::Block &block, const std::string &scope,
                                  Env &env);
  mlir::LogicalResult translate(torch::jit::Node *n, std::vector<TVal *> &ins,
                                std::vector<TVal> &outs);

  // Op translations, one per aten or prim op family (TorchScriptOps.cpp),
  // found by the node's kind.
  using Handler = mlir::LogicalResult (TsImporter::*)(torch::jit::Node *,
                                                      const std::string &kind, Inputs,
                                                      Outputs &);
  static const llvm::StringMap<Handler> &handlers();
#define COLO_TS_HANDLER(NAME)                                                  \
  mlir::LogicalResult NAME(torch::jit::Node *, const std::string &, Inputs, Outputs &);
#include "TorchScriptHandlers.def"
#undef COLO_TS_HANDLER

  // Access to inputs.
  mlir::FailureOr<mlir::Value> tensor(TVal &v);
  mlir::FailureOr<mlir::Value> input(Inputs ins, size_t i);
  mlir::FailureOr<int64_t> toInt(TVal &v, llvm::StringRef what);
  mlir::FailureOr<double> toDouble(TVal &v, llvm::StringRef what);
  mlir::FailureOr<std::vector<int64_t>> toInts(TVal &v, llvm::StringRef what);
  mlir::RankedTensorType typeOf(TVal &v);
  std::vector<int64_t> shapeOf(TVal &v);

  // Emission with a host path and a run-time path.
  mlir::FailureOr<TVal> evalHost(llvm::StringRef onnxOp,
                                 std::vector<const onnx_import::HostTensor *> ins,
                                 const onnx_import::NodeAttrs &a);
  mlir::FailureOr<TVal> reshape(TVal &x, llvm::ArrayRef<int64_t> shape);
  mlir::FailureOr<TVal> transpose(TVal &x, llvm::ArrayRef<int64_t> perm);
  mlir::FailureOr<TVal> slice(TVal &x, int64_t dim, int64_t start, int64_t end,
                              int64_t step);
  /// The view of `x` (a value of the environment, which in-place writes
  /// update) that its slice [start:end:step] along `dim` is.
  std::shared_ptr<TensorView> sliceView(TVal &x, int64_t dim, int64_t start, int64_t end,
                                        int64_t step);
  mlir::FailureOr<TVal> binary(llvm::StringRef onnxOp, TVal &a, TVal &b);
  /// `a <p> b` elementwise on run-time values (a number takes the tensor's
  /// element type).
  mlir::FailureOr<TVal> compare(ComparePredicate p, TVal &a, TVal &b);
  /// Both operands of an elementwise op as tensors, a number taking the
  /// element type of the tensor it meets, as in PyTorch.
  mlir::FailureOr<std::pair<mlir::Value, mlir::Value>> operands(TVal &a, TVal &b);
  mlir::FailureOr<TVal> cast(TVal &x, int32_t dtype);
  mlir::FailureOr<TVal> concat(std::vector<TVal> &xs, int64_t dim);
  mlir::FailureOr<TVal> expand(TVal &x, llvm::ArrayRef<int64_t> shape);
  mlir::LogicalResult indexLeading(TVal &x, std::vector<TVal> &indices, Outputs &outs);
  mlir::FailureOr<mlir::Value> stateGlobal(const std::string &name, const at::Tensor &t,
                                           bool trainable);

  std::string path;
  std::vector<std::string> inputShapes;
  mlir::ModuleOp module;
  mlir::func::FuncOp func;
  torch::jit::Module root;
  std::set<std::string> parameterNames;
  llvm::StringMap<mlir::Value> globals;
};

} // namespace colo::torch_import

#endif
