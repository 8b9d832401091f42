// colo-sequence-parallel: Megatron-LM's sequence parallelism (Korthikanti et
// al., 2022) on a function colo-tensor-parallel has sharded. Between the
// tensor-parallel regions (norms, residual adds, dropout, biases after the
// row-parallel sums) every rank keeps only its block of the tokens: the
// all-reduce that ends a row-parallel region becomes a reduce-scatter, the
// entry of a column-parallel region all-gathers its input, and values leave
// the split through an all-gather where something needs all tokens (the LM
// head). The backward comes from the gradient rules of the collectives and
// of colo.all_reduce_grad (passes/Autodiff.cpp).
//
// Tokens are split into tp contiguous blocks of the row-major token order,
// along each value's first dimension larger than 1 (the batch, or the
// sequence when the batch is 1): the runtime's collectives cut and join
// tensors along that dimension, so no value needs a transpose. Which tokens
// a rank holds does not matter to per-token ops; the volume and the memory
// saved are Megatron's, whose [s, b, h] layout makes the sequence outermost.
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/DimensionMap.h"
#include "Parallel/Mesh.h"
#include "colo/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace colo {
#define GEN_PASS_DEF_COLOSEQUENCEPARALLEL
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The dimension a value's tokens are split along: the first one larger
/// than 1, so each rank's block is contiguous; never the last (features).
std::optional<int64_t> tokenDim(RankedTensorType t) {
  for (int64_t i = 0; i + 1 < t.getRank(); ++i)
    if (t.getDimSize(i) != 1)
      return i;
  return std::nullopt;
}

/// Ops that compute each token from that token alone, which run on the
/// rank's tokens: elementwise ops, norms over the features, reshapes.
bool isTokenWise(Operation *op) {
  return op->getNumResults() == 1 && isa<RankedTensorType>(op->getResult(0).getType()) &&
         (op->hasTrait<OpTrait::Elementwise>() ||
          isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaximumOp, MinimumOp, CompareOp, SelectOp,
              ConvertOp, DropoutOp, LayerNormOp, RmsNormOp, ReshapeOp>(op));
}

class SequenceSplitter {
public:
  SequenceSplitter(func::FuncOp func, MeshAxis axis, int64_t &numScattered,
                   int64_t &numGathered)
      : func(func), axis(axis), tp(axis.size), numScattered(numScattered),
        numGathered(numGathered) {}

  LogicalResult run() {
    findStarts();
    for (Operation &op : llvm::make_early_inc_range(func.front()))
      if (failed(visit(&op)))
        return failure();
    return success();
  }

private:
  bool onAxis(StringRef grid, ArrayRef<int16_t> axes) {
    return grid == axis.grid.getSymName() && axes == ArrayRef<int16_t>{axis.axis};
  }

  /// Where the split starts: the replicated values that reach the entry of a
  /// tensor-parallel region through per-token ops of one input (the first
  /// block's norm), such as the embeddings. Slicing them there puts that
  /// norm, and the residual adds that read them, on the rank's tokens.
  void findStarts() {
    func.walk([&](AllReduceGradOp entry) {
      if (!onAxis(entry.getGrid(), entry.getGridAxes()))
        return;
      Value v = entry.getInput();
      while (Operation *def = v.getDefiningOp()) {
        if (!isa<ReshapeOp, LayerNormOp, RmsNormOp, DropoutOp, ConvertOp>(def))
          break;
        v = def->getOperand(0);
      }
      starts.insert(v);
    });
  }

  LogicalResult visit(Operation *op) {
    if (auto sum = dyn_cast<shard::AllReduceOp>(op))
      if (sum.getReduction() == shard::ReductionKind::Sum &&
          onAxis(sum.getGrid(), sum.getGridAxes()))
        return scatter(sum);
    if (auto entry = dyn_cast<AllReduceGradOp>(op))
      if (split.count(entry.getInput()) && onAxis(entry.getGrid(), entry.getGridAxes())) {
        // Megatron's all-gather before a column-parallel matmul; its
        // gradient, a reduce-scatter, comes from the pair.
        entry.getInputMutable().assign(gather(entry.getInput()));
        ++numGathered;
        return success();
      }
    bool involved = llvm::any_of(op->getOperands(), [&](Value v) {
      return split.count(v) || starts.contains(v);
    });
    if (!involved)
      return success();
    if (isTokenWise(op)) {
      FailureOr<bool> done = splitTokenWise(op);
      if (failed(done))
        return failure();
      if (*done)
        return success();
    }
    // Anything else needs all tokens.
    for (OpOperand &use : op->getOpOperands())
      if (split.count(use.get()))
        use.set(gather(use.get()));
    return success();
  }

