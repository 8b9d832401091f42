// RUN: colo-opt %s --colo-raise-gelu | FileCheck %s

// GELU as exporters spell it, raised to colo.gelu; near misses are left alone.

// torch.nn.GELU() through torch.onnx: Div by sqrt(2), Erf, Add 1, Mul x,
// Mul 0.5.
// CHECK-LABEL: func.func @torch_erf
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x256xf32>)
// CHECK-NEXT: %[[Y:.*]] = colo.gelu %[[X]] : tensor<2x16x256xf32>
// CHECK-NEXT: return %[[Y]]
func.func @torch_erf(%x: tensor<2x16x256xf32>) -> tensor<2x16x256xf32> {
  %sqrt2 = colo.constant dense<1.4142135> : tensor<f32>
  %d = colo.div %x, %sqrt2 : tensor<2x16x256xf32>, tensor<f32>
  %e = colo.erf %d : tensor<2x16x256xf32>
  %one = colo.constant dense<1.0> : tensor<f32>
  %p = colo.add %e, %one : tensor<2x16x256xf32>, tensor<f32>
  %xp = colo.mul %x, %p : tensor<2x16x256xf32>, tensor<2x16x256xf32>
  %half = colo.constant dense<0.5> : tensor<f32>
  %y = colo.mul %xp, %half : tensor<2x16x256xf32>, tensor<f32>
  return %y : tensor<2x16x256xf32>
}

// The erf form with x * (1 / sqrt(2)), the constants first, and 0.5 * x
// taken first.
// CHECK-LABEL: func.func @erf_reassociated
// CHECK-SAME: (%[[X:.*]]: tensor<8x64xf32>)
// CHECK-NEXT: %[[Y:.*]] = colo.gelu %[[X]] : tensor<8x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @erf_reassociated(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %c = colo.constant dense<0.70710678> : tensor<f32>
  %s = colo.mul %c, %x : tensor<f32>, tensor<8x64xf32>
  %e = colo.erf %s : tensor<8x64xf32>
  %one = colo.constant dense<1.0> : tensor<f32>
  %p = colo.add %one, %e : tensor<f32>, tensor<8x64xf32>
  %half = colo.constant dense<0.5> : tensor<f32>
  %hx = colo.mul %half, %x : tensor<f32>, tensor<8x64xf32>
  %y = colo.mul %hx, %p : tensor<8x64xf32>, tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// GPT-2's NewGELUActivation through torch.onnx:
// 0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * pow(x, 3)))).
// CHECK-LABEL: func.func @gpt2_tanh
// CHECK-SAME: (%[[X:.*]]: tensor<2x16x256xf32>)
// CHECK-NEXT: %[[Y:.*]] = colo.gelu %[[X]] approximation = tanh : tensor<2x16x256xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gpt2_tanh(%x: tensor<2x16x256xf32>) -> tensor<2x16x256xf32> {
  %half = colo.constant dense<0.5> : tensor<f32>
  %hx = colo.mul %half, %x : tensor<f32>, tensor<2x16x256xf32>
  %three = colo.constant dense<3.0> : tensor<f32>
  %cube = colo.pow %x, %three : tensor<2x16x256xf32>, tensor<f32>
  %k = colo.constant dense<0.044715> : tensor<f32>
  %kc = colo.mul %k, %cube : tensor<f32>, tensor<2x16x256xf32>
  %inner = colo.add %x, %kc : tensor<2x16x256xf32>, tensor<2x16x256xf32>
  %c = colo.constant dense<0.7978845608> : tensor<f32>
  %arg = colo.mul %c, %inner : tensor<f32>, tensor<2x16x256xf32>
  %t = colo.tanh %arg : tensor<2x16x256xf32>
  %one = colo.constant dense<1.0> : tensor<f32>
  %p = colo.add %one, %t : tensor<f32>, tensor<2x16x256xf32>
  %y = colo.mul %hx, %p : tensor<2x16x256xf32>, tensor<2x16x256xf32>
  return %y : tensor<2x16x256xf32>
}

