#ifndef COLO_PASSES
#define COLO_PASSES

include "mlir/Pass/PassBase.td"

def ColoRaiseLayerNorm : Pass<"colo-raise-layer-norm"> {
  let summary = "Raises decomposed layer normalization to colo.layer_norm";
  let description = [{
    Exporters at old opsets, and hand-written models, spell layer norm as
    `(x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps)`, optionally followed by
    `* scale + bias`. This pass recognizes that graph (with `pow(d, 2)` or
    `d * d`, `div` or `mul` by a reciprocal) over trailing dimensions and
    replaces it with one `colo.layer_norm`, absorbing the affine ops.

    Before:
    ```mlir
    %m = colo.reduce_mean %x dims = [2] {keep_dims} : tensor<2x8x64xf32>
    %d = colo.sub %x, %m : tensor<2x8x64xf32>, tensor<2x8x1xf32>
    ...
    %y = colo.div %d, %s : tensor<2x8x64xf32>, tensor<2x8x1xf32>
    ```
    After:
    ```mlir
    %y = colo.layer_norm %x {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<2x8x64xf32>
    ```
  }];
  let statistics = [
    Statistic<"numRaised", "num-raised", "Layer norms raised">,
  ];
}

def ColoRaiseRmsNorm : Pass<"colo-raise-rms-norm"> {
  let summary = "Raises decomposed RMS normalization to colo.rms_norm";
  let description = [{
    Recognizes `x * rsqrt(mean(x^2) + eps)` (Llama's RMSNorm; rsqrt spelled
    as `rsqrt`, `reciprocal(sqrt)` or `1 / sqrt`), optionally followed by a
    multiplication with a scale of the normalized shape, and replaces it with
    `colo.rms_norm`.
  }];
  let statistics = [
    Statistic<"numRaised", "num-raised", "RMS norms raised">,
  ];
}

def ColoRaiseGelu : Pass<"colo-raise-gelu"> {
  let summary = "Raises erf and tanh spellings of GELU to colo.gelu";
  let description = [{
    Recognizes `0.5 * x * (1 + erf(x / sqrt(2)))` and
    `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))` in any
    association of the products and replaces them with `colo.gelu` with
    approximation `none` or `tanh`.
  }];
  let statistics = [
    Statistic<"numRaised", "num-raised", "GELUs raised">,
  ];
}

def ColoRaiseAttention : Pass<"colo-raise-attention"> {
  let summary = "Raises softmax(q k^T * scale + mask) v to colo.attention";
  let description = [{
    Recognizes scaled dot-product attention as the PyTorch ONNX exporters
    decompose it and replaces it with one `colo.attention`. Rooted at
    `matmul(p, v)` with `p = softmax(scores)` over the last axis, optionally
    followed by `colo.dropout` (which becomes the `dropout` attribute); both
    must have no other use. The scores are `matmul(q, kT)`:

    - scaled by splat constants on `q`, on `kT` or on the product (`mul` or
      `div`); `scale` is their product, and 1 when the model folded it into a
      projection;
    - `kT` is a transpose of some tensor, seen through reshapes that only
      regroup its leading dimensions: `transpose(k, [0, 1, 3, 2])`, the
      `[b*h, t, d]` round trip, or `transpose(x, [0, 2, 3, 1])` of the
      pre-head-split `[b, s, h, d]` tensor; the pass builds `k` by swapping the
      permutation's last two entries;
    - masked, above any scale, by an added tensor or by a `select` that puts
      -inf where the mask is false (as the additive `select(c, 0, -inf)`). A
      constant mask that is causal (0 on and below the diagonal of a square
      `[s, s]`, -inf or at most -1e9 above) sets `causal`; an all-zero one is
      dropped; one other mask becomes the `mask` operand.

    Grouped-query attention's repeat_kv (`reshape` to `[b, hkv, 1, t, d]`,
    `broadcast_to` `[b, hkv, n, t, d]`, `reshape` to `[b, hkv * n, t, d]`), and
    multi-query attention's `broadcast_to` from `[b, 1, t, d]`, are peeled off
    k and v when both have the same. Anything else (another softmax axis,
    a non-constant scale, a mask that widens the scores, a `kT` that is not a
    transpose, broadcast batch dimensions) is left as it is.

    Before:
    ```mlir
    %kt = colo.transpose %k permutation = [0, 1, 3, 2] : tensor<2x4x16x8xf32>
    %qk = colo.matmul %q, %kt : tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>
    %sc = colo.mul %qk, %c : tensor<2x4x16x16xf32>, tensor<f32>
    %sm = colo.add %sc, %causal : tensor<2x4x16x16xf32>, tensor<16x16xf32>
    %p = colo.softmax %sm axis = 3 : tensor<2x4x16x16xf32>
    %o = colo.matmul %p, %v : tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>
    ```
    After:
    ```mlir
    %o = colo.attention %q, %k, %v {causal, scale = 0.35355339059327379 : f64}
         : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>
    ```
  }];
  let statistics = [
    Statistic<"numRaised", "num-raised", "Attentions raised">,
  ];
}

def ColoRaiseSilu : Pass<"colo-raise-silu"> {
  let summary = "Raises x * sigmoid(x) to colo.silu";
  let description = [{
    Exporters spell SiLU (Swish, Llama's MLP activation) as
    `x * sigmoid(x)`; this pass replaces the product with `colo.silu`.

    Before:
    ```mlir
    %s = colo.sigmoid %x : tensor<2x8xf32>
    %y = colo.mul %x, %s : tensor<2x8xf32>, tensor<2x8xf32>
    ```
    After:
    ```mlir
    %y = colo.silu %x : tensor<2x8xf32>
    ```
  }];
  let statistics = [
    Statistic<"numRaised", "num-raised", "SiLUs raised">,
  ];
}

#endif // COLO_PASSES
