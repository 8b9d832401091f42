// RUN: colo-opt %s --colo-join-slice-gradients -split-input-file | FileCheck %s

// GPT-2's q, k and v gradients, summed in autodiff's order, become one concat.
// CHECK-LABEL: func.func @qkv
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x8xf32>, %[[K:.*]]: tensor<2x4x8xf32>, %[[V:.*]]: tensor<2x4x8xf32>)
// CHECK-NEXT: %[[G:.*]] = colo.concat %[[Q]], %[[K]], %[[V]] axis = 2
// CHECK-NEXT: return %[[G]]
func.func @qkv(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x24xf32> {
  %gv = colo.slice_backward %v start = [0, 0, 16] limit = [2, 4, 24] stride = [1, 1, 1] : tensor<2x4x8xf32> -> tensor<2x4x24xf32>
  %gk = colo.slice_backward %k start = [0, 0, 8] limit = [2, 4, 16] stride = [1, 1, 1] : tensor<2x4x8xf32> -> tensor<2x4x24xf32>
  %s = colo.add %gv, %gk : tensor<2x4x24xf32>, tensor<2x4x24xf32>
  %gq = colo.slice_backward %q start = [0, 0, 0] limit = [2, 4, 8] stride = [1, 1, 1] : tensor<2x4x8xf32> -> tensor<2x4x24xf32>
  %g = colo.add %s, %gq : tensor<2x4x24xf32>, tensor<2x4x24xf32>
  return %g : tensor<2x4x24xf32>
}

// -----

// Two adjacent windows that do not cover the tensor stay a slice_backward.
// CHECK-LABEL: func.func @partial
// CHECK: %[[C:.*]] = colo.concat %arg0, %arg1 axis = 1
// CHECK-NEXT: colo.slice_backward %[[C]] start = [0, 2] limit = [4, 10] stride = [1, 1] : tensor<4x8xf32> -> tensor<4x12xf32>
// CHECK-NOT: colo.add
func.func @partial(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x12xf32> {
  %ga = colo.slice_backward %a start = [0, 2] limit = [4, 6] stride = [1, 1] : tensor<4x4xf32> -> tensor<4x12xf32>
  %gb = colo.slice_backward %b start = [0, 6] limit = [4, 10] stride = [1, 1] : tensor<4x4xf32> -> tensor<4x12xf32>
  %g = colo.add %ga, %gb : tensor<4x12xf32>, tensor<4x12xf32>
  return %g : tensor<4x12xf32>
}

// -----

// A gap, an overlap, a stride or windows differing on two axes: a real sum.
// CHECK-LABEL: func.func @not_adjacent
// CHECK-NOT: colo.concat
// CHECK-COUNT-4: colo.add
func.func @not_adjacent(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>, %c: tensor<2x4xf32>, %d: tensor<2x4xf32>) -> (tensor<4x12xf32>, tensor<4x12xf32>, tensor<4x12xf32>, tensor<4x12xf32>) {
  %ga = colo.slice_backward %a start = [0, 0] limit = [4, 4] stride = [1, 1] : tensor<4x4xf32> -> tensor<4x12xf32>
  %gap = colo.slice_backward %b start = [0, 5] limit = [4, 9] stride = [1, 1] : tensor<4x4xf32> -> tensor<4x12xf32>
  %g1 = colo.add %ga, %gap : tensor<4x12xf32>, tensor<4x12xf32>
  %ga2 = colo.slice_backward %a start = [0, 0] limit = [4, 4] stride = [1, 1] : tensor<4x4xf32> -> tensor<4x12xf32>
  %over = colo.slice_backward %b start = [0, 3] limit = [4, 7] stride = [1, 1] : tensor<4x4xf32> -> tensor<4x12xf32>
  %g2 = colo.add %ga2, %over : tensor<4x12xf32>, tensor<4x12xf32>
  %ga3 = colo.slice_backward %a start = [0, 0] limit = [4, 4] stride = [1, 1] : tensor<4x4xf32> -> tensor<4x12xf32>
  %strided = colo.slice_backward %b start = [0, 4] limit = [4, 12] stride = [1, 2] : tensor<4x4xf32> -> tensor<4x12xf32>
  %g3 = colo.add %ga3, %strided : tensor<4x12xf32>, tensor<4x12xf32>
  %gc = colo.slice_backward %c start = [0, 0] limit = [2, 4] stride = [1, 1] : tensor<2x4xf32> -> tensor<4x12xf32>
  %gd = colo.slice_backward %d start = [2, 4] limit = [4, 8] stride = [1, 1] : tensor<2x4xf32> -> tensor<4x12xf32>
  %g4 = colo.add %gc, %gd : tensor<4x12xf32>, tensor<4x12xf32>
  return %g1, %g2, %g3, %g4 : tensor<4x12xf32>, tensor<4x12xf32>, tensor<4x12xf32>, tensor<4x12xf32>
}
