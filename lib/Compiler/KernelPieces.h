//===- KernelPieces.h - Kernels that compute part of their rows -*- C++ -*-===//
//
// A kernel whose every output splits into equal contiguous chunks, each
// computed from the same chunk of some inputs and the whole of the others,
// is rewritten to compute one chunk; the runtime calls it once per chunk
// with its arguments advanced, on as many threads as it has. Every element
// is computed by the same operations in the same order as by the whole
// kernel (only parallel dimensions shrink), so results are bit for bit
// those of one call.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_LIB_COMPILER_KERNELPIECES_H
#define COLO_LIB_COMPILER_KERNELPIECES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

namespace colo {

struct KernelPieces {
  int64_t pieces;
  /// Per argument (inputs, then outputs): bytes between consecutive pieces'
  /// parts of it, 0 for an input every piece reads whole.
  llvm::SmallVector<int64_t> pieceBytes;
};

/// Rewrites `kernel` (colo ops, tensors in, tensors out) to compute one of
/// the first of `candidates` piece counts that divides it, if its outputs
/// hold at least `minElements` elements in all; std::nullopt leaves it
/// unchanged.
std::optional<KernelPieces> splitKernelIntoPieces(mlir::func::FuncOp kernel,
                                                  llvm::ArrayRef<int64_t> candidates,
                                                  int64_t minElements);

/// A sum over its operand's outermost dimension longer than 1, which no
/// piece can compute alone: a reduce_sum over it (a bias or norm gradient)
/// or a scatter_add, which adds rows into the positions its indices name (an
/// embedding gradient).
bool sumsOverRows(mlir::Operation *op);

} // namespace colo

#endif
