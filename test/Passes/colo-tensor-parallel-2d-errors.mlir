// RUN: colo-opt %s -split-input-file -verify-diagnostics --colo-tensor-parallel-2d=q=2

// Three samples do not split over two rows.
colo.global trainable @wte : tensor<16x8xf32>
// expected-error @below {{colo-tensor-parallel-2d: q = 2 does not divide the batch (size 3) of input 0 (the grid's rows split the samples)}}
func.func @forward(%ids: tensor<3x4xi64>) -> tensor<3x4x8xf32> {
  %wte = colo.global_load @wte : tensor<16x8xf32>
  %x = colo.embedding %wte, %ids : tensor<16x8xf32>, tensor<3x4xi64>
  return %x : tensor<3x4x8xf32>
}

// -----

// Five features do not split over two columns.
colo.global trainable @wte : tensor<16x5xf32>
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<2x4x5xf32> {
  %wte = colo.global_load @wte : tensor<16x5xf32>
  // expected-error @below {{colo-tensor-parallel-2d: q = 2 does not divide dimension 1 of @wte tensor<16x5xf32>}}
  %x = colo.embedding %wte, %ids : tensor<16x5xf32>, tensor<2x4xi64>
  return %x : tensor<2x4x5xf32>
}

// -----

// A sum over the split features other than a norm's.
colo.global trainable @wte : tensor<16x8xf32>
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<2x4xf32> {
  %wte = colo.global_load @wte : tensor<16x8xf32>
  %x = colo.embedding %wte, %ids : tensor<16x8xf32>, tensor<2x4xi64>
  // expected-error @below {{colo-tensor-parallel-2d: cannot split colo.reduce_sum: it mixes or reduces the split features}}
  %s = colo.reduce_sum %x dims = [2] : tensor<2x4x8xf32>
  return %s : tensor<2x4xf32>
}

// -----

// Dropout would draw the whole batch's mask on every rank.
colo.global trainable @wte : tensor<16x8xf32>
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<2x4x8xf32> {
  %wte = colo.global_load @wte : tensor<16x8xf32>
  %x = colo.embedding %wte, %ids : tensor<16x8xf32>, tensor<2x4xi64>
  // expected-error @below {{colo-tensor-parallel-2d: cannot split colo.dropout: dropout (each rank would draw the whole batch's mask)}}
  %d = colo.dropout %x ratio = 1.000000e-01 : tensor<2x4x8xf32>
  return %d : tensor<2x4x8xf32>
}

// -----

// A weight read twice is no SUMMA operand.
colo.global trainable @wte : tensor<16x8xf32>
colo.global trainable @w : tensor<8x8xf32>
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<2x4x8xf32> {
  %wte = colo.global_load @wte : tensor<16x8xf32>
  %w = colo.global_load @w : tensor<8x8xf32>
  %x = colo.embedding %wte, %ids : tensor<16x8xf32>, tensor<2x4xi64>
  // expected-error @below {{colo-tensor-parallel-2d: cannot split colo.matmul: its right operand is not a weight read once}}
  %y = colo.matmul %x, %w : tensor<2x4x8xf32>, tensor<8x8xf32>
  %z = colo.matmul %y, %w : tensor<2x4x8xf32>, tensor<8x8xf32>
  return %z : tensor<2x4x8xf32>
}
