// RUN: colo-opt %s -split-input-file -verify-diagnostics

// One case per verifier and type inference error of the colo dialect.

//===----------------------------------------------------------------------===//
// Model state
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'colo.global' op initial value type 'tensor<3xf32>' does not match global type 'tensor<4xf32>'}}
colo.global @w : tensor<4xf32> = dense<0.0> : tensor<3xf32>

// -----

// expected-error @+1 {{'colo.global' op initial value type 'tensor<4xf16>' does not match global type 'tensor<4xf32>'}}
colo.global @w : tensor<4xf32> = dense<0.0> : tensor<4xf16>

// -----

// 10 x 64 f32 is 2560 bytes.
// expected-error @+1 {{'colo.global' op external data length 2048 bytes does not match 'tensor<10x64xf32>' (2560 bytes)}}
colo.global @w : tensor<10x64xf32> = #colo.external<path = "/m.bin", offset = 0, length = 2048>

// -----

// expected-error @+1 {{'colo.global' op external data offset is negative: -8}}
colo.global @w : tensor<2xf32> = #colo.external<path = "/m.bin", offset = -8, length = 8>

// -----

// expected-error @+1 {{'colo.global' op external data needs integer, float or complex elements, got 'tensor<4xindex>'}}
colo.global @w : tensor<4xindex> = #colo.external<path = "/m.bin", offset = 0, length = 32>

// -----

// expected-error @+1 {{'colo.global' op initial value must be elements, #colo.external or #colo.init, got "weights.bin"}}
colo.global @w : tensor<4xf32> = "weights.bin"

// -----

// expected-error @+1 {{unknown distribution 'gaussian': expected normal, uniform, zeros or ones}}
colo.global @w : tensor<4xf32> = #colo.init<distribution = "gaussian", a = 0.0 : f64, b = 1.0 : f64>

// -----

// expected-error @+2 {{invalid kind of attribute specified}}
// expected-error @+1 {{failed to parse Colo_InitializerAttr parameter 'a' which is to be a `::mlir::FloatAttr`}}
colo.global @w : tensor<4xf32> = #colo.init<distribution = "normal", a = 0 : i64, b = 1.0 : f64>

// -----

// expected-error @+1 {{uniform bounds out of order: 1.000000e+00 > -1.000000e+00}}
colo.global @w : tensor<4xf32> = #colo.init<distribution = "uniform", a = 1.0 : f64, b = -1.0 : f64>

// -----

// expected-error @+1 {{normal standard deviation is negative: -2.000000e-02}}
colo.global @w : tensor<4xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = -2.0e-02 : f64>

// -----

// expected-error @+1 {{'colo.global' op attribute 'type' failed to satisfy constraint: type attribute of statically shaped tensor of any type values}}
colo.global @w : tensor<?xf32>

// -----