// The tanh form associated the other way, with the constants on the right.
// CHECK-LABEL: func.func @tanh_reassociated
// CHECK-SAME: (%[[X:.*]]: tensor<8x64xf32>)
// CHECK-NEXT: %[[Y:.*]] = colo.gelu %[[X]] approximation = tanh : tensor<8x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @tanh_reassociated(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %three = colo.constant dense<3.0> : tensor<f32>
  %cube = colo.pow %x, %three : tensor<8x64xf32>, tensor<f32>
  %k = colo.constant dense<0.044715> : tensor<f32>
  %kc = colo.mul %cube, %k : tensor<8x64xf32>, tensor<f32>
  %inner = colo.add %kc, %x : tensor<8x64xf32>, tensor<8x64xf32>
  %c = colo.constant dense<0.7978845608> : tensor<f32>
  %arg = colo.mul %inner, %c : tensor<8x64xf32>, tensor<f32>
  %t = colo.tanh %arg : tensor<8x64xf32>
  %one = colo.constant dense<1.0> : tensor<f32>
  %p = colo.add %t, %one : tensor<8x64xf32>, tensor<f32>
  %xp = colo.mul %x, %p : tensor<8x64xf32>, tensor<8x64xf32>
  %half = colo.constant dense<0.5> : tensor<f32>
  %y = colo.mul %xp, %half : tensor<8x64xf32>, tensor<f32>
  return %y : tensor<8x64xf32>
}

// The GELU input is itself a product (here a layer scale); it stays one factor.
// CHECK-LABEL: func.func @input_is_product
// CHECK-SAME: (%[[A:.*]]: tensor<8x64xf32>, %[[S:.*]]: tensor<64xf32>)
// CHECK-NEXT: %[[X:.*]] = colo.mul %[[A]], %[[S]]
// CHECK-NEXT: %[[Y:.*]] = colo.gelu %[[X]] : tensor<8x64xf32>
// CHECK-NEXT: %[[Z:.*]] = colo.gelu %[[X]] approximation = tanh : tensor<8x64xf32>
// CHECK-NEXT: return %[[Y]], %[[Z]]
func.func @input_is_product(%a: tensor<8x64xf32>, %s: tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %x = colo.mul %a, %s : tensor<8x64xf32>, tensor<64xf32>
  %c = colo.constant dense<0.70710678> : tensor<f32>
  %d = colo.mul %x, %c : tensor<8x64xf32>, tensor<f32>
  %e = colo.erf %d : tensor<8x64xf32>
  %one = colo.constant dense<1.0> : tensor<f32>
  %p = colo.add %e, %one : tensor<8x64xf32>, tensor<f32>
  %xp = colo.mul %x, %p : tensor<8x64xf32>, tensor<8x64xf32>
  %half = colo.constant dense<0.5> : tensor<f32>
  %y = colo.mul %xp, %half : tensor<8x64xf32>, tensor<f32>
  %three = colo.constant dense<3.0> : tensor<f32>
  %cube = colo.pow %x, %three : tensor<8x64xf32>, tensor<f32>
  %k = colo.constant dense<0.044715> : tensor<f32>
  %kc = colo.mul %k, %cube : tensor<f32>, tensor<8x64xf32>
  %inner = colo.add %x, %kc : tensor<8x64xf32>, tensor<8x64xf32>
  %sc = colo.constant dense<0.7978845608> : tensor<f32>
  %arg = colo.mul %sc, %inner : tensor<f32>, tensor<8x64xf32>
  %t = colo.tanh %arg : tensor<8x64xf32>
  %pt = colo.add %one, %t : tensor<f32>, tensor<8x64xf32>
  %hx = colo.mul %half, %x : tensor<f32>, tensor<8x64xf32>
  %z = colo.mul %hx, %pt : tensor<8x64xf32>, tensor<8x64xf32>
  return %y, %z : tensor<8x64xf32>, tensor<8x64xf32>
}

