// colo-tensor-parallel-2d: 2-D tensor parallelism (Xu et al., 2021;
// Colossal-AI's parallel_2d) on @forward, over a q x q grid: the mesh axes
// "row" (i) and "col" (j). Rank (i, j) holds block i of the batch and block
// j of the features of every activation, and block (i, j) of every linear
// layer's weight [in, out]. A product Y = X W takes SUMMA's q steps: at step
// k the ranks of row i receive X_ik from rank (i, k) (shard.broadcast over
// "col"), the ranks of column j receive W_kj from rank (k, j) (over "row"),
// and each adds X_ik W_kj to its Y_ij. The next step's broadcasts come
// before the current product, so that two blocks are held at a time. The
// backward follows from the broadcasts' gradient rule: the gradients of
// X_ik and W_kj are summed to their roots (shard.reduce), Colossal-AI's ABT
// and ATB products.
//
// Everything else keeps the layout: per-feature weights (biases, norm
// scales, embedding and position tables) hold block j of their features on
// every row, their gradients summed over "row" (colo.all_reduce_grad);
// layer and RMS norms sum their statistics over "col"; attention is local
// (the rank's samples and heads); a product of two feature-split operands
// (an LM head on the tied embedding table) is summed over "col"; a
// convolution with trainable filters (a ViT's patch embedding) computes the
// column's output channels, and a weight broadcast to the batch (its class
// token) the column's features of the rank's samples; the function's
// inputs are cut to the rank's samples and its results gathered whole.
//
// With depth d > 1, 2.5-D tensor parallelism (Wang et al., 2021, Tesseract;
// Colossal-AI's parallel_2p5d): d copies of the grid on the mesh axis
// "depth", copy k on block k of the batch. Everything above runs within a
// copy; the batch is cut over ("depth", "row"), and the gradients of the
// linear weights, whole on every copy, are summed over "depth" too.
#include "Parallel/Mesh.h"
#include "Parallel/Weight.h"
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/Passes.h"
#include "colo/Passes/SplitPropagation.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"

#include <numeric>

namespace colo {
#define GEN_PASS_DEF_COLOTENSORPARALLEL2D
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
constexpr StringLiteral kPass = "colo-tensor-parallel-2d";

/// Features split over "col": dimension `dim`, viewed as `groups` equal
/// groups of which every rank holds its block of each (a fused q|k|v).
struct ColSplit {
  int64_t dim;
  int64_t groups = 1;
};

/// The name of a model node, for errors.
std::string nodeName(Operation *op) {
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    return (" '" + name.getName().getValue() + "'").str();
  return "";
}

class Grid2D {
public:
  /// `depth`: 2.5-D's copies of the grid, each on its part of the batch.
  Grid2D(func::FuncOp func, MeshAxis row, MeshAxis col, std::optional<MeshAxis> depth,
         const DenseMap<StringAttr, int64_t> &symbolUses)
      : func(func), row(row), col(col), q(row.size), symbolUses(symbolUses),
        batchAxes(depth ? SmallVector<shard::GridAxis, 2>{depth->axis, row.axis}
                        : SmallVector<shard::GridAxis, 2>{row.axis}),
        batchParts(q * (depth ? depth->size : 1)), batchSums(row.grid, batchAxes), colSums(col) {
    if (depth)
      depthSums.emplace(*depth);
  }

  LogicalResult run() {
    if (failed(cutInputs()))
      return failure();
    for (Operation &op : llvm::make_early_inc_range(func.front()))
      if (!created.contains(&op) && failed(visit(&op)))
        return failure();
    return success();
  }

  int64_t numSumma = 0, numNorms = 0;
  int64_t summed() const {
    return batchSums.size() + colSums.size() + (depthSums ? depthSums->size() : 0);
  }

private:
  //===--------------------------------------------------------------------===//
  // Layouts
  //===--------------------------------------------------------------------===//

  bool isBatchSplit(Value v) const { return batchSplit.contains(v); }
  std::optional<ColSplit> colOf(Value v) const {
    auto it = colSplit.find(v);
    return it == colSplit.end() ? std::nullopt : std::optional<ColSplit>(it->second);
  }
  /// The whole type of `v` (its type before it was made local).
  RankedTensorType wholeType(Value v) const {
    auto it = whole.find(v);
    return it == whole.end() ? tensorType(v) : it->second;
  }

