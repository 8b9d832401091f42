// RUN: colo import %s --no-cleanup --summary --json | FileCheck %s

// Cross-entropy over 2 x 16 positions of 100 classes: 5 FLOPs per logit for
// the log-softmax (16000) and 1 per position (32); mean-squared error of 64
// elements: 3 each (192). Neither is matmul-class.

// CHECK: "flops": 16224,
// CHECK: "matmul_flops": 0,
module {
  func.func @forward(%logits: tensor<2x16x100xf32>, %labels: tensor<2x16xi64>,
                     %p: tensor<8x8xf32>, %t: tensor<8x8xf32>) -> (tensor<f32>, tensor<f32>) {
    %0 = colo.cross_entropy %logits, %labels : tensor<2x16x100xf32>, tensor<2x16xi64>
    %1 = colo.mse_loss %p, %t : tensor<8x8xf32>, tensor<8x8xf32>
    return %0, %1 : tensor<f32>, tensor<f32>
  }
}
