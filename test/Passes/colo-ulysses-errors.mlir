// RUN: colo-opt %s -split-input-file -verify-diagnostics --colo-ulysses=sp=2
// RUN: not colo-opt %s -split-input-file --colo-ulysses=sp=0 2>&1 | FileCheck %s --check-prefix=ZERO

// ZERO: error: colo-ulysses needs sp >= 1, got 0

// A sequence of 5 positions cannot be split into 2 blocks: the error is on
// the first op that reads the input.
colo.global trainable @wte : tensor<16x8xf32>
func.func @forward(%ids: tensor<2x5xi64>) -> tensor<2x5x8xf32> {
  %wte = colo.global_load @wte : tensor<16x8xf32>
  // expected-error @below {{colo-ulysses: sp = 2 does not divide the sequence length 5 (dimension 1 of argument #0, 'tensor<2x5xi64>')}}
  %x = colo.embedding %wte, %ids : tensor<16x8xf32>, tensor<2x5xi64>
  return %x : tensor<2x5x8xf32>
}

// -----

// 3 query heads cannot be shared by 2 ranks.
func.func @forward(%x: tensor<2x4x6xf32>) -> tensor<2x4x6xf32> {
  %x4 = colo.reshape %x : tensor<2x4x6xf32> -> tensor<2x4x3x2xf32>
  %q = colo.transpose %x4 permutation = [0, 2, 1, 3] : tensor<2x4x3x2xf32>
  // expected-error @below {{colo-ulysses: sp = 2 does not divide the 3 query heads of 'tensor<2x3x4x2xf32>': Ulysses gives each rank heads / sp whole heads}}
  %a = colo.attention %q, %q, %q {causal, scale = 0.5 : f64} : tensor<2x3x4x2xf32>, tensor<2x3x4x2xf32>, tensor<2x3x4x2xf32>
  %at = colo.transpose %a permutation = [0, 2, 1, 3] : tensor<2x3x4x2xf32>
  %y = colo.reshape %at : tensor<2x4x3x2xf32> -> tensor<2x4x6xf32>
  return %y : tensor<2x4x6xf32>
}

// -----

// Grouped-query attention with one key/value head: sp must divide those too.
func.func @forward(%x: tensor<2x4x4xf32>, %kv: tensor<2x4x2xf32>) -> tensor<2x4x4xf32> {
  %x4 = colo.reshape %x : tensor<2x4x4xf32> -> tensor<2x4x2x2xf32>
  %q = colo.transpose %x4 permutation = [0, 2, 1, 3] : tensor<2x4x2x2xf32>
  %kv4 = colo.reshape %kv : tensor<2x4x2xf32> -> tensor<2x4x1x2xf32>
  %k = colo.transpose %kv4 permutation = [0, 2, 1, 3] : tensor<2x4x1x2xf32>
  // expected-error @below {{colo-ulysses: sp = 2 does not divide the 1 key/value heads of 'tensor<2x1x4x2xf32>': Ulysses gives each rank heads / sp whole heads}}
  %a = colo.attention %q, %k, %k {causal, scale = 0.5 : f64} : tensor<2x2x4x2xf32>, tensor<2x1x4x2xf32>, tensor<2x1x4x2xf32>
  %at = colo.transpose %a permutation = [0, 2, 1, 3] : tensor<2x2x4x2xf32>
  %y = colo.reshape %at : tensor<2x4x2x2xf32> -> tensor<2x4x4xf32>
  return %y : tensor<2x4x4xf32>
}