  /// Records `v`'s layout and gives it its local type, checked against the
  /// op's type inference where `check`.
  LogicalResult setLayout(Value v, bool rows, std::optional<ColSplit> cols, bool check = true) {
    RankedTensorType t = wholeType(v);
    SmallVector<int64_t> shape(t.getShape());
    if (rows) {
      if (shape[0] % batchParts)
        return error(v.getDefiningOp(),
                     "the batch dimension (size " + std::to_string(shape[0]) + ") of " +
                         typeString(t),
                     batchParts);
      shape[0] /= batchParts;
      batchSplit.insert(v);
    }
    if (cols) {
      if (rows && cols->dim == 0)
        return unsupported(v.getDefiningOp(), "the batch and the split features merge in "
                                              "dimension 0 of " +
                                                  typeString(t));
      if (shape[cols->dim] % (q * cols->groups))
        return error(v.getDefiningOp(),
                     "dimension " + std::to_string(cols->dim) + " (size " +
                         std::to_string(shape[cols->dim]) +
                         (cols->groups > 1 ? ", in " + std::to_string(cols->groups) + " groups"
                                           : std::string()) +
                         ") of " + typeString(t));
      shape[cols->dim] /= q;
      colSplit[v] = *cols;
    }
    if (!rows && !cols)
      return success();
    whole.try_emplace(v, t);
    RankedTensorType local = t.clone(shape);
    if (check && v.getDefiningOp() && !created.contains(v.getDefiningOp()) &&
        failed(verifyLocalType(v.getDefiningOp(), local, kPass)))
      return failure();
    v.setType(local);
    return success();
  }

  static std::string typeString(Type t) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << t;
    return s;
  }

  /// `parts` (q, or q * d where 2.5-D cuts the batch) does not divide `what`.
  LogicalResult error(Operation *op, const Twine &what, int64_t parts = 0) {
    Operation *at = op ? op : func.getOperation();
    InFlightDiagnostic d = at->emitError() << kPass << ": ";
    if (parts && parts != q)
      d << "q * depth = " << parts;
    else
      d << "q = " << q;
    return d << " does not divide " << what << (op ? nodeName(op) : "");
  }
  LogicalResult unsupported(Operation *op, const Twine &why) {
    return op->emitError() << kPass << ": cannot split " << op->getName() << nodeName(op) << ": "
                           << why;
  }

  template <typename OpTy, typename... Args> Value make(OpBuilder &b, Args &&...args) {
    auto op = OpTy::create(b, std::forward<Args>(args)...);
    created.insert(op);
    return op->getResult(0);
  }

  //===--------------------------------------------------------------------===//
  // Inputs, results and weights
  //===--------------------------------------------------------------------===//

  /// Every rank of row i takes samples block i of each input (under 2.5-D,
  /// block (k, i) on copy k).
  LogicalResult cutInputs() {
    OpBuilder b = OpBuilder::atBlockBegin(&func.front());
    for (BlockArgument arg : func.getArguments()) {
      auto t = dyn_cast<RankedTensorType>(arg.getType());
      if (!t || t.getRank() == 0 || arg.use_empty())
        continue;
      if (t.getDimSize(0) % batchParts)
        return error(nullptr,
                     "the batch (size " + std::to_string(t.getDimSize(0)) + ") of input " +
                         std::to_string(arg.getArgNumber()) +
                         " (the grid's rows split the samples)",
                     batchParts);
      Value cut =
          make<shard::AllSliceOp>(b, arg.getLoc(), withDim(t, 0, t.getDimSize(0) / batchParts), arg,
                                  row.grid.getSymName(), batchAxes, int64_t(0));
      arg.replaceAllUsesExcept(cut, cut.getDefiningOp());
      batchSplit.insert(cut);
      whole[cut] = t;
    }
    return success();
  }

  /// The results, gathered whole: the features over "col" (brought outermost,
  /// as the runtime joins tensors along their outermost dimension), then the
  /// samples over "row" (and "depth").
  LogicalResult gatherResults(func::ReturnOp ret) {
    OpBuilder b(ret);
    for (OpOperand &result : ret->getOpOperands()) {
      Value v = result.get();
      if (std::optional<ColSplit> c = colOf(v)) {
        if (c->groups != 1)
          return unsupported(ret, "a result split in groups");
        RankedTensorType t = tensorType(v);
        SmallVector<int64_t> perm{c->dim};
        for (int64_t d = 0; d < t.getRank(); ++d)
          if (d != c->dim)
            perm.push_back(d);
        Value front = transpose(b, ret.getLoc(), v, perm);
        RankedTensorType ft = tensorType(front);
        Value gathered = make<shard::AllGatherOp>(
            b, ret.getLoc(), withDim(ft, 0, ft.getDimSize(0) * q), col.grid.getSymName(),
            ArrayRef<int16_t>{col.axis}, front, APInt(64, 0));
        SmallVector<int64_t> back(t.getRank());
        for (auto [i, p] : llvm::enumerate(perm))
          back[p] = int64_t(i);
        v = transpose(b, ret.getLoc(), gathered, back);
      }
      if (isBatchSplit(result.get())) {
        RankedTensorType t = tensorType(v);
        v = make<shard::AllGatherOp>(b, ret.getLoc(), withDim(t, 0, t.getDimSize(0) * batchParts),
                                     row.grid.getSymName(), batchAxes, v, APInt(64, 0));
      }
      result.set(v);
    }
    return success();
  }

