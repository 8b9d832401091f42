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

#endif // COLO_PASSES
