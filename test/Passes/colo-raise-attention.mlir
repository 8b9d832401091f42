// RUN: colo-opt %s --colo-raise-attention | FileCheck %s

// Attention as the PyTorch ONNX exporters decompose it, raised to
// colo.attention; near misses are left alone.

// The dynamo exporter (GPT-2): q and k each scaled by sqrt(scale), k
// transposed through a [b*h, t, d] round trip, GPT-2's causal bias (0 and -inf)
// added; the mask becomes `causal`.
// CHECK-LABEL: func.func @dynamo_causal
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x4x8xf32>, %[[K:.*]]: tensor<2x4x4x8xf32>, %[[V:.*]]: tensor<2x4x4x8xf32>)
// CHECK-NEXT: %[[O:.*]] = colo.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.500000e-01 : f64} : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>
// CHECK-NEXT: return %[[O]]
func.func @dynamo_causal(%q: tensor<2x4x4x8xf32>, %k: tensor<2x4x4x8xf32>, %v: tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %bias = colo.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000],
                               [0.0, 0.0, 0xFF800000, 0xFF800000],
                               [0.0, 0.0, 0.0, 0xFF800000],
                               [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %c = colo.constant dense<0.5> : tensor<1xf32>
  %k3 = colo.reshape %k : tensor<2x4x4x8xf32> -> tensor<8x4x8xf32>
  %kt3 = colo.transpose %k3 permutation = [0, 2, 1] : tensor<8x4x8xf32>
  %kt = colo.reshape %kt3 : tensor<8x8x4xf32> -> tensor<2x4x8x4xf32>
  %qs = colo.mul %q, %c : tensor<2x4x4x8xf32>, tensor<1xf32>
  %ks = colo.mul %kt, %c : tensor<2x4x8x4xf32>, tensor<1xf32>
  %s = colo.matmul %qs, %ks : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %m = colo.add %s, %bias : tensor<2x4x4x4xf32>, tensor<4x4xf32>
  %p = colo.softmax %m axis = 3 : tensor<2x4x4x4xf32>
  %o = colo.matmul %p, %v : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// The TorchScript exporter: k transposed with [0, 2, 3, 1] straight from the
// [b, s, h, d] tensor before the head split, the scale on the scores.
// CHECK-LABEL: func.func @torchscript_pre_split_key
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x4x8xf32>, %[[X:.*]]: tensor<2x4x32xf32>, %[[V:.*]]: tensor<2x4x4x8xf32>)
// CHECK-NEXT: %[[R:.*]] = colo.reshape %[[X]] : tensor<2x4x32xf32> -> tensor<2x4x4x8xf32>
// CHECK-NEXT: %[[K:.*]] = colo.transpose %[[R]] permutation = [0, 2, 1, 3] : tensor<2x4x4x8xf32>
// CHECK-NEXT: %[[O:.*]] = colo.attention %[[Q]], %[[K]], %[[V]] {scale = 1.250000e-01 : f64} : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>
// CHECK-NEXT: return %[[O]]
func.func @torchscript_pre_split_key(%q: tensor<2x4x4x8xf32>, %x: tensor<2x4x32xf32>, %v: tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %r = colo.reshape %x : tensor<2x4x32xf32> -> tensor<2x4x4x8xf32>
  %kt = colo.transpose %r permutation = [0, 2, 3, 1] : tensor<2x4x4x8xf32>
  %s = colo.matmul %q, %kt : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %c = colo.constant dense<0.125> : tensor<f32>
  %ss = colo.mul %c, %s : tensor<f32>, tensor<2x4x4x4xf32>
  %p = colo.softmax %ss axis = -1 : tensor<2x4x4x4xf32>
  %o = colo.matmul %p, %v : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// matmul(q, transpose(k, [0, 1, 3, 2])) / c.
// CHECK-LABEL: func.func @div_scale
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x4x8xf32>, %[[K:.*]]: tensor<2x4x4x8xf32>, %[[V:.*]]: tensor<2x4x4x8xf32>)
// CHECK-NEXT: %[[O:.*]] = colo.attention %[[Q]], %[[K]], %[[V]] {scale = 5.000000e-01 : f64}
// CHECK-NEXT: return %[[O]]
func.func @div_scale(%q: tensor<2x4x4x8xf32>, %k: tensor<2x4x4x8xf32>, %v: tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %kt = colo.transpose %k permutation = [0, 1, 3, 2] : tensor<2x4x4x8xf32>
  %s = colo.matmul %q, %kt : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %c = colo.constant dense<2.0> : tensor<f32>
  %ss = colo.div %s, %c : tensor<2x4x4x4xf32>, tensor<f32>
  %p = colo.softmax %ss axis = 3 : tensor<2x4x4x4xf32>
  %o = colo.matmul %p, %v : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// The scale folded into the query projection: scale 1.
// CHECK-LABEL: func.func @no_scale
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x4x8xf32>, %[[K:.*]]: tensor<2x4x4x8xf32>, %[[V:.*]]: tensor<2x4x4x16xf32>)
// CHECK-NEXT: %[[O:.*]] = colo.attention %[[Q]], %[[K]], %[[V]] {scale = 1.000000e+00 : f64} : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x16xf32>
// CHECK-NEXT: return %[[O]] : tensor<2x4x4x16xf32>
func.func @no_scale(%q: tensor<2x4x4x8xf32>, %k: tensor<2x4x4x8xf32>, %v: tensor<2x4x4x16xf32>) -> tensor<2x4x4x16xf32> {
  %kt = colo.transpose %k permutation = [0, 1, 3, 2] : tensor<2x4x4x8xf32>
  %s = colo.matmul %q, %kt : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %p = colo.softmax %s axis = 3 : tensor<2x4x4x4xf32>
  %o = colo.matmul %p, %v : tensor<2x4x4x4xf32>, tensor<2x4x4x16xf32>
  return %o : tensor<2x4x4x16xf32>
}

