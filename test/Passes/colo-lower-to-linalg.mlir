// RUN: colo-opt %s --colo-lower-to-linalg -split-input-file -verify-diagnostics | FileCheck %s

// Binary ops broadcast through their indexing maps: a size-1 dimension reads
// index 0, a missing one is not read.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-LABEL: func.func @broadcast_add
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<1x8xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]], %[[B]] : tensor<4x8xf32>, tensor<1x8xf32>) outs(%[[E]] : tensor<4x8xf32>)
// CHECK: arith.addf
// CHECK: return %[[Y]]
func.func @broadcast_add(%x: tensor<4x8xf32>, %b: tensor<1x8xf32>) -> tensor<4x8xf32> {
  %y = colo.add %x, %b : tensor<4x8xf32>, tensor<1x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Integer division truncates, and x / 0 is 0 as in the interpreter.
// CHECK-DAG: #[[SCALAR:.*]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @int_div
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[SCALAR]], #{{.*}}]
// CHECK: ^bb0(%[[A:.*]]: i64, %[[D:.*]]: i64, %{{.*}}: i64):
// CHECK: %[[ZERO:.*]] = arith.cmpi eq, %[[D]]
// CHECK: %[[SAFE:.*]] = arith.select %[[ZERO]], %{{.*}}, %[[D]]
// CHECK: %[[Q:.*]] = arith.divsi %[[A]], %[[SAFE]]
// CHECK: arith.select %[[ZERO]], %{{.*}}, %[[Q]]
func.func @int_div(%x: tensor<4xi64>, %y: tensor<i64>) -> tensor<4xi64> {
  %z = colo.div %x, %y : tensor<4xi64>, tensor<i64>
  return %z : tensor<4xi64>
}

// -----

// bf16 is computed in f32 and rounded once, when stored.
// CHECK-LABEL: func.func @gelu_bf16
// CHECK: ^bb0(%[[IN:.*]]: bf16, %{{.*}}: bf16):
// CHECK: %[[X:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK: %[[S:.*]] = arith.mulf %[[X]], %{{.*}} : f32
// CHECK: math.erf %[[S]] : f32
// CHECK: %[[R:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK: linalg.yield %[[R]] : bf16
func.func @gelu_bf16(%x: tensor<8xbf16>) -> tensor<8xbf16> {
  %y = colo.gelu %x : tensor<8xbf16>
  return %y : tensor<8xbf16>
}

// -----

// CHECK-LABEL: func.func @gelu_tanh
// CHECK: math.tanh
// CHECK-NOT: math.erf
func.func @gelu_tanh(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = colo.gelu %x approximation = tanh : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// `ne` holds for NaN (unordered), the others are ordered.
// CHECK-LABEL: func.func @compare_select
// CHECK: %[[M:.*]] = linalg.generic
// CHECK: arith.cmpf une
// CHECK: } -> tensor<4xi1>
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[M]], %{{.*}}, %{{.*}} : tensor<4xi1>, tensor<4xf32>, tensor<4xf32>)
// CHECK: arith.select
func.func @compare_select(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %m = colo.compare ne, %a, %b : tensor<4xf32>, tensor<4xf32>
  %z = colo.select %m, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<4xf32>
  return %z : tensor<4xf32>
}

// -----

// Float to integer: truncate toward zero through i64 (so narrower types
// wrap), NaN -> 0.
// CHECK-LABEL: func.func @convert
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: i32):
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[X]], %[[X]]
// CHECK: %[[I:.*]] = arith.fptosi %[[X]] : f32 to i64
// CHECK: %[[S:.*]] = arith.select %[[NAN]], %{{.*}}, %[[I]] : i64
// CHECK: arith.trunci %[[S]] : i64 to i32
func.func @convert(%x: tensor<4xf32>) -> tensor<4xi32> {
  %y = colo.convert %x : tensor<4xf32> to tensor<4xi32>
  return %y : tensor<4xi32>
}

// -----

// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @reduce_mean_keep
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROWS]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME: outs(%[[INIT]] : tensor<4xf32>)
// CHECK: arith.addf
// CHECK: %[[MEAN:.*]] = linalg.generic
// CHECK-SAME: ins(%[[SUM]] : tensor<4xf32>)
// CHECK: arith.constant 8.000000e+00 : f32
// CHECK: arith.divf
// CHECK: %[[K:.*]] = tensor.expand_shape %[[MEAN]] {{\[\[}}0, 1]] output_shape [4, 1] : tensor<4xf32> into tensor<4x1xf32>
// CHECK: return %[[K]]
func.func @reduce_mean_keep(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %y = colo.reduce_mean %x dims = [1] {keep_dims} : tensor<4x8xf32>
  return %y : tensor<4x1xf32>
}

