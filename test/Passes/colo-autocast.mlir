// RUN: colo-opt %s --split-input-file --colo-autocast | FileCheck %s
// RUN: colo-opt %s --split-input-file --colo-autocast=precision=fp16 | FileCheck %s --check-prefix=FP16
// RUN: not colo-opt %s --split-input-file --colo-autocast=precision=fp8 2>&1 | FileCheck %s --check-prefix=BAD

// An MLP: both products read bf16 copies (the [out, in] weight converted
// before its transpose, which the GEMM absorbs); GELU and the master weights
// stay f32.
// CHECK-LABEL: func.func @forward
// CHECK: %[[W1:.*]] = colo.global_load @w1 : tensor<16x8xf32>
// CHECK: %[[W1L:.*]] = colo.convert %[[W1]] : tensor<16x8xf32> to tensor<16x8xbf16>
// CHECK: %[[W1T:.*]] = colo.transpose %[[W1L]] permutation = [1, 0] : tensor<16x8xbf16>
// CHECK: %[[XL:.*]] = colo.convert %{{.*}} : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK: %[[H:.*]] = colo.matmul %[[XL]], %[[W1T]] : tensor<4x8xbf16>, tensor<8x16xbf16>
// CHECK: %[[HF:.*]] = colo.convert %[[H]] : tensor<4x16xbf16> to tensor<4x16xf32>
// CHECK: %[[G:.*]] = colo.gelu %[[HF]]
// CHECK: %[[GL:.*]] = colo.convert %[[G]] : tensor<4x16xf32> to tensor<4x16xbf16>
// CHECK: %[[Y:.*]] = colo.matmul %[[GL]], %{{.*}} : tensor<4x16xbf16>, tensor<16x2xbf16>
// CHECK: %[[YF:.*]] = colo.convert %[[Y]] : tensor<4x2xbf16> to tensor<4x2xf32>
// CHECK: return %[[YF]] : tensor<4x2xf32>
// FP16-LABEL: func.func @forward
// FP16: colo.matmul %{{.*}}, %{{.*}} : tensor<4x8xf16>, tensor<8x16xf16>
// BAD: for the --precision option: Cannot find option named 'fp8'!
colo.global trainable @w1 : tensor<16x8xf32>
colo.global trainable @w2 : tensor<16x2xf32>
func.func @forward(%x: tensor<4x8xf32>) -> tensor<4x2xf32> {
  %w1 = colo.global_load @w1 : tensor<16x8xf32>
  %w1t = colo.transpose %w1 permutation = [1, 0] : tensor<16x8xf32>
  %h = colo.matmul %x, %w1t : tensor<4x8xf32>, tensor<8x16xf32>
  %g = colo.gelu %h : tensor<4x16xf32>
  %w2 = colo.global_load @w2 : tensor<16x2xf32>
  %y = colo.matmul %g, %w2 : tensor<4x16xf32>, tensor<16x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Back-to-back products (attention's output projection reads the attention
// result directly): the convert pair between them folds away.
// CHECK-LABEL: func.func @forward
// CHECK: %[[A:.*]] = colo.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, scale = 2.500000e-01 : f64} : tensor<1x2x4x4xbf16>
// CHECK-NOT: colo.convert %{{.*}} : tensor<1x2x4x4xf32> to tensor<1x2x4x4xbf16>
// CHECK: %[[R:.*]] = colo.matmul %[[A]], %{{.*}} : tensor<1x2x4x4xbf16>, tensor<4x4xbf16>
colo.global trainable @wo : tensor<4x4xf32>
func.func @forward(%q: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %a = colo.attention %q, %q, %q {causal, scale = 0.25 : f64} : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
  %wo = colo.global_load @wo : tensor<4x4xf32>
  %r = colo.matmul %a, %wo : tensor<1x2x4x4xf32>, tensor<4x4xf32>
  return %r : tensor<1x2x4x4xf32>
}
