// RUN: colo-opt %S/Inputs/linear.mlir --colo-build-train-step="optimizer=adamw lr=0.01" --canonicalize --cse --colo-offload | FileCheck %s
// RUN: colo-opt %S/Inputs/linear.mlir --colo-build-train-step="optimizer=sgd momentum=0.9 loss-scale=dynamic" --canonicalize --cse --colo-offload | FileCheck %s --check-prefix=SCALE
// RUN: colo-opt %S/Inputs/linear.mlir --colo-build-train-step="optimizer=adamw lr=0.01" --canonicalize --cse --colo-offload=optimizer=false | FileCheck %s --check-prefix=OFF
// RUN: colo-opt %S/Inputs/mlp.mlir --colo-build-train-step="optimizer=sgd lr=0.1" --canonicalize --cse --colo-offload="params=true chunk-mb=0.001" | FileCheck %s --check-prefix=PARAMS
// RUN: colo-opt %S/Inputs/mlp.mlir --colo-build-train-step="optimizer=sgd lr=0.1" --canonicalize --cse --colo-offload="params=true chunk-mb=0.001 resident-mb=1" | FileCheck %s --check-prefix=RESIDENT
// RUN: colo-opt %S/Inputs/mlp.mlir --colo-autocast --colo-build-train-step="optimizer=sgd lr=0.1" --canonicalize --cse --colo-offload="params=true" | FileCheck %s --check-prefix=NARROW
// RUN: not colo-opt %S/Inputs/mlp.mlir --colo-build-train-step="optimizer=sgd lr=0.1" --colo-offload="optimizer=false params=true" 2>&1 | FileCheck %s --check-prefix=ALONE

// A linear classifier with AdamW: its moments live on the host, the updates
// run there. Each parameter goes to the host at the start of the step (its
// update's load moves there: nothing changes it before the update), each
// gradient right after the backward computes it, and each new parameter
// back to the device. The step counter and its increment stay on the
// device; constants (the learning rate) are in the kernels and move nowhere.
// CHECK-DAG: colo.global @colo.step : tensor<i64> = dense<0> : tensor<i64> {colo.optimizer_state}
// CHECK-DAG: colo.global @"fc.weight#exp_avg" : tensor<4x3xf32> = {{.*}} {colo.on_host, colo.optimizer_state}
// CHECK-DAG: colo.global @"fc.weight#exp_avg_sq" : tensor<4x3xf32> = {{.*}} {colo.on_host, colo.optimizer_state}
// CHECK-DAG: colo.global @"fc.bias#exp_avg_sq" : tensor<3xf32> = {{.*}} {colo.on_host, colo.optimizer_state}
// CHECK-LABEL: func.func @train_step
// CHECK-NEXT: %[[W:.*]] = colo.global_load @fc.weight
// CHECK-NEXT: %[[HW:.*]] = colo.transfer %[[W]] to host : tensor<4x3xf32>
// CHECK-NEXT: %[[B:.*]] = colo.global_load @fc.bias
// CHECK-NEXT: %[[HB:.*]] = colo.transfer %[[B]] to host : tensor<3xf32>
// CHECK: %[[LR:.*]] = colo.constant dense<0.00999999977> : tensor<f32>
// CHECK-NOT: colo.transfer %[[LR]]
// CHECK: %[[STEP:.*]] = colo.add %{{.*}}, %{{.*}} : tensor<i64>, tensor<i64>
// CHECK-NEXT: %[[HSTEP:.*]] = colo.transfer %[[STEP]] to host : tensor<i64>
// CHECK: %[[DB:.*]] = colo.reduce_sum %{{.*}} dims = [0] : tensor<8x3xf32>
// CHECK-NEXT: %[[HDB:.*]] = colo.transfer %[[DB]] to host : tensor<3xf32>
// CHECK: %[[DW:.*]] = colo.matmul
// CHECK-NEXT: %[[HDW:.*]] = colo.transfer %[[DW]] to host : tensor<4x3xf32>
// CHECK: %[[NEW:.*]], %[[M:.*]], %[[V:.*]] = colo.adam_update %[[HW]], %[[HDW]], %{{.*}}, %{{.*}}, %[[LR]], %[[HSTEP]] {{{.*}}colo.on_host
// CHECK-NEXT: %[[DNEW:.*]] = colo.transfer %[[NEW]] to device : tensor<4x3xf32>
// CHECK-NEXT: colo.global_store @fc.weight, %[[DNEW]]
// CHECK-NEXT: colo.global_store @"fc.weight#exp_avg", %[[M]]
// CHECK-NEXT: colo.global_store @"fc.weight#exp_avg_sq", %[[V]]
// CHECK: colo.adam_update %[[HB]], %[[HDB]], {{.*}}colo.on_host

