// RUN: colo-opt %s --colo-map-generics-to-gpu=block-size=256 --cse --split-input-file --verify-diagnostics | FileCheck %s
// RUN: not colo-opt %s --colo-map-generics-to-gpu=block-size=0 --split-input-file 2>&1 | FileCheck %s --check-prefix=SIZE
// SIZE: block-size must be positive

// An elementwise kernel of 1000 points: 4 blocks of 256 threads, the last
// block's threads past 999 doing nothing, each point loaded, computed and
// stored where the generic's maps say.
// CHECK-LABEL: func.func @elementwise
// CHECK: scf.forall (%[[B:.*]]) in (4) {
// CHECK:   scf.forall (%[[T:.*]]) in (256) {
// CHECK:     %[[I:.*]] = affine.apply #{{.*}}(%[[B]], %[[T]])
// CHECK:     %[[IN:.*]] = arith.cmpi ult, %[[I]], %c1000
// CHECK:     scf.if %[[IN]] {
// CHECK:       %[[X:.*]] = memref.load %arg0[%[[I]]]
// CHECK:       %[[E:.*]] = math.exp %[[X]]
// CHECK:       memref.store %[[E]], %arg1[%[[I]]]
// CHECK:   } {mapping = [#gpu.thread<x>]}
// CHECK: } {mapping = [#gpu.block<x>]}
// CHECK-NOT: linalg.generic
#id = affine_map<(d0) -> (d0)>
func.func @elementwise(%x: memref<1000xf32>, %y: memref<1000xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<1000xf32>) outs(%y : memref<1000xf32>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// A sum over the rows of a 6x5x7 buffer's middle dimension: 42 points (one
// block of 42 threads, no guard), each (i, k) delinearized and summing j in
// order into its own output element, read and written through memory.
// CHECK-LABEL: func.func @middle_sum
// CHECK: scf.forall (%[[B:.*]]) in (1) {
// CHECK:   scf.forall (%[[T:.*]]) in (42) {
// CHECK-NOT: scf.if
// CHECK:     %[[P:.*]]:2 = affine.delinearize_index %{{.*}} into (6, 7)
// CHECK:     scf.for %[[J:.*]] = %c0 to %c5 step %c1 {
// CHECK:       %[[X:.*]] = memref.load %arg0[%[[P]]#0, %[[J]], %[[P]]#1]
// CHECK:       %[[ACC:.*]] = memref.load %arg1[%[[P]]#0, %[[P]]#1]
// CHECK:       %[[S:.*]] = arith.addf %[[X]], %[[ACC]]
// CHECK:       memref.store %[[S]], %arg1[%[[P]]#0, %[[P]]#1]
#in3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#out2 = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @middle_sum(%x: memref<6x5x7xf32>, %s: memref<6x7xf32>) {
  linalg.generic {indexing_maps = [#in3, #out2], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x : memref<6x5x7xf32>) outs(%s : memref<6x7xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %a, %acc : f32
    linalg.yield %t : f32
  }
  return
}

// -----

// A sum of 300 elements per row: one block per row; 256 threads fold
// elements t, t + 256 in order into partials, seven halving levels combine
// them (128 threads, then 64, ..., 1), and one thread adds the row's
// initial value to the total.
// CHECK-LABEL: func.func @long_rows
// CHECK: scf.forall (%[[ROW:.*]]) in (4) {
// CHECK:   %[[PART:.*]] = memref.alloc() : memref<256xf32>
// CHECK:   scf.forall (%[[T:.*]]) in (256) {
// CHECK:     %[[FIRST:.*]] = memref.load %arg0[%[[ROW]], %[[T]]]
// CHECK:     %[[NEXT:.*]] = arith.addi %[[T]], %c256
// CHECK:     %[[F:.*]] = scf.for %[[K:.*]] = %[[NEXT]] to %c300 step %c256 iter_args(%[[ACC:.*]] = %[[FIRST]])
// CHECK:       %[[X:.*]] = memref.load %arg0[%[[ROW]], %[[K]]]
// CHECK:       %[[S:.*]] = arith.addf %[[X]], %[[ACC]]
// CHECK:       scf.yield %[[S]]
// CHECK:     memref.store %[[F]], %[[PART]][%[[T]]]
// CHECK:   } {mapping = [#gpu.thread<x>]}
// CHECK:   scf.forall (%{{.*}}) in (128) {
// CHECK:   scf.forall (%{{.*}}) in (64) {
// CHECK:   scf.forall (%{{.*}}) in (2) {
// CHECK:   scf.forall (%[[L:.*]]) in (1) {
// CHECK:     %[[L1:.*]] = arith.addi %[[L]], %c1
// CHECK:     memref.load %[[PART]][%[[L1]]]
// CHECK:   scf.forall (%{{.*}}) in (1) {
// CHECK:     %[[INIT:.*]] = memref.load %arg1[%[[ROW]]]
// CHECK:     %[[TOTAL:.*]] = memref.load %[[PART]][%c0]
// CHECK:     %[[OUT:.*]] = arith.addf %[[TOTAL]], %[[INIT]]
// CHECK:     memref.store %[[OUT]], %arg1[%[[ROW]]]
// CHECK:   memref.dealloc %[[PART]]
// CHECK: } {mapping = [#gpu.block<x>]}
#in2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @long_rows(%x: memref<4x300xf32>, %s: memref<4xf32>) {
  linalg.generic {indexing_maps = [#in2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x300xf32>) outs(%s : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %a, %acc : f32
    linalg.yield %t : f32
  }
  return
}

// -----

// linalg.index becomes the point's own index; a scalar operand is used as
// it is; an output whose value the body does not read is not loaded.
// CHECK-LABEL: func.func @iota_scaled
// CHECK: scf.forall
// CHECK:   scf.forall
// CHECK-NOT: memref.load %arg1
// CHECK:     arith.index_cast %{{.*}} : index to i64
// CHECK:     arith.mulf %{{.*}}, %arg0
#s = affine_map<(d0) -> ()>
#i = affine_map<(d0) -> (d0)>
func.func @iota_scaled(%scale: f32, %y: memref<8xf32>) {
  linalg.generic {indexing_maps = [#s, #i], iterator_types = ["parallel"]}
      ins(%scale : f32) outs(%y : memref<8xf32>) {
  ^bb0(%c: f32, %o: f32):
    %i = linalg.index 0 : index
    %n = arith.index_cast %i : index to i64
    %f = arith.sitofp %n : i64 to f32
    %v = arith.mulf %f, %c : f32
    linalg.yield %v : f32
  }
  return
}

// -----

// A copy is a generic like any other: one thread per element.
// CHECK-LABEL: func.func @copy
// CHECK: scf.forall (%{{.*}}) in (1) {
// CHECK:   scf.forall (%[[T:.*]]) in (12) {
// CHECK:     %[[P:.*]]:2 = affine.delinearize_index %{{.*}} into (3, 4)
// CHECK:     %[[V:.*]] = memref.load %arg0[%[[P]]#0, %[[P]]#1] : memref<3x4xf32, strided<[8, 1]>>
// CHECK:     memref.store %[[V]], %arg1[%[[P]]#0, %[[P]]#1]
// CHECK-NOT: memref.copy
func.func @copy(%x: memref<3x4xf32, strided<[8, 1]>>, %y: memref<3x4xf32>) {
  memref.copy %x, %y : memref<3x4xf32, strided<[8, 1]>> to memref<3x4xf32>
  return
}

// -----

// An output that drops a parallel dimension would be written by several
// threads: refused.
#in2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @racy(%x: memref<4x8xf32>, %y: memref<4xf32>) {
  // expected-error@+1 {{does not depend on parallel loop 1}}
  linalg.generic {indexing_maps = [#in2, #row], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<4x8xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}

// -----

// A loop lowered before (a scatter-add, whose rows may repeat an index)
// runs in one thread of one block, in its order.
// CHECK-LABEL: func.func @scatter_add
// CHECK: scf.forall (%{{.*}}) in (1) {
// CHECK:   scf.forall (%{{.*}}) in (1) {
// CHECK:     scf.for
// CHECK:       memref.store
// CHECK:   } {mapping = [#gpu.thread<x>]}
// CHECK: } {mapping = [#gpu.block<x>]}
func.func @scatter_add(%ids: memref<4xi64>, %rows: memref<4x8xf32>, %table: memref<16x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %id = memref.load %ids[%i] : memref<4xi64>
    %r = arith.index_cast %id : i64 to index
    scf.for %j = %c0 to %c8 step %c1 {
      %a = memref.load %rows[%i, %j] : memref<4x8xf32>
      %b = memref.load %table[%r, %j] : memref<16x8xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %table[%r, %j] : memref<16x8xf32>
    }
  }
  return
}