// A GELU scaled afterwards: the GELU is raised, the scale stays.
// CHECK-LABEL: func.func @scaled_gelu
// CHECK-SAME: (%[[X:.*]]: tensor<8x64xf32>, %[[W:.*]]: tensor<64xf32>)
// CHECK-NEXT: %[[G:.*]] = colo.gelu %[[X]] : tensor<8x64xf32>
// CHECK-NEXT: %[[Y:.*]] = colo.mul %[[G]], %[[W]]
// CHECK-NEXT: return %[[Y]]
func.func @scaled_gelu(%x: tensor<8x64xf32>, %w: tensor<64xf32>) -> tensor<8x64xf32> {
  %sqrt2 = colo.constant dense<1.4142135> : tensor<f32>
  %d = colo.div %x, %sqrt2 : tensor<8x64xf32>, tensor<f32>
  %e = colo.erf %d : tensor<8x64xf32>
  %one = colo.constant dense<1.0> : tensor<f32>
  %p = colo.add %e, %one : tensor<8x64xf32>, tensor<f32>
  %xp = colo.mul %x, %p : tensor<8x64xf32>, tensor<8x64xf32>
  %half = colo.constant dense<0.5> : tensor<f32>
  %g = colo.mul %xp, %half : tensor<8x64xf32>, tensor<f32>
  %y = colo.mul %g, %w : tensor<8x64xf32>, tensor<64xf32>
  return %y : tensor<8x64xf32>
}

//===----------------------------------------------------------------------===//
// Left alone
//===----------------------------------------------------------------------===//

// 0.6 instead of 0.5.
// CHECK-LABEL: func.func @wrong_half
// CHECK-NOT: colo.gelu
// CHECK: return
func.func @wrong_half(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %sqrt2 = colo.constant dense<1.4142135> : tensor<f32>
  %d = colo.div %x, %sqrt2 : tensor<8x64xf32>, tensor<f32>
  %e = colo.erf %d : tensor<8x64xf32>
  %one = colo.constant dense<1.0> : tensor<f32>
  %p = colo.add %e, %one : tensor<8x64xf32>, tensor<f32>
  %xp = colo.mul %x, %p : tensor<8x64xf32>, tensor<8x64xf32>
  %c = colo.constant dense<0.6> : tensor<f32>
  %y = colo.mul %xp, %c : tensor<8x64xf32>, tensor<f32>
  return %y : tensor<8x64xf32>
}

// erf(x / 2) is not the normal CDF's argument.
// CHECK-LABEL: func.func @wrong_erf_scale
// CHECK-NOT: colo.gelu
// CHECK: return
func.func @wrong_erf_scale(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %two = colo.constant dense<2.0> : tensor<f32>
  %d = colo.div %x, %two : tensor<8x64xf32>, tensor<f32>
  %e = colo.erf %d : tensor<8x64xf32>
  %one = colo.constant dense<1.0> : tensor<f32>
  %p = colo.add %e, %one : tensor<8x64xf32>, tensor<f32>
  %xp = colo.mul %x, %p : tensor<8x64xf32>, tensor<8x64xf32>
  %half = colo.constant dense<0.5> : tensor<f32>
  %y = colo.mul %xp, %half : tensor<8x64xf32>, tensor<f32>
  return %y : tensor<8x64xf32>
}

// 2 - erf(...) instead of 1 + erf(...).
// CHECK-LABEL: func.func @wrong_offset
// CHECK-NOT: colo.gelu
// CHECK: return
func.func @wrong_offset(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %sqrt2 = colo.constant dense<1.4142135> : tensor<f32>
  %d = colo.div %x, %sqrt2 : tensor<8x64xf32>, tensor<f32>
  %e = colo.erf %d : tensor<8x64xf32>
  %two = colo.constant dense<2.0> : tensor<f32>
  %p = colo.add %e, %two : tensor<8x64xf32>, tensor<f32>
  %xp = colo.mul %x, %p : tensor<8x64xf32>, tensor<8x64xf32>
  %half = colo.constant dense<0.5> : tensor<f32>
  %y = colo.mul %xp, %half : tensor<8x64xf32>, tensor<f32>
  return %y : tensor<8x64xf32>
}