  Value transpose(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> perm) {
    RankedTensorType t = tensorType(v);
    SmallVector<int64_t> shape;
    for (int64_t p : perm)
      shape.push_back(t.getDimSize(p));
    return make<TransposeOp>(b, loc, t.clone(shape), v, b.getDenseI64ArrayAttr(perm));
  }

  /// Shards `global` (every load of it) as `axes` say per dimension (a
  /// dimension split by "col" holds `groups`); the loads take the block's
  /// type and, where "col" splits, that split.
  LogicalResult shardGlobal(Operation *user, GlobalOp global,
                            ArrayRef<SmallVector<StringRef, 1>> axes, int64_t groups) {
    if (global.getShardAttr())
      return unsupported(user, "@" + global.getSymName() + " is sharded already");
    RankedTensorType t = global.getTensorType();
    Builder b(global.getContext());
    SmallVector<Attribute> names;
    SmallVector<int64_t> parts;
    std::optional<ColSplit> cols;
    for (auto [d, a] : llvm::enumerate(axes)) {
      names.push_back(b.getStrArrayAttr(a));
      parts.push_back(a.empty() ? 1 : q);
      int64_t blocks = a.empty() ? 1 : q * (a.front() == "col" ? groups : 1);
      if (t.getDimSize(d) % blocks)
        return error(user, "dimension " + std::to_string(d) + " of @" + global.getSymName().str() +
                               " " + typeString(t) +
                               (groups > 1 ? " in " + std::to_string(groups) + " groups" : ""));
      if (!a.empty() && a.front() == "col")
        cols = ColSplit{int64_t(d), groups};
    }
    // Every load of it is read after `user`, or through a transpose read
    // after it: the walk has not yet read any of them whole.
    auto readBefore = [&](Operation *reader) {
      return func.front().findAncestorOpInBlock(*reader)->isBeforeInBlock(user);
    };
    for (GlobalLoadOp load : loadsOf(global))
      for (Operation *reader : load->getUsers())
        if (readBefore(reader) &&
            (!isa<TransposeOp>(reader) || llvm::any_of(reader->getUsers(), readBefore)))
          return unsupported(user, "@" + global.getSymName() + " is read whole before it (by " +
                                       reader->getName().getStringRef() + ")");
    global.setShardAttr(
        ShardAttr::get(b.getContext(), b.getArrayAttr(names), parts, groups, false, nullptr, 1));
    for (GlobalLoadOp load : loadsOf(global)) {
      load.getResult().setType(localType(global));
      whole[load.getResult()] = t;
      if (cols)
        colSplit[load.getResult()] = *cols;
    }
    return success();
  }

  SmallVector<GlobalLoadOp> loadsOf(GlobalOp global) {
    SmallVector<GlobalLoadOp> loads;
    func.walk([&](GlobalLoadOp load) {
      if (load.getGlobal() == global.getSymName())
        loads.push_back(load);
    });
    return loads;
  }

  /// A per-feature weight aligned with the features' split along its
  /// dimension `dim`: block j of it on every row.
  LogicalResult shardAlong(Operation *user, Weight w, int64_t dim, int64_t groups) {
    int64_t d = w.transpose ? 1 - dim : dim;
    SmallVector<SmallVector<StringRef, 1>> axes(w.global.getTensorType().getRank());
    axes[d] = {"col"};
    if (failed(shardGlobal(user, w.global, axes, groups)))
      return failure();
    return w.transpose ? transposeLayout(w.transpose) : success();
  }

  /// A transpose [1, 0] of a sharded load takes the transposed block.
  LogicalResult transposeLayout(TransposeOp t) {
    RankedTensorType in = tensorType(t.getInput());
    whole[t.getResult()] = RankedTensorType::get(
        {wholeType(t.getInput()).getDimSize(1), wholeType(t.getInput()).getDimSize(0)},
        in.getElementType());
    t.getResult().setType(
        RankedTensorType::get({in.getDimSize(1), in.getDimSize(0)}, in.getElementType()));
    if (std::optional<ColSplit> c = colOf(t.getInput()))
      colSplit[t.getResult()] = ColSplit{1 - c->dim, c->groups};
    return success();
  }

  //===--------------------------------------------------------------------===//
  // The walk
  //===--------------------------------------------------------------------===//

