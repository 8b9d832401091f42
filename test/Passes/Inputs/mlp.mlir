// Three linear layers with ReLUs between them: each weight is read by the
// forward and again by the backward (the input gradient's product).
colo.global trainable @fc1.weight : tensor<16x16xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 1.0 : f64>
colo.global trainable @fc2.weight : tensor<16x16xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 1.0 : f64>
colo.global trainable @fc3.weight : tensor<16x4xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 1.0 : f64>
func.func @forward(%x: tensor<8x16xf32>) -> tensor<8x4xf32> {
  %w1 = colo.global_load @fc1.weight : tensor<16x16xf32>
  %y1 = colo.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x16xf32>
  %a1 = colo.relu %y1 : tensor<8x16xf32>
  %w2 = colo.global_load @fc2.weight : tensor<16x16xf32>
  %y2 = colo.matmul %a1, %w2 : tensor<8x16xf32>, tensor<16x16xf32>
  %a2 = colo.relu %y2 : tensor<8x16xf32>
  %w3 = colo.global_load @fc3.weight : tensor<16x4xf32>
  %y3 = colo.matmul %a2, %w3 : tensor<8x16xf32>, tensor<16x4xf32>
  return %y3 : tensor<8x4xf32>
}
