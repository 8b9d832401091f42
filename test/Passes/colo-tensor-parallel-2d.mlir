// RUN: colo-opt %s -split-input-file --colo-tensor-parallel-2d=q=2 | FileCheck %s
// RUN: colo-opt %s -split-input-file --colo-create-mesh="dp=2 tp2d=2" \
// RUN:   --colo-tensor-parallel-2d=q=2 | FileCheck %s --check-prefix=MESH

// A GPT-2 block as `colo import` gives it (hidden 8, 4 heads, MLP 32, batch
// 2) on a 2 x 2 grid: the ids are cut to the row's sample, every linear
// weight is split over ("row", "col") and multiplied by SUMMA (step 1's
// broadcasts before step 0's product), the fused q|k|v keeps its 3 groups,
// the biases, norm scales and the embedding table hold the column's
// features with their gradients summed over "row", the layer norms sum
// their statistics over "col", the attention runs on the rank's 2 heads,
// and the LM head on the tied table is reduce-scattered over "col" along
// the vocabulary (brought outermost): the logits stay the rank's block (the
// row's samples, the column's vocabulary), the function marked for the
// loss to read them so.

// MESH: shard.grid @mesh(shape = 2x2x2) {colo.axes = ["dp", "row", "col"]}
// MESH: shard.broadcast {{.*}} on @mesh grid_axes = [2] root = [0]
// MESH: shard.broadcast {{.*}} on @mesh grid_axes = [1] root = [0]

// CHECK: shard.grid @mesh(shape = 2x2) {colo.axes = ["row", "col"]}
// CHECK: colo.global trainable @wte : tensor<16x8xf32> {shard = #colo.shard<split_axes = {{\[}}[], ["col"]], parts = [1, 2]>}
// CHECK: colo.global trainable @ln_1.weight : tensor<8xf32> {shard = #colo.shard<split_axes = {{\[}}["col"]], parts = [2]>}
// CHECK: colo.global trainable @attn.c_attn.weight : tensor<8x24xf32> {shard = #colo.shard<groups = 3, split_axes = {{\[}}["row"], ["col"]], parts = [2, 2]>}
// CHECK: colo.global trainable @attn.c_attn.bias : tensor<24xf32> {shard = #colo.shard<groups = 3, split_axes = {{\[}}["col"]], parts = [2]>}
// CHECK: colo.global trainable @attn.c_proj.weight : tensor<8x8xf32> {shard = #colo.shard<split_axes = {{\[}}["row"], ["col"]], parts = [2, 2]>}
// CHECK: colo.global trainable @mlp.c_proj.weight : tensor<32x8xf32> {shard = #colo.shard<split_axes = {{\[}}["row"], ["col"]], parts = [2, 2]>}