  LogicalResult visit(Operation *op) {
    if (auto ret = dyn_cast<func::ReturnOp>(op))
      return gatherResults(ret);
    if (isa<GlobalLoadOp, ConstantOp>(op))
      return success();
    if (isa<TransposeOp>(op) && whole.count(op->getResult(0)))
      return success(); // a sharded weight's, laid out with it
    if (auto d = dyn_cast<DropoutOp>(op); d && d.getRatio().convertToDouble() > 0)
      return unsupported(op, "dropout (each rank would draw the whole batch's mask)");
    if (isa<EmbeddingOp, GatherOp>(op))
      if (failed(shardTable(op)))
        return failure();
    if (auto conv = dyn_cast<Conv2dOp>(op))
      if (failed(shardFilters(conv)))
        return failure();
    if (auto m = dyn_cast<MatmulOp>(op); m && colOf(m.getLhs()))
      return visitProduct(m);
    if (isa<LayerNormOp, RmsNormOp>(op) && colOf(op->getOperand(0)))
      return visitNorm(op);
    return visitElementwise(op);
  }

  /// An embedding (or a gather along dimension 0) of a trainable [rows,
  /// features] table: the table's features are split over "col".
  LogicalResult shardTable(Operation *op) {
    Value table = op->getOperand(0);
    if (auto g = dyn_cast<GatherOp>(op); g && g.getAxis() != 0)
      return success();
    std::optional<Weight> w = loadedWeight(table);
    if (!w || w->transpose || tensorType(table).getRank() != 2 || colOf(table))
      return success();
    return shardAlong(op, *w, 1, 1);
  }

  /// A convolution of the rank's samples with a trainable filter bank (a
  /// ViT's patch embedding): each column computes its block of the output
  /// channels, the filters' and the bias's dimension 0 split over "col".
  LogicalResult shardFilters(Conv2dOp op) {
    std::optional<Weight> w = loadedWeight(op.getFilter());
    if (!isBatchSplit(op.getInput()) || colOf(op.getInput()) || op.getGroups() != 1 || !w ||
        w->transpose || colOf(op.getFilter()))
      return success();
    if (failed(shardAlong(op, *w, 0, 1)))
      return failure();
    std::optional<Weight> bias = op.getBias() ? loadedWeight(op.getBias()) : std::nullopt;
    if (op.getBias() && !colOf(op.getBias()) && (!bias || failed(shardAlong(op, *bias, 0, 1))))
      return bias ? failure() : unsupported(op, "its bias is not a weight");
    return success();
  }

  /// A weight broadcast to the batch that an op reads with split features
  /// along its dimension `dim` (a ViT's class token, [1, 1, h] to [b, 1,
  /// h]): the weight's features split alike, and, where the op splits the
  /// batch, the broadcast to the rank's samples, the weight's gradient
  /// summed over the rows.
  LogicalResult localBroadcast(Operation *user, BroadcastToOp op, int64_t dim, int64_t groups,
                               bool rows) {
    RankedTensorType in = tensorType(op.getInput()), out = tensorType(op.getResult());
    int64_t offset = out.getRank() - in.getRank();
    std::optional<Weight> w = loadedWeight(op.getInput());
    if (!w || w->transpose || dim < offset)
      return unsupported(user, "an operand it reads whole lines up with the split features");
    if (failed(shardAlong(op, *w, dim - offset, groups)))
      return failure();
    bool cut = rows && offset == 0 && in.getDimSize(0) == 1 && out.getDimSize(0) > 1;
    if (cut)
      op.getInputMutable().assign(batchSums.of(op.getInput()));
    return setLayout(op.getResult(), cut, ColSplit{dim, groups}, /*check=*/false);
  }

