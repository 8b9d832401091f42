// RUN: colo-opt %s -split-input-file --colo-tensor-parallel=tp=2 | FileCheck %s
// RUN: colo-opt %s -split-input-file --colo-create-mesh="dp=2 tp=2" \
// RUN:   --colo-tensor-parallel=tp=2 | FileCheck %s --check-prefix=MESH

// A GPT-2 block as `colo import` gives it (hidden 8, 4 heads, MLP 32): the
// fused q|k|v projection is column-parallel with 3 groups, its slices become
// slices of the local [.., 12], the heads reshape divides the heads, the
// attention output projection and the MLP's c_proj are row-parallel with
// their biases added after the all-reduce. The LM head reads the embedding
// table, which the embedding also reads: it is no candidate.

// MESH: shard.grid @mesh(shape = 2x2) {colo.axes = ["dp", "tp"]}
// MESH: colo.all_reduce_grad {{.*}} on @mesh grid_axes = [1]
// MESH: shard.all_reduce {{.*}} on @mesh grid_axes = [1]

// CHECK: shard.grid @mesh(shape = 2) {colo.axes = ["tp"]}
// CHECK: colo.global trainable @wte : tensor<16x8xf32>{{$}}
// CHECK: colo.global trainable @attn.c_attn.weight : tensor<8x24xf32> {shard = #colo.shard<groups = 3, split_axes = {{\[}}[], ["tp"]], parts = [1, 2]>}
// CHECK: colo.global trainable @attn.c_attn.bias : tensor<24xf32> {shard = #colo.shard<groups = 3, split_axes = {{\[}}["tp"]], parts = [2]>}
// CHECK: colo.global trainable @attn.c_proj.weight : tensor<8x8xf32> {shard = #colo.shard<split_axes = {{\[}}["tp"], []], parts = [2, 1]>}
// CHECK: colo.global trainable @attn.c_proj.bias : tensor<8xf32>{{$}}
// CHECK: colo.global trainable @ln_2.weight : tensor<8xf32>{{$}}
// CHECK: colo.global trainable @mlp.c_fc.weight : tensor<8x32xf32> {shard = #colo.shard<split_axes = {{\[}}[], ["tp"]], parts = [1, 2]>}
// CHECK: colo.global trainable @mlp.c_fc.bias : tensor<32xf32> {shard = #colo.shard<split_axes = {{\[}}["tp"]], parts = [2]>}
// CHECK: colo.global trainable @mlp.c_proj.weight : tensor<32x8xf32> {shard = #colo.shard<split_axes = {{\[}}["tp"], []], parts = [2, 1]>}
// CHECK: colo.global trainable @mlp.c_proj.bias : tensor<8xf32>{{$}}

