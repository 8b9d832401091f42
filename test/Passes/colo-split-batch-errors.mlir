// RUN: colo-opt %s --split-input-file --verify-diagnostics --colo-split-batch=parts=2
// RUN: not colo-opt %s --split-input-file --colo-split-batch=parts=0 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not colo-opt %s --split-input-file --colo-split-batch="parts=2 sync-ranks=4" 2>&1 | FileCheck %s --check-prefix=SYNC
// RUN: not colo-opt %s --split-input-file --colo-create-mesh=dp=4 --colo-split-batch="parts=4 sync-ranks=2" 2>&1 | FileCheck %s --check-prefix=MESH
// SYNC: error: sync-ranks=4 does not divide the 2 slices of the batch
// MESH: error: the mesh's 'dp' axis has size 4, the plan says 2

// ZERO: error: colo-split-batch needs parts >= 1, got 0

// expected-error @+1 {{argument #0 ('tensor<7x4xf32>'): batch size 7 is not divisible into 2 parts}}
func.func @forward(%x: tensor<7x4xf32>) -> tensor<7x4xf32> {
  return %x : tensor<7x4xf32>
}

// -----

// expected-error @+1 {{argument #1 ('tensor<f32>') has no batch dimension}}
func.func @forward(%x: tensor<8x4xf32>, %t: tensor<f32>) -> tensor<8x4xf32> {
  %y = colo.mul %x, %t : tensor<8x4xf32>, tensor<f32>
  return %y : tensor<8x4xf32>
}

// -----

// expected-error @+1 {{argument #0 ('tensor<1x4xf32>'): batch size 1 is not divisible into 2 parts}}
func.func @forward(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  return %x : tensor<1x4xf32>
}

// -----

// Moving the batch behind the features and flattening interleaves samples.
func.func @forward(%x: tensor<8x4xf32>) -> tensor<32xf32> {
  %t = colo.transpose %x permutation = [1, 0] : tensor<8x4xf32>
  // expected-error @+1 {{reshape 'tensor<4x8xf32>' -> 'tensor<32xf32>' does not keep the batch (dimension 1) as the outermost factor of a result dimension divisible by 2}}
  %r = colo.reshape %t : tensor<4x8xf32> -> tensor<32xf32>
  return %r : tensor<32xf32>
}

// -----

// Rows of 8 regroup 8 samples of 3: the second half of the batch starts in
// the middle of a row.
func.func @forward(%x: tensor<8x3xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{reshape 'tensor<8x3xf32>' -> 'tensor<3x8xf32>' does not keep the batch (dimension 0) as the outermost factor of a result dimension divisible by 2}}
  %r = colo.reshape %x : tensor<8x3xf32> -> tensor<3x8xf32>
  return %r : tensor<3x8xf32>
}

// -----

