//===- Mesh.h - The device mesh of a parallel plan --------------*- C++ -*-===//
//
// A plan's devices form one `shard.grid @mesh` whose axes carry names in the
// attribute `colo.axes` (["pp", "dp", "tp"], Megatron's order: tp fastest).
// The plan passes find their axis by name; collectives name it by index.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_PASSES_MESH_H
#define COLO_PASSES_MESH_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace colo {

struct MeshAxis {
  mlir::shard::GridOp grid;
  mlir::shard::GridAxis axis;
  int64_t size;
};

/// The axis `name` of the module's mesh. Without a mesh, creates
/// `shard.grid @mesh(shape = size) {colo.axes = [name]}`; a mesh that lacks
/// the axis, or has it with another size, is an error at `user`.
mlir::FailureOr<MeshAxis> getOrCreateMeshAxis(mlir::ModuleOp module,
                                              llvm::StringRef name, int64_t size,
                                              mlir::Operation *user);

/// The module's mesh with exactly `axes` (name, size), in order: created as
/// `shard.grid @mesh` if the module has none, an error at `user` if it has
/// another.
mlir::FailureOr<mlir::shard::GridOp>
createMesh(mlir::ModuleOp module,
           llvm::ArrayRef<std::pair<llvm::StringRef, int64_t>> axes,
           mlir::Operation *user);

/// What every data-parallel step ends with: the returned loss averaged over
/// the `dp` axis (each rank reports the mean over the whole batch), dropout
/// keys offset per rank, and `colo.data_parallel = dp` on the step (the
/// compiler splits the data by it).
void finishDataParallel(mlir::func::FuncOp step, MeshAxis dp);

} // namespace colo

#endif
