// RUN: colo-opt %s -split-input-file --colo-vocab-parallel=tp=2 | FileCheck %s
// RUN: colo-opt %s -split-input-file --colo-vocab-parallel=tp=2 \
// RUN:   --colo-build-train-step="loss=lm" --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=STEP
// RUN: colo-opt %s -split-input-file --colo-vocab-parallel=tp=2 \
// RUN:   --colo-build-train-step="loss=lm label-smoothing=0.1" --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=SMOOTH
// RUN: colo-opt %s -split-input-file --colo-vocab-parallel=tp=2 \
// RUN:   --colo-build-train-step="loss=cross-entropy" --canonicalize --cse \
// RUN:   | FileCheck %s --check-prefix=CE

// GPT-2's tied word embedding (vocabulary 16, hidden 8) split over 2 ranks:
// one [8, 8] block of @wte serves the rank's lookups and its block of the
// logits. Rank r owns ids [8r, 8r + 8): it looks up ids - 8r clamped to its
// rows, zeroes the others, and the partial embeddings are summed. The
// position embedding (constant ids) stays whole; the LM head's input goes
// through colo.all_reduce_grad; the function returns the rank's block.

// CHECK-LABEL: colo.global trainable @wte : tensor<16x8xf32> {shard = #colo.shard<split_axes = {{\[}}["tp"], []], parts = [2, 1]>}
// CHECK-NEXT: colo.global trainable @wpe : tensor<4x8xf32>{{$}}
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[IDS:.*]]: tensor<2x4xi64> {colo.int_max = 16 : i64}) -> tensor<2x4x8xf32> attributes {colo.vocab_parallel = 2 : i64}
// CHECK: %[[STARTS:.*]] = colo.constant dense<[0, 8]> : tensor<2xi64>
// CHECK-NEXT: %[[MINE:.*]] = shard.all_slice %[[STARTS]] on @mesh grid_axes = [0] slice_axis = 0 : tensor<2xi64> -> tensor<1xi64>
// CHECK-NEXT: %[[START:.*]] = colo.reshape %[[MINE]] : tensor<1xi64> -> tensor<i64>
// CHECK: %[[WTE:.*]] = colo.global_load @wte : tensor<8x8xf32>
// CHECK: %[[LOCAL:.*]] = colo.sub %[[IDS]], %[[START]] : tensor<2x4xi64>, tensor<i64>
// CHECK: %[[LO:.*]] = colo.maximum %[[LOCAL]], %{{.*}} : tensor<2x4xi64>, tensor<i64>
// CHECK: %[[ROW:.*]] = colo.minimum %[[LO]], %{{.*}} : tensor<2x4xi64>, tensor<i64>
// CHECK-NEXT: %[[OWN:.*]] = colo.compare eq, %[[ROW]], %[[LOCAL]] : tensor<2x4xi64>, tensor<2x4xi64>
// CHECK-NEXT: %[[E:.*]] = colo.embedding %[[WTE]], %[[ROW]] : tensor<8x8xf32>, tensor<2x4xi64>
// CHECK-NEXT: %[[OWN3:.*]] = colo.reshape %[[OWN]] : tensor<2x4xi1> -> tensor<2x4x1xi1>
// CHECK: %[[PART:.*]] = colo.select %[[OWN3]], %[[E]], %{{.*}} : tensor<2x4x1xi1>, tensor<2x4x8xf32>, tensor<f32>
// CHECK-NEXT: %[[X:.*]] = shard.all_reduce %[[PART]] on @mesh grid_axes = [0] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[P:.*]] = colo.embedding %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<1x4xi64>
// CHECK-NEXT: colo.add %[[X]], %[[P]]
// CHECK: %[[H:.*]] = colo.layer_norm
// CHECK-NEXT: %[[WT:.*]] = colo.transpose %[[WTE]] permutation = [1, 0] : tensor<8x8xf32>
// CHECK-NEXT: %[[HR:.*]] = colo.all_reduce_grad %[[H]] on @mesh grid_axes = [0] : tensor<2x4x8xf32>
// CHECK-NEXT: %[[Y:.*]] = colo.matmul %[[HR]], %[[WT]] : tensor<2x4x8xf32>, tensor<8x8xf32>
// CHECK-NEXT: return %[[Y]] : tensor<2x4x8xf32>