func.func @global_load_unknown() -> tensor<4xf32> {
  // expected-error @+1 {{'colo.global_load' op 'missing' does not name a colo.global}}
  %0 = colo.global_load @missing : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @not_a_global() -> tensor<4xf32> {
  // expected-error @+1 {{'colo.global_load' op 'not_a_global' does not name a colo.global}}
  %0 = colo.global_load @not_a_global : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

colo.global @w : tensor<4xf32>
func.func @global_load_wrong_type() -> tensor<4xf16> {
  // expected-error @+1 {{'colo.global_load' op result type 'tensor<4xf16>' does not match global type 'tensor<4xf32>'}}
  %0 = colo.global_load @w : tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

func.func @constant_type_mismatch() -> tensor<4xf32> {
  // expected-error @+1 {{'colo.constant' op failed to verify that all of {value, result} have same type}}
  %0 = "colo.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// -----

func.func @broadcast_mismatch(%x: tensor<4x8xf32>, %y: tensor<3xf32>) {
  // expected-error @+1 {{operands are not broadcast-compatible: [4, 8] vs [3]}}
  %0 = colo.add %x, %y : tensor<4x8xf32>, tensor<3xf32>
  return
}

// -----

func.func @element_type_mismatch(%x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error @+1 {{element type mismatch: 'f32' vs 'f16'}}
  %0 = colo.mul %x, %y : tensor<4xf32>, tensor<4xf16>
  return
}

// -----

// The generic form states a result type; it must be the inferred one.
func.func @wrong_result_type(%x: tensor<4x1xf32>, %y: tensor<3xf32>) {
  // expected-error @+2 {{'colo.sub' op inferred type(s) 'tensor<4x3xf32>' are incompatible with return type(s) of operation 'tensor<4x1xf32>'}}
  // expected-error @+1 {{'colo.sub' op failed to infer returned types}}
  %0 = "colo.sub"(%x, %y) : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4x1xf32>
  return
}

// -----

func.func @compare_element_type_mismatch(%x: tensor<4xi64>, %y: tensor<4xi32>) {
  // expected-error @+1 {{element type mismatch: 'i64' vs 'i32'}}
  %0 = colo.compare lt, %x, %y : tensor<4xi64>, tensor<4xi32>
  return
}

// -----

func.func @select_element_type_mismatch(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xbf16>) {
  // expected-error @+1 {{element type mismatch: 'f32' vs 'bf16'}}
  %0 = colo.select %c, %x, %y : tensor<4xi1>, tensor<4xf32>, tensor<4xbf16>
  return
}

// -----

func.func @select_broadcast_mismatch(%c: tensor<3xi1>, %x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{operands are not broadcast-compatible: [3] vs [4]}}
  %0 = colo.select %c, %x, %y : tensor<3xi1>, tensor<4xf32>, tensor<4xf32>
  return
}

// -----

func.func @unary_integer(%x: tensor<4xi32>) {
  // expected-error @+1 {{'colo.exp' op operand #0 must be statically shaped tensor of floating-point values, but got 'tensor<4xi32>'}}
  %0 = colo.exp %x : tensor<4xi32>
  return
}

// -----

func.func @clamp_min_greater_than_max(%x: tensor<8xf32>) {
  // expected-error @+1 {{'colo.clamp' op min 6.000000e+00 is greater than max 0.000000e+00}}
  %0 = colo.clamp %x min = 6.0 max = 0.0 : tensor<8xf32>
  return
}

// -----

func.func @convert_shape_mismatch(%x: tensor<4xf32>) {
  // expected-error @+1 {{'colo.convert' op shape mismatch: 'tensor<4xf32>' vs 'tensor<2x2xbf16>'}}
  %0 = colo.convert %x : tensor<4xf32> to tensor<2x2xbf16>
  return
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// -----

func.func @matmul_contraction_mismatch(%x: tensor<2x3xf32>, %w: tensor<4x5xf32>) {
  // expected-error @+1 {{contraction dimension mismatch: 3 vs 4}}
  %0 = colo.matmul %x, %w : tensor<2x3xf32>, tensor<4x5xf32>
  return
}

// -----

func.func @matmul_rank(%x: tensor<3xf32>, %w: tensor<3x5xf32>) {
  // expected-error @+1 {{operands must have rank >= 2: 'tensor<3xf32>' vs 'tensor<3x5xf32>'}}
  %0 = colo.matmul %x, %w : tensor<3xf32>, tensor<3x5xf32>
  return
}

// -----

func.func @matmul_element_type_mismatch(%x: tensor<2x3xf32>, %w: tensor<3x5xf16>) {
  // expected-error @+1 {{element type mismatch: 'f32' vs 'f16'}}
  %0 = colo.matmul %x, %w : tensor<2x3xf32>, tensor<3x5xf16>
  return
}

// -----

func.func @matmul_batch_mismatch(%x: tensor<2x4x3xf32>, %w: tensor<5x3x6xf32>) {
  // expected-error @+1 {{batch dimensions are not broadcast-compatible: [2] vs [5]}}
  %0 = colo.matmul %x, %w : tensor<2x4x3xf32>, tensor<5x3x6xf32>
  return
}

// -----

func.func @conv2d_rank(%x: tensor<3x64x64xf32>, %w: tensor<64x3x7x7xf32>) {
  // expected-error @+1 {{input and filter must have rank 4: 'tensor<3x64x64xf32>' vs 'tensor<64x3x7x7xf32>'}}
  %0 = colo.conv2d %x, %w : tensor<3x64x64xf32>, tensor<64x3x7x7xf32>
  return
}

// -----

func.func @conv2d_channel_mismatch(%x: tensor<1x4x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+1 {{input channel mismatch: 4 vs 3 x 1 groups}}
  %0 = colo.conv2d %x, %w : tensor<1x4x8x8xf32>, tensor<16x3x3x3xf32>
  return
}

// -----

func.func @conv2d_groups_channel_mismatch(%x: tensor<1x8x8x8xf32>, %w: tensor<16x2x3x3xf32>) {
  // expected-error @+1 {{input channel mismatch: 8 vs 2 x 2 groups}}
  %0 = colo.conv2d %x, %w {groups = 2 : i64} : tensor<1x8x8x8xf32>, tensor<16x2x3x3xf32>
  return
}

// -----

func.func @conv2d_groups_not_dividing(%x: tensor<1x9x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+1 {{output channels 16 not divisible by groups 3}}
  %0 = colo.conv2d %x, %w {groups = 3 : i64} : tensor<1x9x8x8xf32>, tensor<16x3x3x3xf32>
  return
}

// -----

func.func @conv2d_bias_mismatch(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{bias shape mismatch: 'tensor<8xf32>' vs 16 output channels}}
  %0 = colo.conv2d %x, %w bias %b : tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>, tensor<8xf32>
  return
}

// -----

func.func @conv2d_window_attrs(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+1 {{expected 2 strides, 2 dilations and 4 pads, got 2, 2 and 2}}
  %0 = colo.conv2d %x, %w {padding = array<i64: 1, 1>} : tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>
  return
}

// -----

// Inherent attributes written in the attr-dict are checked by the parser.
func.func @conv2d_strides_kind(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+1 {{'colo.conv2d' op attribute 'strides' failed to satisfy constraint: i64 dense array attribute}}
  %0 = colo.conv2d %x, %w {strides = [2, 2]} : tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>
  return
}

// -----

func.func @conv2d_zero_stride(%x: tensor<1x3x8x8xf32>, %w: tensor<16x3x3x3xf32>) {
  // expected-error @+1 {{strides and dilations must be positive and padding non-negative}}
  %0 = colo.conv2d %x, %w {strides = array<i64: 0, 1>} : tensor<1x3x8x8xf32>, tensor<16x3x3x3xf32>
  return
}

// -----

func.func @attention_rank(%q: tensor<4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>) {
  // expected-error @+1 {{query, key and value must have rank 4: 'tensor<4x16x8xf32>' vs 'tensor<2x4x16x8xf32>' vs 'tensor<2x4x16x8xf32>'}}
  %0 = colo.attention %q, %k, %v {scale = 1.0 : f64} : tensor<4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  return
}

// -----

func.func @attention_heads(%q: tensor<2x4x16x8xf32>, %k: tensor<2x3x16x8xf32>, %v: tensor<2x3x16x8xf32>) {
  // expected-error @+1 {{query heads 4 not a multiple of key/value heads 3 / 3}}
  %0 = colo.attention %q, %k, %v {scale = 1.0 : f64} : tensor<2x4x16x8xf32>, tensor<2x3x16x8xf32>, tensor<2x3x16x8xf32>
  return
}

// -----

func.func @attention_kv_heads(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x4x16x8xf32>) {
  // expected-error @+1 {{query heads 4 not a multiple of key/value heads 2 / 4}}
  %0 = colo.attention %q, %k, %v {scale = 1.0 : f64} : tensor<2x4x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x4x16x8xf32>
  return
}

// -----

func.func @attention_batch(%q: tensor<2x4x16x8xf32>, %k: tensor<1x4x16x8xf32>, %v: tensor<1x4x16x8xf32>) {
  // expected-error @+1 {{batch mismatch: 2 vs 1 vs 1}}
  %0 = colo.attention %q, %k, %v {scale = 1.0 : f64} : tensor<2x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>
  return
}

// -----

func.func @attention_head_dim(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x16xf32>, %v: tensor<2x4x16x8xf32>) {
  // expected-error @+1 {{head dimension mismatch: 8 vs 16}}
  %0 = colo.attention %q, %k, %v {scale = 1.0 : f64} : tensor<2x4x16x8xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>
  return
}

// -----

func.func @attention_kv_length(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x12x8xf32>) {
  // expected-error @+1 {{key/value length mismatch: 16 vs 12}}
  %0 = colo.attention %q, %k, %v {scale = 1.0 : f64} : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x12x8xf32>
  return
}

// -----

func.func @attention_mask(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x32x8xf32>, %v: tensor<2x4x32x8xf32>, %m: tensor<16x16xf32>) {
  // expected-error @+1 {{mask shape [16, 16] does not broadcast to scores [2, 4, 16, 32]}}
  %0 = colo.attention %q, %k, %v mask %m {scale = 1.0 : f64} : tensor<2x4x16x8xf32>, tensor<2x4x32x8xf32>, tensor<2x4x32x8xf32>, tensor<16x16xf32>
  return
}

// -----

func.func @attention_dropout_one(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>) {
  // expected-error @+1 {{'colo.attention' op dropout 1.000000e+00 outside [0, 1)}}
  %0 = colo.attention %q, %k, %v {scale = 1.0 : f64, dropout = 1.0 : f64} : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  return
}

// -----

func.func @attention_dropout_negative(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>) {
  // expected-error @+1 {{'colo.attention' op dropout -1.000000e-01 outside [0, 1)}}
  %0 = colo.attention %q, %k, %v {scale = 1.0 : f64, dropout = -0.1 : f64} : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
  return
}

//===----------------------------------------------------------------------===//
// Normalization and regularization
//===----------------------------------------------------------------------===//

// -----

func.func @softmax_bad_axis(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'colo.softmax' op axis 2 out of range for rank 2}}
  %0 = colo.softmax %x axis = 2 : tensor<2x8xf32>
  return
}

// -----

func.func @log_softmax_bad_axis(%x: tensor<2x8xf32>) {
  // expected-error @+1 {{'colo.log_softmax' op axis -3 out of range for rank 2}}
  %0 = colo.log_softmax %x axis = -3 : tensor<2x8xf32>
  return
}

// -----

func.func @layer_norm_scale_shape(%x: tensor<2x16x64xf32>, %g: tensor<16x64xf32>) {
  // expected-error @+1 {{'colo.layer_norm' op parameter shape [16, 64] does not match normalized shape [64]}}
  %0 = colo.layer_norm %x scale %g : tensor<16x64xf32> {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<2x16x64xf32>
  return
}

// -----

func.func @layer_norm_bias_shape(%x: tensor<2x16x64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{'colo.layer_norm' op parameter shape [64] does not match normalized shape [16, 64]}}
  %0 = colo.layer_norm %x bias %b : tensor<64xf32> {axis = -2 : i64, epsilon = 1.0e-05 : f64} : tensor<2x16x64xf32>
  return
}

// -----

func.func @layer_norm_element_type(%x: tensor<2x64xf32>, %g: tensor<64xf16>) {
  // expected-error @+1 {{'colo.layer_norm' op parameter element type 'f16' does not match input 'f32'}}
  %0 = colo.layer_norm %x scale %g : tensor<64xf16> {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x64xf32>
  return
}

// -----

func.func @layer_norm_bad_axis(%x: tensor<2x64xf32>) {
  // expected-error @+1 {{'colo.layer_norm' op axis 2 out of range for rank 2}}
  %0 = colo.layer_norm %x {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<2x64xf32>
  return
}

// -----

func.func @rms_norm_scale_shape(%x: tensor<2x16x64xf32>, %g: tensor<32xf32>) {
  // expected-error @+1 {{'colo.rms_norm' op parameter shape [32] does not match normalized shape [64]}}
  %0 = colo.rms_norm %x scale %g : tensor<32xf32> {axis = 2 : i64, epsilon = 1.0e-06 : f64} : tensor<2x16x64xf32>
  return
}

// -----

func.func @batch_norm_channels(%x: tensor<2x64x8x8xf32>, %p: tensor<32xf32>) {
  // expected-error @+1 {{'colo.batch_norm' op channel mismatch: parameters 'tensor<32xf32>' vs 64 input channels}}
  %y, %m, %v = colo.batch_norm %x, %p, %p, %p, %p {epsilon = 1.0e-05 : f64, momentum = 0.1 : f64}
      : tensor<2x64x8x8xf32>, tensor<32xf32>
  return
}

// -----

func.func @batch_norm_rank(%x: tensor<64xf32>, %p: tensor<64xf32>) {
  // expected-error @+1 {{'colo.batch_norm' op input must have rank >= 2, got 'tensor<64xf32>'}}
  %y, %m, %v = colo.batch_norm %x, %p, %p, %p, %p {epsilon = 1.0e-05 : f64, momentum = 0.1 : f64}
      : tensor<64xf32>, tensor<64xf32>
  return
}

// -----

func.func @batch_norm_momentum(%x: tensor<2x64xf32>, %p: tensor<64xf32>) {
  // expected-error @+1 {{'colo.batch_norm' op momentum 1.500000e+00 outside [0, 1]}}
  %y, %m, %v = colo.batch_norm %x, %p, %p, %p, %p {epsilon = 1.0e-05 : f64, momentum = 1.5 : f64}
      : tensor<2x64xf32>, tensor<64xf32>
  return
}

// -----

func.func @dropout_ratio_one(%x: tensor<8xf32>) {
  // expected-error @+1 {{'colo.dropout' op ratio 1.000000e+00 outside [0, 1)}}
  %0 = colo.dropout %x ratio = 1.0 : tensor<8xf32>
  return
}

// -----

func.func @dropout_ratio_negative(%x: tensor<8xf32>) {
  // expected-error @+1 {{'colo.dropout' op ratio -1.000000e-01 outside [0, 1)}}
  %0 = colo.dropout %x ratio = -0.1 : tensor<8xf32>
  return
}

//===----------------------------------------------------------------------===//
// Reductions and pooling
//===----------------------------------------------------------------------===//

// -----

func.func @reduce_unsorted(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{reduction dimensions must be sorted and unique: [2, 1]}}
  %0 = colo.reduce_sum %x dims = [2, 1] : tensor<2x4x8xf32>
  return
}

// -----

func.func @reduce_duplicate(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{reduction dimensions must be sorted and unique: [1, 1]}}
  %0 = colo.reduce_max %x dims = [1, 1] : tensor<2x4x8xf32>
  return
}

// -----

func.func @reduce_out_of_range(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{reduction dimension 3 out of range for rank 3}}
  %0 = colo.reduce_mean %x dims = [3] {keep_dims} : tensor<2x4x8xf32>
  return
}

