// RUN: colo-opt %s | colo-opt | FileCheck %s
// RUN: colo-opt %s --mlir-print-op-generic | colo-opt | FileCheck %s

// Round trip of every colo op and attribute. Each function returns its
// results with the expected types, so func.return checks the inferred types.

//===----------------------------------------------------------------------===//
// Model state
//===----------------------------------------------------------------------===//

// CHECK-LABEL: colo.global @inline : tensor<2x2xf32> = dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
colo.global @inline : tensor<2x2xf32> = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>

// CHECK-LABEL: colo.global @bn1.running_mean : tensor<64xf32> = dense<0.000000e+00> : tensor<64xf32>
colo.global @"bn1.running_mean" : tensor<64xf32> = dense<0.0> : tensor<64xf32>

// CHECK-LABEL: colo.global @blob : tensor<2xf32> = dense_resource<colo_blob> : tensor<2xf32>
colo.global @blob : tensor<2xf32> = dense_resource<colo_blob> : tensor<2xf32>

// CHECK-LABEL: colo.global trainable @fc.weight : tensor<10x64xf32> = #colo.external<path = "/models/m.onnx.data", offset = 4096, length = 2560>
colo.global trainable @"fc.weight" : tensor<10x64xf32> = #colo.external<path = "/models/m.onnx.data", offset = 4096, length = 2560>

