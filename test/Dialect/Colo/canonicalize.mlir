// RUN: colo-opt %s -canonicalize -split-input-file | FileCheck %s

// Folders and canonicalization patterns of the colo ops, each with the
// nearest case that must be left alone.

//===----------------------------------------------------------------------===//
// Identity elements
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @add_zero
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NOT: colo.add
// CHECK: return %[[X]], %[[X]]
func.func @add_zero(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = colo.constant dense<0.0> : tensor<f32>
  %0 = colo.add %x, %zero : tensor<4x8xf32>, tensor<f32>
  %1 = colo.add %zero, %x : tensor<f32>, tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A zero that broadcasts x to a larger shape changes the type: no fold.
// CHECK-LABEL: func.func @add_broadcasting_zero
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>)
// CHECK: %[[ZERO:.*]] = colo.constant dense<0.000000e+00> : tensor<4x8xf32>
// CHECK: %[[Y:.*]] = colo.add %[[X]], %[[ZERO]] : tensor<8xf32>, tensor<4x8xf32>
// CHECK: return %[[Y]] : tensor<4x8xf32>
func.func @add_broadcasting_zero(%x: tensor<8xf32>) -> tensor<4x8xf32> {
  %zero = colo.constant dense<0.0> : tensor<4x8xf32>
  %0 = colo.add %x, %zero : tensor<8xf32>, tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @add_nonzero
// CHECK: %[[Y:.*]] = colo.add
// CHECK: return %[[Y]]
func.func @add_nonzero(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = colo.constant dense<1.0e-05> : tensor<f32>
  %0 = colo.add %x, %c : tensor<4xf32>, tensor<f32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @sub_zero
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NOT: colo.sub
// CHECK: return %[[X]]
func.func @sub_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  %zero = colo.constant dense<0.0> : tensor<4xf32>
  %0 = colo.sub %x, %zero : tensor<4xf32>, tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// 0 - x is -x, not x.
// CHECK-LABEL: func.func @zero_sub
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK: %[[ZERO:.*]] = colo.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[Y:.*]] = colo.sub %[[ZERO]], %[[X]] : tensor<f32>, tensor<4xf32>
// CHECK: return %[[Y]]
func.func @zero_sub(%x: tensor<4xf32>) -> tensor<4xf32> {
  %zero = colo.constant dense<0.0> : tensor<f32>
  %0 = colo.sub %zero, %x : tensor<f32>, tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @mul_one
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NOT: colo.mul
// CHECK: return %[[X]], %[[X]]
func.func @mul_one(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %one = colo.constant dense<1.0> : tensor<8xf32>
  %0 = colo.mul %x, %one : tensor<4x8xf32>, tensor<8xf32>
  %1 = colo.mul %one, %x : tensor<8xf32>, tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @mul_two
// CHECK: %[[Y:.*]] = colo.mul
// CHECK: return %[[Y]]
func.func @mul_two(%x: tensor<4xf32>) -> tensor<4xf32> {
  %two = colo.constant dense<2.0> : tensor<f32>
  %0 = colo.mul %x, %two : tensor<4xf32>, tensor<f32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @div_one
// CHECK-SAME: (%[[X:.*]]: tensor<4xbf16>)
// CHECK-NOT: colo.div
// CHECK: return %[[X]]
func.func @div_one(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %one = colo.constant dense<1.0> : tensor<bf16>
  %0 = colo.div %x, %one : tensor<4xbf16>, tensor<bf16>
  return %0 : tensor<4xbf16>
}

// -----

// 1 / x is a reciprocal, not x.
// CHECK-LABEL: func.func @one_div
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK: %[[ONE:.*]] = colo.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[Y:.*]] = colo.div %[[ONE]], %[[X]] : tensor<f32>, tensor<4xf32>
// CHECK: return %[[Y]]
func.func @one_div(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = colo.constant dense<1.0> : tensor<f32>
  %0 = colo.div %one, %x : tensor<f32>, tensor<4xf32>
  return %0 : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// Constant folding of splats
//===----------------------------------------------------------------------===//

// -----

// The folded splat takes the broadcast result shape.
// CHECK-LABEL: func.func @fold_splats
// CHECK-DAG: %[[ADD:.*]] = colo.constant dense<5.000000e+00> : tensor<4xf32>
// CHECK-DAG: %[[SUB:.*]] = colo.constant dense<-1.000000e+00> : tensor<f32>
// CHECK-DAG: %[[MUL:.*]] = colo.constant dense<9.000000e+00> : tensor<2x4xf32>
// CHECK-DAG: %[[DIV:.*]] = colo.constant dense<1.500000e+00> : tensor<f32>
// CHECK-NOT: colo.add
// CHECK-NOT: colo.sub
// CHECK-NOT: colo.mul
// CHECK-NOT: colo.div
// CHECK: return %[[ADD]], %[[SUB]], %[[MUL]], %[[DIV]]
func.func @fold_splats() -> (tensor<4xf32>, tensor<f32>, tensor<2x4xf32>, tensor<f32>) {
  %two = colo.constant dense<2.0> : tensor<f32>
  %three = colo.constant dense<3.0> : tensor<f32>
  %three4 = colo.constant dense<3.0> : tensor<4xf32>
  %three21 = colo.constant dense<3.0> : tensor<2x1xf32>
  %0 = colo.add %two, %three4 : tensor<f32>, tensor<4xf32>
  %1 = colo.sub %two, %three : tensor<f32>, tensor<f32>
  %2 = colo.mul %three4, %three21 : tensor<4xf32>, tensor<2x1xf32>
  %3 = colo.div %three, %two : tensor<f32>, tensor<f32>
  return %0, %1, %2, %3 : tensor<4xf32>, tensor<f32>, tensor<2x4xf32>, tensor<f32>
}

// -----

// Folds chain: (2 * 2 + 3) - 4 = 3.
// CHECK-LABEL: func.func @fold_splat_chain
// CHECK: %[[C:.*]] = colo.constant dense<3.000000e+00> : tensor<2xf32>
// CHECK-NEXT: return %[[C]]
func.func @fold_splat_chain() -> tensor<2xf32> {
  %two = colo.constant dense<2.0> : tensor<f32>
  %three = colo.constant dense<3.0> : tensor<2xf32>
  %four = colo.constant dense<4.0> : tensor<f32>
  %0 = colo.mul %two, %two : tensor<f32>, tensor<f32>
  %1 = colo.add %0, %three : tensor<f32>, tensor<2xf32>
  %2 = colo.sub %1, %four : tensor<2xf32>, tensor<f32>
  return %2 : tensor<2xf32>
}

// -----

// Non-splat constants are not folded.
// CHECK-LABEL: func.func @no_fold_non_splat
// CHECK: %[[Y:.*]] = colo.add
// CHECK: return %[[Y]]
func.func @no_fold_non_splat() -> tensor<2xf32> {
  %a = colo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %b = colo.constant dense<3.0> : tensor<f32>
  %0 = colo.add %a, %b : tensor<2xf32>, tensor<f32>
  return %0 : tensor<2xf32>
}

//===----------------------------------------------------------------------===//
// convert and dropout
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @convert_same_type
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NOT: colo.convert
// CHECK: return %[[X]]
func.func @convert_same_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = colo.convert %x : tensor<4xf32> to tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Narrowing and widening back rounds: both converts stay.
// CHECK-LABEL: func.func @convert_round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK: %[[H:.*]] = colo.convert %[[X]] : tensor<4xf32> to tensor<4xf16>
// CHECK: %[[Y:.*]] = colo.convert %[[H]] : tensor<4xf16> to tensor<4xf32>
// CHECK: return %[[Y]]
func.func @convert_round_trip(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = colo.convert %x : tensor<4xf32> to tensor<4xf16>
  %1 = colo.convert %0 : tensor<4xf16> to tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @dropout_zero
// CHECK-SAME: (%[[X:.*]]: tensor<2x16xf32>)
// CHECK-NOT: colo.dropout
// CHECK: return %[[X]]
func.func @dropout_zero(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %0 = colo.dropout %x ratio = 0.0 : tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}

// -----

// CHECK-LABEL: func.func @dropout_nonzero
// CHECK: %[[Y:.*]] = colo.dropout %{{.*}} ratio = 1.000000e-01
// CHECK: return %[[Y]]
func.func @dropout_nonzero(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %0 = colo.dropout %x ratio = 0.1 : tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}

//===----------------------------------------------------------------------===//
// reshape
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @reshape_identity
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NOT: colo.reshape
// CHECK: return %[[X]]
func.func @reshape_identity(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = colo.reshape %x : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x64xf32>)
// CHECK: %[[Y:.*]] = colo.reshape %[[X]] : tensor<2x16x64xf32> -> tensor<2x1024xf32>
// CHECK-NOT: colo.reshape
// CHECK: return %[[Y]]
func.func @reshape_of_reshape(%x: tensor<2x16x64xf32>) -> tensor<2x1024xf32> {
  %0 = colo.reshape %x : tensor<2x16x64xf32> -> tensor<32x64xf32>
  %1 = colo.reshape %0 : tensor<32x64xf32> -> tensor<2x1024xf32>
  return %1 : tensor<2x1024xf32>
}

// -----

// A reshape back to the original shape disappears.
// CHECK-LABEL: func.func @reshape_round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x64xf32>)
// CHECK-NOT: colo.reshape
// CHECK: return %[[X]]
func.func @reshape_round_trip(%x: tensor<2x16x64xf32>) -> tensor<2x16x64xf32> {
  %0 = colo.reshape %x : tensor<2x16x64xf32> -> tensor<32x64xf32>
  %1 = colo.reshape %0 : tensor<32x64xf32> -> tensor<2x16x64xf32>
  return %1 : tensor<2x16x64xf32>
}

// -----

// The first reshape keeps its other user.
// CHECK-LABEL: func.func @reshape_of_reshape_shared
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x64xf32>)
// CHECK-DAG: %[[A:.*]] = colo.reshape %[[X]] : tensor<2x16x64xf32> -> tensor<32x64xf32>
// CHECK-DAG: %[[B:.*]] = colo.reshape %[[X]] : tensor<2x16x64xf32> -> tensor<2048xf32>
// CHECK: return %[[A]], %[[B]]
func.func @reshape_of_reshape_shared(%x: tensor<2x16x64xf32>) -> (tensor<32x64xf32>, tensor<2048xf32>) {
  %0 = colo.reshape %x : tensor<2x16x64xf32> -> tensor<32x64xf32>
  %1 = colo.reshape %0 : tensor<32x64xf32> -> tensor<2048xf32>
  return %0, %1 : tensor<32x64xf32>, tensor<2048xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_of_constant
// CHECK-DAG: %[[DENSE:.*]] = colo.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-DAG: %[[SPLAT:.*]] = colo.constant dense<7> : tensor<3x2xi32>
// CHECK-NOT: colo.reshape
// CHECK: return %[[DENSE]], %[[SPLAT]]
func.func @reshape_of_constant() -> (tensor<2x2xf32>, tensor<3x2xi32>) {
  %c = colo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %s = colo.constant dense<7> : tensor<6xi32>
  %0 = colo.reshape %c : tensor<4xf32> -> tensor<2x2xf32>
  %1 = colo.reshape %s : tensor<6xi32> -> tensor<3x2xi32>
  return %0, %1 : tensor<2x2xf32>, tensor<3x2xi32>
}

//===----------------------------------------------------------------------===//
// transpose
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @transpose_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NOT: colo.transpose
// CHECK: return %[[X]]
func.func @transpose_identity(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = colo.transpose %x permutation = [0, 1, 2] : tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// [0, 2, 1, 3] then [1, 0, 3, 2] is [2, 0, 3, 1] of the input.
// CHECK-LABEL: func.func @transpose_of_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4x5xf32>)
// CHECK: %[[Y:.*]] = colo.transpose %[[X]] permutation = [2, 0, 3, 1] : tensor<2x3x4x5xf32>
// CHECK-NOT: colo.transpose
// CHECK: return %[[Y]] : tensor<4x2x5x3xf32>
func.func @transpose_of_transpose(%x: tensor<2x3x4x5xf32>) -> tensor<4x2x5x3xf32> {
  %0 = colo.transpose %x permutation = [0, 2, 1, 3] : tensor<2x3x4x5xf32>
  %1 = colo.transpose %0 permutation = [1, 0, 3, 2] : tensor<2x4x3x5xf32>
  return %1 : tensor<4x2x5x3xf32>
}

// -----

// A transpose and its inverse cancel.
// CHECK-LABEL: func.func @transpose_inverse
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NOT: colo.transpose
// CHECK: return %[[X]]
func.func @transpose_inverse(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = colo.transpose %x permutation = [1, 2, 0] : tensor<2x3x4xf32>
  %1 = colo.transpose %0 permutation = [2, 0, 1] : tensor<3x4x2xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// Moving only unit dimensions keeps the row-major order: a reshape.
// CHECK-LABEL: func.func @transpose_unit_dims
// CHECK-SAME: (%[[X:.*]]: tensor<2x1x16x1xf32>)
// CHECK: %[[Y:.*]] = colo.reshape %[[X]] : tensor<2x1x16x1xf32> -> tensor<1x2x1x16xf32>
// CHECK-NOT: colo.transpose
// CHECK: return %[[Y]]
func.func @transpose_unit_dims(%x: tensor<2x1x16x1xf32>) -> tensor<1x2x1x16xf32> {
  %0 = colo.transpose %x permutation = [1, 0, 3, 2] : tensor<2x1x16x1xf32>
  return %0 : tensor<1x2x1x16xf32>
}

// -----

// Swapping two non-unit dimensions moves data.
// CHECK-LABEL: func.func @transpose_not_unit_dims
// CHECK-SAME: (%[[X:.*]]: tensor<2x1x16xf32>)
// CHECK: %[[Y:.*]] = colo.transpose %[[X]] permutation = [2, 1, 0] : tensor<2x1x16xf32>
// CHECK-NOT: colo.reshape
// CHECK: return %[[Y]]
func.func @transpose_not_unit_dims(%x: tensor<2x1x16xf32>) -> tensor<16x1x2xf32> {
  %0 = colo.transpose %x permutation = [2, 1, 0] : tensor<2x1x16xf32>
  return %0 : tensor<16x1x2xf32>
}

//===----------------------------------------------------------------------===//
// slice, concat, broadcast_to
//===----------------------------------------------------------------------===//

// -----

// CHECK-LABEL: func.func @slice_full
// CHECK-SAME: (%[[X:.*]]: tensor<16x1xf32>)
// CHECK-NOT: colo.slice
// CHECK: return %[[X]]
func.func @slice_full(%x: tensor<16x1xf32>) -> tensor<16x1xf32> {
  %0 = colo.slice %x start = [0, 0] limit = [16, 1] stride = [1, 4] : tensor<16x1xf32>
  return %0 : tensor<16x1xf32>
}

// -----

// CHECK-LABEL: func.func @slice_partial
// CHECK: %[[Y:.*]] = colo.slice %{{.*}} start = [1, 0] limit = [16, 8] stride = [1, 1]
// CHECK: return %[[Y]]
func.func @slice_partial(%x: tensor<16x8xf32>) -> tensor<15x8xf32> {
  %0 = colo.slice %x start = [1, 0] limit = [16, 8] stride = [1, 1] : tensor<16x8xf32>
  return %0 : tensor<15x8xf32>
}

// -----

// CHECK-LABEL: func.func @concat_single
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NOT: colo.concat
// CHECK: return %[[X]]
func.func @concat_single(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = colo.concat %x axis = 1 : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @concat_two
// CHECK: %[[Y:.*]] = colo.concat
// CHECK: return %[[Y]]
func.func @concat_two(%x: tensor<2x3xf32>) -> tensor<2x6xf32> {
  %0 = colo.concat %x, %x axis = 1 : tensor<2x3xf32>, tensor<2x3xf32>
  return %0 : tensor<2x6xf32>
}

// -----

// Pieces empty along the axis (Phi-3's pass-through half of a rotary
// embedding over the whole head) are dropped, with the empty slice making
// them; a negative axis counts from the end.
// CHECK-LABEL: func.func @concat_empty_pieces
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[E:.*]]: tensor<2x0xf32>)
// CHECK-NOT: colo.slice
// CHECK: %[[Y:.*]] = colo.concat %[[X]], %[[X]] axis = -1 : tensor<2x3xf32>, tensor<2x3xf32>
// CHECK: return %[[X]], %[[Y]]
func.func @concat_empty_pieces(%x: tensor<2x3xf32>, %e: tensor<2x0xf32>)
    -> (tensor<2x3xf32>, tensor<2x6xf32>) {
  %s = colo.slice %x start = [0, 3] limit = [2, 3] stride = [1, 1] : tensor<2x3xf32>
  %0 = colo.concat %x, %s axis = 1 : tensor<2x3xf32>, tensor<2x0xf32>
  %1 = colo.concat %x, %e, %x axis = -1 : tensor<2x3xf32>, tensor<2x0xf32>, tensor<2x3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<2x6xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_to_identity
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>)
// CHECK-NOT: colo.broadcast_to
// CHECK: return %[[X]]
func.func @broadcast_to_identity(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = colo.broadcast_to %x : tensor<8x16xf32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_to_of_splat
// CHECK: %[[C:.*]] = colo.constant dense<2.000000e+00> : tensor<8x16xf32>
// CHECK-NOT: colo.broadcast_to
// CHECK: return %[[C]]
func.func @broadcast_to_of_splat() -> tensor<8x16xf32> {
  %c = colo.constant dense<2.0> : tensor<f32>
  %0 = colo.broadcast_to %c : tensor<f32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_to_of_value
// CHECK-SAME: (%[[X:.*]]: tensor<1x16xf32>)
// CHECK: %[[Y:.*]] = colo.broadcast_to %[[X]] : tensor<1x16xf32> -> tensor<8x16xf32>
// CHECK: return %[[Y]]
func.func @broadcast_to_of_value(%x: tensor<1x16xf32>) -> tensor<8x16xf32> {
  %0 = colo.broadcast_to %x : tensor<1x16xf32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

// Dead pure ops and duplicate constants go away.
// CHECK-LABEL: func.func @dead_and_duplicate
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK: %[[C:.*]] = colo.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NOT: colo.constant
// CHECK-NOT: colo.exp
// CHECK: %[[A:.*]] = colo.mul %[[X]], %[[C]]
// CHECK: %[[B:.*]] = colo.mul %[[A]], %[[C]]
// CHECK: return %[[B]]
func.func @dead_and_duplicate(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = colo.constant dense<2.0> : tensor<f32>
  %c1 = colo.constant dense<2.0> : tensor<f32>
  %dead = colo.exp %x : tensor<4xf32>
  %0 = colo.mul %x, %c0 : tensor<4xf32>, tensor<f32>
  %1 = colo.mul %0, %c1 : tensor<4xf32>, tensor<f32>
  return %1 : tensor<4xf32>
}
