// Splitting a kernel into pieces the runtime runs side by side
// (KernelPieces.h). The split is found backwards from the outputs: each
// output is cut along its outermost dimension longer than 1 (so that a piece
// is one contiguous chunk of its buffer), and every op passes the cut to the
// operand dimensions that become the cut result dimension; an operand with
// none (a broadcast bias, a scale) is read whole. Only ops that compute each
// element from the same positions of their operands are followed, so a cut
// dimension is never reduced, mixed or counted (dropout's counters, batch
// statistics).
#include "KernelPieces.h"

#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/SplitPropagation.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;
using namespace colo;

namespace {
constexpr int64_t kWhole = -1;

/// The outermost dimension longer than 1: a chunk of it is contiguous.
int64_t leadingDim(RankedTensorType t) {
  for (int64_t d = 0; d < t.getRank(); ++d)
    if (t.getDimSize(d) != 1)
      return d;
  return -1;
}

/// Elementwise ops with NumPy broadcasting (not dropout: its random
/// numbers count positions).
bool isElementwise(Operation *op) {
  return isa<NegOp, AbsOp, ExpOp, LogOp, SqrtOp, RsqrtOp, ReciprocalOp, TanhOp, ErfOp, SigmoidOp,
             ReluOp, SiluOp, CosOp, SinOp, GeluOp, ClampOp, AddOp, SubOp, MulOp, DivOp, PowOp,
             MaximumOp, MinimumOp, CompareOp, SelectOp, ConvertOp, BroadcastToOp>(op);
}

/// Ops whose result element at a position of a dimension an operand carries
/// (DimensionMap.h) reads only that position of it.
bool followsPositions(Operation *op) {
  return isElementwise(op) ||
         isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp, RmsNormOp, ReduceSumOp, ReduceMeanOp,
             ReduceMaxOp, TransposeOp, CrossEntropyRowsOp, CrossEntropyRowsBackwardOp>(op);
}

class PieceSplitter {
public:
  explicit PieceSplitter(int64_t parts) : parts(parts) {}

  /// Finds the cut of every value; false if some value would be needed both
  /// cut and whole, or cut two ways, or an op cannot be cut.
  bool analyze(func::FuncOp f) {
    Block &body = f.front();
    for (Value out : body.getTerminator()->getOperands()) {
      int64_t d = leadingDim(tensorType(out));
      if (d < 0 || !need(out, d))
        return false;
    }
    for (Operation &op : llvm::reverse(body.without_terminator()))
      if (!visit(&op))
        return false;
    // A cut argument must be cut contiguously, like the outputs.
    for (BlockArgument arg : body.getArguments())
      if (auto it = cut.find(arg); it != cut.end() && it->second != kWhole &&
                                   it->second != leadingDim(tensorType(arg)))
        return false;
    return true;
  }

  /// Gives every cut value of the analyzed function its piece's type in
  /// `copy`, a clone of it (`map`: the analyzed function's values and ops
  /// to the copy's).
  void rewrite(func::FuncOp analyzed, func::FuncOp copy, const IRMapping &map) {
    analyzed.walk([&](Operation *op) {
      if (auto slice = dyn_cast<SliceOp>(op))
        cast<SliceOp>(map.lookup(op)).setLimit(localLimit(slice.getLimit(), slice.getResult()));
      else if (auto back = dyn_cast<SliceBackwardOp>(op))
        cast<SliceBackwardOp>(map.lookup(op))
            .setLimit(localLimit(back.getLimit(), back.getGrad()));
    });
    for (auto [v, d] : cut)
      if (d != kWhole)
        map.lookup(v).setType(withDim(tensorType(v), d, tensorType(v).getDimSize(d) / parts));
    Block &body = copy.front();
    copy.setType(FunctionType::get(copy.getContext(), body.getArgumentTypes(),
                                   body.getTerminator()->getOperandTypes()));
  }

  bool isCut(Value v) const {
    auto it = cut.find(v);
    return it != cut.end() && it->second != kWhole;
  }

private:
  bool need(Value v, int64_t d) {
    if (d != kWhole && tensorType(v).getDimSize(d) % parts != 0)
      return false;
    auto [it, inserted] = cut.try_emplace(v, d);
    return inserted || it->second == d;
  }

  /// A slice along the cut dimension is whole there: its limit is the
  /// local size.
  SmallVector<int64_t> localLimit(ArrayRef<int64_t> limit, Value sliced) {
    SmallVector<int64_t> l(limit);
    if (isCut(sliced))
      l[cut.lookup(sliced)] = tensorType(sliced).getDimSize(cut.lookup(sliced)) / parts;
    return l;
  }

  static bool fullAlong(ArrayRef<int64_t> start, ArrayRef<int64_t> limit,
                        ArrayRef<int64_t> stride, int64_t d, int64_t size) {
    return start[d] == 0 && stride[d] == 1 && limit[d] == size;
  }

