// RUN: colo-opt %s --colo-decompose-attention | FileCheck %s

// Causal grouped-query attention: key/value heads repeated, scores scaled,
// the causal mask added as a constant, softmax over keys.
// CHECK-LABEL: func.func @gqa_causal
// CHECK-SAME: (%[[Q:.*]]: tensor<1x4x3x8xf32>, %[[K:.*]]: tensor<1x2x3x8xf32>, %[[V:.*]]: tensor<1x2x3x8xf32>)
// CHECK-DAG: %[[C:.*]] = colo.constant dense<1.250000e-01> : tensor<f32>
// CHECK-DAG: %[[M:.*]] = colo.constant dense<{{\[}}[0.000000e+00, 0xFF800000, 0xFF800000], [0.000000e+00, 0.000000e+00, 0xFF800000], [0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<3x3xf32>
// CHECK: %[[K5:.*]] = colo.reshape %[[K]] : tensor<1x2x3x8xf32> -> tensor<1x2x1x3x8xf32>
// CHECK: %[[KB:.*]] = colo.broadcast_to %[[K5]] : tensor<1x2x1x3x8xf32> -> tensor<1x2x2x3x8xf32>
// CHECK: %[[KR:.*]] = colo.reshape %[[KB]] : tensor<1x2x2x3x8xf32> -> tensor<1x4x3x8xf32>
// CHECK: %[[VR:.*]] = colo.reshape %{{.*}} : tensor<1x2x2x3x8xf32> -> tensor<1x4x3x8xf32>
// CHECK: %[[KT:.*]] = colo.transpose %[[KR]] permutation = [0, 1, 3, 2]
// CHECK: %[[S:.*]] = colo.matmul %[[Q]], %[[KT]]
// CHECK: %[[SS:.*]] = colo.mul %[[S]], %[[C]]
// CHECK: %[[SM:.*]] = colo.add %[[SS]], %[[M]]
// CHECK: %[[P:.*]] = colo.softmax %[[SM]] axis = 3
// CHECK: %[[O:.*]] = colo.matmul %[[P]], %[[VR]]
// CHECK: return %[[O]]
func.func @gqa_causal(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x3x8xf32>, %v: tensor<1x2x3x8xf32>) -> tensor<1x4x3x8xf32> {
  %o = colo.attention %q, %k, %v {causal, scale = 0.125 : f64} : tensor<1x4x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>
  return %o : tensor<1x4x3x8xf32>
}

// An additive mask and dropout are kept.
// CHECK-LABEL: func.func @masked_dropout
// CHECK: %[[SM:.*]] = colo.add %{{.*}}, %{{.*}} : tensor<2x2x4x4xf32>, tensor<2x1x1x4xf32>
// CHECK: %[[P:.*]] = colo.softmax %[[SM]] axis = 3
// CHECK: colo.dropout %[[P]] ratio = 1.000000e-01
func.func @masked_dropout(%q: tensor<2x2x4x4xf32>, %m: tensor<2x1x1x4xf32>) -> tensor<2x2x4x4xf32> {
  %o = colo.attention %q, %q, %q mask %m {scale = 0.5 : f64, dropout = 0.1 : f64} : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x1x1x4xf32>
  return %o : tensor<2x2x4x4xf32>
}

// bf16 attention (mixed precision): the products stay bf16, the scores are
// scaled, masked and normalized in f32 with the f32 mask.
// CHECK-LABEL: func.func @bf16_float_softmax
// CHECK: %[[S:.*]] = colo.matmul %{{.*}}, %{{.*}} : tensor<1x2x4x8xbf16>, tensor<1x2x8x4xbf16>
// CHECK: %[[SF:.*]] = colo.convert %[[S]] : tensor<1x2x4x4xbf16> to tensor<1x2x4x4xf32>
// CHECK: %[[SS:.*]] = colo.mul %[[SF]], %{{.*}} : tensor<1x2x4x4xf32>, tensor<f32>
// CHECK: %[[SM:.*]] = colo.add %[[SS]], %{{.*}} : tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>
// CHECK: %[[P:.*]] = colo.softmax %[[SM]] axis = 3 : tensor<1x2x4x4xf32>
// CHECK: %[[PL:.*]] = colo.convert %[[P]] : tensor<1x2x4x4xf32> to tensor<1x2x4x4xbf16>
// CHECK: colo.matmul %[[PL]], %{{.*}} : tensor<1x2x4x4xbf16>, tensor<1x2x4x8xbf16>
func.func @bf16_float_softmax(%q: tensor<1x2x4x8xbf16>, %m: tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xbf16> {
  %o = colo.attention %q, %q, %q mask %m {scale = 0.125 : f64} : tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x2x4x8xbf16>, tensor<1x1x1x4xf32>
  return %o : tensor<1x2x4x8xbf16>
}
