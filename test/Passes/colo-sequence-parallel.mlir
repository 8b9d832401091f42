// RUN: colo-opt %s -split-input-file --colo-tensor-parallel=tp=2 \
// RUN:   --colo-sequence-parallel=tp=2 | FileCheck %s
// RUN: colo-opt %s -split-input-file --colo-tensor-parallel=tp=2 \
// RUN:   --colo-sequence-parallel=tp=2 --colo-build-train-step="loss=lm" --canonicalize \
// RUN:   | FileCheck %s --check-prefix=STEP

// The GPT-2 block of colo-tensor-parallel.mlir (batch 2, sequence 4, hidden
// 8): the tokens are split along their first dimension larger than 1, here
// the batch. The embeddings are sliced where they reach the first norm and
// the residual add; the norms, the biases after the row-parallel sums and
// the residual adds run on the rank's tokens; each column-parallel input is
// gathered under its colo.all_reduce_grad; each row-parallel all-reduce is a
// reduce-scatter; the LM head, which is replicated, reads all tokens.
// Parameters read by the split ops (norm scales and biases, biases) get
// colo.all_reduce_grad: each rank's tokens give part of their gradient.

// CHECK-LABEL: func.func @forward
// CHECK-SAME: attributes {colo.sequence_parallel = 2 : i64, colo.tensor_parallel = 2 : i64}
// CHECK-DAG: %[[LN1W:.*]] = colo.global_load @ln_1.weight : tensor<8xf32>
// CHECK-DAG: %[[LN1WR:.*]] = colo.all_reduce_grad %[[LN1W]] on @mesh grid_axes = [0] : tensor<8xf32>
// CHECK-DAG: %[[BO:.*]] = colo.global_load @attn.c_proj.bias : tensor<8xf32>
// CHECK-DAG: %[[BOR:.*]] = colo.all_reduce_grad %[[BO]] on @mesh grid_axes = [0] : tensor<8xf32>
// CHECK-DAG: %[[WQKV:.*]] = colo.global_load @attn.c_attn.weight : tensor<8x12xf32>
// CHECK-NOT: colo.all_reduce_grad %[[WQKV]]
// CHECK: %[[X:.*]] = colo.embedding %{{.*}}, %arg0 : tensor<16x8xf32>, tensor<2x4xi64>
// CHECK-NEXT: %[[XS:.*]] = shard.all_slice %[[X]] on @mesh grid_axes = [0] slice_axis = 0 : tensor<2x4x8xf32> -> tensor<1x4x8xf32>
// CHECK-NEXT: %[[H:.*]] = colo.layer_norm %[[XS]] scale %[[LN1WR]] : tensor<8xf32> bias %{{.*}} : tensor<8xf32> {{.*}} : tensor<1x4x8xf32>
// CHECK-NEXT: %[[H2:.*]] = colo.reshape %[[H]] : tensor<1x4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[HG:.*]] = shard.all_gather %[[H2]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[HR:.*]] = colo.all_reduce_grad %[[HG]] on @mesh grid_axes = [0] : tensor<8x8xf32>
// CHECK-NEXT: colo.matmul %[[HR]], %[[WQKV]] : tensor<8x8xf32>, tensor<8x12xf32>
// CHECK: colo.attention %{{.*}} : tensor<2x2x4x2xf32>, tensor<2x2x4x2xf32>, tensor<2x2x4x2xf32>
// CHECK: %[[A:.*]] = colo.matmul %{{.*}}, %{{.*}} : tensor<8x4xf32>, tensor<4x8xf32>
// CHECK-NEXT: %[[AS:.*]] = shard.reduce_scatter %[[A]] on @mesh grid_axes = [0] scatter_axis = 0 : tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[AB:.*]] = colo.add %[[AS]], %[[BOR]] : tensor<4x8xf32>, tensor<8xf32>
// CHECK-NEXT: %[[A3:.*]] = colo.reshape %[[AB]] : tensor<4x8xf32> -> tensor<1x4x8xf32>
// CHECK-NEXT: %[[R1:.*]] = colo.add %[[A3]], %[[XS]] : tensor<1x4x8xf32>, tensor<1x4x8xf32>
// CHECK-NEXT: %[[M:.*]] = colo.layer_norm %[[R1]] {{.*}} : tensor<1x4x8xf32>
// CHECK-NEXT: %[[M2:.*]] = colo.reshape %[[M]] : tensor<1x4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[MG:.*]] = shard.all_gather %[[M2]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: colo.all_reduce_grad %[[MG]] on @mesh grid_axes = [0] : tensor<8x8xf32>
// CHECK: colo.gelu %{{.*}} approximation = tanh : tensor<2x4x16xf32>
// CHECK: %[[P:.*]] = colo.matmul %{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16x8xf32>
// CHECK-NEXT: shard.reduce_scatter %[[P]] on @mesh grid_axes = [0] scatter_axis = 0 : tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK: %[[R2:.*]] = colo.add %[[R1]], %{{.*}} : tensor<1x4x8xf32>, tensor<1x4x8xf32>
// CHECK-NEXT: %[[R2G:.*]] = shard.all_gather %[[R2]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<1x4x8xf32> -> tensor<2x4x8xf32>
// CHECK: %[[LOGITS:.*]] = colo.matmul %[[R2G]], %{{.*}} : tensor<2x4x8xf32>, tensor<8x16xf32>
// CHECK-NEXT: return %[[LOGITS]] : tensor<2x4x16xf32>
// CHECK-NOT: shard.all_reduce

