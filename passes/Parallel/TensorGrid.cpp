#include "Parallel/TensorGrid.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

#include <numeric>

using namespace mlir;
using namespace colo;

namespace {
/// The name of a model node, for errors.
std::string nodeName(Operation *op) {
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    return (" '" + name.getName().getValue() + "'").str();
  return "";
}

bool isSplat(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
  return dense && dense.isSplat();
}

/// A lookup in a table whose features are split: a row's features are the
/// result's last dimension (the op's own map, which the other passes use,
/// splits the ids only and leaves the table whole).
DimMap embeddingMap(EmbeddingOp op) {
  int64_t ids = tensorType(op.getIds()).getRank();
  SmallVector<int64_t> identity(ids);
  std::iota(identity.begin(), identity.end(), 0);
  return {{kMixed, ids}, identity};
}

/// A convolution's output channels are its filters' dimension 0 (the op's
/// own map, which batch splitting uses, leaves the filters whole).
DimMap convMap(Conv2dOp op) {
  DimMap m{{0, kReduced, kMixed, kMixed}, {1, kReduced, kMixed, kMixed}};
  if (op.getBias())
    m.push_back({1});
  return m;
}
} // namespace

DenseMap<StringAttr, int64_t> colo::countSymbolUses(ModuleOp module) {
  DenseMap<StringAttr, int64_t> uses;
  if (auto all = SymbolTable::getSymbolUses(&module.getBodyRegion()))
    for (const SymbolTable::SymbolUse &use : *all)
      ++uses[use.getSymbolRef().getRootReference()];
  return uses;
}

LogicalResult TensorGrid::run() {
  if (failed(cutInputs()))
    return failure();
  for (Operation &op : llvm::make_early_inc_range(func.front()))
    if (!created.contains(&op) && failed(visit(&op)))
      return failure();
  return success();
}

int64_t TensorGrid::summed() const {
  int64_t n = 0;
  for (const GridLayout &l : layouts)
    n += l.batchSums.size() + l.featureSums.size();
  return n;
}

//===----------------------------------------------------------------------===//
// Layouts
//===----------------------------------------------------------------------===//

std::optional<unsigned> TensorGrid::batchOf(Value v) const {
  auto it = batchSplit.find(v);
  return it == batchSplit.end() ? std::nullopt : std::optional<unsigned>(it->second);
}

std::optional<FeatureSplit> TensorGrid::featuresOf(Value v) const {
  auto it = featureSplit.find(v);
  return it == featureSplit.end() ? std::nullopt : std::optional<FeatureSplit>(it->second);
}

RankedTensorType TensorGrid::wholeType(Value v) const {
  auto it = whole.find(v);
  return it == whole.end() ? tensorType(v) : it->second;
}

LogicalResult TensorGrid::setLayout(Value v, std::optional<unsigned> batch,
                                    std::optional<FeatureSplit> features, bool check) {
  RankedTensorType t = wholeType(v);
  SmallVector<int64_t> shape(t.getShape());
  if (batch) {
    int64_t parts = layouts[*batch].batchParts;
    if (shape[0] % parts)
      return error(
          v.getDefiningOp(),
          "the batch dimension (size " + std::to_string(shape[0]) + ") of " + typeString(t), parts);
    shape[0] /= parts;
    batchSplit[v] = *batch;
  }
  if (features) {
    if (batch && features->dim == 0)
      return unsupported(v.getDefiningOp(), "the batch and the split features merge in "
                                            "dimension 0 of " +
                                                typeString(t));
    if (shape[features->dim] % (q * features->groups))
      return error(v.getDefiningOp(),
                   "dimension " + std::to_string(features->dim) + " (size " +
                       std::to_string(shape[features->dim]) +
                       (features->groups > 1
                            ? ", in " + std::to_string(features->groups) + " groups"
                            : std::string()) +
                       ") of " + typeString(t));
    shape[features->dim] /= q;
    featureSplit[v] = *features;
  }
  if (!batch && !features)
    return success();
  whole.try_emplace(v, t);
  RankedTensorType local = t.clone(shape);
  if (check && v.getDefiningOp() && !created.contains(v.getDefiningOp()) &&
      failed(verifyLocalType(v.getDefiningOp(), local, pass)))
    return failure();
  v.setType(local);
  return success();
}