// CHECK-LABEL: func.func @forward
// CHECK-SAME: -> tensor<1x4x8xf32> attributes {colo.loss_class_axis = "col", colo.loss_sample_axes = ["row"], colo.tensor_parallel2d = 2 : i64}
// CHECK: %[[IDS:.*]] = shard.all_slice %arg0 on @mesh grid_axes = [0] slice_axis = 0 : tensor<2x4xi64> -> tensor<1x4xi64>
// CHECK: %[[WTE:.*]] = colo.global_load @wte : tensor<16x4xf32>
// CHECK-NEXT: %[[WTER:.*]] = colo.all_reduce_grad %[[WTE]] on @mesh grid_axes = [0] : tensor<16x4xf32>
// CHECK: %[[WQKV:.*]] = colo.global_load @attn.c_attn.weight : tensor<4x12xf32>
// CHECK-NOT: colo.all_reduce_grad %[[WQKV]]
// CHECK: %[[X:.*]] = colo.embedding %[[WTER]], %[[IDS]] : tensor<16x4xf32>, tensor<1x4xi64>
// CHECK-NEXT: %[[S:.*]] = colo.reduce_sum %[[X]] dims = [2] {keep_dims} : tensor<1x4x4xf32>
// CHECK-NEXT: %[[SG:.*]] = colo.all_reduce_grad %[[S]] on @mesh grid_axes = [1] : tensor<1x4x1xf32>
// CHECK-NEXT: shard.all_reduce %[[SG]] on @mesh grid_axes = [1] : tensor<1x4x1xf32> -> tensor<1x4x1xf32>
// CHECK: %[[H:.*]] = colo.reshape %{{.*}} : tensor<1x4x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT: %[[X0:.*]] = shard.broadcast %[[H]] on @mesh grid_axes = [1] root = [0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: %[[W0:.*]] = shard.broadcast %[[WQKV]] on @mesh grid_axes = [0] root = [0] : (tensor<4x12xf32>) -> tensor<4x12xf32>
// CHECK-NEXT: %[[X1:.*]] = shard.broadcast %[[H]] on @mesh grid_axes = [1] root = [1] : (tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: %[[W1:.*]] = shard.broadcast %[[WQKV]] on @mesh grid_axes = [0] root = [1] : (tensor<4x12xf32>) -> tensor<4x12xf32>
// CHECK-NEXT: %[[P0:.*]] = colo.matmul %[[X0]], %[[W0]] : tensor<4x4xf32>, tensor<4x12xf32>
// CHECK-NEXT: %[[P1:.*]] = colo.matmul %[[X1]], %[[W1]] : tensor<4x4xf32>, tensor<4x12xf32>
// CHECK-NEXT: %[[QKV:.*]] = colo.add %[[P0]], %[[P1]] : tensor<4x12xf32>, tensor<4x12xf32>
// CHECK-NEXT: colo.add %[[QKV]], %{{.*}} : tensor<4x12xf32>, tensor<12xf32>
// CHECK-NEXT: %[[QKV3:.*]] = colo.reshape %{{.*}} : tensor<4x12xf32> -> tensor<1x4x12xf32>
// CHECK-NEXT: colo.slice %[[QKV3]] start = [0, 0, 0] limit = [1, 4, 4] stride = [1, 1, 1] : tensor<1x4x12xf32>
// CHECK-NEXT: colo.slice %[[QKV3]] start = [0, 0, 4] limit = [1, 4, 8] stride = [1, 1, 1] : tensor<1x4x12xf32>
// CHECK-NEXT: colo.slice %[[QKV3]] start = [0, 0, 8] limit = [1, 4, 12] stride = [1, 1, 1] : tensor<1x4x12xf32>
// CHECK: colo.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, {{.*}}} : tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>
// CHECK: %[[WT:.*]] = colo.transpose %[[WTE]] permutation = [1, 0] : tensor<16x4xf32>
// CHECK-NEXT: %[[WTR:.*]] = colo.all_reduce_grad %[[WT]] on @mesh grid_axes = [0] : tensor<4x16xf32>
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
// nn.Linear weights [out, in] are split over ("col", "row") and read
// through their transposes; rotary embedding and the grouped-query
// attention run on the rank's 2 query heads and 1 key/value head; the RMS
// norms sum their squares over "col"; the untied LM head is SUMMA too, and
// its logits stay the rank's block: the row's samples, the column's
// vocabulary.

// CHECK: colo.global trainable @self_attn.q_proj.weight : tensor<8x8xf32> {shard = #colo.shard<split_axes = {{\[}}["col"], ["row"]], parts = [2, 2]>}
// CHECK: colo.global trainable @self_attn.k_proj.weight : tensor<4x8xf32> {shard = #colo.shard<split_axes = {{\[}}["col"], ["row"]], parts = [2, 2]>}
// CHECK: colo.global trainable @lm_head.weight : tensor<16x8xf32> {shard = #colo.shard<split_axes = {{\[}}["col"], ["row"]], parts = [2, 2]>}

// CHECK-LABEL: func.func @forward
// CHECK-SAME: -> tensor<1x4x8xf32> attributes {colo.loss_class_axis = "col", colo.loss_sample_axes = ["row"], colo.tensor_parallel2d = 2 : i64}
// CHECK: %[[WQ:.*]] = colo.global_load @self_attn.q_proj.weight : tensor<4x4xf32>
// CHECK: colo.reduce_sum %{{.*}} dims = [2] {keep_dims} : tensor<1x4x4xf32>
// CHECK: %[[WQT:.*]] = colo.transpose %[[WQ]] permutation = [1, 0] : tensor<4x4xf32>
// CHECK-NEXT: shard.broadcast %{{.*}} on @mesh grid_axes = [1] root = [0] : (tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
// CHECK-NEXT: shard.broadcast %[[WQT]] on @mesh grid_axes = [0] root = [0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: colo.attention %{{.*}} : tensor<1x2x4x2xf32>, tensor<1x1x4x2xf32>, tensor<1x1x4x2xf32>
// CHECK-NOT: shard.all_gather
// CHECK: return %{{.*}} : tensor<1x4x8xf32>

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