  /// An op that maps dimensions (DimensionMapOpInterface): the batch stays
  /// dimension 0, the features go where the map takes them.
  LogicalResult visitElementwise(Operation *op) {
    SplitPropagation<ColSplit>::Carried cols;
    bool rows = false;
    for (OpOperand &use : op->getOpOperands()) {
      if (std::optional<ColSplit> c = colOf(use.get()))
        cols.push_back({use.getOperandNumber(), *c});
      rows |= isBatchSplit(use.get());
    }
    if (cols.empty() && !rows)
      return success();
    if (op->getNumResults() != 1 || !isa<RankedTensorType>(op->getResult(0).getType()))
      return unsupported(op, "it has other than one tensor result");
    if (auto reshape = dyn_cast<ReshapeOp>(op))
      return visitReshape(reshape, rows);
    std::optional<DimMap> map = isa<AttentionOp>(op)   ? attentionMap(cast<AttentionOp>(op))
                                : isa<EmbeddingOp>(op) ? embeddingMap(cast<EmbeddingOp>(op))
                                : isa<Conv2dOp>(op)    ? convMap(cast<Conv2dOp>(op))
                                                       : dimMap(op);
    if (!map)
      return unsupported(op, "it maps no dimensions");

    // The features first: the weights that meet them are sharded before
    // the batch's gradient sums wrap them.
    std::optional<ColSplit> result;
    if (!cols.empty()) {
      int64_t groups = cols.front().second.groups;
      SmallVector<std::pair<unsigned, int64_t>> dims;
      for (auto &[i, c] : cols) {
        if (c.groups != groups)
          return unsupported(op, "its operands' features are split in different groups");
        dims.push_back({i, c.dim});
      }
      CarriedSplit c = carrySplit(*map, dims);
      if (!c)
        return unsupported(op, "it mixes or reduces the split features");
      if (auto slice = dyn_cast<SliceOp>(op)) {
        FailureOr<int64_t> g = sliceGroups(slice, cols.front().second);
        if (failed(g))
          return failure();
        groups = *g;
      }
      OperandAlignment a =
          alignOperands(op, *map, c.dim, [&](Value v) { return colOf(v).has_value(); });
      for (auto [use, d] : a.aligned) {
        if (std::optional<Weight> w = loadedWeight(use->get())) {
          if (failed(shardAlong(op, *w, d, groups)))
            return failure();
        } else if (isSplat(use->get())) {
          use->set(splatBlock(use->get(), d));
        } else if (auto b = use->get().getDefiningOp<BroadcastToOp>(); b && b->hasOneUse()) {
          if (failed(localBroadcast(op, b, d, groups, rows)))
            return failure();
        } else {
          return unsupported(op, "an operand it reads whole lines up with the split features");
        }
      }
      sumKeepingBatch(colSums, a.whole);
      result = ColSplit{c.dim, groups};
    }

    // The batch: dimension 0 of every split operand becomes dimension 0.
    if (rows) {
      SmallVector<std::pair<unsigned, int64_t>> dims;
      for (OpOperand &use : op->getOpOperands())
        if (isBatchSplit(use.get()))
          dims.push_back({use.getOperandNumber(), 0});
      if (carrySplit(*map, dims).dim != 0)
        return unsupported(op, "it mixes or reduces the samples of the batch");
      if (auto slice = dyn_cast<SliceOp>(op)) {
        int64_t size = wholeType(slice.getInput()).getDimSize(0);
        if (slice.getStart()[0] != 0 || slice.getLimit()[0] != size || slice.getStride()[0] != 1)
          return unsupported(op, "it takes part of the batch");
        SmallVector<int64_t> limits(slice.getLimit());
        limits[0] /= batchParts;
        slice.setLimit(limits);
      }
      OperandAlignment a = alignOperands(op, *map, 0, [&](Value v) { return isBatchSplit(v); });
      for (auto [use, d] : a.aligned) {
        if (d != 0 || !use->get().getDefiningOp<ConstantOp>())
          return unsupported(op, "it reads a whole batch's operand other than a constant");
        use->set(cutBatch(use->get()));
      }
      batchSums.sumGradients(a.whole);
    }
    return setLayout(op->getResult(0), rows, result);
  }

  /// Reads `uses` through `sums`; the sums of the rank's samples are.
  void sumKeepingBatch(GradientSums &sums, ArrayRef<OpOperand *> uses) {
    SmallVector<Value> before;
    for (OpOperand *use : uses)
      before.push_back(use->get());
    sums.sumGradients(uses);
    for (auto [use, v] : llvm::zip(uses, before))
      if (use->get() != v && isBatchSplit(v)) {
        batchSplit.insert(use->get());
        whole[use->get()] = wholeType(v);
      }
  }

  /// A lookup in a table whose features are split: a row's features are
  /// the result's last dimension (the op's own map, which the other passes
  /// use, splits the ids only and leaves the table whole).
  static DimMap embeddingMap(EmbeddingOp op) {
    int64_t ids = tensorType(op.getIds()).getRank();
    SmallVector<int64_t> identity(ids);
    std::iota(identity.begin(), identity.end(), 0);
    return {{kMixed, ids}, identity};
  }

  /// A convolution's output channels are its filters' dimension 0 (the
  /// op's own map, which batch splitting uses, leaves the filters whole).
  static DimMap convMap(Conv2dOp op) {
    DimMap m{{0, kReduced, kMixed, kMixed}, {1, kReduced, kMixed, kMixed}};
    if (op.getBias())
      m.push_back({1});
    return m;
  }

