// RUN: colo-opt %s --split-input-file --colo-zero="dp=2" | FileCheck %s
// RUN: colo-opt %s --split-input-file --colo-zero="dp=2 stage=2 bucket-mb=0.00001" | FileCheck %s --check-prefix=SMALL
// RUN: colo-opt %s --split-input-file --colo-zero="dp=2 stage=3" | FileCheck %s --check-prefix=Z3
// RUN: colo-opt %s --split-input-file --colo-zero="dp=2 stage=2" | FileCheck %s --check-prefix=ACC

// Adam on two parameters, W (12 elements) and b (3, padded to 4): one
// bucket, reduce-scattered right after the last gradient is computed. Each
// gradient is viewed as [2, n'/2] and the two joined along the columns, so
// rank r receives block r of both; the rank's blocks of the parameters are
// taken locally, the state globals keep only the blocks (a flat shard of
// the whole state), and the updated blocks are gathered back with one
// all-gather.
// CHECK-DAG: shard.grid @mesh(shape = 2) {colo.axes = ["dp"]}
// CHECK-DAG: colo.global @"w#exp_avg" : tensor<4x3xf32> = dense<0.000000e+00> : tensor<4x3xf32> {colo.optimizer_state, shard = #colo.shard<flat = true, split_axes = {{\[\["dp"\]\]}}, parts = [2]>}
// CHECK-DAG: colo.global @"w#exp_avg_sq" : tensor<4x3xf32> = dense<0.000000e+00> : tensor<4x3xf32> {colo.optimizer_state, shard = #colo.shard<flat = true, split_axes = {{\[\["dp"\]\]}}, parts = [2]>}
// CHECK-DAG: colo.global @"b#exp_avg" : tensor<3xf32> = dense<0.000000e+00> : tensor<3xf32> {colo.optimizer_state, shard = #colo.shard<flat = true, split_axes = {{\[\["dp"\]\]}}, parts = [2]>}
// CHECK-DAG: colo.global @"b#exp_avg_sq" : tensor<3xf32> = dense<0.000000e+00> : tensor<3xf32> {colo.optimizer_state, shard = #colo.shard<flat = true, split_axes = {{\[\["dp"\]\]}}, parts = [2]>}
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: attributes {colo.data_parallel = 2 : i64, colo.zero = 1 : i64}
// CHECK: %[[LOSS:.*]] = colo.reduce_mean
// CHECK: %[[DB:.*]] = colo.mul %{{.*}} : tensor<3xf32>
// CHECK: %[[DW:.*]] = colo.mul %{{.*}} : tensor<4x3xf32>
// CHECK-NEXT: %[[ZB:.*]] = colo.constant dense<0.000000e+00> : tensor<1xf32>
// CHECK-NEXT: %[[PB:.*]] = colo.concat %[[DB]], %[[ZB]] axis = 0 : tensor<3xf32>, tensor<1xf32>
// CHECK-NEXT: %[[RB:.*]] = colo.reshape %[[PB]] : tensor<4xf32> -> tensor<2x2xf32>
// CHECK-NEXT: %[[FW:.*]] = colo.reshape %[[DW]] : tensor<4x3xf32> -> tensor<12xf32>
// CHECK-NEXT: %[[RW:.*]] = colo.reshape %[[FW]] : tensor<12xf32> -> tensor<2x6xf32>
// CHECK-NEXT: %[[J:.*]] = colo.concat %[[RB]], %[[RW]] axis = 1 : tensor<2x2xf32>, tensor<2x6xf32>
// CHECK-NEXT: %[[RS:.*]] = shard.reduce_scatter %[[J]] on @mesh grid_axes = [0] reduction = average scatter_axis = 0 : tensor<2x8xf32> -> tensor<1x8xf32>
// CHECK-NEXT: %[[SB:.*]] = colo.slice %[[RS]] start = [0, 0] limit = [1, 2] stride = [1, 1]
// CHECK-NEXT: %[[GB:.*]] = colo.reshape %[[SB]] : tensor<1x2xf32> -> tensor<2xf32>
// CHECK-NEXT: %[[SW:.*]] = colo.slice %[[RS]] start = [0, 2] limit = [1, 8] stride = [1, 1]
// CHECK-NEXT: %[[GW:.*]] = colo.reshape %[[SW]] : tensor<1x6xf32> -> tensor<6xf32>
// CHECK-NOT: colo.gradient
// CHECK: %[[W:.*]] = colo.global_load @w : tensor<4x3xf32>
// CHECK: %[[MW:.*]] = colo.global_load @"w#exp_avg" : tensor<6xf32>
// CHECK: %[[VW:.*]] = colo.global_load @"w#exp_avg_sq" : tensor<6xf32>
// CHECK: %[[FLATW:.*]] = colo.reshape %[[W]] : tensor<4x3xf32> -> tensor<12xf32>
// CHECK: %[[WS:.*]] = shard.all_slice %[[FLATW]] on @mesh grid_axes = [0] slice_axis = 0 : tensor<12xf32> -> tensor<6xf32>
// CHECK: %[[NW:.*]], %[[NMW:.*]], %[[NVW:.*]] = colo.adam_update %[[WS]], %[[GW]], %[[MW]], %[[VW]], %{{.*}}, %{{.*}} {{.*}} : tensor<6xf32>
// CHECK: colo.global_store @"w#exp_avg", %[[NMW]] : tensor<6xf32>
// CHECK: colo.global_store @"w#exp_avg_sq", %[[NVW]] : tensor<6xf32>
// CHECK: %[[B:.*]] = colo.global_load @b : tensor<3xf32>
// CHECK: %[[ZP:.*]] = colo.constant dense<0.000000e+00> : tensor<1xf32>
// CHECK: %[[PADB:.*]] = colo.concat %[[B]], %[[ZP]] axis = 0
// CHECK: %[[BS:.*]] = shard.all_slice %[[PADB]] on @mesh grid_axes = [0] slice_axis = 0 : tensor<4xf32> -> tensor<2xf32>
// CHECK: %[[NB:.*]], %[[NMB:.*]], %[[NVB:.*]] = colo.adam_update %[[BS]], %[[GB]], {{.*}} : tensor<2xf32>
// CHECK-NEXT: %[[NW1:.*]] = colo.reshape %[[NW]] : tensor<6xf32> -> tensor<1x6xf32>
// CHECK-NEXT: %[[NB1:.*]] = colo.reshape %[[NB]] : tensor<2xf32> -> tensor<1x2xf32>
// CHECK-NEXT: %[[NJ:.*]] = colo.concat %[[NW1]], %[[NB1]] axis = 1 : tensor<1x6xf32>, tensor<1x2xf32>
// CHECK-NEXT: %[[AG:.*]] = shard.all_gather %[[NJ]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<1x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT: %[[AW:.*]] = colo.slice %[[AG]] start = [0, 0] limit = [2, 6] stride = [1, 1]
// CHECK-NEXT: %[[AWF:.*]] = colo.reshape %[[AW]] : tensor<2x6xf32> -> tensor<12xf32>
// CHECK-NEXT: %[[NEWW:.*]] = colo.reshape %[[AWF]] : tensor<12xf32> -> tensor<4x3xf32>
// CHECK-NEXT: colo.global_store @w, %[[NEWW]] : tensor<4x3xf32>
// CHECK-NEXT: %[[AB:.*]] = colo.slice %[[AG]] start = [0, 6] limit = [2, 8] stride = [1, 1]
// CHECK-NEXT: %[[ABF:.*]] = colo.reshape %[[AB]] : tensor<2x2xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[NEWB:.*]] = colo.slice %[[ABF]] start = [0] limit = [3] stride = [1]
// CHECK-NEXT: colo.global_store @b, %[[NEWB]] : tensor<3xf32>
// CHECK-NEXT: colo.global_store @"b#exp_avg", %[[NMB]] : tensor<2xf32>
// CHECK-NEXT: colo.global_store @"b#exp_avg_sq", %[[NVB]] : tensor<2xf32>
// CHECK-NEXT: %[[MEAN:.*]] = shard.all_reduce %[[LOSS]] on @mesh grid_axes = [0] reduction = average : tensor<f32> -> tensor<f32>
// CHECK-NEXT: return %[[MEAN]]

