// colo-vocab-parallel: Megatron-LM's vocabulary parallelism (Shoeybi et al.,
// 2019, section 3) on @forward. The LM head's weight and the token
// embedding table (the same global when they are tied, as in GPT-2) are
// split over the vocabulary among the tp ranks: each rank looks up the ids
// of its block, the others' rows being zero, and the partial embeddings are
// summed; each rank computes its block of the logits, which are never
// gathered: colo-build-train-step computes the loss from the blocks
// (buildVocabParallelCrossEntropy). The backward follows from the gradient
// rules of shard.all_reduce, colo.all_reduce_grad and colo.stop_gradient.
#include "Parallel/VocabParallel.h"

#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/DimensionMap.h"
#include "Parallel/Mesh.h"
#include "colo/Passes/Passes.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"

#include <numeric>

namespace colo {
#define GEN_PASS_DEF_COLOVOCABPARALLEL
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The first id of the rank's block of a vocabulary of `tp` blocks of
/// `block` ids (a 0-d i64): the rank's element of a constant taken by
/// shard.all_slice, so the program is the same on every rank.
Value blockStart(OpBuilder &b, Location loc, MeshAxis axis, int64_t block) {
  auto i64 = b.getIntegerType(64);
  SmallVector<int64_t> starts;
  for (int64_t r = 0; r < axis.size; ++r)
    starts.push_back(r * block);
  auto all = RankedTensorType::get({axis.size}, i64);
  Value table = ConstantOp::create(b, loc, DenseElementsAttr::get(all, ArrayRef(starts)));
  Value mine = shard::AllSliceOp::create(b, loc, RankedTensorType::get({1}, i64), table,
                                         axis.grid.getSymName(), {axis.axis}, 0);
  return ReshapeOp::create(b, loc, RankedTensorType::get({}, i64), mine);
}

Value i64Scalar(OpBuilder &b, Location loc, int64_t v) {
  auto type = RankedTensorType::get({}, b.getIntegerType(64));
  return ConstantOp::create(b, loc, DenseElementsAttr::get(type, v));
}

/// Integer ids or labels as i64, the type of the block starts.
Value asI64(OpBuilder &b, Location loc, Value v) {
  RankedTensorType t = tensorType(v);
  if (t.getElementType().isInteger(64))
    return v;
  return ConvertOp::create(b, loc, t.clone(b.getIntegerType(64)), v);
}

Value floatScalar(OpBuilder &b, Location loc, Type elementType, double v) {
  auto type = RankedTensorType::get({}, elementType);
  return ConstantOp::create(b, loc,
                            DenseElementsAttr::get(type, b.getFloatAttr(elementType, v)));
}

/// The LM head: `h @ W` whose result (possibly reshaped, keeping the
/// vocabulary last) the function returns first; W a trainable global read
/// as [hidden, vocab] directly or through a [1, 0] transpose of [vocab,
/// hidden].
struct LmHead {
  MatmulOp matmul;
  TransposeOp transpose; // null when W is read directly
  GlobalOp global;
  int64_t vocabDim; // of the global
  SmallVector<ReshapeOp> reshapes;
};

std::optional<LmHead> findLmHead(func::FuncOp f) {
  LmHead head{};
  Value v = f.front().getTerminator()->getOperand(0);
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getRank() < 2)
    return std::nullopt;
  int64_t vocab = type.getShape().back();
  while (auto r = v.getDefiningOp<ReshapeOp>()) {
    if (tensorType(r.getInput()).getShape().back() != vocab || !r.getInput().hasOneUse())
      return std::nullopt;
    head.reshapes.push_back(r);
    v = r.getInput();
  }
  head.matmul = v.getDefiningOp<MatmulOp>();
  if (!head.matmul || !v.hasOneUse() || tensorType(head.matmul.getRhs()).getRank() != 2)
    return std::nullopt;
  Value w = head.matmul.getRhs();
  head.vocabDim = 1;
  if ((head.transpose = w.getDefiningOp<TransposeOp>())) {
    if (head.transpose.getPermutation() != ArrayRef<int64_t>{1, 0} || !w.hasOneUse())
      return std::nullopt;
    w = head.transpose.getInput();
    head.vocabDim = 0;
  }
  auto load = w.getDefiningOp<GlobalLoadOp>();
  if (!load)
    return std::nullopt;
  head.global = SymbolTable::lookupNearestSymbolFrom<GlobalOp>(load, load.getGlobalAttr());
  if (!head.global || !head.global.getTrainable())
    return std::nullopt;
  return head;
}

