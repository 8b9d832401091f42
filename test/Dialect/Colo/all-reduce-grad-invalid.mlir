// RUN: colo-opt %s -split-input-file -verify-diagnostics

func.func @no_grid(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'mesh' does not name a shard.grid}}
  %y = colo.all_reduce_grad %x on @mesh grid_axes = [0] : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

shard.grid @mesh(shape = 2) {colo.axes = ["tp"]}
func.func @axis_out_of_range(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{grid axis 1 out of range for a grid of rank 1}}
  %y = colo.all_reduce_grad %x on @mesh grid_axes = [1] : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

shard.grid @mesh(shape = 2x2) {colo.axes = ["dp", "tp"]}
func.func @repeated_axis(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{grid axis 1 is repeated}}
  %y = colo.all_reduce_grad %x on @mesh grid_axes = [1, 1] : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @integer(%x: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @below {{operand #0 must be statically shaped tensor of floating-point values}}
  %y = colo.all_reduce_grad %x on @mesh grid_axes = [0] : tensor<4xi64>
  return %y : tensor<4xi64>
}
