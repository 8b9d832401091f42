// RUN: colo-opt %s -split-input-file -verify-diagnostics --colo-tensor-parallel=tp=2 \
// RUN:   --colo-sequence-parallel=tp=2
// RUN: not colo-opt %s -split-input-file --colo-tensor-parallel=tp=4 \
// RUN:   --colo-sequence-parallel=tp=2 2>&1 | FileCheck %s --check-prefix=MISMATCH
// RUN: colo-opt %s -split-input-file --colo-sequence-parallel=tp=2 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NOTP
// RUN: not colo-opt %s -split-input-file --colo-sequence-parallel=tp=0 2>&1 | FileCheck %s --check-prefix=ZERO

// Sequence parallelism splits what tensor parallelism left replicated, on
// the same axis; without tensor parallelism there is nothing to split.
// MISMATCH: error: colo-sequence-parallel: tp = 2 but the function is tensor-parallel over 4
// NOTP: warning: colo-sequence-parallel: the function has no tensor-parallel region (run colo-tensor-parallel first): nothing to split
// ZERO: error: colo-sequence-parallel needs tp >= 1, got 0

// A sequence of 5 tokens (batch 1) cannot be split into 2 blocks. The
// tensor-parallel region itself is fine: its features divide.
colo.global trainable @w1 : tensor<8x16xf32>
colo.global trainable @w2 : tensor<16x8xf32>
func.func @forward(%x: tensor<1x5x8xf32>) -> tensor<1x5x8xf32> {
  %w1 = colo.global_load @w1 : tensor<8x16xf32>
  %w2 = colo.global_load @w2 : tensor<16x8xf32>
  // expected-error @below {{colo-sequence-parallel: tp = 2 does not divide dimension 1 (size 5) of 'tensor<1x5x8xf32>', the tokens of colo.layer_norm: sequence parallelism splits the tokens along their first dimension larger than 1 (the batch, or the sequence when the batch is 1)}}
  %n = colo.layer_norm %x {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<1x5x8xf32>
  %h = colo.matmul %n, %w1 : tensor<1x5x8xf32>, tensor<8x16xf32>
  %a = colo.gelu %h approximation = tanh : tensor<1x5x16xf32>
  %y = colo.matmul %a, %w2 : tensor<1x5x16xf32>, tensor<16x8xf32>
  return %y : tensor<1x5x8xf32>
}

// -----

// A batch of 3 cannot be split into 2 blocks either (the tokens are split
// along the batch when it is larger than 1); the row-parallel sum is the
// first op to split here.
colo.global trainable @w1 : tensor<8x16xf32>
colo.global trainable @w2 : tensor<16x8xf32>
func.func @forward(%x: tensor<3x4x8xf32>) -> tensor<3x4x8xf32> {
  %w1 = colo.global_load @w1 : tensor<8x16xf32>
  %w2 = colo.global_load @w2 : tensor<16x8xf32>
  %h = colo.matmul %x, %w1 : tensor<3x4x8xf32>, tensor<8x16xf32>
  %a = colo.gelu %h approximation = tanh : tensor<3x4x16xf32>
  // expected-error @below {{colo-sequence-parallel: tp = 2 does not divide dimension 0 (size 3) of 'tensor<3x4x8xf32>', the tokens of shard.all_reduce}}
  %y = colo.matmul %a, %w2 : tensor<3x4x16xf32>, tensor<16x8xf32>
  return %y : tensor<3x4x8xf32>
}