/// The argument `ids` are read from (token ids, not the constant positions
/// of a position embedding), or null.
BlockArgument idsArgument(Value ids) {
  while (Operation *def = ids.getDefiningOp()) {
    if (!isa<ReshapeOp, SliceOp, ConvertOp>(def))
      return nullptr;
    ids = def->getOperand(0);
  }
  return dyn_cast<BlockArgument>(ids);
}

class VocabSplitter {
public:
  VocabSplitter(func::FuncOp f, MeshAxis axis) : f(f), axis(axis), tp(axis.size) {}

  LogicalResult run(int64_t &numEmbeddings) {
    std::optional<LmHead> head = findLmHead(f);
    if (!head)
      return f.emitError()
             << "colo-vocab-parallel: the first result of @" << f.getSymName()
             << " is not an LM head (a matmul of the hidden states with a trainable "
                "[hidden, vocab] or transposed [vocab, hidden] weight whose result is "
                "returned): there is no vocabulary to split";
    vocab = tensorType(head->matmul.getResult()).getShape().back();
    block = vocab / tp;
    if (vocab % tp)
      return head->matmul.emitError()
             << "colo-vocab-parallel: tp = " << tp << " does not divide the vocabulary (size "
             << vocab << ") of @" << head->global.getSymName();
    if (failed(collectTables(*head)))
      return failure();
    // Each rank's block starts at a row only the running program knows, so
    // no rank can name the padding row in its own rows.
    for (EmbeddingOp emb : embeddings)
      if (emb.getPaddingIdx())
        return emb.emitError() << "colo-vocab-parallel: an embedding with padding_idx (its row "
                               << *emb.getPaddingIdx()
                               << " gets no gradient) cannot be split over the vocabulary";
    shard(head->global, head->vocabDim);
    for (GlobalOp table : tables)
      if (table != head->global)
        shard(table, 0);
    splitHead(*head);
    for (EmbeddingOp emb : embeddings)
      splitEmbedding(emb);
    numEmbeddings = embeddings.size();
    return success();
  }

private:
  /// The embeddings to split: those of the LM head's table (tied), and
  /// lookups of token ids in any other [vocab, hidden] table. Every load of
  /// a split global must serve one of them or the LM head.
  LogicalResult collectTables(LmHead &head) {
    f.walk([&](EmbeddingOp emb) {
      auto load = emb.getTable().getDefiningOp<GlobalLoadOp>();
      if (!load || !idsArgument(emb.getIds()))
        return;
      auto global = SymbolTable::lookupNearestSymbolFrom<GlobalOp>(load, load.getGlobalAttr());
      if (!global || !global.getTrainable() ||
          (global != head.global && global.getTensorType().getDimSize(0) != vocab) ||
          (global == head.global && head.vocabDim != 0))
        return;
      embeddings.push_back(emb);
      tables.insert(global);
    });
    tables.insert(head.global);
    Operation *headReader =
        head.transpose ? head.transpose.getOperation() : head.matmul.getOperation();
    for (GlobalOp global : tables) {
      auto uses = SymbolTable::getSymbolUses(global.getSymNameAttr(),
                                             global->getParentOfType<ModuleOp>());
      for (const SymbolTable::SymbolUse &use : *uses) {
        auto load = dyn_cast<GlobalLoadOp>(use.getUser());
        if (!load)
          return use.getUser()->emitError()
                 << "colo-vocab-parallel: @" << global.getSymName()
                 << " is split over the vocabulary, but this op uses it whole";
        if (global.getShardAttr())
          return global.emitError()
                 << "colo-vocab-parallel: @" << global.getSymName() << " is already sharded";
        for (Operation *user : load->getUsers()) {
          auto emb = dyn_cast<EmbeddingOp>(user);
          if (user != headReader && !(emb && llvm::is_contained(embeddings, emb)))
            return user->emitError()
                   << "colo-vocab-parallel: @" << global.getSymName()
                   << " is split over the vocabulary, but this op reads it whole";
        }
        loads[global].push_back(load);
      }
    }
    return success();
  }

