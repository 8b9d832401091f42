// RUN: colo-opt %s --colo-raise-layer-norm | FileCheck %s

// Decomposed layer norms as exporters spell them, raised to colo.layer_norm;
// near misses are left alone.

// torch.onnx at opsets before 17: ReduceMean, Sub, Pow, ReduceMean, Add,
// Sqrt, Div, Mul, Add.
// CHECK-LABEL: func.func @pow_div_affine
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x64xf32>, %[[W:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>)
// CHECK-NEXT: %[[Y:.*]] = colo.layer_norm %[[X]] scale %[[W]] : tensor<64xf32> bias %[[B]] : tensor<64xf32> {axis = 2 : i64, epsilon = 9.9999997473787516E-6 : f64} : tensor<2x8x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @pow_div_affine(%x: tensor<2x8x64xf32>, %w: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<2x8x64xf32> {
  %mean = colo.reduce_mean %x dims = [2] {keep_dims} : tensor<2x8x64xf32>
  %d = colo.sub %x, %mean : tensor<2x8x64xf32>, tensor<2x8x1xf32>
  %two = colo.constant dense<2.0> : tensor<f32>
  %sq = colo.pow %d, %two : tensor<2x8x64xf32>, tensor<f32>
  %var = colo.reduce_mean %sq dims = [2] {keep_dims} : tensor<2x8x64xf32>
  %eps = colo.constant dense<1.0e-05> : tensor<f32>
  %ve = colo.add %var, %eps : tensor<2x8x1xf32>, tensor<f32>
  %std = colo.sqrt %ve : tensor<2x8x1xf32>
  %n = colo.div %d, %std : tensor<2x8x64xf32>, tensor<2x8x1xf32>
  %scaled = colo.mul %n, %w : tensor<2x8x64xf32>, tensor<64xf32>
  %y = colo.add %scaled, %b : tensor<2x8x64xf32>, tensor<64xf32>
  return %y : tensor<2x8x64xf32>
}

// The square as d * d, epsilon on the left, the affine operands first, and a
// normalization over the two trailing dimensions.
// CHECK-LABEL: func.func @mul_square_two_dims
// CHECK-SAME: (%[[X:.*]]: tensor<4x16x32xf32>, %[[W:.*]]: tensor<16x32xf32>, %[[B:.*]]: tensor<16x32xf32>)
// CHECK-NEXT: %[[Y:.*]] = colo.layer_norm %[[X]] scale %[[W]] : tensor<16x32xf32> bias %[[B]] : tensor<16x32xf32> {axis = 1 : i64, epsilon = 9.9999999747524271E-7 : f64} : tensor<4x16x32xf32>
// CHECK-NEXT: return %[[Y]]
func.func @mul_square_two_dims(%x: tensor<4x16x32xf32>, %w: tensor<16x32xf32>, %b: tensor<16x32xf32>) -> tensor<4x16x32xf32> {
  %mean = colo.reduce_mean %x dims = [1, 2] {keep_dims} : tensor<4x16x32xf32>
  %d = colo.sub %x, %mean : tensor<4x16x32xf32>, tensor<4x1x1xf32>
  %sq = colo.mul %d, %d : tensor<4x16x32xf32>, tensor<4x16x32xf32>
  %var = colo.reduce_mean %sq dims = [1, 2] {keep_dims} : tensor<4x16x32xf32>
  %eps = colo.constant dense<1.0e-06> : tensor<f32>
  %ve = colo.add %eps, %var : tensor<f32>, tensor<4x1x1xf32>
  %std = colo.sqrt %ve : tensor<4x1x1xf32>
  %n = colo.div %d, %std : tensor<4x16x32xf32>, tensor<4x1x1xf32>
  %scaled = colo.mul %w, %n : tensor<16x32xf32>, tensor<4x16x32xf32>
  %y = colo.add %b, %scaled : tensor<16x32xf32>, tensor<4x16x32xf32>
  return %y : tensor<4x16x32xf32>
}

// Without the affine ops.
// CHECK-LABEL: func.func @no_affine
// CHECK-SAME: (%[[X:.*]]: tensor<8x64xf32>)
// CHECK-NEXT: %[[Y:.*]] = colo.layer_norm %[[X]] {axis = 1 : i64, epsilon = 9.9999997473787516E-6 : f64} : tensor<8x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @no_affine(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %mean = colo.reduce_mean %x dims = [1] {keep_dims} : tensor<8x64xf32>
  %d = colo.sub %x, %mean : tensor<8x64xf32>, tensor<8x1xf32>
  %two = colo.constant dense<2.0> : tensor<f32>
  %sq = colo.pow %d, %two : tensor<8x64xf32>, tensor<f32>
  %var = colo.reduce_mean %sq dims = [1] {keep_dims} : tensor<8x64xf32>
  %eps = colo.constant dense<1.0e-05> : tensor<f32>
  %ve = colo.add %var, %eps : tensor<8x1xf32>, tensor<f32>
  %std = colo.sqrt %ve : tensor<8x1xf32>
  %n = colo.div %d, %std : tensor<8x64xf32>, tensor<8x1xf32>
  return %n : tensor<8x64xf32>
}

