// RUN: colo-opt %s --colo-lower-to-linalg --linalg-generalize-named-ops --colo-fuse-elementwise | FileCheck %s

// Attention's scaled and masked scores feed softmax's max and its
// exponentials. The scaling and masking are a multiplication and an
// addition, so they are computed again in both users instead of being
// stored: no generic takes the scores as a tensor, both read the inputs.
// The exponentials (two users too) are kept, and computed once.
// CHECK-LABEL: func.func @scores
// CHECK-SAME: (%[[X:.*]]: tensor<4x64xf32>, %[[M:.*]]: tensor<64xf32>)
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-SAME: ins(%[[X]], %[[M]] : tensor<4x64xf32>, tensor<64xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: %[[E:.*]] = linalg.generic
// CHECK-SAME: ins(%[[X]], %[[M]], %[[MAX]] : tensor<4x64xf32>, tensor<64xf32>, tensor<4xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: math.exp
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-SAME: ins(%[[E]] : tensor<4x64xf32>)
// CHECK-NOT: math.exp
// CHECK: %[[P:.*]] = linalg.generic
// CHECK-SAME: ins(%[[E]], %[[SUM]] : tensor<4x64xf32>, tensor<4xf32>)
// CHECK-NOT: math.exp
// CHECK: return %[[P]]
func.func @scores(%x: tensor<4x64xf32>, %m: tensor<64xf32>) -> tensor<4x64xf32> {
  %c = colo.constant dense<0.125> : tensor<f32>
  %s = colo.mul %x, %c : tensor<4x64xf32>, tensor<f32>
  %t = colo.add %s, %m : tensor<4x64xf32>, tensor<64xf32>
  %p = colo.softmax %t axis = 1 : tensor<4x64xf32>
  return %p : tensor<4x64xf32>
}

// An exponential read by two reductions is computed once and stored, as
// upstream's fusion does: recomputing it would cost more than the memory.
// CHECK-LABEL: func.func @expensive
// CHECK: %[[E:.*]] = linalg.generic
// CHECK: math.exp
// CHECK: linalg.generic {{.*}}"reduction"]} ins(%[[E]] : tensor<4x64xf32>)
// CHECK: linalg.generic {{.*}}"reduction"]} ins(%[[E]] : tensor<4x64xf32>)
func.func @expensive(%x: tensor<4x64xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = colo.exp %x : tensor<4x64xf32>
  %a = colo.reduce_sum %e dims = [1] : tensor<4x64xf32>
  %b = colo.reduce_max %e dims = [1] : tensor<4x64xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}