// The gate multiplies a different value than erf reads (a GEGLU-like gate).
// CHECK-LABEL: func.func @other_value
// CHECK-NOT: colo.gelu
// CHECK: return
func.func @other_value(%x: tensor<8x64xf32>, %g: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %sqrt2 = colo.constant dense<1.4142135> : tensor<f32>
  %d = colo.div %x, %sqrt2 : tensor<8x64xf32>, tensor<f32>
  %e = colo.erf %d : tensor<8x64xf32>
  %one = colo.constant dense<1.0> : tensor<f32>
  %p = colo.add %e, %one : tensor<8x64xf32>, tensor<f32>
  %gp = colo.mul %g, %p : tensor<8x64xf32>, tensor<8x64xf32>
  %half = colo.constant dense<0.5> : tensor<f32>
  %y = colo.mul %gp, %half : tensor<8x64xf32>, tensor<f32>
  return %y : tensor<8x64xf32>
}

// x^2 in place of x^3 in the tanh form.
// CHECK-LABEL: func.func @tanh_wrong_power
// CHECK-NOT: colo.gelu
// CHECK: return
func.func @tanh_wrong_power(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %half = colo.constant dense<0.5> : tensor<f32>
  %hx = colo.mul %half, %x : tensor<f32>, tensor<8x64xf32>
  %two = colo.constant dense<2.0> : tensor<f32>
  %sq = colo.pow %x, %two : tensor<8x64xf32>, tensor<f32>
  %k = colo.constant dense<0.044715> : tensor<f32>
  %kc = colo.mul %k, %sq : tensor<f32>, tensor<8x64xf32>
  %inner = colo.add %x, %kc : tensor<8x64xf32>, tensor<8x64xf32>
  %c = colo.constant dense<0.7978845608> : tensor<f32>
  %arg = colo.mul %c, %inner : tensor<f32>, tensor<8x64xf32>
  %t = colo.tanh %arg : tensor<8x64xf32>
  %one = colo.constant dense<1.0> : tensor<f32>
  %p = colo.add %one, %t : tensor<f32>, tensor<8x64xf32>
  %y = colo.mul %hx, %p : tensor<8x64xf32>, tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// A wrong cubic coefficient (0.05 for 0.044715).
// CHECK-LABEL: func.func @tanh_wrong_coefficient
// CHECK-NOT: colo.gelu
// CHECK: return
func.func @tanh_wrong_coefficient(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %half = colo.constant dense<0.5> : tensor<f32>
  %hx = colo.mul %half, %x : tensor<f32>, tensor<8x64xf32>
  %three = colo.constant dense<3.0> : tensor<f32>
  %cube = colo.pow %x, %three : tensor<8x64xf32>, tensor<f32>
  %k = colo.constant dense<0.05> : tensor<f32>
  %kc = colo.mul %k, %cube : tensor<f32>, tensor<8x64xf32>
  %inner = colo.add %x, %kc : tensor<8x64xf32>, tensor<8x64xf32>
  %c = colo.constant dense<0.7978845608> : tensor<f32>
  %arg = colo.mul %c, %inner : tensor<f32>, tensor<8x64xf32>
  %t = colo.tanh %arg : tensor<8x64xf32>
  %one = colo.constant dense<1.0> : tensor<f32>
  %p = colo.add %one, %t : tensor<f32>, tensor<8x64xf32>
  %y = colo.mul %hx, %p : tensor<8x64xf32>, tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// A fourth factor: 0.5 * x * x * (1 + erf(x / sqrt(2))) is not a GELU.
// CHECK-LABEL: func.func @extra_factor
// CHECK-NOT: colo.gelu
// CHECK: return
func.func @extra_factor(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %sqrt2 = colo.constant dense<1.4142135> : tensor<f32>
  %d = colo.div %x, %sqrt2 : tensor<8x64xf32>, tensor<f32>
  %e = colo.erf %d : tensor<8x64xf32>
  %one = colo.constant dense<1.0> : tensor<f32>
  %p = colo.add %e, %one : tensor<8x64xf32>, tensor<f32>
  %xx = colo.mul %x, %x : tensor<8x64xf32>, tensor<8x64xf32>
  %xp = colo.mul %xx, %p : tensor<8x64xf32>, tensor<8x64xf32>
  %half = colo.constant dense<0.5> : tensor<f32>
  %y = colo.mul %xp, %half : tensor<8x64xf32>, tensor<f32>
  return %y : tensor<8x64xf32>
}
