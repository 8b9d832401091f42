// RUN: colo-opt %s -split-input-file -verify-diagnostics --colo-vocab-parallel=tp=2
// RUN: not colo-opt %s -split-input-file --colo-vocab-parallel=tp=0 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not colo-opt %s -split-input-file --colo-vocab-parallel=tp=2 \
// RUN:   --colo-build-train-step="loss=mse" 2>&1 | FileCheck %s --check-prefix=MSE

// ZERO: error: colo-vocab-parallel needs tp >= 1, got 0
// MSE: error: loss=mse of vocab-parallel logits (each tp rank holds a block of the vocabulary): use loss=lm or cross-entropy

// A vocabulary of 15 cannot be split into 2 blocks (Megatron pads it; colo
// asks for a vocabulary tp divides).
colo.global trainable @wte : tensor<15x8xf32>
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<2x4x15xf32> {
  %wte = colo.global_load @wte : tensor<15x8xf32>
  %x = colo.embedding %wte, %ids : tensor<15x8xf32>, tensor<2x4xi64>
  %wt = colo.transpose %wte permutation = [1, 0] : tensor<15x8xf32>
  // expected-error @below {{colo-vocab-parallel: tp = 2 does not divide the vocabulary (size 15) of @wte}}
  %logits = colo.matmul %x, %wt : tensor<2x4x8xf32>, tensor<8x15xf32>
  return %logits : tensor<2x4x15xf32>
}

// -----

// The first result is not an LM head: there is no vocabulary.
colo.global trainable @w : tensor<8x8xf32>
// expected-error @below {{colo-vocab-parallel: the first result of @forward is not an LM head}}
func.func @forward(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %w = colo.global_load @w : tensor<8x8xf32>
  %y = colo.matmul %x, %w : tensor<2x8xf32>, tensor<8x8xf32>
  %z = colo.tanh %y : tensor<2x8xf32>
  return %z : tensor<2x8xf32>
}

// -----

// The tied table is also read whole by something other than the lookups
// and the head.
colo.global trainable @wte : tensor<16x8xf32>
func.func @forward(%ids: tensor<2x4xi64>) -> (tensor<2x4x16xf32>, tensor<f32>) {
  %wte = colo.global_load @wte : tensor<16x8xf32>
  %x = colo.embedding %wte, %ids : tensor<16x8xf32>, tensor<2x4xi64>
  // expected-error @below {{colo-vocab-parallel: @wte is split over the vocabulary, but this op reads it whole}}
  %n = colo.reduce_sum %wte dims = [0, 1] : tensor<16x8xf32>
  %wt = colo.transpose %wte permutation = [1, 0] : tensor<16x8xf32>
  %logits = colo.matmul %x, %wt : tensor<2x4x8xf32>, tensor<8x16xf32>
  return %logits, %n : tensor<2x4x16xf32>, tensor<f32>
}

// -----

// MSE of the logits' blocks would be another loss than one rank's.
colo.global trainable @wte : tensor<16x8xf32>
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<2x4x16xf32> {
  %wte = colo.global_load @wte : tensor<16x8xf32>
  %x = colo.embedding %wte, %ids : tensor<16x8xf32>, tensor<2x4xi64>
  %wt = colo.transpose %wte permutation = [1, 0] : tensor<16x8xf32>
  %logits = colo.matmul %x, %wt : tensor<2x4x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x4x16xf32>
}

// -----

// No rank knows at compile time which of its rows is the padding row.
colo.global trainable @wte : tensor<16x8xf32>
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<2x4x16xf32> {
  %wte = colo.global_load @wte : tensor<16x8xf32>
  // expected-error @below {{colo-vocab-parallel: an embedding with padding_idx (its row 1 gets no gradient) cannot be split over the vocabulary}}
  %x = colo.embedding %wte, %ids {padding_idx = 1 : i64} : tensor<16x8xf32>, tensor<2x4xi64>
  %wt = colo.transpose %wte permutation = [1, 0] : tensor<16x8xf32>
  %logits = colo.matmul %x, %wt : tensor<2x4x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x4x16xf32>
}
