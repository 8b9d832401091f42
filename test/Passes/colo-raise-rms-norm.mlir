// RUN: colo-opt %s --colo-raise-rms-norm | FileCheck %s

// Decomposed RMS norms as exporters spell them, raised to colo.rms_norm;
// near misses are left alone.

// Llama's RMSNorm through torch.onnx: Pow, ReduceMean, Add, Sqrt,
// Reciprocal, Mul, then the weight first: `weight * hidden_states`.
// CHECK-LABEL: func.func @llama
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x64xf32>, %[[W:.*]]: tensor<64xf32>)
// CHECK-NEXT: %[[Y:.*]] = colo.rms_norm %[[X]] scale %[[W]] : tensor<64xf32> {axis = 2 : i64, epsilon = 9.9999999747524271E-7 : f64} : tensor<2x16x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @llama(%x: tensor<2x16x64xf32>, %w: tensor<64xf32>) -> tensor<2x16x64xf32> {
  %two = colo.constant dense<2.0> : tensor<f32>
  %sq = colo.pow %x, %two : tensor<2x16x64xf32>, tensor<f32>
  %ms = colo.reduce_mean %sq dims = [2] {keep_dims} : tensor<2x16x64xf32>
  %eps = colo.constant dense<1.0e-06> : tensor<f32>
  %mse = colo.add %ms, %eps : tensor<2x16x1xf32>, tensor<f32>
  %rms = colo.sqrt %mse : tensor<2x16x1xf32>
  %inv = colo.reciprocal %rms : tensor<2x16x1xf32>
  %n = colo.mul %x, %inv : tensor<2x16x64xf32>, tensor<2x16x1xf32>
  %y = colo.mul %w, %n : tensor<64xf32>, tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// rsqrt, the factors swapped, epsilon first and no scale.
// CHECK-LABEL: func.func @rsqrt
// CHECK-SAME: (%[[X:.*]]: tensor<16x64xf32>)
// CHECK-NEXT: %[[Y:.*]] = colo.rms_norm %[[X]] {axis = 1 : i64, epsilon = 9.9999997473787516E-6 : f64} : tensor<16x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @rsqrt(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %two = colo.constant dense<2.0> : tensor<f32>
  %sq = colo.pow %x, %two : tensor<16x64xf32>, tensor<f32>
  %ms = colo.reduce_mean %sq dims = [1] {keep_dims} : tensor<16x64xf32>
  %eps = colo.constant dense<1.0e-05> : tensor<f32>
  %mse = colo.add %eps, %ms : tensor<f32>, tensor<16x1xf32>
  %inv = colo.rsqrt %mse : tensor<16x1xf32>
  %n = colo.mul %inv, %x : tensor<16x1xf32>, tensor<16x64xf32>
  return %n : tensor<16x64xf32>
}

// 1 / sqrt, with the square as x * x and the scale last.
// CHECK-LABEL: func.func @one_over_sqrt
// CHECK-SAME: (%[[X:.*]]: tensor<16x64xf32>, %[[W:.*]]: tensor<64xf32>)
// CHECK-NEXT: %[[Y:.*]] = colo.rms_norm %[[X]] scale %[[W]] : tensor<64xf32> {axis = 1 : i64, epsilon = 9.9999999747524271E-7 : f64} : tensor<16x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @one_over_sqrt(%x: tensor<16x64xf32>, %w: tensor<64xf32>) -> tensor<16x64xf32> {
  %sq = colo.mul %x, %x : tensor<16x64xf32>, tensor<16x64xf32>
  %ms = colo.reduce_mean %sq dims = [1] {keep_dims} : tensor<16x64xf32>
  %eps = colo.constant dense<1.0e-06> : tensor<f32>
  %mse = colo.add %ms, %eps : tensor<16x1xf32>, tensor<f32>
  %rms = colo.sqrt %mse : tensor<16x1xf32>
  %one = colo.constant dense<1.0> : tensor<f32>
  %inv = colo.div %one, %rms : tensor<f32>, tensor<16x1xf32>
  %n = colo.mul %x, %inv : tensor<16x64xf32>, tensor<16x1xf32>
  %y = colo.mul %n, %w : tensor<16x64xf32>, tensor<64xf32>
  return %y : tensor<16x64xf32>
}

