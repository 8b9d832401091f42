// RUN: colo import %s --no-cleanup --summary --json | FileCheck %s
// RUN: sed 's/, dropout = 1.000000e-01 : f64//' %s > %t.mlir
// RUN: colo import %t.mlir --no-cleanup --summary --json | FileCheck %s --check-prefix=NODROP

// The cost of colo.attention. Scores: b * h * s * t = 2 * 4 * 16 * 32 = 4096.
// q k^T is 2 * 4096 * d(8) = 65536 FLOPs, p v 2 * 4096 * dv(16) = 131072,
// scaling and softmax 5 per score = 20480, dropout 2 more per score = 8192.

// CHECK: "flops": 225280,
// CHECK: "matmul_flops": 225280,
// NODROP: "flops": 217088,
// NODROP: "matmul_flops": 217088,
module {
  func.func @forward(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x32x8xf32>, %v: tensor<2x2x32x16xf32>) -> tensor<2x4x16x16xf32> {
    %0 = colo.attention %q, %k, %v {scale = 0.125 : f64, dropout = 1.000000e-01 : f64}
         : tensor<2x4x16x8xf32>, tensor<2x2x32x8xf32>, tensor<2x2x32x16xf32>
    return %0 : tensor<2x4x16x16xf32>
  }
}
