// colo-split-batch: rewrites @forward to run on one of `parts` equal slices
// of the batch (data parallelism, gradient accumulation). Every argument's
// leading dimension is divided by `parts` and every value derived from it
// takes its local type; anything whose per-slice form would compute
// something else (a reduction over the batch, a reshape that interleaves
// samples, a partial slice of the batch) is an error. Batch norms on the
// batch are marked to synchronize their statistics over the data-parallel
// ranks (SyncBatchNorm) when asked.
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/SplitPropagation.h"
#include "Parallel/Mesh.h"
#include "colo/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

namespace colo {
#define GEN_PASS_DEF_COLOSPLITBATCH
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
int64_t rankOf(Value v) { return tensorType(v).getRank(); }

/// The dimension of a value that holds the batch.
struct BatchSplit {
  int64_t dim;
};

/// Propagates the batch through the function in order. Ops are updated in
/// place rather than rebuilt: operands already have their producers' local
/// types, so only result types change (and slice limits, and operands that
/// are replaced by local copies); the verifier checks the result.
class BatchSplitter {
public:
  /// `sync`: the mesh axis whose ranks' batch norms share statistics.
  BatchSplitter(int64_t parts, std::optional<MeshAxis> sync, int64_t &numOps)
      : parts(parts), sync(sync), numOps(numOps) {}

  LogicalResult run(func::FuncOp func) {
    if (!func.getBody().hasOneBlock())
      return func.emitError("colo-split-batch expects a single-block function");
    Block &body = func.front();
    for (BlockArgument arg : body.getArguments()) {
      // A scalar or size-1 argument may be batch-independent or a batch of
      // one; either way there is nothing to divide.
      auto t = dyn_cast<RankedTensorType>(arg.getType());
      if (!t || t.getRank() == 0)
        return func.emitError() << "argument #" << arg.getArgNumber() << " ("
                                << arg.getType() << ") has no batch dimension";
      int64_t n = t.getDimSize(0);
      if (n % parts != 0 || n == 1)
        return func.emitError() << "argument #" << arg.getArgNumber() << " ("
                                << t << "): batch size " << n
                                << " is not divisible into " << parts << " parts";
      arg.setType(withDim(t, 0, n / parts));
      batch.split[arg] = {0};
    }
    if (failed(batch.run(body, [&](Operation *op, const Propagation::Carried &carried) {
          return visit(op, carried);
        })))
      return failure();
    // Outermost first: a local copy's original reads the originals of its
    // operands' copies.
    for (Operation *op : llvm::reverse(replaced))
      if (op->use_empty())
        op->erase();
    func.setType(FunctionType::get(func.getContext(), body.getArgumentTypes(),
                                   body.getTerminator()->getOperandTypes()));
    return success();
  }

private:
  using Propagation = SplitPropagation<BatchSplit>;

  LogicalResult visit(Operation *op, const Propagation::Carried &carried) {
    if (carried.empty() || isa<func::ReturnOp>(op))
      return success();
    ++numOps;
    if (auto reshape = dyn_cast<ReshapeOp>(op))
      return visitReshape(reshape, carried.front().second.dim);

    std::optional<DimMap> map = dimMap(op);
    if (!map)
      return op->emitError() << "colo-split-batch does not support '"
                             << op->getName() << "' on a batch-dependent operand";
    SplitStep step = batch.step(op, *map, carried);
    const CarriedSplit &c = step.carried;
    if (c.dim == kReduced)
      return op->emitError() << "reduces over the batch (operand #" << c.operand
                             << ", dimension " << c.operandDim << ")";
    if (c.dim == kMixed)
      return op->emitError() << "mixes samples across the batch (operand #" << c.operand
                             << ", dimension " << c.operandDim << ")";
    if (c.dim == kDisagree)
      return op->emitError() << "operands carry the batch into different "
                                "result dimensions: "
                             << c.before << " vs " << c.other;
    int64_t e = c.dim;
    if (auto slice = dyn_cast<SliceOp>(op))
      if (failed(visitSlice(slice, carried.front().second.dim)))
        return failure();

    // Batch-independent operands aligned with the batch at its full size
    // must be the same for every slice; size 1 broadcasts.
    for (auto [use, d] : step.operands.aligned) {
      FailureOr<Value> local = localCopy(use->get(), d);
      if (failed(local))
        return op->emitError()
               << "batch-independent operand #" << use->getOperandNumber()
               << " (" << use->get().getType() << ") has the batch size in "
               << "dimension " << d << " but differs between the " << parts << " slices";
      use->set(*local);
    }

    RankedTensorType global = tensorType(op->getResult(0));
    if (global.getDimSize(e) % parts != 0)
      return op->emitError() << "result dimension " << e << " of " << global
                             << " is not divisible into " << parts << " parts";
    if (auto bn = dyn_cast<BatchNormOp>(op); bn && sync) {
      bn.setSyncGridAttr(FlatSymbolRefAttr::get(sync->grid.getSymNameAttr()));
      bn.setSyncAxes(ArrayRef<int16_t>{sync->axis});
    }
    return batch.setLocal(op, e, parts, {e}, "colo-split-batch");
  }