// Sub-byte elements round the length up to whole bytes.
// A two-dimensional shard (2-D tensor parallelism) and a flat one (ZeRO-3).
// CHECK-LABEL: colo.global trainable @w2d : tensor<8x4xf32> {shard = #colo.shard<split_axes = {{\[}}["row"], ["col", "tp"]], parts = [2, 4]>}
colo.global trainable @w2d : tensor<8x4xf32> {shard = #colo.shard<split_axes = [["row"], ["col", "tp"]], parts = [2, 4]>}
// CHECK-LABEL: colo.global trainable @flat : tensor<3x5xf32> {shard = #colo.shard<flat = true, split_axes = {{\[}}["dp"]], parts = [4]>}
colo.global trainable @flat : tensor<3x5xf32> {shard = #colo.shard<flat = true, split_axes = [["dp"]], parts = [4]>}
// CHECK-LABEL: colo.global trainable @flatblock : tensor<3x4xf32> {shard = #colo.shard<split_axes = {{\[}}[], ["tp"]], parts = [1, 2], flat_axes = ["dp"], flat_parts = 4>}
colo.global trainable @flatblock : tensor<3x4xf32> {shard = #colo.shard<split_axes = [[], ["tp"]], parts = [1, 2], flat_axes = ["dp"], flat_parts = 4>}

// CHECK-LABEL: colo.global @packed : tensor<3xi4> = #colo.external<path = "/m.bin", offset = 0, length = 2>
colo.global @packed : tensor<3xi4> = #colo.external<path = "/m.bin", offset = 0, length = 2>

// CHECK-LABEL: colo.global trainable @h.0.attn.c_attn.weight : tensor<64x192xf32> = #colo.init<distribution = "normal", a = 0.000000e+00 : f64, b = 2.000000e-02 : f64>
colo.global trainable @"h.0.attn.c_attn.weight" : tensor<64x192xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 2.0e-02 : f64>

// CHECK-LABEL: colo.global @uniform : tensor<8xf32> = #colo.init<distribution = "uniform", a = -1.000000e+00 : f64, b = 1.000000e+00 : f64>
colo.global @uniform : tensor<8xf32> = #colo.init<distribution = "uniform", a = -1.0 : f64, b = 1.0 : f64>

// Names that are not bare identifiers stay quoted.
// CHECK-LABEL: colo.global @"encoder/ln/ones" : tensor<8xf32> = #colo.init<distribution = "ones", a = 0.000000e+00 : f64, b = 0.000000e+00 : f64>
colo.global @"encoder/ln/ones" : tensor<8xf32> = #colo.init<distribution = "ones", a = 0.0 : f64, b = 0.0 : f64>

// CHECK-LABEL: colo.global trainable @filled_by_runtime : tensor<4xf32>{{$}}
colo.global trainable @filled_by_runtime : tensor<4xf32>

// CHECK-LABEL: func.func @global_load
// CHECK: %[[W:.*]] = colo.global_load @fc.weight : tensor<10x64xf32>
// CHECK: return %[[W]] : tensor<10x64xf32>
func.func @global_load() -> tensor<10x64xf32> {
  %w = colo.global_load @"fc.weight" : tensor<10x64xf32>
  return %w : tensor<10x64xf32>
}

// CHECK-LABEL: func.func @constant
// CHECK: %[[C:.*]] = colo.constant dense<{{\[}}1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK: %[[S:.*]] = colo.constant dense<2.000000e+00> : tensor<f32>
// CHECK: %[[I:.*]] = colo.constant dense<[0, 3]> : tensor<2xi64>
// CHECK: return %[[C]], %[[S]], %[[I]]
func.func @constant() -> (tensor<2xf32>, tensor<f32>, tensor<2xi64>) {
  %c = colo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %s = colo.constant dense<2.0> : tensor<f32>
  %i = colo.constant dense<[0, 3]> : tensor<2xi64>
  return %c, %s, %i : tensor<2xf32>, tensor<f32>, tensor<2xi64>
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK: %[[NEG:.*]] = colo.neg %[[X]] : tensor<4x8xf32>
// CHECK: %[[EXP:.*]] = colo.exp %[[NEG]] : tensor<4x8xf32>
// CHECK: %[[LOG:.*]] = colo.log %[[EXP]] : tensor<4x8xf32>
// CHECK: %[[SQRT:.*]] = colo.sqrt %[[LOG]] : tensor<4x8xf32>
// CHECK: %[[RSQRT:.*]] = colo.rsqrt %[[SQRT]] : tensor<4x8xf32>
// CHECK: %[[RECIP:.*]] = colo.reciprocal %[[RSQRT]] : tensor<4x8xf32>
// CHECK: %[[TANH:.*]] = colo.tanh %[[RECIP]] : tensor<4x8xf32>
// CHECK: %[[ERF:.*]] = colo.erf %[[TANH]] : tensor<4x8xf32>
// CHECK: %[[SIGMOID:.*]] = colo.sigmoid %[[ERF]] : tensor<4x8xf32>
// CHECK: %[[RELU:.*]] = colo.relu %[[SIGMOID]] : tensor<4x8xf32>
// CHECK: %[[SILU:.*]] = colo.silu %[[RELU]] : tensor<4x8xf32>
// CHECK: %[[COS:.*]] = colo.cos %[[SILU]] : tensor<4x8xf32>
// CHECK: %[[SIN:.*]] = colo.sin %[[COS]] : tensor<4x8xf32>
// CHECK: return %[[SIN]] : tensor<4x8xf32>
func.func @unary(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = colo.neg %x : tensor<4x8xf32>
  %1 = colo.exp %0 : tensor<4x8xf32>
  %2 = colo.log %1 : tensor<4x8xf32>
  %3 = colo.sqrt %2 : tensor<4x8xf32>
  %4 = colo.rsqrt %3 : tensor<4x8xf32>
  %5 = colo.reciprocal %4 : tensor<4x8xf32>
  %6 = colo.tanh %5 : tensor<4x8xf32>
  %7 = colo.erf %6 : tensor<4x8xf32>
  %8 = colo.sigmoid %7 : tensor<4x8xf32>
  %9 = colo.relu %8 : tensor<4x8xf32>
  %10 = colo.silu %9 : tensor<4x8xf32>
  %11 = colo.cos %10 : tensor<4x8xf32>
  %12 = colo.sin %11 : tensor<4x8xf32>
  return %12 : tensor<4x8xf32>
}

// The default approximation is not printed.
// CHECK-LABEL: func.func @gelu
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xbf16>)
// CHECK: %[[ERF:.*]] = colo.gelu %[[X]] : tensor<2x8xbf16>
// CHECK: %[[DEFAULT:.*]] = colo.gelu %[[X]] : tensor<2x8xbf16>
// CHECK: %[[TANH:.*]] = colo.gelu %[[X]] approximation = tanh : tensor<2x8xbf16>
// CHECK: return %[[ERF]], %[[DEFAULT]], %[[TANH]]
func.func @gelu(%x: tensor<2x8xbf16>) -> (tensor<2x8xbf16>, tensor<2x8xbf16>, tensor<2x8xbf16>) {
  %0 = colo.gelu %x : tensor<2x8xbf16>
  %1 = colo.gelu %x approximation = none : tensor<2x8xbf16>
  %2 = colo.gelu %x approximation = tanh : tensor<2x8xbf16>
  return %0, %1, %2 : tensor<2x8xbf16>, tensor<2x8xbf16>, tensor<2x8xbf16>
}

// CHECK-LABEL: func.func @clamp
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>)
// CHECK: %[[Y:.*]] = colo.clamp %[[X]] min = 0.000000e+00 max = 6.000000e+00 : tensor<8xf32>
// CHECK: return %[[Y]]
func.func @clamp(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = colo.clamp %x min = 0.0 max = 6.0 : tensor<8xf32>
  return %y : tensor<8xf32>
}

// CHECK-LABEL: func.func @binary
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[Y:.*]]: tensor<4x8xf32>)
// CHECK: %[[ADD:.*]] = colo.add %[[X]], %[[Y]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK: %[[SUB:.*]] = colo.sub %[[ADD]], %[[Y]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK: %[[MUL:.*]] = colo.mul %[[SUB]], %[[Y]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK: %[[DIV:.*]] = colo.div %[[MUL]], %[[Y]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK: %[[POW:.*]] = colo.pow %[[DIV]], %[[Y]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK: %[[MAX:.*]] = colo.maximum %[[POW]], %[[Y]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK: %[[MIN:.*]] = colo.minimum %[[MAX]], %[[Y]] : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK: return %[[MIN]] : tensor<4x8xf32>
func.func @binary(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = colo.add %x, %y : tensor<4x8xf32>, tensor<4x8xf32>
  %1 = colo.sub %0, %y : tensor<4x8xf32>, tensor<4x8xf32>
  %2 = colo.mul %1, %y : tensor<4x8xf32>, tensor<4x8xf32>
  %3 = colo.div %2, %y : tensor<4x8xf32>, tensor<4x8xf32>
  %4 = colo.pow %3, %y : tensor<4x8xf32>, tensor<4x8xf32>
  %5 = colo.maximum %4, %y : tensor<4x8xf32>, tensor<4x8xf32>
  %6 = colo.minimum %5, %y : tensor<4x8xf32>, tensor<4x8xf32>
  return %6 : tensor<4x8xf32>
}

