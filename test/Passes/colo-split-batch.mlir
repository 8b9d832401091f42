// RUN: colo-opt %s --split-input-file --colo-split-batch=parts=2 | FileCheck %s
// RUN: colo-opt %s --split-input-file --colo-split-batch=parts=2 --colo-split-batch=parts=2 | FileCheck %s --check-prefix=FOUR
// RUN: colo-opt %s --split-input-file --colo-split-batch=parts=1 | FileCheck %s --check-prefix=ONE
// RUN: colo-opt %s --split-input-file --colo-create-mesh=dp=2 --colo-split-batch="parts=2 sync-ranks=2" | FileCheck %s --check-prefix=SYNC

// An MLP: the batch flows through matmuls, a broadcast bias, GELU, layer
// norm and log-softmax over the features; parameters keep their types.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>) -> tensor<4x4xf32> attributes {colo.batch_parts = 2 : i64}
// CHECK: %[[W1:.*]] = colo.global_load @fc1.weight : tensor<16x32xf32>
// CHECK: %[[B1:.*]] = colo.global_load @fc1.bias : tensor<32xf32>
// CHECK: %[[H:.*]] = colo.matmul %[[X]], %[[W1]] : tensor<4x16xf32>, tensor<16x32xf32>
// CHECK: %[[HB:.*]] = colo.add %[[H]], %[[B1]] : tensor<4x32xf32>, tensor<32xf32>
// CHECK: %[[A:.*]] = colo.gelu %[[HB]] : tensor<4x32xf32>
// CHECK: %[[N:.*]] = colo.layer_norm %[[A]] {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : tensor<4x32xf32>
// CHECK: %[[Y:.*]] = colo.matmul %[[N]], %{{.*}} : tensor<4x32xf32>, tensor<32x4xf32>
// CHECK: %[[P:.*]] = colo.log_softmax %[[Y]] axis = 1 : tensor<4x4xf32>
// CHECK: return %[[P]] : tensor<4x4xf32>

// Running the pass again splits further and records the product.
// FOUR-LABEL: func.func @forward
// FOUR-SAME: (%{{.*}}: tensor<2x16xf32>) -> tensor<2x4xf32> attributes {colo.batch_parts = 4 : i64}

