// RUN: colo-opt %s --colo-raise-silu -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @silu
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>)
// CHECK-NEXT: %[[Y:.*]] = colo.silu %[[X]] : tensor<2x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @silu(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %s = colo.sigmoid %x : tensor<2x8xf32>
  %y = colo.mul %x, %s : tensor<2x8xf32>, tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// The sigmoid on the left, as the dynamo exporter writes it.
// CHECK-LABEL: func.func @silu_commuted
// CHECK: colo.silu
// CHECK-NOT: colo.mul
func.func @silu_commuted(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = colo.sigmoid %x : tensor<4xf32>
  %y = colo.mul %s, %x : tensor<4xf32>, tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A gate of another value (GLU-style) is not SiLU.
// CHECK-LABEL: func.func @gated_other_value
// CHECK-NOT: colo.silu
// CHECK: colo.mul
func.func @gated_other_value(%x: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  %s = colo.sigmoid %g : tensor<4xf32>
  %y = colo.mul %x, %s : tensor<4xf32>, tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A broadcasting product changes the shape: left alone.
// CHECK-LABEL: func.func @broadcast
// CHECK-NOT: colo.silu
func.func @broadcast(%x: tensor<4xf32>, %y: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %s = colo.sigmoid %x : tensor<4xf32>
  %z = colo.mul %y, %s : tensor<3x4xf32>, tensor<4xf32>
  return %z : tensor<3x4xf32>
}
