// RUN: colo-opt %s -split-input-file -verify-diagnostics --colo-tensor-parallel-3d=q=2 | FileCheck %s
// RUN: colo-opt %s -split-input-file -verify-diagnostics --colo-create-mesh="dp=2 tp3d=2" \
// RUN:   --colo-tensor-parallel-3d=q=2 | FileCheck %s --check-prefix=MESH

// A GPT-2 block as `colo import` gives it (hidden 8, 4 heads, MLP 32, batch
// 4) on a 2 x 2 x 2 cube. The ids are cut over ("x", "z") to the rank's
// sample (layout A: features over "y"); c_attn and c_fc take A to B
// (features over "z", samples over ("x", "y")), their weights [in, out]
// split over (("y", "x"), "z"), the fused q|k|v keeping its 3 groups;
// c_proj and the MLP's c_proj take B back to A, their weights split over
// (("z", "x"), "y"). Each product gathers its input over the output
// features' axis and its weight over "x", both read through
// colo.all_reduce_grad, and reduce-scatters the product over the input
// features' axis. Biases, norm scales and the table hold their layout's
// features, their gradients summed over its sample axes; the layer norms
// sum their statistics over "y"; attention runs on the rank's 2 heads; the
// LM head on the tied table is reduce-scattered over "y" along the
// vocabulary, and the logits stay split (samples over ("x", "z"),
// vocabulary over "y"), the function marked for the loss.

// MESH: shard.grid @mesh(shape = 2x2x2x2) {colo.axes = ["dp", "x", "y", "z"]}
// MESH: shard.all_gather %{{.*}} on @mesh grid_axes = [1] gather_axis = 0 : tensor<2x12xf32> -> tensor<4x12xf32>
// MESH: shard.all_gather %{{.*}} on @mesh grid_axes = [3] gather_axis = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
// MESH: shard.reduce_scatter %{{.*}} on @mesh grid_axes = [2] scatter_axis = 0

// CHECK: shard.grid @mesh(shape = 2x2x2) {colo.axes = ["x", "y", "z"]}
// CHECK: colo.global trainable @wte : tensor<16x8xf32> {shard = #colo.shard<split_axes = {{\[}}[], ["y"]], parts = [1, 2]>}
// CHECK: colo.global trainable @ln_1.weight : tensor<8xf32> {shard = #colo.shard<split_axes = {{\[}}["y"]], parts = [2]>}
// CHECK: colo.global trainable @attn.c_attn.weight : tensor<8x24xf32> {shard = #colo.shard<groups = 3, split_axes = {{\[}}["y", "x"], ["z"]], parts = [4, 2]>}
// CHECK: colo.global trainable @attn.c_attn.bias : tensor<24xf32> {shard = #colo.shard<groups = 3, split_axes = {{\[}}["z"]], parts = [2]>}
// CHECK: colo.global trainable @attn.c_proj.weight : tensor<8x8xf32> {shard = #colo.shard<split_axes = {{\[}}["z", "x"], ["y"]], parts = [4, 2]>}
// CHECK: colo.global trainable @attn.c_proj.bias : tensor<8xf32> {shard = #colo.shard<split_axes = {{\[}}["y"]], parts = [2]>}
// CHECK: colo.global trainable @mlp.c_fc.weight : tensor<8x32xf32> {shard = #colo.shard<split_axes = {{\[}}["y", "x"], ["z"]], parts = [4, 2]>}
// CHECK: colo.global trainable @mlp.c_proj.weight : tensor<32x8xf32> {shard = #colo.shard<split_axes = {{\[}}["z", "x"], ["y"]], parts = [4, 2]>}