// -----

// log_softmax: max, then sum(exp(x - max)), then x - max - log(sum).
// CHECK-LABEL: func.func @log_softmax
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: linalg.fill ins(%[[NEGINF]] : f32)
// CHECK: %[[MAX:.*]] = linalg.generic
// CHECK: arith.maximumf
// CHECK: %[[SUM:.*]] = linalg.generic
// CHECK-SAME: ins(%{{.*}}, %[[MAX]] : tensor<4x8xf32>, tensor<4xf32>)
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %[[MAX]], %[[SUM]] : tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK: %[[D:.*]] = arith.subf
// CHECK: %[[L:.*]] = math.log
// CHECK: arith.subf %[[D]], %[[L]]
func.func @log_softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = colo.log_softmax %x axis = 1 : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Two passes (sum, then squared deviations), then one normalizing generic
// that reads the scale through the trailing dimensions.
// CHECK-DAG: #[[COLS:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: %[[G:[^:]*]]: tensor<8xf32>
// CHECK: %[[SUM:.*]] = linalg.generic
// CHECK: %[[SQ:.*]] = linalg.generic
// CHECK-SAME: ins(%{{.*}}, %[[SUM]] :
// CHECK: arith.mulf
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}, #[[COLS]], #{{.*}}]
// CHECK-SAME: ins(%{{.*}}, %[[SQ]], %[[SUM]], %[[G]] :
// CHECK: math.sqrt
func.func @layer_norm(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  %y = colo.layer_norm %x scale %g : tensor<8xf32> {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func.func @rms_norm
// CHECK: %[[SQ:.*]] = linalg.generic
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %[[SQ]], %{{.*}} :
// CHECK-NOT: linalg.generic
func.func @rms_norm(%x: tensor<2x8xf32>, %g: tensor<8xf32>) -> tensor<2x8xf32> {
  %y = colo.rms_norm %x scale %g : tensor<8xf32> {axis = 1 : i64, epsilon = 1.0e-06 : f64} : tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Inference form: normalize with the running statistics, return them as they are.
// CHECK-DAG: #[[CH:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func.func @batch_norm_inference
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x4x3xf32>, %[[G:[^:]*]]: tensor<4xf32>, %[[B:[^:]*]]: tensor<4xf32>, %[[RM:[^:]*]]: tensor<4xf32>, %[[RV:[^:]*]]: tensor<4xf32>)
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #[[CH]], #[[CH]], #[[CH]], #[[CH]], #{{.*}}]
// CHECK-SAME: ins(%[[X]], %[[RM]], %[[RV]], %[[G]], %[[B]] :
// CHECK: return %[[Y]], %[[RM]], %[[RV]]
func.func @batch_norm_inference(%x: tensor<2x4x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %rm: tensor<4xf32>, %rv: tensor<4xf32>) -> (tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>) {
  %y, %m, %v = colo.batch_norm %x, %g, %b, %rm, %rv {epsilon = 1.0e-05 : f64, momentum = 0.1 : f64} : tensor<2x4x3xf32>, tensor<4xf32>
  return %y, %m, %v : tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Training form: batch sum and squared deviations over N and the spatial
// dimensions (accumulated in f64), then the output and the two
// running-statistics updates.
// CHECK-LABEL: func.func @batch_norm_training
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "reduction"]
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "reduction"]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel"]
// CHECK: %[[M:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]
// CHECK: arith.constant 6.000000e+00 : f64
// CHECK: %[[V:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]
// CHECK: arith.constant 5.000000e+00 : f64
// CHECK: return %{{.*}}, %[[M]], %[[V]]
func.func @batch_norm_training(%x: tensor<2x4x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %rm: tensor<4xf32>, %rv: tensor<4xf32>) -> (tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>) {
  %y, %m, %v = colo.batch_norm %x, %g, %b, %rm, %rv {epsilon = 1.0e-05 : f64, momentum = 0.1 : f64, training} : tensor<2x4x3xf32>, tensor<4xf32>
  return %y, %m, %v : tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_slice
// CHECK-SAME: (%[[X:.*]]: tensor<2x6xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<6x2xf32>
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[X]] : tensor<2x6xf32>) outs(%[[E]] : tensor<6x2xf32>) permutation = [1, 0]
// CHECK: %[[S:.*]] = tensor.extract_slice %[[X]][0, 1] [2, 2] [1, 3] : tensor<2x6xf32> to tensor<2x2xf32>
// CHECK: return %[[T]], %[[S]]
func.func @transpose_slice(%x: tensor<2x6xf32>) -> (tensor<6x2xf32>, tensor<2x2xf32>) {
  %t = colo.transpose %x permutation = [1, 0] : tensor<2x6xf32>
  %s = colo.slice %x start = [0, 1] limit = [2, 6] stride = [1, 3] : tensor<2x6xf32>
  return %t, %s : tensor<6x2xf32>, tensor<2x2xf32>
}

