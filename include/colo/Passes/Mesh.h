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

/// Keyed dropout draws its mask from (key, element index), and every
/// data-parallel rank's slice of the batch starts at index 0: without this
/// each rank would drop the same positions of its samples. Rank i's keys get
/// i * 2^40 added (a run's keys stay below 2^40 for seeds under 2^12), taken
/// from a constant [0, dp) by shard.all_slice, so the program stays the
/// same on every rank.
void decorrelateDropout(mlir::func::FuncOp step, MeshAxis dp);

} // namespace colo

#endif
