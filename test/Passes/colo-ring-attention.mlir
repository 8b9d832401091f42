// RUN: colo-opt %s --colo-ring-attention=ring=2 | FileCheck %s
// RUN: colo-opt %s --colo-ring-attention="ring=2 zigzag=false" | FileCheck %s --check-prefix=CONTIGUOUS
// RUN: colo-opt %s --colo-ring-attention=ring=2 --colo-build-train-step="loss=lm" \
// RUN:   | FileCheck %s --check-prefix=STEP
// RUN: colo-opt %s --colo-ring-attention=ring=1 | FileCheck %s --check-prefix=ONE

// The GPT-2-like block of colo-ulysses.mlir (batch 2, sequence 4, hidden 8,
// 4 query heads, 2 key/value heads) over a ring of 2, in zigzag order: the
// sequence's 4 chunks of one position go to the ranks as [0, 3] and [1, 2].
// The causal masks of the two steps hold one block per rank, each rank
// taking its own: step 0 pairs a rank's queries with its own keys, step 1
// with the other rank's. The ids and the position embeddings are permuted
// to that order before the rank's cut.
// CHECK: shard.grid @mesh(shape = 2) {colo.axes = ["sp"]}
// CHECK: func.func @forward{{.*}}attributes {colo.ring = 2 : i64}
// CHECK: %[[M1ALL:.*]] = colo.constant dense<{{\[}}{{\[}}[0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00]], {{\[}}[0.000000e+00, 0xFF800000], [0.000000e+00, 0xFF800000]]]> : tensor<2x2x2xf32>
// CHECK: %[[M1R:.*]] = shard.all_slice %[[M1ALL]] on @mesh grid_axes = [0] slice_axis = 0
// CHECK: %[[M1:.*]] = colo.reshape %[[M1R]] : tensor<1x2x2xf32> -> tensor<2x2xf32>
// CHECK: %[[M0ALL:.*]] = colo.constant dense<{{\[}}{{\[}}[0.000000e+00, 0xFF800000], [0.000000e+00, 0.000000e+00]], {{\[}}[0.000000e+00, 0xFF800000], [0.000000e+00, 0.000000e+00]]]> : tensor<2x2x2xf32>
// CHECK: %[[M0R:.*]] = shard.all_slice %[[M0ALL]]
// CHECK: %[[M0:.*]] = colo.reshape %[[M0R]]
// CHECK: %[[ORDER:.*]] = colo.constant dense<[0, 3, 1, 2]> : tensor<4xi64>
// CHECK: colo.gather %arg0, %[[ORDER]] axis = 1
// CHECK: colo.gather %{{.*}}, %{{.*}} axis = 1 : tensor<1x4x8xf32>, tensor<4xi64>
// Step 0: the next blocks set off around the ring first, then the rank's
// own are scored, the row maximum without gradient.
// CHECK: %[[K:.*]] = colo.slice %{{.*}} start = [0, 0, 0, 0] limit = [2, 2, 2, 2]
// CHECK: %[[V:.*]] = colo.slice %{{.*}} start = [0, 2, 0, 0] limit = [2, 4, 2, 2]
// CHECK: %[[K1:.*]] = shard.shift %[[K]] on @mesh grid_axes = [0] shift_axis = 0 offset = 1 rotate : tensor<2x2x2x2xf32>
// CHECK: %[[V1:.*]] = shard.shift %[[V]] on @mesh grid_axes = [0] shift_axis = 0 offset = 1 rotate
// CHECK: %[[S0:.*]] = colo.matmul
// CHECK: %[[S0S:.*]] = colo.mul %[[S0]]
// CHECK: %[[S0M:.*]] = colo.add %[[S0S]], %[[M0]] : tensor<2x4x2x2xf32>, tensor<2x2xf32>
// CHECK: %[[MAX0R:.*]] = colo.reduce_max %[[S0M]] dims = [3] {keep_dims}
// CHECK: %[[MAX0:.*]] = colo.stop_gradient %[[MAX0R]]
// CHECK: %[[P0:.*]] = colo.exp
// CHECK: %[[O0:.*]] = colo.matmul %[[P0]]
// CHECK: %[[L0:.*]] = colo.reduce_sum %[[P0]] dims = [3] {keep_dims}
// Step 1: the other rank's blocks, folded in with the rescaled sums.
// CHECK: colo.reshape %[[K1]]
// CHECK: colo.add %{{.*}}, %[[M1]]
// CHECK: %[[MAX1R:.*]] = colo.reduce_max
// CHECK: %[[MAX1:.*]] = colo.stop_gradient %[[MAX1R]]
// CHECK: %[[MAX:.*]] = colo.maximum %[[MAX0]], %[[MAX1]]
// CHECK: %[[P1:.*]] = colo.exp
// CHECK: %[[O1:.*]] = colo.matmul %[[P1]]
// CHECK: %[[L1:.*]] = colo.reduce_sum %[[P1]]
// CHECK: %[[C:.*]] = colo.exp
// CHECK: %[[OS:.*]] = colo.mul %[[O0]], %[[C]]
// CHECK: %[[O:.*]] = colo.add %[[OS]], %[[O1]]
// CHECK: %[[LS:.*]] = colo.mul %[[L0]], %[[C]]
// CHECK: %[[L:.*]] = colo.add %[[LS]], %[[L1]]
// CHECK: colo.div %[[O]], %[[L]] : tensor<2x4x2x2xf32>, tensor<2x4x2x1xf32>
// The LM head reads all tokens, back in the sequence's order.
// CHECK: shard.all_gather
// CHECK: %[[BACK:.*]] = colo.constant dense<[0, 2, 3, 1]> : tensor<4xi64>
// CHECK: colo.gather %{{.*}}, %[[BACK]] axis = 1 : tensor<2x4x8xf32>
// CHECK-NOT: colo.attention

