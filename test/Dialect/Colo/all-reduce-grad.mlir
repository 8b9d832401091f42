// RUN: colo-opt %s | colo-opt | FileCheck %s
// RUN: colo-opt %s -canonicalize | FileCheck %s --check-prefix=CANON

// colo.all_reduce_grad round-trips; canonicalization removes it (once the
// step is differentiated it is an identity).

shard.grid @mesh(shape = 2x2) {colo.axes = ["dp", "tp"]}

// CHECK-LABEL: func.func @entry
// CHECK: colo.all_reduce_grad %{{.*}} on @mesh grid_axes = [1] : tensor<4x8xf32>
// CANON-LABEL: func.func @entry
// CANON-NEXT: return %arg0 : tensor<4x8xf32>
func.func @entry(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = colo.all_reduce_grad %x on @mesh grid_axes = [1] : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
