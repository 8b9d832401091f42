// RUN: colo-opt %s --colo-freeze="globals=final_logits_bias,encoder.*" | FileCheck %s
// RUN: colo-opt %s --colo-freeze="globals=final_logits_bias,encoder.*" \
// RUN:   --colo-build-train-step="loss=output optimizer=adamw" | FileCheck %s --check-prefix=STEP \
// RUN:   --implicit-check-not="of @encoder.weight" --implicit-check-not="of @final_logits_bias" \
// RUN:   --implicit-check-not="store @encoder.weight" --implicit-check-not="store @final_logits_bias" \
// RUN:   --implicit-check-not="encoder.weight#" --implicit-check-not="final_logits_bias#"
// RUN: colo-opt %s --colo-freeze="globals=decoder.bias,nothing.*" 2>&1 | FileCheck %s --check-prefix=WARN
// RUN: not colo-opt %s --colo-freeze="globals=[z-a]" 2>&1 | FileCheck %s --check-prefix=BAD

// The patterns' globals stop being trainable; the others keep training.
// CHECK: colo.global @final_logits_bias : tensor<4xf32>
// CHECK: colo.global @encoder.weight : tensor<4x4xf32>
// CHECK: colo.global trainable @decoder.weight : tensor<4x4xf32>

// A frozen global gets no gradient, no optimizer state and no store.
// STEP: colo.gradient %{{.*}} of @decoder.weight
// STEP: colo.global_store @decoder.weight,

// WARN: warning: colo-freeze: 'nothing.*' names no global of the model (nothing frozen)
// WARN: colo.global trainable @final_logits_bias
// WARN: colo.global @decoder.bias

// BAD: error: colo-freeze: bad pattern '[z-a]': invalid glob pattern: [z-a]
colo.global trainable @final_logits_bias : tensor<4xf32> = dense<0.0> : tensor<4xf32>
colo.global trainable @encoder.weight : tensor<4x4xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 1.0 : f64>
colo.global trainable @decoder.weight : tensor<4x4xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 1.0 : f64>
colo.global trainable @decoder.bias : tensor<4xf32> = dense<0.0> : tensor<4xf32>
func.func @forward(%x: tensor<2x4xf32>) -> tensor<f32> {
  %e = colo.global_load @encoder.weight : tensor<4x4xf32>
  %d = colo.global_load @decoder.weight : tensor<4x4xf32>
  %b = colo.global_load @decoder.bias : tensor<4xf32>
  %f = colo.global_load @final_logits_bias : tensor<4xf32>
  %h = colo.matmul %x, %e : tensor<2x4xf32>, tensor<4x4xf32>
  %y = colo.matmul %h, %d : tensor<2x4xf32>, tensor<4x4xf32>
  %z = colo.add %y, %b : tensor<2x4xf32>, tensor<4xf32>
  %w = colo.add %z, %f : tensor<2x4xf32>, tensor<4xf32>
  %s = colo.reduce_sum %w dims = [0, 1] : tensor<2x4xf32>
  return %s : tensor<f32>
}