  void shard(GlobalOp global, int64_t dim) {
    Builder b(global.getContext());
    global.setShardAttr(
        ShardAttr::split(b.getContext(), global.getTensorType().getRank(), dim, "tp", tp));
    for (GlobalLoadOp load : loads[global])
      load.getResult().setType(localType(global));
  }

  /// Column-parallel over the vocabulary: the input's gradient is summed
  /// over the ranks (colo.all_reduce_grad), each rank's logits are its
  /// block.
  void splitHead(LmHead &head) {
    if (TransposeOp t = head.transpose) {
      RankedTensorType in = tensorType(t.getInput());
      t.getResult().setType(in.clone({in.getDimSize(1), in.getDimSize(0)}));
    }
    MatmulOp m = head.matmul;
    OpBuilder b(m);
    Value input = m.getLhs();
    m.getLhsMutable().assign(AllReduceGradOp::create(b, m.getLoc(), input.getType(), input,
                                                     axis.grid.getSymName(),
                                                     ArrayRef<int16_t>{axis.axis}));
    auto localize = [&](Value v) {
      RankedTensorType t = tensorType(v);
      v.setType(withDim(t, t.getRank() - 1, block));
    };
    localize(m.getResult());
    for (ReshapeOp r : llvm::reverse(head.reshapes))
      localize(r.getResult());
    auto ret = f.front().getTerminator();
    SmallVector<Type> results(ret->getOperandTypes());
    f.setFunctionType(FunctionType::get(f.getContext(), f.getArgumentTypes(), results));
  }

  /// Each rank looks up the ids of its block in its rows (other ids read
  /// row 0 and are zeroed), and the ranks' partial embeddings are summed:
  /// every id has exactly one owner. The sum's gradient is the replicated
  /// gradient, so each rank scatters its own rows' gradient locally.
  void splitEmbedding(EmbeddingOp emb) {
    OpBuilder b(emb);
    Location loc = emb.getLoc();
    if (!start) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&f.front());
      start = blockStart(b, loc, axis, block);
    }
    Value ids = emb.getIds();
    Value local = SubOp::create(b, loc, asI64(b, loc, ids), start);
    Value low = MaximumOp::create(b, loc, local, i64Scalar(b, loc, 0));
    Value clamped = MinimumOp::create(b, loc, low, i64Scalar(b, loc, block - 1));
    Value mine = CompareOp::create(b, loc, ComparePredicate::eq, clamped, local);
    emb.getIdsMutable().assign(clamped);
    b.setInsertionPointAfter(emb);
    RankedTensorType idsType = tensorType(ids);
    SmallVector<int64_t> shape(idsType.getShape());
    shape.push_back(1);
    Value mask = ReshapeOp::create(b, loc, tensorType(mine).clone(shape), mine);
    Type element = tensorType(emb.getResult()).getElementType();
    Value part = SelectOp::create(b, loc, mask, emb.getResult(), floatScalar(b, loc, element, 0.0));
    auto sum = shard::AllReduceOp::create(b, loc, part, axis.grid.getSymName(), {axis.axis},
                                          shard::ReductionKind::Sum);
    emb.getResult().replaceAllUsesExcept(sum.getResult(), part.getDefiningOp());
    // The ids no longer reach a lookup of the whole table: keep their range
    // for the compiler's data checks.
    if (BlockArgument arg = idsArgument(ids))
      f.setArgAttr(arg.getArgNumber(), ColoDialect::IntMaxAttrHelper::getNameStr(),
                   b.getI64IntegerAttr(vocab));
  }

  func::FuncOp f;
  MeshAxis axis;
  int64_t tp, vocab = 0, block = 0;
  SmallVector<EmbeddingOp> embeddings;
  llvm::SetVector<GlobalOp> tables;
  DenseMap<GlobalOp, SmallVector<GlobalLoadOp>> loads;
  Value start;
};

