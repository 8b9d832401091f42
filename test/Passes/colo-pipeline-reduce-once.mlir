// RUN: colo-opt %s --colo-split-batch=parts=2 --colo-pipeline-stages=stages=1 --colo-build-train-step="loss=lm optimizer=sgd" --colo-pipeline="micro=2" | FileCheck %s

// A weight whose gradient each rank of an axis gives part of (its tokens:
// colo-ulysses and colo-sequence-parallel read it through
// colo.all_reduce_grad). Under accumulation the microbatches' partial
// gradients are summed first and all-reduced once per step, and the
// transpose after the all-reduce runs once too; the tied table's reduced
// part (the embedding) is summed apart from the LM head's and added after
// its one all-reduce.
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: shard.all_reduce {{.*}}colo.micro
// CHECK: %[[WIN:.*]] = colo.add %{{.*}} : tensor<8x8xf32>, tensor<8x8xf32>
// CHECK-NEXT: %[[WAR:.*]] = shard.all_reduce %[[WIN]] on @mesh grid_axes = [0] {{.*}}: tensor<8x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[WT:.*]] = colo.transpose %[[WAR]] permutation = [1, 0]
// CHECK: colo.mul %[[WT]]
// CHECK: %[[EIN:.*]] = colo.add %{{.*}} : tensor<16x8xf32>, tensor<16x8xf32>
// CHECK: %[[EAR:.*]] = shard.all_reduce %[[EIN]] on @mesh grid_axes = [0] {{.*}}: tensor<16x8xf32> -> tensor<16x8xf32>
// CHECK-NEXT: %[[ESUM:.*]] = colo.add %{{.*}}, %[[EAR]]
// CHECK: colo.mul %[[ESUM]]
// CHECK-NOT: shard.all_reduce
// CHECK: return
shard.grid @mesh(shape = 2) {colo.axes = ["sp"]}
colo.global trainable @emb : tensor<16x8xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 1.0 : f64>
colo.global trainable @w : tensor<8x8xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.3 : f64>
func.func @forward(%ids: tensor<4x6xi64>) -> tensor<4x6x16xf32> {
  %t = colo.global_load @emb : tensor<16x8xf32>
  %ts = colo.all_reduce_grad %t on @mesh grid_axes = [0] : tensor<16x8xf32>
  %e = colo.embedding %ts, %ids : tensor<16x8xf32>, tensor<4x6xi64>
  %a = colo.global_load @w : tensor<8x8xf32>
  %at = colo.transpose %a permutation = [1, 0] : tensor<8x8xf32>
  %as = colo.all_reduce_grad %at on @mesh grid_axes = [0] : tensor<8x8xf32>
  %h = colo.matmul %e, %as : tensor<4x6x8xf32>, tensor<8x8xf32>
  %tt = colo.transpose %t permutation = [1, 0] : tensor<16x8xf32>
  %logits = colo.matmul %h, %tt : tensor<4x6x8xf32>, tensor<8x16xf32>
  return %logits : tensor<4x6x16xf32>
}