// The backward: the LM head's gather gives the rank's block of its
// gradient (a local slice), each row-parallel reduce-scatter all-gathers
// its gradient, each gathered column-parallel input reduce-scatters the sum
// of the ranks' partial gradients, and the embeddings' slice all-gathers
// its gradient. The 6 parameters the split ops read get their gradients
// all-reduced; no activation is all-reduced. colo.all_reduce_grad is gone.

// STEP-LABEL: func.func @train_step
// STEP-COUNT-2: shard.reduce_scatter {{.*}} : tensor<8x8xf32> -> tensor<4x8xf32>
// STEP: shard.all_gather {{.*}} : tensor<1x4x8xf32> -> tensor<2x4x8xf32>
// STEP: colo.cross_entropy_backward
// STEP: shard.all_slice {{.*}} slice_axis = 0 : tensor<2x4x8xf32> -> tensor<1x4x8xf32>
// STEP: shard.all_gather {{.*}} gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// STEP: shard.reduce_scatter {{.*}} scatter_axis = 0 : tensor<8x8xf32> -> tensor<4x8xf32>
// STEP: shard.all_gather {{.*}} gather_axis = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// STEP: shard.reduce_scatter {{.*}} scatter_axis = 0 : tensor<8x8xf32> -> tensor<4x8xf32>
// STEP: shard.all_gather {{.*}} gather_axis = 0 : tensor<1x4x8xf32> -> tensor<2x4x8xf32>
// STEP-COUNT-6: shard.all_reduce {{.*}} : tensor<8xf32> -> tensor<8xf32>
// STEP-NOT: shard.
// STEP-NOT: colo.all_reduce_grad
// STEP: return

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

// The Llama block of colo-tensor-parallel.mlir with batch 1: the tokens are
// split along the sequence (dimension 1), as Megatron splits them. RMSNorm
// has no bias; the final norm runs on the rank's tokens too.

