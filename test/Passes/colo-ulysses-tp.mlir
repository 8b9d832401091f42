// RUN: colo-opt %s --colo-create-mesh="sp=2 tp=2" --colo-tensor-parallel=tp=2 --colo-ulysses=sp=2 | FileCheck %s

// Ulysses after Megatron tensor parallelism (as colo compile orders them):
// each tp rank holds 2 of the 4 heads; the all-to-alls over sp exchange
// those heads' sequence blocks (one head per rank of the 2 x 2 mesh sees
// the whole sequence), and tensor parallelism's entry (all_reduce_grad over
// tp) and its sum after the output projection run on the rank's tokens.
// CHECK: shard.grid @mesh(shape = 2x2) {colo.axes = ["sp", "tp"]}
// CHECK-LABEL: func.func @forward
// CHECK: colo.all_reduce_grad %{{.*}} on @mesh grid_axes = [1] : tensor<2x2x8xf32>
// CHECK-COUNT-3: shard.all_to_all {{.*}} on @mesh grid_axes = [0] {{.*}} : tensor<2x2x1x2x2xf32> -> tensor<2x2x1x2x2xf32>
// CHECK: colo.attention %{{.*}} : tensor<2x1x4x2xf32>, tensor<2x1x4x2xf32>, tensor<2x1x4x2xf32>
// CHECK: shard.all_to_all {{.*}} on @mesh grid_axes = [0]
// CHECK: shard.all_reduce %{{.*}} on @mesh grid_axes = [1] : tensor<2x2x8xf32> -> tensor<2x2x8xf32>
// CHECK: shard.all_gather %{{.*}} on @mesh grid_axes = [0]
// CHECK: return
colo.global trainable @wte : tensor<16x8xf32>
colo.global trainable @attn.q : tensor<8x8xf32>
colo.global trainable @attn.k : tensor<8x8xf32>
colo.global trainable @attn.v : tensor<8x8xf32>
colo.global trainable @attn.o : tensor<8x8xf32>
func.func @forward(%ids: tensor<2x4xi64>) -> tensor<2x4x16xf32> {
  %wte = colo.global_load @wte : tensor<16x8xf32>
  %wq = colo.global_load @attn.q : tensor<8x8xf32>
  %wk = colo.global_load @attn.k : tensor<8x8xf32>
  %wv = colo.global_load @attn.v : tensor<8x8xf32>
  %wo = colo.global_load @attn.o : tensor<8x8xf32>
  %x = colo.embedding %wte, %ids : tensor<16x8xf32>, tensor<2x4xi64>
  %q3 = colo.matmul %x, %wq : tensor<2x4x8xf32>, tensor<8x8xf32>
  %q4 = colo.reshape %q3 : tensor<2x4x8xf32> -> tensor<2x4x4x2xf32>
  %q = colo.transpose %q4 permutation = [0, 2, 1, 3] : tensor<2x4x4x2xf32>
  %k3 = colo.matmul %x, %wk : tensor<2x4x8xf32>, tensor<8x8xf32>
  %k4 = colo.reshape %k3 : tensor<2x4x8xf32> -> tensor<2x4x4x2xf32>
  %k = colo.transpose %k4 permutation = [0, 2, 1, 3] : tensor<2x4x4x2xf32>
  %v3 = colo.matmul %x, %wv : tensor<2x4x8xf32>, tensor<8x8xf32>
  %v4 = colo.reshape %v3 : tensor<2x4x8xf32> -> tensor<2x4x4x2xf32>
  %v = colo.transpose %v4 permutation = [0, 2, 1, 3] : tensor<2x4x4x2xf32>
  %a = colo.attention %q, %k, %v {causal, scale = 0.5 : f64} : tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>
  %at = colo.transpose %a permutation = [0, 2, 1, 3] : tensor<2x4x4x2xf32>
  %a3 = colo.reshape %at : tensor<2x4x4x2xf32> -> tensor<2x4x8xf32>
  %o = colo.matmul %a3, %wo : tensor<2x4x8xf32>, tensor<8x8xf32>
  %r = colo.add %x, %o : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %head = colo.transpose %wte permutation = [1, 0] : tensor<16x8xf32>
  %logits = colo.matmul %r, %head : tensor<2x4x8xf32>, tensor<8x16xf32>
  return %logits : tensor<2x4x16xf32>
}
