// RUN: colo-opt %s --colo-build-train-step="loss=cross-entropy optimizer=sgd" | FileCheck %s

// A batch norm whose statistics span the dp ranks (colo-split-batch's
// sync-ranks) is expanded before differentiation: the per-channel sums of
// the rank's slice, summed over the ranks (forward: shard.all_reduce;
// backward: colo.all_reduce_grad's rule), the mean, the sum of squared
// deviations the same way, the normalization, and the running statistics
// updated from the whole batch's (variance unbiased over 2 x 256 values).
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: colo.batch_norm
// CHECK: %[[S:.*]] = colo.reduce_sum %[[C:.*]] dims = [0, 2, 3] {keep_dims} : tensor<4x4x8x8xf32>
// CHECK: %[[SG:.*]] = colo.all_reduce_grad %[[S]] on @mesh grid_axes = [0] : tensor<1x4x1x1xf32>
// CHECK: %[[SUM:.*]] = shard.all_reduce %[[SG]] on @mesh grid_axes = [0]
// CHECK: %[[MEAN:.*]] = colo.mul %[[SUM]], %{{.*}} : tensor<1x4x1x1xf32>, tensor<f32>
// CHECK: %[[D:.*]] = colo.sub %[[C]], %[[MEAN]]
// CHECK: %[[D2:.*]] = colo.mul %[[D]], %[[D]]
// CHECK: %[[Q:.*]] = colo.reduce_sum %[[D2]] dims = [0, 2, 3] {keep_dims}
// CHECK: colo.all_reduce_grad %[[Q]] on @mesh grid_axes = [0]
// CHECK: shard.all_reduce
// CHECK: colo.rsqrt
// CHECK: colo.constant dense<0.100195698> : tensor<f32>
// CHECK: colo.global_store @bn.running_mean
// CHECK: colo.global_store @bn.running_var
// The backward sums the two gradients over the ranks.
// CHECK: shard.all_reduce %{{.*}} on @mesh grid_axes = [0] : tensor<1x4x1x1xf32>
// CHECK: shard.all_reduce %{{.*}} on @mesh grid_axes = [0] : tensor<1x4x1x1xf32>
// CHECK-NOT: colo.all_reduce_grad
shard.grid @mesh(shape = 2) {colo.axes = ["dp"]}
colo.global trainable @conv.weight : tensor<4x3x3x3xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.1 : f64>
colo.global trainable @bn.weight : tensor<4xf32> = dense<1.0> : tensor<4xf32>
colo.global trainable @bn.bias : tensor<4xf32> = dense<0.0> : tensor<4xf32>
colo.global @bn.running_mean : tensor<4xf32> = dense<0.0> : tensor<4xf32>
colo.global @bn.running_var : tensor<4xf32> = dense<1.0> : tensor<4xf32>
colo.global trainable @fc.weight : tensor<64x10xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.1 : f64>
func.func @forward(%x: tensor<4x3x8x8xf32>) -> tensor<4x10xf32> {
  %w = colo.global_load @conv.weight : tensor<4x3x3x3xf32>
  %g = colo.global_load @bn.weight : tensor<4xf32>
  %be = colo.global_load @bn.bias : tensor<4xf32>
  %rm = colo.global_load @bn.running_mean : tensor<4xf32>
  %rv = colo.global_load @bn.running_var : tensor<4xf32>
  %fw = colo.global_load @fc.weight : tensor<64x10xf32>
  %c = colo.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<4x3x8x8xf32>, tensor<4x3x3x3xf32>
  %y, %m, %v = colo.batch_norm %c, %g, %be, %rm, %rv {epsilon = 1.0e-05 : f64, momentum = 0.1 : f64, sync_axes = array<i16: 0>, sync_grid = @mesh} : tensor<4x4x8x8xf32>, tensor<4xf32>
  %r = colo.relu %y : tensor<4x4x8x8xf32>
  %f = colo.reshape %r : tensor<4x4x8x8xf32> -> tensor<4x256xf32>
  %s = colo.slice %f start = [0, 0] limit = [4, 64] stride = [1, 1] : tensor<4x256xf32>
  %o = colo.matmul %s, %fw : tensor<4x64xf32>, tensor<64x10xf32>
  return %o : tensor<4x10xf32>
}
