// RUN: colo-opt %S/Inputs/mlp.mlir --colo-build-train-step="optimizer=sgd lr=0.1" --canonicalize --cse --colo-offload-activations | FileCheck %s
// RUN: colo-opt %S/Inputs/mlp.mlir --colo-build-train-step="optimizer=sgd lr=0.1" --canonicalize --cse --colo-offload-activations="chunk-mb=0.0005" | FileCheck %s --check-prefix=CHUNKS
// RUN: colo-opt %S/Inputs/mlp.mlir --colo-create-mesh=pp=2 --colo-split-batch=parts=2 --colo-pipeline-stages=stages=2 --colo-build-train-step="optimizer=sgd lr=0.1" --colo-offload-activations --colo-pipeline="pp=2 micro=2 schedule=1f1b" | FileCheck %s --check-prefix=PIPE
// RUN: not colo-opt %S/Inputs/mlp.mlir --colo-build-train-step --colo-offload-activations="chunk-mb=0" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not colo-opt %S/Inputs/mlp.mlir --colo-offload-activations 2>&1 | FileCheck %s --check-prefix=NOSTEP

// Three linear layers: the backward reads both matmuls' outputs (the ReLUs'
// masks) and both ReLUs' outputs (the weight gradients' products). Each goes
// to the host right after it is computed; the logits, which the loss and
// then at once the loss's backward read, stay. The input is the step's
// argument and the weights are parameters: neither is an activation.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[Y1:.*]] = colo.matmul %arg0
// CHECK-NEXT: %[[H1:.*]] = colo.transfer %[[Y1]] to host : tensor<8x16xf32>
// CHECK-NEXT: %[[A1:.*]] = colo.relu %[[Y1]]
// CHECK-NEXT: %[[HA1:.*]] = colo.transfer %[[A1]] to host
// CHECK: %[[Y2:.*]] = colo.matmul %[[A1]]
// CHECK-NEXT: %[[H2:.*]] = colo.transfer %[[Y2]] to host
// CHECK-NEXT: %[[A2:.*]] = colo.relu %[[Y2]]
// CHECK-NEXT: %[[HA2:.*]] = colo.transfer %[[A2]] to host
// CHECK: %[[LOGITS:.*]] = colo.matmul %[[A2]]
// CHECK-NOT: colo.transfer %[[LOGITS]]
// CHECK-NOT: colo.transfer %arg0
// CHECK: colo.cross_entropy_backward %[[LOGITS]]
// The four fit one chunk, fetched together where the first is read.
// CHECK: %[[DA2:.*]] = colo.transfer %[[HA2]] to device {colo.stash = 0 : i64}
// CHECK-NEXT: %[[D2:.*]] = colo.transfer %[[H2]] to device {colo.stash = 0 : i64}
// CHECK-NEXT: %[[DA1:.*]] = colo.transfer %[[HA1]] to device {colo.stash = 0 : i64}
// CHECK-NEXT: %[[D1:.*]] = colo.transfer %[[H1]] to device {colo.stash = 0 : i64}
// CHECK-NEXT: colo.transpose %[[DA2]]
// CHECK: colo.compare gt, %[[D2]]
// CHECK: colo.transpose %[[DA1]]
// CHECK: colo.compare gt, %[[D1]]
// CHECK-NOT: colo.transfer

// A chunk per value (512 bytes each): each fetch is issued where the
// previous one's first reader runs, one chunk ahead of its own reader.
// CHUNKS: colo.cross_entropy_backward
// CHUNKS: %[[DA2:.*]] = colo.transfer %{{.*}} to device {colo.stash = 0 : i64}
// CHUNKS-NEXT: %[[D2:.*]] = colo.transfer %{{.*}} to device {colo.stash = 1 : i64}
// CHUNKS-NEXT: colo.transpose %[[DA2]]
// CHUNKS-NEXT: colo.matmul
// CHUNKS-NEXT: %[[DA1:.*]] = colo.transfer %{{.*}} to device {colo.stash = 2 : i64}
// CHUNKS-NEXT: colo.compare gt, %[[D2]]
// CHUNKS: %[[D1:.*]] = colo.transfer %{{.*}} to device {colo.stash = 3 : i64}
// CHUNKS-NEXT: colo.transpose %[[DA1]]
// CHUNKS: colo.compare gt, %[[D1]]

// Under a pipeline each microbatch keeps its own: the copies are cloned
// with its forward and its backward, on the stage whose backward reads
// them. Stage 1 also keeps the activation it receives from stage 0 (its
// weight gradient's input), on its own side of the send.
// PIPE-LABEL: func.func @train_step_stage0
// PIPE: %[[Y:.*]] = colo.matmul {{.*}}colo.micro = 0
// PIPE-NEXT: %[[H:.*]] = colo.transfer %[[Y]] to host {colo.micro = 0 : i64, colo.stage = 0 : i64}
// PIPE: %[[Y1:.*]] = colo.matmul {{.*}}colo.micro = 1
// PIPE-NEXT: %[[H1:.*]] = colo.transfer %[[Y1]] to host {colo.micro = 1 : i64, colo.stage = 0 : i64}
// PIPE: %[[D:.*]] = colo.transfer %[[H]] to device {colo.micro = 0 : i64, colo.stage = 0 : i64, colo.stash = 0 : i64}
// PIPE: colo.compare gt, %[[D]]
// PIPE: %[[D1:.*]] = colo.transfer %[[H1]] to device {colo.micro = 1 : i64, colo.stage = 0 : i64, colo.stash = 0 : i64}
// PIPE: colo.compare gt, %[[D1]]
// PIPE-LABEL: func.func @train_step_stage1
// PIPE: %[[IN:.*]] = shard.recv {{.*}}colo.tag = 0
// PIPE-NEXT: %[[HIN:.*]] = colo.transfer %[[IN]] to host {colo.micro = 0 : i64, colo.stage = 1 : i64}
// PIPE: %[[DIN:.*]] = colo.transfer %[[HIN]] to device {colo.micro = 0 : i64, colo.stage = 1 : i64, colo.stash = 0 : i64}
// PIPE: colo.transpose %[[DIN]]

// BAD: colo-offload-activations: chunk-mb must be positive, got 0
// NOSTEP: colo-offload-activations: no single-block func.func @train_step (run it after colo-build-train-step)