// ONE-LABEL: func.func @forward
// ONE-SAME: (%{{.*}}: tensor<8x16xf32>) -> tensor<8x4xf32> {
// ONE-NOT: colo.batch_parts
colo.global trainable @fc1.weight : tensor<16x32xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.1 : f64>
colo.global trainable @fc1.bias : tensor<32xf32> = #colo.init<distribution = "zeros", a = 0.0 : f64, b = 0.0 : f64>
colo.global trainable @fc2.weight : tensor<32x4xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.1 : f64>
func.func @forward(%x: tensor<8x16xf32>) -> tensor<8x4xf32> {
  %w1 = colo.global_load @fc1.weight : tensor<16x32xf32>
  %b1 = colo.global_load @fc1.bias : tensor<32xf32>
  %w2 = colo.global_load @fc2.weight : tensor<32x4xf32>
  %h = colo.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>
  %hb = colo.add %h, %b1 : tensor<8x32xf32>, tensor<32xf32>
  %a = colo.gelu %hb : tensor<8x32xf32>
  %n = colo.layer_norm %a {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<8x32xf32>
  %y = colo.matmul %n, %w2 : tensor<8x32xf32>, tensor<32x4xf32>
  %p = colo.log_softmax %y axis = 1 : tensor<8x4xf32>
  return %p : tensor<8x4xf32>
}

// -----

// A GPT-2 block as the ONNX importer writes it: the batch is the outermost
// factor of the flattened [B*S, D] rows, the full slices of the fused QKV
// projection take the local batch as their limit, and attention runs on
// [B/2, H, S, d]. The position ids (batch 1) broadcast and are kept.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[IDS:.*]]: tensor<2x8xi64>) -> tensor<2x8x32xf32>
// CHECK: %[[POS:.*]] = colo.constant dense<{{.*}}> : tensor<1x8xi64>
// CHECK: %[[TE:.*]] = colo.embedding %{{.*}}, %[[IDS]] : tensor<32x16xf32>, tensor<2x8xi64>
// CHECK: %[[PE:.*]] = colo.embedding %{{.*}}, %[[POS]] : tensor<8x16xf32>, tensor<1x8xi64>
// CHECK: %[[H:.*]] = colo.add %[[TE]], %[[PE]] : tensor<2x8x16xf32>, tensor<1x8x16xf32>
// CHECK: %[[LN:.*]] = colo.layer_norm %[[H]] {{.*}} : tensor<2x8x16xf32>
// CHECK: %[[FLAT:.*]] = colo.reshape %[[LN]] : tensor<2x8x16xf32> -> tensor<16x16xf32>
// CHECK: %[[QKV:.*]] = colo.matmul %[[FLAT]], %{{.*}} : tensor<16x16xf32>, tensor<16x48xf32>
// CHECK: %[[QKV3:.*]] = colo.reshape %[[QKV]] : tensor<16x48xf32> -> tensor<2x8x48xf32>
// CHECK: %[[Q:.*]] = colo.slice %[[QKV3]] start = [0, 0, 0] limit = [2, 8, 16] stride = [1, 1, 1] : tensor<2x8x48xf32>
// CHECK: %[[K:.*]] = colo.slice %[[QKV3]] start = [0, 0, 16] limit = [2, 8, 32] stride = [1, 1, 1] : tensor<2x8x48xf32>
// CHECK: %[[V:.*]] = colo.slice %[[QKV3]] start = [0, 0, 32] limit = [2, 8, 48] stride = [1, 1, 1] : tensor<2x8x48xf32>
// CHECK: colo.reshape %[[Q]] : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
// CHECK: %[[QH:.*]] = colo.transpose %{{.*}} permutation = [0, 2, 1, 3] : tensor<2x8x2x8xf32>
// CHECK: %[[O:.*]] = colo.attention %[[QH]], %{{.*}}, %{{.*}} {causal, scale = 0.35355339059327379 : f64} : tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>
// CHECK: %[[OT:.*]] = colo.transpose %[[O]] permutation = [0, 2, 1, 3] : tensor<2x2x8x8xf32>
// CHECK: %[[OF:.*]] = colo.reshape %[[OT]] : tensor<2x8x2x8xf32> -> tensor<16x16xf32>
// CHECK: %[[PR:.*]] = colo.matmul %[[OF]], %{{.*}} : tensor<16x16xf32>, tensor<16x16xf32>
// CHECK: %[[P3:.*]] = colo.reshape %[[PR]] : tensor<16x16xf32> -> tensor<2x8x16xf32>
// CHECK: %[[RES:.*]] = colo.add %[[P3]], %[[H]] : tensor<2x8x16xf32>, tensor<2x8x16xf32>
// CHECK: %[[WT:.*]] = colo.transpose %{{.*}} permutation = [1, 0] : tensor<32x16xf32>
// CHECK: %[[LOGITS:.*]] = colo.matmul %[[RES]], %[[WT]] : tensor<2x8x16xf32>, tensor<16x32xf32>
// CHECK: return %[[LOGITS]] : tensor<2x8x32xf32>

// FOUR-LABEL: func.func @forward
// FOUR-SAME: (%{{.*}}: tensor<1x8xi64>) -> tensor<1x8x32xf32>
// FOUR: colo.attention {{.*}} : tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>
colo.global trainable @wte : tensor<32x16xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.1 : f64>
colo.global trainable @wpe : tensor<8x16xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.1 : f64>
colo.global trainable @c_attn.weight : tensor<16x48xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.1 : f64>
colo.global trainable @c_proj.weight : tensor<16x16xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.1 : f64>
func.func @forward(%ids: tensor<4x8xi64>) -> tensor<4x8x32xf32> {
  %pos = colo.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>
  %wte = colo.global_load @wte : tensor<32x16xf32>
  %wpe = colo.global_load @wpe : tensor<8x16xf32>
  %wa = colo.global_load @c_attn.weight : tensor<16x48xf32>
  %wp = colo.global_load @c_proj.weight : tensor<16x16xf32>
  %te = colo.embedding %wte, %ids : tensor<32x16xf32>, tensor<4x8xi64>
  %pe = colo.embedding %wpe, %pos : tensor<8x16xf32>, tensor<1x8xi64>
  %h = colo.add %te, %pe : tensor<4x8x16xf32>, tensor<1x8x16xf32>
  %ln = colo.layer_norm %h {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<4x8x16xf32>
  %flat = colo.reshape %ln : tensor<4x8x16xf32> -> tensor<32x16xf32>
  %qkv = colo.matmul %flat, %wa : tensor<32x16xf32>, tensor<16x48xf32>
  %qkv3 = colo.reshape %qkv : tensor<32x48xf32> -> tensor<4x8x48xf32>
  %q = colo.slice %qkv3 start = [0, 0, 0] limit = [4, 8, 16] stride = [1, 1, 1] : tensor<4x8x48xf32>
  %k = colo.slice %qkv3 start = [0, 0, 16] limit = [4, 8, 32] stride = [1, 1, 1] : tensor<4x8x48xf32>
  %v = colo.slice %qkv3 start = [0, 0, 32] limit = [4, 8, 48] stride = [1, 1, 1] : tensor<4x8x48xf32>
  %q4 = colo.reshape %q : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
  %k4 = colo.reshape %k : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
  %v4 = colo.reshape %v : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
  %qh = colo.transpose %q4 permutation = [0, 2, 1, 3] : tensor<4x8x2x8xf32>
  %kh = colo.transpose %k4 permutation = [0, 2, 1, 3] : tensor<4x8x2x8xf32>
  %vh = colo.transpose %v4 permutation = [0, 2, 1, 3] : tensor<4x8x2x8xf32>
  %o = colo.attention %qh, %kh, %vh {causal, scale = 0.35355339059327379 : f64} : tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32>
  %ot = colo.transpose %o permutation = [0, 2, 1, 3] : tensor<4x2x8x8xf32>
  %of = colo.reshape %ot : tensor<4x8x2x8xf32> -> tensor<32x16xf32>
  %pr = colo.matmul %of, %wp : tensor<32x16xf32>, tensor<16x16xf32>
  %p3 = colo.reshape %pr : tensor<32x16xf32> -> tensor<4x8x16xf32>
  %res = colo.add %p3, %h : tensor<4x8x16xf32>, tensor<4x8x16xf32>
  %wt = colo.transpose %wte permutation = [1, 0] : tensor<32x16xf32>
  %logits = colo.matmul %res, %wt : tensor<4x8x16xf32>, tensor<16x32xf32>
  return %logits : tensor<4x8x32xf32>
}

// -----

// A CNN: convolution, training-mode batch norm (per-slice statistics: its
// running-statistics results keep their types), pooling, flattening.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:.*]]: tensor<4x3x16x16xf32>) -> (tensor<4x10xf32>, tensor<4xf32>)
// CHECK: %[[C:.*]] = colo.conv2d %[[X]], %{{.*}} bias %{{.*}} {padding = array<i64: 1, 1, 1, 1>} : tensor<4x3x16x16xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>
// CHECK: %[[Y:.*]], %[[M:.*]], %{{.*}} = colo.batch_norm %[[C]], {{.*}} training} : tensor<4x4x16x16xf32>, tensor<4xf32>
// CHECK: %[[R:.*]] = colo.relu %[[Y]] : tensor<4x4x16x16xf32>
// CHECK: %[[MP:.*]] = colo.max_pool2d %[[R]] {{.*}} : tensor<4x4x16x16xf32>
// CHECK: %[[AP:.*]] = colo.avg_pool2d %[[MP]] {{.*}} : tensor<4x4x8x8xf32>
// CHECK: %[[F:.*]] = colo.reshape %[[AP]] : tensor<4x4x4x4xf32> -> tensor<4x64xf32>
// CHECK: %[[O:.*]] = colo.matmul %[[F]], %{{.*}} : tensor<4x64xf32>, tensor<64x10xf32>
// CHECK: return %[[O]], %[[M]] : tensor<4x10xf32>, tensor<4xf32>
// With sync-ranks the batch norm's statistics span the mesh's dp axis.
// SYNC: colo.batch_norm {{.*}} {epsilon = 1.000000e-05 : f64, momentum = 1.000000e-01 : f64, sync_axes = array<i16: 0>, sync_grid = @mesh, training} : tensor<4x4x16x16xf32>
colo.global trainable @conv.weight : tensor<4x3x3x3xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.1 : f64>
colo.global trainable @conv.bias : tensor<4xf32> = #colo.init<distribution = "zeros", a = 0.0 : f64, b = 0.0 : f64>
colo.global trainable @bn.weight : tensor<4xf32> = #colo.init<distribution = "ones", a = 0.0 : f64, b = 0.0 : f64>
colo.global trainable @bn.bias : tensor<4xf32> = #colo.init<distribution = "zeros", a = 0.0 : f64, b = 0.0 : f64>
colo.global @bn.running_mean : tensor<4xf32> = dense<0.0> : tensor<4xf32>
colo.global @bn.running_var : tensor<4xf32> = dense<1.0> : tensor<4xf32>
colo.global trainable @fc.weight : tensor<64x10xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.1 : f64>
func.func @forward(%x: tensor<8x3x16x16xf32>) -> (tensor<8x10xf32>, tensor<4xf32>) {
  %w = colo.global_load @conv.weight : tensor<4x3x3x3xf32>
  %b = colo.global_load @conv.bias : tensor<4xf32>
  %g = colo.global_load @bn.weight : tensor<4xf32>
  %be = colo.global_load @bn.bias : tensor<4xf32>
  %rm = colo.global_load @bn.running_mean : tensor<4xf32>
  %rv = colo.global_load @bn.running_var : tensor<4xf32>
  %fw = colo.global_load @fc.weight : tensor<64x10xf32>
  %c = colo.conv2d %x, %w bias %b {padding = array<i64: 1, 1, 1, 1>} : tensor<8x3x16x16xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>
  %y, %m, %v = colo.batch_norm %c, %g, %be, %rm, %rv {epsilon = 1.0e-05 : f64, momentum = 0.1 : f64, training} : tensor<8x4x16x16xf32>, tensor<4xf32>
  %r = colo.relu %y : tensor<8x4x16x16xf32>
  %p = colo.max_pool2d %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<8x4x16x16xf32>
  %a = colo.avg_pool2d %p {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<8x4x8x8xf32>
  %f = colo.reshape %a : tensor<8x4x4x4xf32> -> tensor<8x64xf32>
  %o = colo.matmul %f, %fw : tensor<8x64xf32>, tensor<64x10xf32>
  return %o, %m : tensor<8x10xf32>, tensor<4xf32>
}

// -----

// Batch-independent operands of the full batch size whose halves are equal
// are cut to their first half: an expanded causal mask, a splat, and a
// learned token broadcast over the batch before a concatenation.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[S:.*]]: tensor<2x2x3x3xf32>, %[[X:.*]]: tensor<2x3x3xf32>) -> (tensor<2x2x3x3xf32>, tensor<2x4x3xf32>)
// CHECK-NOT: tensor<4x
// CHECK: %[[MASK:.*]] = colo.constant dense<{{\[\[\[\[}}0.000000e+00, -1.000000e+09, -1.000000e+09], [0.000000e+00, 0.000000e+00, -1.000000e+09], [0.000000e+00, 0.000000e+00, 0.000000e+00]]], {{\[\[\[}}0.000000e+00, -1.000000e+09, -1.000000e+09], [0.000000e+00, 0.000000e+00, -1.000000e+09], [0.000000e+00, 0.000000e+00, 0.000000e+00]]]]> : tensor<2x1x3x3xf32>
// CHECK: %[[M:.*]] = colo.add %[[S]], %[[MASK]] : tensor<2x2x3x3xf32>, tensor<2x1x3x3xf32>
// CHECK: %[[HALF:.*]] = colo.constant dense<5.000000e-01> : tensor<2x1x1x1xf32>
// CHECK: %[[H:.*]] = colo.mul %[[M]], %[[HALF]] : tensor<2x2x3x3xf32>, tensor<2x1x1x1xf32>
// CHECK: %[[P:.*]] = colo.softmax %[[H]] axis = 3 : tensor<2x2x3x3xf32>
// CHECK: %[[CLS:.*]] = colo.global_load @cls : tensor<1x1x3xf32>
// CHECK: %[[CB:.*]] = colo.broadcast_to %[[CLS]] : tensor<1x1x3xf32> -> tensor<2x1x3xf32>
// CHECK: %[[CAT:.*]] = colo.concat %[[CB]], %[[X]] axis = 1 : tensor<2x1x3xf32>, tensor<2x3x3xf32>
// CHECK: return %[[P]], %[[CAT]]

// FOUR-LABEL: func.func @forward
// FOUR: colo.constant dense<{{\[\[\[\[}}0.000000e+00, -1.000000e+09, -1.000000e+09], [0.000000e+00, 0.000000e+00, -1.000000e+09], [0.000000e+00, 0.000000e+00, 0.000000e+00]]]]> : tensor<1x1x3x3xf32>
colo.global trainable @cls : tensor<1x1x3xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.1 : f64>
func.func @forward(%s: tensor<4x2x3x3xf32>, %x: tensor<4x3x3xf32>) -> (tensor<4x2x3x3xf32>, tensor<4x4x3xf32>) {
  %mask = colo.constant dense<[[[[0.0, -1.0e9, -1.0e9], [0.0, 0.0, -1.0e9], [0.0, 0.0, 0.0]]],
                              [[[0.0, -1.0e9, -1.0e9], [0.0, 0.0, -1.0e9], [0.0, 0.0, 0.0]]],
                              [[[0.0, -1.0e9, -1.0e9], [0.0, 0.0, -1.0e9], [0.0, 0.0, 0.0]]],
                              [[[0.0, -1.0e9, -1.0e9], [0.0, 0.0, -1.0e9], [0.0, 0.0, 0.0]]]]> : tensor<4x1x3x3xf32>
  %m = colo.add %s, %mask : tensor<4x2x3x3xf32>, tensor<4x1x3x3xf32>
  %half = colo.constant dense<0.5> : tensor<4x1x1x1xf32>
  %h = colo.mul %m, %half : tensor<4x2x3x3xf32>, tensor<4x1x1x1xf32>
  %p = colo.softmax %h axis = 3 : tensor<4x2x3x3xf32>
  %cls = colo.global_load @cls : tensor<1x1x3xf32>
  %cb = colo.broadcast_to %cls : tensor<1x1x3xf32> -> tensor<4x1x3xf32>
  %cat = colo.concat %cb, %x axis = 1 : tensor<4x1x3xf32>, tensor<4x3x3xf32>
  return %p, %cat : tensor<4x2x3x3xf32>, tensor<4x4x3xf32>
}

// -----

// The batch moves with transposes (here into a matmul's column dimension),
// stays the outermost factor of a reshape that packs two samples per row,
// and survives reductions, gathers and selects along other dimensions.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:.*]]: tensor<4x6xf32>) -> (tensor<2x12xf32>, tensor<4x1xf32>, tensor<4x2xf32>)
// CHECK: %[[XT:.*]] = colo.transpose %[[X]] permutation = [1, 0] : tensor<4x6xf32>
// CHECK: %[[WX:.*]] = colo.matmul %{{.*}}, %[[XT]] : tensor<3x6xf32>, tensor<6x4xf32>
// CHECK: %[[BACK:.*]] = colo.transpose %[[WX]] permutation = [1, 0] : tensor<3x4xf32>
// CHECK: colo.reshape %[[X]] : tensor<4x6xf32> -> tensor<2x12xf32>
// CHECK: colo.reduce_max %[[BACK]] dims = [1] {keep_dims} : tensor<4x3xf32>
// CHECK: %[[G:.*]] = colo.gather %[[BACK]], %{{.*}} axis = 1 : tensor<4x3xf32>, tensor<2xi64>
// CHECK: %[[C:.*]] = colo.compare gt, %[[G]], %{{.*}} : tensor<4x2xf32>, tensor<f32>
// CHECK: colo.select %[[C]], %[[G]], %{{.*}} : tensor<4x2xi1>, tensor<4x2xf32>, tensor<f32>
colo.global trainable @w : tensor<3x6xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.1 : f64>
func.func @forward(%x: tensor<8x6xf32>) -> (tensor<4x12xf32>, tensor<8x1xf32>, tensor<8x2xf32>) {
  %w = colo.global_load @w : tensor<3x6xf32>
  %xt = colo.transpose %x permutation = [1, 0] : tensor<8x6xf32>
  %wx = colo.matmul %w, %xt : tensor<3x6xf32>, tensor<6x8xf32>
  %back = colo.transpose %wx permutation = [1, 0] : tensor<3x8xf32>
  %pairs = colo.reshape %x : tensor<8x6xf32> -> tensor<4x12xf32>
  %mx = colo.reduce_max %back dims = [1] {keep_dims} : tensor<8x3xf32>
  %idx = colo.constant dense<[2, 0]> : tensor<2xi64>
  %g = colo.gather %back, %idx axis = 1 : tensor<8x3xf32>, tensor<2xi64>
  %zero = colo.constant dense<0.0> : tensor<f32>
  %c = colo.compare gt, %g, %zero : tensor<8x2xf32>, tensor<f32>
  %s = colo.select %c, %g, %zero : tensor<8x2xi1>, tensor<8x2xf32>, tensor<f32>
  return %pairs, %mx, %s : tensor<4x12xf32>, tensor<8x1xf32>, tensor<8x2xf32>
}

// -----

// A batch-independent value computed at the batch size from parameters and
// equal constants (OPT's positions: every sample gathers the same rows) is
// computed at the local size from the constant's first chunk; the
// full-size op is gone.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[IDS:.*]]: tensor<2x3xi64>) -> tensor<2x3x4xf32>
// CHECK-DAG: %[[POS:.*]] = colo.constant dense<{{\[\[}}0, 1, 2], [0, 1, 2]]> : tensor<2x3xi64>
// CHECK-DAG: %[[TAB:.*]] = colo.global_load @pos : tensor<8x4xf32>
// CHECK: %[[PE:.*]] = colo.embedding %[[TAB]], %[[POS]] : tensor<8x4xf32>, tensor<2x3xi64>
// CHECK: %[[S:.*]] = colo.mul %[[PE]], %{{.*}} : tensor<2x3x4xf32>, tensor<f32>
// CHECK-NOT: tensor<4x3
// CHECK: colo.add %{{.*}}, %[[S]] : tensor<2x3x4xf32>, tensor<2x3x4xf32>
colo.global trainable @tok : tensor<16x4xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.1 : f64>
colo.global trainable @pos : tensor<8x4xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.1 : f64>
func.func @forward(%ids: tensor<4x3xi64>) -> tensor<4x3x4xf32> {
  %tok = colo.global_load @tok : tensor<16x4xf32>
  %te = colo.embedding %tok, %ids : tensor<16x4xf32>, tensor<4x3xi64>
  %tab = colo.global_load @pos : tensor<8x4xf32>
  %positions = colo.constant dense<[[0, 1, 2], [0, 1, 2], [0, 1, 2], [0, 1, 2]]> : tensor<4x3xi64>
  %pe = colo.embedding %tab, %positions : tensor<8x4xf32>, tensor<4x3xi64>
  %two = colo.constant dense<2.0> : tensor<f32>
  %s = colo.mul %pe, %two : tensor<4x3x4xf32>, tensor<f32>
  %h = colo.add %te, %s : tensor<4x3x4xf32>, tensor<4x3x4xf32>
  return %h : tensor<4x3x4xf32>
}
