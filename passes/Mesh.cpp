#include "colo/Passes/Mesh.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

FailureOr<colo::MeshAxis> colo::getOrCreateMeshAxis(ModuleOp module, StringRef name,
                                                    int64_t size, Operation *user) {
  auto grids = module.getOps<shard::GridOp>();
  if (grids.empty()) {
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    auto grid = shard::GridOp::create(b, module.getLoc(), "mesh",
                                      b.getDenseI64ArrayAttr({size}));
    grid->setAttr("colo.axes", b.getStrArrayAttr({name}));
    return MeshAxis{grid, 0, size};
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