// CHECK-LABEL: func.func @forward
// CHECK-SAME: attributes {colo.tensor_parallel = 2 : i64}
// CHECK-DAG: %[[WQKV:.*]] = colo.global_load @attn.c_attn.weight : tensor<8x12xf32>
// CHECK-DAG: %[[BQKV:.*]] = colo.global_load @attn.c_attn.bias : tensor<12xf32>
// CHECK-DAG: %[[WO:.*]] = colo.global_load @attn.c_proj.weight : tensor<4x8xf32>
// CHECK-DAG: %[[BO:.*]] = colo.global_load @attn.c_proj.bias : tensor<8xf32>
// CHECK-DAG: %[[WFC:.*]] = colo.global_load @mlp.c_fc.weight : tensor<8x16xf32>
// CHECK-DAG: %[[BFC:.*]] = colo.global_load @mlp.c_fc.bias : tensor<16xf32>
// CHECK-DAG: %[[WPROJ:.*]] = colo.global_load @mlp.c_proj.weight : tensor<16x8xf32>
// CHECK: %[[H:.*]] = colo.reshape %{{.*}} : tensor<2x4x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[HR:.*]] = colo.all_reduce_grad %[[H]] on @mesh grid_axes = [0] : tensor<8x8xf32>
// CHECK-NEXT: %[[QKV:.*]] = colo.matmul %[[HR]], %[[WQKV]] : tensor<8x8xf32>, tensor<8x12xf32>
// CHECK-NEXT: %[[QKVB:.*]] = colo.add %[[QKV]], %[[BQKV]] : tensor<8x12xf32>, tensor<12xf32>
// CHECK-NEXT: %[[QKV3:.*]] = colo.reshape %[[QKVB]] : tensor<8x12xf32> -> tensor<2x4x12xf32>
// CHECK-NEXT: %[[Q:.*]] = colo.slice %[[QKV3]] start = [0, 0, 0] limit = [2, 4, 4] stride = [1, 1, 1] : tensor<2x4x12xf32>
// CHECK-NEXT: %[[K:.*]] = colo.slice %[[QKV3]] start = [0, 0, 4] limit = [2, 4, 8] stride = [1, 1, 1] : tensor<2x4x12xf32>
// CHECK-NEXT: %[[V:.*]] = colo.slice %[[QKV3]] start = [0, 0, 8] limit = [2, 4, 12] stride = [1, 1, 1] : tensor<2x4x12xf32>
// CHECK-NEXT: colo.reshape %[[Q]] : tensor<2x4x4xf32> -> tensor<2x4x2x2xf32>
// CHECK: %[[O:.*]] = colo.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, {{.*}}} : tensor<2x2x4x2xf32>, tensor<2x2x4x2xf32>, tensor<2x2x4x2xf32>
// CHECK-NEXT: %[[OT:.*]] = colo.transpose %[[O]] permutation = [0, 2, 1, 3] : tensor<2x2x4x2xf32>
// CHECK-NEXT: %[[O2:.*]] = colo.reshape %[[OT]] : tensor<2x4x2x2xf32> -> tensor<8x4xf32>
// CHECK-NEXT: %[[A:.*]] = colo.matmul %[[O2]], %[[WO]] : tensor<8x4xf32>, tensor<4x8xf32>
// CHECK-NEXT: %[[AR:.*]] = shard.all_reduce %[[A]] on @mesh grid_axes = [0] : tensor<8x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: colo.add %[[AR]], %[[BO]] : tensor<8x8xf32>, tensor<8xf32>
// CHECK: %[[M:.*]] = colo.reshape %{{.*}} : tensor<2x4x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[MR:.*]] = colo.all_reduce_grad %[[M]] on @mesh grid_axes = [0] : tensor<8x8xf32>
// CHECK-NEXT: %[[FC:.*]] = colo.matmul %[[MR]], %[[WFC]] : tensor<8x8xf32>, tensor<8x16xf32>
// CHECK-NEXT: colo.add %[[FC]], %[[BFC]] : tensor<8x16xf32>, tensor<16xf32>
// CHECK-NEXT: colo.reshape %{{.*}} : tensor<8x16xf32> -> tensor<2x4x16xf32>
// CHECK-NEXT: colo.gelu %{{.*}} approximation = tanh : tensor<2x4x16xf32>
// CHECK-NEXT: %[[G2:.*]] = colo.reshape %{{.*}} : tensor<2x4x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[PR:.*]] = colo.matmul %[[G2]], %[[WPROJ]] : tensor<8x16xf32>, tensor<16x8xf32>
// CHECK-NEXT: %[[PRR:.*]] = shard.all_reduce %[[PR]] on @mesh grid_axes = [0] : tensor<8x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: colo.add %[[PRR]], %{{.*}} : tensor<8x8xf32>, tensor<8xf32>
// CHECK: %[[WT:.*]] = colo.transpose %{{.*}} permutation = [1, 0] : tensor<16x8xf32>
// CHECK-NEXT: colo.matmul %{{.*}}, %[[WT]] : tensor<2x4x8xf32>, tensor<8x16xf32>
// CHECK-NOT: shard.all_reduce

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

// -----

// A Llama block (hidden 8, 4 heads and 2 key/value heads of size 2, MLP 16):
// nn.Linear weights [out, in] read through transposes are sharded on dim 0
// (q, k, v, gate, up) or 1 (o, down); rotary embedding works within a head
// and passes through; the attention runs on 2 query and 1 key/value heads;
// SwiGLU multiplies two column-parallel outputs, so gate and up are one
// region with one entry. The untied LM head is a candidate whose logits are
// returned: it stays replicated.