// -----

// A reshape that is neither a collapse nor an expansion goes through 1-D.
// CHECK-LABEL: func.func @concat_reshape
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x5xf32>)
// CHECK: %[[C1:.*]] = tensor.concat dim(1) %[[A]], %[[B]] : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
// CHECK: %[[F:.*]] = tensor.collapse_shape %[[C1]] {{\[\[}}0, 1]] : tensor<2x8xf32> into tensor<16xf32>
// CHECK: %[[R:.*]] = tensor.expand_shape %[[F]] {{\[\[}}0, 1]] output_shape [4, 4] : tensor<16xf32> into tensor<4x4xf32>
// CHECK: return %[[R]]
func.func @concat_reshape(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<4x4xf32> {
  %c = colo.concat %a, %b axis = 1 : tensor<2x3xf32>, tensor<2x5xf32>
  %r = colo.reshape %c : tensor<2x8xf32> -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

// The index is wrapped (negative counts from the end) and clamped into range
// before the tensor.extract.
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[T:.*]]: tensor<10x4xf32>, %[[IDS:.*]]: tensor<3xi64>)
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[IDS]] : tensor<3xi64>)
// CHECK: ^bb0(%[[ID:.*]]: i64, %{{.*}}: f32):
// CHECK: arith.index_cast %[[ID]] : i64 to index
// CHECK: arith.maxsi
// CHECK: %[[I:.*]] = arith.minsi
// CHECK: %[[J:.*]] = linalg.index 1 : index
// CHECK: %[[V:.*]] = tensor.extract %[[T]][%[[I]], %[[J]]] : tensor<10x4xf32>
// CHECK: linalg.yield %[[V]] : f32
func.func @embedding(%t: tensor<10x4xf32>, %ids: tensor<3xi64>) -> tensor<3x4xf32> {
  %e = colo.embedding %t, %ids : tensor<10x4xf32>, tensor<3xi64>
  return %e : tensor<3x4xf32>
}

// -----

// CHECK-LABEL: func.func @gather_axis1
// CHECK: linalg.generic
// CHECK: %[[I0:.*]] = linalg.index 0 : index
// CHECK: tensor.extract %{{.*}}[%[[I0]], %{{.*}}] : tensor<4x10xf32>
func.func @gather_axis1(%x: tensor<4x10xf32>, %i: tensor<3xi64>) -> tensor<4x3xf32> {
  %y = colo.gather %x, %i axis = 1 : tensor<4x10xf32>, tensor<3xi64>
  return %y : tensor<4x3xf32>
}

// -----

// Per row: max, sum(exp(x - max)) (the reduction the gradient builds too)
// and, for label smoothing only, sum(x); then one reduction over the rows
// reads the logit at the label and counts the rows whose label is not
// ignore_index.
// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: (%[[X:.*]]: tensor<4x5xf32>, %[[L:.*]]: tensor<4xi64>)
// CHECK: %[[MAX:.*]] = linalg.generic
// CHECK: %[[SUMEXP:.*]] = linalg.generic
// CHECK: math.exp
// CHECK: %[[SUM:.*]] = linalg.generic
// CHECK: %[[TOT:.*]]:2 = linalg.generic {{.*}} iterator_types = ["reduction"]
// CHECK-SAME: ins(%[[L]], %[[MAX]], %[[SUMEXP]], %[[SUM]] :
// CHECK: %[[IGN:.*]] = arith.constant -1 : i64
// CHECK: %[[VALID:.*]] = arith.cmpi ne, %{{.*}}, %[[IGN]] : i64
// CHECK: tensor.extract %[[X]]
// CHECK: arith.constant 2.500000e-01 : f32
// CHECK: arith.constant 7.500000e-01 : f32
// CHECK: arith.select %[[VALID]]
// CHECK: %[[R:.*]] = linalg.generic
// CHECK-SAME: ins(%[[TOT]]#0, %[[TOT]]#1 : tensor<f32>, tensor<f32>)
// CHECK: arith.divf
// CHECK: return %[[R]] : tensor<f32>
func.func @cross_entropy(%x: tensor<4x5xf32>, %l: tensor<4xi64>) -> tensor<f32> {
  %y = colo.cross_entropy %x, %l {ignore_index = -1 : i64, label_smoothing = 0.25 : f64} : tensor<4x5xf32>, tensor<4xi64>
  return %y : tensor<f32>
}