// Both operands broadcast: [4, 1, 8] and [3, 1] give [4, 3, 8].
// CHECK-LABEL: func.func @add_broadcast
// CHECK-SAME: (%[[X:.*]]: tensor<4x1x8xf32>, %[[Y:.*]]: tensor<3x1xf32>, %[[S:.*]]: tensor<f32>)
// CHECK: %[[A:.*]] = colo.add %[[X]], %[[Y]] : tensor<4x1x8xf32>, tensor<3x1xf32>
// CHECK: %[[B:.*]] = colo.mul %[[S]], %[[A]] : tensor<f32>, tensor<4x3x8xf32>
// CHECK: return %[[A]], %[[B]] : tensor<4x3x8xf32>, tensor<4x3x8xf32>
func.func @add_broadcast(%x: tensor<4x1x8xf32>, %y: tensor<3x1xf32>, %s: tensor<f32>)
    -> (tensor<4x3x8xf32>, tensor<4x3x8xf32>) {
  %0 = colo.add %x, %y : tensor<4x1x8xf32>, tensor<3x1xf32>
  %1 = colo.mul %s, %0 : tensor<f32>, tensor<4x3x8xf32>
  return %0, %1 : tensor<4x3x8xf32>, tensor<4x3x8xf32>
}

// Binary ops also take integer tensors.
// CHECK-LABEL: func.func @add_integer
// CHECK: colo.add %{{.*}}, %{{.*}} : tensor<4xi64>, tensor<1xi64>
func.func @add_integer(%x: tensor<4xi64>, %y: tensor<1xi64>) -> tensor<4xi64> {
  %0 = colo.add %x, %y : tensor<4xi64>, tensor<1xi64>
  return %0 : tensor<4xi64>
}

// CHECK-LABEL: func.func @compare
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xi64>, %[[Y:.*]]: tensor<4xi64>)
// CHECK: %[[LT:.*]] = colo.compare lt, %[[X]], %[[Y]] : tensor<4x4xi64>, tensor<4xi64>
// CHECK: %[[GE:.*]] = colo.compare ge, %[[X]], %[[Y]] : tensor<4x4xi64>, tensor<4xi64>
// CHECK: return %[[LT]], %[[GE]] : tensor<4x4xi1>, tensor<4x4xi1>
func.func @compare(%x: tensor<4x4xi64>, %y: tensor<4xi64>) -> (tensor<4x4xi1>, tensor<4x4xi1>) {
  %0 = colo.compare lt, %x, %y : tensor<4x4xi64>, tensor<4xi64>
  %1 = colo.compare ge, %x, %y : tensor<4x4xi64>, tensor<4xi64>
  return %0, %1 : tensor<4x4xi1>, tensor<4x4xi1>
}

// CHECK-LABEL: func.func @select
// CHECK-SAME: (%[[M:.*]]: tensor<1x1x4x4xi1>, %[[X:.*]]: tensor<2x4x4x4xf32>, %[[Y:.*]]: tensor<f32>)
// CHECK: %[[Z:.*]] = colo.select %[[M]], %[[X]], %[[Y]] : tensor<1x1x4x4xi1>, tensor<2x4x4x4xf32>, tensor<f32>
// CHECK: return %[[Z]] : tensor<2x4x4x4xf32>
func.func @select(%m: tensor<1x1x4x4xi1>, %x: tensor<2x4x4x4xf32>, %y: tensor<f32>) -> tensor<2x4x4x4xf32> {
  %0 = colo.select %m, %x, %y : tensor<1x1x4x4xi1>, tensor<2x4x4x4xf32>, tensor<f32>
  return %0 : tensor<2x4x4x4xf32>
}

// CHECK-LABEL: func.func @convert
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK: %[[B:.*]] = colo.convert %[[X]] : tensor<4xf32> to tensor<4xbf16>
// CHECK: %[[I:.*]] = colo.convert %[[B]] : tensor<4xbf16> to tensor<4xi32>
// CHECK: return %[[B]], %[[I]]
func.func @convert(%x: tensor<4xf32>) -> (tensor<4xbf16>, tensor<4xi32>) {
  %0 = colo.convert %x : tensor<4xf32> to tensor<4xbf16>
  %1 = colo.convert %0 : tensor<4xbf16> to tensor<4xi32>
  return %0, %1 : tensor<4xbf16>, tensor<4xi32>
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[X:.*]]: tensor<8x128x64xf32>, %[[W:.*]]: tensor<64x256xf32>)
// CHECK: %[[Y:.*]] = colo.matmul %[[X]], %[[W]] : tensor<8x128x64xf32>, tensor<64x256xf32>
// CHECK: return %[[Y]] : tensor<8x128x256xf32>
func.func @matmul(%x: tensor<8x128x64xf32>, %w: tensor<64x256xf32>) -> tensor<8x128x256xf32> {
  %0 = colo.matmul %x, %w : tensor<8x128x64xf32>, tensor<64x256xf32>
  return %0 : tensor<8x128x256xf32>
}