func.func @forward(%x: tensor<8x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{reduces over the batch (operand #0, dimension 0)}}
  %m = colo.reduce_mean %x dims = [0] : tensor<8x4xf32>
  return %m : tensor<4xf32>
}

// -----

func.func @forward(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{reduces over the batch (operand #0, dimension 0)}}
  %p = colo.softmax %x axis = 0 : tensor<8x4xf32>
  return %p : tensor<8x4xf32>
}

// -----

// x^T x sums over the samples.
func.func @forward(%x: tensor<8x4xf32>) -> tensor<4x4xf32> {
  %t = colo.transpose %x permutation = [1, 0] : tensor<8x4xf32>
  // expected-error @+1 {{reduces over the batch (operand #0, dimension 1)}}
  %g = colo.matmul %t, %x : tensor<4x8xf32>, tensor<8x4xf32>
  return %g : tensor<4x4xf32>
}

// -----

// x x^T pairs every sample with every other.
func.func @forward(%x: tensor<8x4xf32>) -> tensor<8x8xf32> {
  %t = colo.transpose %x permutation = [1, 0] : tensor<8x4xf32>
  // expected-error @+1 {{operands carry the batch into different result dimensions: 0 vs 1}}
  %g = colo.matmul %x, %t : tensor<8x4xf32>, tensor<4x8xf32>
  return %g : tensor<8x8xf32>
}

// -----

func.func @forward(%x: tensor<8x4xf32>, %l: tensor<8xi64>) -> tensor<f32> {
  // expected-error @+1 {{reduces over the batch (operand #0, dimension 0)}}
  %loss = colo.cross_entropy %x, %l : tensor<8x4xf32>, tensor<8xi64>
  return %loss : tensor<f32>
}

// -----

func.func @forward(%x: tensor<8x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{slices the batch dimension 0: [0, 4) step 1 of 8}}
  %s = colo.slice %x start = [0, 0] limit = [4, 4] stride = [1, 1] : tensor<8x4xf32>
  return %s : tensor<4x4xf32>
}

// -----

func.func @forward(%x: tensor<8x4xf32>) -> tensor<16x4xf32> {
  // expected-error @+1 {{mixes samples across the batch (operand #0, dimension 0)}}
  %c = colo.concat %x, %x axis = 0 : tensor<8x4xf32>, tensor<8x4xf32>
  return %c : tensor<16x4xf32>
}

// -----

func.func @forward(%x: tensor<8x4xf32>) -> tensor<2x4xf32> {
  %i = colo.constant dense<[0, 7]> : tensor<2xi64>
  // expected-error @+1 {{mixes samples across the batch (operand #0, dimension 0)}}
  %g = colo.gather %x, %i axis = 0 : tensor<8x4xf32>, tensor<2xi64>
  return %g : tensor<2x4xf32>
}

// -----

// A per-sample constant differs between the halves of the batch.
func.func @forward(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %w = colo.constant dense<[[1.0], [2.0], [3.0], [4.0]]> : tensor<4x1xf32>
  // expected-error @+1 {{batch-independent operand #1 ('tensor<4x1xf32>') has the batch size in dimension 0 but differs between the 2 slices}}
  %y = colo.mul %x, %w : tensor<4x2xf32>, tensor<4x1xf32>
  return %y : tensor<4x2xf32>
}

// -----

colo.global @buffer : tensor<8x4xf32> = dense<0.0> : tensor<8x4xf32>
func.func @forward(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %b = colo.global_load @buffer : tensor<8x4xf32>
  // expected-error @+1 {{batch-independent operand #1 ('tensor<8x4xf32>') has the batch size in dimension 0 but differs between the 2 slices}}
  %y = colo.add %x, %b : tensor<8x4xf32>, tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

colo.global @buffer : tensor<8x4xf32> = dense<0.0> : tensor<8x4xf32>
func.func @forward(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{colo-split-batch does not support 'colo.global_store' on a batch-dependent operand}}
  colo.global_store @buffer, %x : tensor<8x4xf32>
  return %x : tensor<8x4xf32>
}

// -----

// expected-error @+1 {{no func.func @forward to split}}
module {
  func.func @main(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
    return %x : tensor<8x4xf32>
  }
}

// -----

// Rows gathered by indices that differ between the halves differ too.
colo.global trainable @pos : tensor<8x4xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.1 : f64>
func.func @forward(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %tab = colo.global_load @pos : tensor<8x4xf32>
  %positions = colo.constant dense<[[0, 1, 2], [3, 4, 5]]> : tensor<2x3xi64>
  %pe = colo.embedding %tab, %positions : tensor<8x4xf32>, tensor<2x3xi64>
  // expected-error @+1 {{batch-independent operand #1 ('tensor<2x3x4xf32>') has the batch size in dimension 0 but differs between the 2 slices}}
  %h = colo.add %x, %pe : tensor<2x3x4xf32>, tensor<2x3x4xf32>
  return %h : tensor<2x3x4xf32>
}