// The loss on the blocks (logits of tokens [0, 3) against ids [1, 4)): the
// largest logit over the ranks (max, no gradient), the sum of exponentials
// and the target's shifted logit, owned by one rank (sums). The backward is
// local: softmax - one-hot on the rank's block, then the all-reduce of the
// LM head's input gradient (its colo.all_reduce_grad); the embedding's sum
// passes the gradient through, and each rank scatters its own rows.

// STEP-LABEL: func.func @train_step
// STEP: %[[MINE:.*]] = shard.all_slice
// STEP: %[[L:.*]] = colo.slice %{{.*}} start = [0, 0, 0] limit = [2, 3, 8] stride = [1, 1, 1] : tensor<2x4x8xf32>
// STEP-NEXT: %[[T:.*]] = colo.slice %arg0 start = [0, 1] limit = [2, 4] stride = [1, 1] : tensor<2x4xi64>
// STEP-NEXT: %[[LMAX:.*]] = colo.reduce_max %[[L]] dims = [2] {keep_dims} : tensor<2x3x8xf32>
// STEP-NEXT: %[[MAX:.*]] = shard.all_reduce %[[LMAX]] on @mesh grid_axes = [0] reduction = max : tensor<2x3x1xf32> -> tensor<2x3x1xf32>
// STEP-NEXT: %[[Z:.*]] = colo.sub %[[L]], %[[MAX]] : tensor<2x3x8xf32>, tensor<2x3x1xf32>
// STEP-NEXT: %[[EXP:.*]] = colo.exp %[[Z]] : tensor<2x3x8xf32>
// STEP-NEXT: %[[LSUM:.*]] = colo.reduce_sum %[[EXP]] dims = [2] {keep_dims} : tensor<2x3x8xf32>
// STEP-NEXT: %[[SUM:.*]] = shard.all_reduce %[[LSUM]] on @mesh grid_axes = [0] : tensor<2x3x1xf32> -> tensor<2x3x1xf32>
// STEP-NEXT: %[[LSE:.*]] = colo.log %[[SUM]] : tensor<2x3x1xf32>
// STEP-NEXT: %[[LOCAL:.*]] = colo.sub %[[T]], %{{.*}} : tensor<2x3xi64>, tensor<i64>
// STEP-NEXT: %[[LOCAL3:.*]] = colo.reshape %[[LOCAL]] : tensor<2x3xi64> -> tensor<2x3x1xi64>
// STEP-NEXT: %[[HIT:.*]] = colo.compare eq, %[[LOCAL3]], %{{.*}} : tensor<2x3x1xi64>, tensor<8xi64>
// STEP-NEXT: %[[ZT:.*]] = colo.select %[[HIT]], %[[Z]], %{{.*}} : tensor<2x3x8xi1>, tensor<2x3x8xf32>, tensor<f32>
// STEP-NEXT: %[[LT:.*]] = colo.reduce_sum %[[ZT]] dims = [2] {keep_dims} : tensor<2x3x8xf32>
// STEP-NEXT: %[[TGT:.*]] = shard.all_reduce %[[LT]] on @mesh grid_axes = [0] : tensor<2x3x1xf32> -> tensor<2x3x1xf32>
// STEP-NEXT: colo.sub %[[LSE]], %[[TGT]] : tensor<2x3x1xf32>, tensor<2x3x1xf32>
// STEP-NOT: shard.
// STEP: colo.mul %{{.*}}, %[[EXP]] : tensor<2x3x8xf32>, tensor<2x3x8xf32>
// STEP-NOT: shard.
// STEP: shard.all_reduce %{{.*}} on @mesh grid_axes = [0] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
// STEP-NOT: shard.
// STEP: colo.scatter_add %{{.*}} axis = 0 : tensor<2x4x8xf32>, tensor<2x4xi64> -> tensor<8x8xf32>
// STEP-NOT: shard.
// STEP-NOT: colo.stop_gradient
// STEP-NOT: colo.all_reduce_grad
// STEP: return

// With loss=cross-entropy the labels are an argument of their own, which
// keeps the vocabulary for the data checks as the ids do.
// CE-LABEL: func.func @train_step
// CE-SAME: (%{{.*}}: tensor<2x4xi64> {colo.int_max = 16 : i64}, %{{.*}}: tensor<2x4xi64> {colo.int_ignored = -100 : i64, colo.int_max = 16 : i64})
// CE-COUNT-3: shard.all_reduce {{.*}} : tensor<2x4x1xf32> -> tensor<2x4x1xf32>

