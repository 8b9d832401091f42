// RUN: colo-opt %s --split-input-file --verify-diagnostics --colo-zero="dp=2"
// RUN: not colo-opt %s --split-input-file --colo-zero="dp=2 stage=3" 2>&1 | FileCheck %s --check-prefix=STAGE3
// RUN: not colo-opt %s --split-input-file --colo-zero="dp=2 stage=0" 2>&1 | FileCheck %s --check-prefix=STAGE0
// RUN: not colo-opt %s --split-input-file --colo-zero="dp=0" 2>&1 | FileCheck %s --check-prefix=DP

// STAGE3: error: colo-zero: stage 3 keeps only a block of @w on each rank, but the optimizer part of the step reads its whole value here (only the forward and the backward may)
// STAGE0: error: colo-zero: stage must be 1, 2 or 3, got 0
// DP: error: colo-zero: dp must be at least 1, got 0

// LAMB's trust ratio needs the norms of the whole parameter.
colo.global trainable @w : tensor<4xf32> = dense<1.0> : tensor<4xf32>
colo.global @"w#exp_avg" : tensor<4xf32> = dense<0.0> : tensor<4xf32> {colo.optimizer_state}
colo.global @"w#exp_avg_sq" : tensor<4xf32> = dense<0.0> : tensor<4xf32> {colo.optimizer_state}
func.func @train_step(%x: tensor<4xf32>, %lr: tensor<f32>, %step: tensor<i64>) -> tensor<f32> {
  %loss = colo.reduce_mean %x dims = [0] : tensor<4xf32>
  %dw = colo.exp %x : tensor<4xf32>
  %g = colo.gradient %dw of @w : tensor<4xf32>
  %w = colo.global_load @w : tensor<4xf32>
  %m = colo.global_load @"w#exp_avg" : tensor<4xf32>
  %v = colo.global_load @"w#exp_avg_sq" : tensor<4xf32>
  // expected-error @+1 {{colo-zero: optimizer lamb (of @w) needs norms of the whole parameter; ZeRO supports adam, adamw and sgd}}
  %nw, %nm, %nv = colo.lamb_update %w, %g, %m, %v, %lr, %step
      {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-06 : f64,
       weight_decay = 0.01 : f64} : tensor<4xf32>
  colo.global_store @w, %nw : tensor<4xf32>
  colo.global_store @"w#exp_avg", %nm : tensor<4xf32>
  colo.global_store @"w#exp_avg_sq", %nv : tensor<4xf32>
  return %loss : tensor<f32>
}

// -----

// So does LARS's local learning rate.
colo.global trainable @w : tensor<4xf32> = dense<1.0> : tensor<4xf32>
colo.global @"w#momentum_buffer" : tensor<4xf32> = dense<0.0> : tensor<4xf32> {colo.optimizer_state}
func.func @train_step(%x: tensor<4xf32>, %lr: tensor<f32>, %step: tensor<i64>) -> tensor<f32> {
  %loss = colo.reduce_mean %x dims = [0] : tensor<4xf32>
  %dw = colo.exp %x : tensor<4xf32>
  %g = colo.gradient %dw of @w : tensor<4xf32>
  %w = colo.global_load @w : tensor<4xf32>
  %b = colo.global_load @"w#momentum_buffer" : tensor<4xf32>
  // expected-error @+1 {{colo-zero: optimizer lars (of @w) needs norms of the whole parameter}}
  %nw, %nb = colo.lars_update %w, %g, %b, %lr, %step
      {momentum = 0.9 : f64, weight_decay = 0.0 : f64, trust_coefficient = 0.001 : f64,
       epsilon = 1.0e-08 : f64} : tensor<4xf32>
  colo.global_store @w, %nw : tensor<4xf32>
  colo.global_store @"w#momentum_buffer", %nb : tensor<4xf32>
  return %loss : tensor<f32>
}

// -----

// Clipping by the global norm reads every whole gradient.
colo.global trainable @w : tensor<4xf32> = dense<1.0> : tensor<4xf32>
func.func @train_step(%x: tensor<4xf32>, %lr: tensor<f32>, %step: tensor<i64>) -> tensor<f32> {
  %loss = colo.reduce_mean %x dims = [0] : tensor<4xf32>
  %dw = colo.exp %x : tensor<4xf32>
  // expected-error @+1 {{ZeRO with gradient clipping or loss scaling is not supported yet: the gradient of @w is used by more than its optimizer update}}
  %g = colo.gradient %dw of @w : tensor<4xf32>
  %sq = colo.mul %g, %g : tensor<4xf32>, tensor<4xf32>
  %norm2 = colo.reduce_sum %sq dims = [0] : tensor<4xf32>
  %norm = colo.sqrt %norm2 : tensor<f32>
  %c = colo.minimum %norm, %lr : tensor<f32>, tensor<f32>
  %clipped = colo.mul %g, %c : tensor<4xf32>, tensor<f32>
  %w = colo.global_load @w : tensor<4xf32>
  %nw, %nb = colo.sgd_update %w, %clipped, %clipped, %lr, %step
      {momentum = 0.0 : f64, dampening = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
  colo.global_store @w, %nw : tensor<4xf32>
  return %loss : tensor<f32>
}

// -----

// Stage 3 keeps only the rank's block of a parameter: a step that reads the
// whole parameter after the backward (here a statistic of it) cannot. Stages 1
// and 2 can.
colo.global trainable @w : tensor<4xf32> = dense<1.0> : tensor<4xf32>
colo.global @"w.sq" : tensor<4xf32> = dense<0.0> : tensor<4xf32>
func.func @train_step(%x: tensor<4xf32>, %lr: tensor<f32>, %step: tensor<i64>) -> tensor<f32> {
  %loss = colo.reduce_mean %x dims = [0] : tensor<4xf32>
  %dw = colo.exp %x : tensor<4xf32>
  %g = colo.gradient %dw of @w : tensor<4xf32>
  %w = colo.global_load @w : tensor<4xf32>
  %nw, %nb = colo.sgd_update %w, %g, %g, %lr, %step
      {momentum = 0.0 : f64, dampening = 0.0 : f64, weight_decay = 0.0 : f64} : tensor<4xf32>
  colo.global_store @w, %nw : tensor<4xf32>
  %sq = colo.mul %w, %w : tensor<4xf32>, tensor<4xf32>
  colo.global_store @"w.sq", %sq : tensor<4xf32>
  return %loss : tensor<f32>
}

// -----

// expected-error @+1 {{colo-zero: no function @train_step (run colo-build-train-step first)}}
module {
  func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
