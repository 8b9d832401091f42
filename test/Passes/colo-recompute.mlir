// RUN: colo-opt %s --colo-build-train-step="loss=lm optimizer=sgd" --colo-recompute=policy=full | FileCheck %s --check-prefix=FULL
// RUN: colo-opt %s --colo-build-train-step="loss=lm optimizer=sgd" --colo-recompute=policy=selective | FileCheck %s --check-prefix=SELECTIVE
// RUN: colo-opt %s --colo-build-train-step="loss=lm optimizer=sgd" --colo-recompute=policy=none | FileCheck %s --check-prefix=NONE
// RUN: colo-opt %s --colo-build-train-step="loss=lm optimizer=sgd" --colo-recompute=policy=full --canonicalize --cse | FileCheck %s --check-prefix=CSE
// RUN: colo-opt %s --colo-build-train-step="loss=lm optimizer=sgd" --colo-recompute="policy=budget budget-mb=0.0019" | FileCheck %s --check-prefix=ROOMY
// RUN: colo-opt %s --colo-build-train-step="loss=lm optimizer=sgd" --colo-recompute="policy=budget budget-mb=0.0016" | FileCheck %s --check-prefix=TIGHT
// RUN: colo-opt %s --colo-build-train-step="loss=lm optimizer=sgd" --colo-recompute="policy=budget budget-mb=0.003" | FileCheck %s --check-prefix=NONE
// RUN: not colo-opt %s --colo-build-train-step="loss=lm optimizer=sgd" --colo-recompute="policy=budget budget-mb=0.0001" 2>&1 | FileCheck %s --check-prefix=TOOSMALL
// RUN: colo-opt %S/Inputs/linear.mlir --colo-build-train-step --colo-recompute=policy=selective 2>&1 | FileCheck %s --check-prefix=NOATTENTION

// Two layers h.0 and h.1, each a projection, an attention-like core
// (scores, scaling, softmax, the product with the values) and a GELU on a
// residual stream.

// full: each layer's values that its backward reads are computed again
// right before that backward, from the layer's input (the residual stream
// it was given) and its weight; the layer's output, which the next layer
// reads, stays. Layer 1's backward comes first.
// FULL-LABEL: func.func @train_step
// FULL: %[[R0:.*]] = colo.add %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<2x4x8xf32>
// FULL: colo.cross_entropy
// FULL: %[[X1:.*]] = colo.matmul %[[R0]], %{{.*}} {colo.recomputed = "h.1"}
// FULL: colo.transpose %[[X1]] permutation = [0, 2, 1] {colo.recomputed = "h.1"}
// FULL: colo.softmax %{{.*}} axis = 2 {colo.recomputed = "h.1"}
// FULL: colo.matmul %{{.*}}, %[[X1]] {colo.recomputed = "h.1"}
// FULL-NOT: colo.add {{.*}}colo.recomputed
// FULL: colo.erf
// FULL: colo.matmul %{{.*}}, %{{.*}} {colo.recomputed = "h.0"}
// FULL-NOT: colo.add {{.*}}colo.recomputed
// FULL: colo.global_store @h.0.w

// selective: only the cores' scores, scaling and softmax; the projections
// and the GELU keep their values.
// SELECTIVE-LABEL: func.func @train_step
// SELECTIVE: colo.cross_entropy
// SELECTIVE: colo.matmul %{{.*}}, %{{.*}} {colo.recomputed = "h.1.attn"} : tensor<2x4x8xf32>, tensor<2x8x4xf32>
// SELECTIVE-NEXT: colo.mul %{{.*}}, %{{.*}} {colo.recomputed = "h.1.attn"}
// SELECTIVE-NEXT: colo.softmax %{{.*}} axis = 2 {colo.recomputed = "h.1.attn"}
// SELECTIVE-NOT: colo.gelu %{{.*}} {colo.recomputed
// SELECTIVE: {colo.recomputed = "h.0.attn"}

// NONE-NOT: colo.recomputed

// budget: each layer keeps about 1 KiB of activations, of which its
// attention core holds 384 bytes. Under 1992 bytes (0.0019 MiB) recomputing
// both cores fits at the least cost; under 1677 only recomputing both layers
// whole does (their backwards run one at a time); 3 KiB keeps everything;
// 104 bytes is less than one layer needs even recomputed.
// ROOMY-COUNT-3: {colo.recomputed = "h.1.attn"}
// ROOMY-COUNT-3: {colo.recomputed = "h.0.attn"}
// ROOMY-NOT: colo.recomputed
// TIGHT-COUNT-6: {colo.recomputed = "h.1"}
// TIGHT-COUNT-6: {colo.recomputed = "h.0"}
// TOOSMALL: error: recompute=budget: the layers' activations need at least {{[0-9]+}} bytes (every layer recomputed from its input: the largest one's), more than the budget of 104 bytes

