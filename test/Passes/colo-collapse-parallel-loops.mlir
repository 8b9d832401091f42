// RUN: colo-opt %s --colo-collapse-parallel-loops | FileCheck %s

// An AdamW-like update of a 3x3 filter's weights in place, with a scalar
// operand: one loop over all 288 elements through views of the buffers, the
// scalar still read once per element.
// CHECK-LABEL: func.func @update
// CHECK: %[[P:.*]] = memref.collapse_shape %arg0 {{\[}}[0, 1, 2, 3]] : memref<4x8x3x3xf32> into memref<288xf32>
// CHECK: %[[G:.*]] = memref.collapse_shape %arg1 {{\[}}[0, 1, 2, 3]] : memref<4x8x3x3xf32> into memref<288xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel"]}
// CHECK-SAME: ins(%[[P]], %[[G]], %arg2 : memref<288xf32>, memref<288xf32>, memref<f32>)
// CHECK-NOT: linalg.generic
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#scalar4 = affine_map<(d0, d1, d2, d3) -> ()>
func.func @update(%p: memref<4x8x3x3xf32>, %g: memref<4x8x3x3xf32>, %lr: memref<f32>) {
  linalg.generic {indexing_maps = [#id4, #id4, #scalar4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%p, %g, %lr : memref<4x8x3x3xf32>, memref<4x8x3x3xf32>, memref<f32>) outs(%p : memref<4x8x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %l: f32, %o: f32):
    %m = arith.mulf %b, %l : f32
    %s = arith.subf %a, %m : f32
    linalg.yield %s : f32
  }
  return
}

// A bias added along the last dimension: the rows collapse, the bias keeps
// its own dimension.
// CHECK-LABEL: func.func @bias
// CHECK: memref.collapse_shape %arg0 {{\[}}[0, 1], [2]] : memref<2x5x7xf32> into memref<10x7xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %arg1 : memref<10x7xf32>, memref<7xf32>)
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#last = affine_map<(d0, d1, d2) -> (d2)>
func.func @bias(%x: memref<2x5x7xf32>, %b: memref<7xf32>, %y: memref<2x5x7xf32>) {
  linalg.generic {indexing_maps = [#id3, #last, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %b : memref<2x5x7xf32>, memref<7xf32>) outs(%y : memref<2x5x7xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  }
  return
}

// Left alone: a transpose (no run of dimensions read in order), a constant
// index (a size-1 dimension read by broadcasting), a strided view (not
// contiguous) and a reduction (its order).
// CHECK-LABEL: func.func @transpose
// CHECK-NOT: collapse_shape
// CHECK: linalg.generic {{.*}} ins(%arg0 : memref<3x4xf32>)
#t = affine_map<(d0, d1) -> (d1, d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @transpose(%x: memref<3x4xf32>, %y: memref<4x3xf32>) {
  linalg.generic {indexing_maps = [#t, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<3x4xf32>) outs(%y : memref<4x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}

// CHECK-LABEL: func.func @broadcast_size_one
// CHECK-NOT: collapse_shape
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : memref<3x4xf32>, memref<3x1xf32>)
#keep = affine_map<(d0, d1) -> (d0, 0)>
func.func @broadcast_size_one(%x: memref<3x4xf32>, %s: memref<3x1xf32>) {
  linalg.generic {indexing_maps = [#id2, #keep, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : memref<3x4xf32>, memref<3x1xf32>) outs(%x : memref<3x4xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    linalg.yield %m : f32
  }
  return
}

// CHECK-LABEL: func.func @strided
// CHECK-NOT: collapse_shape
// CHECK: linalg.generic
func.func @strided(%x: memref<3x4xf32, strided<[8, 1]>>, %y: memref<3x4xf32>) {
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<3x4xf32, strided<[8, 1]>>) outs(%y : memref<3x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}

// CHECK-LABEL: func.func @row_sum
// CHECK-NOT: collapse_shape
// CHECK: iterator_types = ["parallel", "reduction"]
#row = affine_map<(d0, d1) -> (d0)>
func.func @row_sum(%x: memref<3x4xf32>, %y: memref<3xf32>) {
  linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<3x4xf32>) outs(%y : memref<3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  }
  return
}
