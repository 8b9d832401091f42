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

/// The axis `name` of the module's mesh, whatever its size; an error at
/// `user` where there is no mesh or no such axis.
mlir::FailureOr<MeshAxis> findMeshAxis(mlir::ModuleOp module, llvm::StringRef name,
                                       mlir::Operation *user);

/// `v`, split over the mesh `grid`'s axis `features` along dimension
/// `featureDim` (where given) and over `samples` along dimension 0,
/// gathered whole: the features brought outermost for their gather, as
/// the runtime joins tensors along their outermost dimension.
mlir::Value gatherWhole(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                        mlir::shard::GridOp grid, std::optional<MeshAxis> features,
                        int64_t featureDim, llvm::ArrayRef<mlir::shard::GridAxis> samples);

/// The module's mesh with exactly `axes` (name, size), in order: created as
/// `shard.grid @mesh` if the module has none, an error at `user` if it has
/// another.
mlir::FailureOr<mlir::shard::GridOp>
createMesh(mlir::ModuleOp module,
           llvm::ArrayRef<std::pair<llvm::StringRef, int64_t>> axes,
           mlir::Operation *user);

/// What a plan pass that splits @`func` over `ranks` ranks checks first.
struct PlanTarget {
  llvm::StringRef option; ///< the ranks' option: "tp"
  int64_t ranks;
  llvm::StringRef verb = "split"; ///< "no func.func @forward to split"
  bool singleBlock = false;
  /// Set on the function by an earlier run (empty: none), which is an
  /// error: "the function is already <done>".
  llvm::StringRef doneAttr = "";
  llvm::StringRef done = "";
  llvm::StringRef pass = ""; ///< "colo-tensor-parallel"
  llvm::StringRef func = "";
};
/// The function `target` names, checked: `ranks` >= 1, the function
/// defined (with one block where asked) and not already done. Null where
/// `ranks` is 1 (nothing to do); failure once the error is reported.
mlir::FailureOr<mlir::func::FuncOp> findPlanTarget(mlir::ModuleOp module,
                                                   const PlanTarget &target);

/// The plan passes' runOnOperation: finds and checks the function the pass
/// works on (`findTarget`: findPlanTarget or findTrainStep), then runs the
/// pass on it unless that is null (nothing to do).
template <typename PassBase> struct PlanPass : PassBase {
  using PassBase::PassBase;
  virtual mlir::FailureOr<mlir::func::FuncOp> findTarget(mlir::ModuleOp module) = 0;
  virtual mlir::LogicalResult runOnTarget(mlir::ModuleOp module, mlir::func::FuncOp f) = 0;
  void runOnOperation() final {
    mlir::ModuleOp module = this->getOperation();
    mlir::FailureOr<mlir::func::FuncOp> f = findTarget(module);
    if (mlir::failed(f) || (*f && mlir::failed(runOnTarget(module, *f))))
      this->signalPassFailure();
  }
};

/// A plan pass that splits its `func` option's function: it states only
/// what findPlanTarget checks (its name and function are filled in here).
template <typename PassBase> struct SplittingPass : PlanPass<PassBase> {
  using PlanPass<PassBase>::PlanPass;
  virtual PlanTarget target() = 0;
  mlir::FailureOr<mlir::func::FuncOp> findTarget(mlir::ModuleOp module) final {
    PlanTarget t = target();
    t.pass = this->getArgument();
    t.func = this->func;
    return findPlanTarget(module, t);
  }
};

/// The same for the passes on a built training step over `dp` ranks
/// (colo-data-parallel, colo-zero): @`func` must exist.
mlir::FailureOr<mlir::func::FuncOp> findTrainStep(mlir::ModuleOp module, llvm::StringRef pass,
                                                  llvm::StringRef func, int64_t dp);

/// What every data-parallel step ends with: the returned loss averaged over
/// the `dp` axis (each rank reports the mean over the whole batch), dropout
/// keys offset per rank, and `colo.data_parallel = dp` on the step (the
/// compiler splits the data by it).
void finishDataParallel(mlir::func::FuncOp step, MeshAxis dp);

/// Values read through `colo.all_reduce_grad` over mesh axes (the identity
/// forward, the gradient summed over the axes backward), one per value,
/// placed right after it: where every rank reads a replicated value whole
/// but computes with only its part of the data, so each rank's gradient of
/// it is a partial sum (colo-sequence-parallel, colo-ulysses).
class GradientSums {
public:
  explicit GradientSums(MeshAxis axis) : grid(axis.grid), axes{axis.axis} {}
  GradientSums(mlir::shard::GridOp grid, llvm::ArrayRef<mlir::shard::GridAxis> axes)
      : grid(grid), axes(axes) {}

  /// `v` with its gradient summed over the axis.
  mlir::Value of(mlir::Value v);
  /// Makes each of `uses` that reads a float value (not a constant, which
  /// has no gradient) read it through `of`.
  void sumGradients(llvm::ArrayRef<mlir::OpOperand *> uses);
  /// How many sums were made.
  int64_t size() const { return summed.size(); }

private:
  mlir::shard::GridOp grid;
  llvm::SmallVector<mlir::shard::GridAxis, 2> axes;
  llvm::DenseMap<mlir::Value, mlir::Value> summed;
};

} // namespace colo

#endif