// The clones survive canonicalization and CSE (their attribute tells them
// from the originals).
// CSE-COUNT-2: colo.softmax %{{.*}} axis = 2 {colo.recomputed

colo.global trainable @emb : tensor<16x8xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 1.0 : f64>
colo.global trainable @h.0.w : tensor<8x8xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.3 : f64>
colo.global trainable @h.1.w : tensor<8x8xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.3 : f64>
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<2x4x16xf32> {
  %t = colo.global_load @emb : tensor<16x8xf32> loc("/emb/Gather")
  %e = colo.embedding %t, %ids : tensor<16x8xf32>, tensor<2x4xi64> loc("/emb/Gather")
  %w0 = colo.global_load @h.0.w : tensor<8x8xf32> loc("/h.0/proj/MatMul")
  %x0 = colo.matmul %e, %w0 : tensor<2x4x8xf32>, tensor<8x8xf32> loc("/h.0/proj/MatMul")
  %xt0 = colo.transpose %x0 permutation = [0, 2, 1] : tensor<2x4x8xf32> loc("/h.0/attn/Transpose")
  %s0 = colo.matmul %x0, %xt0 : tensor<2x4x8xf32>, tensor<2x8x4xf32> loc("/h.0/attn/MatMul")
  %c0 = colo.constant dense<0.35> : tensor<f32> loc("/h.0/attn/Constant")
  %ss0 = colo.mul %s0, %c0 : tensor<2x4x4xf32>, tensor<f32> loc("/h.0/attn/Mul")
  %p0 = colo.softmax %ss0 axis = 2 : tensor<2x4x4xf32> loc("/h.0/attn/Softmax")
  %o0 = colo.matmul %p0, %x0 : tensor<2x4x4xf32>, tensor<2x4x8xf32> loc("/h.0/attn/MatMul_1")
  %g0 = colo.gelu %o0 : tensor<2x4x8xf32> loc("/h.0/mlp/Gelu")
  %r0 = colo.add %e, %g0 : tensor<2x4x8xf32>, tensor<2x4x8xf32> loc("/h.0/Add")
  %w1 = colo.global_load @h.1.w : tensor<8x8xf32> loc("/h.1/proj/MatMul")
  %x1 = colo.matmul %r0, %w1 : tensor<2x4x8xf32>, tensor<8x8xf32> loc("/h.1/proj/MatMul")
  %xt1 = colo.transpose %x1 permutation = [0, 2, 1] : tensor<2x4x8xf32> loc("/h.1/attn/Transpose")
  %s1 = colo.matmul %x1, %xt1 : tensor<2x4x8xf32>, tensor<2x8x4xf32> loc("/h.1/attn/MatMul")
  %c1 = colo.constant dense<0.35> : tensor<f32> loc("/h.1/attn/Constant")
  %ss1 = colo.mul %s1, %c1 : tensor<2x4x4xf32>, tensor<f32> loc("/h.1/attn/Mul")
  %p1 = colo.softmax %ss1 axis = 2 : tensor<2x4x4xf32> loc("/h.1/attn/Softmax")
  %o1 = colo.matmul %p1, %x1 : tensor<2x4x4xf32>, tensor<2x4x8xf32> loc("/h.1/attn/MatMul_1")
  %g1 = colo.gelu %o1 : tensor<2x4x8xf32> loc("/h.1/mlp/Gelu")
  %r1 = colo.add %r0, %g1 : tensor<2x4x8xf32>, tensor<2x4x8xf32> loc("/h.1/Add")
  %tt = colo.transpose %t permutation = [1, 0] : tensor<16x8xf32> loc("/head/Transpose")
  %logits = colo.matmul %r1, %tt : tensor<2x4x8xf32>, tensor<8x16xf32> loc("/head/MatMul")
  return %logits : tensor<2x4x16xf32>
}

// A model without attention: selective recomputation has nothing to do, and
// says so.
// NOATTENTION: warning: recompute=selective recomputes attention cores, and the model has none
// NOATTENTION-NOT: colo.recomputed
