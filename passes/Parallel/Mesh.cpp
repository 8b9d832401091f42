// The device mesh of a parallel plan: how the plan passes find (or create)
// their axis, and colo-create-mesh, which lays out several axes at once.
#include "Parallel/Mesh.h"
#include "colo/Passes/Passes.h"

#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"

namespace colo {
#define GEN_PASS_DEF_COLOCREATEMESH
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

FailureOr<colo::MeshAxis> colo::findMeshAxis(ModuleOp module, StringRef name, Operation *user) {
  auto grids = module.getOps<shard::GridOp>();
  if (grids.empty())
    return user->emitError() << "the module has no mesh (a shard.grid with a '" << name
                             << "' axis)";
  if (std::next(grids.begin()) != grids.end())
    return user->emitError("the module has more than one shard.grid");
  shard::GridOp grid = *grids.begin();
  ArrayAttr axes = ColoDialect::AxesAttrHelper(module.getContext()).getAttr(grid);
  if (!axes || axes.size() != grid.getShape().size())
    return grid.emitError("the mesh needs colo.axes, one name per axis");
  for (auto [i, axis] : llvm::enumerate(axes.getAsValueRange<StringAttr>()))
    if (axis == name)
      return MeshAxis{grid, static_cast<shard::GridAxis>(i), grid.getShape()[i]};
  return user->emitError() << "the mesh has no '" << name << "' axis";
}

FailureOr<colo::MeshAxis> colo::getOrCreateMeshAxis(ModuleOp module, StringRef name,
                                                    int64_t size, Operation *user) {
  if (module.getOps<shard::GridOp>().empty()) {
    std::pair<StringRef, int64_t> axis(name, size);
    FailureOr<shard::GridOp> grid = createMesh(module, axis, user);
    if (failed(grid))
      return failure();
    return MeshAxis{*grid, 0, size};
  }
  FailureOr<MeshAxis> axis = findMeshAxis(module, name, user);
  if (succeeded(axis) && axis->size != size)
    return user->emitError() << "the mesh's '" << name << "' axis has size " << axis->size
                             << ", the plan says " << size;
  return axis;
}

Value colo::gatherWhole(OpBuilder &b, Location loc, Value v, shard::GridOp grid,
                        std::optional<MeshAxis> features, int64_t featureDim,
                        ArrayRef<shard::GridAxis> samples) {
  auto transpose = [&](Value x, ArrayRef<int64_t> perm) -> Value {
    auto t = cast<RankedTensorType>(x.getType());
    SmallVector<int64_t> shape;
    for (int64_t p : perm)
      shape.push_back(t.getDimSize(p));
    return TransposeOp::create(b, loc, t.clone(shape), x, b.getDenseI64ArrayAttr(perm));
  };
  auto gather = [&](Value x, ArrayRef<shard::GridAxis> axes) -> Value {
    auto t = cast<RankedTensorType>(x.getType());
    int64_t parts = 1;
    for (shard::GridAxis a : axes)
      parts *= grid.getShape()[a];
    SmallVector<int64_t> shape(t.getShape());
    shape[0] *= parts;
    return shard::AllGatherOp::create(b, loc, t.clone(shape), grid.getSymName(), axes, x,
                                      APInt(64, 0));
  };
  if (features) {
    int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
    SmallVector<int64_t> perm{featureDim};
    for (int64_t d = 0; d < rank; ++d)
      if (d != featureDim)
        perm.push_back(d);
    SmallVector<int64_t> back(rank);
    for (auto [i, p] : llvm::enumerate(perm))
      back[p] = int64_t(i);
    v = transpose(gather(transpose(v, perm), {features->axis}), back);
  }
  return samples.empty() ? v : gather(v, samples);
}

FailureOr<shard::GridOp>
colo::createMesh(ModuleOp module, ArrayRef<std::pair<StringRef, int64_t>> axes,
                 Operation *user) {
  SmallVector<StringRef> names;
  SmallVector<int64_t> shape;
  for (auto [name, size] : axes) {
    names.push_back(name);
    shape.push_back(size);
  }
  auto grids = module.getOps<shard::GridOp>();
  if (grids.empty()) {
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    auto grid = shard::GridOp::create(b, module.getLoc(), "mesh",
                                      b.getDenseI64ArrayAttr(shape));
    ColoDialect::AxesAttrHelper(b.getContext()).setAttr(grid, b.getStrArrayAttr(names));
    return grid;
  }
  shard::GridOp grid = *grids.begin();
  ArrayAttr existing = ColoDialect::AxesAttrHelper(module.getContext()).getAttr(grid);
  if (std::next(grids.begin()) != grids.end() || !existing ||
      grid.getShape() != ArrayRef<int64_t>(shape) ||
      !llvm::equal(existing.getAsValueRange<StringAttr>(), names))
    return user->emitError() << "the module already has a mesh other than ["
                             << llvm::join(names, ", ") << "] of shape ["
                             << llvm::make_range(shape.begin(), shape.end()) << "]";
  return grid;
}

/// Keyed dropout draws its mask from (key, element index), and every
/// data-parallel rank's slice of the batch starts at index 0: without this
/// each rank would drop the same positions of its samples. Rank i's keys get
/// i * 2^40 added (a run's keys stay below 2^40 for seeds under 2^12), taken
/// from a constant [0, dp) by shard.all_slice, so the program stays the
/// same on every rank.
static void decorrelateDropout(func::FuncOp step, MeshAxis dp) {
  llvm::SetVector<Value> keys;
  step.walk([&](DropoutOp d) {
    if (d.getKey())
      keys.insert(d.getKey());
  });
  if (keys.empty())
    return;
  OpBuilder b = OpBuilder::atBlockBegin(&step.front());
  Location loc = step.getLoc();
  auto i64 = b.getIntegerType(64);
  SmallVector<int64_t> offsets;
  for (int64_t r = 0; r < dp.size; ++r)
    offsets.push_back(r << 40);
  auto all = RankedTensorType::get({dp.size}, i64);
  Value table = ConstantOp::create(b, loc, DenseElementsAttr::get(all, ArrayRef(offsets)));
  Value mine = shard::AllSliceOp::create(b, loc, RankedTensorType::get({1}, i64), table,
                                         dp.grid.getSymName(), {dp.axis}, 0);
  Value offset = ReshapeOp::create(b, loc, RankedTensorType::get({}, i64), mine);
  for (Value key : keys) {
    b.setInsertionPointAfterValue(key);
    auto shifted = AddOp::create(b, loc, key, offset);
    key.replaceAllUsesExcept(shifted, shifted);
  }
}

FailureOr<func::FuncOp> colo::findPlanTarget(ModuleOp module, const PlanTarget &t) {
  if (t.ranks < 1)
    return module.emitError() << t.pass << " needs " << t.option << " >= 1, got " << t.ranks;
  auto f = module.lookupSymbol<func::FuncOp>(t.func);
  if (!f || f.isExternal())
    return module.emitError() << "no func.func @" << t.func << " to " << t.verb;
  if (t.ranks == 1)
    return func::FuncOp();
  if (t.singleBlock && !f.getBody().hasOneBlock())
    return f.emitError() << t.pass << " expects a single-block function";
  if (!t.doneAttr.empty() && f->hasAttr(t.doneAttr))
    return f.emitError() << t.pass << ": the function is already " << t.done;
  return f;
}

FailureOr<func::FuncOp> colo::findTrainStep(ModuleOp module, StringRef pass, StringRef func,
                                            int64_t dp) {
  auto step = module.lookupSymbol<func::FuncOp>(func);
  if (!step)
    return module.emitError() << pass << ": no function @" << func
                              << " (run colo-build-train-step first)";
  if (dp < 1)
    return step.emitError() << pass << ": dp must be at least 1, got " << dp;
  return dp == 1 ? func::FuncOp() : step;
}

void colo::finishDataParallel(func::FuncOp step, MeshAxis dp) {
  auto ret = cast<func::ReturnOp>(step.front().getTerminator());
  OpBuilder b(ret);
  for (OpOperand &result : ret->getOpOperands()) {
    auto type = cast<RankedTensorType>(result.get().getType());
    if (type.getRank() == 0 && isa<FloatType>(type.getElementType()))
      result.set(shard::AllReduceOp::create(b, ret.getLoc(), result.get(),
                                            dp.grid.getSymName(), {dp.axis},
                                            shard::ReductionKind::Average));
  }
  decorrelateDropout(step, dp);
  ColoDialect::DataParallelAttrHelper(b.getContext()).setAttr(step, b.getI64IntegerAttr(dp.size));
}

namespace {
struct ColoCreateMesh : colo::impl::ColoCreateMeshBase<ColoCreateMesh> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (dp < 1 || tp < 1 || pp < 1 || sp < 1 || tp2d < 1 || depth < 1 || tp3d < 1) {
      module.emitError() << "colo-create-mesh: axis sizes must be at least 1, got dp = "
                         << static_cast<int64_t>(dp) << ", tp = " << static_cast<int64_t>(tp)
                         << ", pp = " << static_cast<int64_t>(pp)
                         << ", sp = " << static_cast<int64_t>(sp)
                         << ", tp2d = " << static_cast<int64_t>(tp2d)
                         << ", depth = " << static_cast<int64_t>(depth)
                         << ", tp3d = " << static_cast<int64_t>(tp3d);
      return signalPassFailure();
    }
    // Megatron-LM's order: consecutive ranks share a tensor-parallel group;
    // Ulysses' sp axis sits between dp and tp; a 2-D grid's rows and
    // columns come last, the columns fastest, after a 2.5-D grid's depth;
    // a 3-D cube's axes are last.
    SmallVector<std::pair<StringRef, int64_t>> axes;
    for (auto [name, size] :
         {std::pair<StringRef, int64_t>("pp", pp), {"dp", dp}, {"sp", sp}, {"tp", tp},
          {"depth", depth}, {"row", tp2d}, {"col", tp2d}, {"x", tp3d}, {"y", tp3d}, {"z", tp3d}})
      if (size > 1)
        axes.push_back({name, size});
    if (!axes.empty() && failed(colo::createMesh(module, axes, module)))
      return signalPassFailure();
  }
};
} // namespace

Value GradientSums::of(Value v) {
  Value &s = summed[v];
  if (!s) {
    OpBuilder b(v.getContext());
    b.setInsertionPointAfterValue(v);
    s = AllReduceGradOp::create(b, v.getLoc(), v.getType(), v, grid.getSymName(), axes);
  }
  return s;
}

void GradientSums::sumGradients(ArrayRef<OpOperand *> uses) {
  for (OpOperand *use : uses)
    if (isa<FloatType>(cast<RankedTensorType>(use->get().getType()).getElementType()) &&
        !use->get().getDefiningOp<ConstantOp>())
      use->set(of(use->get()));
}
