// RUN: colo-opt %s --colo-import-pipeline | FileCheck %s

// The import cleanup as a whole: canonicalization, raising of layer norm,
// RMS norm, GELU and attention, and CSE.

// A GPT-2 block's MLP as torch.onnx exports it: layer norm at an old opset,
// the tanh GELU, plus the identities and duplicates an export leaves behind.
// CHECK-LABEL: func.func @gpt2_mlp
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x64xf32>, %[[G:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>, %[[W1:.*]]: tensor<64x256xf32>, %[[W2:.*]]: tensor<256x64xf32>)
// CHECK-NEXT: %[[LN:.*]] = colo.layer_norm %[[X]] scale %[[G]] : tensor<64xf32> bias %[[B]] : tensor<64xf32> {axis = 2 : i64, epsilon = 9.9999997473787516E-6 : f64} : tensor<2x16x64xf32>
// CHECK-NEXT: %[[F:.*]] = colo.reshape %[[LN]] : tensor<2x16x64xf32> -> tensor<32x64xf32>
// CHECK-NEXT: %[[H2:.*]] = colo.matmul %[[F]], %[[W1]]
// CHECK-NEXT: %[[H:.*]] = colo.reshape %[[H2]] : tensor<32x256xf32> -> tensor<2x16x256xf32>
// CHECK-NEXT: %[[A:.*]] = colo.gelu %[[H]] approximation = tanh : tensor<2x16x256xf32>
// CHECK-NEXT: %[[O:.*]] = colo.matmul %[[A]], %[[W2]]
// CHECK-NEXT: %[[R:.*]] = colo.add %[[X]], %[[O]]
// CHECK-NEXT: return %[[R]], %[[R]]
func.func @gpt2_mlp(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>,
                    %w1: tensor<64x256xf32>, %w2: tensor<256x64xf32>)
    -> (tensor<2x16x64xf32>, tensor<2x16x64xf32>) {
  // Layer norm.
  %mean = colo.reduce_mean %x dims = [2] {keep_dims} : tensor<2x16x64xf32>
  %d = colo.sub %x, %mean : tensor<2x16x64xf32>, tensor<2x16x1xf32>
  %two = colo.constant dense<2.0> : tensor<f32>
  %sq = colo.pow %d, %two : tensor<2x16x64xf32>, tensor<f32>
  %var = colo.reduce_mean %sq dims = [2] {keep_dims} : tensor<2x16x64xf32>
  %eps = colo.constant dense<1.0e-05> : tensor<f32>
  %ve = colo.add %var, %eps : tensor<2x16x1xf32>, tensor<f32>
  %std = colo.sqrt %ve : tensor<2x16x1xf32>
  %n = colo.div %d, %std : tensor<2x16x64xf32>, tensor<2x16x1xf32>
  %ng = colo.mul %n, %g : tensor<2x16x64xf32>, tensor<64xf32>
  %ln = colo.add %ng, %b : tensor<2x16x64xf32>, tensor<64xf32>
  // A flatten and unflatten around the first projection.
  %flat = colo.reshape %ln : tensor<2x16x64xf32> -> tensor<32x64xf32>
  %h2 = colo.matmul %flat, %w1 : tensor<32x64xf32>, tensor<64x256xf32>
  %h = colo.reshape %h2 : tensor<32x256xf32> -> tensor<2x16x256xf32>
  %hr = colo.reshape %h : tensor<2x16x256xf32> -> tensor<32x256xf32>
  %h3 = colo.reshape %hr : tensor<32x256xf32> -> tensor<2x16x256xf32>
  // GELU, tanh form.
  %half = colo.constant dense<0.5> : tensor<f32>
  %hh = colo.mul %half, %h3 : tensor<f32>, tensor<2x16x256xf32>
  %three = colo.constant dense<3.0> : tensor<f32>
  %cube = colo.pow %h3, %three : tensor<2x16x256xf32>, tensor<f32>
  %k = colo.constant dense<0.044715> : tensor<f32>
  %kc = colo.mul %k, %cube : tensor<f32>, tensor<2x16x256xf32>
  %inner = colo.add %h3, %kc : tensor<2x16x256xf32>, tensor<2x16x256xf32>
  %c = colo.constant dense<0.7978845608> : tensor<f32>
  %arg = colo.mul %c, %inner : tensor<f32>, tensor<2x16x256xf32>
  %t = colo.tanh %arg : tensor<2x16x256xf32>
  %one = colo.constant dense<1.0> : tensor<f32>
  %p = colo.add %one, %t : tensor<f32>, tensor<2x16x256xf32>
  %act = colo.mul %hh, %p : tensor<2x16x256xf32>, tensor<2x16x256xf32>
  // Second projection, an inference-time dropout and a no-op scale.
  %o = colo.matmul %act, %w2 : tensor<2x16x256xf32>, tensor<256x64xf32>
  %od = colo.dropout %o ratio = 0.0 : tensor<2x16x64xf32>
  %os = colo.mul %od, %one : tensor<2x16x64xf32>, tensor<f32>
  // The residual, computed twice.
  %r0 = colo.add %x, %os : tensor<2x16x64xf32>, tensor<2x16x64xf32>
  %r1 = colo.add %x, %os : tensor<2x16x64xf32>, tensor<2x16x64xf32>
  return %r0, %r1 : tensor<2x16x64xf32>, tensor<2x16x64xf32>
}

// Llama's RMSNorm feeding a SiLU-gated MLP; the gate is not a GELU and stays.
// CHECK-LABEL: func.func @llama_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x64xf32>, %[[G:.*]]: tensor<64xf32>, %[[W:.*]]: tensor<64x128xf32>, %[[V:.*]]: tensor<64x128xf32>)
// CHECK-NEXT: %[[N:.*]] = colo.rms_norm %[[X]] scale %[[G]] : tensor<64xf32> {axis = 2 : i64, epsilon = 9.9999999747524271E-7 : f64} : tensor<2x16x64xf32>
// CHECK-NEXT: %[[A:.*]] = colo.matmul %[[N]], %[[W]]
// CHECK-NEXT: %[[S:.*]] = colo.silu %[[A]]
// CHECK-NEXT: %[[B:.*]] = colo.matmul %[[N]], %[[V]]
// CHECK-NEXT: %[[Y:.*]] = colo.mul %[[S]], %[[B]]
// CHECK-NEXT: return %[[Y]]
func.func @llama_norm(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>, %w: tensor<64x128xf32>, %v: tensor<64x128xf32>)
    -> tensor<2x16x128xf32> {
  %two = colo.constant dense<2.0> : tensor<f32>
  %sq = colo.pow %x, %two : tensor<2x16x64xf32>, tensor<f32>
  %ms = colo.reduce_mean %sq dims = [2] {keep_dims} : tensor<2x16x64xf32>
  %eps = colo.constant dense<1.0e-06> : tensor<f32>
  %mse = colo.add %ms, %eps : tensor<2x16x1xf32>, tensor<f32>
  %rms = colo.sqrt %mse : tensor<2x16x1xf32>
  %inv = colo.reciprocal %rms : tensor<2x16x1xf32>
  %n = colo.mul %x, %inv : tensor<2x16x64xf32>, tensor<2x16x1xf32>
  %ng = colo.mul %g, %n : tensor<64xf32>, tensor<2x16x64xf32>
  %a = colo.matmul %ng, %w : tensor<2x16x64xf32>, tensor<64x128xf32>
  %s = colo.silu %a : tensor<2x16x128xf32>
  %b = colo.matmul %ng, %v : tensor<2x16x64xf32>, tensor<64x128xf32>
  %y = colo.mul %s, %b : tensor<2x16x128xf32>, tensor<2x16x128xf32>
  return %y : tensor<2x16x128xf32>
}

// GPT-2's attention as the dynamo exporter writes it: heads split from the
// fused projection, k transposed through a [b*h, t, d] round trip, q and k
// scaled by sqrt(scale), the causal bias. The round trip and the bias go.
// CHECK-LABEL: func.func @gpt2_attention
// CHECK-SAME: (%[[QKV:.*]]: tensor<2x4x48xf32>)
// CHECK-DAG: %[[QS:.*]] = colo.slice %[[QKV]] start = [0, 0, 0]
// CHECK-DAG: %[[KS:.*]] = colo.slice %[[QKV]] start = [0, 0, 16]
// CHECK-DAG: %[[VS:.*]] = colo.slice %[[QKV]] start = [0, 0, 32]
// CHECK-DAG: %[[QR:.*]] = colo.reshape %[[QS]] : tensor<2x4x16xf32> -> tensor<2x4x2x8xf32>
// CHECK-DAG: %[[KR:.*]] = colo.reshape %[[KS]] : tensor<2x4x16xf32> -> tensor<2x4x2x8xf32>
// CHECK-DAG: %[[VR:.*]] = colo.reshape %[[VS]] : tensor<2x4x16xf32> -> tensor<2x4x2x8xf32>
// CHECK-DAG: %[[Q:.*]] = colo.transpose %[[QR]] permutation = [0, 2, 1, 3]
// CHECK-DAG: %[[K:.*]] = colo.transpose %[[KR]] permutation = [0, 2, 1, 3]
// CHECK-DAG: %[[V:.*]] = colo.transpose %[[VR]] permutation = [0, 2, 1, 3]
// CHECK: %[[O:.*]] = colo.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.500000e-01 : f64} : tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>
// CHECK-NEXT: %[[T:.*]] = colo.transpose %[[O]] permutation = [0, 2, 1, 3]
// CHECK-NEXT: %[[Y:.*]] = colo.reshape %[[T]] : tensor<2x4x2x8xf32> -> tensor<2x4x16xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gpt2_attention(%qkv: tensor<2x4x48xf32>) -> tensor<2x4x16xf32> {
  %bias = colo.constant dense<[[0.0, 0xFF800000, 0xFF800000, 0xFF800000],
                               [0.0, 0.0, 0xFF800000, 0xFF800000],
                               [0.0, 0.0, 0.0, 0xFF800000],
                               [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %c = colo.constant dense<0.5> : tensor<1xf32>
  %qs = colo.slice %qkv start = [0, 0, 0] limit = [2, 4, 16] stride = [1, 1, 1] : tensor<2x4x48xf32>
  %ks = colo.slice %qkv start = [0, 0, 16] limit = [2, 4, 32] stride = [1, 1, 1] : tensor<2x4x48xf32>
  %vs = colo.slice %qkv start = [0, 0, 32] limit = [2, 4, 48] stride = [1, 1, 1] : tensor<2x4x48xf32>
  %qr = colo.reshape %qs : tensor<2x4x16xf32> -> tensor<2x4x2x8xf32>
  %q = colo.transpose %qr permutation = [0, 2, 1, 3] : tensor<2x4x2x8xf32>
  %kr = colo.reshape %ks : tensor<2x4x16xf32> -> tensor<2x4x2x8xf32>
  %k = colo.transpose %kr permutation = [0, 2, 1, 3] : tensor<2x4x2x8xf32>
  %vr = colo.reshape %vs : tensor<2x4x16xf32> -> tensor<2x4x2x8xf32>
  %v = colo.transpose %vr permutation = [0, 2, 1, 3] : tensor<2x4x2x8xf32>
  %k3 = colo.reshape %k : tensor<2x2x4x8xf32> -> tensor<4x4x8xf32>
  %kt3 = colo.transpose %k3 permutation = [0, 2, 1] : tensor<4x4x8xf32>
  %kt = colo.reshape %kt3 : tensor<4x8x4xf32> -> tensor<2x2x8x4xf32>
  %qc = colo.mul %q, %c : tensor<2x2x4x8xf32>, tensor<1xf32>
  %kc = colo.mul %kt, %c : tensor<2x2x8x4xf32>, tensor<1xf32>
  %s = colo.matmul %qc, %kc : tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>
  %m = colo.add %s, %bias : tensor<2x2x4x4xf32>, tensor<4x4xf32>
  %p = colo.softmax %m axis = 3 : tensor<2x2x4x4xf32>
  %o = colo.matmul %p, %v : tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>
  %t = colo.transpose %o permutation = [0, 2, 1, 3] : tensor<2x2x4x8xf32>
  %y = colo.reshape %t : tensor<2x4x2x8xf32> -> tensor<2x4x16xf32>
  return %y : tensor<2x4x16xf32>
}