// With buckets smaller than a gradient, one reduce-scatter and one
// all-gather per parameter, and no concatenations of buckets.
// SMALL-LABEL: func.func @train_step
// SMALL-SAME: colo.zero = 2 : i64
// SMALL: shard.reduce_scatter %{{.*}} : tensor<2x2xf32> -> tensor<1x2xf32>
// SMALL: shard.reduce_scatter %{{.*}} : tensor<2x6xf32> -> tensor<1x6xf32>
// SMALL-NOT: axis = 1
// SMALL: colo.adam_update {{.*}} : tensor<6xf32>
// SMALL: shard.all_gather %{{.*}} : tensor<1x6xf32> -> tensor<2x6xf32>
// SMALL: colo.adam_update {{.*}} : tensor<2xf32>
// SMALL: shard.all_gather %{{.*}} : tensor<1x2xf32> -> tensor<2x2xf32>
colo.global trainable @w : tensor<4x3xf32> = dense<1.0> : tensor<4x3xf32>
colo.global trainable @b : tensor<3xf32> = dense<0.0> : tensor<3xf32>
colo.global @"w#exp_avg" : tensor<4x3xf32> = dense<0.0> : tensor<4x3xf32> {colo.optimizer_state}
colo.global @"w#exp_avg_sq" : tensor<4x3xf32> = dense<0.0> : tensor<4x3xf32> {colo.optimizer_state}
colo.global @"b#exp_avg" : tensor<3xf32> = dense<0.0> : tensor<3xf32> {colo.optimizer_state}
colo.global @"b#exp_avg_sq" : tensor<3xf32> = dense<0.0> : tensor<3xf32> {colo.optimizer_state}
func.func @train_step(%x: tensor<4x3xf32>, %lr: tensor<f32>, %step: tensor<i64>) -> tensor<f32> {
  %loss = colo.reduce_mean %x dims = [0, 1] : tensor<4x3xf32>
  %y = colo.reduce_sum %x dims = [0] : tensor<4x3xf32>
  %db = colo.mul %y, %y : tensor<3xf32>, tensor<3xf32>
  %dw = colo.mul %x, %x : tensor<4x3xf32>, tensor<4x3xf32>
  %gb = colo.gradient %db of @b : tensor<3xf32>
  %gw = colo.gradient %dw of @w : tensor<4x3xf32>
  %w = colo.global_load @w : tensor<4x3xf32>
  %mw = colo.global_load @"w#exp_avg" : tensor<4x3xf32>
  %vw = colo.global_load @"w#exp_avg_sq" : tensor<4x3xf32>
  %nw, %nmw, %nvw = colo.adam_update %w, %gw, %mw, %vw, %lr, %step
      {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64,
       weight_decay = 0.01 : f64, decoupled} : tensor<4x3xf32>
  colo.global_store @w, %nw : tensor<4x3xf32>
  colo.global_store @"w#exp_avg", %nmw : tensor<4x3xf32>
  colo.global_store @"w#exp_avg_sq", %nvw : tensor<4x3xf32>
  %b = colo.global_load @b : tensor<3xf32>
  %mb = colo.global_load @"b#exp_avg" : tensor<3xf32>
  %vb = colo.global_load @"b#exp_avg_sq" : tensor<3xf32>
  %nb, %nmb, %nvb = colo.adam_update %b, %gb, %mb, %vb, %lr, %step
      {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64,
       weight_decay = 0.01 : f64, decoupled} : tensor<3xf32>
  colo.global_store @b, %nb : tensor<3xf32>
  colo.global_store @"b#exp_avg", %nmb : tensor<3xf32>
  colo.global_store @"b#exp_avg_sq", %nvb : tensor<3xf32>
  return %loss : tensor<f32>
}

