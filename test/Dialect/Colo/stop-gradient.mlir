// RUN: colo-opt %s | colo-opt | FileCheck %s
// RUN: colo-opt %s -canonicalize | FileCheck %s --check-prefix=CANON

// colo.stop_gradient round-trips; canonicalization removes it from
// differentiated steps (there it is an identity) but not from @forward, the
// model that colo-build-train-step will differentiate.

// CHECK-LABEL: func.func @train_step
// CHECK: colo.stop_gradient %{{.*}} : tensor<4x1xf32>
// CANON-LABEL: func.func @train_step
// CANON-NEXT: return %arg0 : tensor<4x1xf32>
func.func @train_step(%x: tensor<4x1xf32>) -> tensor<4x1xf32> {
  %y = colo.stop_gradient %x : tensor<4x1xf32>
  return %y : tensor<4x1xf32>
}

// CANON-LABEL: func.func @forward
// CANON-NEXT: colo.stop_gradient %arg0 : tensor<4x1xf32>
func.func @forward(%x: tensor<4x1xf32>) -> tensor<4x1xf32> {
  %y = colo.stop_gradient %x : tensor<4x1xf32>
  return %y : tensor<4x1xf32>
}
