// RUN: colo-opt %s -split-input-file --colo-build-train-step="loss=cross-entropy" | FileCheck %s
// RUN: colo-opt %s -split-input-file --colo-build-train-step="loss=mse" | FileCheck %s --check-prefix=MSE

// Logits a tensor grid left as the rank's block (colo-tensor-parallel-2d on
// an untied head): the samples over "row", the classes over "col". The
// labels are made whole and cut to the row's samples; the largest logit,
// the sum of exponentials and the target's logit are reduced over "col"
// (the target's found in the column's block of class ids); the loss's sum
// and its count over "row". Nothing is gathered.

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %arg1: tensor<2x4xi64> {colo.int_ignored = -100 : i64, colo.int_max = 16 : i64}
// CHECK: %[[LABELS:.*]] = shard.all_slice %arg1 on @mesh grid_axes = [0] slice_axis = 0 : tensor<2x4xi64> -> tensor<1x4xi64>
// CHECK: %[[MAX:.*]] = colo.reduce_max %[[LOGITS:.*]] dims = [2] {keep_dims} : tensor<1x4x8xf32>
// CHECK-NEXT: shard.all_reduce %[[MAX]] on @mesh grid_axes = [1] reduction = max
// CHECK: %[[SUMEXP:.*]] = colo.reduce_sum %{{.*}} dims = [2] {keep_dims} : tensor<1x4x8xf32>
// CHECK-NEXT: shard.all_reduce %[[SUMEXP]] on @mesh grid_axes = [1] : tensor<1x4x1xf32>
// CHECK: %[[STARTS:.*]] = shard.all_slice %{{.*}} on @mesh grid_axes = [1] slice_axis = 0 : tensor<2xi64> -> tensor<1xi64>
// CHECK: %[[TARGET:.*]] = colo.reduce_sum %{{.*}} dims = [2] {keep_dims} : tensor<1x4x8xf32>
// CHECK-NEXT: shard.all_reduce %[[TARGET]] on @mesh grid_axes = [1] : tensor<1x4x1xf32>
// CHECK: %[[COUNT:.*]] = colo.reduce_sum %{{.*}} dims = [0, 1] : tensor<1x4xf32>
// CHECK-NEXT: %[[COUNTS:.*]] = shard.all_reduce %[[COUNT]] on @mesh grid_axes = [0] : tensor<f32>
// CHECK: %[[SUM:.*]] = colo.reduce_sum %{{.*}} dims = [0, 1] : tensor<1x4xf32>
// CHECK-NEXT: %[[SUMS:.*]] = shard.all_reduce %[[SUM]] on @mesh grid_axes = [0] : tensor<f32>
// CHECK-NEXT: %[[LOSS:.*]] = colo.div %[[SUMS]], %[[COUNTS]]
// CHECK-NOT: shard.all_gather
// CHECK-NOT: colo.cross_entropy
// CHECK: return %[[LOSS]]

// With loss=mse, the blocks are gathered whole first: the classes over "col"
// (brought outermost), then the samples over "row".
// MSE-LABEL: func.func @train_step
// MSE-SAME: %arg1: tensor<2x4x16xf32>
// MSE: shard.all_gather %{{.*}} on @mesh grid_axes = [1] gather_axis = 0 : tensor<8x1x4xf32> -> tensor<16x1x4xf32>
// MSE: %[[WHOLE:.*]] = shard.all_gather %{{.*}} on @mesh grid_axes = [0] gather_axis = 0 : tensor<1x4x16xf32> -> tensor<2x4x16xf32>
// MSE-NEXT: colo.mse_loss %[[WHOLE]], %arg1

shard.grid @mesh(shape = 2x2) {colo.axes = ["row", "col"]}
colo.global trainable @head : tensor<16x8xf32>
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<1x4x8xf32> attributes {colo.loss_class_axis = "col", colo.loss_sample_axes = ["row"]} {
  %w = colo.global_load @head : tensor<16x8xf32>
  %mine = shard.all_slice %ids on @mesh grid_axes = [0] slice_axis = 0 : tensor<2x4xi64> -> tensor<1x4xi64>
  %x = colo.embedding %w, %mine : tensor<16x8xf32>, tensor<1x4xi64>
  return %x : tensor<1x4x8xf32>
}

// -----

// A tied head's logits hold every class: only the samples are split (over
// "row" and "col" here), and the loss is colo.cross_entropy's sum and count
// over them, computed on the rank's block.

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %arg1: tensor<4xi64> {colo.int_ignored = -100 : i64, colo.int_max = 5 : i64}
// CHECK: shard.all_slice %arg1 on @mesh grid_axes = [0, 1] slice_axis = 0 : tensor<4xi64> -> tensor<1xi64>
// CHECK: %[[MAX:.*]] = colo.reduce_max %{{.*}} dims = [1] {keep_dims} : tensor<1x5xf32>
// CHECK-NOT: shard.all_reduce %[[MAX]]
// CHECK: shard.all_reduce %{{.*}} on @mesh grid_axes = [0, 1] : tensor<f32>
// CHECK: shard.all_reduce %{{.*}} on @mesh grid_axes = [0, 1] : tensor<f32>
// CHECK-NOT: colo.cross_entropy

shard.grid @mesh(shape = 2x2) {colo.axes = ["row", "col"]}
colo.global trainable @w : tensor<3x5xf32>
func.func @forward(%x: tensor<4x3xf32>) -> tensor<1x5xf32> attributes {colo.loss_sample_axes = ["row", "col"]} {
  %w = colo.global_load @w : tensor<3x5xf32>
  %mine = shard.all_slice %x on @mesh grid_axes = [0, 1] slice_axis = 0 : tensor<4x3xf32> -> tensor<1x3xf32>
  %y = colo.matmul %mine, %w : tensor<1x3xf32>, tensor<3x5xf32>
  return %y : tensor<1x5xf32>
}