struct ColoVocabParallel : SplittingPass<colo::impl::ColoVocabParallelBase<ColoVocabParallel>> {
  using SplittingPass::SplittingPass;
  using Done = ColoDialect::VocabParallelAttrHelper;
  PlanTarget target() override { return {"tp", tp, "split", true, Done::getNameStr(), "vocab-parallel"}; }

  LogicalResult runOnTarget(ModuleOp module, func::FuncOp f) override {
    if (f.getNumResults() == 0) {
      f.emitError("colo-vocab-parallel expects a function with results");
      return failure();
    }
    FailureOr<MeshAxis> axis = getOrCreateMeshAxis(module, "tp", tp, f);
    int64_t embeddings = 0;
    if (failed(axis) || failed(VocabSplitter(f, *axis).run(embeddings)))
      return failure();
    numEmbeddings = embeddings;
    ColoDialect::VocabParallelAttrHelper(&getContext())
        .setAttr(f, IntegerAttr::get(IntegerType::get(&getContext(), 64), tp));
    return success();
  }
};
} // namespace

FailureOr<LossSplit> colo::lossSplitOf(func::FuncOp func) {
  MLIRContext *ctx = func.getContext();
  auto module = func->getParentOfType<ModuleOp>();
  LossSplit split;
  auto classAxis = [&](StringRef name, std::optional<int64_t> size) -> LogicalResult {
    FailureOr<MeshAxis> axis =
        size ? getOrCreateMeshAxis(module, name, *size, func) : findMeshAxis(module, name, func);
    if (failed(axis))
      return failure();
    split.classes = *axis;
    return success();
  };
  if (IntegerAttr tp = ColoDialect::VocabParallelAttrHelper(ctx).getAttr(func))
    if (failed(classAxis("tp", tp.getInt())))
      return failure();
  if (StringAttr name = ColoDialect::LossClassAxisAttrHelper(ctx).getAttr(func))
    if (failed(classAxis(name.getValue(), std::nullopt)))
      return failure();
  if (ArrayAttr samples = ColoDialect::LossSampleAxesAttrHelper(ctx).getAttr(func))
    for (StringRef name : samples.getAsValueRange<StringAttr>()) {
      FailureOr<MeshAxis> axis = findMeshAxis(module, name, func);
      if (failed(axis))
        return failure();
      split.grid = axis->grid;
      split.samples.push_back(axis->axis);
      split.sampleParts *= axis->size;
    }
  if (split.classes)
    split.grid = split.classes->grid;
  return split;
}

Value colo::gatherLossInput(OpBuilder &b, Location loc, const LossSplit &split, Value v) {
  shard::GridOp grid = split.grid;
  return gatherWhole(b, loc, v, grid, split.classes, tensorType(v).getRank() - 1, split.samples);
}