// CHECK-LABEL: func.func @forward
// CHECK-SAME: -> tensor<1x4x8xf32> attributes {colo.loss_class_axis = "y", colo.loss_sample_axes = ["x", "z"], colo.tensor_parallel3d = 2 : i64}
// CHECK: %[[IDS:.*]] = shard.all_slice %arg0 on @mesh grid_axes = [0, 2] slice_axis = 0 : tensor<4x4xi64> -> tensor<1x4xi64>
// CHECK: %[[WTE:.*]] = colo.global_load @wte : tensor<16x4xf32>
// CHECK-NEXT: %[[WTER:.*]] = colo.all_reduce_grad %[[WTE]] on @mesh grid_axes = [0, 2] : tensor<16x4xf32>
// CHECK: %[[WQKV:.*]] = colo.global_load @attn.c_attn.weight : tensor<2x12xf32>
// CHECK-NEXT: %[[BQKV:.*]] = colo.global_load @attn.c_attn.bias : tensor<12xf32>
// CHECK-NEXT: %[[BQKVR:.*]] = colo.all_reduce_grad %[[BQKV]] on @mesh grid_axes = [0, 1] : tensor<12xf32>
// CHECK: %[[X:.*]] = colo.embedding %[[WTER]], %[[IDS]] : tensor<16x4xf32>, tensor<1x4xi64>
// CHECK-NEXT: %[[S:.*]] = colo.reduce_sum %[[X]] dims = [2] {keep_dims} : tensor<1x4x4xf32>
// CHECK-NEXT: %[[SG:.*]] = colo.all_reduce_grad %[[S]] on @mesh grid_axes = [1] : tensor<1x4x1xf32>
// CHECK-NEXT: shard.all_reduce %[[SG]] on @mesh grid_axes = [1] : tensor<1x4x1xf32> -> tensor<1x4x1xf32>
// The first product's weight is gathered where it is used; the next
// product's (c_proj's) before this one's input, so that it travels while
// this product runs.
// CHECK: %[[H:.*]] = colo.reshape %{{.*}} : tensor<1x4x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT: %[[WG:.*]] = shard.all_gather %[[WQKV]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x12xf32> -> tensor<4x12xf32>
// CHECK-NEXT: %[[WGR:.*]] = colo.all_reduce_grad %[[WG]] on @mesh grid_axes = [0] : tensor<4x12xf32>
// CHECK-NEXT: %[[WPG:.*]] = shard.all_gather %[[WPROJ:.*]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT: %[[WPGR:.*]] = colo.all_reduce_grad %[[WPG]] on @mesh grid_axes = [0] : tensor<4x4xf32>
// CHECK-NEXT: %[[XG:.*]] = shard.all_gather %[[H]] on @mesh grid_axes = [2] gather_axis = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
// CHECK-NEXT: %[[XGR:.*]] = colo.all_reduce_grad %[[XG]] on @mesh grid_axes = [2] : tensor<8x4xf32>
// CHECK-NEXT: %[[P:.*]] = colo.matmul %[[XGR]], %[[WGR]] : tensor<8x4xf32>, tensor<4x12xf32>
// CHECK-NEXT: %[[QKV:.*]] = shard.reduce_scatter %[[P]] on @mesh grid_axes = [1] scatter_axis = 0 : tensor<8x12xf32> -> tensor<4x12xf32>
// CHECK-NEXT: colo.add %[[QKV]], %[[BQKVR]] : tensor<4x12xf32>, tensor<12xf32>
// CHECK-NEXT: %[[QKV3:.*]] = colo.reshape %{{.*}} : tensor<4x12xf32> -> tensor<1x4x12xf32>
// CHECK-NEXT: colo.slice %[[QKV3]] start = [0, 0, 0] limit = [1, 4, 4] stride = [1, 1, 1] : tensor<1x4x12xf32>
// CHECK-NEXT: colo.slice %[[QKV3]] start = [0, 0, 4] limit = [1, 4, 8] stride = [1, 1, 1] : tensor<1x4x12xf32>
// CHECK-NEXT: colo.slice %[[QKV3]] start = [0, 0, 8] limit = [1, 4, 12] stride = [1, 1, 1] : tensor<1x4x12xf32>
// CHECK: colo.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, {{.*}}} : tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>
// CHECK: %[[O:.*]] = colo.reshape %{{.*}} : tensor<1x4x2x2xf32> -> tensor<4x4xf32>
// CHECK-NEXT: shard.all_gather %{{.*}} on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: colo.all_reduce_grad
// CHECK-NEXT: %[[OG:.*]] = shard.all_gather %[[O]] on @mesh grid_axes = [1] gather_axis = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
// CHECK: shard.reduce_scatter %{{.*}} on @mesh grid_axes = [2] scatter_axis = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
// CHECK: %[[WT:.*]] = colo.transpose %[[WTE]] permutation = [1, 0] : tensor<16x4xf32>
// CHECK-NEXT: %[[WTR:.*]] = colo.all_reduce_grad %[[WT]] on @mesh grid_axes = [0, 2] : tensor<4x16xf32>
// CHECK-NEXT: %[[L:.*]] = colo.matmul %{{.*}}, %[[WTR]] : tensor<1x4x4xf32>, tensor<4x16xf32>
// CHECK-NEXT: %[[LT:.*]] = colo.transpose %[[L]] permutation = [2, 0, 1] : tensor<1x4x16xf32>
// CHECK-NEXT: %[[LS:.*]] = shard.reduce_scatter %[[LT]] on @mesh grid_axes = [1] scatter_axis = 0 : tensor<16x1x4xf32> -> tensor<8x1x4xf32>
// CHECK-NEXT: %[[LB:.*]] = colo.transpose %[[LS]] permutation = [1, 2, 0] : tensor<8x1x4xf32>
// CHECK-NEXT: return %[[LB]] : tensor<1x4x8xf32>

