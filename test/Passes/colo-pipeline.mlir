// RUN: colo-opt %s --colo-create-mesh=pp=2 --colo-split-batch=parts=2 --colo-pipeline-stages=stages=2 --colo-build-train-step="loss=lm optimizer=sgd" --colo-pipeline="pp=2 micro=2 schedule=1f1b" | FileCheck %s
// RUN: colo-opt %s --colo-create-mesh=pp=2 --colo-split-batch=parts=2 --colo-pipeline-stages=stages=2 --colo-build-train-step="loss=lm optimizer=sgd" --colo-pipeline="pp=2 micro=2 schedule=gpipe" | FileCheck %s --check-prefix=GPIPE
// RUN: colo-opt %s --colo-split-batch=parts=2 --colo-pipeline-stages=stages=1 --colo-build-train-step="loss=lm optimizer=sgd" --colo-pipeline="micro=2" | FileCheck %s --check-prefix=ACCUMULATE
// RUN: colo-opt %s --colo-create-mesh=pp=2 --colo-split-batch=parts=2 --colo-pipeline-stages=stages=4 --colo-build-train-step="loss=lm optimizer=sgd" --colo-pipeline="pp=2 virtual=2 micro=2 schedule=interleaved" | FileCheck %s --check-prefix=INTERLEAVED
// RUN: colo-opt %s --colo-create-mesh=pp=2 --colo-split-batch=parts=2 --colo-pipeline-stages=stages=2 --colo-build-train-step="loss=lm optimizer=sgd" --colo-pipeline="pp=2 micro=2 schedule=zb-h1" | FileCheck %s --check-prefix=ZB

// 1F1B on two ranks, two microbatches. Rank 0 runs F0, F1, B0, B1 (one
// warm-up forward); it sends each microbatch's residual stream to rank 1 and
// receives its gradient back; it sums its gradients over the microbatches
// and halves them. The tied embedding's gradient is the sum of both ranks'
// parts: each sends its part to the other and both add them in one order.
// Rank 1 gets its own copy of every global it uses, named for the model.
// CHECK: colo.global trainable @emb.pp1 : tensor<16x8xf32> {{.*}} {colo.param_name = "emb"}
// CHECK-LABEL: func.func @train_step_stage0(%{{.*}}: tensor<4x6xi64>) -> tensor<f32>
// CHECK-SAME: colo.microbatches = 2 : i64, colo.pipeline_stage = 0 : i64
// CHECK: colo.slice %{{.*}} start = [0, 0] limit = [2, 6]
// CHECK: shard.send %{{.*}} on @mesh grid_axes = [0] destination = [1] {colo.tag = 0 : i64} : (tensor<2x6x8xf32>)
// CHECK: colo.slice %{{.*}} start = [2, 0] limit = [4, 6]
// CHECK: shard.send %{{.*}} destination = [1] {colo.tag = 1 : i64}
// CHECK: shard.recv %{{.*}} source = [1] {colo.tag = 2 : i64} : (tensor<2x6x8xf32>)
// CHECK: shard.recv %{{.*}} source = [1] {colo.tag = 3 : i64}
// CHECK: %[[W1SUM:.*]] = colo.add %{{.*}}, %{{.*}} : tensor<8x8xf32>, tensor<8x8xf32>
// CHECK: colo.mul %[[W1SUM]], %{{.*}} : tensor<8x8xf32>, tensor<f32>
// CHECK: %[[MINE:.*]] = colo.mul %{{.*}}, %{{.*}} : tensor<16x8xf32>, tensor<f32>
// CHECK: shard.send %[[MINE]] on @mesh grid_axes = [0] destination = [1] {colo.tag = 4 : i64}
// CHECK: %[[THEIRS:.*]] = shard.recv %{{.*}} source = [1] {colo.tag = 5 : i64} : (tensor<16x8xf32>)
// CHECK: %[[EMB:.*]] = colo.add %[[THEIRS]], %[[MINE]]
// CHECK: colo.gradient %[[EMB]] of @emb
// CHECK: colo.global_store @emb,
// CHECK: %[[LOSS:.*]] = shard.recv %{{.*}} source = [1] {colo.tag = 6 : i64} : (tensor<1xf32>)
// CHECK: %[[L:.*]] = colo.reshape %[[LOSS]] : tensor<1xf32> -> tensor<f32>
// CHECK: return %[[L]]

// Rank 1 runs the LM head and the loss, on its own copy of the embedding.
// CHECK-LABEL: func.func @train_step_stage1
// CHECK: shard.recv %{{.*}} source = [0] {colo.tag = 0 : i64}
// CHECK: colo.global_load @emb.pp1
// CHECK: colo.cross_entropy
// CHECK: shard.send %{{.*}} destination = [0] {colo.tag = 2 : i64}
// CHECK: shard.recv %{{.*}} source = [0] {colo.tag = 1 : i64}
// CHECK: colo.cross_entropy
// CHECK: shard.send %{{.*}} destination = [0] {colo.tag = 6 : i64} : (tensor<1xf32>)
// CHECK: shard.send %{{.*}} destination = [0] {colo.tag = 3 : i64}
// CHECK: colo.gradient %{{.*}} of @emb.pp1
// CHECK: colo.global_store @emb.pp1,
// CHECK-NOT: @w1
// CHECK: return

// GPipe: both forwards before the backwards on every rank.
// GPIPE-LABEL: func.func @train_step_stage1
// GPIPE: colo.cross_entropy
// GPIPE: colo.cross_entropy
// GPIPE-NOT: colo.cross_entropy
// GPIPE: colo.cross_entropy_backward
// GPIPE: colo.cross_entropy_backward

