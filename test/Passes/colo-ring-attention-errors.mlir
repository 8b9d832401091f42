// RUN: colo-opt %s -split-input-file -verify-diagnostics --colo-ring-attention=ring=2
// RUN: not colo-opt %s -split-input-file --colo-ring-attention=ring=0 2>&1 | FileCheck %s --check-prefix=ZERO

// ZERO: error: colo-ring-attention needs ring >= 1, got 0

// In zigzag order 2 ranks cut the sequence into 4 chunks: 6 positions do not
// divide.
colo.global trainable @wte : tensor<16x8xf32>
func.func @forward(%ids: tensor<2x6xi64>) -> tensor<2x6x8xf32> {
  %wte = colo.global_load @wte : tensor<16x8xf32>
  // expected-error @below {{colo-ring-attention: ring = 2 in zigzag order (2 * ring chunks) does not divide the sequence length 6 (dimension 1 of argument #0, 'tensor<2x6xi64>')}}
  %x = colo.embedding %wte, %ids : tensor<16x8xf32>, tensor<2x6xi64>
  return %x : tensor<2x6x8xf32>
}

// -----

// Attention dropout would need the one-rank run's masks.
func.func @forward(%x: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  %x4 = colo.reshape %x : tensor<2x4x4xf32> -> tensor<2x4x2x2xf32>
  %q = colo.transpose %x4 permutation = [0, 2, 1, 3] : tensor<2x4x2x2xf32>
  // expected-error @below {{colo-ring-attention: attention dropout is not implemented with ring attention}}
  %a = colo.attention %q, %q, %q {causal, scale = 0.5 : f64, dropout = 0.1 : f64} : tensor<2x2x4x2xf32>, tensor<2x2x4x2xf32>, tensor<2x2x4x2xf32>
  %at = colo.transpose %a permutation = [0, 2, 1, 3] : tensor<2x2x4x2xf32>
  %y = colo.reshape %at : tensor<2x4x2x2xf32> -> tensor<2x4x4xf32>
  return %y : tensor<2x4x4xf32>
}

// -----

// A mask operand (padding) is not implemented; the causal flag is.
func.func @forward(%x: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  %mask = colo.constant dense<0.0> : tensor<1x1x4x4xf32>
  %x4 = colo.reshape %x : tensor<2x4x4xf32> -> tensor<2x4x2x2xf32>
  %q = colo.transpose %x4 permutation = [0, 2, 1, 3] : tensor<2x4x2x2xf32>
  // expected-error @below {{colo-ring-attention: an attention mask operand is not implemented with ring attention (only the causal flag)}}
  %a = colo.attention %q, %q, %q mask %mask {scale = 0.5 : f64} : tensor<2x2x4x2xf32>, tensor<2x2x4x2xf32>, tensor<2x2x4x2xf32>, tensor<1x1x4x4xf32>
  %at = colo.transpose %a permutation = [0, 2, 1, 3] : tensor<2x2x4x2xf32>
  %y = colo.reshape %at : tensor<2x4x2x2xf32> -> tensor<2x4x4xf32>
  return %y : tensor<2x4x4xf32>
}