colo.global trainable @wte : tensor<16x8xf32>
colo.global trainable @ln_1.weight : tensor<8xf32>
colo.global trainable @ln_1.bias : tensor<8xf32>
colo.global trainable @attn.c_attn.weight : tensor<8x24xf32>
colo.global trainable @attn.c_attn.bias : tensor<24xf32>
colo.global trainable @attn.c_proj.weight : tensor<8x8xf32>
colo.global trainable @attn.c_proj.bias : tensor<8xf32>
colo.global trainable @ln_2.weight : tensor<8xf32>
colo.global trainable @ln_2.bias : tensor<8xf32>
colo.global trainable @mlp.c_fc.weight : tensor<8x32xf32>
colo.global trainable @mlp.c_fc.bias : tensor<32xf32>
colo.global trainable @mlp.c_proj.weight : tensor<32x8xf32>
colo.global trainable @mlp.c_proj.bias : tensor<8xf32>
func.func @forward(%ids: tensor<4x4xi64>) -> tensor<4x4x16xf32> {
  %wte = colo.global_load @wte : tensor<16x8xf32>
  %ln1w = colo.global_load @ln_1.weight : tensor<8xf32>
  %ln1b = colo.global_load @ln_1.bias : tensor<8xf32>
  %wqkv = colo.global_load @attn.c_attn.weight : tensor<8x24xf32>
  %bqkv = colo.global_load @attn.c_attn.bias : tensor<24xf32>
  %wo = colo.global_load @attn.c_proj.weight : tensor<8x8xf32>
  %bo = colo.global_load @attn.c_proj.bias : tensor<8xf32>
  %ln2w = colo.global_load @ln_2.weight : tensor<8xf32>
  %ln2b = colo.global_load @ln_2.bias : tensor<8xf32>
  %wfc = colo.global_load @mlp.c_fc.weight : tensor<8x32xf32>
  %bfc = colo.global_load @mlp.c_fc.bias : tensor<32xf32>
  %wproj = colo.global_load @mlp.c_proj.weight : tensor<32x8xf32>
  %bproj = colo.global_load @mlp.c_proj.bias : tensor<8xf32>
  %x = colo.embedding %wte, %ids : tensor<16x8xf32>, tensor<4x4xi64>
  %h = colo.layer_norm %x scale %ln1w : tensor<8xf32> bias %ln1b : tensor<8xf32> {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<4x4x8xf32>
  %h2 = colo.reshape %h : tensor<4x4x8xf32> -> tensor<16x8xf32>
  %qkv = colo.matmul %h2, %wqkv : tensor<16x8xf32>, tensor<8x24xf32>
  %qkvb = colo.add %qkv, %bqkv : tensor<16x24xf32>, tensor<24xf32>
  %qkv3 = colo.reshape %qkvb : tensor<16x24xf32> -> tensor<4x4x24xf32>
  %q = colo.slice %qkv3 start = [0, 0, 0] limit = [4, 4, 8] stride = [1, 1, 1] : tensor<4x4x24xf32>
  %k = colo.slice %qkv3 start = [0, 0, 8] limit = [4, 4, 16] stride = [1, 1, 1] : tensor<4x4x24xf32>
  %v = colo.slice %qkv3 start = [0, 0, 16] limit = [4, 4, 24] stride = [1, 1, 1] : tensor<4x4x24xf32>
  %q4 = colo.reshape %q : tensor<4x4x8xf32> -> tensor<4x4x4x2xf32>
  %qt = colo.transpose %q4 permutation = [0, 2, 1, 3] : tensor<4x4x4x2xf32>
  %k4 = colo.reshape %k : tensor<4x4x8xf32> -> tensor<4x4x4x2xf32>
  %kt = colo.transpose %k4 permutation = [0, 2, 1, 3] : tensor<4x4x4x2xf32>
  %v4 = colo.reshape %v : tensor<4x4x8xf32> -> tensor<4x4x4x2xf32>
  %vt = colo.transpose %v4 permutation = [0, 2, 1, 3] : tensor<4x4x4x2xf32>
  %o = colo.attention %qt, %kt, %vt {causal, scale = 0.70710678118654746 : f64} : tensor<4x4x4x2xf32>, tensor<4x4x4x2xf32>, tensor<4x4x4x2xf32>
  %ot = colo.transpose %o permutation = [0, 2, 1, 3] : tensor<4x4x4x2xf32>
  %o2 = colo.reshape %ot : tensor<4x4x4x2xf32> -> tensor<16x8xf32>
  %a = colo.matmul %o2, %wo : tensor<16x8xf32>, tensor<8x8xf32>
  %ab = colo.add %a, %bo : tensor<16x8xf32>, tensor<8xf32>
  %a3 = colo.reshape %ab : tensor<16x8xf32> -> tensor<4x4x8xf32>
  %r1 = colo.add %a3, %x : tensor<4x4x8xf32>, tensor<4x4x8xf32>
  %m = colo.layer_norm %r1 scale %ln2w : tensor<8xf32> bias %ln2b : tensor<8xf32> {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<4x4x8xf32>
  %m2 = colo.reshape %m : tensor<4x4x8xf32> -> tensor<16x8xf32>
  %fc = colo.matmul %m2, %wfc : tensor<16x8xf32>, tensor<8x32xf32>
  %fcb = colo.add %fc, %bfc : tensor<16x32xf32>, tensor<32xf32>
  %fc3 = colo.reshape %fcb : tensor<16x32xf32> -> tensor<4x4x32xf32>
  %g = colo.gelu %fc3 approximation = tanh : tensor<4x4x32xf32>
  %g2 = colo.reshape %g : tensor<4x4x32xf32> -> tensor<16x32xf32>
  %pr = colo.matmul %g2, %wproj : tensor<16x32xf32>, tensor<32x8xf32>
  %prb = colo.add %pr, %bproj : tensor<16x8xf32>, tensor<8xf32>
  %pr3 = colo.reshape %prb : tensor<16x8xf32> -> tensor<4x4x8xf32>
  %r2 = colo.add %r1, %pr3 : tensor<4x4x8xf32>, tensor<4x4x8xf32>
  %wt = colo.transpose %wte permutation = [1, 0] : tensor<16x8xf32>
  %logits = colo.matmul %r2, %wt : tensor<4x4x8xf32>, tensor<8x16xf32>
  return %logits : tensor<4x4x16xf32>
}

// -----

// Two of the cube's axes cut the batch: q * q = 4 must divide it.
// expected-error @below {{colo-tensor-parallel-3d: q * q = 4 does not divide the batch (size 2) of input 0 (two of the cube's axes split the samples)}}
func.func @forward(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  return %x : tensor<2x8xf32>
}

// -----

// A weight's input features are split q * q ways.
colo.global trainable @t : tensor<16x6xf32>
colo.global trainable @w : tensor<6x8xf32>
func.func @forward(%ids: tensor<4xi64>) -> tensor<4x8xf32> {
  %t = colo.global_load @t : tensor<16x6xf32>
  %x = colo.embedding %t, %ids : tensor<16x6xf32>, tensor<4xi64>
  %w = colo.global_load @w : tensor<6x8xf32>
  // expected-error @below {{colo-tensor-parallel-3d: q * q = 4 does not divide dimension 0 of @w tensor<6x8xf32>}}
  %y = colo.matmul %x, %w : tensor<4x6xf32>, tensor<6x8xf32>
  return %y : tensor<4x8xf32>
}
