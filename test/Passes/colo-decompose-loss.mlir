// RUN: colo-opt %s --colo-decompose-loss --cse | FileCheck %s

// The mean loss and its gradient: per-position ops, the sum of the losses,
// one count of the positions whose label is not ignored, and the gradient's
// factor grad / count computed once (each rewrite counts; CSE keeps one).
// CHECK-LABEL: func.func @loss_and_gradient
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x5xf32>, %[[T:.*]]: tensor<2x3xi64>, %[[G:.*]]: tensor<f32>)
// CHECK-DAG: %[[I:.*]] = colo.constant dense<0> : tensor<i64>
// CHECK-DAG: %[[R:.*]] = colo.cross_entropy_rows %[[X]], %[[T]] {ignore_index = 0 : i64, label_smoothing = 1.000000e-01 : f64} : tensor<2x3x5xf32>, tensor<2x3xi64>
// CHECK: %[[V:.*]] = colo.compare ne, %[[T]], %[[I]]
// CHECK: %[[C:.*]] = colo.convert %[[V]] : tensor<2x3xi1> to tensor<2x3xf32>
// CHECK: %[[N:.*]] = colo.reduce_sum %[[C]] dims = [0, 1] : tensor<2x3xf32>
// CHECK: %[[S:.*]] = colo.reduce_sum %[[R]] dims = [0, 1] : tensor<2x3xf32>
// CHECK: %[[L:.*]] = colo.div %[[S]], %[[N]]
// CHECK: %[[K:.*]] = colo.div %[[G]], %[[N]]
// CHECK: %[[D:.*]] = colo.cross_entropy_rows_backward %[[X]], %[[T]], %[[K]] {ignore_index = 0 : i64, label_smoothing = 1.000000e-01 : f64}
// CHECK: return %[[L]], %[[D]]
func.func @loss_and_gradient(%x: tensor<2x3x5xf32>, %t: tensor<2x3xi64>, %g: tensor<f32>) -> (tensor<f32>, tensor<2x3x5xf32>) {
  %l = colo.cross_entropy %x, %t {ignore_index = 0 : i64, label_smoothing = 0.1 : f64} : tensor<2x3x5xf32>, tensor<2x3xi64>
  %d = colo.cross_entropy_backward %x, %t, %g {ignore_index = 0 : i64, label_smoothing = 0.1 : f64} : tensor<2x3x5xf32>, tensor<2x3xi64>, tensor<f32>
  return %l, %d : tensor<f32>, tensor<2x3x5xf32>
}

// 16-bit logits keep the fused ops, whose factor stays in float.
// CHECK-LABEL: func.func @bf16_kept
// CHECK: colo.cross_entropy %
// CHECK: colo.cross_entropy_backward %
// CHECK-NOT: cross_entropy_rows
func.func @bf16_kept(%x: tensor<4x5xbf16>, %t: tensor<4xi64>, %g: tensor<bf16>) -> (tensor<bf16>, tensor<4x5xbf16>) {
  %l = colo.cross_entropy %x, %t : tensor<4x5xbf16>, tensor<4xi64>
  %d = colo.cross_entropy_backward %x, %t, %g : tensor<4x5xbf16>, tensor<4xi64>, tensor<bf16>
  return %l, %d : tensor<bf16>, tensor<4x5xbf16>
}
