// RUN: colo-opt %s --split-input-file --colo-pipeline-stages=stages=2 -verify-diagnostics | FileCheck %s

// Two residual layers and a tied LM head: the cut goes after the second
// layer's residual add (one value crosses there; the head costs as much as
// both layers), and the embedding table is loaded again by the last stage.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: colo.pipeline_stages = 2
// CHECK: %[[T1:.*]] = colo.global_load @emb {colo.stage = 1 : i64}
// CHECK: %[[T0:.*]] = colo.global_load @emb {colo.stage = 0 : i64}
// CHECK: colo.embedding %[[T0]], %{{.*}} {colo.stage = 0 : i64}
// CHECK: colo.global_load @w1 {colo.stage = 0 : i64}
// CHECK: colo.global_load @w2 {colo.stage = 0 : i64}
// CHECK: %[[R2:.*]] = colo.add %{{.*}}, %{{.*}} {colo.stage = 0 : i64}
// CHECK: %[[TT:.*]] = colo.transpose %[[T1]] permutation = [1, 0] {colo.stage = 1 : i64}
// CHECK: colo.matmul %[[R2]], %[[TT]] {colo.stage = 1 : i64}
colo.global trainable @emb : tensor<16x8xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 1.0 : f64>
colo.global trainable @w1 : tensor<8x8xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.3 : f64>
colo.global trainable @w2 : tensor<8x8xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.3 : f64>
func.func @forward(%ids: tensor<4x6xi64>) -> tensor<4x6x16xf32> {
  %t = colo.global_load @emb : tensor<16x8xf32>
  %e = colo.embedding %t, %ids : tensor<16x8xf32>, tensor<4x6xi64>
  %a = colo.global_load @w1 : tensor<8x8xf32>
  %h1 = colo.matmul %e, %a : tensor<4x6x8xf32>, tensor<8x8xf32>
  %g1 = colo.gelu %h1 : tensor<4x6x8xf32>
  %r1 = colo.add %e, %g1 : tensor<4x6x8xf32>, tensor<4x6x8xf32>
  %b = colo.global_load @w2 : tensor<8x8xf32>
  %h2 = colo.matmul %r1, %b : tensor<4x6x8xf32>, tensor<8x8xf32>
  %g2 = colo.gelu %h2 : tensor<4x6x8xf32>
  %r2 = colo.add %r1, %g2 : tensor<4x6x8xf32>, tensor<4x6x8xf32>
  %tt = colo.transpose %t permutation = [1, 0] : tensor<16x8xf32>
  %logits = colo.matmul %r2, %tt : tensor<4x6x8xf32>, tensor<8x16xf32>
  return %logits : tensor<4x6x16xf32>
}

// -----

// expected-error @+1 {{cannot cut @forward into 2 pipeline stages: it has 1 ops on the inputs}}
func.func @forward(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = colo.gelu %x : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