// CHECK: colo.global trainable @self_attn.q_proj.weight : tensor<8x8xf32> {shard = #colo.shard<split_axes = {{\[}}["tp"], []], parts = [2, 1]>}
// CHECK: colo.global trainable @self_attn.k_proj.weight : tensor<4x8xf32> {shard = #colo.shard<split_axes = {{\[}}["tp"], []], parts = [2, 1]>}
// CHECK: colo.global trainable @self_attn.v_proj.weight : tensor<4x8xf32> {shard = #colo.shard<split_axes = {{\[}}["tp"], []], parts = [2, 1]>}
// CHECK: colo.global trainable @self_attn.o_proj.weight : tensor<8x8xf32> {shard = #colo.shard<split_axes = {{\[}}[], ["tp"]], parts = [1, 2]>}
// CHECK: colo.global trainable @post_attention_layernorm.weight : tensor<8xf32>{{$}}
// CHECK: colo.global trainable @mlp.gate_proj.weight : tensor<16x8xf32> {shard = #colo.shard<split_axes = {{\[}}["tp"], []], parts = [2, 1]>}
// CHECK: colo.global trainable @mlp.up_proj.weight : tensor<16x8xf32> {shard = #colo.shard<split_axes = {{\[}}["tp"], []], parts = [2, 1]>}
// CHECK: colo.global trainable @mlp.down_proj.weight : tensor<8x16xf32> {shard = #colo.shard<split_axes = {{\[}}[], ["tp"]], parts = [1, 2]>}
// CHECK: colo.global trainable @lm_head.weight : tensor<16x8xf32>{{$}}