// Over the two trailing dimensions.
// CHECK-LABEL: func.func @two_dims
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x64xbf16>, %[[W:.*]]: tensor<8x64xbf16>)
// CHECK-NEXT: %[[Y:.*]] = colo.rms_norm %[[X]] scale %[[W]] : tensor<8x64xbf16> {axis = 1 : i64, epsilon = 1.0013580322265625E-5 : f64} : tensor<2x8x64xbf16>
// CHECK-NEXT: return %[[Y]]
func.func @two_dims(%x: tensor<2x8x64xbf16>, %w: tensor<8x64xbf16>) -> tensor<2x8x64xbf16> {
  %two = colo.constant dense<2.0> : tensor<bf16>
  %sq = colo.pow %x, %two : tensor<2x8x64xbf16>, tensor<bf16>
  %ms = colo.reduce_mean %sq dims = [1, 2] {keep_dims} : tensor<2x8x64xbf16>
  %eps = colo.constant dense<1.0e-05> : tensor<bf16>
  %mse = colo.add %ms, %eps : tensor<2x1x1xbf16>, tensor<bf16>
  %inv = colo.rsqrt %mse : tensor<2x1x1xbf16>
  %n = colo.mul %x, %inv : tensor<2x8x64xbf16>, tensor<2x1x1xbf16>
  %y = colo.mul %n, %w : tensor<2x8x64xbf16>, tensor<8x64xbf16>
  return %y : tensor<2x8x64xbf16>
}

// An RMS norm with a negative axis absorbs the scale that follows.
// CHECK-LABEL: func.func @absorb_scale_negative_axis
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x64xf32>, %[[W:.*]]: tensor<64xf32>)
// CHECK-NEXT: %[[Y:.*]] = colo.rms_norm %[[X]] scale %[[W]] : tensor<64xf32> {axis = -1 : i64, epsilon = 1.000000e-05 : f64} : tensor<2x16x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @absorb_scale_negative_axis(%x: tensor<2x16x64xf32>, %w: tensor<64xf32>) -> tensor<2x16x64xf32> {
  %n = colo.rms_norm %x {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x16x64xf32>
  %y = colo.mul %n, %w : tensor<2x16x64xf32>, tensor<64xf32>
  return %y : tensor<2x16x64xf32>
}

//===----------------------------------------------------------------------===//
// Left alone
//===----------------------------------------------------------------------===//

// Epsilon added after the square root: 1 / (sqrt(mean(x^2)) + eps).
// CHECK-LABEL: func.func @epsilon_outside_sqrt
// CHECK-NOT: colo.rms_norm
// CHECK: %[[N:.*]] = colo.mul
// CHECK: return %[[N]]
func.func @epsilon_outside_sqrt(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %two = colo.constant dense<2.0> : tensor<f32>
  %sq = colo.pow %x, %two : tensor<16x64xf32>, tensor<f32>
  %ms = colo.reduce_mean %sq dims = [1] {keep_dims} : tensor<16x64xf32>
  %rms = colo.sqrt %ms : tensor<16x1xf32>
  %eps = colo.constant dense<1.0e-06> : tensor<f32>
  %rmse = colo.add %rms, %eps : tensor<16x1xf32>, tensor<f32>
  %inv = colo.reciprocal %rmse : tensor<16x1xf32>
  %n = colo.mul %x, %inv : tensor<16x64xf32>, tensor<16x1xf32>
  return %n : tensor<16x64xf32>
}