// A ViT's embeddings (hidden 8, 4 patches of 2 x 2, batch 2): the patch
// convolution computes the column's output channels (its filters and bias
// split along dimension 0 over "col", their gradients summed over "row");
// the class token, broadcast to the batch, holds the column's features and
// is broadcast to the row's sample; the position embeddings hold the
// column's features.

// CHECK: colo.global trainable @patch.weight : tensor<8x3x2x2xf32> {shard = #colo.shard<split_axes = {{\[}}["col"], [], [], []], parts = [2, 1, 1, 1]>}
// CHECK: colo.global trainable @patch.bias : tensor<8xf32> {shard = #colo.shard<split_axes = {{\[}}["col"]], parts = [2]>}
// CHECK: colo.global trainable @cls_token : tensor<1x1x8xf32> {shard = #colo.shard<split_axes = {{\[}}[], [], ["col"]], parts = [1, 1, 2]>}
// CHECK-LABEL: func.func @forward
// CHECK: %[[PIXELS:.*]] = shard.all_slice %arg0 on @mesh grid_axes = [0] slice_axis = 0 : tensor<2x3x4x4xf32> -> tensor<1x3x4x4xf32>
// CHECK: %[[W:.*]] = colo.global_load @patch.weight : tensor<4x3x2x2xf32>
// CHECK-NEXT: %[[WR:.*]] = colo.all_reduce_grad %[[W]] on @mesh grid_axes = [0] : tensor<4x3x2x2xf32>
// CHECK: %[[CLS:.*]] = colo.global_load @cls_token : tensor<1x1x4xf32>
// CHECK-NEXT: %[[CLSR:.*]] = colo.all_reduce_grad %[[CLS]] on @mesh grid_axes = [0] : tensor<1x1x4xf32>
// CHECK: %[[C:.*]] = colo.conv2d %{{.*}}, %[[WR]] bias %{{.*}} {strides = array<i64: 2, 2>} : tensor<1x3x4x4xf32>, tensor<4x3x2x2xf32>, tensor<4xf32>
// CHECK: %[[CB:.*]] = colo.broadcast_to %[[CLSR]] : tensor<1x1x4xf32> -> tensor<1x1x4xf32>
// CHECK-NEXT: colo.concat %[[CB]], %{{.*}} axis = 1 : tensor<1x1x4xf32>, tensor<1x4x4xf32>

colo.global trainable @patch.weight : tensor<8x3x2x2xf32>
colo.global trainable @patch.bias : tensor<8xf32>
colo.global trainable @cls_token : tensor<1x1x8xf32>
colo.global trainable @position_embeddings : tensor<1x5x8xf32>
func.func @forward(%pixels: tensor<2x3x4x4xf32>) -> tensor<2x5x8xf32> {
  %w = colo.global_load @patch.weight : tensor<8x3x2x2xf32>
  %b = colo.global_load @patch.bias : tensor<8xf32>
  %cls = colo.global_load @cls_token : tensor<1x1x8xf32>
  %pos = colo.global_load @position_embeddings : tensor<1x5x8xf32>
  %c = colo.conv2d %pixels, %w bias %b {strides = array<i64: 2, 2>} : tensor<2x3x4x4xf32>, tensor<8x3x2x2xf32>, tensor<8xf32>
  %r = colo.reshape %c : tensor<2x8x2x2xf32> -> tensor<2x8x4xf32>
  %t = colo.transpose %r permutation = [0, 2, 1] : tensor<2x8x4xf32>
  %cb = colo.broadcast_to %cls : tensor<1x1x8xf32> -> tensor<2x1x8xf32>
  %x = colo.concat %cb, %t axis = 1 : tensor<2x1x8xf32>, tensor<2x4x8xf32>
  %y = colo.add %x, %pos : tensor<2x5x8xf32>, tensor<1x5x8xf32>
  return %y : tensor<2x5x8xf32>
}