  /// The sum that ends a row-parallel region becomes a reduce-scatter: each
  /// rank gets the summed block of its tokens.
  LogicalResult scatter(shard::AllReduceOp sum) {
    Value partial = sum.getInput();
    RankedTensorType whole = tensorType(partial);
    FailureOr<int64_t> d = checkedTokenDim(sum, whole);
    if (failed(d))
      return failure();
    OpBuilder b(sum);
    Value mine = shard::ReduceScatterOp::create(
        b, sum.getLoc(), withDim(whole, *d, whole.getDimSize(*d) / tp), axis.grid.getSymName(),
        {axis.axis}, partial, shard::ReductionKind::Sum, APInt(64, *d));
    sum.getResult().replaceAllUsesWith(mine);
    sum.erase();
    split[mine] = *d;
    ++numScattered;
    return success();
  }

  /// Runs a per-token op on the rank's tokens: true if it does, false if its
  /// operands do not line up (it then reads the gathered values).
  FailureOr<bool> splitTokenWise(Operation *op) {
    Value result = op->getResult(0);
    RankedTensorType whole = tensorType(result);
    std::optional<int64_t> e = tokenDim(whole);
    if (!e)
      return false;
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      Value in = reshape.getInput();
      std::optional<int64_t> d =
          split.count(in) ? std::optional(split.lookup(in)) : tokenDim(tensorType(in));
      if (!d || !llvm::is_contained(reshapeAlignedDims(tensorType(in).getShape(), *d,
                                                       whole.getShape()),
                                    *e))
        return false;
      if (failed(checkedTokenDim(op, whole)) ||
          (!split.count(in) && failed(checkedTokenDim(op, tensorType(in)))))
        return failure();
      if (!split.count(in))
        reshape.getInputMutable().assign(slice(in, *d));
      result.setType(withDim(whole, *e, whole.getDimSize(*e) / tp));
      split[result] = *e;
      return true;
    }
    std::optional<DimMap> map = dimMap(op);
    if (!map)
      return false;
    // Split operands must carry their tokens to the result's token
    // dimension; replicated ones are cut to the rank's tokens or, where they
    // broadcast over the tokens (weights), read whole.
    SmallVector<std::pair<unsigned, int64_t>> splits;
    for (OpOperand &use : op->getOpOperands())
      if (auto it = split.find(use.get()); it != split.end())
        splits.push_back({use.getOperandNumber(), it->second});
    if (!splits.empty() && carrySplit(*map, splits).dim != *e)
      return false;
    SmallVector<std::pair<OpOperand *, int64_t>> cuts;
    SmallVector<OpOperand *> broadcasts;
    for (OpOperand &use : op->getOpOperands()) {
      if (split.count(use.get()))
        continue;
      std::optional<int64_t> d = alignedDim(*map, use.getOperandNumber(), use.get(), *e);
      if (!d) {
        broadcasts.push_back(&use);
        continue;
      }
      RankedTensorType t = tensorType(use.get());
      if (tokenDim(t) != *d || t.getDimSize(*d) != whole.getDimSize(*e))
        return false;
      cuts.push_back({&use, *d});
    }
    if (cuts.empty() && llvm::none_of(op->getOperands(),
                                      [&](Value v) { return split.count(v); }))
      return false;
    if (failed(checkedTokenDim(op, whole)))
      return failure();
    for (auto [use, d] : cuts)
      use->set(slice(use->get(), d));
    // Each rank's tokens give part of a broadcast operand's gradient.
    for (OpOperand *use : broadcasts)
      if (isa<FloatType>(tensorType(use->get()).getElementType()) &&
          !use->get().getDefiningOp<ConstantOp>())
        use->set(sumGradient(use->get()));
    RankedTensorType local = withDim(whole, *e, whole.getDimSize(*e) / tp);
    if (failed(verifyLocalType(op, local, "colo-sequence-parallel")))
      return failure();
    result.setType(local);
    split[result] = *e;
    return true;
  }

  /// The token dimension of `t`, which tp must divide.
  FailureOr<int64_t> checkedTokenDim(Operation *op, RankedTensorType t) {
    std::optional<int64_t> d = tokenDim(t);
    if (d && t.getDimSize(*d) % tp == 0)
      return *d;
    InFlightDiagnostic diag = op->emitError() << "colo-sequence-parallel: ";
    if (d)
      diag << "tp = " << tp << " does not divide dimension " << *d << " (size "
           << t.getDimSize(*d) << ") of " << t;
    else
      diag << t << " has no token dimension to split over tp = " << tp;
    // The CLI prints the message alone: name the model's node.
    diag << ", the tokens of " << op->getName();
    if (auto name = dyn_cast<NameLoc>(op->getLoc()))
      diag << " '" << name.getName().getValue() << "'";
    diag << ": sequence parallelism splits the tokens along their first dimension "
            "larger than 1 (the batch, or the sequence when the batch is 1)";
    return failure();
  }

  /// The rank's block of a replicated value along `dim`; the gradient of
  /// the block is gathered.
  Value slice(Value v, int64_t dim) {
    Value &s = slices[v];
    if (!s) {
      OpBuilder b(v.getContext());
      b.setInsertionPointAfterValue(v);
      RankedTensorType t = tensorType(v);
      s = shard::AllSliceOp::create(b, v.getLoc(), withDim(t, dim, t.getDimSize(dim) / tp), v,
                                    axis.grid.getSymName(), {axis.axis}, dim);
    }
    return s;
  }

  /// All tokens of a split value.
  Value gather(Value v) {
    Value &g = gathers[v];
    if (!g) {
      OpBuilder b(v.getContext());
      b.setInsertionPointAfterValue(v);
      RankedTensorType t = tensorType(v);
      int64_t d = split.lookup(v);
      g = shard::AllGatherOp::create(b, v.getLoc(), withDim(t, d, t.getDimSize(d) * tp),
                                     axis.grid.getSymName(), {axis.axis}, v, APInt(64, d));
    }
    return g;
  }

  /// `v` with its gradient summed over the ranks.
  Value sumGradient(Value v) {
    Value &s = summed[v];
    if (!s) {
      OpBuilder b(v.getContext());
      b.setInsertionPointAfterValue(v);
      s = AllReduceGradOp::create(b, v.getLoc(), v.getType(), v, axis.grid.getSymName(),
                                  ArrayRef<int16_t>{axis.axis});
    }
    return s;
  }

  func::FuncOp func;
  MeshAxis axis;
  int64_t tp;
  int64_t &numScattered, &numGathered;
  DenseSet<Value> starts;
  DenseMap<Value, int64_t> split; // value -> token dimension it is split along
  DenseMap<Value, Value> slices, gathers, summed;
};