// Contiguous: rank 0 holds positions 0 and 1, rank 1 positions 2 and 3;
// at step 1 rank 0 sees none of rank 1's keys and rank 1 all of rank 0's.
// CONTIGUOUS: colo.constant dense<{{\[}}{{\[}}[0xFF800000, 0xFF800000], [0xFF800000, 0xFF800000]], {{\[}}[0.000000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00]]]> : tensor<2x2x2xf32>
// CONTIGUOUS-NOT: colo.gather

// The backward sends the key and value gradients back around the ring.
// STEP-LABEL: func.func @train_step
// STEP-COUNT-2: shard.shift %{{.*}} offset = 1 rotate
// STEP-COUNT-2: shard.shift %{{.*}} offset = -1 rotate

// ONE-NOT: shard.
// ONE: colo.attention
colo.global trainable @wte : tensor<16x8xf32>
colo.global trainable @wpe : tensor<4x8xf32>
colo.global trainable @ln.weight : tensor<8xf32>
colo.global trainable @attn.q : tensor<8x8xf32>
colo.global trainable @attn.kv : tensor<8x8xf32>
colo.global trainable @attn.o : tensor<8x8xf32>
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<2x4x16xf32> {
  %pos = colo.constant dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>
  %wte = colo.global_load @wte : tensor<16x8xf32>
  %wpe = colo.global_load @wpe : tensor<4x8xf32>
  %g = colo.global_load @ln.weight : tensor<8xf32>
  %wq = colo.global_load @attn.q : tensor<8x8xf32>
  %wkv = colo.global_load @attn.kv : tensor<8x8xf32>
  %wo = colo.global_load @attn.o : tensor<8x8xf32>
  %te = colo.embedding %wte, %ids : tensor<16x8xf32>, tensor<2x4xi64>
  %pe = colo.embedding %wpe, %pos : tensor<4x8xf32>, tensor<1x4xi64>
  %x = colo.add %te, %pe : tensor<2x4x8xf32>, tensor<1x4x8xf32>
  %n = colo.rms_norm %x scale %g : tensor<8xf32> {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<2x4x8xf32>
  %n2 = colo.reshape %n : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %q2 = colo.matmul %n2, %wq : tensor<8x8xf32>, tensor<8x8xf32>
  %q4 = colo.reshape %q2 : tensor<8x8xf32> -> tensor<2x4x4x2xf32>
  %q = colo.transpose %q4 permutation = [0, 2, 1, 3] : tensor<2x4x4x2xf32>
  %kv = colo.matmul %n, %wkv : tensor<2x4x8xf32>, tensor<8x8xf32>
  %kv4 = colo.reshape %kv : tensor<2x4x8xf32> -> tensor<2x4x4x2xf32>
  %kvt = colo.transpose %kv4 permutation = [0, 2, 1, 3] : tensor<2x4x4x2xf32>
  %k = colo.slice %kvt start = [0, 0, 0, 0] limit = [2, 2, 4, 2] stride = [1, 1, 1, 1] : tensor<2x4x4x2xf32>
  %v = colo.slice %kvt start = [0, 2, 0, 0] limit = [2, 4, 4, 2] stride = [1, 1, 1, 1] : tensor<2x4x4x2xf32>
  %a = colo.attention %q, %k, %v {causal, scale = 0.5 : f64} : tensor<2x4x4x2xf32>, tensor<2x2x4x2xf32>, tensor<2x2x4x2xf32>
  %at = colo.transpose %a permutation = [0, 2, 1, 3] : tensor<2x4x4x2xf32>
  %a3 = colo.reshape %at : tensor<2x4x4x2xf32> -> tensor<2x4x8xf32>
  %o = colo.matmul %a3, %wo : tensor<2x4x8xf32>, tensor<8x8xf32>
  %r = colo.add %x, %o : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %head = colo.transpose %wte permutation = [1, 0] : tensor<16x8xf32>
  %logits = colo.matmul %r, %head : tensor<2x4x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x4x16xf32>
}