  /// Attention on the rank's samples and heads: query, key and value split
  /// along their heads (dimension 1), which keeps grouped-query attention's
  /// pairing of query and key/value heads since q divides both counts.
  std::optional<DimMap> attentionMap(AttentionOp op) {
    for (Value v : {op.getQuery(), op.getKey(), op.getValue()}) {
      std::optional<ColSplit> c = colOf(v);
      if (!c || c->dim != 1 || c->groups != 1)
        return std::nullopt;
    }
    DimMap m(3, SmallVector<int64_t>{0, 1, kMixed, kMixed});
    if (Value mask = op.getMask()) {
      SmallVector<int64_t> mm;
      for (int64_t i = 0, r = tensorType(mask).getRank(); i < r; ++i)
        mm.push_back(4 - r + i <= 1 ? 4 - r + i : kMixed);
      m.push_back(mm);
    }
    return m;
  }

  /// A slice of the split features takes whole groups; it holds as many
  /// groups as it takes, and its bounds become the rank's.
  FailureOr<int64_t> sliceGroups(SliceOp op, ColSplit s) {
    int64_t size = wholeType(op.getInput()).getDimSize(s.dim);
    int64_t start = op.getStart()[s.dim], limit = op.getLimit()[s.dim];
    int64_t piece = size / s.groups;
    if (op.getStride()[s.dim] != 1 || start % piece || limit % piece)
      return unsupported(op, "it cuts the split features inside a group");
    SmallVector<int64_t> starts(op.getStart()), limits(op.getLimit());
    starts[s.dim] /= q;
    limits[s.dim] /= q;
    op.setStart(starts);
    op.setLimit(limits);
    return (limit - start) / piece;
  }

  static bool isSplat(Value v) {
    auto c = v.getDefiningOp<ConstantOp>();
    auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
    return dense && dense.isSplat();
  }
  Value splatBlock(Value v, int64_t dim) {
    OpBuilder b(v.getContext());
    b.setInsertionPointAfterValue(v);
    RankedTensorType t = tensorType(v);
    auto c = v.getDefiningOp<ConstantOp>();
    return make<ConstantOp>(
        b, c.getLoc(),
        cast<DenseElementsAttr>(c.getValue()).resizeSplat(withDim(t, dim, t.getDimSize(dim) / q)));
  }

  /// A constant with the whole batch: the rank's samples.
  Value cutBatch(Value v) {
    Value &cut = batchCuts[v];
    if (!cut) {
      OpBuilder b(v.getContext());
      b.setInsertionPointAfterValue(v);
      RankedTensorType t = tensorType(v);
      cut = make<shard::AllSliceOp>(b, v.getLoc(), withDim(t, 0, t.getDimSize(0) / batchParts), v,
                                    row.grid.getSymName(), batchAxes, int64_t(0));
    }
    return cut;
  }

  /// A reshape keeps the batch outermost, and the features where
  /// reshapeGroupedSplit finds them (heads split off the features).
  LogicalResult visitReshape(ReshapeOp op, bool rows) {
    std::optional<ColSplit> result;
    if (std::optional<ColSplit> s = colOf(op.getInput())) {
      std::optional<std::pair<int64_t, int64_t>> e = reshapeGroupedSplit(
          wholeType(op.getInput()).getShape(), s->dim, s->groups, op.getType().getShape());
      if (!e)
        return unsupported(op, "it moves the split features apart");
      result = ColSplit{e->first, e->second};
    }
    return setLayout(op.getResult(), rows, result, /*check=*/false);
  }

  /// x @ w with x's features (its last dimension, contracted) split:
  /// SUMMA where w is a weight read once, or a sum over "col" where w's
  /// contracted features are split too.
  LogicalResult visitProduct(MatmulOp op) {
    Value lhs = op.getLhs(), rhs = op.getRhs();
    ColSplit x = *colOf(lhs);
    int64_t k = tensorType(lhs).getRank() - 1;
    if (x.dim != k || x.groups != 1)
      return unsupported(op, "its left operand is split along other than its contracted "
                             "features");
    if (tensorType(rhs).getRank() != 2 || isBatchSplit(rhs))
      return unsupported(op, "its right operand is not a [in, out] matrix");
    bool rows = isBatchSplit(lhs);
    if (std::optional<ColSplit> y = colOf(rhs)) {
      if (y->dim != 0 || y->groups != 1)
        return unsupported(op, "its right operand is split along its output features");
      // Partial products over the rank's features, summed over "col": the
      // result is whole along the features (Megatron's row-parallel end).
      if (rows)
        op.getRhsMutable().assign(batchSums.of(rhs));
      if (failed(setLayout(op.getResult(), rows, std::nullopt, /*check=*/false)))
        return failure();
      OpBuilder b(op);
      b.setInsertionPointAfter(op);
      Value sum = make<shard::AllReduceOp>(b, op.getLoc(), op.getResult(), col.grid.getSymName(),
                                           ArrayRef<int16_t>{col.axis}, shard::ReductionKind::Sum);
      op.getResult().replaceAllUsesExcept(sum, sum.getDefiningOp());
      if (rows)
        batchSplit.insert(sum);
      whole[sum] = wholeType(op.getResult());
      return success();
    }
    std::optional<Weight> w = loadedWeight(rhs);
    if (!w || symbolUses.lookup(w->global.getSymNameAttr()) != 1 || !rhs.hasOneUse() ||
        (w->transpose && !w->transpose.getInput().hasOneUse()))
      return unsupported(op, "its right operand is not a weight read once");
    return summa(op, *w, rows);
  }