// -----

func.func @reduce_negative(%x: tensor<2x4x8xf32>) {
  // expected-error @+1 {{reduction dimension -1 out of range for rank 3}}
  %0 = colo.reduce_mean %x dims = [-1] : tensor<2x4x8xf32>
  return
}

// -----

func.func @pool_rank(%x: tensor<64x32x32xf32>) {
  // expected-error @+1 {{input must have rank 4, got 'tensor<64x32x32xf32>'}}
  %0 = colo.max_pool2d %x {kernel = array<i64: 2, 2>} : tensor<64x32x32xf32>
  return
}

// -----

func.func @pool_kernel(%x: tensor<1x64x32x32xf32>) {
  // expected-error @+1 {{expected 2 positive kernel sizes, got [3]}}
  %0 = colo.avg_pool2d %x {kernel = array<i64: 3>} : tensor<1x64x32x32xf32>
  return
}

// -----

func.func @pool_missing_kernel(%x: tensor<1x64x32x32xf32>) {
  // expected-error @+1 {{requires attribute 'kernel'}}
  %0 = colo.max_pool2d %x : tensor<1x64x32x32xf32>
  return
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

// -----

func.func @reshape_count(%x: tensor<2x16xf32>) {
  // expected-error @+1 {{'colo.reshape' op element count mismatch: 'tensor<2x16xf32>' has 32, 'tensor<4x4xf32>' has 16}}
  %0 = colo.reshape %x : tensor<2x16xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @reshape_element_type(%x: tensor<2x16xf32>) {
  // expected-error @+1 {{'colo.reshape' op element type mismatch: 'f32' vs 'i32'}}
  %0 = colo.reshape %x : tensor<2x16xf32> -> tensor<32xi32>
  return
}

// -----

func.func @broadcast_to_incompatible(%x: tensor<3x16xf32>) {
  // expected-error @+1 {{'colo.broadcast_to' op cannot broadcast 'tensor<3x16xf32>' to 'tensor<8x16xf32>'}}
  %0 = colo.broadcast_to %x : tensor<3x16xf32> -> tensor<8x16xf32>
  return
}

// -----

// broadcast_to never shrinks: [4, 16] to [16] would be a broadcast the other way.
func.func @broadcast_to_lower_rank(%x: tensor<4x16xf32>) {
  // expected-error @+1 {{'colo.broadcast_to' op cannot broadcast 'tensor<4x16xf32>' to 'tensor<16xf32>'}}
  %0 = colo.broadcast_to %x : tensor<4x16xf32> -> tensor<16xf32>
  return
}

// -----

func.func @broadcast_to_element_type(%x: tensor<1x16xf32>) {
  // expected-error @+1 {{'colo.broadcast_to' op element type mismatch: 'f32' vs 'f16'}}
  %0 = colo.broadcast_to %x : tensor<1x16xf32> -> tensor<8x16xf16>
  return
}

// -----

func.func @transpose_not_permutation(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{not a permutation: [0, 2, 2]}}
  %0 = colo.transpose %x permutation = [0, 2, 2] : tensor<2x3x4xf32>
  return
}

// -----

func.func @transpose_size(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{permutation size 2 does not match rank 3}}
  %0 = colo.transpose %x permutation = [1, 0] : tensor<2x3x4xf32>
  return
}

