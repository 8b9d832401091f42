// RUN: colo-opt %s --colo-split-reductions | FileCheck %s

// An operand read by broadcasting (a size-1 dimension at index 0) keeps
// being read per row once the reduction is split into 16 lanes: the size-1
// dimension is collapsed first, since linalg's splitReduction would turn the
// constant index into a loop index (and build a generic that does not
// verify).
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1)>
// CHECK-DAG: #[[LANES:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-LABEL: func.func @broadcast_operand
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x64xf32>, %[[S:.*]]: tensor<2x3x1xf32>)
// CHECK: %[[ROW:.*]] = tensor.collapse_shape %[[S]] {{\[}}[0], [1, 2]] : tensor<2x3x1xf32> into tensor<2x3xf32>
// CHECK: %[[XS:.*]] = tensor.expand_shape %[[X]] {{\[}}[0], [1], [2, 3]] output_shape [2, 3, 4, 16]
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[ROWS]], #[[LANES]]], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
// CHECK-SAME: ins(%[[XS]], %[[ROW]] : tensor<2x3x4x16xf32>, tensor<2x3xf32>)
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#keep = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#out = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @broadcast_operand(%x: tensor<2x3x64xf32>, %s: tensor<2x3x1xf32>) -> tensor<2x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  %r = linalg.generic {indexing_maps = [#id, #keep, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %s : tensor<2x3x64xf32>, tensor<2x3x1xf32>) outs(%init : tensor<2x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %d = arith.subf %a, %b : f32
    %sum = arith.addf %acc, %d : f32
    linalg.yield %sum : f32
  } -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
