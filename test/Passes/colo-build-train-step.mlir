// RUN: colo-opt %s --colo-build-train-step="optimizer=adamw lr=0.01" | FileCheck %s
// RUN: colo-opt %s --colo-build-train-step="optimizer=sgd momentum=0.9 nesterov=true max-grad-norm=1.0 schedule=cosine warmup-steps=2 total-steps=10" | FileCheck %s --check-prefix=SGD
// RUN: colo-opt %s --colo-build-train-step="optimizer=adamw loss-scale=dynamic init-scale=1024 scale-window=100" | FileCheck %s --check-prefix=SCALE

// A linear classifier: cross-entropy against a new `labels` argument, the
// backward of add and matmul, then AdamW on both parameters with state
// globals and the step counter.
// CHECK-DAG: colo.global @colo.step : tensor<i64> = dense<0> : tensor<i64> {colo.optimizer_state}
// CHECK-DAG: colo.global @"fc.weight#exp_avg" : tensor<4x3xf32> = dense<0.000000e+00> : tensor<4x3xf32> {colo.optimizer_state}
// CHECK-DAG: colo.global @"fc.bias#exp_avg_sq" : tensor<3xf32> = dense<0.000000e+00> : tensor<3xf32> {colo.optimizer_state}
// CHECK-LABEL: func.func @forward
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>, %[[LABELS:.*]]: tensor<8xi64>) -> tensor<f32>
// CHECK: %[[STEP:.*]] = colo.add %{{.*}}, %{{.*}} : tensor<i64>, tensor<i64>
// CHECK: %[[W:.*]] = colo.global_load @fc.weight
// CHECK: %[[Y:.*]] = colo.matmul %[[X]], %[[W]]
// CHECK: %[[LOGITS:.*]] = colo.add %[[Y]]
// CHECK: colo.global_store @colo.step, %[[STEP]]
// CHECK: %[[LOSS:.*]] = colo.cross_entropy %[[LOGITS]], %[[LABELS]]
// CHECK: %[[DLOGITS:.*]] = colo.cross_entropy_backward %[[LOGITS]], %[[LABELS]]
// CHECK: colo.reduce_sum %[[DLOGITS]] dims = [0]
// CHECK: %[[XT:.*]] = colo.transpose %[[X]] permutation = [1, 0]
// CHECK: colo.matmul %[[XT]], %[[DLOGITS]]
// CHECK: colo.adam_update {{.*}} {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, decoupled, epsilon = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64} : tensor<4x3xf32>
// CHECK: colo.global_store @fc.weight
// CHECK: colo.global_store @"fc.weight#exp_avg"
// CHECK: colo.global_store @"fc.weight#exp_avg_sq"
// CHECK: return %[[LOSS]] : tensor<f32>

// SGD-LABEL: func.func @train_step
// SGD: colo.sqrt
// SGD: colo.minimum
// SGD: colo.cos
// SGD: colo.sgd_update {{.*}} {dampening = 0.000000e+00 : f64, momentum = 9.000000e-01 : f64, nesterov, weight_decay = 0.000000e+00 : f64}
// SGD: colo.global_store @"fc.weight#momentum_buffer"

// Dynamic loss scaling: the backward starts from the scale, the gradients are
// checked (sum of g * 0) and divided by it; an overflow keeps parameters and
// state, is no optimizer step, and halves the scale.
// SCALE-DAG: colo.global @colo.loss_scale : tensor<f32> = dense<1.024000e+03> : tensor<f32> {colo.optimizer_state}
// SCALE-DAG: colo.global @colo.skipped_steps : tensor<i64> = dense<0> : tensor<i64> {colo.optimizer_state}
// SCALE-DAG: colo.global @colo.loss_scale_good_steps : tensor<i64> = dense<0> : tensor<i64> {colo.optimizer_state}
// SCALE-LABEL: func.func @train_step
// SCALE: %[[STEP:.*]] = colo.add %{{.*}}, %{{.*}} : tensor<i64>, tensor<i64>
// SCALE: %[[SCALE:.*]] = colo.global_load @colo.loss_scale
// SCALE: colo.cross_entropy_backward %{{.*}}, %{{.*}}, %[[SCALE]]
// SCALE: %[[GW:.*]] = colo.gradient %{{.*}} of @fc.weight
// SCALE: colo.mul %[[GW]], %{{.*}} : tensor<4x3xf32>, tensor<f32>
// SCALE: %[[INV:.*]] = colo.div %{{.*}}, %[[SCALE]]
// SCALE: %[[UNSCALED:.*]] = colo.mul %[[GW]], %[[INV]]
// SCALE: %[[FINITE:.*]] = colo.compare eq, %{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>
// SCALE: %[[SKIPPED:.*]] = colo.global_load @colo.skipped_steps
// SCALE: %[[OPTSTEP:.*]] = colo.sub %[[STEP]], %[[SKIPPED]]
// SCALE: %[[W:.*]] = colo.global_load @fc.weight
// SCALE: %[[NEW:.*]], %{{.*}}, %{{.*}} = colo.adam_update %[[W]], %[[UNSCALED]], %{{.*}}, %{{.*}}, %{{.*}}, %[[OPTSTEP]]
// SCALE: %[[KEEP:.*]] = colo.select %[[FINITE]], %[[NEW]], %[[W]]
// SCALE: colo.global_store @fc.weight, %[[KEEP]]
// SCALE: colo.global_store @colo.loss_scale
colo.global trainable @fc.weight : tensor<4x3xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 1.0 : f64>
colo.global trainable @fc.bias : tensor<3xf32> = #colo.init<distribution = "zeros", a = 0.0 : f64, b = 0.0 : f64>
func.func @forward(%x: tensor<8x4xf32>) -> tensor<8x3xf32> {
  %w = colo.global_load @fc.weight : tensor<4x3xf32>
  %y = colo.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32>
  %b = colo.global_load @fc.bias : tensor<3xf32>
  %z = colo.add %y, %b : tensor<8x3xf32>, tensor<3xf32>
  return %z : tensor<8x3xf32>
}
