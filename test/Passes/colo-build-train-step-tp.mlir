// RUN: colo-opt %s --colo-tensor-parallel=tp=2 --colo-build-train-step="loss=lm" \
// RUN:   | FileCheck %s
// RUN: colo-opt %s --colo-tensor-parallel=tp=2 --colo-build-train-step="loss=lm" \
// RUN:   --canonicalize | FileCheck %s --check-prefixes=CANON,NOGRAD
// RUN: colo-opt %s --colo-tensor-parallel=tp=2 \
// RUN:   --colo-build-train-step="loss=lm max-grad-norm=1.0" | FileCheck %s --check-prefix=CLIP

// The backward of a tensor-parallel GPT-2 block: autodiff adds exactly one
// all-reduce (sum) per region, the gradient of its colo.all_reduce_grad, and
// none for the forward's all-reduces (their gradient is the identity): 4 per
// block and step. Sharded parameters have local gradients, and their
// optimizer state is sharded like them.

// CHECK: colo.global @"attn.c_attn.weight#exp_avg" : tensor<8x24xf32> = dense<0.000000e+00> : tensor<8x24xf32> {colo.optimizer_state, shard = #colo.shard<groups = 3, split_axes = {{\[}}[], ["tp"]], parts = [1, 2]>}
// CHECK: colo.global @"attn.c_proj.bias#exp_avg" : tensor<8xf32> = dense<0.000000e+00> : tensor<8xf32> {colo.optimizer_state}{{$}}

// CHECK-LABEL: func.func @train_step
// CHECK: %[[IN1:.*]] = colo.all_reduce_grad %{{.*}} on @mesh grid_axes = [0] : tensor<8x8xf32>
// CHECK: %[[P1:.*]] = colo.matmul %{{.*}}, %{{.*}} : tensor<8x4xf32>, tensor<4x8xf32>
// CHECK-NEXT: shard.all_reduce %[[P1]] on @mesh grid_axes = [0] : tensor<8x8xf32> -> tensor<8x8xf32>
// CHECK: %[[IN2:.*]] = colo.all_reduce_grad %{{.*}} on @mesh grid_axes = [0] : tensor<8x8xf32>
// CHECK: %[[P2:.*]] = colo.matmul %{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16x8xf32>
// CHECK-NEXT: shard.all_reduce %[[P2]] on @mesh grid_axes = [0] : tensor<8x8xf32> -> tensor<8x8xf32>
// CHECK: colo.cross_entropy
// The MLP's input gradient: dY_r @ W_r^T summed over the ranks.
// CHECK: %[[D2:.*]] = colo.matmul %{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16x8xf32>
// CHECK: shard.all_reduce %[[D2]] on @mesh grid_axes = [0] : tensor<8x8xf32> -> tensor<8x8xf32>
// CHECK: %[[D1:.*]] = colo.matmul %{{.*}}, %{{.*}} : tensor<8x12xf32>, tensor<12x8xf32>
// CHECK: shard.all_reduce %[[D1]] on @mesh grid_axes = [0] : tensor<8x8xf32> -> tensor<8x8xf32>
// CHECK-NOT: shard.all_reduce
// CHECK: colo.gradient %{{.*}} of @attn.c_attn.weight : tensor<8x12xf32>
// CHECK: colo.gradient %{{.*}} of @attn.c_proj.weight : tensor<4x8xf32>
// CHECK: colo.gradient %{{.*}} of @attn.c_proj.bias : tensor<8xf32>
// CHECK: colo.global_load @attn.c_attn.weight : tensor<8x12xf32>
// CHECK-NOT: shard.all_reduce
// CHECK: return

// Clipping by the global norm: the squares of the sharded parameters' blocks
// are summed over the tp ranks, the replicated parameters' added once.
// CLIP-LABEL: func.func @train_step
// CLIP: colo.gradient %{{.*}} of @attn.c_proj.bias
// CLIP: %[[BLOCKS:.*]] = shard.all_reduce %{{.*}} on @mesh grid_axes = [0] : tensor<f32> -> tensor<f32>
// CLIP-NEXT: %[[TOTAL:.*]] = colo.add %{{.*}}, %[[BLOCKS]] : tensor<f32>, tensor<f32>
// CLIP-NEXT: colo.sqrt %[[TOTAL]]

