// RUN: colo-opt %s --pass-pipeline='builtin.module(exec.program(colo-insert-frees))' | FileCheck %s

// Each temporary is freed after its last use, through views and through the
// wait of an overlapped collective; state, inputs, reported and untouched
// buffers are not freed.
// CHECK-LABEL: exec.program @frees
// CHECK: %[[A:.*]] = exec.buffer "a" temp
// CHECK: %[[B:.*]] = exec.buffer "b" temp
// CHECK: %[[L:.*]] = exec.buffer "loss" temp
// CHECK: %[[U:.*]] = exec.buffer "unused" temp
// CHECK: exec.kernel @f "f"
// CHECK-NEXT: %[[T:.*]] = exec.all_reduce
// CHECK-NEXT: exec.kernel @g "g"
// CHECK-NEXT: exec.wait %[[T]]
// CHECK-NEXT: exec.free %[[B]]
// CHECK-NEXT: exec.kernel @h "h"
// CHECK-NEXT: exec.free %[[A]]
// CHECK-NEXT: exec.return %[[L]]
// CHECK-NOT: exec.free %[[U]]
exec.program @frees {
  %x = exec.buffer "x" input : memref<8xf32, #exec.space<device>>
  %a = exec.buffer "a" temp : memref<2x4xf32, #exec.space<device>>
  %av = exec.view %a "a.flat" : memref<2x4xf32, #exec.space<device>> to memref<8xf32, #exec.space<device>>
  %b = exec.buffer "b" temp : memref<8xf32, #exec.space<device>>
  %l = exec.buffer "loss" temp : memref<f32, #exec.space<device>>
  %u = exec.buffer "unused" temp : memref<8xf32, #exec.space<device>>
  exec.kernel @f "f" ins(%x : memref<8xf32, #exec.space<device>>) outs(%a, %b : memref<2x4xf32, #exec.space<device>>, memref<8xf32, #exec.space<device>>)
  %t = exec.all_reduce sum "r" %b -> %b over [0] : memref<8xf32, #exec.space<device>>, memref<8xf32, #exec.space<device>>
  exec.kernel @g "g" ins(%x : memref<8xf32, #exec.space<device>>) outs(%l : memref<f32, #exec.space<device>>)
  exec.wait %t "r.wait"
  exec.kernel @h "h" ins(%av : memref<8xf32, #exec.space<device>>) outs(%l : memref<f32, #exec.space<device>>)
  exec.return %l : memref<f32, #exec.space<device>>
}