// CHECK-LABEL: func.func @forward
// CHECK-DAG: %[[N1:.*]] = colo.global_load @input_layernorm.weight : tensor<8xf32>
// CHECK-DAG: %[[N1R:.*]] = colo.all_reduce_grad %[[N1]] on @mesh grid_axes = [0] : tensor<8xf32>
// CHECK-DAG: %[[NF:.*]] = colo.global_load @norm.weight : tensor<8xf32>
// CHECK-DAG: %[[NFR:.*]] = colo.all_reduce_grad %[[NF]] on @mesh grid_axes = [0] : tensor<8xf32>
// CHECK: %[[X:.*]] = colo.embedding %{{.*}}, %arg0 : tensor<16x8xf32>, tensor<1x4xi64>
// CHECK-NEXT: %[[XS:.*]] = shard.all_slice %[[X]] on @mesh grid_axes = [0] slice_axis = 1 : tensor<1x4x8xf32> -> tensor<1x2x8xf32>
// CHECK-NEXT: %[[H:.*]] = colo.rms_norm %[[XS]] scale %[[N1R]] : tensor<8xf32> {{.*}} : tensor<1x2x8xf32>
// CHECK-NEXT: %[[HG:.*]] = shard.all_gather %[[H]] on @mesh grid_axes = [0] gather_axis = 1 : tensor<1x2x8xf32> -> tensor<1x4x8xf32>
// CHECK-NEXT: colo.all_reduce_grad %[[HG]] on @mesh grid_axes = [0] : tensor<1x4x8xf32>
// CHECK: %[[A:.*]] = colo.matmul %{{.*}}, %{{.*}} : tensor<1x4x4xf32>, tensor<4x8xf32>
// CHECK-NEXT: %[[AS:.*]] = shard.reduce_scatter %[[A]] on @mesh grid_axes = [0] scatter_axis = 1 : tensor<1x4x8xf32> -> tensor<1x2x8xf32>
// CHECK-NEXT: %[[R1:.*]] = colo.add %[[XS]], %[[AS]] : tensor<1x2x8xf32>, tensor<1x2x8xf32>
// CHECK-NEXT: %[[M:.*]] = colo.rms_norm %[[R1]] {{.*}} : tensor<1x2x8xf32>
// CHECK-NEXT: shard.all_gather %[[M]] on @mesh grid_axes = [0] gather_axis = 1 : tensor<1x2x8xf32> -> tensor<1x4x8xf32>
// CHECK: colo.mul %{{.*}}, %{{.*}} : tensor<1x4x8xf32>, tensor<1x4x8xf32>
// CHECK: %[[D:.*]] = colo.matmul %{{.*}}, %{{.*}} : tensor<1x4x8xf32>, tensor<8x8xf32>
// CHECK-NEXT: %[[DS:.*]] = shard.reduce_scatter %[[D]] on @mesh grid_axes = [0] scatter_axis = 1 : tensor<1x4x8xf32> -> tensor<1x2x8xf32>
// CHECK-NEXT: %[[R2:.*]] = colo.add %[[R1]], %[[DS]] : tensor<1x2x8xf32>, tensor<1x2x8xf32>
// CHECK-NEXT: %[[F:.*]] = colo.rms_norm %[[R2]] scale %[[NFR]] : tensor<8xf32> {{.*}} : tensor<1x2x8xf32>
// CHECK-NEXT: %[[FG:.*]] = shard.all_gather %[[F]] on @mesh grid_axes = [0] gather_axis = 1 : tensor<1x2x8xf32> -> tensor<1x4x8xf32>
// CHECK: colo.matmul %[[FG]], %{{.*}} : tensor<1x4x8xf32>, tensor<8x16xf32>