// nn.MultiheadAttention (ViT, TransformerEncoder) under dynamo: heads split
// from a [t, b*h, d] tensor, k transposed with [1, 2, 0] and reshaped to
// [b, h, d, t]; k is that tensor transposed with [1, 0, 2] instead.
// CHECK-LABEL: func.func @sequence_first_key
// CHECK-SAME: (%[[Q:.*]]: tensor<2x2x5x8xf32>, %[[X:.*]]: tensor<5x4x8xf32>, %[[V:.*]]: tensor<2x2x5x8xf32>)
// CHECK-NEXT: %[[T:.*]] = colo.transpose %[[X]] permutation = [1, 0, 2] : tensor<5x4x8xf32>
// CHECK-NEXT: %[[K:.*]] = colo.reshape %[[T]] : tensor<4x5x8xf32> -> tensor<2x2x5x8xf32>
// CHECK-NEXT: %[[O:.*]] = colo.attention %[[Q]], %[[K]], %[[V]] {scale = 2.500000e-01 : f64} : tensor<2x2x5x8xf32>, tensor<2x2x5x8xf32>, tensor<2x2x5x8xf32>
// CHECK-NEXT: return %[[O]]
func.func @sequence_first_key(%q: tensor<2x2x5x8xf32>, %x: tensor<5x4x8xf32>, %v: tensor<2x2x5x8xf32>) -> tensor<2x2x5x8xf32> {
  %c = colo.constant dense<0.5> : tensor<1xf32>
  %t = colo.transpose %x permutation = [1, 2, 0] : tensor<5x4x8xf32>
  %kt = colo.reshape %t : tensor<4x8x5xf32> -> tensor<2x2x8x5xf32>
  %qs = colo.mul %q, %c : tensor<2x2x5x8xf32>, tensor<1xf32>
  %ks = colo.mul %kt, %c : tensor<2x2x8x5xf32>, tensor<1xf32>
  %s = colo.matmul %qs, %ks : tensor<2x2x5x8xf32>, tensor<2x2x8x5xf32>
  %p = colo.softmax %s axis = 3 : tensor<2x2x5x5xf32>
  %o = colo.matmul %p, %v : tensor<2x2x5x5xf32>, tensor<2x2x5x8xf32>
  return %o : tensor<2x2x5x8xf32>
}

