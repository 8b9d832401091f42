// RUN: colo-opt %s -split-input-file --colo-ulysses=sp=2 | FileCheck %s
// RUN: colo-opt %s -split-input-file --colo-ulysses=sp=2 --colo-build-train-step="loss=lm" \
// RUN:   --canonicalize | FileCheck %s --check-prefix=STEP
// RUN: colo-opt %s -split-input-file --colo-ulysses=sp=1 | FileCheck %s --check-prefix=ONE
// RUN: colo-opt %s -split-input-file --colo-ulysses=sp=2 --mlir-print-debuginfo \
// RUN:   | FileCheck %s --check-prefix=LOC

// A GPT-2-like block with grouped-query attention (batch 2, sequence 4,
// hidden 8, 4 query heads, 2 key/value heads). Each rank cuts its 2
// positions of the ids (transposed so that the cut is outermost, as the
// runtime needs); the position embeddings are cut to the rank's positions;
// the norm, the projections and the residual add run on the rank's tokens
// (through [b*s, h] reshapes). q, k and v go from sequence blocks to head
// blocks by an all-to-all each, between a reshape and transposes that put
// the sp blocks outermost; attention sees whole sequences and the rank's
// heads; its output goes back by a fourth all-to-all. The LM head reads the
// gathered sequence. Weights, the norm's scale and the token embedding
// table, which the split ops read whole, get colo.all_reduce_grad; the
// position table (read by the replicated embedding) and the LM head's
// transposed table do not.