// CHECK-LABEL: func.func @forward
// CHECK-DAG: %[[WQ:.*]] = colo.global_load @self_attn.q_proj.weight : tensor<4x8xf32>
// CHECK-DAG: %[[WK:.*]] = colo.global_load @self_attn.k_proj.weight : tensor<2x8xf32>
// CHECK-DAG: %[[WLM:.*]] = colo.global_load @lm_head.weight : tensor<16x8xf32>
// CHECK: %[[H:.*]] = colo.rms_norm
// CHECK-NEXT: %[[HR:.*]] = colo.all_reduce_grad %[[H]] on @mesh grid_axes = [0] : tensor<2x4x8xf32>
// CHECK-NEXT: %[[WQT:.*]] = colo.transpose %[[WQ]] permutation = [1, 0] : tensor<4x8xf32>
// CHECK-NEXT: %[[Q:.*]] = colo.matmul %[[HR]], %[[WQT]] : tensor<2x4x8xf32>, tensor<8x4xf32>
// CHECK-NEXT: colo.reshape %[[Q]] : tensor<2x4x4xf32> -> tensor<2x4x2x2xf32>
// CHECK: %[[WKT:.*]] = colo.transpose %[[WK]] permutation = [1, 0] : tensor<2x8xf32>
// CHECK-NEXT: %[[K:.*]] = colo.matmul %[[HR]], %[[WKT]] : tensor<2x4x8xf32>, tensor<8x2xf32>
// CHECK-NEXT: colo.reshape %[[K]] : tensor<2x4x2xf32> -> tensor<2x4x1x2xf32>
// CHECK: colo.matmul %[[HR]], %{{.*}} : tensor<2x4x8xf32>, tensor<8x2xf32>
// CHECK: colo.mul %{{.*}}, %{{.*}} : tensor<2x2x4x2xf32>, tensor<1x1x4x2xf32>
// CHECK-NEXT: colo.slice %{{.*}} start = [0, 0, 0, 0] limit = [2, 2, 4, 1] stride = [1, 1, 1, 1] : tensor<2x2x4x2xf32>
// CHECK: colo.concat %{{.*}}, %{{.*}} axis = -1 : tensor<2x2x4x1xf32>, tensor<2x2x4x1xf32>
// CHECK: colo.attention %{{.*}} : tensor<2x2x4x2xf32>, tensor<2x1x4x2xf32>, tensor<2x1x4x2xf32>
// CHECK: colo.reshape %{{.*}} : tensor<2x4x2x2xf32> -> tensor<2x4x4xf32>
// CHECK-NEXT: %[[WOT:.*]] = colo.transpose %{{.*}} permutation = [1, 0] : tensor<8x4xf32>
// CHECK-NEXT: %[[A:.*]] = colo.matmul %{{.*}}, %[[WOT]] : tensor<2x4x4xf32>, tensor<4x8xf32>
// CHECK-NEXT: %[[AR:.*]] = shard.all_reduce %[[A]] on @mesh grid_axes = [0] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT: colo.add %{{.*}}, %[[AR]]
// CHECK: %[[M:.*]] = colo.rms_norm
// CHECK-NEXT: %[[MR:.*]] = colo.all_reduce_grad %[[M]] on @mesh grid_axes = [0] : tensor<2x4x8xf32>
// CHECK-NOT: colo.all_reduce_grad
// CHECK: %[[GATE:.*]] = colo.matmul %[[MR]], %{{.*}} : tensor<2x4x8xf32>, tensor<8x8xf32>
// CHECK-NEXT: %[[ACT:.*]] = colo.silu %[[GATE]] : tensor<2x4x8xf32>
// CHECK: %[[UP:.*]] = colo.matmul %[[MR]], %{{.*}} : tensor<2x4x8xf32>, tensor<8x8xf32>
// CHECK-NEXT: %[[PROD:.*]] = colo.mul %[[ACT]], %[[UP]] : tensor<2x4x8xf32>, tensor<2x4x8xf32>
// CHECK: %[[DOWN:.*]] = colo.matmul %[[PROD]], %{{.*}} : tensor<2x4x8xf32>, tensor<8x8xf32>
// CHECK-NEXT: %[[DR:.*]] = shard.all_reduce %[[DOWN]] on @mesh grid_axes = [0] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
// CHECK: %[[F:.*]] = colo.rms_norm
// CHECK-NEXT: %[[WLMT:.*]] = colo.transpose %[[WLM]] permutation = [1, 0] : tensor<16x8xf32>
// CHECK-NEXT: %[[LOGITS:.*]] = colo.matmul %[[F]], %[[WLMT]] : tensor<2x4x8xf32>, tensor<8x16xf32>
// CHECK-NEXT: return %[[LOGITS]] : tensor<2x4x16xf32>