  /// The batch must stay the outermost factor of one result dimension e:
  /// the dimensions before it hold the same elements as those before the
  /// input's batch dimension d, and `parts` divides it. Then the slices are
  /// contiguous chunks of dimension e.
  LogicalResult visitReshape(ReshapeOp op, int64_t d) {
    RankedTensorType in = tensorType(op.getInput()), out = op.getType();
    for (int64_t e : reshapeAlignedDims(in.getShape(), d, out.getShape())) {
      if (out.getDimSize(e) % parts != 0)
        continue;
      op.getResult().setType(withDim(out, e, out.getDimSize(e) / parts));
      batch.split[op.getResult()] = {e};
      return success();
    }
    return op.emitError() << "reshape " << withDim(in, d, in.getDimSize(d) * parts)
                          << " -> " << out << " does not keep the batch (dimension "
                          << d << ") as the outermost factor of a result "
                          << "dimension divisible by " << parts;
  }

  /// Only a full slice of the batch dimension has a per-slice form.
  LogicalResult visitSlice(SliceOp op, int64_t d) {
    int64_t size = tensorType(op.getInput()).getDimSize(d);
    if (op.getStart()[d] != 0 || op.getStride()[d] != 1 ||
        op.getLimit()[d] != size * parts)
      return op.emitError() << "slices the batch dimension " << d << ": ["
                            << op.getStart()[d] << ", " << op.getLimit()[d]
                            << ") step " << op.getStride()[d] << " of "
                            << size * parts;
    SmallVector<int64_t> limit(op.getLimit());
    limit[d] = size;
    op.setLimit(limit);
    return success();
  }

  /// A batch-independent value of the batch size in dimension `dim`, cut to
  /// the local size, when its `parts` chunks along `dim` are equal: a
  /// constant (a splat, an expanded mask) or a broadcast along `dim`.
  FailureOr<Value> localCopy(Value v, int64_t dim) {
    auto key = std::make_pair(v, dim);
    if (auto it = copies.find(key); it != copies.end())
      return it->second;
    RankedTensorType t = tensorType(v);
    if (t.getDimSize(dim) % parts != 0)
      return failure();
    RankedTensorType local = withDim(t, dim, t.getDimSize(dim) / parts);
    OpBuilder b(v.getContext());
    b.setInsertionPointAfterValue(v);
    Value copy;
    if (auto c = v.getDefiningOp<ConstantOp>()) {
      auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
      if (!dense)
        return failure();
      DenseElementsAttr value;
      if (dense.isSplat()) {
        value = dense.resizeSplat(local);
      } else {
        // Row-major [outer, parts, chunk, inner]: every chunk must equal
        // the first, which becomes the local constant.
        auto values = llvm::to_vector(dense.getValues<Attribute>());
        int64_t chunk = local.getDimSize(dim), inner = 1;
        for (int64_t i = dim + 1; i < t.getRank(); ++i)
          inner *= t.getDimSize(i);
        int64_t span = chunk * inner, row = span * parts;
        SmallVector<Attribute> first;
        for (int64_t o = 0; o < static_cast<int64_t>(values.size()); o += row) {
          for (int64_t p = 1; p < parts; ++p)
            if (!std::equal(values.begin() + o, values.begin() + o + span,
                            values.begin() + o + p * span))
              return failure();
          first.append(values.begin() + o, values.begin() + o + span);
        }
        value = DenseElementsAttr::get(local, first);
      }
      copy = ConstantOp::create(b, c.getLoc(), value);
    } else if (auto bc = v.getDefiningOp<BroadcastToOp>()) {
      int64_t from = dim - (t.getRank() - rankOf(bc.getInput()));
      if (from >= 0 && tensorType(bc.getInput()).getDimSize(from) != 1)
        return failure();
      copy = BroadcastToOp::create(b, bc.getLoc(), local, bc.getInput());
    } else if (FailureOr<Operation *> op = localOp(v, dim, local); succeeded(op)) {
      copy = (*op)->getResult(0);
    } else {
      return failure();
    }
    replaced.insert(v.getDefiningOp());
    return copies[key] = copy;
  }