// STEP-LABEL: func.func @train_step
// STEP-COUNT-3: shard.all_reduce {{.*}} : tensor<8xf32> -> tensor<8xf32>
// STEP-NOT: shard.all_reduce

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
func.func @forward(%ids: tensor<1x4xi64>) -> tensor<1x4x16xf32> {
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
  %x = colo.embedding %emb, %ids : tensor<16x8xf32>, tensor<1x4xi64>
  %h = colo.rms_norm %x scale %n1w : tensor<8xf32> {axis = 2 : i64, epsilon = 1.0e-06 : f64} : tensor<1x4x8xf32>
  %wqt = colo.transpose %wq permutation = [1, 0] : tensor<8x8xf32>
  %q = colo.matmul %h, %wqt : tensor<1x4x8xf32>, tensor<8x8xf32>
  %q4 = colo.reshape %q : tensor<1x4x8xf32> -> tensor<1x4x4x2xf32>
  %qt = colo.transpose %q4 permutation = [0, 2, 1, 3] : tensor<1x4x4x2xf32>
  %wkt = colo.transpose %wk permutation = [1, 0] : tensor<4x8xf32>
  %k = colo.matmul %h, %wkt : tensor<1x4x8xf32>, tensor<8x4xf32>
  %k4 = colo.reshape %k : tensor<1x4x4xf32> -> tensor<1x4x2x2xf32>
  %kt = colo.transpose %k4 permutation = [0, 2, 1, 3] : tensor<1x4x2x2xf32>
  %wvt = colo.transpose %wv permutation = [1, 0] : tensor<4x8xf32>
  %v = colo.matmul %h, %wvt : tensor<1x4x8xf32>, tensor<8x4xf32>
  %v4 = colo.reshape %v : tensor<1x4x4xf32> -> tensor<1x4x2x2xf32>
  %vt = colo.transpose %v4 permutation = [0, 2, 1, 3] : tensor<1x4x2x2xf32>
  %qc = colo.mul %qt, %cos : tensor<1x4x4x2xf32>, tensor<1x1x4x2xf32>
  %q1 = colo.slice %qt start = [0, 0, 0, 0] limit = [1, 4, 4, 1] stride = [1, 1, 1, 1] : tensor<1x4x4x2xf32>
  %q2 = colo.slice %qt start = [0, 0, 0, 1] limit = [1, 4, 4, 2] stride = [1, 1, 1, 1] : tensor<1x4x4x2xf32>
  %q2n = colo.neg %q2 : tensor<1x4x4x1xf32>
  %qr = colo.concat %q2n, %q1 axis = -1 : tensor<1x4x4x1xf32>, tensor<1x4x4x1xf32>
  %qs = colo.mul %qr, %sin : tensor<1x4x4x2xf32>, tensor<1x1x4x2xf32>
  %qe = colo.add %qc, %qs : tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>
  %kc = colo.mul %kt, %cos : tensor<1x2x4x2xf32>, tensor<1x1x4x2xf32>
  %k1 = colo.slice %kt start = [0, 0, 0, 0] limit = [1, 2, 4, 1] stride = [1, 1, 1, 1] : tensor<1x2x4x2xf32>
  %k2 = colo.slice %kt start = [0, 0, 0, 1] limit = [1, 2, 4, 2] stride = [1, 1, 1, 1] : tensor<1x2x4x2xf32>
  %k2n = colo.neg %k2 : tensor<1x2x4x1xf32>
  %kr = colo.concat %k2n, %k1 axis = -1 : tensor<1x2x4x1xf32>, tensor<1x2x4x1xf32>
  %ks = colo.mul %kr, %sin : tensor<1x2x4x2xf32>, tensor<1x1x4x2xf32>
  %ke = colo.add %kc, %ks : tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>
  %o = colo.attention %qe, %ke, %vt {causal, scale = 0.70710678118654746 : f64} : tensor<1x4x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>
  %ot = colo.transpose %o permutation = [0, 2, 1, 3] : tensor<1x4x4x2xf32>
  %o3 = colo.reshape %ot : tensor<1x4x4x2xf32> -> tensor<1x4x8xf32>
  %wot = colo.transpose %wo permutation = [1, 0] : tensor<8x8xf32>
  %a = colo.matmul %o3, %wot : tensor<1x4x8xf32>, tensor<8x8xf32>
  %r1 = colo.add %x, %a : tensor<1x4x8xf32>, tensor<1x4x8xf32>
  %m = colo.rms_norm %r1 scale %n2w : tensor<8xf32> {axis = 2 : i64, epsilon = 1.0e-06 : f64} : tensor<1x4x8xf32>
  %wgt = colo.transpose %wg permutation = [1, 0] : tensor<16x8xf32>
  %gate = colo.matmul %m, %wgt : tensor<1x4x8xf32>, tensor<8x16xf32>
  %act = colo.silu %gate : tensor<1x4x16xf32>
  %wut = colo.transpose %wu permutation = [1, 0] : tensor<16x8xf32>
  %up = colo.matmul %m, %wut : tensor<1x4x8xf32>, tensor<8x16xf32>
  %prod = colo.mul %act, %up : tensor<1x4x16xf32>, tensor<1x4x16xf32>
  %wdt = colo.transpose %wd permutation = [1, 0] : tensor<8x16xf32>
  %down = colo.matmul %prod, %wdt : tensor<1x4x16xf32>, tensor<16x8xf32>
  %r2 = colo.add %r1, %down : tensor<1x4x8xf32>, tensor<1x4x8xf32>
  %f = colo.rms_norm %r2 scale %nw : tensor<8xf32> {axis = 2 : i64, epsilon = 1.0e-06 : f64} : tensor<1x4x8xf32>
  %wlmt = colo.transpose %wlm permutation = [1, 0] : tensor<16x8xf32>
  %logits = colo.matmul %f, %wlmt : tensor<1x4x8xf32>, tensor<8x16xf32>
  return %logits : tensor<1x4x16xf32>
}