void TensorGrid::copyLayout(Value v, Value like, std::optional<unsigned> batch,
                            std::optional<FeatureSplit> features) {
  if (batch)
    batchSplit[v] = *batch;
  if (features)
    featureSplit[v] = *features;
  whole[v] = wholeType(like);
}

std::string TensorGrid::typeString(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

LogicalResult TensorGrid::error(Operation *op, const Twine &what, int64_t parts) {
  Operation *at = op ? op : func.getOperation();
  InFlightDiagnostic d = at->emitError() << pass << ": ";
  if (parts && parts != q)
    d << batchPartsName << " = " << parts;
  else
    d << "q = " << q;
  return d << " does not divide " << what << (op ? nodeName(op) : "");
}

LogicalResult TensorGrid::unsupported(Operation *op, const Twine &why) {
  return op->emitError() << pass << ": cannot split " << op->getName() << nodeName(op) << ": "
                         << why;
}

//===----------------------------------------------------------------------===//
// Inputs, results and weights
//===----------------------------------------------------------------------===//

/// Every rank takes its block of each input's samples in the first layout.
LogicalResult TensorGrid::cutInputs() {
  OpBuilder b = OpBuilder::atBlockBegin(&func.front());
  const GridLayout &l = layouts.front();
  for (BlockArgument arg : func.getArguments()) {
    auto t = dyn_cast<RankedTensorType>(arg.getType());
    if (!t || t.getRank() == 0 || arg.use_empty())
      continue;
    if (t.getDimSize(0) % l.batchParts)
      return error(nullptr,
                   "the batch (size " + std::to_string(t.getDimSize(0)) + ") of input " +
                       std::to_string(arg.getArgNumber()) + " (" + splitSamples +
                       " split the samples)",
                   l.batchParts);
    Value cut =
        make<shard::AllSliceOp>(b, arg.getLoc(), withDim(t, 0, t.getDimSize(0) / l.batchParts), arg,
                                gridName(), l.batchAxes, int64_t(0));
    arg.replaceAllUsesExcept(cut, cut.getDefiningOp());
    batchSplit[cut] = 0;
    whole[cut] = t;
  }
  return success();
}

/// The results, gathered whole; but the first, where its samples are split
/// and its last dimension (the classes) split or whole, stays the rank's
/// block: the loss is computed on the blocks, the function marked with
/// their axes (colo.loss_sample_axes, colo.loss_class_axis).
LogicalResult TensorGrid::gatherResults(func::ReturnOp ret) {
  OpBuilder b(ret);
  shard::GridOp grid = layouts.front().features.grid;
  for (OpOperand &result : ret->getOpOperands()) {
    Value v = result.get();
    std::optional<FeatureSplit> c = featuresOf(v);
    std::optional<unsigned> batch = batchOf(v);
    if (c && c->groups != 1)
      return unsupported(ret, "a result split in groups");
    RankedTensorType t = tensorType(v);
    if (result.getOperandNumber() == 0 && batch && t.getRank() >= 2 &&
        isa<FloatType>(t.getElementType()) && (!c || c->dim == t.getRank() - 1)) {
      ArrayAttr names = ColoDialect::AxesAttrHelper(func.getContext()).getAttr(grid);
      SmallVector<Attribute> samples;
      for (shard::GridAxis a : layouts[*batch].batchAxes)
        samples.push_back(names[a]);
      ColoDialect::LossSampleAxesAttrHelper(func.getContext())
          .setAttr(func, b.getArrayAttr(samples));
      if (c)
        ColoDialect::LossClassAxisAttrHelper(func.getContext())
            .setAttr(func, b.getStringAttr(layouts[c->layout].featuresName));
      continue;
    }
    std::optional<MeshAxis> features;
    if (c)
      features = layouts[c->layout].features;
    ArrayRef<shard::GridAxis> samples;
    if (batch)
      samples = layouts[*batch].batchAxes;
    result.set(gatherWhole(b, ret.getLoc(), v, grid, features, c ? c->dim : 0, samples));
  }
  func.setFunctionType(
      FunctionType::get(func.getContext(), func.getArgumentTypes(), ret->getOperandTypes()));
  return success();
}

LogicalResult TensorGrid::shardGlobal(Operation *user, GlobalOp global,
                                      ArrayRef<SmallVector<StringRef, 2>> axes, int64_t groups,
                                      std::optional<FeatureSplit> features) {
  if (global.getShardAttr())
    return unsupported(user, "@" + global.getSymName() + " is sharded already");
  RankedTensorType t = global.getTensorType();
  Builder b(global.getContext());
  SmallVector<Attribute> names;
  SmallVector<int64_t> parts;
  int64_t last = -1;
  for (auto [d, a] : llvm::enumerate(axes))
    if (!a.empty())
      last = int64_t(d);
  for (auto [d, a] : llvm::enumerate(axes)) {
    names.push_back(b.getStrArrayAttr(a));
    int64_t n = 1;
    for (size_t i = 0; i < a.size(); ++i)
      n *= q;
    parts.push_back(n);
    int64_t blocks = n * (int64_t(d) == last ? groups : 1);
    if (t.getDimSize(d) % blocks)
      return error(user,
                   "dimension " + std::to_string(d) + " of @" + global.getSymName().str() + " " +
                       typeString(t) +
                       (groups > 1 ? " in " + std::to_string(groups) + " groups" : ""),
                   n);
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
    if (features)
      featureSplit[load.getResult()] = *features;
  }
  return success();
}

SmallVector<GlobalLoadOp> TensorGrid::loadsOf(GlobalOp global) {
  SmallVector<GlobalLoadOp> loads;
  func.walk([&](GlobalLoadOp load) {
    if (load.getGlobal() == global.getSymName())
      loads.push_back(load);
  });
  return loads;
}

/// A per-feature weight aligned with the features' split along its
/// dimension `dim`: the layout's block of them on every rank.
LogicalResult TensorGrid::shardAlong(Operation *user, Weight w, int64_t dim, int64_t groups,
                                     unsigned layout) {
  int64_t d = w.transpose ? 1 - dim : dim;
  SmallVector<SmallVector<StringRef, 2>> axes(w.global.getTensorType().getRank());
  axes[d] = {layouts[layout].featuresName};
  if (failed(shardGlobal(user, w.global, axes, groups, FeatureSplit{d, groups, layout})))
    return failure();
  return w.transpose ? transposeLayout(w.transpose) : success();
}

FailureOr<int64_t> TensorGrid::shardProductWeight(MatmulOp op, Weight w,
                                                  SmallVector<StringRef, 2> in,
                                                  SmallVector<StringRef, 2> out) {
  int64_t groups = inferSliceGroups(op.getResult(), tensorType(op.getResult()).getRank() - 1);
  SmallVector<SmallVector<StringRef, 2>> axes{in, out};
  if (w.transpose) {
    if (groups > 1)
      return unsupported(op, "a fused projection stored [out, in] (its groups would be "
                             "on the first of two split dimensions)");
    std::swap(axes[0], axes[1]);
  }
  if (failed(shardGlobal(op, w.global, axes, groups, std::nullopt)) ||
      (w.transpose && failed(transposeLayout(w.transpose))))
    return failure();
  return groups;
}

void TensorGrid::erase(Operation *op) {
  for (Value v : op->getResults()) {
    batchSplit.erase(v);
    featureSplit.erase(v);
    whole.erase(v);
  }
  op->erase();
}

LogicalResult TensorGrid::transposeLayout(TransposeOp t) {
  RankedTensorType in = tensorType(t.getInput());
  whole[t.getResult()] = RankedTensorType::get(
      {wholeType(t.getInput()).getDimSize(1), wholeType(t.getInput()).getDimSize(0)},
      in.getElementType());
  t.getResult().setType(
      RankedTensorType::get({in.getDimSize(1), in.getDimSize(0)}, in.getElementType()));
  if (std::optional<FeatureSplit> c = featuresOf(t.getInput()))
    featureSplit[t.getResult()] = FeatureSplit{1 - c->dim, c->groups, c->layout};
  return success();
}

//===----------------------------------------------------------------------===//
// The walk
//===----------------------------------------------------------------------===//

LogicalResult TensorGrid::visit(Operation *op) {
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
  if (auto m = dyn_cast<MatmulOp>(op); m && featuresOf(m.getLhs()))
    return visitProduct(m);
  if (isa<LayerNormOp, RmsNormOp>(op) && featuresOf(op->getOperand(0)))
    return visitNorm(op);
  return visitElementwise(op);
}

/// An embedding (or a gather along dimension 0) of a trainable [rows,
/// features] table: the table's features are split as the ids' layout
/// splits features.
LogicalResult TensorGrid::shardTable(Operation *op) {
  Value table = op->getOperand(0);
  if (auto g = dyn_cast<GatherOp>(op); g && g.getAxis() != 0)
    return success();
  std::optional<Weight> w = loadedWeight(table);
  if (!w || w->transpose || tensorType(table).getRank() != 2 || featuresOf(table))
    return success();
  return shardAlong(op, *w, 1, 1, batchOf(op->getOperand(1)).value_or(0));
}

/// A convolution of the rank's samples with a trainable filter bank (a
/// ViT's patch embedding): each rank computes its layout's block of the
/// output channels, the filters' and the bias's dimension 0 split alike.
LogicalResult TensorGrid::shardFilters(Conv2dOp op) {
  std::optional<Weight> w = loadedWeight(op.getFilter());
  std::optional<unsigned> batch = batchOf(op.getInput());
  if (!batch || featuresOf(op.getInput()) || op.getGroups() != 1 || !w || w->transpose ||
      featuresOf(op.getFilter()))
    return success();
  if (failed(shardAlong(op, *w, 0, 1, *batch)))
    return failure();
  std::optional<Weight> bias = op.getBias() ? loadedWeight(op.getBias()) : std::nullopt;
  if (op.getBias() && !featuresOf(op.getBias()) &&
      (!bias || failed(shardAlong(op, *bias, 0, 1, *batch))))
    return bias ? failure() : unsupported(op, "its bias is not a weight");
  return success();
}

/// A weight broadcast to the batch that an op reads with split features
/// along its dimension `dim` (a ViT's class token, [1, 1, h] to [b, 1, h]):
/// the weight's features split alike, and, where the op splits the batch,
/// the broadcast to the rank's samples, the weight's gradient summed over
/// the sample axes.
LogicalResult TensorGrid::localBroadcast(Operation *user, BroadcastToOp op, int64_t dim,
                                         int64_t groups, unsigned layout, bool batch) {
  RankedTensorType in = tensorType(op.getInput()), out = tensorType(op.getResult());
  int64_t offset = out.getRank() - in.getRank();
  std::optional<Weight> w = loadedWeight(op.getInput());
  if (!w || w->transpose || dim < offset)
    return unsupported(user, "an operand it reads whole lines up with the split features");
  if (failed(shardAlong(op, *w, dim - offset, groups, layout)))
    return failure();
  bool cut = batch && offset == 0 && in.getDimSize(0) == 1 && out.getDimSize(0) > 1;
  if (cut)
    op.getInputMutable().assign(layouts[layout].batchSums.of(op.getInput()));
  return setLayout(op.getResult(), cut ? std::optional<unsigned>(layout) : std::nullopt,
                   FeatureSplit{dim, groups, layout}, /*check=*/false);
}

/// An op that maps dimensions (DimensionMapOpInterface): the batch stays
/// dimension 0, the features go where the map takes them; every split
/// operand is in the same layout.
LogicalResult TensorGrid::visitElementwise(Operation *op) {
  SplitPropagation<FeatureSplit>::Carried cols;
  std::optional<unsigned> batch, layout;
  for (OpOperand &use : op->getOpOperands()) {
    std::optional<unsigned> l = batchOf(use.get());
    std::optional<FeatureSplit> c = featuresOf(use.get());
    if (c)
      cols.push_back({use.getOperandNumber(), *c});
    for (std::optional<unsigned> in : {l, c ? std::optional<unsigned>(c->layout) : std::nullopt}) {
      if (in && layout && *layout != *in)
        return unsupported(op, "its operands are split in different layouts");
      layout = in ? in : layout;
    }
    batch = l ? l : batch;
  }
  if (cols.empty() && !batch)
    return success();
  if (op->getNumResults() != 1 || !isa<RankedTensorType>(op->getResult(0).getType()))
    return unsupported(op, "it has other than one tensor result");
  if (auto reshape = dyn_cast<ReshapeOp>(op))
    return visitReshape(reshape, batch);
  std::optional<DimMap> map = isa<AttentionOp>(op)   ? attentionMap(cast<AttentionOp>(op))
                              : isa<EmbeddingOp>(op) ? embeddingMap(cast<EmbeddingOp>(op))
                              : isa<Conv2dOp>(op)    ? convMap(cast<Conv2dOp>(op))
                                                     : dimMap(op);
  if (!map)
    return unsupported(op, "it maps no dimensions");

  // The features first: the weights that meet them are sharded before the
  // batch's gradient sums wrap them.
  std::optional<FeatureSplit> result;
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
        alignOperands(op, *map, c.dim, [&](Value v) { return featuresOf(v).has_value(); });
    for (auto [use, d] : a.aligned) {
      if (std::optional<Weight> w = loadedWeight(use->get())) {
        if (failed(shardAlong(op, *w, d, groups, *layout)))
          return failure();
      } else if (isSplat(use->get())) {
        use->set(splatBlock(use->get(), d));
      } else if (auto b = use->get().getDefiningOp<BroadcastToOp>(); b && b->hasOneUse()) {
        if (failed(localBroadcast(op, b, d, groups, *layout, batch.has_value())))
          return failure();
      } else {
        return unsupported(op, "an operand it reads whole lines up with the split features");
      }
    }
    sumKeepingBatch(layouts[*layout].featureSums, a.whole);
    result = FeatureSplit{c.dim, groups, *layout};
  }

  // The batch: dimension 0 of every split operand becomes dimension 0.
  if (batch) {
    SmallVector<std::pair<unsigned, int64_t>> dims;
    for (OpOperand &use : op->getOpOperands())
      if (batchOf(use.get()))
        dims.push_back({use.getOperandNumber(), 0});
    if (carrySplit(*map, dims).dim != 0)
      return unsupported(op, "it mixes or reduces the samples of the batch");
    if (auto slice = dyn_cast<SliceOp>(op)) {
      int64_t size = wholeType(slice.getInput()).getDimSize(0);
      if (slice.getStart()[0] != 0 || slice.getLimit()[0] != size || slice.getStride()[0] != 1)
        return unsupported(op, "it takes part of the batch");
      SmallVector<int64_t> limits(slice.getLimit());
      limits[0] /= layouts[*batch].batchParts;
      slice.setLimit(limits);
    }
    OperandAlignment a =
        alignOperands(op, *map, 0, [&](Value v) { return batchOf(v).has_value(); });
    for (auto [use, d] : a.aligned) {
      if (d != 0 || !use->get().getDefiningOp<ConstantOp>())
        return unsupported(op, "it reads a whole batch's operand other than a constant");
      use->set(cutBatch(use->get(), *batch));
    }
    layouts[*batch].batchSums.sumGradients(a.whole);
  }
  return setLayout(op->getResult(0), batch, result);
}