colo.global trainable @embed_tokens.weight : tensor<16x8xf32>
colo.global trainable @input_layernorm.weight : tensor<8xf32>
colo.global trainable @self_attn.q_proj.weight : tensor<8x8xf32>
colo.global trainable @self_attn.k_proj.weight : tensor<4x8xf32>
colo.global trainable @self_attn.v_proj.weight : tensor<4x8xf32>
colo.global trainable @self_attn.o_proj.weight : tensor<8x8xf32>
colo.global trainable @post_attention_layernorm.weight : tensor<8xf32>
colo.global trainable @mlp.gate_proj.weight : tensor<16x8xf32>
colo.global trainable @mlp.up_proj.weight : tensor<16x8xf32>
colo.global trainable @mlp.down_proj.weight : tensor<8x16xf32>
colo.global trainable @norm.weight : tensor<8xf32>
colo.global trainable @lm_head.weight : tensor<16x8xf32>
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<2x4x16xf32> {
  %sin = colo.constant dense<0.5> : tensor<1x1x4x2xf32>
  %cos = colo.constant dense<0.25> : tensor<1x1x4x2xf32>
  %emb = colo.global_load @embed_tokens.weight : tensor<16x8xf32>
  %n1w = colo.global_load @input_layernorm.weight : tensor<8xf32>
  %wq = colo.global_load @self_attn.q_proj.weight : tensor<8x8xf32>
  %wk = colo.global_load @self_attn.k_proj.weight : tensor<4x8xf32>
  %wv = colo.global_load @self_attn.v_proj.weight : tensor<4x8xf32>
  %wo = colo.global_load @self_attn.o_proj.weight : tensor<8x8xf32>
  %n2w = colo.global_load @post_attention_layernorm.weight : tensor<8xf32>
  %wg = colo.global_load @mlp.gate_proj.weight : tensor<16x8xf32>
  %wu = colo.global_load @mlp.up_proj.weight : tensor<16x8xf32>
  %wd = colo.global_load @mlp.down_proj.weight : tensor<8x16xf32>
  %nw = colo.global_load @norm.weight : tensor<8xf32>
  %wlm = colo.global_load @lm_head.weight : tensor<16x8xf32>
  %x = colo.embedding %emb, %ids : tensor<16x8xf32>, tensor<2x4xi64>
  %h = colo.rms_norm %x scale %n1w : tensor<8xf32> {axis = 2 : i64, epsilon = 1.0e-06 : f64} : tensor<2x4x8xf32>
  %wqt = colo.transpose %wq permutation = [1, 0] : tensor<8x8xf32>
  %q = colo.matmul %h, %wqt : tensor<2x4x8xf32>, tensor<8x8xf32>
  %q4 = colo.reshape %q : tensor<2x4x8xf32> -> tensor<2x4x4x2xf32>
  %qt = colo.transpose %q4 permutation = [0, 2, 1, 3] : tensor<2x4x4x2xf32>
  %wkt = colo.transpose %wk permutation = [1, 0] : tensor<4x8xf32>
  %k = colo.matmul %h, %wkt : tensor<2x4x8xf32>, tensor<8x4xf32>
  %k4 = colo.reshape %k : tensor<2x4x4xf32> -> tensor<2x4x2x2xf32>
  %kt = colo.transpose %k4 permutation = [0, 2, 1, 3] : tensor<2x4x2x2xf32>
  %wvt = colo.transpose %wv permutation = [1, 0] : tensor<4x8xf32>
  %v = colo.matmul %h, %wvt : tensor<2x4x8xf32>, tensor<8x4xf32>
  %v4 = colo.reshape %v : tensor<2x4x4xf32> -> tensor<2x4x2x2xf32>
  %vt = colo.transpose %v4 permutation = [0, 2, 1, 3] : tensor<2x4x2x2xf32>
  %qc = colo.mul %qt, %cos : tensor<2x4x4x2xf32>, tensor<1x1x4x2xf32>
  %q1 = colo.slice %qt start = [0, 0, 0, 0] limit = [2, 4, 4, 1] stride = [1, 1, 1, 1] : tensor<2x4x4x2xf32>
  %q2 = colo.slice %qt start = [0, 0, 0, 1] limit = [2, 4, 4, 2] stride = [1, 1, 1, 1] : tensor<2x4x4x2xf32>
  %q2n = colo.neg %q2 : tensor<2x4x4x1xf32>
  %qr = colo.concat %q2n, %q1 axis = -1 : tensor<2x4x4x1xf32>, tensor<2x4x4x1xf32>
  %qs = colo.mul %qr, %sin : tensor<2x4x4x2xf32>, tensor<1x1x4x2xf32>
  %qe = colo.add %qc, %qs : tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>
  %kc = colo.mul %kt, %cos : tensor<2x2x4x2xf32>, tensor<1x1x4x2xf32>
  %k1 = colo.slice %kt start = [0, 0, 0, 0] limit = [2, 2, 4, 1] stride = [1, 1, 1, 1] : tensor<2x2x4x2xf32>
  %k2 = colo.slice %kt start = [0, 0, 0, 1] limit = [2, 2, 4, 2] stride = [1, 1, 1, 1] : tensor<2x2x4x2xf32>
  %k2n = colo.neg %k2 : tensor<2x2x4x1xf32>
  %kr = colo.concat %k2n, %k1 axis = -1 : tensor<2x2x4x1xf32>, tensor<2x2x4x1xf32>
  %ks = colo.mul %kr, %sin : tensor<2x2x4x2xf32>, tensor<1x1x4x2xf32>
  %ke = colo.add %kc, %ks : tensor<2x2x4x2xf32>, tensor<2x2x4x2xf32>
  %o = colo.attention %qe, %ke, %vt {causal, scale = 0.70710678118654746 : f64} : tensor<2x4x4x2xf32>, tensor<2x2x4x2xf32>, tensor<2x2x4x2xf32>
  %ot = colo.transpose %o permutation = [0, 2, 1, 3] : tensor<2x4x4x2xf32>
  %o3 = colo.reshape %ot : tensor<2x4x4x2xf32> -> tensor<2x4x8xf32>
  %wot = colo.transpose %wo permutation = [1, 0] : tensor<8x8xf32>
  %a = colo.matmul %o3, %wot : tensor<2x4x8xf32>, tensor<8x8xf32>
  %r1 = colo.add %x, %a : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %m = colo.rms_norm %r1 scale %n2w : tensor<8xf32> {axis = 2 : i64, epsilon = 1.0e-06 : f64} : tensor<2x4x8xf32>
  %wgt = colo.transpose %wg permutation = [1, 0] : tensor<16x8xf32>
  %gate = colo.matmul %m, %wgt : tensor<2x4x8xf32>, tensor<8x16xf32>
  %act = colo.silu %gate : tensor<2x4x16xf32>
  %wut = colo.transpose %wu permutation = [1, 0] : tensor<16x8xf32>
  %up = colo.matmul %m, %wut : tensor<2x4x8xf32>, tensor<8x16xf32>
  %prod = colo.mul %act, %up : tensor<2x4x16xf32>, tensor<2x4x16xf32>
  %wdt = colo.transpose %wd permutation = [1, 0] : tensor<8x16xf32>
  %down = colo.matmul %prod, %wdt : tensor<2x4x16xf32>, tensor<16x8xf32>
  %r2 = colo.add %r1, %down : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %f = colo.rms_norm %r2 scale %nw : tensor<8xf32> {axis = 2 : i64, epsilon = 1.0e-06 : f64} : tensor<2x4x8xf32>
  %wlmt = colo.transpose %wlm permutation = [1, 0] : tensor<16x8xf32>
  %logits = colo.matmul %f, %wlmt : tensor<2x4x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x4x16xf32>
}

