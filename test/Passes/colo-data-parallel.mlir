// RUN: colo-opt %s --split-input-file --colo-split-batch="parts=2" --colo-build-train-step="optimizer=sgd" --colo-data-parallel="dp=2" | FileCheck %s
// RUN: colo-opt %s --split-input-file --colo-split-batch="parts=2" --colo-build-train-step="optimizer=sgd" --colo-data-parallel="dp=2 bucket-mb=0.0001" | FileCheck %s --check-prefix=SMALL
// RUN: colo-opt %s --split-input-file --colo-build-train-step="optimizer=sgd" --colo-data-parallel="dp=1" | FileCheck %s --check-prefix=ONE
// RUN: colo-opt %s --split-input-file --colo-split-batch="parts=2" --colo-build-train-step="optimizer=sgd" --colo-zero="stage=1 dp=2" | FileCheck %s --check-prefix=ZERO

// Two linear layers on half of a batch of 8: one bucket averages both
// parameters' gradients after the first of them (the last layer's, which the
// backward computes first) and the second exist; the loss is averaged too.
// CHECK: shard.grid @mesh(shape = 2) {colo.axes = ["dp"]}
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%{{.*}}: tensor<4x4xf32>, %{{.*}}: tensor<4xi64>) -> tensor<f32>
// CHECK-SAME: colo.data_parallel = 2
// CHECK: %[[LOSS:.*]] = colo.cross_entropy
// CHECK: %[[G2:.*]] = colo.reshape %{{.*}} : tensor<6x3xf32> -> tensor<18xf32>
// CHECK: %[[G1:.*]] = colo.reshape %{{.*}} : tensor<4x6xf32> -> tensor<24xf32>
// CHECK: %[[B:.*]] = colo.concat %[[G2]], %[[G1]] axis = 0
// CHECK: %[[R:.*]] = shard.all_reduce %[[B]] on @mesh grid_axes = [0] reduction = average : tensor<42xf32> -> tensor<42xf32>
// CHECK: colo.slice %[[R]] start = [0] limit = [18]
// CHECK: colo.gradient %{{.*}} of @fc2.weight
// CHECK: colo.slice %[[R]] start = [18] limit = [42]
// CHECK: colo.gradient %{{.*}} of @fc1.weight
// CHECK-NOT: shard.all_reduce %{{.*}} : tensor<42xf32>
// CHECK: %[[MEAN:.*]] = shard.all_reduce %[[LOSS]] on @mesh grid_axes = [0] reduction = average : tensor<f32> -> tensor<f32>
// CHECK: return %[[MEAN]]

// With 104-byte buckets each gradient is reduced alone, right after it is
// computed: fc2's before fc1's gradient exists.
// SMALL-LABEL: func.func @train_step
// SMALL: shard.all_reduce %{{.*}} : tensor<18xf32> -> tensor<18xf32>
// SMALL: colo.matmul
// SMALL: shard.all_reduce %{{.*}} : tensor<24xf32> -> tensor<24xf32>

// dp=1 changes nothing.
// ONE-NOT: shard
colo.global trainable @fc1.weight : tensor<4x6xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 1.0 : f64>
colo.global trainable @fc2.weight : tensor<6x3xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 1.0 : f64>
func.func @forward(%x: tensor<8x4xf32>) -> tensor<8x3xf32> {
  %w1 = colo.global_load @fc1.weight : tensor<4x6xf32>
  %h = colo.matmul %x, %w1 : tensor<8x4xf32>, tensor<4x6xf32>
  %r = colo.relu %h : tensor<8x6xf32>
  %w2 = colo.global_load @fc2.weight : tensor<6x3xf32>
  %y = colo.matmul %r, %w2 : tensor<8x6xf32>, tensor<6x3xf32>
  return %y : tensor<8x3xf32>
}

// -----

// Keyed dropout: each rank adds its offset (rank << 40) to every key, so the
// ranks' halves of the batch get different masks; forward and backward share
// the shifted key.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[TABLE:.*]] = colo.constant dense<[0, 1099511627776]> : tensor<2xi64>
// CHECK: %[[MINE:.*]] = shard.all_slice %[[TABLE]] on @mesh grid_axes = [0] slice_axis = 0
// CHECK: %[[OFFSET:.*]] = colo.reshape %[[MINE]] : tensor<1xi64> -> tensor<i64>
// CHECK: %[[KEY:.*]] = colo.add %{{.*}}, %[[OFFSET]]
// CHECK: colo.dropout %{{.*}} key %[[KEY]]
// CHECK: colo.dropout %{{.*}} key %[[KEY]]
// ZERO: colo.constant dense<[0, 1099511627776]> : tensor<2xi64>
// ZERO: shard.all_slice
colo.global trainable @w : tensor<4x3xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 1.0 : f64>
func.func @forward(%x: tensor<8x4xf32>) -> tensor<8x3xf32> {
  %w = colo.global_load @w : tensor<4x3xf32>
  %y = colo.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32>
  %d = colo.dropout %y ratio = 0.1 : tensor<8x3xf32>
  return %d : tensor<8x3xf32>
}