// -----

// Without label smoothing the sum of the logits is not computed.
// CHECK-LABEL: func.func @cross_entropy_unsmoothed
// CHECK: %[[MAX:.*]] = linalg.generic
// CHECK: %[[SUMEXP:.*]] = linalg.generic
// CHECK-NOT: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction"]
// CHECK-SAME: ins(%{{.*}}, %[[MAX]], %[[SUMEXP]] :
func.func @cross_entropy_unsmoothed(%x: tensor<4x5xf32>, %l: tensor<4xi64>) -> tensor<f32> {
  %y = colo.cross_entropy %x, %l {ignore_index = -1 : i64, label_smoothing = 0.0 : f64} : tensor<4x5xf32>, tensor<4xi64>
  return %y : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @mse_loss
// CHECK: %[[S:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[S]] : tensor<f32>)
// CHECK: arith.constant 8.000000e+00 : f32
func.func @mse_loss(%p: tensor<4x2xf32>, %t: tensor<4x2xf32>) -> tensor<f32> {
  %y = colo.mse_loss %p, %t : tensor<4x2xf32>, tensor<4x2xf32>
  return %y : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @dropout_constant
// CHECK-SAME: (%[[X:.*]]: tensor<2xf32>)
// CHECK: %[[C:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK: return %[[X]], %[[C]]
func.func @dropout_constant(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %y = colo.dropout %x ratio = 0.0 : tensor<2xf32>
  %c = colo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return %y, %c : tensor<2xf32>, tensor<2xf32>
}

// -----

// Library ops are left for their own lowering.
// CHECK-LABEL: func.func @matmul_stays
// CHECK: colo.matmul
func.func @matmul_stays(%x: tensor<4x8xf32>, %w: tensor<8x2xf32>) -> tensor<4x2xf32> {
  %y = colo.matmul %x, %w : tensor<4x8xf32>, tensor<8x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Keyed dropout: the row-major index from linalg.index, the splitmix64
// finalizer of key * 0x9e3779b97f4a7c15 + index, its top 24 bits against
// ratio * 2^24 (rounded up), kept elements scaled by 1 / (1 - ratio).
// CHECK-LABEL: func.func @dropout_keyed
// CHECK: %[[K:.*]] = tensor.extract
// CHECK: linalg.generic
// CHECK: linalg.index 0
// CHECK: arith.shrui
// CHECK: arith.cmpi ult, %{{.*}}, %{{.*}} : i64
// CHECK: arith.select
func.func @dropout_keyed(%x: tensor<4xf32>, %k: tensor<i64>) -> tensor<4xf32> {
  %y = colo.dropout %x key %k ratio = 0.1 : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// The adjoint of gather: a zero-filled buffer, loops over the updates with
// the index read (wrapped and clamped) once per index, and a read-modify-write
// per element, so repeated indices accumulate; the buffer becomes the result.
// CHECK-LABEL: func.func @scatter_add
// CHECK-SAME: (%[[U:.*]]: tensor<2x3x4xf32>, %[[IDS:.*]]: tensor<2x3xi64>)
// CHECK: %[[BUF:.*]] = memref.alloc() : memref<10x4xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[BUF]] : memref<10x4xf32>)
// CHECK: scf.for %[[J0:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT: scf.for %[[J1:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT: %[[ID:.*]] = tensor.extract %[[IDS]][%[[J0]], %[[J1]]] : tensor<2x3xi64>
// CHECK: arith.index_cast %[[ID]] : i64 to index
// CHECK: arith.maxsi
// CHECK: %[[I:.*]] = arith.minsi
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT: %[[V:.*]] = tensor.extract %[[U]][%[[J0]], %[[J1]], %[[K]]] : tensor<2x3x4xf32>
// CHECK-NEXT: %[[OLD:.*]] = memref.load %[[BUF]][%[[I]], %[[K]]] : memref<10x4xf32>
// CHECK-NEXT: %[[NEW:.*]] = arith.addf %[[OLD]], %[[V]] : f32
// CHECK-NEXT: memref.store %[[NEW]], %[[BUF]][%[[I]], %[[K]]] : memref<10x4xf32>
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[BUF]] restrict writable : memref<10x4xf32> to tensor<10x4xf32>
// CHECK: return %[[R]]
func.func @scatter_add(%u: tensor<2x3x4xf32>, %ids: tensor<2x3xi64>) -> tensor<10x4xf32> {
  %g = colo.scatter_add %u, %ids axis = 0 : tensor<2x3x4xf32>, tensor<2x3xi64> -> tensor<10x4xf32>
  return %g : tensor<10x4xf32>
}

// -----

// Along an inner axis, bf16: the dimensions around the axis are loops inside
// the index's; the sums are kept in f32 and rounded once.
// CHECK-LABEL: func.func @scatter_add_axis1_bf16
// CHECK: %[[BUF:.*]] = memref.alloc() : memref<3x5x2xf32>
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[I:.*]] = arith.minsi
// CHECK: scf.for %[[A:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT: scf.for %[[B:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT: %[[V:.*]] = tensor.extract %{{.*}}[%[[A]], %[[J]], %[[B]]] : tensor<3x4x2xbf16>
// CHECK-NEXT: arith.extf %[[V]] : bf16 to f32
// CHECK: memref.store %{{.*}}, %[[BUF]][%[[A]], %[[I]], %[[B]]] : memref<3x5x2xf32>
// CHECK: %[[T:.*]] = bufferization.to_tensor %[[BUF]] restrict writable
// CHECK: %[[R:.*]] = linalg.generic
// CHECK-SAME: ins(%[[T]] : tensor<3x5x2xf32>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: return %[[R]] : tensor<3x5x2xbf16>
func.func @scatter_add_axis1_bf16(%u: tensor<3x4x2xbf16>, %i: tensor<4xi32>) -> tensor<3x5x2xbf16> {
  %g = colo.scatter_add %u, %i axis = 1 : tensor<3x4x2xbf16>, tensor<4xi32> -> tensor<3x5x2xbf16>
  return %g : tensor<3x5x2xbf16>
}

// -----

// CHECK-LABEL: func.func @slice_backward
// CHECK-SAME: (%[[G:.*]]: tensor<2x2xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x6xf32>
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<4x6xf32>)
// CHECK: %[[R:.*]] = tensor.insert_slice %[[G]] into %[[Z]][0, 1] [2, 2] [2, 3] : tensor<2x2xf32> into tensor<4x6xf32>
// CHECK: return %[[R]]
func.func @slice_backward(%g: tensor<2x2xf32>) -> tensor<4x6xf32> {
  %s = colo.slice_backward %g start = [0, 1] limit = [4, 6] stride = [2, 3] : tensor<2x2xf32> -> tensor<4x6xf32>
  return %s : tensor<4x6xf32>
}

// -----

// Per row the max and sum(exp(x - max)); the count of rows whose label is
// not ignore_index; then one generic over the logits whose target is
// 1 - 0.25 + 0.25 / 5 at the label's class and 0.25 / 5 elsewhere, and which
// writes 0 in ignored rows.
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[ALL:.*]] = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @cross_entropy_backward
// CHECK-SAME: (%[[X:.*]]: tensor<4x5xf32>, %[[L:.*]]: tensor<4xi64>, %[[G:.*]]: tensor<f32>)
// CHECK: %[[MAX:.*]] = linalg.generic
// CHECK: arith.maximumf
// CHECK: %[[SUM:.*]] = linalg.generic
// CHECK: math.exp
// CHECK: %[[COUNT:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]
// CHECK-SAME: ins(%[[L]] : tensor<4xi64>)
// CHECK: arith.cmpi ne
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #[[ROWS]], #[[ROWS]], #[[ROWS]], #[[ALL]], #[[ALL]], #{{.*}}]
// CHECK-SAME: ins(%[[X]], %[[L]], %[[MAX]], %[[SUM]], %[[COUNT]], %[[G]] :
// CHECK: ^bb0(%{{[^:]*}}: f32, %[[LABEL:[^:]*]]: i64,
// CHECK: %[[C:.*]] = linalg.index 1 : index
// CHECK: %[[CI:.*]] = arith.index_cast %[[C]] : index to i64
// CHECK: %[[IS:.*]] = arith.cmpi eq, %[[CI]], %[[LABEL]] : i64
// CHECK-DAG: %[[SMOOTH:.*]] = arith.constant 5.000000e-02 : f32
// CHECK-DAG: %[[HIT:.*]] = arith.constant 7.500000e-01 : f32
// CHECK: %[[T0:.*]] = arith.select %[[IS]], %[[HIT]], %{{.*}} : f32
// CHECK: arith.addf %[[T0]], %[[SMOOTH]] : f32
// CHECK: %[[IGN:.*]] = arith.constant -1 : i64
// CHECK: %[[VALID:.*]] = arith.cmpi ne, %[[LABEL]], %[[IGN]] : i64
// CHECK: arith.select %[[VALID]]
// CHECK: return %[[R]]
func.func @cross_entropy_backward(%x: tensor<4x5xf32>, %l: tensor<4xi64>, %g: tensor<f32>) -> tensor<4x5xf32> {
  %y = colo.cross_entropy_backward %x, %l, %g {ignore_index = -1 : i64, label_smoothing = 0.25 : f64} : tensor<4x5xf32>, tensor<4xi64>, tensor<f32>
  return %y : tensor<4x5xf32>
}

