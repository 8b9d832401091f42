// RUN: colo-opt %s --pass-pipeline='builtin.module(exec.program(colo-overlap-collectives))' -split-input-file | FileCheck %s

// A gradient bucket that only the optimizer reads keeps reducing while the
// next kernel runs: its wait moves before the first step that touches it.
// CHECK-LABEL: exec.program @bucket
// CHECK: %[[T:.*]] = exec.all_reduce average "bucket.0" %[[G:.*]] -> %[[G]]
// CHECK-NEXT: exec.kernel @mul "mul.1"
// CHECK-NEXT: exec.wait %[[T]] "bucket.0.wait"
// CHECK-NEXT: exec.kernel @adam "adam.2" ins(%[[G]]
exec.program @bucket {
  %g = exec.buffer "g" temp : memref<64xf32, #exec.space<device>>
  %a = exec.buffer "a" input : memref<64xf32, #exec.space<device>>
  %b = exec.buffer "b" temp : memref<64xf32, #exec.space<device>>
  %w = exec.buffer "w" state : memref<64xf32, #exec.space<device>>
  %t = exec.all_reduce average "bucket.0" %g -> %g over [0] : memref<64xf32, #exec.space<device>>, memref<64xf32, #exec.space<device>>
  exec.wait %t "bucket.0.wait"
  exec.kernel @mul "mul.1" ins(%a : memref<64xf32, #exec.space<device>>) outs(%b : memref<64xf32, #exec.space<device>>)
  exec.kernel @adam "adam.2" ins(%g, %b : memref<64xf32, #exec.space<device>>, memref<64xf32, #exec.space<device>>) outs(%w : memref<64xf32, #exec.space<device>>)
  exec.return
}

// -----

// Needed by the very next step: it stays synchronous. A view of the
// reduced buffer counts as touching it.
// CHECK-LABEL: exec.program @needed
// CHECK: exec.all_reduce
// CHECK-NEXT: exec.wait
// CHECK-NEXT: exec.copy
exec.program @needed {
  %g = exec.buffer "g" temp : memref<4x4xf32, #exec.space<device>>
  %v = exec.view %g "g.flat" : memref<4x4xf32, #exec.space<device>> to memref<16xf32, #exec.space<device>>
  %w = exec.buffer "w" state : memref<16xf32, #exec.space<device>>
  %t = exec.all_reduce sum "r" %g -> %g over [0] : memref<4x4xf32, #exec.space<device>>, memref<4x4xf32, #exec.space<device>>
  exec.wait %t "r.wait"
  exec.copy "store" %v -> %w : memref<16xf32, #exec.space<device>>, memref<16xf32, #exec.space<device>>
  exec.return
}

// -----

// Two buckets that the same step needs: their waits keep the order of
// their collectives; waits of earlier ones do not count as steps. Other
// collectives are never overlapped.
// CHECK-LABEL: exec.program @two
// CHECK: %[[T0:.*]] = exec.all_reduce sum "r0"
// CHECK-NEXT: %[[T1:.*]] = exec.all_reduce sum "r1"
// CHECK-NEXT: %[[T2:.*]] = exec.all_gather "ag"
// CHECK-NEXT: exec.wait %[[T2]]
// CHECK-NEXT: exec.kernel @f "f"
// CHECK-NEXT: exec.wait %[[T0]]
// CHECK-NEXT: exec.wait %[[T1]]
// CHECK-NEXT: exec.kernel @g "g"
exec.program @two {
  %a = exec.buffer "a" temp : memref<8xf32, #exec.space<device>>
  %b = exec.buffer "b" temp : memref<8xf32, #exec.space<device>>
  %c = exec.buffer "c" temp : memref<8xf32, #exec.space<device>>
  %d = exec.buffer "d" temp : memref<16xf32, #exec.space<device>>
  %t0 = exec.all_reduce sum "r0" %a -> %a over [0] : memref<8xf32, #exec.space<device>>, memref<8xf32, #exec.space<device>>
  exec.wait %t0 "r0.wait"
  %t1 = exec.all_reduce sum "r1" %b -> %b over [0] : memref<8xf32, #exec.space<device>>, memref<8xf32, #exec.space<device>>
  exec.wait %t1 "r1.wait"
  %t2 = exec.all_gather "ag" %c -> %d over [0] : memref<8xf32, #exec.space<device>>, memref<16xf32, #exec.space<device>>
  exec.wait %t2 "ag.wait"
  exec.kernel @f "f" outs(%c : memref<8xf32, #exec.space<device>>)
  exec.kernel @g "g" ins(%a, %b : memref<8xf32, #exec.space<device>>, memref<8xf32, #exec.space<device>>) outs(%c : memref<8xf32, #exec.space<device>>)
  exec.return
}

// -----

// Nothing after it touches the buffer: it finishes at the end.
// CHECK-LABEL: exec.program @last
// CHECK: exec.all_reduce
// CHECK-NEXT: exec.kernel
// CHECK-NEXT: exec.wait
// CHECK-NEXT: exec.return
exec.program @last {
  %a = exec.buffer "a" temp : memref<8xf32, #exec.space<device>>
  %c = exec.buffer "c" temp : memref<8xf32, #exec.space<device>>
  %t = exec.all_reduce sum "r" %a -> %a over [0] : memref<8xf32, #exec.space<device>>, memref<8xf32, #exec.space<device>>
  exec.wait %t "r.wait"
  exec.kernel @f "f" outs(%c : memref<8xf32, #exec.space<device>>)
  exec.return
}

// -----

// Transfers between memory spaces finish before the first step that
// touches their buffers, and at the latest when the second transfer after
// them starts: "t0" before "t2" (no step touches its buffers before), "t1"
// before the kernel that reads its destination, "t2" at the end.
// CHECK-LABEL: exec.program @transfers
// CHECK: %[[T0:.*]] = exec.transfer "t0"
// CHECK-NEXT: exec.kernel @f "f0"
// CHECK-NEXT: %[[T1:.*]] = exec.transfer "t1"
// CHECK-NEXT: exec.kernel @f "f1"
// CHECK-NEXT: exec.wait %[[T0]]
// CHECK-NEXT: %[[T2:.*]] = exec.transfer "t2"
// CHECK-NEXT: exec.wait %[[T1]]
// CHECK-NEXT: exec.kernel @g "g"
// CHECK-NEXT: exec.wait %[[T2]]
// CHECK-NEXT: exec.return
exec.program @transfers {
  %a = exec.buffer "a" temp : memref<8xf32, #exec.space<device>>
  %b = exec.buffer "b" temp : memref<8xf32, #exec.space<device>>
  %c = exec.buffer "c" temp : memref<8xf32, #exec.space<device>>
  %x = exec.buffer "x" temp : memref<8xf32, #exec.space<device>>
  %ah = exec.buffer "ah" temp : memref<8xf32, #exec.space<host>>
  %bh = exec.buffer "bh" temp : memref<8xf32, #exec.space<host>>
  %ch = exec.buffer "ch" temp : memref<8xf32, #exec.space<host>>
  %gh = exec.buffer "gh" temp : memref<8xf32, #exec.space<host>>
  %t0 = exec.transfer "t0" %a -> %ah : memref<8xf32, #exec.space<device>>, memref<8xf32, #exec.space<host>>
  exec.wait %t0 "t0.wait"
  exec.kernel @f "f0" outs(%x : memref<8xf32, #exec.space<device>>)
  %t1 = exec.transfer "t1" %b -> %bh : memref<8xf32, #exec.space<device>>, memref<8xf32, #exec.space<host>>
  exec.wait %t1 "t1.wait"
  exec.kernel @f "f1" outs(%x : memref<8xf32, #exec.space<device>>)
  %t2 = exec.transfer "t2" %c -> %ch : memref<8xf32, #exec.space<device>>, memref<8xf32, #exec.space<host>>
  exec.wait %t2 "t2.wait"
  exec.kernel @g "g" ins(%bh : memref<8xf32, #exec.space<host>>) outs(%gh : memref<8xf32, #exec.space<host>>)
  exec.return
}

// -----

// SUMMA's double buffering: the second step's broadcasts keep running while
// the first step's product computes. Both steps read the rank's own block,
// so the first broadcast of each finishes before the second starts.
// CHECK-LABEL: exec.program @summa
// CHECK: %[[X0:.*]] = exec.broadcast from 0 "x0"
// CHECK-NEXT: %[[W0:.*]] = exec.broadcast from 0 "w0"
// CHECK-NEXT: exec.wait %[[X0]]
// CHECK-NEXT: %[[X1:.*]] = exec.broadcast from 1 "x1"
// CHECK-NEXT: exec.wait %[[W0]]
// CHECK-NEXT: %[[W1:.*]] = exec.broadcast from 1 "w1"
// CHECK-NEXT: exec.kernel @mm "p0"
// CHECK-NEXT: exec.wait %[[X1]]
// CHECK-NEXT: exec.wait %[[W1]]
// CHECK-NEXT: exec.kernel @mm "p1"
exec.program @summa {
  %x = exec.buffer "x" input : memref<8xf32, #exec.space<device>>
  %w = exec.buffer "w" state : memref<8xf32, #exec.space<device>>
  %x0 = exec.buffer "x0.out" temp : memref<8xf32, #exec.space<device>>
  %w0 = exec.buffer "w0.out" temp : memref<8xf32, #exec.space<device>>
  %x1 = exec.buffer "x1.out" temp : memref<8xf32, #exec.space<device>>
  %w1 = exec.buffer "w1.out" temp : memref<8xf32, #exec.space<device>>
  %y0 = exec.buffer "y0" temp : memref<8xf32, #exec.space<device>>
  %y1 = exec.buffer "y1" temp : memref<8xf32, #exec.space<device>>
  %t0 = exec.broadcast from 0 "x0" %x -> %x0 over [1] : memref<8xf32, #exec.space<device>>, memref<8xf32, #exec.space<device>>
  exec.wait %t0 "x0.wait"
  %t1 = exec.broadcast from 0 "w0" %w -> %w0 over [0] : memref<8xf32, #exec.space<device>>, memref<8xf32, #exec.space<device>>
  exec.wait %t1 "w0.wait"
  %t2 = exec.broadcast from 1 "x1" %x -> %x1 over [1] : memref<8xf32, #exec.space<device>>, memref<8xf32, #exec.space<device>>
  exec.wait %t2 "x1.wait"
  %t3 = exec.broadcast from 1 "w1" %w -> %w1 over [0] : memref<8xf32, #exec.space<device>>, memref<8xf32, #exec.space<device>>
  exec.wait %t3 "w1.wait"
  exec.kernel @mm "p0" ins(%x0, %w0 : memref<8xf32, #exec.space<device>>, memref<8xf32, #exec.space<device>>) outs(%y0 : memref<8xf32, #exec.space<device>>)
  exec.kernel @mm "p1" ins(%x1, %w1 : memref<8xf32, #exec.space<device>>, memref<8xf32, #exec.space<device>>) outs(%y1 : memref<8xf32, #exec.space<device>>)
  exec.return
}