FailureOr<Value> colo::buildSplitCrossEntropy(OpBuilder &b, Location loc, func::FuncOp func,
                                              const LossSplit &split, Value logits, Value labels,
                                              int64_t ignoreIndex, double labelSmoothing) {
  RankedTensorType lt = tensorType(logits);
  Type element = lt.getElementType();
  int64_t last = lt.getRank() - 1, block = lt.getShape().back();
  int64_t classes = block * (split.classes ? split.classes->size : 1);
  shard::GridOp gridOp = split.grid;
  StringRef grid = gridOp ? gridOp.getSymName() : StringRef();
  // Over the classes' ranks, where the classes are split.
  auto overClasses = [&](Value v, shard::ReductionKind kind) -> Value {
    if (!split.classes)
      return v;
    return shard::AllReduceOp::create(b, loc, v, grid, {split.classes->axis}, kind);
  };
  auto overBlock = [&](Value v) -> Value {
    return ReduceSumOp::create(b, loc, v, b.getDenseI64ArrayAttr({last}), b.getUnitAttr());
  };
  auto scalar = [&](double v) { return floatScalar(b, loc, element, v); };

  // Labels no longer reach a colo.cross_entropy: keep their range for the
  // compiler's data checks. Then the rank's samples of them.
  if (auto arg = dyn_cast<BlockArgument>(labels); arg && arg.getOwner() == &func.front()) {
    func.setArgAttr(arg.getArgNumber(), ColoDialect::IntMaxAttrHelper::getNameStr(),
                    b.getI64IntegerAttr(classes));
    func.setArgAttr(arg.getArgNumber(), ColoDialect::IntIgnoredAttrHelper::getNameStr(),
                    b.getI64IntegerAttr(ignoreIndex));
  }
  if (!split.samples.empty()) {
    RankedTensorType t = tensorType(labels);
    labels = shard::AllSliceOp::create(b, loc, withDim(t, 0, t.getDimSize(0) / split.sampleParts),
                                       labels, grid, split.samples, int64_t(0));
  }

  // Shifted by the largest logit over all ranks for range, which the loss
  // does not depend on: no gradient flows into the shift.
  Value localMax = ReduceMaxOp::create(b, loc, logits, b.getDenseI64ArrayAttr({last}),
                                       b.getUnitAttr());
  Value max = overClasses(localMax, shard::ReductionKind::Max);
  max = StopGradientOp::create(b, loc, max.getType(), max);
  Value z = SubOp::create(b, loc, logits, max);
  Value sumExp = overClasses(overBlock(ExpOp::create(b, loc, z)), shard::ReductionKind::Sum);
  Value perToken = LogOp::create(b, loc, sumExp);

  // The target's shifted logit, from the rank whose block holds the label.
  labels = asI64(b, loc, labels);
  RankedTensorType labelType = tensorType(labels);
  SmallVector<int64_t> column(labelType.getShape());
  column.push_back(1);
  Value local = labels;
  if (split.classes)
    local = SubOp::create(b, loc, labels, blockStart(b, loc, *split.classes, block));
  local = ReshapeOp::create(b, loc, labelType.clone(column), local);
  SmallVector<int64_t> ids(block);
  std::iota(ids.begin(), ids.end(), 0);
  auto idsType = RankedTensorType::get({block}, labelType.getElementType());
  Value blockIds = ConstantOp::create(b, loc, DenseElementsAttr::get(idsType, ArrayRef(ids)));
  Value isTarget = CompareOp::create(b, loc, ComparePredicate::eq, local, blockIds);
  Value target = overClasses(overBlock(SelectOp::create(b, loc, isTarget, z, scalar(0.0))),
                             shard::ReductionKind::Sum);
  double eps = labelSmoothing;
  if (eps == 0) {
    perToken = SubOp::create(b, loc, perToken, target);
  } else {
    // (1 - eps) (lse - z_t) + eps mean_c (lse - z_c).
    Value sumZ = overClasses(overBlock(z), shard::ReductionKind::Sum);
    perToken = SubOp::create(b, loc, perToken, MulOp::create(b, loc, target, scalar(1 - eps)));
    perToken =
        SubOp::create(b, loc, perToken, MulOp::create(b, loc, sumZ, scalar(eps / double(classes))));
  }
  perToken = ReshapeOp::create(b, loc, labelType.clone(element), perToken);

  // The mean over the positions whose label is not ignore_index, of all the
  // samples' ranks.
  Value counted = CompareOp::create(b, loc, ComparePredicate::ne, labels,
                                    i64Scalar(b, loc, ignoreIndex));
  SmallVector<int64_t> all(labelType.getRank());
  std::iota(all.begin(), all.end(), 0);
  auto total = [&](Value v) -> Value {
    v = ReduceSumOp::create(b, loc, v, b.getDenseI64ArrayAttr(all), nullptr);
    if (split.samples.empty())
      return v;
    return shard::AllReduceOp::create(b, loc, v, grid, split.samples, shard::ReductionKind::Sum);
  };
  Value count = total(ConvertOp::create(b, loc, labelType.clone(element), counted));
  Value sum = total(SelectOp::create(b, loc, counted, perToken, scalar(0.0)));
  return DivOp::create(b, loc, sum, count).getResult();
}