// Only a scale follows.
// CHECK-LABEL: func.func @scale_only
// CHECK-SAME: (%[[X:.*]]: tensor<8x64xf32>, %[[W:.*]]: tensor<64xf32>)
// CHECK-NEXT: %[[Y:.*]] = colo.layer_norm %[[X]] scale %[[W]] : tensor<64xf32> {axis = 1 : i64, epsilon = 9.9999997473787516E-6 : f64} : tensor<8x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @scale_only(%x: tensor<8x64xf32>, %w: tensor<64xf32>) -> tensor<8x64xf32> {
  %mean = colo.reduce_mean %x dims = [1] {keep_dims} : tensor<8x64xf32>
  %d = colo.sub %x, %mean : tensor<8x64xf32>, tensor<8x1xf32>
  %sq = colo.mul %d, %d : tensor<8x64xf32>, tensor<8x64xf32>
  %var = colo.reduce_mean %sq dims = [1] {keep_dims} : tensor<8x64xf32>
  %eps = colo.constant dense<1.0e-05> : tensor<f32>
  %ve = colo.add %var, %eps : tensor<8x1xf32>, tensor<f32>
  %std = colo.sqrt %ve : tensor<8x1xf32>
  %n = colo.div %d, %std : tensor<8x64xf32>, tensor<8x1xf32>
  %y = colo.mul %n, %w : tensor<8x64xf32>, tensor<64xf32>
  return %y : tensor<8x64xf32>
}

// Multiplication by the inverse standard deviation, in each spelling of it.
// CHECK-LABEL: func.func @mul_inverse_std
// CHECK-SAME: (%[[X:.*]]: tensor<8x64xf32>)
// CHECK-NEXT: %[[R:.*]] = colo.layer_norm %[[X]] {axis = 1 : i64, epsilon = 9.9999997473787516E-6 : f64} : tensor<8x64xf32>
// CHECK-NEXT: %[[Q:.*]] = colo.layer_norm %[[X]] {axis = 1 : i64, epsilon = 9.9999997473787516E-6 : f64} : tensor<8x64xf32>
// CHECK-NEXT: %[[D:.*]] = colo.layer_norm %[[X]] {axis = 1 : i64, epsilon = 9.9999997473787516E-6 : f64} : tensor<8x64xf32>
// CHECK-NEXT: return %[[R]], %[[Q]], %[[D]]
func.func @mul_inverse_std(%x: tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>) {
  %mean = colo.reduce_mean %x dims = [1] {keep_dims} : tensor<8x64xf32>
  %d = colo.sub %x, %mean : tensor<8x64xf32>, tensor<8x1xf32>
  %sq = colo.mul %d, %d : tensor<8x64xf32>, tensor<8x64xf32>
  %var = colo.reduce_mean %sq dims = [1] {keep_dims} : tensor<8x64xf32>
  %eps = colo.constant dense<1.0e-05> : tensor<f32>
  %ve = colo.add %var, %eps : tensor<8x1xf32>, tensor<f32>
  %rsqrt = colo.rsqrt %ve : tensor<8x1xf32>
  %a = colo.mul %d, %rsqrt : tensor<8x64xf32>, tensor<8x1xf32>
  %std = colo.sqrt %ve : tensor<8x1xf32>
  %recip = colo.reciprocal %std : tensor<8x1xf32>
  %b = colo.mul %recip, %d : tensor<8x1xf32>, tensor<8x64xf32>
  %one = colo.constant dense<1.0> : tensor<f32>
  %inv = colo.div %one, %std : tensor<f32>, tensor<8x1xf32>
  %c = colo.mul %d, %inv : tensor<8x64xf32>, tensor<8x1xf32>
  return %a, %b, %c : tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>
}