// -----

func.func @slice_out_of_bounds(%x: tensor<16x192xf32>) {
  // expected-error @+1 {{dimension 1: slice [64, 200) step 1 out of bounds for size 192}}
  %0 = colo.slice %x start = [0, 64] limit = [16, 200] stride = [1, 1] : tensor<16x192xf32>
  return
}

// -----

func.func @slice_reversed(%x: tensor<16x192xf32>) {
  // expected-error @+1 {{dimension 0: slice [8, 4) step 1 out of bounds for size 16}}
  %0 = colo.slice %x start = [8, 0] limit = [4, 192] stride = [1, 1] : tensor<16x192xf32>
  return
}

// -----

func.func @slice_zero_stride(%x: tensor<16x192xf32>) {
  // expected-error @+1 {{dimension 1: slice [0, 192) step 0 out of bounds for size 192}}
  %0 = colo.slice %x start = [0, 0] limit = [16, 192] stride = [1, 0] : tensor<16x192xf32>
  return
}

// -----

func.func @slice_count(%x: tensor<16x192xf32>) {
  // expected-error @+1 {{expected 2 starts, limits and strides, got 1, 2 and 2}}
  %0 = colo.slice %x start = [0] limit = [16, 192] stride = [1, 1] : tensor<16x192xf32>
  return
}