// CHECK: shard.grid @mesh(shape = 2) {colo.axes = ["sp"]}
// CHECK-LABEL: func.func @forward
// CHECK-SAME: attributes {colo.ulysses = 2 : i64}
// CHECK: %[[IT:.*]] = colo.transpose %arg0 permutation = [1, 0] : tensor<2x4xi64>
// CHECK-NEXT: %[[IS:.*]] = shard.all_slice %[[IT]] on @mesh grid_axes = [0] slice_axis = 0 : tensor<4x2xi64> -> tensor<2x2xi64>
// CHECK-NEXT: %[[IDS:.*]] = colo.transpose %[[IS]] permutation = [1, 0] : tensor<2x2xi64>
// CHECK-DAG: %[[WTE:.*]] = colo.global_load @wte
// CHECK-DAG: %[[WTER:.*]] = colo.all_reduce_grad %[[WTE]] on @mesh grid_axes = [0] : tensor<16x8xf32>
// CHECK-DAG: %[[WPE:.*]] = colo.global_load @wpe
// CHECK-DAG: %[[G:.*]] = colo.all_reduce_grad %{{.*}} on @mesh grid_axes = [0] : tensor<8xf32>
// CHECK-DAG: %[[WQ:.*]] = colo.all_reduce_grad %{{.*}} on @mesh grid_axes = [0] : tensor<8x8xf32>
// CHECK-NOT: colo.all_reduce_grad %[[WPE]]
// CHECK: %[[TE:.*]] = colo.embedding %[[WTER]], %[[IDS]] : tensor<16x8xf32>, tensor<2x2xi64>
// CHECK-NEXT: %[[PE:.*]] = colo.embedding %[[WPE]], %{{.*}} : tensor<4x8xf32>, tensor<1x4xi64>
// CHECK-NEXT: %[[PES:.*]] = shard.all_slice %[[PE]] on @mesh grid_axes = [0] slice_axis = 1 : tensor<1x4x8xf32> -> tensor<1x2x8xf32>
// CHECK-NEXT: %[[X:.*]] = colo.add %[[TE]], %[[PES]] : tensor<2x2x8xf32>, tensor<1x2x8xf32>
// CHECK-NEXT: %[[N:.*]] = colo.rms_norm %[[X]] scale %[[G]] : tensor<8xf32> {{.*}} : tensor<2x2x8xf32>
// CHECK-NEXT: %[[N2:.*]] = colo.reshape %[[N]] : tensor<2x2x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: colo.matmul %[[N2]], %[[WQ]] : tensor<4x8xf32>, tensor<8x8xf32>
// CHECK: %[[Q:.*]] = colo.transpose %{{.*}} permutation = [0, 2, 1, 3] : tensor<2x2x4x2xf32>
// CHECK: %[[K:.*]] = colo.slice %{{.*}} start = [0, 0, 0, 0] limit = [2, 2, 2, 2] stride = [1, 1, 1, 1] : tensor<2x4x2x2xf32>
// CHECK-NEXT: %[[V:.*]] = colo.slice %{{.*}} start = [0, 2, 0, 0] limit = [2, 4, 2, 2] stride = [1, 1, 1, 1] : tensor<2x4x2x2xf32>
// CHECK-NEXT: %[[Q5:.*]] = colo.reshape %[[Q]] : tensor<2x4x2x2xf32> -> tensor<2x2x2x2x2xf32>
// CHECK-NEXT: %[[QT:.*]] = colo.transpose %[[Q5]] permutation = [1, 0, 2, 3, 4] : tensor<2x2x2x2x2xf32>
// CHECK-NEXT: %[[QA:.*]] = shard.all_to_all %[[QT]] on @mesh grid_axes = [0] split_axis = 0 concat_axis = 0 : tensor<2x2x2x2x2xf32> -> tensor<2x2x2x2x2xf32>
// CHECK-NEXT: %[[QH:.*]] = colo.transpose %[[QA]] permutation = [1, 2, 0, 3, 4] : tensor<2x2x2x2x2xf32>
// CHECK-NEXT: %[[QS:.*]] = colo.reshape %[[QH]] : tensor<2x2x2x2x2xf32> -> tensor<2x2x4x2xf32>
// CHECK-NEXT: colo.reshape %[[K]] : tensor<2x2x2x2xf32> -> tensor<2x2x1x2x2xf32>
// CHECK-NEXT: colo.transpose
// CHECK-NEXT: shard.all_to_all {{.*}} : tensor<2x2x1x2x2xf32> -> tensor<2x2x1x2x2xf32>
// CHECK-NEXT: colo.transpose
// CHECK-NEXT: %[[KS:.*]] = colo.reshape %{{.*}} : tensor<2x1x2x2x2xf32> -> tensor<2x1x4x2xf32>
// CHECK-NEXT: colo.reshape %[[V]] : tensor<2x2x2x2xf32> -> tensor<2x2x1x2x2xf32>
// CHECK-NEXT: colo.transpose
// CHECK-NEXT: shard.all_to_all {{.*}} : tensor<2x2x1x2x2xf32> -> tensor<2x2x1x2x2xf32>
// CHECK-NEXT: colo.transpose
// CHECK-NEXT: %[[VS:.*]] = colo.reshape %{{.*}} : tensor<2x1x2x2x2xf32> -> tensor<2x1x4x2xf32>
// CHECK-NEXT: %[[A:.*]] = colo.attention %[[QS]], %[[KS]], %[[VS]] {causal, scale = 5.000000e-01 : f64} : tensor<2x2x4x2xf32>, tensor<2x1x4x2xf32>, tensor<2x1x4x2xf32>
// CHECK-NEXT: %[[A5:.*]] = colo.reshape %[[A]] : tensor<2x2x4x2xf32> -> tensor<2x2x2x2x2xf32>
// CHECK-NEXT: %[[AT:.*]] = colo.transpose %[[A5]] permutation = [2, 0, 1, 3, 4] : tensor<2x2x2x2x2xf32>
// CHECK-NEXT: %[[AA:.*]] = shard.all_to_all %[[AT]] on @mesh grid_axes = [0] split_axis = 0 concat_axis = 0 : tensor<2x2x2x2x2xf32> -> tensor<2x2x2x2x2xf32>
// CHECK-NEXT: %[[AB:.*]] = colo.transpose %[[AA]] permutation = [1, 0, 2, 3, 4] : tensor<2x2x2x2x2xf32>
// CHECK-NEXT: %[[AS:.*]] = colo.reshape %[[AB]] : tensor<2x2x2x2x2xf32> -> tensor<2x4x2x2xf32>
// CHECK-NEXT: colo.transpose %[[AS]] permutation = [0, 2, 1, 3] : tensor<2x4x2x2xf32>
// CHECK: %[[R:.*]] = colo.add %[[X]], %{{.*}} : tensor<2x2x8xf32>, tensor<2x2x8xf32>
// CHECK-NEXT: %[[RT:.*]] = colo.transpose %[[R]] permutation = [1, 0, 2] : tensor<2x2x8xf32>
// CHECK-NEXT: %[[RG:.*]] = shard.all_gather %[[RT]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x2x8xf32> -> tensor<4x2x8xf32>
// CHECK-NEXT: %[[RW:.*]] = colo.transpose %[[RG]] permutation = [1, 0, 2] : tensor<4x2x8xf32>
// CHECK-NEXT: %[[HEAD:.*]] = colo.transpose %[[WTE]] permutation = [1, 0] : tensor<16x8xf32>
// CHECK-NEXT: %[[LOGITS:.*]] = colo.matmul %[[RW]], %[[HEAD]] : tensor<2x4x8xf32>, tensor<8x16xf32>
// CHECK-NEXT: return %[[LOGITS]] : tensor<2x4x16xf32>