// Batch dimensions [2, 1] and [3] broadcast to [2, 3].
// CHECK-LABEL: func.func @matmul_broadcast_batch
// CHECK-SAME: (%[[A:.*]]: tensor<2x1x16x8xf32>, %[[B:.*]]: tensor<3x8x4xf32>)
// CHECK: %[[Y:.*]] = colo.matmul %[[A]], %[[B]] : tensor<2x1x16x8xf32>, tensor<3x8x4xf32>
// CHECK: return %[[Y]] : tensor<2x3x16x4xf32>
func.func @matmul_broadcast_batch(%a: tensor<2x1x16x8xf32>, %b: tensor<3x8x4xf32>) -> tensor<2x3x16x4xf32> {
  %0 = colo.matmul %a, %b : tensor<2x1x16x8xf32>, tensor<3x8x4xf32>
  return %0 : tensor<2x3x16x4xf32>
}

// CHECK-LABEL: func.func @conv2d
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x64x64xf32>, %[[W:.*]]: tensor<64x3x7x7xf32>)
// CHECK: %[[Y:.*]] = colo.conv2d %[[X]], %[[W]] : tensor<1x3x64x64xf32>, tensor<64x3x7x7xf32>
// CHECK: return %[[Y]] : tensor<1x64x58x58xf32>
func.func @conv2d(%x: tensor<1x3x64x64xf32>, %w: tensor<64x3x7x7xf32>) -> tensor<1x64x58x58xf32> {
  %0 = colo.conv2d %x, %w : tensor<1x3x64x64xf32>, tensor<64x3x7x7xf32>
  return %0 : tensor<1x64x58x58xf32>
}

// ResNet's stem: (64 + 3 + 3 - 7) / 2 + 1 = 32.
// CHECK-LABEL: func.func @conv2d_bias_stride_padding
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x64x64xf32>, %[[W:.*]]: tensor<64x3x7x7xf32>, %[[B:.*]]: tensor<64xf32>)
// CHECK: %[[Y:.*]] = colo.conv2d %[[X]], %[[W]] bias %[[B]] {padding = array<i64: 3, 3, 3, 3>, strides = array<i64: 2, 2>} : tensor<1x3x64x64xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>
// CHECK: return %[[Y]] : tensor<1x64x32x32xf32>
func.func @conv2d_bias_stride_padding(%x: tensor<1x3x64x64xf32>, %w: tensor<64x3x7x7xf32>, %b: tensor<64xf32>) -> tensor<1x64x32x32xf32> {
  %0 = colo.conv2d %x, %w bias %b {strides = array<i64: 2, 2>, padding = array<i64: 3, 3, 3, 3>}
       : tensor<1x3x64x64xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>
  return %0 : tensor<1x64x32x32xf32>
}

// Depthwise (groups = channels), dilated, asymmetric padding:
// H: (10 + 1 + 0 - 5) / 1 + 1 = 7, W: (10 + 0 + 1 - 5) / 2 + 1 = 4.
// CHECK-LABEL: func.func @conv2d_groups_dilations
// CHECK: %[[Y:.*]] = colo.conv2d %{{.*}}, %{{.*}} {dilations = array<i64: 2, 2>, groups = 32 : i64, padding = array<i64: 1, 0, 0, 1>, strides = array<i64: 1, 2>} : tensor<2x32x10x10xf32>, tensor<32x1x3x3xf32>
// CHECK: return %[[Y]] : tensor<2x32x7x4xf32>
func.func @conv2d_groups_dilations(%x: tensor<2x32x10x10xf32>, %w: tensor<32x1x3x3xf32>) -> tensor<2x32x7x4xf32> {
  %0 = colo.conv2d %x, %w {groups = 32 : i64, strides = array<i64: 1, 2>,
                           padding = array<i64: 1, 0, 0, 1>, dilations = array<i64: 2, 2>}
       : tensor<2x32x10x10xf32>, tensor<32x1x3x3xf32>
  return %0 : tensor<2x32x7x4xf32>
}

// Grouped-query attention: 4 query heads share 2 key/value heads; the value
// head size (16) sets the result's last dimension.
// CHECK-LABEL: func.func @attention_gqa
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x16x8xf32>, %[[K:.*]]: tensor<2x2x32x8xf32>, %[[V:.*]]: tensor<2x2x32x16xf32>)
// CHECK: %[[O:.*]] = colo.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 1.250000e-01 : f64} : tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x16xf32>
// CHECK: return %[[O]] : tensor<2x4x16x16xf32>
func.func @attention_gqa(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x2x32x16xf32>) -> tensor<2x4x16x16xf32> {
  %0 = colo.attention %q, %k, %v {scale = 0.125 : f64, causal}
       : tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x16xf32>
  return %0 : tensor<2x4x16x16xf32>
}

