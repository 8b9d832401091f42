// RUN: colo-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// The colo.* attributes passes leave on functions, the module and foreign
// ops are declared by the dialect and verified.

// CHECK: module attributes {colo.opset = 17 : i64, colo.source = "onnx"}
// CHECK: shard.grid @mesh(shape = 2x2) {colo.axes = ["dp", "tp"]}
// CHECK: func.func @f(%{{.*}}: tensor<4xi64> {colo.int_max = 16 : i64}) -> tensor<4xi64> attributes {colo.pipeline_stage = 0 : i64, colo.tensor_parallel = 2 : i64, colo.zero = 3 : i64}
module attributes {colo.source = "onnx", colo.opset = 17 : i64} {
  shard.grid @mesh(shape = 2x2) {colo.axes = ["dp", "tp"]}
  func.func @f(%ids: tensor<4xi64> {colo.int_max = 16 : i64}) -> tensor<4xi64>
      attributes {colo.tensor_parallel = 2 : i64, colo.zero = 3 : i64,
                  colo.pipeline_stage = 0 : i64} {
    return %ids : tensor<4xi64>
  }
}

// -----

// expected-error @+1 {{'colo.tensor_parallel' must be at least 1, got 0}}
func.func @f() attributes {colo.tensor_parallel = 0 : i64} {
  return
}

// -----

// expected-error @+1 {{'colo.stage' must be a 64-bit integer}}
func.func @f() attributes {colo.stage = "first"} {
  return
}

// -----

// expected-error @+1 {{has an unknown attribute 'colo.tensor_paralel'}}
func.func @f() attributes {colo.tensor_paralel = 2 : i64} {
  return
}

// -----

// expected-error @+1 {{'colo.zero' is a ZeRO stage (1, 2 or 3), got 4}}
func.func @f() attributes {colo.zero = 4 : i64} {
  return
}

// -----

// expected-error @+1 {{'colo.int_max' must be at least 1, got 0}}
func.func @f(%ids: tensor<4xi64> {colo.int_max = 0 : i64}) {
  return
}

// -----

// expected-error @+1 {{has an unknown argument attribute 'colo.stage'}}
func.func @f(%ids: tensor<4xi64> {colo.stage = 0 : i64}) {
  return
}

// -----

// expected-error @+1 {{'colo.int_max' belongs on a function argument}}
func.func @f() attributes {colo.int_max = 4 : i64} {
  return
}

// -----

// expected-error @+1 {{'colo.zero_gather' must be "forward" or "backward"}}
shard.grid @mesh(shape = 2) {colo.zero_gather = "update"}
