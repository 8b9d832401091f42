// RUN: colo-opt %s -split-input-file -verify-diagnostics --colo-build-train-step="loss=output"

// Only the collectives that tensor and sequence parallelism put in the
// forward have gradient rules (sums, gathers, slices); the others come from
// the plan passes that run after differentiation.
shard.grid @mesh(shape = 2) {colo.axes = ["tp"]}
colo.global trainable @w : tensor<4xf32>
func.func @forward() -> tensor<f32> {
  %w = colo.global_load @w : tensor<4xf32>
  // expected-error @below {{has no gradient rule for reduction average (only sum, which ends a row-parallel region)}}
  %r = shard.all_reduce %w on @mesh grid_axes = [0] reduction = average : tensor<4xf32> -> tensor<4xf32>
  %s = colo.reduce_sum %r dims = [0] : tensor<4xf32>
  return %s : tensor<f32>
}

// -----

shard.grid @mesh(shape = 2) {colo.axes = ["tp"]}
colo.global trainable @w : tensor<4xf32>
func.func @forward() -> tensor<f32> {
  %w = colo.global_load @w : tensor<4xf32>
  // expected-error @below {{has no gradient rule (of the shard ops only all_reduce, reduce and reduce_scatter with reduction = sum, all_gather, all_slice, all_to_all, broadcast and shift with rotate have one)}}
  %g = shard.scatter %w on @mesh grid_axes = [0] scatter_axis = 0 root = [0] : (tensor<4xf32>) -> tensor<2xf32>
  %s = colo.reduce_sum %g dims = [0] : tensor<2xf32>
  return %s : tensor<f32>
}
