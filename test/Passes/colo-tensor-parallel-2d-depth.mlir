// RUN: colo-opt %s -split-input-file --colo-tensor-parallel-2d="q=2 depth=2" | FileCheck %s
// RUN: colo-opt %s -split-input-file --colo-create-mesh="dp=2 tp2d=2 depth=2" \
// RUN:   --colo-tensor-parallel-2d="q=2 depth=2" | FileCheck %s --check-prefix=MESH
// RUN: not colo-opt %s --colo-tensor-parallel-2d="q=2 depth=4" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=DIVIDE

// 2.5-D tensor parallelism: two copies of the 2 x 2 grid (mesh axis
// "depth" before "row"). The ids (batch 4) are cut over ("depth", "row"),
// one sample a rank; the linear weight is split over ("row", "col") as in
// 2-D, whole on each copy, so its gradient is summed over "depth" before
// SUMMA's broadcasts read it; the norm's scale and the table, replicated
// over the copies' rows, have their gradients summed over ("depth", "row").
// The first result (the logits) stays the rank's block, marked with its
// axes for the loss; the second is gathered over "col", then over ("depth",
// "row").

// MESH: shard.grid @mesh(shape = 2x2x2x2) {colo.axes = ["dp", "depth", "row", "col"]}

// CHECK: shard.grid @mesh(shape = 2x2x2) {colo.axes = ["depth", "row", "col"]}
// CHECK: colo.global trainable @wte : tensor<16x8xf32> {shard = #colo.shard<split_axes = {{\[}}[], ["col"]], parts = [1, 2]>}
// CHECK: colo.global trainable @fc.weight : tensor<8x8xf32> {shard = #colo.shard<split_axes = {{\[}}["row"], ["col"]], parts = [2, 2]>}
// CHECK-LABEL: func.func @forward
// CHECK-SAME: -> (tensor<1x4x4xf32>, tensor<4x4x8xf32>) attributes {colo.loss_class_axis = "col", colo.loss_sample_axes = ["depth", "row"], colo.tensor_parallel2d = 2 : i64}
// CHECK: %[[IDS:.*]] = shard.all_slice %arg0 on @mesh grid_axes = [0, 1] slice_axis = 0 : tensor<4x4xi64> -> tensor<1x4xi64>
// CHECK: %[[WTE:.*]] = colo.global_load @wte : tensor<16x4xf32>
// CHECK-NEXT: colo.all_reduce_grad %[[WTE]] on @mesh grid_axes = [0, 1] : tensor<16x4xf32>
// CHECK: %[[SCALE:.*]] = colo.global_load @ln.weight : tensor<4xf32>
// CHECK-NEXT: colo.all_reduce_grad %[[SCALE]] on @mesh grid_axes = [0, 1] : tensor<4xf32>
// CHECK: %[[W:.*]] = colo.global_load @fc.weight : tensor<4x4xf32>
// CHECK-NEXT: %[[WD:.*]] = colo.all_reduce_grad %[[W]] on @mesh grid_axes = [0] : tensor<4x4xf32>
// CHECK: colo.embedding {{.*}}, %[[IDS]] : tensor<16x4xf32>, tensor<1x4xi64>
// CHECK: shard.broadcast %{{.*}} on @mesh grid_axes = [2] root = [0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: shard.broadcast %[[WD]] on @mesh grid_axes = [1] root = [0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: %[[Y:.*]] = colo.reshape %{{.*}} : tensor<4x4xf32> -> tensor<1x4x4xf32>
// CHECK: %[[C:.*]] = shard.all_gather %{{.*}} on @mesh grid_axes = [2] gather_axis = 0 : tensor<4x1x4xf32> -> tensor<8x1x4xf32>
// CHECK: %[[H:.*]] = shard.all_gather %{{.*}} on @mesh grid_axes = [0, 1] gather_axis = 0 : tensor<1x4x8xf32> -> tensor<4x4x8xf32>
// CHECK: return %[[Y]], %[[H]] : tensor<1x4x4xf32>, tensor<4x4x8xf32>

// DIVIDE: colo-tensor-parallel-2d: q * depth = 8 does not divide the batch (size 4) of input 0

colo.global trainable @wte : tensor<16x8xf32>
colo.global trainable @ln.weight : tensor<8xf32>
colo.global trainable @fc.weight : tensor<8x8xf32>
func.func @forward(%ids: tensor<4x4xi64>) -> (tensor<4x4x8xf32>, tensor<4x4x8xf32>) {
  %wte = colo.global_load @wte : tensor<16x8xf32>
  %lnw = colo.global_load @ln.weight : tensor<8xf32>
  %w = colo.global_load @fc.weight : tensor<8x8xf32>
  %x = colo.embedding %wte, %ids : tensor<16x8xf32>, tensor<4x4xi64>
  %h = colo.rms_norm %x scale %lnw : tensor<8xf32> {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<4x4x8xf32>
  %h2 = colo.reshape %h : tensor<4x4x8xf32> -> tensor<16x8xf32>
  %y = colo.matmul %h2, %w : tensor<16x8xf32>, tensor<8x8xf32>
  %y3 = colo.reshape %y : tensor<16x8xf32> -> tensor<4x4x8xf32>
  return %y3, %h : tensor<4x4x8xf32>, tensor<4x4x8xf32>
}