// Llama under TorchScript: repeat_kv on k and v (2 key/value heads for 4
// query heads) is peeled off, k transposed with [0, 1, 3, 2].
// CHECK-LABEL: func.func @gqa_repeat_kv
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x4x8xf32>, %[[K:.*]]: tensor<2x2x4x8xf32>, %[[V:.*]]: tensor<2x2x4x8xf32>)
// CHECK-NEXT: %[[O:.*]] = colo.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.500000e-01 : f64} : tensor<2x4x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>
// CHECK-NEXT: return %[[O]]
func.func @gqa_repeat_kv(%q: tensor<2x4x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %bias = colo.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000],
                               [0.0, 0.0, 0xFF800000, 0xFF800000],
                               [0.0, 0.0, 0.0, 0xFF800000],
                               [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %c = colo.constant dense<0.5> : tensor<f32>
  %k5 = colo.reshape %k : tensor<2x2x4x8xf32> -> tensor<2x2x1x4x8xf32>
  %kb = colo.broadcast_to %k5 : tensor<2x2x1x4x8xf32> -> tensor<2x2x2x4x8xf32>
  %kr = colo.reshape %kb : tensor<2x2x2x4x8xf32> -> tensor<2x4x4x8xf32>
  %v5 = colo.reshape %v : tensor<2x2x4x8xf32> -> tensor<2x2x1x4x8xf32>
  %vb = colo.broadcast_to %v5 : tensor<2x2x1x4x8xf32> -> tensor<2x2x2x4x8xf32>
  %vr = colo.reshape %vb : tensor<2x2x2x4x8xf32> -> tensor<2x4x4x8xf32>
  %kt = colo.transpose %kr permutation = [0, 1, 3, 2] : tensor<2x4x4x8xf32>
  %qs = colo.mul %q, %c : tensor<2x4x4x8xf32>, tensor<f32>
  %ks = colo.mul %kt, %c : tensor<2x4x8x4xf32>, tensor<f32>
  %s = colo.matmul %qs, %ks : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %m = colo.add %s, %bias : tensor<2x4x4x4xf32>, tensor<4x4xf32>
  %p = colo.softmax %m axis = 3 : tensor<2x4x4x4xf32>
  %o = colo.matmul %p, %vr : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// Llama under dynamo: the repeated k goes from [b, hkv, n, t, d] straight to
// [b*h, t, d] for the transpose.
// CHECK-LABEL: func.func @gqa_repeat_kv_rank3
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x4x8xf32>, %[[K:.*]]: tensor<2x2x4x8xf32>, %[[V:.*]]: tensor<2x2x4x8xf32>)
// CHECK-NEXT: %[[O:.*]] = colo.attention %[[Q]], %[[K]], %[[V]] {scale = 2.500000e-01 : f64} : tensor<2x4x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>
// CHECK-NEXT: return %[[O]]
func.func @gqa_repeat_kv_rank3(%q: tensor<2x4x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x2x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %c = colo.constant dense<0.5> : tensor<f32>
  %k5 = colo.reshape %k : tensor<2x2x4x8xf32> -> tensor<2x2x1x4x8xf32>
  %kb = colo.broadcast_to %k5 : tensor<2x2x1x4x8xf32> -> tensor<2x2x2x4x8xf32>
  %v5 = colo.reshape %v : tensor<2x2x4x8xf32> -> tensor<2x2x1x4x8xf32>
  %vb = colo.broadcast_to %v5 : tensor<2x2x1x4x8xf32> -> tensor<2x2x2x4x8xf32>
  %vr = colo.reshape %vb : tensor<2x2x2x4x8xf32> -> tensor<2x4x4x8xf32>
  %k3 = colo.reshape %kb : tensor<2x2x2x4x8xf32> -> tensor<8x4x8xf32>
  %kt3 = colo.transpose %k3 permutation = [0, 2, 1] : tensor<8x4x8xf32>
  %kt = colo.reshape %kt3 : tensor<8x8x4xf32> -> tensor<2x4x8x4xf32>
  %qs = colo.mul %q, %c : tensor<2x4x4x8xf32>, tensor<f32>
  %ks = colo.mul %kt, %c : tensor<2x4x8x4xf32>, tensor<f32>
  %s = colo.matmul %qs, %ks : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %p = colo.softmax %s axis = 3 : tensor<2x4x4x4xf32>
  %o = colo.matmul %p, %vr : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// Multi-query attention: one key/value head broadcast to every query head.
// CHECK-LABEL: func.func @multi_query
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x4x8xf32>, %[[K:.*]]: tensor<2x1x4x8xf32>, %[[V:.*]]: tensor<2x1x4x8xf32>)
// CHECK-NEXT: %[[O:.*]] = colo.attention %[[Q]], %[[K]], %[[V]] {scale = 1.000000e+00 : f64} : tensor<2x4x4x8xf32>, tensor<2x1x4x8xf32>, tensor<2x1x4x8xf32>
// CHECK-NEXT: return %[[O]]
func.func @multi_query(%q: tensor<2x4x4x8xf32>, %k: tensor<2x1x4x8xf32>, %v: tensor<2x1x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %kb = colo.broadcast_to %k : tensor<2x1x4x8xf32> -> tensor<2x4x4x8xf32>
  %vb = colo.broadcast_to %v : tensor<2x1x4x8xf32> -> tensor<2x4x4x8xf32>
  %kt = colo.transpose %kb permutation = [0, 1, 3, 2] : tensor<2x4x4x8xf32>
  %s = colo.matmul %q, %kt : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %p = colo.softmax %s axis = 3 : tensor<2x4x4x4xf32>
  %o = colo.matmul %p, %vb : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// Only k is repeated: the heads stay expanded, k keeps all 4.
// CHECK-LABEL: func.func @repeat_k_only
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x4x8xf32>, %[[K:.*]]: tensor<2x2x4x8xf32>, %[[V:.*]]: tensor<2x4x4x8xf32>)
// CHECK: %[[KB:.*]] = colo.broadcast_to
// CHECK-NEXT: %[[KR:.*]] = colo.reshape %[[KB]] : tensor<2x2x2x4x8xf32> -> tensor<2x4x4x8xf32>
// CHECK-NEXT: %[[O:.*]] = colo.attention %[[Q]], %[[KR]], %[[V]] {scale = 1.000000e+00 : f64} : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>
// CHECK-NEXT: return %[[O]]
func.func @repeat_k_only(%q: tensor<2x4x4x8xf32>, %k: tensor<2x2x4x8xf32>, %v: tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %k5 = colo.reshape %k : tensor<2x2x4x8xf32> -> tensor<2x2x1x4x8xf32>
  %kb = colo.broadcast_to %k5 : tensor<2x2x1x4x8xf32> -> tensor<2x2x2x4x8xf32>
  %kr = colo.reshape %kb : tensor<2x2x2x4x8xf32> -> tensor<2x4x4x8xf32>
  %kt = colo.transpose %kr permutation = [0, 1, 3, 2] : tensor<2x4x4x8xf32>
  %s = colo.matmul %q, %kt : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %p = colo.softmax %s axis = 3 : tensor<2x4x4x4xf32>
  %o = colo.matmul %p, %v : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// A padding mask added as a tensor stays the mask operand.
// CHECK-LABEL: func.func @additive_mask
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x4x8xf32>, %[[K:.*]]: tensor<2x4x4x8xf32>, %[[V:.*]]: tensor<2x4x4x8xf32>, %[[M:.*]]: tensor<2x1x1x4xf32>)
// CHECK-NEXT: %[[O:.*]] = colo.attention %[[Q]], %[[K]], %[[V]] mask %[[M]] {scale = 1.250000e-01 : f64} : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x1x1x4xf32>
// CHECK-NEXT: return %[[O]]
func.func @additive_mask(%q: tensor<2x4x4x8xf32>, %k: tensor<2x4x4x8xf32>, %v: tensor<2x4x4x8xf32>, %mask: tensor<2x1x1x4xf32>) -> tensor<2x4x4x8xf32> {
  %kt = colo.transpose %k permutation = [0, 1, 3, 2] : tensor<2x4x4x8xf32>
  %s = colo.matmul %q, %kt : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %c = colo.constant dense<0.125> : tensor<f32>
  %ss = colo.mul %s, %c : tensor<2x4x4x4xf32>, tensor<f32>
  %m = colo.add %mask, %ss : tensor<2x1x1x4xf32>, tensor<2x4x4x4xf32>
  %p = colo.softmax %m axis = 3 : tensor<2x4x4x4xf32>
  %o = colo.matmul %p, %v : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// A causal mask written with finfo.min-like values (here -1e9), broadcast over
// the batch, plus a padding mask: `causal` and the padding mask.
// CHECK-LABEL: func.func @causal_and_padding
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x4x8xf32>, %[[K:.*]]: tensor<2x4x4x8xf32>, %[[V:.*]]: tensor<2x4x4x8xf32>, %[[M:.*]]: tensor<2x1x1x4xf32>)
// CHECK-NEXT: %[[O:.*]] = colo.attention %[[Q]], %[[K]], %[[V]] mask %[[M]] {causal, scale = 1.000000e+00 : f64}
// CHECK-NEXT: return %[[O]]
func.func @causal_and_padding(%q: tensor<2x4x4x8xf32>, %k: tensor<2x4x4x8xf32>, %v: tensor<2x4x4x8xf32>, %mask: tensor<2x1x1x4xf32>) -> tensor<2x4x4x8xf32> {
  %causal = colo.constant dense<[[[[0.0, -1.0e9, -1.0e9, -1.0e9],
                                   [0.0, 0.0, -1.0e9, -1.0e9],
                                   [0.0, 0.0, 0.0, -1.0e9],
                                   [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %kt = colo.transpose %k permutation = [0, 1, 3, 2] : tensor<2x4x4x8xf32>
  %s = colo.matmul %q, %kt : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %m1 = colo.add %s, %causal : tensor<2x4x4x4xf32>, tensor<1x1x4x4xf32>
  %m2 = colo.add %m1, %mask : tensor<2x4x4x4xf32>, tensor<2x1x1x4xf32>
  %p = colo.softmax %m2 axis = 3 : tensor<2x4x4x4xf32>
  %o = colo.matmul %p, %v : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// A constant that is not causal (-inf below the diagonal, or a small
// negative value above it) is kept as the mask.
// CHECK-LABEL: func.func @constant_mask_not_causal
// CHECK: %[[B1:.*]] = colo.constant dense<{{.*}}> : tensor<4x4xf32>
// CHECK: %[[B2:.*]] = colo.constant dense<{{.*}}> : tensor<4x4xf32>
// CHECK: colo.attention %{{.*}}, %{{.*}}, %{{.*}} mask %[[B1]] {scale = 1.000000e+00 : f64}
// CHECK: colo.attention %{{.*}}, %{{.*}}, %{{.*}} mask %[[B2]] {scale = 1.000000e+00 : f64}
func.func @constant_mask_not_causal(%q: tensor<2x4x4x8xf32>, %k: tensor<2x4x4x8xf32>, %v: tensor<2x4x4x8xf32>)
    -> (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) {
  %b1 = colo.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000],
                             [0xFF800000, 0.0, 0xFF800000, 0xFF800000],
                             [0.0, 0.0, 0.0, 0xFF800000],
                             [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %b2 = colo.constant dense<[[0.0, -1.0e4, -1.0e4, -1.0e4],
                             [0.0, 0.0, -1.0e4, -1.0e4],
                             [0.0, 0.0, 0.0, -1.0e4],
                             [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %kt = colo.transpose %k permutation = [0, 1, 3, 2] : tensor<2x4x4x8xf32>
  %s = colo.matmul %q, %kt : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %m1 = colo.add %s, %b1 : tensor<2x4x4x4xf32>, tensor<4x4xf32>
  %p1 = colo.softmax %m1 axis = 3 : tensor<2x4x4x4xf32>
  %o1 = colo.matmul %p1, %v : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  %s2 = colo.matmul %q, %kt : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %m2 = colo.add %s2, %b2 : tensor<2x4x4x4xf32>, tensor<4x4xf32>
  %p2 = colo.softmax %m2 axis = 3 : tensor<2x4x4x4xf32>
  %o2 = colo.matmul %p2, %v : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  return %o1, %o2 : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>
}

// A padding mask as `select(keep, scores, -inf)` is the additive
// `select(keep, 0, -inf)`.
// CHECK-LABEL: func.func @select_padding
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x4x8xf32>, %[[K:.*]]: tensor<2x4x4x8xf32>, %[[V:.*]]: tensor<2x4x4x8xf32>, %[[KEEP:.*]]: tensor<2x1x1x4xi1>)
// CHECK-DAG: %[[ZERO:.*]] = colo.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[NINF:.*]] = colo.constant dense<0xFF800000> : tensor<f32>
// CHECK: %[[M:.*]] = colo.select %[[KEEP]], %[[ZERO]], %[[NINF]] : tensor<2x1x1x4xi1>, tensor<f32>, tensor<f32>
// CHECK-NEXT: %[[O:.*]] = colo.attention %[[Q]], %[[K]], %[[V]] mask %[[M]] {scale = 1.000000e+00 : f64} : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x1x1x4xf32>
// CHECK-NEXT: return %[[O]]
func.func @select_padding(%q: tensor<2x4x4x8xf32>, %k: tensor<2x4x4x8xf32>, %v: tensor<2x4x4x8xf32>, %keep: tensor<2x1x1x4xi1>) -> tensor<2x4x4x8xf32> {
  %ninf = colo.constant dense<0xFF800000> : tensor<f32>
  %kt = colo.transpose %k permutation = [0, 1, 3, 2] : tensor<2x4x4x8xf32>
  %s = colo.matmul %q, %kt : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %m = colo.select %keep, %s, %ninf : tensor<2x1x1x4xi1>, tensor<2x4x4x4xf32>, tensor<f32>
  %p = colo.softmax %m axis = 3 : tensor<2x4x4x4xf32>
  %o = colo.matmul %p, %v : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// `select(masked_out, -inf, scores)` with a constant lower-triangular
// condition is causal.
// CHECK-LABEL: func.func @select_causal
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x4x8xf32>, %[[K:.*]]: tensor<2x4x4x8xf32>, %[[V:.*]]: tensor<2x4x4x8xf32>)
// CHECK-NEXT: %[[O:.*]] = colo.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 1.000000e+00 : f64}
// CHECK-NEXT: return %[[O]]
func.func @select_causal(%q: tensor<2x4x4x8xf32>, %k: tensor<2x4x4x8xf32>, %v: tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %upper = colo.constant dense<[[false, true, true, true], [false, false, true, true],
                                [false, false, false, true], [false, false, false, false]]> : tensor<4x4xi1>
  %ninf = colo.constant dense<0xFF800000> : tensor<f32>
  %kt = colo.transpose %k permutation = [0, 1, 3, 2] : tensor<2x4x4x8xf32>
  %s = colo.matmul %q, %kt : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %m = colo.select %upper, %ninf, %s : tensor<4x4xi1>, tensor<f32>, tensor<2x4x4x4xf32>
  %p = colo.softmax %m axis = 3 : tensor<2x4x4x4xf32>
  %o = colo.matmul %p, %v : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// Dropout on the probabilities (training) becomes the attribute.
// CHECK-LABEL: func.func @dropout
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x4x8xf32>, %[[K:.*]]: tensor<2x4x4x8xf32>, %[[V:.*]]: tensor<2x4x4x8xf32>)
// CHECK-NEXT: %[[O:.*]] = colo.attention %[[Q]], %[[K]], %[[V]] {dropout = 1.000000e-01 : f64, scale = 1.000000e+00 : f64}
// CHECK-NEXT: return %[[O]]
func.func @dropout(%q: tensor<2x4x4x8xf32>, %k: tensor<2x4x4x8xf32>, %v: tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %kt = colo.transpose %k permutation = [0, 1, 3, 2] : tensor<2x4x4x8xf32>
  %s = colo.matmul %q, %kt : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %p = colo.softmax %s axis = 3 : tensor<2x4x4x4xf32>
  %d = colo.dropout %p ratio = 0.1 : tensor<2x4x4x4xf32>
  %o = colo.matmul %d, %v : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

//===----------------------------------------------------------------------===//
// Left alone
//===----------------------------------------------------------------------===//

// Softmax over the query axis.
// CHECK-LABEL: func.func @softmax_other_axis
// CHECK: colo.softmax
// CHECK-NOT: colo.attention
func.func @softmax_other_axis(%q: tensor<2x4x4x8xf32>, %k: tensor<2x4x4x8xf32>, %v: tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %kt = colo.transpose %k permutation = [0, 1, 3, 2] : tensor<2x4x4x8xf32>
  %s = colo.matmul %q, %kt : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %p = colo.softmax %s axis = 2 : tensor<2x4x4x4xf32>
  %o = colo.matmul %p, %v : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// A scale that is not a constant.
// CHECK-LABEL: func.func @non_constant_scale
// CHECK: colo.softmax
// CHECK-NOT: colo.attention
func.func @non_constant_scale(%q: tensor<2x4x4x8xf32>, %k: tensor<2x4x4x8xf32>, %v: tensor<2x4x4x8xf32>, %c: tensor<f32>) -> tensor<2x4x4x8xf32> {
  %kt = colo.transpose %k permutation = [0, 1, 3, 2] : tensor<2x4x4x8xf32>
  %s = colo.matmul %q, %kt : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %ss = colo.mul %s, %c : tensor<2x4x4x4xf32>, tensor<f32>
  %p = colo.softmax %ss axis = 3 : tensor<2x4x4x4xf32>
  %o = colo.matmul %p, %v : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// A mask on the wrong dimensions: it widens the batch of the scores, which
// q k^T alone does not have.
// CHECK-LABEL: func.func @mask_widens_scores
// CHECK: colo.softmax
// CHECK-NOT: colo.attention
func.func @mask_widens_scores(%q: tensor<1x4x4x8xf32>, %k: tensor<1x4x4x8xf32>, %v: tensor<2x4x4x8xf32>, %mask: tensor<2x1x4x4xf32>) -> tensor<2x4x4x8xf32> {
  %kt = colo.transpose %k permutation = [0, 1, 3, 2] : tensor<1x4x4x8xf32>
  %s = colo.matmul %q, %kt : tensor<1x4x4x8xf32>, tensor<1x4x8x4xf32>
  %m = colo.add %s, %mask : tensor<1x4x4x4xf32>, tensor<2x1x4x4xf32>
  %p = colo.softmax %m axis = 3 : tensor<2x4x4x4xf32>
  %o = colo.matmul %p, %v : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// The right operand of q k^T is not a transpose.
// CHECK-LABEL: func.func @key_not_transposed
// CHECK: colo.softmax
// CHECK-NOT: colo.attention
func.func @key_not_transposed(%q: tensor<2x4x4x8xf32>, %kt: tensor<2x4x8x4xf32>, %v: tensor<2x4x4x8xf32>) -> tensor<2x4x4x8xf32> {
  %s = colo.matmul %q, %kt : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %p = colo.softmax %s axis = 3 : tensor<2x4x4x4xf32>
  %o = colo.matmul %p, %v : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// A mask below the scale would be scaled with the scores.
// CHECK-LABEL: func.func @mask_below_scale
// CHECK: colo.softmax
// CHECK-NOT: colo.attention
func.func @mask_below_scale(%q: tensor<2x4x4x8xf32>, %k: tensor<2x4x4x8xf32>, %v: tensor<2x4x4x8xf32>, %mask: tensor<2x1x1x4xf32>) -> tensor<2x4x4x8xf32> {
  %kt = colo.transpose %k permutation = [0, 1, 3, 2] : tensor<2x4x4x8xf32>
  %s = colo.matmul %q, %kt : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %m = colo.add %s, %mask : tensor<2x4x4x4xf32>, tensor<2x1x1x4xf32>
  %c = colo.constant dense<0.125> : tensor<f32>
  %ms = colo.mul %m, %c : tensor<2x4x4x4xf32>, tensor<f32>
  %p = colo.softmax %ms axis = 3 : tensor<2x4x4x4xf32>
  %o = colo.matmul %p, %v : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// Two masks that are not causal: adding them first would reassociate.
// CHECK-LABEL: func.func @two_masks
// CHECK: colo.softmax
// CHECK-NOT: colo.attention
func.func @two_masks(%q: tensor<2x4x4x8xf32>, %k: tensor<2x4x4x8xf32>, %v: tensor<2x4x4x8xf32>, %m1: tensor<2x1x1x4xf32>, %m2: tensor<4x4xf32>) -> tensor<2x4x4x8xf32> {
  %kt = colo.transpose %k permutation = [0, 1, 3, 2] : tensor<2x4x4x8xf32>
  %s = colo.matmul %q, %kt : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %a = colo.add %s, %m1 : tensor<2x4x4x4xf32>, tensor<2x1x1x4xf32>
  %b = colo.add %a, %m2 : tensor<2x4x4x4xf32>, tensor<4x4xf32>
  %p = colo.softmax %b axis = 3 : tensor<2x4x4x4xf32>
  %o = colo.matmul %p, %v : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// A select with a finite fill is not an addition (a fully masked row differs).
// CHECK-LABEL: func.func @select_finite_fill
// CHECK: colo.softmax
// CHECK-NOT: colo.attention
func.func @select_finite_fill(%q: tensor<2x4x4x8xf32>, %k: tensor<2x4x4x8xf32>, %v: tensor<2x4x4x8xf32>, %keep: tensor<2x1x1x4xi1>) -> tensor<2x4x4x8xf32> {
  %fill = colo.constant dense<-1.0e9> : tensor<f32>
  %kt = colo.transpose %k permutation = [0, 1, 3, 2] : tensor<2x4x4x8xf32>
  %s = colo.matmul %q, %kt : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %m = colo.select %keep, %s, %fill : tensor<2x1x1x4xi1>, tensor<2x4x4x4xf32>, tensor<f32>
  %p = colo.softmax %m axis = 3 : tensor<2x4x4x4xf32>
  %o = colo.matmul %p, %v : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  return %o : tensor<2x4x4x8xf32>
}

// The probabilities are also returned (attention weights): raising would
// compute them twice.
// CHECK-LABEL: func.func @probabilities_used_twice
// CHECK: colo.softmax
// CHECK-NOT: colo.attention
func.func @probabilities_used_twice(%q: tensor<2x4x4x8xf32>, %k: tensor<2x4x4x8xf32>, %v: tensor<2x4x4x8xf32>)
    -> (tensor<2x4x4x8xf32>, tensor<2x4x4x4xf32>) {
  %kt = colo.transpose %k permutation = [0, 1, 3, 2] : tensor<2x4x4x8xf32>
  %s = colo.matmul %q, %kt : tensor<2x4x4x8xf32>, tensor<2x4x8x4xf32>
  %p = colo.softmax %s axis = 3 : tensor<2x4x4x4xf32>
  %o = colo.matmul %p, %v : tensor<2x4x4x4xf32>, tensor<2x4x4x8xf32>
  return %o, %p : tensor<2x4x4x8xf32>, tensor<2x4x4x4xf32>
}