// CHECK-LABEL: func.func @attention_mask
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x16x8xf32>, %[[K:.*]]: tensor<2x4x16x8xf32>, %[[V:.*]]: tensor<2x4x16x8xf32>, %[[M:.*]]: tensor<2x1x1x16xf32>)
// CHECK: %[[O:.*]] = colo.attention %[[Q]], %[[K]], %[[V]] mask %[[M]] {scale = 3.535530e-01 : f64} : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x1x1x16xf32>
// CHECK: return %[[O]] : tensor<2x4x16x8xf32>
func.func @attention_mask(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>, %m: tensor<2x1x1x16xf32>) -> tensor<2x4x16x8xf32> {
  %0 = colo.attention %q, %k, %v mask %m {scale = 0.353553 : f64}
       : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x1x1x16xf32>
  return %0 : tensor<2x4x16x8xf32>
}

// Attention dropout round-trips; the default 0 is not printed.
// CHECK-LABEL: func.func @attention_dropout
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x16x8xf32>, %[[K:.*]]: tensor<2x2x16x8xf32>, %[[V:.*]]: tensor<2x2x16x8xf32>)
// CHECK: %[[A:.*]] = colo.attention %[[Q]], %[[K]], %[[V]] {causal, dropout = 1.000000e-01 : f64, scale = 1.250000e-01 : f64} : tensor<2x4x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>
// CHECK: %[[B:.*]] = colo.attention %[[Q]], %[[K]], %[[V]] {scale = 1.250000e-01 : f64} : tensor<2x4x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>
// CHECK: return %[[A]], %[[B]]
func.func @attention_dropout(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>)
    -> (tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) {
  %0 = colo.attention %q, %k, %v {scale = 0.125 : f64, causal, dropout = 0.1 : f64}
       : tensor<2x4x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>
  %1 = colo.attention %q, %k, %v {scale = 0.125 : f64, dropout = 0.0 : f64}
       : tensor<2x4x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>
  return %0, %1 : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
}

//===----------------------------------------------------------------------===//
// Normalization and regularization
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x16x16xf32>)
// CHECK: %[[P:.*]] = colo.softmax %[[X]] axis = 3 : tensor<2x4x16x16xf32>
// CHECK: %[[L:.*]] = colo.log_softmax %[[X]] axis = -1 : tensor<2x4x16x16xf32>
// CHECK: return %[[P]], %[[L]]
func.func @softmax(%x: tensor<2x4x16x16xf32>) -> (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) {
  %0 = colo.softmax %x axis = 3 : tensor<2x4x16x16xf32>
  %1 = colo.log_softmax %x axis = -1 : tensor<2x4x16x16xf32>
  return %0, %1 : tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>
}

// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x64xf32>, %[[G:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>, %[[G2:.*]]: tensor<16x64xf32>)
// CHECK: %[[PLAIN:.*]] = colo.layer_norm %[[X]] {axis = 2 : i64, epsilon = 9.9999997473787516E-6 : f64} : tensor<2x16x64xf32>
// CHECK: %[[SCALE:.*]] = colo.layer_norm %[[X]] scale %[[G]] : tensor<64xf32> {axis = 2 : i64, epsilon = 1.000000e-05 : f64} : tensor<2x16x64xf32>
// CHECK: %[[BIAS:.*]] = colo.layer_norm %[[X]] bias %[[B]] : tensor<64xf32> {axis = -1 : i64, epsilon = 1.000000e-05 : f64} : tensor<2x16x64xf32>
// CHECK: %[[BOTH:.*]] = colo.layer_norm %[[X]] scale %[[G]] : tensor<64xf32> bias %[[B]] : tensor<64xf32> {axis = 2 : i64, epsilon = 1.000000e-05 : f64} : tensor<2x16x64xf32>
// CHECK: %[[TWO:.*]] = colo.layer_norm %[[X]] scale %[[G2]] : tensor<16x64xf32> {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : tensor<2x16x64xf32>
// CHECK: return %[[PLAIN]], %[[SCALE]], %[[BIAS]], %[[BOTH]], %[[TWO]]
func.func @layer_norm(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>, %g2: tensor<16x64xf32>)
    -> (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>) {
  %0 = colo.layer_norm %x {axis = 2 : i64, epsilon = 9.9999997473787516E-6 : f64} : tensor<2x16x64xf32>
  %1 = colo.layer_norm %x scale %g : tensor<64xf32> {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<2x16x64xf32>
  %2 = colo.layer_norm %x bias %b : tensor<64xf32> {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x16x64xf32>
  %3 = colo.layer_norm %x scale %g : tensor<64xf32> bias %b : tensor<64xf32> {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<2x16x64xf32>
  %4 = colo.layer_norm %x scale %g2 : tensor<16x64xf32> {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x16x64xf32>
  return %0, %1, %2, %3, %4 : tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>
}

// CHECK-LABEL: func.func @rms_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x64xf32>, %[[G:.*]]: tensor<64xf32>)
// CHECK: %[[PLAIN:.*]] = colo.rms_norm %[[X]] {axis = 2 : i64, epsilon = 9.9999999999999995E-7 : f64} : tensor<2x16x64xf32>
// CHECK: %[[SCALE:.*]] = colo.rms_norm %[[X]] scale %[[G]] : tensor<64xf32> {axis = 2 : i64, epsilon = 9.9999999999999995E-7 : f64} : tensor<2x16x64xf32>
// CHECK: return %[[PLAIN]], %[[SCALE]]
func.func @rms_norm(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>) -> (tensor<2x16x64xf32>, tensor<2x16x64xf32>) {
  %0 = colo.rms_norm %x {axis = 2 : i64, epsilon = 1.0e-06 : f64} : tensor<2x16x64xf32>
  %1 = colo.rms_norm %x scale %g : tensor<64xf32> {axis = 2 : i64, epsilon = 1.0e-06 : f64} : tensor<2x16x64xf32>
  return %0, %1 : tensor<2x16x64xf32>, tensor<2x16x64xf32>
}

// CHECK-LABEL: func.func @batch_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x64x8x8xf32>, %[[G:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>, %[[RM:.*]]: tensor<64xf32>, %[[RV:.*]]: tensor<64xf32>)
// CHECK: %[[Y:.*]], %[[M:.*]], %[[V:.*]] = colo.batch_norm %[[X]], %[[G]], %[[B]], %[[RM]], %[[RV]] {epsilon = 1.000000e-05 : f64, momentum = 1.000000e-01 : f64, training} : tensor<2x64x8x8xf32>, tensor<64xf32>
// CHECK: %[[YE:.*]], %{{.*}}, %{{.*}} = colo.batch_norm %[[X]], %[[G]], %[[B]], %[[RM]], %[[RV]] {epsilon = 1.000000e-05 : f64, momentum = 1.000000e-01 : f64} : tensor<2x64x8x8xf32>, tensor<64xf32>
// CHECK: return %[[Y]], %[[M]], %[[V]], %[[YE]]
func.func @batch_norm(%x: tensor<2x64x8x8xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>, %rm: tensor<64xf32>, %rv: tensor<64xf32>)
    -> (tensor<2x64x8x8xf32>, tensor<64xf32>, tensor<64xf32>, tensor<2x64x8x8xf32>) {
  %y, %m, %v = colo.batch_norm %x, %g, %b, %rm, %rv {epsilon = 1.0e-05 : f64, momentum = 0.1 : f64, training}
      : tensor<2x64x8x8xf32>, tensor<64xf32>
  %ye, %me, %ve = colo.batch_norm %x, %g, %b, %rm, %rv {epsilon = 1.0e-05 : f64, momentum = 0.1 : f64}
      : tensor<2x64x8x8xf32>, tensor<64xf32>
  return %y, %m, %v, %ye : tensor<2x64x8x8xf32>, tensor<64xf32>, tensor<64xf32>, tensor<2x64x8x8xf32>
}

// CHECK-LABEL: func.func @dropout
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x64xf32>)
// CHECK: %[[Y:.*]] = colo.dropout %[[X]] ratio = 1.000000e-01 : tensor<2x16x64xf32>
// CHECK: return %[[Y]]
func.func @dropout(%x: tensor<2x16x64xf32>) -> tensor<2x16x64xf32> {
  %0 = colo.dropout %x ratio = 1.0e-01 : tensor<2x16x64xf32>
  return %0 : tensor<2x16x64xf32>
}

//===----------------------------------------------------------------------===//
// Reductions and pooling
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reduce
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>)
// CHECK: %[[SUM:.*]] = colo.reduce_sum %[[X]] dims = [1] : tensor<2x4x8xf32>
// CHECK: %[[MEAN:.*]] = colo.reduce_mean %[[X]] dims = [1, 2] {keep_dims} : tensor<2x4x8xf32>
// CHECK: %[[MAX:.*]] = colo.reduce_max %[[X]] dims = [0, 1, 2] : tensor<2x4x8xf32>
// CHECK: %[[KEEP:.*]] = colo.reduce_max %[[X]] dims = [2] {keep_dims} : tensor<2x4x8xf32>
// CHECK: %[[NONE:.*]] = colo.reduce_sum %[[X]] dims = [] : tensor<2x4x8xf32>
// CHECK: return %[[SUM]], %[[MEAN]], %[[MAX]], %[[KEEP]], %[[NONE]] : tensor<2x8xf32>, tensor<2x1x1xf32>, tensor<f32>, tensor<2x4x1xf32>, tensor<2x4x8xf32>
func.func @reduce(%x: tensor<2x4x8xf32>)
    -> (tensor<2x8xf32>, tensor<2x1x1xf32>, tensor<f32>, tensor<2x4x1xf32>, tensor<2x4x8xf32>) {
  %0 = colo.reduce_sum %x dims = [1] : tensor<2x4x8xf32>
  %1 = colo.reduce_mean %x dims = [1, 2] {keep_dims} : tensor<2x4x8xf32>
  %2 = colo.reduce_max %x dims = [0, 1, 2] : tensor<2x4x8xf32>
  %3 = colo.reduce_max %x dims = [2] {keep_dims} : tensor<2x4x8xf32>
  %4 = colo.reduce_sum %x dims = [] : tensor<2x4x8xf32>
  return %0, %1, %2, %3, %4 : tensor<2x8xf32>, tensor<2x1x1xf32>, tensor<f32>, tensor<2x4x1xf32>, tensor<2x4x8xf32>
}

// (32 + 1 + 1 - 3) / 2 + 1 = 16; default strides 1 and no padding: 32 - 2 + 1.
// CHECK-LABEL: func.func @pooling
// CHECK-SAME: (%[[X:.*]]: tensor<1x64x32x32xf32>)
// CHECK: %[[MAX:.*]] = colo.max_pool2d %[[X]] {kernel = array<i64: 3, 3>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<1x64x32x32xf32>
// CHECK: %[[AVG:.*]] = colo.avg_pool2d %[[X]] {count_include_pad, kernel = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<1x64x32x32xf32>
// CHECK: %[[DEF:.*]] = colo.avg_pool2d %[[X]] {kernel = array<i64: 3, 3>} : tensor<1x64x32x32xf32>
// CHECK: return %[[MAX]], %[[AVG]], %[[DEF]] : tensor<1x64x16x16xf32>, tensor<1x64x17x17xf32>, tensor<1x64x30x30xf32>
func.func @pooling(%x: tensor<1x64x32x32xf32>)
    -> (tensor<1x64x16x16xf32>, tensor<1x64x17x17xf32>, tensor<1x64x30x30xf32>) {
  %0 = colo.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>}
       : tensor<1x64x32x32xf32>
  %1 = colo.avg_pool2d %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, count_include_pad}
       : tensor<1x64x32x32xf32>
  %2 = colo.avg_pool2d %x {kernel = array<i64: 3, 3>} : tensor<1x64x32x32xf32>
  return %0, %1, %2 : tensor<1x64x16x16xf32>, tensor<1x64x17x17xf32>, tensor<1x64x30x30xf32>
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x64xf32>)
// CHECK: %[[Y:.*]] = colo.reshape %[[X]] : tensor<2x16x64xf32> -> tensor<32x64xf32>
// CHECK: return %[[Y]]
func.func @reshape(%x: tensor<2x16x64xf32>) -> tensor<32x64xf32> {
  %0 = colo.reshape %x : tensor<2x16x64xf32> -> tensor<32x64xf32>
  return %0 : tensor<32x64xf32>
}