// -----

// Per position, without a reduction over the positions: a parallel generic
// reads the logit at the label and writes the loss, 0 where ignored; the
// gradient's factor is its operand, with no count.
// CHECK-LABEL: func.func @cross_entropy_rows
// CHECK-SAME: (%[[X:.*]]: tensor<4x5xf32>, %[[L:.*]]: tensor<4xi64>, %[[S:.*]]: tensor<f32>)
// CHECK: %[[MAX:.*]] = linalg.generic
// CHECK: %[[SUMEXP:.*]] = linalg.generic
// CHECK: %[[LOSS:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]
// CHECK-SAME: ins(%[[L]], %[[MAX]], %[[SUMEXP]] :
// CHECK: tensor.extract %[[X]]
// CHECK: arith.select
// CHECK-NOT: iterator_types = ["reduction"]
// CHECK: %[[D:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK-SAME: ins(%[[X]], %[[L]], %{{.*}}, %{{.*}}, %[[S]] :
// CHECK: return %[[LOSS]], %[[D]]
func.func @cross_entropy_rows(%x: tensor<4x5xf32>, %l: tensor<4xi64>, %s: tensor<f32>) -> (tensor<4xf32>, tensor<4x5xf32>) {
  %y = colo.cross_entropy_rows %x, %l {ignore_index = -1 : i64} : tensor<4x5xf32>, tensor<4xi64>
  %d = colo.cross_entropy_rows_backward %x, %l, %s {ignore_index = -1 : i64} : tensor<4x5xf32>, tensor<4xi64>, tensor<f32>
  return %y, %d : tensor<4xf32>, tensor<4x5xf32>
}