// Dynamic loss scaling keeps or skips each update with a select: the
// momentum buffer's select runs on the host (its result stays there), the
// parameter's on the device with the parameter moved back; the
// finiteness flag goes to the host once. The loss scale's own state stays
// on the device.
// SCALE-DAG: colo.global @"fc.weight#momentum_buffer" : {{.*}} {colo.on_host, colo.optimizer_state}
// SCALE-DAG: colo.global @colo.loss_scale : tensor<f32> = {{.*}} {colo.optimizer_state}
// SCALE-LABEL: func.func @train_step
// SCALE: %[[FINITE:.*]] = colo.compare eq
// SCALE-NEXT: %[[HFINITE:.*]] = colo.transfer %[[FINITE]] to host : tensor<i1>
// SCALE: %[[W:.*]] = colo.global_load @fc.weight
// SCALE: %[[NEW:.*]], %[[BUF:.*]] = colo.sgd_update {{.*}}colo.on_host
// SCALE-NEXT: %[[DNEW:.*]] = colo.transfer %[[NEW]] to device
// SCALE-NEXT: %[[KEEP:.*]] = colo.select %[[FINITE]], %[[DNEW]], %[[W]] :
// SCALE-NEXT: colo.global_store @fc.weight, %[[KEEP]]
// SCALE-NEXT: %[[KEEPBUF:.*]] = colo.select %[[HFINITE]], %[[BUF]], %{{.*}} {colo.on_host}
// SCALE-NEXT: colo.global_store @"fc.weight#momentum_buffer", %[[KEEPBUF]]
// SCALE: colo.global_store @"fc.bias#momentum_buffer"
// SCALE-NOT: colo.on_host
// SCALE: colo.global_store @colo.loss_scale

// OFF-NOT: colo.on_host
// OFF-NOT: colo.transfer

// Parameters on the host too (chunk-mb small enough that each weight is a
// chunk of its own; resident-mb=0: no chunk is kept between uses if another
// needs the room). Each chunk is fetched when a use finds it absent, and
// the fetch is issued where the previous fetch's first reader runs, so that
// it overlaps that compute. fc1's weight is read once (no input gradient
// for the first layer); fc2's is dropped when fc3's arrives (its next use,
// the backward, is the farthest away) and fetched again for the backward,
// issued before fc3's first reader; fc3's is still resident there. The
// updates read the host parameters and store into them: no parameter goes
// back to the device.
// PARAMS-DAG: colo.global trainable @fc1.weight : {{.*}} {colo.on_host}
// PARAMS-DAG: colo.global trainable @fc3.weight : {{.*}} {colo.on_host}
// PARAMS-LABEL: func.func @train_step
// PARAMS-COUNT-3: colo.global_load
// PARAMS-NEXT: %[[W1:.*]] = colo.global_load @fc1.weight
// PARAMS-NEXT: %[[W2:.*]] = colo.global_load @fc2.weight
// PARAMS-NEXT: %[[W3:.*]] = colo.global_load @fc3.weight
// PARAMS: %[[D1:.*]] = colo.transfer %[[W1]] to device {colo.chunk = 0 : i64}
// PARAMS-NEXT: %[[D2:.*]] = colo.transfer %[[W2]] to device {colo.chunk = 1 : i64}
// PARAMS-NEXT: colo.matmul %arg0, %[[D1]]
// PARAMS-NEXT: colo.relu
// PARAMS-NEXT: %[[D3:.*]] = colo.transfer %[[W3]] to device {colo.chunk = 2 : i64}
// PARAMS-NEXT: colo.matmul %{{.*}}, %[[D2]]
// PARAMS-NEXT: colo.relu
// PARAMS-NEXT: %[[D2AGAIN:.*]] = colo.transfer %[[W2]] to device {colo.chunk = 1 : i64}
// PARAMS-NEXT: colo.matmul %{{.*}}, %[[D3]]
// PARAMS: colo.transpose %[[D3]]
// PARAMS: colo.transpose %[[D2AGAIN]]
// PARAMS-NOT: to device
// PARAMS: colo.sgd_update %{{.*}} {colo.on_host
// PARAMS-NEXT: colo.global_store @fc1.weight

// With room for the chunks between uses, each is fetched once.
// RESIDENT-LABEL: func.func @train_step
// RESIDENT-COUNT-3: to device {colo.chunk
// RESIDENT-NOT: to device

// Under bf16 the parameters' bf16 copies are made on the host, right after
// the loads: the device receives half the bytes. One chunk holds them all.
// NARROW-LABEL: func.func @train_step
// NARROW-COUNT-3: colo.global_load
// NARROW-NEXT: %[[W1:.*]] = colo.global_load @fc1.weight
// NARROW-NEXT: %[[H1:.*]] = colo.convert %[[W1]] {colo.on_host} : tensor<16x16xf32> to tensor<16x16xbf16>
// NARROW: colo.transfer %[[H1]] to device {colo.chunk = 0 : i64} : tensor<16x16xbf16>
// NARROW-NOT: colo.chunk = 1

// ALONE: parameters on the host need the optimizer there too
