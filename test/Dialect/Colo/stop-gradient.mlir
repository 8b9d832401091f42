// RUN: colo-opt %s | colo-opt | FileCheck %s
// RUN: colo-opt %s -canonicalize | FileCheck %s --check-prefix=CANON

// colo.stop_gradient round-trips; canonicalization removes it (once the
// step is differentiated it is an identity).

// CHECK-LABEL: func.func @detach
// CHECK: colo.stop_gradient %{{.*}} : tensor<4x1xf32>
// CANON-LABEL: func.func @detach
// CANON-NEXT: return %arg0 : tensor<4x1xf32>
func.func @detach(%x: tensor<4x1xf32>) -> tensor<4x1xf32> {
  %y = colo.stop_gradient %x : tensor<4x1xf32>
  return %y : tensor<4x1xf32>
}
