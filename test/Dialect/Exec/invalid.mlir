// RUN: colo-opt %s -split-input-file -verify-diagnostics

exec.program @space {
  // expected-error @+1 {{a buffer's type names its memory space}}
  %x = exec.buffer "x" temp : memref<4xf32>
  exec.return
}

// -----

exec.program @offset {
  // expected-error @+1 {{only temp buffers have an arena offset}}
  %x = exec.buffer "x" state {offset = 0 : i64} : memref<4xf32, #exec.space<device>>
  exec.return
}

// -----

exec.program @view {
  %x = exec.buffer "x" temp : memref<4xf32, #exec.space<device>>
  // expected-error @+1 {{is larger than its source}}
  %v = exec.view %x "v" : memref<4xf32, #exec.space<device>> to memref<8xf32, #exec.space<device>>
  exec.return
}

// -----

exec.program @copy {
  %x = exec.buffer "x" temp : memref<4xf32, #exec.space<device>>
  %y = exec.buffer "y" temp : memref<4xf64, #exec.space<device>>
  // expected-error @+1 {{copies between buffers of the same byte size}}
  exec.copy "c" %x -> %y : memref<4xf32, #exec.space<device>>, memref<4xf64, #exec.space<device>>
  exec.return
}

// -----

exec.program @pool {
  %x = exec.buffer "x" temp : memref<1x1x4x4xf32, #exec.space<device>>
  // expected-error @+1 {{forward pooling takes x and y}}
  exec.pool2d max_forward "p" x(%x : memref<1x1x4x4xf32, #exec.space<device>>) {input_shape = array<i64: 1, 1, 4, 4>, window = array<i64: 1, 1>, output_size = array<i64: 4, 4>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
  exec.return
}

// -----

exec.program @pieces {
  %x = exec.buffer "x" temp : memref<4xf32, #exec.space<device>>
  // expected-error @+1 {{in pieces names one piece size per argument}}
  exec.kernel @k "k" outs(%x : memref<4xf32, #exec.space<device>>) {pieces = 2 : i64}
  exec.return
}

// -----

exec.program @transfer_within_one_space {
  %x = exec.buffer "x" temp : memref<4xf32, #exec.space<device>>
  %y = exec.buffer "y" temp : memref<4xf32, #exec.space<device>>
  // expected-error @+1 {{moves between two memory spaces (exec.copy copies within one)}}
  %t = exec.transfer "t" %x -> %y : memref<4xf32, #exec.space<device>>, memref<4xf32, #exec.space<device>>
  exec.wait %t "t.wait"
  exec.return
}

// -----

exec.program @kernel_in_two_spaces {
  %x = exec.buffer "x" temp : memref<4xf32, #exec.space<device>>
  %y = exec.buffer "y" temp : memref<4xf32, #exec.space<host>>
  // expected-error @+1 {{reads and writes buffers of one memory space, not device and host}}
  exec.kernel @k "k" ins(%x : memref<4xf32, #exec.space<device>>) outs(%y : memref<4xf32, #exec.space<host>>)
  exec.return
}

// -----

exec.program @pinned_temp {
  // expected-error @+1 {{temp buffers live in an arena, in device or host memory}}
  %x = exec.buffer "x" temp : memref<4xf32, #exec.space<pinned_host>>
  exec.return
}