colo.global trainable @wte : tensor<16x8xf32>
colo.global trainable @wpe : tensor<4x8xf32>
colo.global trainable @ln_f.weight : tensor<8xf32>
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<2x4x16xf32> {
  %pos = colo.constant dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>
  %wte = colo.global_load @wte : tensor<16x8xf32>
  %wpe = colo.global_load @wpe : tensor<4x8xf32>
  %lnw = colo.global_load @ln_f.weight : tensor<8xf32>
  %x = colo.embedding %wte, %ids : tensor<16x8xf32>, tensor<2x4xi64>
  %p = colo.embedding %wpe, %pos : tensor<4x8xf32>, tensor<1x4xi64>
  %xp = colo.add %x, %p : tensor<2x4x8xf32>, tensor<1x4x8xf32>
  %h = colo.layer_norm %xp scale %lnw : tensor<8xf32> {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<2x4x8xf32>
  %wt = colo.transpose %wte permutation = [1, 0] : tensor<16x8xf32>
  %logits = colo.matmul %h, %wt : tensor<2x4x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x4x16xf32>
}

// -----

// Llama's separate embed_tokens and lm_head: both split; with label
// smoothing the loss also all-reduces the sum of the shifted logits.

// CHECK-LABEL: colo.global trainable @embed_tokens.weight : tensor<16x8xf32> {shard = #colo.shard<split_axes = {{\[}}["tp"], []], parts = [2, 1]>}
// CHECK: colo.global trainable @lm_head.weight : tensor<16x8xf32> {shard = #colo.shard<split_axes = {{\[}}["tp"], []], parts = [2, 1]>}
// CHECK-LABEL: func.func @forward
// CHECK: %[[EMB:.*]] = colo.global_load @embed_tokens.weight : tensor<8x8xf32>
// CHECK: %[[LM:.*]] = colo.global_load @lm_head.weight : tensor<8x8xf32>
// CHECK: colo.embedding %[[EMB]], %{{.*}} : tensor<8x8xf32>, tensor<2x4xi64>
// CHECK: shard.all_reduce %{{.*}} on @mesh grid_axes = [0] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
// CHECK: %[[WT:.*]] = colo.transpose %[[LM]] permutation = [1, 0] : tensor<8x8xf32>
// CHECK-NEXT: %[[HR:.*]] = colo.all_reduce_grad %{{.*}} on @mesh grid_axes = [0] : tensor<2x4x8xf32>
// CHECK-NEXT: colo.matmul %[[HR]], %[[WT]] : tensor<2x4x8xf32>, tensor<8x8xf32>

// STEP-LABEL: func.func @train_step
// STEP-COUNT-3: shard.all_reduce {{.*}} : tensor<2x3x1xf32> -> tensor<2x3x1xf32>
// STEP-NOT: shard.all_reduce {{.*}} : tensor<2x3x1xf32>

// SMOOTH-LABEL: colo.global trainable @embed_tokens.weight
// SMOOTH-LABEL: func.func @train_step
// SMOOTH-COUNT-4: shard.all_reduce {{.*}} : tensor<2x3x1xf32> -> tensor<2x3x1xf32>
// SMOOTH-NOT: shard.all_reduce {{.*}} : tensor<2x3x1xf32>

colo.global trainable @embed_tokens.weight : tensor<16x8xf32>
colo.global trainable @norm.weight : tensor<8xf32>
colo.global trainable @lm_head.weight : tensor<16x8xf32>
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<2x4x16xf32> {
  %emb = colo.global_load @embed_tokens.weight : tensor<16x8xf32>
  %nw = colo.global_load @norm.weight : tensor<8xf32>
  %wlm = colo.global_load @lm_head.weight : tensor<16x8xf32>
  %x = colo.embedding %emb, %ids : tensor<16x8xf32>, tensor<2x4xi64>
  %h = colo.rms_norm %x scale %nw : tensor<8xf32> {axis = 2 : i64, epsilon = 1.0e-06 : f64} : tensor<2x4x8xf32>
  %wt = colo.transpose %wlm permutation = [1, 0] : tensor<16x8xf32>
  %logits = colo.matmul %h, %wt : tensor<2x4x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x4x16xf32>
}