// The step: 4 all-to-alls forward and, from their gradient rule (the
// all-to-all with split and concat axes swapped), 4 backward; the LM head's
// gather gives the rank's slice of its gradient (a local all_slice), the
// position embeddings' slice all-gathers theirs, and the 5 parameters the
// split tokens read have their gradients summed over sp. colo.all_reduce_grad
// is gone.

// STEP-LABEL: func.func @train_step
// STEP-COUNT-4: shard.all_to_all
// STEP: shard.all_gather {{.*}} gather_axis = 0 : tensor<2x2x8xf32> -> tensor<4x2x8xf32>
// STEP: shard.all_slice {{.*}} slice_axis = 0 : tensor<4x2x8xf32> -> tensor<2x2x8xf32>
// STEP-COUNT-4: shard.all_to_all
// STEP-NOT: shard.all_to_all
// STEP: shard.all_gather {{.*}} gather_axis = 1 : tensor<1x2x8xf32> -> tensor<1x4x8xf32>
// STEP-COUNT-5: shard.all_reduce {{.*}} on @mesh grid_axes = [0] : tensor<{{.*}}> -> tensor<{{.*}}>
// STEP-NOT: shard.all_reduce
// STEP-NOT: colo.all_reduce_grad
// STEP: return

// ONE-NOT: shard.
// ONE-NOT: colo.ulysses

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

// -----

// Llama's rotary tables are constants over the positions ([1, 1, s, d]):
// they are cut to the rank's positions where they meet q and k. A reduction
// over the sequence mixes positions: it reads the gathered values, and its
// replicated result, added back to the rank's tokens, gets its gradient
// summed over sp like a weight.

