//===- SequenceSplit.h - Sequence blocks on the ranks of one axis -*- C++ -*-===//
//
// colo-ulysses and colo-ring-attention give every rank of one mesh axis a
// block of s / n positions of every sample, before colo-build-train-step:
// the function's [b, s, ...] inputs are cut to the rank's positions and "the
// sequence is split along dimension d" is propagated op by op (the tables of
// passes/DimensionMap.cpp), so per-token ops (embeddings, norms,
// projections, MLPs, residual adds) run on the rank's tokens. Replicated
// values aligned with the sequence (position embeddings, rotary tables) are
// cut to the rank's positions; replicated values a split op reads whole
// (weights, norm scales, embedding tables) go through colo.all_reduce_grad,
// so their gradients, to which each rank's tokens contribute, are summed;
// the LM head and the results read the all-gathered sequence (whose
// gradient is the rank's block), so the loss is the replicated one. The two
// passes differ at colo.attention, which mixes positions: SequenceSplitter
// leaves it to visitAttention.
//
// The rank's positions are contiguous, or zigzag: with the sequence in 2n
// chunks, rank r holds chunks r and 2n - 1 - r, so that under a causal mask
// every rank has the same work (the positions are permuted with colo.gather
// before the cut, and back after the gather).
//
// The runtime's collectives cut and join tensors along their outermost
// non-unit dimension: reshapes and transposes bring the blocks outermost
// around each collective.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_PASSES_PARALLEL_SEQUENCESPLIT_H
#define COLO_PASSES_PARALLEL_SEQUENCESPLIT_H

#include "Parallel/Mesh.h"
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/SplitPropagation.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace colo {

class SequenceSplitter {
public:
  /// `pass` and `option` name the pass and its rank count in errors
  /// ("colo-ulysses: sp = 2 does not divide ...").
  SequenceSplitter(mlir::func::FuncOp func, MeshAxis axis, llvm::StringRef pass,
                   llvm::StringRef option, bool zigzag);
  virtual ~SequenceSplitter() = default;

  mlir::LogicalResult run();

  int64_t numGathered = 0, numSummed = 0;

protected:
  /// How a value is split: dimension `dim` of its global type is laid out
  /// as [outer, s, inner] (the sequence s with the factors merged with it
  /// by reshapes, such as the batch in [b*s, h]); the rank holds
  /// [outer, s/n, inner].
  struct Split {
    mlir::RankedTensorType global;
    int64_t dim, outer, inner;
  };
  using Propagation = SplitPropagation<Split>;

  /// colo.attention whose q, k and v (or some of them) are split.
  virtual mlir::LogicalResult visitAttention(AttentionOp op) = 0;

  /// q, k and v split along their positions (dimension 2), nothing merged.
  bool splitAlongPositions(AttentionOp op) const;
  /// The op reads all tokens of its split operands.
  mlir::LogicalResult whole(mlir::Operation *op);
  /// All tokens of a split value, in order, made once after it.
  mlir::Value gather(mlir::Value v);
  void setSplit(mlir::Value result, Split s);
  /// The ops between `from` and `to` (the reshapes and collectives of cut).
  llvm::SmallPtrSet<mlir::Operation *, 4> producers(mlir::Value to, mlir::Value from);
  static std::string nodeName(mlir::Operation *op);

  template <typename OpTy, typename... Args> mlir::Value make(mlir::OpBuilder &b, Args &&...args) {
    auto op = OpTy::create(b, std::forward<Args>(args)...);
    created.insert(op);
    return op;
  }
  mlir::Value reshape(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                      llvm::ArrayRef<int64_t> shape);
  mlir::Value transpose(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                        llvm::ArrayRef<int64_t> perm);

  /// The global positions the rank at ring index `rank` holds, in order.
  llvm::SmallVector<int64_t> positionsOf(int64_t rank, int64_t length) const;

  mlir::func::FuncOp func;
  MeshAxis axis;
  int64_t n;
  std::string pass, option;
  bool zigzag;
  Propagation splits;

private:
  void findHeads();
  /// The rank's block of `v` along `d`.
  mlir::Value cut(mlir::OpBuilder &b, mlir::Value v, int64_t d,
                  std::optional<mlir::Location> named = {});
  /// `v` with its positions along `d` in the ranks' order (zigzag), or
  /// back in the sequence's order (`inverse`).
  mlir::Value permute(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v, int64_t d,
                      bool inverse);
  /// A replicated value's block of positions, made once.
  mlir::Value slice(mlir::Value v, int64_t d);
  mlir::LogicalResult visit(mlir::Operation *op, const Propagation::Carried &carried);
  mlir::LogicalResult visitReshape(ReshapeOp op);
  mlir::FailureOr<bool> visitTokenWise(mlir::Operation *op, const Propagation::Carried &carried);

  llvm::DenseMap<std::pair<mlir::Value, int64_t>, mlir::Value> slices;
  llvm::DenseMap<mlir::Value, mlir::Value> gathers;
  GradientSums sums;
  llvm::SmallPtrSet<mlir::Operation *, 8> heads;
  llvm::DenseSet<mlir::Operation *> created;
};

} // namespace colo

#endif
