// A linear classifier: one matrix product and a bias, no attention, no layers.
colo.global trainable @fc.weight : tensor<4x3xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 1.0 : f64>
colo.global trainable @fc.bias : tensor<3xf32> = #colo.init<distribution = "zeros", a = 0.0 : f64, b = 0.0 : f64>
func.func @forward(%x: tensor<8x4xf32>) -> tensor<8x3xf32> {
  %w = colo.global_load @fc.weight : tensor<4x3xf32>
  %y = colo.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32>
  %b = colo.global_load @fc.bias : tensor<3xf32>
  %z = colo.add %y, %b : tensor<8x3xf32>, tensor<3xf32>
  return %z : tensor<8x3xf32>
}
