// RUN: colo-opt %s --pass-pipeline='builtin.module(exec.program(colo-plan-memory))' | FileCheck %s

// Largest first: "a" (256 bytes) at 0; "c" starts after "a" is freed and
// reuses its bytes; "b" lives with both and goes after them; "d" has no free
// and lives to the end with "b" and "c", and fits between them. Sizes round
// up to 64 bytes; a buffer no step touches gets no offset.
// CHECK-LABEL: exec.program @arena
// CHECK-SAME: arena_bytes = 320
// CHECK: exec.buffer "a" temp {offset = 0 : i64}
// CHECK: exec.buffer "b" temp {offset = 256 : i64}
// CHECK: exec.buffer "c" temp {offset = 0 : i64}
// CHECK: exec.buffer "d" temp {offset = 128 : i64}
// CHECK: exec.buffer "never" temp :
exec.program @arena {
  %a = exec.buffer "a" temp : memref<64xf32, #exec.space<device>>
  %b = exec.buffer "b" temp : memref<3xf32, #exec.space<device>>
  %c = exec.buffer "c" temp : memref<32xf32, #exec.space<device>>
  %d = exec.buffer "d" temp : memref<2xf64, #exec.space<device>>
  %n = exec.buffer "never" temp : memref<2xf32, #exec.space<device>>
  exec.kernel @f "f" outs(%a, %b : memref<64xf32, #exec.space<device>>, memref<3xf32, #exec.space<device>>)
  exec.free %a : memref<64xf32, #exec.space<device>>
  exec.kernel @g "g" ins(%b : memref<3xf32, #exec.space<device>>) outs(%c, %d : memref<32xf32, #exec.space<device>>, memref<2xf64, #exec.space<device>>)
  exec.free %b : memref<3xf32, #exec.space<device>>
  exec.free %c : memref<32xf32, #exec.space<device>>
  exec.return %d : memref<2xf64, #exec.space<device>>
}

// -----

// Each memory space has its own arena: the host's temporaries (an offloaded
// optimizer's) start at 0 in host_arena_bytes, beside the device's.
// CHECK-LABEL: exec.program @spaces
// CHECK-SAME: arena_bytes = 256
// CHECK-SAME: host_arena_bytes = 320
// CHECK: exec.buffer "d" temp {offset = 0 : i64}
// CHECK: exec.buffer "h" temp {offset = 0 : i64}
// CHECK: exec.buffer "h2" temp {offset = 256 : i64}
exec.program @spaces {
  %d = exec.buffer "d" temp : memref<64xf32, #exec.space<device>>
  %h = exec.buffer "h" temp : memref<64xf32, #exec.space<host>>
  %h2 = exec.buffer "h2" temp : memref<16xf32, #exec.space<host>>
  exec.kernel @k "k" outs(%d : memref<64xf32, #exec.space<device>>)
  %t = exec.transfer "t" %d -> %h : memref<64xf32, #exec.space<device>>, memref<64xf32, #exec.space<host>>
  exec.wait %t "t.wait"
  exec.kernel @g "g" ins(%h : memref<64xf32, #exec.space<host>>) outs(%h2 : memref<16xf32, #exec.space<host>>)
  exec.return
}