// Interleaved 1F1B in Megatron-LM's order: two ranks of two chunks each
// (rank 0 chunks 0 and 2, rank 1 chunks 1 and 3), two microbatches. Rank 0
// warms up with all four forwards, chunk 0's then chunk 2's, and runs the
// backwards in reverse, chunk 2's then chunk 0's. Rank 1, the last, warms
// up with chunk 1's two forwards, then alternates chunk 3's forward and
// backward per microbatch, and ends with chunk 1's backwards.
// INTERLEAVED-LABEL: func.func @train_step_stage0
// INTERLEAVED: colo.embedding {{.*}}colo.micro = 0 : i64, colo.stage = 0
// INTERLEAVED: colo.embedding {{.*}}colo.micro = 1 : i64, colo.stage = 0
// INTERLEAVED: colo.gelu {{.*}}colo.micro = 0 : i64, colo.stage = 2
// INTERLEAVED: colo.gelu {{.*}}colo.micro = 1 : i64, colo.stage = 2
// INTERLEAVED: colo.mul {{.*}}colo.micro = 0 : i64, colo.stage = 2
// INTERLEAVED: colo.mul {{.*}}colo.micro = 1 : i64, colo.stage = 2
// INTERLEAVED: colo.scatter_add {{.*}}colo.micro = 0 : i64, colo.stage = 0
// INTERLEAVED: colo.scatter_add {{.*}}colo.micro = 1 : i64, colo.stage = 0
// INTERLEAVED-LABEL: func.func @train_step_stage1
// INTERLEAVED: colo.gelu {{.*}}colo.micro = 0 : i64, colo.stage = 1
// INTERLEAVED: colo.gelu {{.*}}colo.micro = 1 : i64, colo.stage = 1
// INTERLEAVED: colo.cross_entropy {{.*}}colo.micro = 0 : i64, colo.stage = 3
// INTERLEAVED: colo.cross_entropy_backward {{.*}}colo.micro = 0 : i64, colo.stage = 3
// INTERLEAVED: colo.cross_entropy {{.*}}colo.micro = 1 : i64, colo.stage = 3
// INTERLEAVED: colo.cross_entropy_backward {{.*}}colo.micro = 1 : i64, colo.stage = 3
// INTERLEAVED: colo.mul {{.*}}colo.micro = 0 : i64, colo.stage = 1
// INTERLEAVED: colo.mul {{.*}}colo.micro = 1 : i64, colo.stage = 1
// INTERLEAVED: return

// Zero-bubble H1: the last rank runs F0, the input gradient of 0 (what it
// sends back), F1, the input gradient of 1, then the weight gradients of 0
// and 1 (the tied embedding's part from the LM head), which it had deferred.
// ZB-LABEL: func.func @train_step_stage1
// ZB: colo.cross_entropy {{.*}}colo.micro = 0
// ZB: colo.cross_entropy_backward {{.*}}colo.micro = 0
// ZB: %[[DX0:.*]] = colo.matmul {{.*}}colo.micro = 0
// ZB: shard.send %[[DX0]] {{.*}}destination = [0] {colo.tag = 2 : i64}
// ZB-NOT: colo.micro = 0
// ZB: colo.cross_entropy {{.*}}colo.micro = 1
// ZB: colo.cross_entropy_backward {{.*}}colo.micro = 1
// ZB: %[[DX1:.*]] = colo.matmul {{.*}}colo.micro = 1
// ZB: shard.send %[[DX1]] {{.*}}destination = [0] {colo.tag = 3 : i64}
// ZB: %[[DW0:.*]] = colo.matmul {{.*}}colo.micro = 0
// ZB: %[[DW1:.*]] = colo.matmul {{.*}}colo.micro = 1
// ZB: return

// One rank: gradient accumulation, no messages, still @train_step.
// ACCUMULATE-LABEL: func.func @train_step(%{{.*}}: tensor<4x6xi64>)
// ACCUMULATE-NOT: shard.
// ACCUMULATE: colo.cross_entropy {{.*}}colo.micro = 0
// ACCUMULATE: colo.cross_entropy {{.*}}colo.micro = 1
// ACCUMULATE: return
colo.global trainable @emb : tensor<16x8xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 1.0 : f64>
colo.global trainable @w1 : tensor<8x8xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.3 : f64>
colo.global trainable @w2 : tensor<8x8xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.3 : f64>
func.func @forward(%ids: tensor<4x6xi64>) -> tensor<4x6x16xf32> {
  %t = colo.global_load @emb : tensor<16x8xf32>
  %e = colo.embedding %t, %ids : tensor<16x8xf32>, tensor<4x6xi64>
  %a = colo.global_load @w1 : tensor<8x8xf32>
  %h1 = colo.matmul %e, %a : tensor<4x6x8xf32>, tensor<8x8xf32>
  %g1 = colo.gelu %h1 : tensor<4x6x8xf32>
  %r1 = colo.add %e, %g1 : tensor<4x6x8xf32>, tensor<4x6x8xf32>
  %b = colo.global_load @w2 : tensor<8x8xf32>
  %h2 = colo.matmul %r1, %b : tensor<4x6x8xf32>, tensor<8x8xf32>
  %g2 = colo.gelu %h2 : tensor<4x6x8xf32>
  %r2 = colo.add %r1, %g2 : tensor<4x6x8xf32>, tensor<4x6x8xf32>
  %tt = colo.transpose %t permutation = [1, 0] : tensor<16x8xf32>
  %logits = colo.matmul %r2, %tt : tensor<4x6x8xf32>, tensor<8x16xf32>
  return %logits : tensor<4x6x16xf32>
}
