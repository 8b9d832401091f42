// RUN: colo-opt %s --colo-split-batch=parts=2 --colo-pipeline-stages=stages=1 --colo-build-train-step="loss=cross-entropy optimizer=sgd" --colo-pipeline=micro=2 | FileCheck %s
// RUN: colo-opt %s --colo-create-mesh=dp=2 --colo-split-batch="parts=4 sync-ranks=2" --colo-pipeline-stages=stages=1 --colo-build-train-step="loss=cross-entropy optimizer=sgd" --colo-pipeline=micro=2 | FileCheck %s --check-prefix=SYNC

// Batch norm under gradient accumulation: each microbatch normalizes with
// its own statistics and updates the running statistics in order, as
// PyTorch's forward calls do; the step stores the last microbatch's.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[RM:.*]] = colo.global_load @bn.running_mean {colo.micro = 0 : i64
// CHECK: %[[RV:.*]] = colo.global_load @bn.running_var {colo.micro = 0 : i64
// CHECK: %{{.*}}, %[[M0:.*]], %[[V0:.*]] = colo.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %[[RM]], %[[RV]] {colo.micro = 0 : i64
// CHECK-NOT: colo.global_load @bn.running
// CHECK: %{{.*}}, %[[M1:.*]], %[[V1:.*]] = colo.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %[[M0]], %[[V0]] {colo.micro = 1 : i64
// CHECK: colo.global_store @bn.running_mean, %[[M1]]
// CHECK: colo.global_store @bn.running_var, %[[V1]]

// With data parallelism the statistics are the whole microbatch's, summed
// over the dp ranks (SyncBatchNorm): per microbatch, the mean and the
// squared deviations each go through one all-reduce in the forward and
// their gradients through one in the backward; the second microbatch's
// running mean is updated from the first's.
// SYNC-LABEL: func.func @train_step
// SYNC: %[[RM:.*]] = colo.global_load @bn.running_mean {colo.micro = 0 : i64
// SYNC-COUNT-2: shard.all_reduce %{{.*}} on @mesh grid_axes = [0] {colo.micro = 0 : i64
// SYNC: %[[KEPT:.*]] = colo.mul %[[RM]], %{{.*}} {colo.micro = 0 : i64
// SYNC: %[[M0:.*]] = colo.add %[[KEPT]], %{{.*}} {colo.micro = 0 : i64
// SYNC-COUNT-2: shard.all_reduce %{{.*}} on @mesh grid_axes = [0] {colo.micro = 1 : i64
// SYNC: colo.mul %[[M0]], %{{.*}} {colo.micro = 1 : i64
// SYNC-NOT: colo.batch_norm
// SYNC: shard.all_reduce %{{.*}} on @mesh grid_axes = [0] {colo.micro = 1 : i64
// SYNC: shard.all_reduce %{{.*}} on @mesh grid_axes = [0] {colo.micro = 1 : i64
// SYNC: colo.global_store @bn.running_mean
colo.global trainable @conv.weight : tensor<4x3x3x3xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.1 : f64>
colo.global trainable @bn.weight : tensor<4xf32> = dense<1.0> : tensor<4xf32>
colo.global trainable @bn.bias : tensor<4xf32> = dense<0.0> : tensor<4xf32>
colo.global @bn.running_mean : tensor<4xf32> = dense<0.0> : tensor<4xf32>
colo.global @bn.running_var : tensor<4xf32> = dense<1.0> : tensor<4xf32>
colo.global trainable @fc.weight : tensor<64x10xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.1 : f64>
func.func @forward(%x: tensor<8x3x8x8xf32>) -> tensor<8x10xf32> {
  %w = colo.global_load @conv.weight : tensor<4x3x3x3xf32>
  %g = colo.global_load @bn.weight : tensor<4xf32>
  %be = colo.global_load @bn.bias : tensor<4xf32>
  %rm = colo.global_load @bn.running_mean : tensor<4xf32>
  %rv = colo.global_load @bn.running_var : tensor<4xf32>
  %fw = colo.global_load @fc.weight : tensor<64x10xf32>
  %c = colo.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<8x3x8x8xf32>, tensor<4x3x3x3xf32>
  %y, %m, %v = colo.batch_norm %c, %g, %be, %rm, %rv {epsilon = 1.0e-05 : f64, momentum = 0.1 : f64} : tensor<8x4x8x8xf32>, tensor<4xf32>
  %r = colo.relu %y : tensor<8x4x8x8xf32>
  %f = colo.reshape %r : tensor<8x4x8x8xf32> -> tensor<8x256xf32>
  %s = colo.slice %f start = [0, 0] limit = [8, 64] stride = [1, 1] : tensor<8x256xf32>
  %o = colo.matmul %s, %fw : tensor<8x64xf32>, tensor<64x10xf32>
  return %o : tensor<8x10xf32>
}