// A layer norm with a negative axis absorbs the bias that follows.
// CHECK-LABEL: func.func @absorb_bias_negative_axis
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x64xf32>, %[[W:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>)
// CHECK-NEXT: %[[Y:.*]] = colo.layer_norm %[[X]] scale %[[W]] : tensor<64xf32> bias %[[B]] : tensor<64xf32> {axis = -1 : i64, epsilon = 1.000000e-05 : f64} : tensor<2x8x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @absorb_bias_negative_axis(%x: tensor<2x8x64xf32>, %w: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<2x8x64xf32> {
  %n = colo.layer_norm %x scale %w : tensor<64xf32> {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x8x64xf32>
  %y = colo.add %n, %b : tensor<2x8x64xf32>, tensor<64xf32>
  return %y : tensor<2x8x64xf32>
}

//===----------------------------------------------------------------------===//
// Left alone
//===----------------------------------------------------------------------===//

// Epsilon added after the square root: sqrt(var) + eps.
// CHECK-LABEL: func.func @epsilon_outside_sqrt
// CHECK-NOT: colo.layer_norm
// CHECK: %[[N:.*]] = colo.div
// CHECK: return %[[N]]
func.func @epsilon_outside_sqrt(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %mean = colo.reduce_mean %x dims = [1] {keep_dims} : tensor<8x64xf32>
  %d = colo.sub %x, %mean : tensor<8x64xf32>, tensor<8x1xf32>
  %sq = colo.mul %d, %d : tensor<8x64xf32>, tensor<8x64xf32>
  %var = colo.reduce_mean %sq dims = [1] {keep_dims} : tensor<8x64xf32>
  %std = colo.sqrt %var : tensor<8x1xf32>
  %eps = colo.constant dense<1.0e-05> : tensor<f32>
  %se = colo.add %std, %eps : tensor<8x1xf32>, tensor<f32>
  %n = colo.div %d, %se : tensor<8x64xf32>, tensor<8x1xf32>
  return %n : tensor<8x64xf32>
}

// Statistics over a leading dimension (batch norm like), not the trailing ones.
// CHECK-LABEL: func.func @non_trailing_dim
// CHECK-NOT: colo.layer_norm
// CHECK: %[[N:.*]] = colo.div
// CHECK: return %[[N]]
func.func @non_trailing_dim(%x: tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
  %mean = colo.reduce_mean %x dims = [1] {keep_dims} : tensor<2x8x64xf32>
  %d = colo.sub %x, %mean : tensor<2x8x64xf32>, tensor<2x1x64xf32>
  %sq = colo.mul %d, %d : tensor<2x8x64xf32>, tensor<2x8x64xf32>
  %var = colo.reduce_mean %sq dims = [1] {keep_dims} : tensor<2x8x64xf32>
  %eps = colo.constant dense<1.0e-05> : tensor<f32>
  %ve = colo.add %var, %eps : tensor<2x1x64xf32>, tensor<f32>
  %std = colo.sqrt %ve : tensor<2x1x64xf32>
  %n = colo.div %d, %std : tensor<2x8x64xf32>, tensor<2x1x64xf32>
  return %n : tensor<2x8x64xf32>
}

// The variance is taken over more dimensions than the mean.
// CHECK-LABEL: func.func @variance_over_other_dims
// CHECK-NOT: colo.layer_norm
// CHECK: %[[N:.*]] = colo.div
// CHECK: return %[[N]]
func.func @variance_over_other_dims(%x: tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
  %mean = colo.reduce_mean %x dims = [2] {keep_dims} : tensor<2x8x64xf32>
  %d = colo.sub %x, %mean : tensor<2x8x64xf32>, tensor<2x8x1xf32>
  %sq = colo.mul %d, %d : tensor<2x8x64xf32>, tensor<2x8x64xf32>
  %var = colo.reduce_mean %sq dims = [1, 2] {keep_dims} : tensor<2x8x64xf32>
  %eps = colo.constant dense<1.0e-05> : tensor<f32>
  %ve = colo.add %var, %eps : tensor<2x1x1xf32>, tensor<f32>
  %std = colo.sqrt %ve : tensor<2x1x1xf32>
  %n = colo.div %d, %std : tensor<2x8x64xf32>, tensor<2x1x1xf32>
  return %n : tensor<2x8x64xf32>
}

// The variance of x itself (an RMS norm of the centered value), not of x - mean.
// CHECK-LABEL: func.func @variance_of_other_value
// CHECK-NOT: colo.layer_norm
// CHECK: %[[N:.*]] = colo.div
// CHECK: return %[[N]]
func.func @variance_of_other_value(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %mean = colo.reduce_mean %x dims = [1] {keep_dims} : tensor<8x64xf32>
  %d = colo.sub %x, %mean : tensor<8x64xf32>, tensor<8x1xf32>
  %sq = colo.mul %x, %x : tensor<8x64xf32>, tensor<8x64xf32>
  %var = colo.reduce_mean %sq dims = [1] {keep_dims} : tensor<8x64xf32>
  %eps = colo.constant dense<1.0e-05> : tensor<f32>
  %ve = colo.add %var, %eps : tensor<8x1xf32>, tensor<f32>
  %std = colo.sqrt %ve : tensor<8x1xf32>
  %n = colo.div %d, %std : tensor<8x64xf32>, tensor<8x1xf32>
  return %n : tensor<8x64xf32>
}

// The power is not a square.
// CHECK-LABEL: func.func @cube
// CHECK-NOT: colo.layer_norm
// CHECK: %[[N:.*]] = colo.div
// CHECK: return %[[N]]
func.func @cube(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %mean = colo.reduce_mean %x dims = [1] {keep_dims} : tensor<8x64xf32>
  %d = colo.sub %x, %mean : tensor<8x64xf32>, tensor<8x1xf32>
  %three = colo.constant dense<3.0> : tensor<f32>
  %sq = colo.pow %d, %three : tensor<8x64xf32>, tensor<f32>
  %var = colo.reduce_mean %sq dims = [1] {keep_dims} : tensor<8x64xf32>
  %eps = colo.constant dense<1.0e-05> : tensor<f32>
  %ve = colo.add %var, %eps : tensor<8x1xf32>, tensor<f32>
  %std = colo.sqrt %ve : tensor<8x1xf32>
  %n = colo.div %d, %std : tensor<8x64xf32>, tensor<8x1xf32>
  return %n : tensor<8x64xf32>
}

// A bias without a scale would need a ones scale: the add stays.
// CHECK-LABEL: func.func @bias_without_scale
// CHECK-SAME: (%[[X:.*]]: tensor<8x64xf32>, %[[B:.*]]: tensor<64xf32>)
// CHECK: %[[N:.*]] = colo.layer_norm %[[X]] {axis = 1 : i64, epsilon = 9.9999997473787516E-6 : f64} : tensor<8x64xf32>
// CHECK-NEXT: %[[Y:.*]] = colo.add %[[N]], %[[B]]
// CHECK-NEXT: return %[[Y]]
func.func @bias_without_scale(%x: tensor<8x64xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {
  %mean = colo.reduce_mean %x dims = [1] {keep_dims} : tensor<8x64xf32>
  %d = colo.sub %x, %mean : tensor<8x64xf32>, tensor<8x1xf32>
  %sq = colo.mul %d, %d : tensor<8x64xf32>, tensor<8x64xf32>
  %var = colo.reduce_mean %sq dims = [1] {keep_dims} : tensor<8x64xf32>
  %eps = colo.constant dense<1.0e-05> : tensor<f32>
  %ve = colo.add %var, %eps : tensor<8x1xf32>, tensor<f32>
  %std = colo.sqrt %ve : tensor<8x1xf32>
  %n = colo.div %d, %std : tensor<8x64xf32>, tensor<8x1xf32>
  %y = colo.add %n, %b : tensor<8x64xf32>, tensor<64xf32>
  return %y : tensor<8x64xf32>
}

// A scale that is not of the normalized shape (per row) is not absorbed, nor
// is one of a normalized value that has another user.
// CHECK-LABEL: func.func @scale_not_absorbed
// CHECK-SAME: (%[[X:.*]]: tensor<8x64xf32>, %[[S:.*]]: tensor<8x1xf32>, %[[W:.*]]: tensor<64xf32>)
// CHECK: %[[N:.*]] = colo.layer_norm %[[X]] {axis = 1 : i64, epsilon = 9.9999997473787516E-6 : f64} : tensor<8x64xf32>
// CHECK-NEXT: %[[A:.*]] = colo.mul %[[N]], %[[S]]
// CHECK-NEXT: %[[B:.*]] = colo.mul %[[N]], %[[W]]
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @scale_not_absorbed(%x: tensor<8x64xf32>, %s: tensor<8x1xf32>, %w: tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %mean = colo.reduce_mean %x dims = [1] {keep_dims} : tensor<8x64xf32>
  %d = colo.sub %x, %mean : tensor<8x64xf32>, tensor<8x1xf32>
  %sq = colo.mul %d, %d : tensor<8x64xf32>, tensor<8x64xf32>
  %var = colo.reduce_mean %sq dims = [1] {keep_dims} : tensor<8x64xf32>
  %eps = colo.constant dense<1.0e-05> : tensor<f32>
  %ve = colo.add %var, %eps : tensor<8x1xf32>, tensor<f32>
  %std = colo.sqrt %ve : tensor<8x1xf32>
  %n = colo.div %d, %std : tensor<8x64xf32>, tensor<8x1xf32>
  %a = colo.mul %n, %s : tensor<8x64xf32>, tensor<8x1xf32>
  %b = colo.mul %n, %w : tensor<8x64xf32>, tensor<64xf32>
  return %a, %b : tensor<8x64xf32>, tensor<8x64xf32>
}