struct ColoSequenceParallel : colo::impl::ColoSequenceParallelBase<ColoSequenceParallel> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> target =
        findPlanTarget(module, {"colo-sequence-parallel", "tp", tp, func, "split", false,
                                ColoDialect::SequenceParallelAttrHelper::getNameStr(),
                                "sequence-parallel"});
    if (failed(target))
      return signalPassFailure();
    func::FuncOp f = *target;
    if (!f)
      return;
    IntegerAttr sharded = ColoDialect::TensorParallelAttrHelper(&getContext()).getAttr(f);
    if (!sharded) {
      // colo-tensor-parallel warned that it found no region.
      f.emitWarning() << "colo-sequence-parallel: the function has no tensor-parallel "
                         "region (run colo-tensor-parallel first): nothing to split";
      return;
    }
    if (sharded.getInt() != tp) {
      f.emitError() << "colo-sequence-parallel: tp = " << static_cast<int64_t>(tp)
                    << " but the function is tensor-parallel over " << sharded.getInt();
      return signalPassFailure();
    }
    FailureOr<MeshAxis> axis = getOrCreateMeshAxis(module, "tp", tp, f);
    int64_t scattered = 0, gathered = 0;
    if (failed(axis) ||
        failed(SequenceSplitter(f, *axis, scattered, gathered).run()))
      return signalPassFailure();
    numScattered = scattered;
    numGathered = gathered;
    ColoDialect::SequenceParallelAttrHelper(&getContext()).setAttr(f, sharded);
  }
};
} // namespace