// CHECK-LABEL: func.func @transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x4x8xf32>)
// CHECK: %[[Y:.*]] = colo.transpose %[[X]] permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32>
// CHECK: %[[Z:.*]] = colo.transpose %[[X]] permutation = [3, 0, 1, 2] : tensor<2x16x4x8xf32>
// CHECK: return %[[Y]], %[[Z]] : tensor<2x4x16x8xf32>, tensor<8x2x16x4xf32>
func.func @transpose(%x: tensor<2x16x4x8xf32>) -> (tensor<2x4x16x8xf32>, tensor<8x2x16x4xf32>) {
  %0 = colo.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32>
  %1 = colo.transpose %x permutation = [3, 0, 1, 2] : tensor<2x16x4x8xf32>
  return %0, %1 : tensor<2x4x16x8xf32>, tensor<8x2x16x4xf32>
}

// Strided slices round up: [1, 10) step 3 takes 1, 4, 7.
// CHECK-LABEL: func.func @slice
// CHECK-SAME: (%[[X:.*]]: tensor<16x192xf32>)
// CHECK: %[[Y:.*]] = colo.slice %[[X]] start = [0, 64] limit = [16, 128] stride = [1, 1] : tensor<16x192xf32>
// CHECK: %[[Z:.*]] = colo.slice %[[X]] start = [1, 0] limit = [10, 192] stride = [3, 2] : tensor<16x192xf32>
// CHECK: return %[[Y]], %[[Z]] : tensor<16x64xf32>, tensor<3x96xf32>
func.func @slice(%x: tensor<16x192xf32>) -> (tensor<16x64xf32>, tensor<3x96xf32>) {
  %0 = colo.slice %x start = [0, 64] limit = [16, 128] stride = [1, 1] : tensor<16x192xf32>
  %1 = colo.slice %x start = [1, 0] limit = [10, 192] stride = [3, 2] : tensor<16x192xf32>
  return %0, %1 : tensor<16x64xf32>, tensor<3x96xf32>
}

// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x5xf32>, %[[C:.*]]: tensor<4x3xf32>)
// CHECK: %[[X:.*]] = colo.concat %[[A]], %[[B]], %[[A]] axis = 1 : tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>
// CHECK: %[[Y:.*]] = colo.concat %[[A]], %[[C]] axis = -2 : tensor<2x3xf32>, tensor<4x3xf32>
// CHECK: return %[[X]], %[[Y]] : tensor<2x11xf32>, tensor<6x3xf32>
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %c: tensor<4x3xf32>) -> (tensor<2x11xf32>, tensor<6x3xf32>) {
  %0 = colo.concat %a, %b, %a axis = 1 : tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>
  %1 = colo.concat %a, %c axis = -2 : tensor<2x3xf32>, tensor<4x3xf32>
  return %0, %1 : tensor<2x11xf32>, tensor<6x3xf32>
}

