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
#include "colo/Passes/SplitPropagation.h"
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
/// The dimension a value's tokens are split along.
struct TokenSplit {
  int64_t dim;
};

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
        numGathered(numGathered), sums(axis) {}

  LogicalResult run() {
    findStarts();
    return tokens.run(func.front(), [&](Operation *op, const Propagation::Carried &carried) {
      return visit(op, carried);
    });
  }

private:
  using Propagation = SplitPropagation<TokenSplit>;

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

  LogicalResult visit(Operation *op, const Propagation::Carried &carried) {
    if (auto sum = dyn_cast<shard::AllReduceOp>(op))
      if (sum.getReduction() == shard::ReductionKind::Sum &&
          onAxis(sum.getGrid(), sum.getGridAxes()))
        return scatter(sum);
    if (auto entry = dyn_cast<AllReduceGradOp>(op))
      if (tokens.isSplit(entry.getInput()) && onAxis(entry.getGrid(), entry.getGridAxes())) {
        // Megatron's all-gather before a column-parallel matmul; its
        // gradient, a reduce-scatter, comes from the pair.
        entry.getInputMutable().assign(gather(entry.getInput()));
        ++numGathered;
        return success();
      }
    bool involved = !carried.empty() || llvm::any_of(op->getOperands(), [&](Value v) {
      return starts.contains(v);
    });
    if (!involved)
      return success();
    if (isTokenWise(op)) {
      FailureOr<bool> done = splitTokenWise(op, carried);
      if (failed(done))
        return failure();
      if (*done)
        return success();
    }
    // Anything else needs all tokens.
    for (OpOperand &use : op->getOpOperands())
      if (tokens.isSplit(use.get()))
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
    tokens.split[mine] = {*d};
    ++numScattered;
    return success();
  }

  /// Runs a per-token op on the rank's tokens: true if it does, false if its
  /// operands do not line up (it then reads the gathered values).
  FailureOr<bool> splitTokenWise(Operation *op, const Propagation::Carried &carried) {
    Value result = op->getResult(0);
    RankedTensorType whole = tensorType(result);
    std::optional<int64_t> e = tokenDim(whole);
    if (!e)
      return false;
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      Value in = reshape.getInput();
      bool isSplit = tokens.isSplit(in);
      std::optional<int64_t> d =
          isSplit ? std::optional(tokens.split.lookup(in).dim) : tokenDim(tensorType(in));
      if (!d || !llvm::is_contained(reshapeAlignedDims(tensorType(in).getShape(), *d,
                                                       whole.getShape()),
                                    *e))
        return false;
      if (failed(checkedTokenDim(op, whole)) ||
          (!isSplit && failed(checkedTokenDim(op, tensorType(in)))))
        return failure();
      if (!isSplit)
        reshape.getInputMutable().assign(slice(in, *d));
      result.setType(withDim(whole, *e, whole.getDimSize(*e) / tp));
      tokens.split[result] = {*e};
      return true;
    }
    std::optional<DimMap> map = dimMap(op);
    if (!map)
      return false;
    // Split operands must carry their tokens to the result's token
    // dimension; replicated ones are cut to the rank's tokens or, where they
    // broadcast over the tokens (weights), read whole.
    if (!carried.empty() && tokens.step(op, *map, carried).carried.dim != *e)
      return false;
    OperandAlignment operands =
        alignOperands(op, *map, *e, [&](Value v) { return tokens.isSplit(v); });
    for (auto [use, d] : operands.aligned) {
      RankedTensorType t = tensorType(use->get());
      if (tokenDim(t) != d || t.getDimSize(d) != whole.getDimSize(*e))
        return false;
    }
    if (operands.aligned.empty() && carried.empty())
      return false;
    if (failed(checkedTokenDim(op, whole)))
      return failure();
    for (auto [use, d] : operands.aligned)
      use->set(slice(use->get(), d));
    // Each rank's tokens give part of a broadcast operand's gradient.
    sums.sumGradients(operands.whole);
    if (failed(tokens.setLocal(op, *e, tp, {*e}, "colo-sequence-parallel")))
      return failure();
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
      int64_t d = tokens.split.lookup(v).dim;
      g = shard::AllGatherOp::create(b, v.getLoc(), withDim(t, d, t.getDimSize(d) * tp),
                                     axis.grid.getSymName(), {axis.axis}, v, APInt(64, d));
    }
    return g;
  }

  func::FuncOp func;
  MeshAxis axis;
  int64_t tp;
  int64_t &numScattered, &numGathered;
  DenseSet<Value> starts;
  Propagation tokens;
  DenseMap<Value, Value> slices, gathers;
  GradientSums sums;
};

struct ColoSequenceParallel : SplittingPass<colo::impl::ColoSequenceParallelBase<ColoSequenceParallel>> {
  using SplittingPass::SplittingPass;
  using Done = ColoDialect::SequenceParallelAttrHelper;
  PlanTarget target() override { return {"tp", tp, "split", false, Done::getNameStr(), "sequence-parallel"}; }

  LogicalResult runOnTarget(ModuleOp module, func::FuncOp f) override {
    IntegerAttr sharded = ColoDialect::TensorParallelAttrHelper(&getContext()).getAttr(f);
    if (!sharded) {
      // colo-tensor-parallel warned that it found no region.
      f.emitWarning() << "colo-sequence-parallel: the function has no tensor-parallel "
                         "region (run colo-tensor-parallel first): nothing to split";
      return success();
    }
    if (sharded.getInt() != tp) {
      f.emitError() << "colo-sequence-parallel: tp = " << static_cast<int64_t>(tp)
                    << " but the function is tensor-parallel over " << sharded.getInt();
      return failure();
    }
    FailureOr<MeshAxis> axis = getOrCreateMeshAxis(module, "tp", tp, f);
    int64_t scattered = 0, gathered = 0;
    if (failed(axis) ||
        failed(SequenceSplitter(f, *axis, scattered, gathered).run()))
      return failure();
    numScattered = scattered;
    numGathered = gathered;
    ColoDialect::SequenceParallelAttrHelper(&getContext()).setAttr(f, sharded);
    return success();
  }
};
} // namespace
