// RUN: colo-opt %s --colo-pipeline-stages=stages=2 --colo-build-train-step="loss=output optimizer=sgd" | FileCheck %s

// Decomposing attention makes ops the stage cut never saw; each takes the
// stage of the activations it reads. The mask is a constant that both
// layers read: its label (the last stage that uses it) must not pull layer
// 0's masked scores into stage 1, which would send layer 0's attention
// forward and back again.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[MASK:.*]] = colo.constant {colo.stage = 1 : i64} dense<{{.*}}> : tensor<1x1x4x4xf32>
// CHECK: %[[S0:.*]] = colo.mul %{{.*}} {colo.stage = 0 : i64}
// CHECK: %[[M0:.*]] = colo.add %[[S0]], %[[MASK]] {colo.stage = 0 : i64}
// CHECK: colo.softmax %[[M0]] axis = 3 {colo.stage = 0 : i64}
// CHECK: %[[S1:.*]] = colo.mul %{{.*}} {colo.stage = 1 : i64}
// CHECK: %[[M1:.*]] = colo.add %[[S1]], %[[MASK]] {colo.stage = 1 : i64}
colo.global trainable @w0 : tensor<4x4xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 1.0 : f64>
colo.global trainable @w1 : tensor<4x4xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 1.0 : f64>
func.func @forward(%x: tensor<2x1x4x4xf32>) -> tensor<f32> {
  %m = colo.constant dense<[[[[0.0, -1.0e9, -1.0e9, -1.0e9], [0.0, 0.0, -1.0e9, -1.0e9], [0.0, 0.0, 0.0, -1.0e9], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %w0 = colo.global_load @w0 : tensor<4x4xf32>
  %h0 = colo.matmul %x, %w0 : tensor<2x1x4x4xf32>, tensor<4x4xf32>
  %a0 = colo.attention %h0, %h0, %h0 mask %m {scale = 0.5 : f64} : tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>, tensor<1x1x4x4xf32>
  %w1 = colo.global_load @w1 : tensor<4x4xf32>
  %h1 = colo.matmul %a0, %w1 : tensor<2x1x4x4xf32>, tensor<4x4xf32>
  %a1 = colo.attention %h1, %h1, %h1 mask %m {scale = 0.5 : f64} : tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>, tensor<1x1x4x4xf32>
  %s = colo.reduce_sum %a1 dims = [0, 1, 2, 3] : tensor<2x1x4x4xf32>
  return %s : tensor<f32>
}
