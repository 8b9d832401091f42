// RUN: colo-opt %s --split-input-file --verify-diagnostics --colo-build-train-step="loss=lm"

// expected-error @+1 {{loss=lm needs logits [B, S, V] with S >= 2, got 'tensor<8x3xf32>'}}
func.func @forward(%x: tensor<8x4xf32>) -> tensor<8x3xf32> {
  %y = colo.reshape %x : tensor<8x4xf32> -> tensor<8x4xf32>
  %z = colo.slice %y start = [0, 0] limit = [8, 3] stride = [1, 1] : tensor<8x4xf32>
  return %z : tensor<8x3xf32>
}

// -----

// expected-error @+1 {{no func.func @forward to build a training step from}}
module {
  func.func @main(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
    return %x : tensor<8x4xf32>
  }
}