// -----

func.func @concat_dim_mismatch(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{dimension 0 mismatch: 'tensor<2x3xf32>' vs 'tensor<4x5xf32>'}}
  %0 = colo.concat %a, %b axis = 1 : tensor<2x3xf32>, tensor<4x5xf32>
  return
}

// -----

func.func @concat_rank_mismatch(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) {
  // expected-error @+1 {{rank mismatch: 'tensor<2x3xf32>' vs 'tensor<2x3x1xf32>'}}
  %0 = colo.concat %a, %b axis = 0 : tensor<2x3xf32>, tensor<2x3x1xf32>
  return
}

// -----

func.func @concat_element_type(%a: tensor<2x3xf32>, %b: tensor<2x3xi32>) {
  // expected-error @+1 {{element type mismatch: 'f32' vs 'i32'}}
  %0 = colo.concat %a, %b axis = 0 : tensor<2x3xf32>, tensor<2x3xi32>
  return
}

// -----

func.func @concat_bad_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 out of range for rank 2}}
  %0 = colo.concat %a, %a axis = 2 : tensor<2x3xf32>, tensor<2x3xf32>
  return
}

// -----

// Negative axes count from the end; the message shows the axis as written.
func.func @concat_bad_negative_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{axis -3 out of range for rank 2}}
  %0 = colo.concat %a, %a axis = -3 : tensor<2x3xf32>, tensor<2x3xf32>
  return
}