// -----

// A value that reaches the result from a sequence-parallel region is
// gathered. A replicated operand that broadcasts over the tokens has its
// gradient summed whether it is a parameter's load or computed from one;
// a constant is read as it is.

// CHECK-LABEL: func.func @forward
// CHECK-DAG: %[[XS:.*]] = shard.all_slice %arg1 on @mesh grid_axes = [0] slice_axis = 0 : tensor<2x4x8xf32> -> tensor<1x4x8xf32>
// CHECK-DAG: %[[S:.*]] = colo.exp %{{.*}} : tensor<1x1x8xf32>
// CHECK-DAG: %[[SR:.*]] = colo.all_reduce_grad %[[S]] on @mesh grid_axes = [0] : tensor<1x1x8xf32>
// CHECK: %[[N:.*]] = colo.layer_norm %[[XS]] {{.*}} : tensor<1x4x8xf32>
// CHECK-NEXT: %[[NG:.*]] = shard.all_gather %[[N]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<1x4x8xf32> -> tensor<2x4x8xf32>
// CHECK: %[[Y:.*]] = shard.reduce_scatter %{{.*}} on @mesh grid_axes = [0] scatter_axis = 0 : tensor<2x4x8xf32> -> tensor<1x4x8xf32>
// CHECK-NEXT: %[[Z:.*]] = colo.mul %[[Y]], %[[SR]] : tensor<1x4x8xf32>, tensor<1x1x8xf32>
// CHECK-NEXT: %[[C:.*]] = colo.add %[[Z]], %{{.*}} : tensor<1x4x8xf32>, tensor<f32>
// CHECK-NEXT: %[[CG:.*]] = shard.all_gather %[[C]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<1x4x8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT: return %[[CG]] : tensor<2x4x8xf32>

// STEP-LABEL: func.func @train_step
// STEP: shard.all_reduce {{.*}} : tensor<1x1x8xf32> -> tensor<1x1x8xf32>
// STEP-NOT: shard.all_reduce
colo.global trainable @w1 : tensor<8x16xf32>
colo.global trainable @w2 : tensor<16x8xf32>
colo.global trainable @s : tensor<1x1x8xf32>
func.func @forward(%ids: tensor<2x4xi64>, %x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %one = colo.constant dense<1.0> : tensor<f32>
  %sw = colo.global_load @s : tensor<1x1x8xf32>
  %s = colo.exp %sw : tensor<1x1x8xf32>
  %w1 = colo.global_load @w1 : tensor<8x16xf32>
  %w2 = colo.global_load @w2 : tensor<16x8xf32>
  %n = colo.layer_norm %x {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<2x4x8xf32>
  %h = colo.matmul %n, %w1 : tensor<2x4x8xf32>, tensor<8x16xf32>
  %a = colo.gelu %h approximation = tanh : tensor<2x4x16xf32>
  %y = colo.matmul %a, %w2 : tensor<2x4x16xf32>, tensor<16x8xf32>
  %z = colo.mul %y, %s : tensor<2x4x8xf32>, tensor<1x1x8xf32>
  %c = colo.add %z, %one : tensor<2x4x8xf32>, tensor<f32>
  return %c : tensor<2x4x8xf32>
}