  /// The per-slice form of a batch-independent op whose result dimension
  /// `dim` comes from operands whose chunks along it are equal (OPT's
  /// positions: an embedding row per position, gathered for every sample),
  /// computed from their local copies; the operands that do not reach `dim`
  /// are read whole. An op that makes `dim` itself (an iota) has no such
  /// form: at least one operand must carry it.
  FailureOr<Operation *> localOp(Value v, int64_t dim, RankedTensorType local) {
    Operation *def = v.getDefiningOp();
    if (!def || def->getNumResults() != 1 || isa<ReshapeOp, SliceOp>(def))
      return failure();
    std::optional<DimMap> map = dimMap(def);
    if (!map)
      return failure();
    SmallVector<std::pair<unsigned, Value>> operands;
    for (OpOperand &use : def->getOpOperands()) {
      if (!isa<RankedTensorType>(use.get().getType()))
        continue;
      std::optional<int64_t> d = alignedDim(*map, use.getOperandNumber(), use.get(), dim);
      if (!d)
        continue;
      FailureOr<Value> operand = localCopy(use.get(), *d);
      if (failed(operand))
        return failure();
      operands.push_back({use.getOperandNumber(), *operand});
    }
    if (operands.empty())
      return failure();
    OpBuilder b(def);
    b.setInsertionPointAfter(def);
    Operation *op = b.clone(*def);
    for (auto [i, operand] : operands)
      op->setOperand(i, operand);
    if (!inferredTypeIs(op, local)) {
      op->erase();
      return failure();
    }
    op->getResult(0).setType(local);
    return op;
  }

  int64_t parts;
  std::optional<MeshAxis> sync;
  int64_t &numOps;
  Propagation batch;                                   // value -> carrying dim
  DenseMap<std::pair<Value, int64_t>, Value> copies;   // local copies made
  llvm::SetVector<Operation *> replaced;               // their originals
};

struct ColoSplitBatchPass : SplittingPass<colo::impl::ColoSplitBatchBase<ColoSplitBatchPass>> {
  using SplittingPass::SplittingPass;
  PlanTarget target() override { return {"parts", parts}; }

  LogicalResult runOnTarget(ModuleOp module, func::FuncOp f) override {
    std::optional<MeshAxis> sync;
    if (syncRanks > 1) {
      if (parts % syncRanks != 0)
        return f.emitError() << "sync-ranks=" << static_cast<int64_t>(syncRanks)
                             << " does not divide the " << static_cast<int64_t>(parts)
                             << " slices of the batch";
      FailureOr<MeshAxis> dp = getOrCreateMeshAxis(module, "dp", syncRanks, f);
      if (failed(dp))
        return failure();
      sync = *dp;
    }
    int64_t count = 0;
    if (failed(BatchSplitter(parts, sync, count).run(f)))
      return failure();
    numOps += count;
    // Record the split, compounding when the pass runs again.
    int64_t before = 1;
    ColoDialect::BatchPartsAttrHelper batchParts(&getContext());
    if (IntegerAttr attr = batchParts.getAttr(f))
      before = attr.getInt();
    batchParts.setAttr(f, IntegerAttr::get(IntegerType::get(&getContext(), 64), before * parts));
    return success();
  }
};
} // namespace