// -----

// The batch sum over N and the spatial dimensions; one reduction of the
// squared deviations, sum(dy) and sum(dy * (x - mean)); per channel dscale,
// dbias, mean and rstd; then dx.
// CHECK-LABEL: func.func @batch_norm_backward
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x4x3xf32>, %[[G:[^:]*]]: tensor<4xf32>, %[[DY:[^:]*]]: tensor<2x4x3xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "reduction"]
// CHECK-SAME: ins(%[[X]] : tensor<2x4x3xf32>)
// CHECK: %[[S:.*]]:3 = linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "reduction"]
// CHECK-SAME: ins(%[[X]], %[[DY]], %[[SUM]] :
// CHECK: %[[P:.*]]:4 = linalg.generic {{.*}} iterator_types = ["parallel"]
// CHECK-SAME: ins(%[[SUM]], %[[S]]#0, %[[S]]#1, %[[S]]#2 :
// CHECK: arith.constant 6.000000e+00 : f64
// CHECK: math.sqrt
// CHECK: %[[DX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel"]
// CHECK-SAME: ins(%[[X]], %[[DY]], %[[P]]#2, %[[P]]#3, %[[S]]#1, %[[S]]#2, %[[G]] :
// CHECK: return %[[DX]], %[[P]]#0, %[[P]]#1
func.func @batch_norm_backward(%x: tensor<2x4x3xf32>, %g: tensor<4xf32>, %dy: tensor<2x4x3xf32>) -> (tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>) {
  %dx, %dg, %db = colo.batch_norm_backward %x, %g, %dy {epsilon = 1.0e-05 : f64} : tensor<2x4x3xf32>, tensor<4xf32>
  return %dx, %dg, %db : tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// The learning rate and the step are read once; at step 1 the momentum
// buffer is the gradient. One generic updates the parameter and the buffer.
// CHECK-LABEL: func.func @sgd_update
// CHECK-SAME: (%[[P:[^:]*]]: tensor<4xf32>, %[[G:[^:]*]]: tensor<4xf32>, %[[B:[^:]*]]: tensor<4xf32>, %[[LR:[^:]*]]: tensor<f32>, %[[STEP:[^:]*]]: tensor<i64>)
// CHECK-DAG: %[[LRV:.*]] = tensor.extract %[[LR]][] : tensor<f32>
// CHECK-DAG: %[[STEPV:.*]] = tensor.extract %[[STEP]][] : tensor<i64>
// CHECK: %[[FIRST:.*]] = arith.cmpi sle, %[[STEPV]], %{{.*}} : i64
// CHECK: %[[R:.*]]:2 = linalg.generic
// CHECK-SAME: ins(%[[P]], %[[G]], %[[B]] :
// CHECK: ^bb0(%[[PE:[^:]*]]: f32, %[[GE:[^:]*]]: f32, %{{[^:]*}}: f32,
// CHECK: %[[BUF:.*]] = arith.select %[[FIRST]], %[[GE]], %{{.*}} : f32
// CHECK: %[[NEST:.*]] = arith.addf %[[GE]], %{{.*}} : f32
// CHECK: %[[STEPPED:.*]] = arith.mulf %[[LRV]], %[[NEST]] : f32
// CHECK: %[[NEWP:.*]] = arith.subf %[[PE]], %[[STEPPED]] : f32
// CHECK: linalg.yield %[[NEWP]], %[[BUF]] : f32, f32
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @sgd_update(%p: tensor<4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %lr: tensor<f32>, %step: tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>) {
  %p1, %b1 = colo.sgd_update %p, %g, %b, %lr, %step {momentum = 0.9 : f64, dampening = 0.0 : f64, weight_decay = 0.0 : f64, nesterov} : tensor<4xf32>
  return %p1, %b1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Without momentum the buffer is returned as it is.
// CHECK-LABEL: func.func @sgd_update_no_momentum
// CHECK-SAME: %[[B:[^:]*]]: tensor<4xf32>, %{{[^:]*}}: tensor<f32>, %{{[^:]*}}: tensor<i64>)
// CHECK: %[[P:.*]] = linalg.generic
// CHECK-NOT: arith.select
// CHECK: return %[[P]], %[[B]]
func.func @sgd_update_no_momentum(%p: tensor<4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %lr: tensor<f32>, %step: tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>) {
  %p1, %b1 = colo.sgd_update %p, %g, %b, %lr, %step {momentum = 0.0 : f64, dampening = 0.0 : f64, weight_decay = 0.1 : f64} : tensor<4xf32>
  return %p1, %b1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// The bias corrections 1 - beta^step are scalars, computed in f64 and used
// in the compute type (f32 for bf16); one generic updates the parameter
// (AdamW: scaled by 1 - lr * weight_decay) and both moments, rounding each
// once.
// CHECK-LABEL: func.func @adam_update
// CHECK: %[[STEP:.*]] = tensor.extract %{{.*}}[] : tensor<i64>
// CHECK: %[[T:.*]] = arith.sitofp %[[STEP]] : i64 to f64
// CHECK: %[[POW:.*]] = math.powf %{{.*}}, %[[T]] : f64
// CHECK: %[[BC1:.*]] = arith.subf %{{.*}}, %[[POW]] : f64
// CHECK: arith.truncf %[[BC1]] : f64 to f32
// CHECK: math.powf
// CHECK: %[[BC2:.*]] = math.sqrt %{{.*}} : f32
// CHECK: %[[R:.*]]:3 = linalg.generic
// CHECK: math.sqrt
// CHECK: arith.divf %{{.*}}, %[[BC2]] : f32
// CHECK-COUNT-3: arith.truncf
// CHECK: return %[[R]]#0, %[[R]]#1, %[[R]]#2 : tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>
func.func @adam_update(%p: tensor<4xbf16>, %g: tensor<4xbf16>, %m: tensor<4xbf16>, %v: tensor<4xbf16>, %lr: tensor<f32>, %step: tensor<i64>) -> (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>) {
  %p1, %m1, %v1 = colo.adam_update %p, %g, %m, %v, %lr, %step {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64, weight_decay = 0.01 : f64, decoupled} : tensor<4xbf16>
  return %p1, %m1, %v1 : tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>
}

// -----

// The moments and the update direction r, then ||param||^2 and ||r||^2 in
// one reduction, the trust ratio (1 if either norm is 0), then the parameter.
// CHECK-LABEL: func.func @lamb_update
// CHECK-SAME: (%[[P:[^:]*]]: tensor<4xf32>
// CHECK: %[[M:.*]]:3 = linalg.generic {{.*}} iterator_types = ["parallel"]
// CHECK: %[[N:.*]]:2 = linalg.generic {{.*}} iterator_types = ["reduction"]
// CHECK-SAME: ins(%[[P]], %[[M]]#2 : tensor<4xf32>, tensor<4xf32>)
// CHECK: %[[PN2:.*]] = tensor.extract %[[N]]#0[] : tensor<f32>
// CHECK: %[[RN2:.*]] = tensor.extract %[[N]]#1[] : tensor<f32>
// CHECK: %[[PN:.*]] = math.sqrt %[[PN2]] : f32
// CHECK: %[[RN:.*]] = math.sqrt %[[RN2]] : f32
// CHECK: %[[ZERO:.*]] = arith.cmpf oeq, %[[PN]]
// CHECK: arith.cmpf oeq, %[[RN]]
// CHECK: %[[RATIO:.*]] = arith.divf %[[PN]], %[[RN]] : f32
// CHECK: %[[TRUST:.*]] = arith.select %{{.*}}, %{{.*}}, %[[RATIO]] : f32
// CHECK: %[[SCALE:.*]] = arith.mulf %{{.*}}, %[[TRUST]] : f32
// CHECK: %[[NEWP:.*]] = linalg.generic
// CHECK-SAME: ins(%[[P]], %[[M]]#2 :
// CHECK: arith.mulf %[[SCALE]]
// CHECK: return %[[NEWP]], %[[M]]#0, %[[M]]#1
func.func @lamb_update(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %lr: tensor<f32>, %step: tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %p1, %m1, %v1 = colo.lamb_update %p, %g, %m, %v, %lr, %step {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-06 : f64, weight_decay = 0.01 : f64} : tensor<4xf32>
  return %p1, %m1, %v1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// ||param||^2 and ||grad||^2 in one reduction, the local learning rate as a
// scalar, then one generic for the parameter and the buffer.
// CHECK-LABEL: func.func @lars_update
// CHECK-SAME: (%[[P:[^:]*]]: tensor<4xf32>, %[[G:[^:]*]]: tensor<4xf32>, %[[B:[^:]*]]: tensor<4xf32>
// CHECK: %[[N:.*]]:2 = linalg.generic {{.*}} iterator_types = ["reduction"]
// CHECK-SAME: ins(%[[P]], %[[G]] : tensor<4xf32>, tensor<4xf32>)
// CHECK: math.sqrt
// CHECK: math.sqrt
// CHECK: %[[LOCAL:.*]] = arith.select
// CHECK: %[[SCALE:.*]] = arith.mulf %{{.*}}, %[[LOCAL]] : f32
// CHECK: %[[R:.*]]:2 = linalg.generic
// CHECK-SAME: ins(%[[P]], %[[G]], %[[B]] :
// CHECK: arith.mulf %[[SCALE]]
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @lars_update(%p: tensor<4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %lr: tensor<f32>, %step: tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>) {
  %p1, %b1 = colo.lars_update %p, %g, %b, %lr, %step {momentum = 0.9 : f64, weight_decay = 0.0001 : f64, trust_coefficient = 0.001 : f64, epsilon = 1.0e-08 : f64} : tensor<4xf32>
  return %p1, %b1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// cumsum: a reduction over a second index j of the axis, adding the elements
// with j <= i (reverse: j >= i) in increasing j.
// CHECK-LABEL: func.func @cumsum
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: %[[I:.*]] = linalg.index 1 : index
// CHECK: %[[J:.*]] = linalg.index 2 : index
// CHECK: arith.cmpi ule, %[[J]], %[[I]] : index
// CHECK: arith.addi
// CHECK: arith.select
// CHECK: linalg.generic
// CHECK: arith.cmpi uge
// CHECK: arith.addf
func.func @cumsum(%ids: tensor<2x5xi64>, %x: tensor<2x5xf32>) -> (tensor<2x5xi64>, tensor<2x5xf32>) {
  %p = colo.cumsum %ids axis = 1 : tensor<2x5xi64>
  %r = colo.cumsum %x axis = -1 {reverse} : tensor<2x5xf32>
  return %p, %r : tensor<2x5xi64>, tensor<2x5xf32>
}
