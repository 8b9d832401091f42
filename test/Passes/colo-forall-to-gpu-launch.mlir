// RUN: colo-opt %s --colo-forall-to-gpu-launch --split-input-file --verify-diagnostics | FileCheck %s

// A block x thread nest becomes a launch of 4 blocks of 256 threads whose
// body uses the block and thread ids; the buffers are captured from above.
// CHECK-LABEL: func.func @square
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C4]], %{{.*}} = %[[C1]], %{{.*}} = %[[C1]]) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C256]], %{{.*}} = %[[C1]], %{{.*}} = %[[C1]])
// CHECK:   %[[I:.*]] = affine.apply #{{.*}}(%[[BX]], %[[TX]])
// CHECK:   memref.load %arg0[%[[I]]]
// CHECK:   gpu.terminator
// CHECK-NOT: scf.forall
func.func @square(%x: memref<1024xf32>, %y: memref<1024xf32>) {
  scf.forall (%b) in (4) {
    scf.forall (%t) in (256) {
      %i = affine.apply affine_map<(d0, d1) -> (d0 * 256 + d1)>(%b, %t)
      %v = memref.load %x[%i] : memref<1024xf32>
      %s = arith.mulf %v, %v : f32
      memref.store %s, %y[%i] : memref<1024xf32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// Phases share memory: the allocation becomes the launch's workgroup
// memory, the block is the largest phase (256), a smaller phase runs on
// the threads below its size, and the threads wait between phases.
// CHECK-LABEL: func.func @phases
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in ({{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in ({{.*}}) workgroup(%[[SH:.*]] : memref<256xf32, #gpu.address_space<workgroup>>)
// CHECK:   memref.store %{{.*}}, %[[SH]][%[[TX]]]
// CHECK:   gpu.barrier
// CHECK:   %[[LOW:.*]] = arith.cmpi ult, %[[TX]], %c1
// CHECK:   scf.if %[[LOW]] {
// CHECK:     memref.load %[[SH]][%[[TX]]]
// CHECK:   gpu.terminator
// CHECK-NOT: memref.alloc
// CHECK-NOT: memref.dealloc
func.func @phases(%x: memref<4x256xf32>, %y: memref<4xf32>) {
  scf.forall (%b) in (4) {
    %sh = memref.alloc() : memref<256xf32>
    scf.forall (%t) in (256) {
      %v = memref.load %x[%b, %t] : memref<4x256xf32>
      memref.store %v, %sh[%t] : memref<256xf32>
    } {mapping = [#gpu.thread<x>]}
    scf.forall (%t) in (1) {
      %v = memref.load %sh[%t] : memref<256xf32>
      memref.store %v, %y[%b] : memref<4xf32>
    } {mapping = [#gpu.thread<x>]}
    memref.dealloc %sh : memref<256xf32>
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// What the body computes from above without side effects moves inside: a
// constant buffer's get_global (for outlining to copy its global into the
// GPU module) and a scalar load nothing writes before the launch; the
// kernel's buffers stay captured.
// CHECK-LABEL: func.func @sunk
// CHECK-NOT: memref.load
// CHECK: gpu.launch
// CHECK-DAG: memref.get_global @table
// CHECK-DAG: %[[STEP:.*]] = memref.load %arg0[]
// CHECK: gpu.terminator
memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
func.func @sunk(%step: memref<f32>, %y: memref<4xf32>) {
  %t = memref.get_global @table : memref<4xf32>
  %s = memref.load %step[] : memref<f32>
  scf.forall (%b) in (1) {
    scf.forall (%i) in (4) {
      %v = memref.load %t[%i] : memref<4xf32>
      %w = arith.mulf %v, %s : f32
      memref.store %w, %y[%i] : memref<4xf32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// A constant buffer over 16 KiB stays above, captured like the kernel's
// buffers: the runtime uploads it (PTX would carry four characters a byte).
// CHECK-LABEL: func.func @large_constant
// CHECK: %[[MASK:.*]] = memref.get_global @mask
// CHECK: gpu.launch
// CHECK-NOT: memref.get_global
// CHECK: memref.load %[[MASK]]
memref.global "private" constant @mask : memref<8192xf32> = dense<1.0>
func.func @large_constant(%y: memref<8192xf32>) {
  %m = memref.get_global @mask : memref<8192xf32>
  scf.forall (%b) in (32) {
    scf.forall (%t) in (256) {
      %c256 = arith.constant 256 : index
      %base = arith.muli %b, %c256 : index
      %i = arith.addi %base, %t : index
      %v = memref.load %m[%i] : memref<8192xf32>
      memref.store %v, %y[%i] : memref<8192xf32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// A load whose buffer an earlier launch writes stays where it was read.
// CHECK-LABEL: func.func @written_before
// CHECK: %[[OLD:.*]] = memref.load %arg0[]
// CHECK: gpu.launch
// CHECK: gpu.launch
// CHECK-NOT: memref.load %arg0
// CHECK: memref.store %[[OLD]], %arg1
func.func @written_before(%step: memref<f32>, %y: memref<f32>) {
  %s = memref.load %step[] : memref<f32>
  %one = arith.constant 1.0 : f32
  scf.forall (%b) in (1) {
    scf.forall (%t) in (1) {
      memref.store %one, %step[] : memref<f32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  scf.forall (%b) in (1) {
    scf.forall (%t) in (1) {
      memref.store %s, %y[] : memref<f32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

// A forall that is not the nest is refused.
func.func @two_dimensional(%y: memref<4x4xf32>) {
  %c = arith.constant 0.0 : f32
  // expected-error@+1 {{takes a one-dimensional forall mapped to #gpu.block<x>}}
  scf.forall (%i, %j) in (4, 4) {
    memref.store %c, %y[%i, %j] : memref<4x4xf32>
  } {mapping = [#gpu.block<x>, #gpu.block<y>]}
  return
}