  bool visit(Operation *op) {
    // Every result of an op is cut alike (the update ops' results share
    // one type); an unused result follows the others.
    std::optional<int64_t> e;
    for (Value r : op->getResults())
      if (auto it = cut.find(r); it != cut.end()) {
        if (e && *e != it->second)
          return false;
        e = it->second;
      }
    if (!e || *e == kWhole) {
      for (Value r : op->getResults())
        cut.try_emplace(r, kWhole);
      return llvm::all_of(op->getOperands(), [&](Value v) { return need(v, kWhole); });
    }
    for (Value r : op->getResults())
      if (!need(r, *e))
        return false;

    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      // An input dimension that starts where the cut one does.
      ArrayRef<int64_t> in = reshape.getInput().getType().getShape();
      for (int64_t d : reshapeAlignedDims(reshape.getType().getShape(), *e, in))
        if (in[d] != 1 && in[d] % parts == 0)
          return need(reshape.getInput(), d);
      return false;
    }
    if (auto slice = dyn_cast<SliceOp>(op))
      return fullAlong(slice.getStart(), slice.getLimit(), slice.getStride(), *e,
                       tensorType(slice.getInput()).getDimSize(*e)) &&
             need(slice.getInput(), *e);
    if (auto back = dyn_cast<SliceBackwardOp>(op))
      return fullAlong(back.getStart(), back.getLimit(), back.getStride(), *e,
                       back.getType().getDimSize(*e)) &&
             need(back.getGrad(), *e);
    if (isa<AdamUpdateOp, SgdUpdateOp>(op)) {
      // Elementwise over the parameter's type; the learning rate and step
      // are scalars.
      Type param = op->getResult(0).getType();
      return llvm::all_of(op->getOperands(), [&](Value v) {
        return need(v, v.getType() == param ? *e : kWhole);
      });
    }
    if (!followsPositions(op) || op->getNumResults() != 1)
      return false;
    std::optional<DimMap> map = dimMap(op);
    if (!map)
      return false;
    // The propagation's step run backwards: the operands that meet the cut
    // result dimension are cut along theirs, the others read whole.
    OperandAlignment operands = alignOperands(op, *map, *e, [](Value) { return false; });
    for (auto [use, d] : operands.aligned)
      if (!need(use->get(), d))
        return false;
    for (OpOperand *use : operands.whole)
      if (!need(use->get(), kWhole))
        return false;
    // A result cut where no operand is cut is a broadcast along it.
    return !operands.aligned.empty() || isElementwise(op);
  }

  int64_t parts;
  DenseMap<Value, int64_t> cut; // value -> cut dimension or kWhole
};

int64_t elementBytes(Value v) {
  return std::max<int64_t>(1, tensorType(v).getElementTypeBitWidth() / 8);
}
} // namespace

bool colo::sumsOverRows(Operation *op) {
  if (isa<ScatterAddOp>(op))
    return true;
  auto reduce = dyn_cast<ReduceSumOp>(op);
  if (!reduce)
    return false;
  int64_t row = leadingDim(tensorType(reduce.getInput()));
  return row >= 0 && llvm::is_contained(reduce.getDims(), row);
}

std::optional<KernelPieces> colo::splitKernelIntoPieces(func::FuncOp kernel,
                                                        ArrayRef<int64_t> candidates,
                                                        int64_t minElements) {
  Block &body = kernel.front();
  Operation *ret = body.getTerminator();
  int64_t elements = 0;
  for (Value out : ret->getOperands())
    elements += tensorType(out).getNumElements();
  if (elements < minElements || ret->getNumOperands() == 0)
    return std::nullopt;
  for (int64_t parts : candidates) {
    PieceSplitter splitter(parts);
    if (parts < 2 || !splitter.analyze(kernel))
      continue;
    KernelPieces result{parts, {}};
    auto bytesPerPiece = [&](Value global) {
      return splitter.isCut(global)
                 ? tensorType(global).getNumElements() / parts * elementBytes(global)
                 : 0;
    };
    for (Value arg : body.getArguments())
      result.pieceBytes.push_back(bytesPerPiece(arg));
    for (Value out : ret->getOperands())
      result.pieceBytes.push_back(bytesPerPiece(out));
    // Rewrite a copy, so that a split the verifier rejects leaves the kernel
    // as it was.
    IRMapping map;
    func::FuncOp piece = kernel.clone(map);
    splitter.rewrite(kernel, piece, map);
    ScopedDiagnosticHandler quiet(kernel.getContext(), [](Diagnostic &) { return success(); });
    if (failed(verify(piece))) {
      piece.erase();
      continue;
    }
    kernel.getBody().takeBody(piece.getBody());
    kernel.setType(piece.getFunctionType());
    piece.erase();
    return result;
  }
  return std::nullopt;
}
