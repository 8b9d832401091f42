// RUN: colo-opt %s -split-input-file -verify-diagnostics --colo-tensor-parallel=tp=4
// RUN: not colo-opt %s -split-input-file --colo-tensor-parallel=tp=0 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ZERO

// ZERO: error: colo-tensor-parallel needs tp >= 1, got 0

// Two heads cannot be divided among 4 ranks, although the 8 features can.
colo.global trainable @wq : tensor<8x8xf32>
colo.global trainable @wk : tensor<8x8xf32>
colo.global trainable @wv : tensor<8x8xf32>
colo.global trainable @wo : tensor<8x8xf32>
func.func @forward(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %wq = colo.global_load @wq : tensor<8x8xf32>
  %wk = colo.global_load @wk : tensor<8x8xf32>
  %wv = colo.global_load @wv : tensor<8x8xf32>
  %wo = colo.global_load @wo : tensor<8x8xf32>
  %q = colo.matmul %x, %wq : tensor<2x4x8xf32>, tensor<8x8xf32>
  // expected-error @below {{tp = 4 does not divide dimension 2 (size 2) of tensor<2x4x2x4xf32>, the result of colo.reshape: the heads the sharded features are split into (tp must divide the number of heads and of key/value heads)}}
  %q4 = colo.reshape %q : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %qt = colo.transpose %q4 permutation = [0, 2, 1, 3] : tensor<2x4x2x4xf32>
  %k = colo.matmul %x, %wk : tensor<2x4x8xf32>, tensor<8x8xf32>
  %k4 = colo.reshape %k : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %kt = colo.transpose %k4 permutation = [0, 2, 1, 3] : tensor<2x4x2x4xf32>
  %v = colo.matmul %x, %wv : tensor<2x4x8xf32>, tensor<8x8xf32>
  %v4 = colo.reshape %v : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
  %vt = colo.transpose %v4 permutation = [0, 2, 1, 3] : tensor<2x4x2x4xf32>
  %o = colo.attention %qt, %kt, %vt {causal, scale = 0.5 : f64} : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>
  %ot = colo.transpose %o permutation = [0, 2, 1, 3] : tensor<2x2x4x4xf32>
  %o3 = colo.reshape %ot : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
  %a = colo.matmul %o3, %wo : tensor<2x4x8xf32>, tensor<8x8xf32>
  return %a : tensor<2x4x8xf32>
}

// -----

// Grouped-query attention: 4 query heads divide, 2 key/value heads do not.
colo.global trainable @wq : tensor<8x8xf32>
colo.global trainable @wk : tensor<4x8xf32>
colo.global trainable @wv : tensor<4x8xf32>
colo.global trainable @wo : tensor<8x8xf32>
func.func @forward(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %wq = colo.global_load @wq : tensor<8x8xf32>
  %wk = colo.global_load @wk : tensor<4x8xf32>
  %wv = colo.global_load @wv : tensor<4x8xf32>
  %wo = colo.global_load @wo : tensor<8x8xf32>
  %wqt = colo.transpose %wq permutation = [1, 0] : tensor<8x8xf32>
  %q = colo.matmul %x, %wqt : tensor<2x4x8xf32>, tensor<8x8xf32>
  %q4 = colo.reshape %q : tensor<2x4x8xf32> -> tensor<2x4x4x2xf32>
  %qt = colo.transpose %q4 permutation = [0, 2, 1, 3] : tensor<2x4x4x2xf32>
  %wkt = colo.transpose %wk permutation = [1, 0] : tensor<4x8xf32>
  %k = colo.matmul %x, %wkt : tensor<2x4x8xf32>, tensor<8x4xf32>
  // expected-error @below {{tp = 4 does not divide dimension 2 (size 2) of tensor<2x4x2x2xf32>, the result of colo.reshape: the heads}}
  %k4 = colo.reshape %k : tensor<2x4x4xf32> -> tensor<2x4x2x2xf32>
  %kt = colo.transpose %k4 permutation = [0, 2, 1, 3] : tensor<2x4x2x2xf32>
  %wvt = colo.transpose %wv permutation = [1, 0] : tensor<4x8xf32>
  %v = colo.matmul %x, %wvt : tensor<2x4x8xf32>, tensor<8x4xf32>
  %v4 = colo.reshape %v : tensor<2x4x4xf32> -> tensor<2x4x2x2xf32>
  %vt = colo.transpose %v4 permutation = [0, 2, 1, 3] : tensor<2x4x2x2xf32>
  %o = colo.attention %qt, %kt, %vt {causal, scale = 0.5 : f64} : tensor<2x4x4x2xf32>, tensor<2x2x4x2xf32>, tensor<2x2x4x2xf32>
  %ot = colo.transpose %o permutation = [0, 2, 1, 3] : tensor<2x4x4x2xf32>
  %o3 = colo.reshape %ot : tensor<2x4x4x2xf32> -> tensor<2x4x8xf32>
  %wot = colo.transpose %wo permutation = [1, 0] : tensor<8x8xf32>
  %a = colo.matmul %o3, %wot : tensor<2x4x8xf32>, tensor<8x8xf32>
  return %a : tensor<2x4x8xf32>
}

// -----

// An MLP width of 6 is not divisible into 4 blocks.
colo.global trainable @w1 : tensor<8x6xf32>
colo.global trainable @w2 : tensor<6x8xf32>
func.func @forward(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w1 = colo.global_load @w1 : tensor<8x6xf32>
  %w2 = colo.global_load @w2 : tensor<6x8xf32>
  // expected-error @below {{tp = 4 does not divide dimension 1 (size 6) of tensor<4x6xf32>, the result of colo.matmul: the output features of a column-parallel matmul}}
  %h = colo.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x6xf32>
  %g = colo.gelu %h : tensor<4x6xf32>
  %y = colo.matmul %g, %w2 : tensor<4x6xf32>, tensor<6x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Nothing to shard is no error.
colo.global trainable @w : tensor<8x8xf32>
// expected-warning @below {{colo-tensor-parallel found no region to shard: every rank computes the whole function}}
func.func @forward(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = colo.global_load @w : tensor<8x8xf32>
  %y = colo.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32>
  return %y : tensor<4x8xf32>
}