// -----

// A scalar has no axis to join along.
func.func @concat_scalars(%a: tensor<f32>) {
  // expected-error @+1 {{axis 0 out of range for rank 0}}
  %0 = colo.concat %a, %a axis = 0 : tensor<f32>, tensor<f32>
  return
}

// -----

func.func @concat_no_inputs() {
  // expected-error @+2 {{expected at least one input}}
  // expected-error @+1 {{'colo.concat' op failed to infer returned types}}
  %0 = "colo.concat"() <{axis = 0 : i64}> : () -> tensor<2xf32>
  return
}

// -----

func.func @gather_bad_axis(%x: tensor<4x10xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{axis 2 out of range for rank 2}}
  %0 = colo.gather %x, %i axis = 2 : tensor<4x10xf32>, tensor<3xi64>
  return
}

// -----

func.func @gather_bad_negative_axis(%x: tensor<4x10xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{axis -3 out of range for rank 2}}
  %0 = colo.gather %x, %i axis = -3 : tensor<4x10xf32>, tensor<3xi64>
  return
}

// -----

func.func @gather_float_indices(%x: tensor<4x10xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{'colo.gather' op operand #1 must be statically shaped tensor of signless integer values, but got 'tensor<3xf32>'}}
  %0 = colo.gather %x, %i axis = 0 : tensor<4x10xf32>, tensor<3xf32>
  return
}

// -----

func.func @embedding_table_rank(%t: tensor<1000xf32>, %ids: tensor<2x16xi64>) {
  // expected-error @+1 {{table must have rank 2, got 'tensor<1000xf32>'}}
  %0 = colo.embedding %t, %ids : tensor<1000xf32>, tensor<2x16xi64>
  return
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// -----

func.func @cross_entropy_logits_rank(%x: tensor<10xf32>, %y: tensor<i64>) {
  // expected-error @+1 {{'colo.cross_entropy' op logits must be [N, C] or [B, S, C], got 'tensor<10xf32>'}}
  %0 = colo.cross_entropy %x, %y : tensor<10xf32>, tensor<i64>
  return
}

// -----

func.func @cross_entropy_label_shape(%x: tensor<2x16x100xf32>, %y: tensor<2x15xi64>) {
  // expected-error @+1 {{'colo.cross_entropy' op label shape [2, 15] does not match logits shape [2, 16, 100] without its class dimension [2, 16]}}
  %0 = colo.cross_entropy %x, %y : tensor<2x16x100xf32>, tensor<2x15xi64>
  return
}

// -----

func.func @cross_entropy_smoothing_one(%x: tensor<8x10xf32>, %y: tensor<8xi64>) {
  // expected-error @+1 {{'colo.cross_entropy' op label_smoothing 1.000000e+00 outside [0, 1)}}
  %0 = colo.cross_entropy %x, %y {label_smoothing = 1.0 : f64} : tensor<8x10xf32>, tensor<8xi64>
  return
}

// -----

func.func @mse_loss_type_mismatch(%p: tensor<8x4xf32>, %t: tensor<8x3xf32>) {
  // expected-error @+1 {{'colo.mse_loss' op pred and target types differ: 'tensor<8x4xf32>' vs 'tensor<8x3xf32>'}}
  %0 = colo.mse_loss %p, %t : tensor<8x4xf32>, tensor<8x3xf32>
  return
}

// -----

// expected-error @+1 {{'colo.global' op shard #colo.shard<groups = 3, split_axes = [[], ["tp"]], parts = [1, 2]> does not divide 'tensor<8x8xf32>': dimension 1 must be a multiple of parts * groups}}
colo.global trainable @w : tensor<8x8xf32> {shard = #colo.shard<groups = 3, split_axes = [[], ["tp"]], parts = [1, 2]>}

// -----

// expected-error @+1 {{a dimension split over [] has parts 2 (at least 2 where split, 1 where whole)}}
colo.global trainable @w : tensor<8x8xf32> {shard = #colo.shard<split_axes = [[], []], parts = [2, 1]>}

// -----

// expected-error @+1 {{a shard splits at least one dimension}}
colo.global trainable @w : tensor<8x8xf32> {shard = #colo.shard<split_axes = [[], []], parts = [1, 1]>}

// -----

// expected-error @+1 {{a shard's split_axes entry is a list of mesh axis names, got [1]}}
colo.global trainable @w : tensor<8x8xf32> {shard = #colo.shard<split_axes = [[1], []], parts = [2, 1]>}

// -----

// expected-error @+1 {{mesh axis "tp" splits more than one dimension}}
colo.global trainable @w : tensor<8x8xf32> {shard = #colo.shard<split_axes = [["tp"], ["tp"]], parts = [2, 2]>}

// -----

// expected-error @+1 {{a shard has one entry of split_axes and of parts per dimension, got 2 and 1}}
colo.global trainable @w : tensor<8x8xf32> {shard = #colo.shard<split_axes = [["tp"], []], parts = [2]>}

// -----

// expected-error @+1 {{a shard's groups (3) are at least 1, and more only with one or two split dimensions}}
colo.global trainable @w : tensor<12x12x12xf32> {shard = #colo.shard<groups = 3, split_axes = [["a"], ["b"], ["c"]], parts = [2, 2, 2]>}

// -----

// Two split dimensions: the groups are on the last.
// expected-error @+1 {{'colo.global' op shard #colo.shard<groups = 3, split_axes = [["a"], ["b"]], parts = [2, 2]> does not divide 'tensor<12x8xf32>': dimension 1 must be a multiple of parts * groups}}
colo.global trainable @w : tensor<12x8xf32> {shard = #colo.shard<groups = 3, split_axes = [["a"], ["b"]], parts = [2, 2]>}

// -----

// expected-error @+1 {{'colo.global' op shard #colo.shard<split_axes = [["tp"]], parts = [2]> describes a rank-1 tensor, not 'tensor<8x8xf32>'}}
colo.global trainable @w : tensor<8x8xf32> {shard = #colo.shard<split_axes = [["tp"]], parts = [2]>}

// -----

// expected-error @+1 {{a flat shard has one entry, for the flattened tensor, and no groups}}
colo.global trainable @w : tensor<8x8xf32> {shard = #colo.shard<flat = true, split_axes = [["dp"], []], parts = [2, 1]>}

// -----

// expected-error @+1 {{mesh axis "tp" both splits and flattens}}
colo.global trainable @w : tensor<8x8xf32> {shard = #colo.shard<split_axes = [["tp"], []], parts = [2, 1], flat_axes = ["tp"], flat_parts = 2>}

// -----

// expected-error @+1 {{a flat shard's block is not flattened again (flat_axes)}}
colo.global trainable @w : tensor<8x8xf32> {shard = #colo.shard<flat = true, split_axes = [["tp"]], parts = [2], flat_axes = ["dp"], flat_parts = 2>}

// -----

// expected-error @+1 {{a shard's flat_axes name at least one mesh axis and its flat_parts are at least 2, got ["dp"] and 1}}
colo.global trainable @w : tensor<8x8xf32> {shard = #colo.shard<split_axes = [["tp"], []], parts = [2, 1], flat_axes = ["dp"], flat_parts = 1>}
