// RUN: colo-opt %s | colo-opt | FileCheck %s

// Every op prints and parses back.
// CHECK-LABEL: exec.program @all
// CHECK-SAME: mesh_axes = ["pp", "dp"]
// CHECK: exec.buffer "w" state {param_name = "fc.weight", shard = #exec.shard<full_shape = [8, 8], dim = 0, groups = 1, flat = false, mesh_axes = [1]>}
// CHECK: exec.view
// CHECK: exec.kernel @k0_add "add.1" ins(
// CHECK: exec.gemm "mm.2" {{.*}} bias {{.*}} trans_b
// CHECK: exec.conv2d backward_data "conv.3"
// CHECK: exec.pool2d max_backward "pool.4" x(
// CHECK: exec.copy "store.5"
// CHECK: exec.reduce_scatter sum "rs.6"
// CHECK: exec.send "send.7" {{.*}} to 1 over [0] tag 3
// CHECK: exec.recv "recv.8" {{.*}} from 0 over [0] tag 4
// CHECK: exec.transfer "grad.to_host.9" %{{.*}} -> %{{.*}} : memref<8xf32, #exec.space<device>>, memref<8xf32, #exec.space<host>>
// CHECK: exec.free
// CHECK: exec.return
exec.program @all attributes {mesh_shape = array<i64: 2, 2>, mesh_axes = ["pp", "dp"], batch_axis = 1 : i32} {
  %x = exec.buffer "x" input {int_max = 10 : i64} : memref<4x8xf32, #exec.space<device>>
  %w = exec.buffer "w" state {param_name = "fc.weight", shard = #exec.shard<full_shape = [8, 8], dim = 0, groups = 1, flat = false, mesh_axes = [1]>} : memref<4x8xf32, #exec.space<device>>
  %bias = exec.buffer "bias" constant : memref<4xf32, #exec.space<device>>
  %y = exec.buffer "y" temp : memref<4x4xf32, #exec.space<device>>
  %v = exec.view %y "y.flat" : memref<4x4xf32, #exec.space<device>> to memref<16xf32, #exec.space<device>>
  exec.kernel @k0_add "add.1" ins(%x : memref<4x8xf32, #exec.space<device>>) outs(%y : memref<4x4xf32, #exec.space<device>>) {pieces = 2 : i64, piece_bytes = array<i64: 64, 32>}
  exec.gemm "mm.2" %x, %w bias %bias -> %y {m = 4 : i64, n = 4 : i64, k = 8 : i64, trans_b} : memref<4x8xf32, #exec.space<device>>, memref<4x8xf32, #exec.space<device>>, memref<4xf32, #exec.space<device>>, memref<4x4xf32, #exec.space<device>>
  %img = exec.buffer "img" temp : memref<1x1x4x4xf32, #exec.space<device>>
  %f = exec.buffer "f" temp : memref<1x1x1x1xf32, #exec.space<device>>
  exec.conv2d backward_data "conv.3" x(%img) weight(%f) y(%img) {input_shape = array<i64: 1, 1, 4, 4>, k = 1 : i64, window = array<i64: 1, 1>, output_size = array<i64: 4, 4>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : memref<1x1x4x4xf32, #exec.space<device>>, memref<1x1x1x1xf32, #exec.space<device>>, memref<1x1x4x4xf32, #exec.space<device>>
  exec.pool2d max_backward "pool.4" x(%img : memref<1x1x4x4xf32, #exec.space<device>>) dx(%img : memref<1x1x4x4xf32, #exec.space<device>>) dy(%img : memref<1x1x4x4xf32, #exec.space<device>>) {input_shape = array<i64: 1, 1, 4, 4>, window = array<i64: 1, 1>, output_size = array<i64: 4, 4>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
  exec.copy "store.5" %v -> %v : memref<16xf32, #exec.space<device>>, memref<16xf32, #exec.space<device>>
  %h = exec.buffer "h" temp : memref<8xf32, #exec.space<device>>
  %t0 = exec.reduce_scatter sum "rs.6" %v -> %h over [1] : memref<16xf32, #exec.space<device>>, memref<8xf32, #exec.space<device>>
  exec.wait %t0 "rs.6.wait"
  %t1 = exec.send "send.7" %h to 1 over [0] tag 3 : memref<8xf32, #exec.space<device>>
  exec.wait %t1 "send.7.wait"
  %t2 = exec.recv "recv.8" %h from 0 over [0] tag 4 : memref<8xf32, #exec.space<device>>
  exec.wait %t2 "recv.8.wait"
  %hh = exec.buffer "hh" temp : memref<8xf32, #exec.space<host>>
  %t3 = exec.transfer "grad.to_host.9" %h -> %hh : memref<8xf32, #exec.space<device>>, memref<8xf32, #exec.space<host>>
  exec.wait %t3 "grad.to_host.9.wait"
  exec.free %h : memref<8xf32, #exec.space<device>>
  exec.return %y : memref<4x4xf32, #exec.space<device>>
}
