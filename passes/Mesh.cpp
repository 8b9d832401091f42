// The device mesh of a parallel plan: how the plan passes find (or create)
// their axis, and colo-create-mesh, which lays out several axes at once.
#include "colo/Passes/Mesh.h"
#include "colo/Passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"

namespace colo {
#define GEN_PASS_DEF_COLOCREATEMESH
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;

FailureOr<colo::MeshAxis> colo::getOrCreateMeshAxis(ModuleOp module, StringRef name,
                                                    int64_t size, Operation *user) {
  auto grids = module.getOps<shard::GridOp>();
  if (grids.empty()) {
    std::pair<StringRef, int64_t> axis(name, size);
    FailureOr<shard::GridOp> grid = createMesh(module, axis, user);
    if (failed(grid))
      return failure();
    return MeshAxis{*grid, 0, size};
  }
  if (std::next(grids.begin()) != grids.end())
    return user->emitError("the module has more than one shard.grid");
  shard::GridOp grid = *grids.begin();
  auto axes = grid->getAttrOfType<ArrayAttr>("colo.axes");
  if (!axes || axes.size() != grid.getShape().size())
    return grid.emitError("the mesh needs colo.axes, one name per axis");
  for (auto [i, axis] : llvm::enumerate(axes.getAsValueRange<StringAttr>())) {
    if (axis != name)
      continue;
    if (grid.getShape()[i] != size)
      return user->emitError() << "the mesh's '" << name << "' axis has size "
                               << grid.getShape()[i] << ", the plan says " << size;
    return MeshAxis{grid, static_cast<shard::GridAxis>(i), size};
  }
  return user->emitError() << "the mesh has no '" << name << "' axis";
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
    grid->setAttr("colo.axes", b.getStrArrayAttr(names));
    return grid;
  }
  shard::GridOp grid = *grids.begin();
  auto existing = grid->getAttrOfType<ArrayAttr>("colo.axes");
  if (std::next(grids.begin()) != grids.end() || !existing ||
      grid.getShape() != ArrayRef<int64_t>(shape) ||
      !llvm::equal(existing.getAsValueRange<StringAttr>(), names))
    return user->emitError() << "the module already has a mesh other than ["
                             << llvm::join(names, ", ") << "] of shape ["
                             << llvm::make_range(shape.begin(), shape.end()) << "]";
  return grid;
}

namespace {
struct ColoCreateMesh : colo::impl::ColoCreateMeshBase<ColoCreateMesh> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (dp < 1 || tp < 1) {
      module.emitError() << "colo-create-mesh: axis sizes must be at least 1, got dp = "
                         << dp << ", tp = " << tp;
      return signalPassFailure();
    }
    // Megatron-LM's order: consecutive ranks share a tensor-parallel group.
    SmallVector<std::pair<StringRef, int64_t>> axes;
    for (auto [name, size] : {std::pair<StringRef, int64_t>("dp", dp), {"tp", tp}})
      if (size > 1)
        axes.push_back({name, size});
    if (!axes.empty() && failed(colo::createMesh(module, axes, module)))
      return signalPassFailure();
  }
};
} // namespace