  LogicalResult summa(MatmulOp op, Weight w, bool rows) {
    int64_t n = tensorType(op.getResult()).getRank() - 1;
    int64_t groups = inferSliceGroups(op.getResult(), n);
    // [in, out] split over ("row", "col"); read transposed from [out, in].
    SmallVector<SmallVector<StringRef, 1>> axes{{"row"}, {"col"}};
    if (w.transpose) {
      if (groups > 1)
        return unsupported(op, "a fused projection stored [out, in] (its groups would be "
                               "on the first of two split dimensions)");
      std::swap(axes[0], axes[1]);
    }
    if (failed(shardGlobal(op, w.global, axes, groups)))
      return failure();
    colSplit.erase(w.load.getResult()); // split over both axes: read only here
    if (w.transpose && failed(transposeLayout(w.transpose)))
      return failure();
    colSplit.erase(op.getRhs());
    // Whole on every copy of a 2.5-D grid, which each reads with its samples.
    if (depthSums)
      op.getRhsMutable().assign(depthSums->of(op.getRhs()));

    // Step k's broadcasts are issued before step k - 1's product.
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto blocks = [&](int64_t step) {
      SmallVector<int64_t, 1> root{step};
      Value x =
          make<shard::BroadcastOp>(b, loc, op.getLhs().getType(), col.grid.getSymName(),
                                   ArrayRef<int16_t>{col.axis}, op.getLhs(), root, ValueRange{});
      Value y =
          make<shard::BroadcastOp>(b, loc, op.getRhs().getType(), row.grid.getSymName(),
                                   ArrayRef<int16_t>{row.axis}, op.getRhs(), root, ValueRange{});
      return std::make_pair(x, y);
    };
    if (failed(setLayout(op.getResult(), rows, ColSplit{n, groups})))
      return failure();
    Type type = op.getResult().getType();
    Value sum;
    auto next = blocks(0);
    for (int64_t step = 0; step < q; ++step) {
      auto [x, y] = next;
      if (step + 1 < q)
        next = blocks(step + 1);
      Value product = make<MatmulOp>(b, loc, type, x, y);
      sum = sum ? make<AddOp>(b, loc, type, sum, product) : product;
    }
    op.getResult().replaceAllUsesWith(sum);
    if (rows)
      batchSplit.insert(sum);
    colSplit[sum] = ColSplit{n, groups};
    whole[sum] = wholeType(op.getResult());
    op.erase();
    ++numSumma;
    return success();
  }