// CHECK-LABEL: func.func @forward
// CHECK: %[[COS:.*]] = colo.constant {{.*}} : tensor<1x1x4x2xf32>
// CHECK-NEXT: %[[COSS:.*]] = shard.all_slice %[[COS]] on @mesh grid_axes = [0] slice_axis = 2 : tensor<1x1x4x2xf32> -> tensor<1x1x2x2xf32>
// CHECK: colo.mul %{{.*}}, %[[COSS]] : tensor<2x2x2x2xf32>, tensor<1x1x2x2xf32>
// CHECK: colo.attention {{.*}} : tensor<2x1x4x2xf32>, tensor<2x1x4x2xf32>, tensor<2x1x4x2xf32>
// CHECK: %[[A:.*]] = colo.reshape %{{.*}} : tensor<2x2x2x2xf32> -> tensor<2x2x4xf32>
// CHECK-NEXT: %[[AT:.*]] = colo.transpose %[[A]] permutation = [1, 0, 2] : tensor<2x2x4xf32>
// CHECK-NEXT: %[[G:.*]] = shard.all_gather %[[AT]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<2x2x4xf32> -> tensor<4x2x4xf32>
// CHECK-NEXT: %[[W:.*]] = colo.transpose %[[G]] permutation = [1, 0, 2] : tensor<4x2x4xf32>
// CHECK-NEXT: %[[M:.*]] = colo.reduce_mean %[[W]] dims = [1] {keep_dims} : tensor<2x4x4xf32>
// CHECK-NEXT: %[[MR:.*]] = colo.all_reduce_grad %[[M]] on @mesh grid_axes = [0] : tensor<2x1x4xf32>
// CHECK-NEXT: colo.add %[[A]], %[[MR]] : tensor<2x2x4xf32>, tensor<2x1x4xf32>
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<2x4x8xf32> {
  %table = colo.global_load @table : tensor<8x4xf32>
  %head = colo.global_load @head : tensor<4x8xf32>
  %cos = colo.constant dense<0.5> : tensor<1x1x4x2xf32>
  %x = colo.embedding %table, %ids : tensor<8x4xf32>, tensor<2x4xi64>
  %x4 = colo.reshape %x : tensor<2x4x4xf32> -> tensor<2x4x2x2xf32>
  %q = colo.transpose %x4 permutation = [0, 2, 1, 3] : tensor<2x4x2x2xf32>
  %r = colo.mul %q, %cos : tensor<2x2x4x2xf32>, tensor<1x1x4x2xf32>
  %a = colo.attention %r, %r, %q {causal, scale = 0.5 : f64} : tensor<2x2x4x2xf32>, tensor<2x2x4x2xf32>, tensor<2x2x4x2xf32>
  %at = colo.transpose %a permutation = [0, 2, 1, 3] : tensor<2x2x4x2xf32>
  %a3 = colo.reshape %at : tensor<2x4x2x2xf32> -> tensor<2x4x4xf32>
  %m = colo.reduce_mean %a3 dims = [1] {keep_dims} : tensor<2x4x4xf32>
  %y = colo.add %a3, %m : tensor<2x4x4xf32>, tensor<2x1x4xf32>
  %logits = colo.matmul %y, %head : tensor<2x4x4xf32>, tensor<4x8xf32>
  return %logits : tensor<2x4x8xf32>
}
colo.global trainable @table : tensor<8x4xf32>
colo.global trainable @head : tensor<4x8xf32>

// -----

// A table the layers share, loaded where the first layer reads it (Llama's
// rotary cos from a buffer): its cut is named after the table, part of no
// layer, so that the layers keep the same ops (colo-recompute and the
// planner find the layers by that).

// LOC: colo.global_load @cos
// LOC-NEXT: shard.all_slice {{.*}} -> tensor<1x1x2x2xf32> loc([[CUT:#loc[0-9]*]])
// LOC: [[CUT]] = loc("cos/all_slice")
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<2x4x8xf32> {
  %table = colo.global_load @table : tensor<8x4xf32>
  %head = colo.global_load @head : tensor<4x8xf32>
  %x = colo.embedding %table, %ids : tensor<8x4xf32>, tensor<2x4xi64>
  %x4 = colo.reshape %x : tensor<2x4x4xf32> -> tensor<2x4x2x2xf32>
  %q = colo.transpose %x4 permutation = [0, 2, 1, 3] : tensor<2x4x2x2xf32>
  %cos = colo.global_load @cos : tensor<1x1x4x2xf32> loc("h.0.attn/global_load")
  %r = colo.mul %q, %cos : tensor<2x2x4x2xf32>, tensor<1x1x4x2xf32> loc("h.0.attn/mul")
  %a = colo.attention %r, %r, %q {causal, scale = 0.5 : f64} : tensor<2x2x4x2xf32>, tensor<2x2x4x2xf32>, tensor<2x2x4x2xf32>
  %at = colo.transpose %a permutation = [0, 2, 1, 3] : tensor<2x2x4x2xf32>
  %a3 = colo.reshape %at : tensor<2x4x2x2xf32> -> tensor<2x4x4xf32>
  %logits = colo.matmul %a3, %head : tensor<2x4x4xf32>, tensor<4x8xf32>
  return %logits : tensor<2x4x8xf32>
}
colo.global trainable @table : tensor<8x4xf32>
colo.global trainable @head : tensor<4x8xf32>
colo.global @cos : tensor<1x1x4x2xf32>