// -----

// SGD with momentum: the momentum buffer is sharded. A 5-element parameter
// is padded to 6 on 2 ranks.
// CHECK-DAG: colo.global @"v#momentum_buffer" : tensor<5xf32> = dense<0.000000e+00> : tensor<5xf32> {colo.optimizer_state, shard = #colo.shard<flat = true, split_axes = {{\[\["dp"\]\]}}, parts = [2]>}
// CHECK-LABEL: func.func @train_step
// CHECK: %[[DV:.*]] = colo.exp %{{.*}} : tensor<5xf32>
// CHECK-NEXT: %[[Z:.*]] = colo.constant dense<0.000000e+00> : tensor<1xf32>
// CHECK-NEXT: %[[P:.*]] = colo.concat %[[DV]], %[[Z]] axis = 0 : tensor<5xf32>, tensor<1xf32>
// CHECK-NEXT: %[[R:.*]] = colo.reshape %[[P]] : tensor<6xf32> -> tensor<2x3xf32>
// CHECK-NEXT: %[[RS:.*]] = shard.reduce_scatter %[[R]] on @mesh grid_axes = [0] reduction = average scatter_axis = 0 : tensor<2x3xf32> -> tensor<1x3xf32>
// CHECK-NEXT: %[[G:.*]] = colo.reshape %[[RS]] : tensor<1x3xf32> -> tensor<3xf32>
// CHECK: %[[BUF:.*]] = colo.global_load @"v#momentum_buffer" : tensor<3xf32>
// CHECK: %[[VS:.*]] = shard.all_slice %{{.*}} on @mesh grid_axes = [0] slice_axis = 0 : tensor<6xf32> -> tensor<3xf32>
// CHECK: %[[NV:.*]], %[[NBUF:.*]] = colo.sgd_update %[[VS]], %[[G]], %[[BUF]], {{.*}} : tensor<3xf32>
// CHECK-NEXT: %[[NV1:.*]] = colo.reshape %[[NV]] : tensor<3xf32> -> tensor<1x3xf32>
// CHECK-NEXT: %[[AG:.*]] = shard.all_gather %[[NV1]] on @mesh grid_axes = [0] gather_axis = 0 : tensor<1x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT: %[[F:.*]] = colo.reshape %[[AG]] : tensor<2x3xf32> -> tensor<6xf32>
// CHECK-NEXT: %[[NEW:.*]] = colo.slice %[[F]] start = [0] limit = [5] stride = [1]
// CHECK-NEXT: colo.global_store @v, %[[NEW]] : tensor<5xf32>
// CHECK-NEXT: colo.global_store @"v#momentum_buffer", %[[NBUF]] : tensor<3xf32>
colo.global trainable @v : tensor<5xf32> = dense<1.0> : tensor<5xf32>
colo.global @"v#momentum_buffer" : tensor<5xf32> = dense<0.0> : tensor<5xf32> {colo.optimizer_state}
func.func @train_step(%x: tensor<5xf32>, %lr: tensor<f32>, %step: tensor<i64>) -> tensor<f32> {
  %loss = colo.reduce_mean %x dims = [0] : tensor<5xf32>
  %dv = colo.exp %x : tensor<5xf32>
  %g = colo.gradient %dv of @v : tensor<5xf32>
  %v = colo.global_load @v : tensor<5xf32>
  %buf = colo.global_load @"v#momentum_buffer" : tensor<5xf32>
  %nv, %nbuf = colo.sgd_update %v, %g, %buf, %lr, %step
      {momentum = 0.9 : f64, dampening = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<5xf32>
  colo.global_store @v, %nv : tensor<5xf32>
  colo.global_store @"v#momentum_buffer", %nbuf : tensor<5xf32>
  return %loss : tensor<f32>
}

// -----

// SGD without momentum has no state: its buffer operand is the gradient,
// which becomes the rank's block in both places. 7 elements on 2 ranks: 8.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[RS:.*]] = shard.reduce_scatter %{{.*}} : tensor<2x4xf32> -> tensor<1x4xf32>
// CHECK-NEXT: %[[G:.*]] = colo.reshape %[[RS]] : tensor<1x4xf32> -> tensor<4xf32>
// CHECK: %[[US:.*]] = shard.all_slice %{{.*}} : tensor<8xf32> -> tensor<4xf32>
// CHECK: %[[NU:.*]], %{{.*}} = colo.sgd_update %[[US]], %[[G]], %[[G]], {{.*}} : tensor<4xf32>
// CHECK: shard.all_gather %{{.*}} : tensor<1x4xf32> -> tensor<2x4xf32>
// CHECK: colo.global_store @u, %{{.*}} : tensor<7xf32>
colo.global trainable @u : tensor<7xf32> = dense<1.0> : tensor<7xf32>
func.func @train_step(%x: tensor<7xf32>, %lr: tensor<f32>, %step: tensor<i64>) -> tensor<f32> {
  %loss = colo.reduce_mean %x dims = [0] : tensor<7xf32>
  %du = colo.exp %x : tensor<7xf32>
  %g = colo.gradient %du of @u : tensor<7xf32>
  %u = colo.global_load @u : tensor<7xf32>
  %nu, %nbuf = colo.sgd_update %u, %g, %g, %lr, %step
      {momentum = 0.0 : f64, dampening = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<7xf32>
  colo.global_store @u, %nu : tensor<7xf32>
  return %loss : tensor<f32>
}

// -----

// Stage 3: the parameters are sharded flat too, so each load yields the
// rank's block. @proj (12 elements, 6 per rank) is read by the forward, the
// forward's transpose of it is read again by the backward, and the backward
// reads it directly too: one all-gather before the first forward use, a
// second one (and the transpose computed again from it) before the first
// backward use. @bias (3, padded to 4) is read by the forward only: gathered
// once, the padding cut. Gradients are reduce-scattered as in stage 2; the
// updates run on the loaded blocks (no all_slice) and store their new blocks
// (no all-gather after the update).
// Z3-LABEL: colo.global trainable @proj : tensor<3x4xf32> = {{.*}} {shard = #colo.shard<flat = true, split_axes = {{\[}}["dp"]], parts = [2]>}
// Z3-NEXT: colo.global trainable @bias : tensor<3xf32> = {{.*}} {shard = #colo.shard<flat = true, split_axes = {{\[}}["dp"]], parts = [2]>}
// Z3-NEXT: colo.global @"proj#exp_avg" : tensor<3x4xf32> = {{.*}} {colo.optimizer_state, shard = #colo.shard<flat = true, split_axes = {{\[}}["dp"]], parts = [2]>}
// Z3: func.func @train_step
// Z3-SAME: colo.zero = 3 : i64
// Z3-NEXT: %[[P:.*]] = colo.global_load @proj : tensor<6xf32>
// Z3-NEXT: %[[B:.*]] = colo.global_load @bias : tensor<2xf32>
// Z3-NEXT: %[[AGF:.*]] = shard.all_gather %[[P]] on @mesh grid_axes = [0] gather_axis = 0 {colo.zero_gather = "forward"} : tensor<6xf32> -> tensor<12xf32>
// Z3-NEXT: %[[PF:.*]] = colo.reshape %[[AGF]] : tensor<12xf32> -> tensor<3x4xf32>
// Z3-NEXT: %[[PT:.*]] = colo.transpose %[[PF]] permutation = [1, 0]
// Z3-NEXT: %[[XW:.*]] = colo.matmul %{{.*}}, %[[PT]]
// Z3-NEXT: %[[AGB:.*]] = shard.all_gather %[[B]] on @mesh grid_axes = [0] gather_axis = 0 {colo.zero_gather = "forward"} : tensor<2xf32> -> tensor<4xf32>
// Z3-NEXT: %[[BF:.*]] = colo.slice %[[AGB]] start = [0] limit = [3] stride = [1] : tensor<4xf32>
// Z3-NEXT: %[[Y:.*]] = colo.add %[[XW]], %[[BF]]
// Z3-NEXT: %[[LOSS:.*]] = colo.reduce_mean %[[Y]]
// Z3-NEXT: %[[DY:.*]] = colo.exp %[[Y]]
// Z3-NEXT: %[[AGP2:.*]] = shard.all_gather %[[P]] on @mesh grid_axes = [0] gather_axis = 0 {colo.zero_gather = "backward"} : tensor<6xf32> -> tensor<12xf32>
// Z3-NEXT: %[[PB:.*]] = colo.reshape %[[AGP2]] : tensor<12xf32> -> tensor<3x4xf32>
// Z3-NEXT: %[[PBT:.*]] = colo.transpose %[[PB]] permutation = [1, 0]
// Z3-NEXT: %[[DX:.*]] = colo.matmul %[[DY]], %[[PB]]
// Z3-NEXT: colo.matmul %[[DX]], %[[PBT]]
// Z3-NOT: all_gather
// Z3: shard.reduce_scatter %{{.*}} on @mesh grid_axes = [0] reduction = average scatter_axis = 0 : tensor<2x8xf32> -> tensor<1x8xf32>
// Z3-NOT: all_slice
// Z3: %[[PU:.*]] = colo.global_load @proj : tensor<6xf32>
// Z3: %[[NP:.*]], %[[NMP:.*]], %{{.*}} = colo.adam_update %[[PU]], %{{.*}} : tensor<6xf32>
// Z3-NEXT: colo.global_store @proj, %[[NP]] : tensor<6xf32>
// Z3-NEXT: colo.global_store @"proj#exp_avg", %[[NMP]] : tensor<6xf32>
// Z3: %[[BU:.*]] = colo.global_load @bias : tensor<2xf32>
// Z3: %[[NB:.*]], %{{.*}}, %{{.*}} = colo.adam_update %[[BU]], %{{.*}} : tensor<2xf32>
// Z3-NEXT: colo.global_store @bias, %[[NB]] : tensor<2xf32>
// Z3-NOT: all_gather
// Z3: shard.all_reduce %[[LOSS]] on @mesh grid_axes = [0] reduction = average : tensor<f32> -> tensor<f32>
colo.global trainable @proj : tensor<3x4xf32> = dense<1.0> : tensor<3x4xf32>
colo.global trainable @bias : tensor<3xf32> = dense<0.0> : tensor<3xf32>
colo.global @"proj#exp_avg" : tensor<3x4xf32> = dense<0.0> : tensor<3x4xf32> {colo.optimizer_state}
colo.global @"proj#exp_avg_sq" : tensor<3x4xf32> = dense<0.0> : tensor<3x4xf32> {colo.optimizer_state}
colo.global @"bias#exp_avg" : tensor<3xf32> = dense<0.0> : tensor<3xf32> {colo.optimizer_state}
colo.global @"bias#exp_avg_sq" : tensor<3xf32> = dense<0.0> : tensor<3xf32> {colo.optimizer_state}
func.func @train_step(%x: tensor<2x4xf32>, %lr: tensor<f32>, %step: tensor<i64>) -> tensor<f32> {
  %w0 = colo.global_load @proj : tensor<3x4xf32>
  %b0 = colo.global_load @bias : tensor<3xf32>
  %wt = colo.transpose %w0 permutation = [1, 0] : tensor<3x4xf32>
  %xw = colo.matmul %x, %wt : tensor<2x4xf32>, tensor<4x3xf32>
  %y = colo.add %xw, %b0 : tensor<2x3xf32>, tensor<3xf32>
  %loss = colo.reduce_mean %y dims = [0, 1] : tensor<2x3xf32>
  %dy = colo.exp %y : tensor<2x3xf32>
  %dx = colo.matmul %dy, %w0 : tensor<2x3xf32>, tensor<3x4xf32>
  %u = colo.matmul %dx, %wt : tensor<2x4xf32>, tensor<4x3xf32>
  %dyt = colo.transpose %u permutation = [1, 0] : tensor<2x3xf32>
  %dw = colo.matmul %dyt, %x : tensor<3x2xf32>, tensor<2x4xf32>
  %db = colo.reduce_sum %dy dims = [0] : tensor<2x3xf32>
  %gw = colo.gradient %dw of @proj : tensor<3x4xf32>
  %gb = colo.gradient %db of @bias : tensor<3xf32>
  %w = colo.global_load @proj : tensor<3x4xf32>
  %mw = colo.global_load @"proj#exp_avg" : tensor<3x4xf32>
  %vw = colo.global_load @"proj#exp_avg_sq" : tensor<3x4xf32>
  %nw, %nmw, %nvw = colo.adam_update %w, %gw, %mw, %vw, %lr, %step
      {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64,
       weight_decay = 0.01 : f64, decoupled} : tensor<3x4xf32>
  colo.global_store @proj, %nw : tensor<3x4xf32>
  colo.global_store @"proj#exp_avg", %nmw : tensor<3x4xf32>
  colo.global_store @"proj#exp_avg_sq", %nvw : tensor<3x4xf32>
  %b = colo.global_load @bias : tensor<3xf32>
  %mb = colo.global_load @"bias#exp_avg" : tensor<3xf32>
  %vb = colo.global_load @"bias#exp_avg_sq" : tensor<3xf32>
  %nb, %nmb, %nvb = colo.adam_update %b, %gb, %mb, %vb, %lr, %step
      {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64,
       weight_decay = 0.01 : f64, decoupled} : tensor<3xf32>
  colo.global_store @bias, %nb : tensor<3xf32>
  colo.global_store @"bias#exp_avg", %nmb : tensor<3xf32>
  colo.global_store @"bias#exp_avg_sq", %nvb : tensor<3xf32>
  return %loss : tensor<f32>
}

// -----

// Gradient accumulation over two microbatches, as colo-pipeline writes it:
// each microbatch's gradient (computed by an op of colo.micro m), their sum,
// scaled by 1/2. Stage 1 reduce-scatters the accumulated gradient once.
// Stage 2 reduce-scatters each microbatch's gradient as soon as it is
// computed and adds up the rank's blocks, so no whole gradient outlives its
// microbatch; the sum of whole gradients is gone.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[SUM:.*]] = colo.add %{{.*}} : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT: %[[HALF:.*]] = colo.constant
// CHECK-NEXT: %[[AVG:.*]] = colo.mul %[[SUM]], %[[HALF]]
// CHECK: shard.reduce_scatter
// CHECK-NOT: shard.reduce_scatter
// CHECK: colo.adam_update
// ACC-LABEL: func.func @train_step
// ACC-SAME: colo.zero = 2 : i64
// ACC: %[[G0:.*]] = colo.exp %{{.*}} {colo.micro = 0 : i64} : tensor<4xf32>
// ACC-NEXT: %[[R0:.*]] = colo.reshape %[[G0]] : tensor<4xf32> -> tensor<2x2xf32>
// ACC-NEXT: %[[RS0:.*]] = shard.reduce_scatter %[[R0]] {{.*}} : tensor<2x2xf32> -> tensor<1x2xf32>
// ACC-NEXT: %[[B0:.*]] = colo.reshape %[[RS0]] : tensor<1x2xf32> -> tensor<2xf32>
// ACC: %[[G1:.*]] = colo.exp %{{.*}} {colo.micro = 1 : i64} : tensor<4xf32>
// ACC-NEXT: %[[R1:.*]] = colo.reshape %[[G1]] : tensor<4xf32> -> tensor<2x2xf32>
// ACC-NEXT: %[[RS1:.*]] = shard.reduce_scatter %[[R1]] {{.*}} : tensor<2x2xf32> -> tensor<1x2xf32>
// ACC-NEXT: %[[B1:.*]] = colo.reshape %[[RS1]] : tensor<1x2xf32> -> tensor<2xf32>
// ACC-NEXT: %[[S:.*]] = colo.add %[[B0]], %[[B1]] : tensor<2xf32>, tensor<2xf32>
// ACC-NEXT: %[[H:.*]] = colo.constant dense<5.000000e-01> : tensor<f32>
// ACC-NEXT: %[[A:.*]] = colo.mul %[[S]], %[[H]] : tensor<2xf32>, tensor<f32>
// ACC-NOT: tensor<4xf32>, tensor<4xf32>
// ACC: colo.adam_update %{{.*}}, %[[A]], {{.*}} : tensor<2xf32>
colo.global trainable @p : tensor<4xf32> = dense<1.0> : tensor<4xf32>
colo.global @"p#exp_avg" : tensor<4xf32> = dense<0.0> : tensor<4xf32> {colo.optimizer_state}
colo.global @"p#exp_avg_sq" : tensor<4xf32> = dense<0.0> : tensor<4xf32> {colo.optimizer_state}
func.func @train_step(%x: tensor<4xf32>, %lr: tensor<f32>, %step: tensor<i64>) -> tensor<f32> {
  %loss = colo.reduce_mean %x dims = [0] : tensor<4xf32>
  %g0 = colo.exp %x {colo.micro = 0 : i64} : tensor<4xf32>
  %y = colo.neg %x {colo.micro = 1 : i64} : tensor<4xf32>
  %g1 = colo.exp %y {colo.micro = 1 : i64} : tensor<4xf32>
  %s = colo.add %g0, %g1 : tensor<4xf32>, tensor<4xf32>
  %half = colo.constant dense<0.5> : tensor<f32>
  %a = colo.mul %s, %half : tensor<4xf32>, tensor<f32>
  %g = colo.gradient %a of @p : tensor<4xf32>
  %p = colo.global_load @p : tensor<4xf32>
  %m = colo.global_load @"p#exp_avg" : tensor<4xf32>
  %v = colo.global_load @"p#exp_avg_sq" : tensor<4xf32>
  %np, %nm, %nv = colo.adam_update %p, %g, %m, %v, %lr, %step
      {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64,
       weight_decay = 0.01 : f64, decoupled} : tensor<4xf32>
  colo.global_store @p, %np : tensor<4xf32>
  colo.global_store @"p#exp_avg", %nm : tensor<4xf32>
  colo.global_store @"p#exp_avg_sq", %nv : tensor<4xf32>
  return %loss : tensor<f32>
}

// -----

// Under tensor parallelism: @w is split over tp (the rank's block 2x3, 6
// elements, 3 per dp rank). The optimizer state (stages 1-3) and, at stage
// 3, the parameter keep the flat dp block of the rank's tp block; the shard
// says so (flat_axes), so checkpoints put it together under any plan.
// Stage 3 gathers the tp block, not the whole parameter.
// CHECK: colo.global @"w#exp_avg" : tensor<4x3xf32> = {{.*}} {colo.optimizer_state, shard = #colo.shard<split_axes = {{\[}}["tp"], []], parts = [2, 1], flat_axes = ["dp"], flat_parts = 2>}
// CHECK: shard.reduce_scatter %{{.*}} : tensor<2x3xf32> -> tensor<1x3xf32>
// CHECK: shard.all_slice %{{.*}} : tensor<6xf32> -> tensor<3xf32>
// Z3: colo.global trainable @w : tensor<4x3xf32> = {{.*}} {shard = #colo.shard<split_axes = {{\[}}["tp"], []], parts = [2, 1], flat_axes = ["dp"], flat_parts = 2>}
// Z3-NEXT: colo.global @"w#exp_avg" : tensor<4x3xf32> = {{.*}} {colo.optimizer_state, shard = #colo.shard<split_axes = {{\[}}["tp"], []], parts = [2, 1], flat_axes = ["dp"], flat_parts = 2>}
// Z3: %[[P:.*]] = colo.global_load @w : tensor<3xf32>
// Z3-NEXT: %[[AG:.*]] = shard.all_gather %[[P]] on @mesh grid_axes = [0] gather_axis = 0 {colo.zero_gather = "forward"} : tensor<3xf32> -> tensor<6xf32>
// Z3-NEXT: colo.reshape %[[AG]] : tensor<6xf32> -> tensor<2x3xf32>
// Z3: %[[U:.*]] = colo.global_load @w : tensor<3xf32>
// Z3: colo.adam_update %[[U]], %{{.*}} : tensor<3xf32>
shard.grid @mesh(shape = 2x2) {colo.axes = ["dp", "tp"]}
colo.global trainable @w : tensor<4x3xf32> = dense<1.0> : tensor<4x3xf32> {shard = #colo.shard<split_axes = [["tp"], []], parts = [2, 1]>}
colo.global @"w#exp_avg" : tensor<4x3xf32> = dense<0.0> : tensor<4x3xf32> {colo.optimizer_state, shard = #colo.shard<split_axes = [["tp"], []], parts = [2, 1]>}
colo.global @"w#exp_avg_sq" : tensor<4x3xf32> = dense<0.0> : tensor<4x3xf32> {colo.optimizer_state, shard = #colo.shard<split_axes = [["tp"], []], parts = [2, 1]>}
func.func @train_step(%x: tensor<2x3xf32>, %lr: tensor<f32>, %step: tensor<i64>) -> tensor<f32> {
  %w0 = colo.global_load @w : tensor<2x3xf32>
  %y = colo.mul %x, %w0 : tensor<2x3xf32>, tensor<2x3xf32>
  %loss = colo.reduce_mean %y dims = [0, 1] : tensor<2x3xf32>
  %gw = colo.gradient %x of @w : tensor<2x3xf32>
  %w = colo.global_load @w : tensor<2x3xf32>
  %m = colo.global_load @"w#exp_avg" : tensor<2x3xf32>
  %v = colo.global_load @"w#exp_avg_sq" : tensor<2x3xf32>
  %nw, %nm, %nv = colo.adam_update %w, %gw, %m, %v, %lr, %step
      {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64,
       weight_decay = 0.01 : f64, decoupled} : tensor<2x3xf32>
  colo.global_store @w, %nw : tensor<2x3xf32>
  colo.global_store @"w#exp_avg", %nm : tensor<2x3xf32>
  colo.global_store @"w#exp_avg_sq", %nv : tensor<2x3xf32>
  return %loss : tensor<f32>
}