  /// A layer or RMS norm over the split features (the last dimension): the
  /// rank's sums, summed over "col", then the normalization of its block.
  LogicalResult visitNorm(Operation *op) {
    Value x = op->getOperand(0);
    RankedTensorType t = tensorType(x);
    int64_t last = t.getRank() - 1;
    auto ln = dyn_cast<LayerNormOp>(op);
    int64_t axis = ln ? int64_t(ln.getAxis()) : int64_t(cast<RmsNormOp>(op).getAxis());
    if (colOf(x)->dim != last || colOf(x)->groups != 1 || normalizeAxis(axis, t.getRank()) != last)
      return unsupported(op, "it normalizes over other than the split features alone");
    Value scale = ln ? ln.getScale() : cast<RmsNormOp>(op).getScale();
    Value bias = ln ? ln.getBias() : Value();
    for (Value p : {scale, bias}) {
      if (!p || colOf(p))
        continue;
      std::optional<Weight> w = loadedWeight(p);
      if (!w || failed(shardAlong(op, *w, 0, 1)))
        return w ? failure() : unsupported(op, "its scale or bias is not a weight");
    }
    double features = double(wholeType(x).getDimSize(last));
    double eps =
        ln ? ln.getEpsilon().convertToDouble() : cast<RmsNormOp>(op).getEpsilon().convertToDouble();
    // Replicated over the rows, read by the rank's samples: their gradients
    // are summed over "row".
    if (isBatchSplit(x)) {
      scale = scale ? batchSums.of(scale) : scale;
      bias = bias ? batchSums.of(bias) : bias;
    }
    OpBuilder b(op);
    Location loc = op->getLoc();
    auto scalar = [&](double v) {
      auto st = RankedTensorType::get({}, t.getElementType());
      return make<ConstantOp>(b, loc,
                              DenseElementsAttr::get(st, b.getFloatAttr(t.getElementType(), v)));
    };
    // The mean over every rank's features: each rank's gradient of it is
    // partial, so it is summed too (colo.all_reduce_grad).
    auto mean = [&](Value v) {
      RankedTensorType kept = withDim(t, last, 1);
      Value local =
          make<ReduceSumOp>(b, loc, kept, v, b.getDenseI64ArrayAttr({last}), b.getUnitAttr());
      Value grads = make<AllReduceGradOp>(b, loc, kept, local, col.grid.getSymName(),
                                          ArrayRef<int16_t>{col.axis});
      Value sum = make<shard::AllReduceOp>(b, loc, grads, col.grid.getSymName(),
                                           ArrayRef<int16_t>{col.axis}, shard::ReductionKind::Sum);
      return make<MulOp>(b, loc, sum, scalar(1.0 / features));
    };
    Value centered = ln ? make<SubOp>(b, loc, x, mean(x)) : x;
    Value var = mean(make<MulOp>(b, loc, centered, centered));
    Value y =
        make<MulOp>(b, loc, centered, make<RsqrtOp>(b, loc, make<AddOp>(b, loc, var, scalar(eps))));
    if (scale)
      y = make<MulOp>(b, loc, y, scale);
    if (bias)
      y = make<AddOp>(b, loc, y, bias);
    if (isBatchSplit(x))
      batchSplit.insert(y);
    colSplit[y] = ColSplit{last, 1};
    whole[y] = wholeType(x);
    op->getResult(0).replaceAllUsesWith(y);
    op->erase();
    ++numNorms;
    return success();
  }

  func::FuncOp func;
  MeshAxis row, col;
  int64_t q;
  const DenseMap<StringAttr, int64_t> &symbolUses;
  DenseSet<Value> batchSplit;
  DenseMap<Value, ColSplit> colSplit;
  DenseMap<Value, RankedTensorType> whole;
  DenseMap<Value, Value> batchCuts;
  DenseSet<Operation *> created;
  SmallVector<shard::GridAxis, 2> batchAxes; // ("depth",) "row"
  int64_t batchParts;                        // q, or q * d
  GradientSums batchSums, colSums;
  std::optional<GradientSums> depthSums;
};

struct ColoTensorParallel2D
    : SplittingPass<colo::impl::ColoTensorParallel2DBase<ColoTensorParallel2D>> {
  using SplittingPass::SplittingPass;
  using Done = ColoDialect::TensorParallel2dAttrHelper;
  PlanTarget target() override {
    return {"q", q, "split", true, Done::getNameStr(), "split over a 2-D grid"};
  }

  LogicalResult runOnTarget(ModuleOp module, func::FuncOp f) override {
    // Without a mesh, the grid's alone (colo-create-mesh makes it with the
    // plan's other axes).
    if (depth < 1)
      return f.emitError() << kPass << ": depth must be at least 1, got "
                           << static_cast<int64_t>(depth);
    SmallVector<std::pair<StringRef, int64_t>, 3> grid{{"row", q}, {"col", q}};
    if (depth > 1)
      grid.insert(grid.begin(), {"depth", depth});
    if (module.getOps<shard::GridOp>().empty() && failed(createMesh(module, grid, f)))
      return failure();
    FailureOr<MeshAxis> row = getOrCreateMeshAxis(module, "row", q, f);
    FailureOr<MeshAxis> col = getOrCreateMeshAxis(module, "col", q, f);
    if (failed(row) || failed(col))
      return failure();
    std::optional<MeshAxis> copies;
    if (depth > 1) {
      FailureOr<MeshAxis> d = getOrCreateMeshAxis(module, "depth", depth, f);
      if (failed(d))
        return failure();
      copies = *d;
    }
    DenseMap<StringAttr, int64_t> symbolUses;
    if (auto uses = SymbolTable::getSymbolUses(&module.getBodyRegion()))
      for (const SymbolTable::SymbolUse &use : *uses)
        ++symbolUses[use.getSymbolRef().getRootReference()];
    Grid2D splitter(f, *row, *col, copies, symbolUses);
    if (failed(splitter.run()))
      return failure();
    numSumma = splitter.numSumma;
    numNorms = splitter.numNorms;
    numSummed = splitter.summed();
    Done(&getContext()).setAttr(f, IntegerAttr::get(IntegerType::get(&getContext(), 64), q));
    return success();
  }
};
} // namespace
