//===- Weight.h - A trainable global as a pass reads it ---------*- C++ -*-===//
//
// colo-tensor-parallel and colo-tensor-parallel-2d shard the weights that
// their products read: a trainable global's load, or nn.Linear's [out, in]
// weight read through a [1, 0] transpose as the exporters emit it.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_PASSES_PARALLEL_WEIGHT_H
#define COLO_PASSES_PARALLEL_WEIGHT_H

#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/IR/SymbolTable.h"

#include <optional>

namespace colo {

struct Weight {
  GlobalOp global;
  GlobalLoadOp load;
  TransposeOp transpose; // null when read directly
};

/// The trainable global `v` loads, directly or through a [1, 0] transpose,
/// or nullopt.
inline std::optional<Weight> loadedWeight(mlir::Value v) {
  Weight w{};
  if ((w.transpose = v.getDefiningOp<TransposeOp>())) {
    if (w.transpose.getPermutation() != llvm::ArrayRef<int64_t>{1, 0})
      return std::nullopt;
    v = w.transpose.getInput();
  }
  w.load = v.getDefiningOp<GlobalLoadOp>();
  if (!w.load)
    return std::nullopt;
  w.global = mlir::SymbolTable::lookupNearestSymbolFrom<GlobalOp>(w.load, w.load.getGlobalAttr());
  if (!w.global || !w.global.getTrainable())
    return std::nullopt;
  return w;
}

} // namespace colo

#endif
