// RUN: colo-opt %s --colo-collapse-parallel-loops | FileCheck %s

// An AdamW-like update of a 3x3 filter's weights, with a scalar operand:
// one loop over all 288 elements, the scalar still read once per element.
// CHECK-LABEL: func.func @update
// CHECK: %[[P:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1, 2, 3]] : tensor<4x8x3x3xf32> into tensor<288xf32>
// CHECK: %[[R:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]}
// CHECK-SAME: ins(%[[P]], %{{.*}}, %arg2 : tensor<288xf32>, tensor<288xf32>, tensor<f32>)
// CHECK: tensor.expand_shape %[[R]] {{\[}}[0, 1, 2, 3]] output_shape [4, 8, 3, 3]
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#scalar4 = affine_map<(d0, d1, d2, d3) -> ()>
func.func @update(%p: tensor<4x8x3x3xf32>, %g: tensor<4x8x3x3xf32>, %lr: tensor<f32>) -> tensor<4x8x3x3xf32> {
  %r = linalg.generic {indexing_maps = [#id4, #id4, #scalar4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%p, %g, %lr : tensor<4x8x3x3xf32>, tensor<4x8x3x3xf32>, tensor<f32>) outs(%p : tensor<4x8x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %l: f32, %o: f32):
    %m = arith.mulf %b, %l : f32
    %s = arith.subf %a, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x8x3x3xf32>
  return %r : tensor<4x8x3x3xf32>
}

// A bias added along the last dimension: the rows collapse, the bias keeps
// its own dimension.
// CHECK-LABEL: func.func @bias
// CHECK: tensor.collapse_shape %arg0 {{\[}}[0, 1], [2]] : tensor<2x5x7xf32> into tensor<10x7xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %arg1 : tensor<10x7xf32>, tensor<7xf32>)
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#last = affine_map<(d0, d1, d2) -> (d2)>
func.func @bias(%x: tensor<2x5x7xf32>, %b: tensor<7xf32>) -> tensor<2x5x7xf32> {
  %r = linalg.generic {indexing_maps = [#id3, #last, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %b : tensor<2x5x7xf32>, tensor<7xf32>) outs(%x : tensor<2x5x7xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<2x5x7xf32>
  return %r : tensor<2x5x7xf32>
}

// A transpose reads no run of dimensions in order: unchanged.
// CHECK-LABEL: func.func @transpose
// CHECK-NOT: collapse_shape
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<3x4xf32>)
#t = affine_map<(d0, d1) -> (d1, d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @transpose(%x: tensor<3x4xf32>, %init: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %r = linalg.generic {indexing_maps = [#t, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<3x4xf32>) outs(%init : tensor<4x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// A constant index (a size-1 dimension read by broadcasting) is left alone.
// CHECK-LABEL: func.func @broadcast_size_one
// CHECK-NOT: collapse_shape
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<3x4xf32>, tensor<3x1xf32>)
#keep = affine_map<(d0, d1) -> (d0, 0)>
func.func @broadcast_size_one(%x: tensor<3x4xf32>, %s: tensor<3x1xf32>) -> tensor<3x4xf32> {
  %r = linalg.generic {indexing_maps = [#id2, #keep, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : tensor<3x4xf32>, tensor<3x1xf32>) outs(%x : tensor<3x4xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    linalg.yield %m : f32
  } -> tensor<3x4xf32>
  return %r : tensor<3x4xf32>
}

// A reduction keeps its loops (and its order).
// CHECK-LABEL: func.func @row_sum
// CHECK-NOT: collapse_shape
// CHECK: iterator_types = ["parallel", "reduction"]
#row = affine_map<(d0, d1) -> (d0)>
func.func @row_sum(%x: tensor<3x4xf32>, %init: tensor<3xf32>) -> tensor<3xf32> {
  %r = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x4xf32>) outs(%init : tensor<3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  return %r : tensor<3xf32>
}