// Once differentiated, colo.all_reduce_grad is an identity (@forward, the
// model, keeps it).
// CANON-LABEL: func.func @train_step
// NOGRAD-NOT: colo.all_reduce_grad
// CANON-COUNT-4: shard.all_reduce
// CANON-NOT: shard.all_reduce
// NOGRAD-NOT: colo.all_reduce_grad

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
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<2x4x16xf32> {
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
  %x = colo.embedding %wte, %ids : tensor<16x8xf32>, tensor<2x4xi64>
  %h = colo.layer_norm %x scale %ln1w : tensor<8xf32> bias %ln1b : tensor<8xf32> {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<2x4x8xf32>
  %h2 = colo.reshape %h : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %qkv = colo.matmul %h2, %wqkv : tensor<8x8xf32>, tensor<8x24xf32>
  %qkvb = colo.add %qkv, %bqkv : tensor<8x24xf32>, tensor<24xf32>
  %qkv3 = colo.reshape %qkvb : tensor<8x24xf32> -> tensor<2x4x24xf32>
  %q = colo.slice %qkv3 start = [0, 0, 0] limit = [2, 4, 8] stride = [1, 1, 1] : tensor<2x4x24xf32>
  %k = colo.slice %qkv3 start = [0, 0, 8] limit = [2, 4, 16] stride = [1, 1, 1] : tensor<2x4x24xf32>
  %v = colo.slice %qkv3 start = [0, 0, 16] limit = [2, 4, 24] stride = [1, 1, 1] : tensor<2x4x24xf32>
  %q4 = colo.reshape %q : tensor<2x4x8xf32> -> tensor<2x4x4x2xf32>
  %qt = colo.transpose %q4 permutation = [0, 2, 1, 3] : tensor<2x4x4x2xf32>
  %k4 = colo.reshape %k : tensor<2x4x8xf32> -> tensor<2x4x4x2xf32>
  %kt = colo.transpose %k4 permutation = [0, 2, 1, 3] : tensor<2x4x4x2xf32>
  %v4 = colo.reshape %v : tensor<2x4x8xf32> -> tensor<2x4x4x2xf32>
  %vt = colo.transpose %v4 permutation = [0, 2, 1, 3] : tensor<2x4x4x2xf32>
  %o = colo.attention %qt, %kt, %vt {causal, scale = 0.70710678118654746 : f64} : tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>
  %ot = colo.transpose %o permutation = [0, 2, 1, 3] : tensor<2x4x4x2xf32>
  %o2 = colo.reshape %ot : tensor<2x4x4x2xf32> -> tensor<8x8xf32>
  %a = colo.matmul %o2, %wo : tensor<8x8xf32>, tensor<8x8xf32>
  %ab = colo.add %a, %bo : tensor<8x8xf32>, tensor<8xf32>
  %a3 = colo.reshape %ab : tensor<8x8xf32> -> tensor<2x4x8xf32>
  %r1 = colo.add %a3, %x : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %m = colo.layer_norm %r1 scale %ln2w : tensor<8xf32> bias %ln2b : tensor<8xf32> {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<2x4x8xf32>
  %m2 = colo.reshape %m : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %fc = colo.matmul %m2, %wfc : tensor<8x8xf32>, tensor<8x32xf32>
  %fcb = colo.add %fc, %bfc : tensor<8x32xf32>, tensor<32xf32>
  %fc3 = colo.reshape %fcb : tensor<8x32xf32> -> tensor<2x4x32xf32>
  %g = colo.gelu %fc3 approximation = tanh : tensor<2x4x32xf32>
  %g2 = colo.reshape %g : tensor<2x4x32xf32> -> tensor<8x32xf32>
  %pr = colo.matmul %g2, %wproj : tensor<8x32xf32>, tensor<32x8xf32>
  %prb = colo.add %pr, %bproj : tensor<8x8xf32>, tensor<8xf32>
  %pr3 = colo.reshape %prb : tensor<8x8xf32> -> tensor<2x4x8xf32>
  %r2 = colo.add %r1, %pr3 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %wt = colo.transpose %wte permutation = [1, 0] : tensor<16x8xf32>
  %logits = colo.matmul %r2, %wt : tensor<2x4x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x4x16xf32>
}
