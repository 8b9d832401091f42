// RUN: colo-opt %s --split-input-file --colo-build-train-step="loss=lm" | FileCheck %s

// A language model: logits of tokens [0, S-1) against ids [1, S); the
// embedding's gradient is a scatter-add.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[IDS:.*]]: tensor<2x5xi64>) -> tensor<f32>
// CHECK: %[[L:.*]] = colo.slice %{{.*}} start = [0, 0, 0] limit = [2, 4, 7]
// CHECK: %[[T:.*]] = colo.slice %[[IDS]] start = [0, 1] limit = [2, 5]
// CHECK: colo.cross_entropy %[[L]], %[[T]]
// CHECK: colo.scatter_add %{{.*}}, %[[IDS]] axis = 0 : tensor<2x5x7xf32>, tensor<2x5xi64> -> tensor<7x7xf32>
colo.global trainable @emb : tensor<7x7xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 1.0 : f64>
func.func @forward(%ids: tensor<2x5xi64>) -> tensor<2x5x7xf32> {
  %t = colo.global_load @emb : tensor<7x7xf32>
  %e = colo.embedding %t, %ids : tensor<7x7xf32>, tensor<2x5xi64>
  return %e : tensor<2x5x7xf32>
}

// -----

// Dropout gets a key from the step and its position; its gradient is dropout
// of the gradient with the same key (the same mask).
// CHECK-LABEL: func.func @train_step
// CHECK: %[[STEP:.*]] = colo.add
// CHECK: %[[BASE:.*]] = colo.add %[[STEP]]
// CHECK: %[[SCALED:.*]] = colo.mul %[[BASE]]
// CHECK: %[[KEY:.*]] = colo.add %[[SCALED]]
// CHECK: colo.dropout %{{.*}} key %[[KEY]] ratio = 1.000000e-01
// CHECK: colo.dropout %{{.*}} key %[[KEY]] ratio = 1.000000e-01
colo.global trainable @emb2 : tensor<7x7xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 1.0 : f64>
func.func @forward(%ids: tensor<2x5xi64>) -> tensor<2x5x7xf32> {
  %t = colo.global_load @emb2 : tensor<7x7xf32>
  %e = colo.embedding %t, %ids : tensor<7x7xf32>, tensor<2x5xi64>
  %d = colo.dropout %e ratio = 0.1 : tensor<2x5x7xf32>
  return %d : tensor<2x5x7xf32>
}

// -----

// padding_idx (PyTorch's): the padding row's lookups are zeroed out of the
// gradient before the scatter-add; the forward reads the row as any other.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[IDS:.*]]: tensor<2x5xi64>)
// CHECK: %[[E:.*]] = colo.embedding %{{.*}}, %[[IDS]] {padding_idx = 3 : i64}
// CHECK: %[[PAD:.*]] = colo.constant dense<3> : tensor<i64>
// CHECK: %[[OTHER:.*]] = colo.compare ne, %[[IDS]], %[[PAD]] : tensor<2x5xi64>, tensor<i64>
// CHECK: %[[MASK:.*]] = colo.reshape %[[OTHER]] : tensor<2x5xi1> -> tensor<2x5x1xi1>
// CHECK: %[[G:.*]] = colo.select %[[MASK]], %{{.*}}, %{{.*}} : tensor<2x5x1xi1>, tensor<2x5x7xf32>, tensor<f32>
// CHECK: colo.scatter_add %[[G]], %[[IDS]] axis = 0 : tensor<2x5x7xf32>, tensor<2x5xi64> -> tensor<7x7xf32>
colo.global trainable @emb3 : tensor<7x7xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 1.0 : f64>
func.func @forward(%ids: tensor<2x5xi64>) -> tensor<2x5x7xf32> {
  %t = colo.global_load @emb3 : tensor<7x7xf32>
  %e = colo.embedding %t, %ids {padding_idx = 3 : i64} : tensor<7x7xf32>, tensor<2x5xi64>
  return %e : tensor<2x5x7xf32>
}
