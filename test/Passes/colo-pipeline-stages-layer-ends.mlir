// RUN: colo-opt %s --split-input-file --colo-pipeline-stages="stages=2 layer-ends=1,3" -verify-diagnostics | FileCheck %s

// Three residual layers: balanced, the cut would go after h.1 (two layers
// and one); the plan's stages [[0, 1], [1, 3]] put it after h.0.
// CHECK-LABEL: func.func @forward
// CHECK: colo.matmul {{.*}} {colo.stage = 0 : i64}
// CHECK: colo.gelu {{.*}} {colo.stage = 0 : i64}
// CHECK: colo.add {{.*}} {colo.stage = 0 : i64}
// CHECK: colo.matmul {{.*}} {colo.stage = 1 : i64}
// CHECK: colo.add {{.*}} {colo.stage = 1 : i64}
// CHECK: colo.add {{.*}} {colo.stage = 1 : i64}
colo.global trainable @w0 : tensor<8x8xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.3 : f64>
colo.global trainable @w1 : tensor<8x8xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.3 : f64>
colo.global trainable @w2 : tensor<8x8xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.3 : f64>
func.func @forward(%x: tensor<4x6x8xf32>) -> tensor<4x6x8xf32> {
  %a = colo.global_load @w0 : tensor<8x8xf32> loc("/model/h.0/MatMul")
  %h0 = colo.matmul %x, %a : tensor<4x6x8xf32>, tensor<8x8xf32> loc("/model/h.0/MatMul")
  %g0 = colo.gelu %h0 : tensor<4x6x8xf32> loc("/model/h.0/Gelu")
  %r0 = colo.add %x, %g0 : tensor<4x6x8xf32>, tensor<4x6x8xf32> loc("/model/h.0/Add")
  %b = colo.global_load @w1 : tensor<8x8xf32> loc("/model/h.1/MatMul")
  %h1 = colo.matmul %r0, %b : tensor<4x6x8xf32>, tensor<8x8xf32> loc("/model/h.1/MatMul")
  %g1 = colo.gelu %h1 : tensor<4x6x8xf32> loc("/model/h.1/Gelu")
  %r1 = colo.add %r0, %g1 : tensor<4x6x8xf32>, tensor<4x6x8xf32> loc("/model/h.1/Add")
  %c = colo.global_load @w2 : tensor<8x8xf32> loc("/model/h.2/MatMul")
  %h2 = colo.matmul %r1, %c : tensor<4x6x8xf32>, tensor<8x8xf32> loc("/model/h.2/MatMul")
  %g2 = colo.gelu %h2 : tensor<4x6x8xf32> loc("/model/h.2/Gelu")
  %r2 = colo.add %r1, %g2 : tensor<4x6x8xf32>, tensor<4x6x8xf32> loc("/model/h.2/Add")
  %y = colo.gelu %r2 : tensor<4x6x8xf32> loc("/model/head/Gelu")
  return %y : tensor<4x6x8xf32>
}

// -----

// expected-error @+1 {{the last pipeline stage ends at layer 3, but the model has 2 layers (layer-ends)}}
func.func @forward(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %g0 = colo.gelu %x : tensor<4x8xf32> loc("/model/h.0/Gelu")
  %r0 = colo.add %x, %g0 : tensor<4x8xf32>, tensor<4x8xf32> loc("/model/h.0/Add")
  %g1 = colo.gelu %r0 : tensor<4x8xf32> loc("/model/h.1/Gelu")
  %r1 = colo.add %r0, %g1 : tensor<4x8xf32>, tensor<4x8xf32> loc("/model/h.1/Add")
  return %r1 : tensor<4x8xf32>
}