/// Reads `uses` through `sums`; the sums of the rank's samples are.
void TensorGrid::sumKeepingBatch(GradientSums &sums, ArrayRef<OpOperand *> uses) {
  SmallVector<Value> before;
  for (OpOperand *use : uses)
    before.push_back(use->get());
  sums.sumGradients(uses);
  for (auto [use, v] : llvm::zip(uses, before))
    if (use->get() != v)
      if (std::optional<unsigned> batch = batchOf(v))
        copyLayout(use->get(), v, batch, std::nullopt);
}

/// Attention on the rank's samples and heads: query, key and value split
/// along their heads (dimension 1), which keeps grouped-query attention's
/// pairing of query and key/value heads since q divides both counts.
std::optional<DimMap> TensorGrid::attentionMap(AttentionOp op) {
  for (Value v : {op.getQuery(), op.getKey(), op.getValue()}) {
    std::optional<FeatureSplit> c = featuresOf(v);
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
FailureOr<int64_t> TensorGrid::sliceGroups(SliceOp op, FeatureSplit s) {
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

Value TensorGrid::splatBlock(Value v, int64_t dim) {
  OpBuilder b(v.getContext());
  b.setInsertionPointAfterValue(v);
  RankedTensorType t = tensorType(v);
  auto c = v.getDefiningOp<ConstantOp>();
  return make<ConstantOp>(
      b, c.getLoc(),
      cast<DenseElementsAttr>(c.getValue()).resizeSplat(withDim(t, dim, t.getDimSize(dim) / q)));
}

/// A constant with the whole batch: the rank's samples in `layout`.
Value TensorGrid::cutBatch(Value v, unsigned layout) {
  Value &cut = batchCuts[{v, layout}];
  if (!cut) {
    OpBuilder b(v.getContext());
    b.setInsertionPointAfterValue(v);
    RankedTensorType t = tensorType(v);
    const GridLayout &l = layouts[layout];
    cut = make<shard::AllSliceOp>(b, v.getLoc(), withDim(t, 0, t.getDimSize(0) / l.batchParts), v,
                                  gridName(), l.batchAxes, int64_t(0));
  }
  return cut;
}

/// A reshape keeps the batch outermost, and the features where
/// reshapeGroupedSplit finds them (heads split off the features).
LogicalResult TensorGrid::visitReshape(ReshapeOp op, std::optional<unsigned> batch) {
  std::optional<FeatureSplit> result;
  if (std::optional<FeatureSplit> s = featuresOf(op.getInput())) {
    std::optional<std::pair<int64_t, int64_t>> e = reshapeGroupedSplit(
        wholeType(op.getInput()).getShape(), s->dim, s->groups, op.getType().getShape());
    if (!e)
      return unsupported(op, "it moves the split features apart");
    result = FeatureSplit{e->first, e->second, s->layout};
  }
  return setLayout(op.getResult(), batch, result, /*check=*/false);
}

/// x @ w with x's features (its last dimension, contracted) split: the
/// pass's product where w is a weight read once, or a sum over the feature
/// axis where w's contracted features are split too.
LogicalResult TensorGrid::visitProduct(MatmulOp op) {
  Value lhs = op.getLhs(), rhs = op.getRhs();
  FeatureSplit x = *featuresOf(lhs);
  int64_t k = tensorType(lhs).getRank() - 1;
  if (x.dim != k || x.groups != 1)
    return unsupported(op, "its left operand is split along other than its contracted "
                           "features");
  if (tensorType(rhs).getRank() != 2 || batchOf(rhs))
    return unsupported(op, "its right operand is not a [in, out] matrix");
  std::optional<unsigned> batch = batchOf(lhs);
  const GridLayout &l = layouts[x.layout];
  if (std::optional<FeatureSplit> y = featuresOf(rhs)) {
    if (y->dim != 0 || y->groups != 1 || y->layout != x.layout)
      return unsupported(op, "its right operand is not split as its left operand's features");
    // Partial products over the rank's features, summed over the feature
    // axis: the result is whole along the features (Megatron's row-parallel
    // end).
    if (batch)
      op.getRhsMutable().assign(layouts[*batch].batchSums.of(rhs));
    if (failed(setLayout(op.getResult(), batch, std::nullopt, /*check=*/false)))
      return failure();
    OpBuilder b(op);
    b.setInsertionPointAfter(op);
    if (batch && isLogits(op.getResult()) && tensorType(op.getResult()).getShape().back() % q == 0)
      return scatterLogits(b, op, *batch, x.layout);
    Value sum =
        make<shard::AllReduceOp>(b, op.getLoc(), op.getResult(), gridName(),
                                 ArrayRef<int16_t>{l.features.axis}, shard::ReductionKind::Sum);
    op.getResult().replaceAllUsesExcept(sum, sum.getDefiningOp());
    copyLayout(sum, op.getResult(), batch, std::nullopt);
    return success();
  }
  std::optional<Weight> w = loadedWeight(rhs);
  if (!w || symbolUses.lookup(w->global.getSymNameAttr()) != 1 || !rhs.hasOneUse() ||
      (w->transpose && !w->transpose.getInput().hasOneUse()))
    return unsupported(op, "its right operand is not a weight read once");
  return product(op, *w, x.layout, batch.has_value());
}

/// Whether `v` is the function's first result, through reshapes that keep
/// its last dimension: the logits, which the loss reads split.
bool TensorGrid::isLogits(Value v) const {
  int64_t last = tensorType(v).getShape().back();
  while (v.hasOneUse()) {
    Operation *user = *v.getUsers().begin();
    if (auto ret = dyn_cast<func::ReturnOp>(user))
      return ret->getOperand(0) == v;
    auto reshape = dyn_cast<ReshapeOp>(user);
    if (!reshape || tensorType(reshape.getResult()).getShape().back() != last)
      return false;
    v = reshape.getResult();
  }
  return false;
}

/// The logits of a tied head, partial sums over the feature axis,
/// reduce-scattered along the classes over it rather than all-reduced: each
/// rank gets its block of the classes' sums, half the all-reduce's bytes,
/// and the loss reads them split. The classes are brought outermost for the
/// collective, as the runtime splits tensors along their outermost
/// dimension.
LogicalResult TensorGrid::scatterLogits(OpBuilder &b, MatmulOp op, unsigned batch,
                                        unsigned layout) {
  Location loc = op.getLoc();
  RankedTensorType t = tensorType(op.getResult());
  int64_t rank = t.getRank();
  SmallVector<int64_t> perm{rank - 1}, back;
  for (int64_t d = 0; d < rank - 1; ++d)
    perm.push_back(d);
  for (int64_t d = 1; d < rank; ++d)
    back.push_back(d);
  back.push_back(0);
  auto transpose = [&](Value v, ArrayRef<int64_t> p) {
    RankedTensorType vt = tensorType(v);
    SmallVector<int64_t> shape;
    for (int64_t d : p)
      shape.push_back(vt.getDimSize(d));
    return make<TransposeOp>(b, loc, vt.clone(shape), v, b.getDenseI64ArrayAttr(p));
  };
  Value front = transpose(op.getResult(), perm);
  RankedTensorType ft = tensorType(front);
  Value scattered =
      make<shard::ReduceScatterOp>(b, loc, withDim(ft, 0, ft.getDimSize(0) / q), gridName(),
                                   ArrayRef<int16_t>{layouts[layout].features.axis}, front,
                                   shard::ReductionKind::Sum, APInt(64, 0));
  Value logits = transpose(scattered, back);
  op.getResult().replaceAllUsesExcept(logits, front.getDefiningOp());
  copyLayout(logits, op.getResult(), batch, FeatureSplit{rank - 1, 1, layout});
  return success();
}

/// A layer or RMS norm over the split features (the last dimension): the
/// rank's sums, summed over the feature axis, then the normalization of its
/// block.
LogicalResult TensorGrid::visitNorm(Operation *op) {
  Value x = op->getOperand(0);
  RankedTensorType t = tensorType(x);
  int64_t last = t.getRank() - 1;
  auto ln = dyn_cast<LayerNormOp>(op);
  int64_t axis = ln ? int64_t(ln.getAxis()) : int64_t(cast<RmsNormOp>(op).getAxis());
  FeatureSplit split = *featuresOf(x);
  if (split.dim != last || split.groups != 1 || normalizeAxis(axis, t.getRank()) != last)
    return unsupported(op, "it normalizes over other than the split features alone");
  const GridLayout &l = layouts[split.layout];
  Value scale = ln ? ln.getScale() : cast<RmsNormOp>(op).getScale();
  Value bias = ln ? ln.getBias() : Value();
  for (Value p : {scale, bias}) {
    if (!p || featuresOf(p))
      continue;
    std::optional<Weight> w = loadedWeight(p);
    if (!w || failed(shardAlong(op, *w, 0, 1, split.layout)))
      return w ? failure() : unsupported(op, "its scale or bias is not a weight");
  }
  double features = double(wholeType(x).getDimSize(last));
  double eps =
      ln ? ln.getEpsilon().convertToDouble() : cast<RmsNormOp>(op).getEpsilon().convertToDouble();
  // Replicated over the sample axes, read by the rank's samples: their
  // gradients are summed over them.
  std::optional<unsigned> batch = batchOf(x);
  if (batch) {
    scale = scale ? layouts[*batch].batchSums.of(scale) : scale;
    bias = bias ? layouts[*batch].batchSums.of(bias) : bias;
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
    Value grads =
        make<AllReduceGradOp>(b, loc, kept, local, gridName(), ArrayRef<int16_t>{l.features.axis});
    Value sum = make<shard::AllReduceOp>(
        b, loc, grads, gridName(), ArrayRef<int16_t>{l.features.axis}, shard::ReductionKind::Sum);
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
  copyLayout(y, x, batch, FeatureSplit{last, 1, split.layout});
  op->getResult(0).replaceAllUsesWith(y);
  erase(op);
  ++numNorms;
  return success();
}