// The mean over a leading dimension.
// CHECK-LABEL: func.func @non_trailing_dim
// CHECK-NOT: colo.rms_norm
// CHECK: %[[N:.*]] = colo.mul
// CHECK: return %[[N]]
func.func @non_trailing_dim(%x: tensor<2x16x64xf32>) -> tensor<2x16x64xf32> {
  %two = colo.constant dense<2.0> : tensor<f32>
  %sq = colo.pow %x, %two : tensor<2x16x64xf32>, tensor<f32>
  %ms = colo.reduce_mean %sq dims = [1] {keep_dims} : tensor<2x16x64xf32>
  %eps = colo.constant dense<1.0e-06> : tensor<f32>
  %mse = colo.add %ms, %eps : tensor<2x1x64xf32>, tensor<f32>
  %inv = colo.rsqrt %mse : tensor<2x1x64xf32>
  %n = colo.mul %x, %inv : tensor<2x16x64xf32>, tensor<2x1x64xf32>
  return %n : tensor<2x16x64xf32>
}

// The normalized value is not the one squared.
// CHECK-LABEL: func.func @other_value
// CHECK-NOT: colo.rms_norm
// CHECK: %[[N:.*]] = colo.mul
// CHECK: return %[[N]]
func.func @other_value(%x: tensor<16x64xf32>, %z: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %two = colo.constant dense<2.0> : tensor<f32>
  %sq = colo.pow %x, %two : tensor<16x64xf32>, tensor<f32>
  %ms = colo.reduce_mean %sq dims = [1] {keep_dims} : tensor<16x64xf32>
  %eps = colo.constant dense<1.0e-06> : tensor<f32>
  %mse = colo.add %ms, %eps : tensor<16x1xf32>, tensor<f32>
  %inv = colo.rsqrt %mse : tensor<16x1xf32>
  %n = colo.mul %z, %inv : tensor<16x64xf32>, tensor<16x1xf32>
  return %n : tensor<16x64xf32>
}

// sqrt without the reciprocal: x * sqrt(mean(x^2) + eps).
// CHECK-LABEL: func.func @not_inverted
// CHECK-NOT: colo.rms_norm
// CHECK: %[[N:.*]] = colo.mul
// CHECK: return %[[N]]
func.func @not_inverted(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %two = colo.constant dense<2.0> : tensor<f32>
  %sq = colo.pow %x, %two : tensor<16x64xf32>, tensor<f32>
  %ms = colo.reduce_mean %sq dims = [1] {keep_dims} : tensor<16x64xf32>
  %eps = colo.constant dense<1.0e-06> : tensor<f32>
  %mse = colo.add %ms, %eps : tensor<16x1xf32>, tensor<f32>
  %rms = colo.sqrt %mse : tensor<16x1xf32>
  %n = colo.mul %x, %rms : tensor<16x64xf32>, tensor<16x1xf32>
  return %n : tensor<16x64xf32>
}

// A per-row scale is not of the normalized shape: the multiplication stays.
// CHECK-LABEL: func.func @scale_not_normalized_shape
// CHECK-SAME: (%[[X:.*]]: tensor<16x64xf32>, %[[S:.*]]: tensor<16x1xf32>)
// CHECK: %[[N:.*]] = colo.rms_norm %[[X]] {axis = 1 : i64, epsilon = 9.9999999747524271E-7 : f64} : tensor<16x64xf32>
// CHECK-NEXT: %[[Y:.*]] = colo.mul %[[N]], %[[S]]
// CHECK-NEXT: return %[[Y]]
func.func @scale_not_normalized_shape(%x: tensor<16x64xf32>, %s: tensor<16x1xf32>) -> tensor<16x64xf32> {
  %two = colo.constant dense<2.0> : tensor<f32>
  %sq = colo.pow %x, %two : tensor<16x64xf32>, tensor<f32>
  %ms = colo.reduce_mean %sq dims = [1] {keep_dims} : tensor<16x64xf32>
  %eps = colo.constant dense<1.0e-06> : tensor<f32>
  %mse = colo.add %ms, %eps : tensor<16x1xf32>, tensor<f32>
  %inv = colo.rsqrt %mse : tensor<16x1xf32>
  %n = colo.mul %x, %inv : tensor<16x64xf32>, tensor<16x1xf32>
  %y = colo.mul %n, %s : tensor<16x64xf32>, tensor<16x1xf32>
  return %y : tensor<16x64xf32>
}