// -----

// Regions that would need the whole features stay replicated: a norm over
// them, a product with a value that is not a weight, a residual add.

// CHECK-LABEL: func.func @forward
// CHECK-NOT: colo.tensor_parallel
// CHECK-NOT: all_reduce
colo.global trainable @w1 : tensor<8x16xf32>
colo.global trainable @w2 : tensor<16x8xf32>
colo.global trainable @w3 : tensor<8x16xf32>
colo.global trainable @w4 : tensor<8x8xf32>
func.func @forward(%x: tensor<4x8xf32>, %y: tensor<16x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %w1 = colo.global_load @w1 : tensor<8x16xf32>
  %w2 = colo.global_load @w2 : tensor<16x8xf32>
  %w3 = colo.global_load @w3 : tensor<8x16xf32>
  %w4 = colo.global_load @w4 : tensor<8x8xf32>
  %a = colo.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x16xf32>
  %n = colo.layer_norm %a {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<4x16xf32>
  %b = colo.matmul %n, %w2 : tensor<4x16xf32>, tensor<16x8xf32>
  %c = colo.matmul %x, %w3 : tensor<4x8xf32>, tensor<8x16xf32>
  %d = colo.matmul %c, %y : tensor<4x16xf32>, tensor<16x8xf32>
  %e = colo.matmul %x, %w4 : tensor<4x8xf32>, tensor<8x8xf32>
  %f = colo.add %e, %x : tensor<4x8xf32>, tensor<4x8xf32>
  return %b, %d, %f : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Attention as the dynamo exporter leaves it: the key's heads are merged
// with the batch ([2, 4] -> 8) for a transpose and split off again. The
// merged dimension holds each sample's block of heads (2 groups of 2).

// CHECK-LABEL: func.func @forward
// CHECK: %[[X:.*]] = colo.all_reduce_grad %arg0 on @mesh grid_axes = [0] : tensor<8x8xf32>
// CHECK: colo.matmul %[[X]], %{{.*}} : tensor<8x8xf32>, tensor<8x4xf32>
// CHECK-NEXT: colo.reshape %{{.*}} : tensor<8x4xf32> -> tensor<2x4x2x2xf32>
// CHECK: %[[KB:.*]] = colo.reshape %{{.*}} : tensor<2x2x4x2xf32> -> tensor<4x4x2xf32>
// CHECK-NEXT: %[[KBT:.*]] = colo.transpose %[[KB]] permutation = [0, 2, 1] : tensor<4x4x2xf32>
// CHECK-NEXT: %[[K4:.*]] = colo.reshape %[[KBT]] : tensor<4x2x4xf32> -> tensor<2x2x2x4xf32>
// CHECK-NEXT: %[[S:.*]] = colo.matmul %{{.*}}, %[[K4]] : tensor<2x2x4x2xf32>, tensor<2x2x2x4xf32>
// CHECK-NEXT: colo.softmax %[[S]] axis = 3 : tensor<2x2x4x4xf32>
// CHECK: colo.reshape %{{.*}} : tensor<2x4x2x2xf32> -> tensor<8x4xf32>
// CHECK-NEXT: %[[Y:.*]] = colo.matmul %{{.*}}, %{{.*}} : tensor<8x4xf32>, tensor<4x8xf32>
// CHECK-NEXT: shard.all_reduce %[[Y]] on @mesh grid_axes = [0] : tensor<8x8xf32> -> tensor<8x8xf32>
colo.global trainable @wq : tensor<8x8xf32>
colo.global trainable @wk : tensor<8x8xf32>
colo.global trainable @wv : tensor<8x8xf32>
colo.global trainable @wo : tensor<8x8xf32>
func.func @forward(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %wq = colo.global_load @wq : tensor<8x8xf32>
  %wk = colo.global_load @wk : tensor<8x8xf32>
  %wv = colo.global_load @wv : tensor<8x8xf32>
  %wo = colo.global_load @wo : tensor<8x8xf32>
  %q = colo.matmul %x, %wq : tensor<8x8xf32>, tensor<8x8xf32>
  %q4 = colo.reshape %q : tensor<8x8xf32> -> tensor<2x4x4x2xf32>
  %qt = colo.transpose %q4 permutation = [0, 2, 1, 3] : tensor<2x4x4x2xf32>
  %k = colo.matmul %x, %wk : tensor<8x8xf32>, tensor<8x8xf32>
  %k4 = colo.reshape %k : tensor<8x8xf32> -> tensor<2x4x4x2xf32>
  %kt = colo.transpose %k4 permutation = [0, 2, 1, 3] : tensor<2x4x4x2xf32>
  %kb = colo.reshape %kt : tensor<2x4x4x2xf32> -> tensor<8x4x2xf32>
  %kbt = colo.transpose %kb permutation = [0, 2, 1] : tensor<8x4x2xf32>
  %kk = colo.reshape %kbt : tensor<8x2x4xf32> -> tensor<2x4x2x4xf32>
  %s = colo.matmul %qt, %kk : tensor<2x4x4x2xf32>, tensor<2x4x2x4xf32>
  %p = colo.softmax %s axis = 3 : tensor<2x4x4x4xf32>
  %v = colo.matmul %x, %wv : tensor<8x8xf32>, tensor<8x8xf32>
  %v4 = colo.reshape %v : tensor<8x8xf32> -> tensor<2x4x4x2xf32>
  %vt = colo.transpose %v4 permutation = [0, 2, 1, 3] : tensor<2x4x4x2xf32>
  %o = colo.matmul %p, %vt : tensor<2x4x4x4xf32>, tensor<2x4x4x2xf32>
  %ot = colo.transpose %o permutation = [0, 2, 1, 3] : tensor<2x4x4x2xf32>
  %o2 = colo.reshape %ot : tensor<2x4x4x2xf32> -> tensor<8x8xf32>
  %y = colo.matmul %o2, %wo : tensor<8x8xf32>, tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}