// CHECK-LABEL: func.func @broadcast_to
// CHECK-SAME: (%[[X:.*]]: tensor<1x16xf32>)
// CHECK: %[[Y:.*]] = colo.broadcast_to %[[X]] : tensor<1x16xf32> -> tensor<4x8x16xf32>
// CHECK: return %[[Y]]
func.func @broadcast_to(%x: tensor<1x16xf32>) -> tensor<4x8x16xf32> {
  %0 = colo.broadcast_to %x : tensor<1x16xf32> -> tensor<4x8x16xf32>
  return %0 : tensor<4x8x16xf32>
}

// The indices' shape replaces the gathered axis.
// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[X:.*]]: tensor<4x10x6xf32>, %[[I:.*]]: tensor<3xi64>, %[[J:.*]]: tensor<2x5xi32>)
// CHECK: %[[Y:.*]] = colo.gather %[[X]], %[[I]] axis = 1 : tensor<4x10x6xf32>, tensor<3xi64>
// CHECK: %[[Z:.*]] = colo.gather %[[X]], %[[J]] axis = -1 : tensor<4x10x6xf32>, tensor<2x5xi32>
// CHECK: return %[[Y]], %[[Z]] : tensor<4x3x6xf32>, tensor<4x10x2x5xf32>
func.func @gather(%x: tensor<4x10x6xf32>, %i: tensor<3xi64>, %j: tensor<2x5xi32>) -> (tensor<4x3x6xf32>, tensor<4x10x2x5xf32>) {
  %0 = colo.gather %x, %i axis = 1 : tensor<4x10x6xf32>, tensor<3xi64>
  %1 = colo.gather %x, %j axis = -1 : tensor<4x10x6xf32>, tensor<2x5xi32>
  return %0, %1 : tensor<4x3x6xf32>, tensor<4x10x2x5xf32>
}

// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[T:.*]]: tensor<1000x64xf32>, %[[IDS:.*]]: tensor<2x16xi64>)
// CHECK: %[[E:.*]] = colo.embedding %[[T]], %[[IDS]] : tensor<1000x64xf32>, tensor<2x16xi64>
// CHECK: return %[[E]] : tensor<2x16x64xf32>
func.func @embedding(%table: tensor<1000x64xf32>, %ids: tensor<2x16xi64>) -> tensor<2x16x64xf32> {
  %0 = colo.embedding %table, %ids : tensor<1000x64xf32>, tensor<2x16xi64>
  return %0 : tensor<2x16x64xf32>
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// The attributes' defaults are elided; the result is a scalar of the logits'
// element type.
// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: (%[[X:.*]]: tensor<8x10xf32>, %[[Y:.*]]: tensor<8xi64>, %[[XS:.*]]: tensor<2x16x100xbf16>, %[[YS:.*]]: tensor<2x16xi32>)
// CHECK: %[[L:.*]] = colo.cross_entropy %[[X]], %[[Y]] : tensor<8x10xf32>, tensor<8xi64>
// CHECK: %[[S:.*]] = colo.cross_entropy %[[XS]], %[[YS]] {ignore_index = 0 : i64, label_smoothing = 1.000000e-01 : f64} : tensor<2x16x100xbf16>, tensor<2x16xi32>
// CHECK: return %[[L]], %[[S]] : tensor<f32>, tensor<bf16>
func.func @cross_entropy(%x: tensor<8x10xf32>, %y: tensor<8xi64>, %xs: tensor<2x16x100xbf16>, %ys: tensor<2x16xi32>) -> (tensor<f32>, tensor<bf16>) {
  %0 = colo.cross_entropy %x, %y {ignore_index = -100 : i64, label_smoothing = 0.0 : f64} : tensor<8x10xf32>, tensor<8xi64>
  %1 = colo.cross_entropy %xs, %ys {ignore_index = 0 : i64, label_smoothing = 0.1 : f64} : tensor<2x16x100xbf16>, tensor<2x16xi32>
  return %0, %1 : tensor<f32>, tensor<bf16>
}

// CHECK-LABEL: func.func @mse_loss
// CHECK-SAME: (%[[P:.*]]: tensor<8x4xf32>, %[[T:.*]]: tensor<8x4xf32>)
// CHECK: %[[L:.*]] = colo.mse_loss %[[P]], %[[T]] : tensor<8x4xf32>, tensor<8x4xf32>
// CHECK: return %[[L]] : tensor<f32>
func.func @mse_loss(%pred: tensor<8x4xf32>, %target: tensor<8x4xf32>) -> tensor<f32> {
  %0 = colo.mse_loss %pred, %target : tensor<8x4xf32>, tensor<8x4xf32>
  return %0 : tensor<f32>
}

// CHECK: dialect_resources
// CHECK: colo_blob: "0x040000000000803F00000040"
{-#
  dialect_resources: {
    builtin: {
      colo_blob: "0x040000000000803F00000040"
    }
  }
#-}
