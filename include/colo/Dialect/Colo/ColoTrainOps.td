#ifndef COLO_TRAIN_OPS
#define COLO_TRAIN_OPS

// Ops that only training steps contain: writes of model state, the backward
// ops whose gradients are not short compositions of forward ops, and the
// optimizer updates. Included by ColoOps.td.

//===----------------------------------------------------------------------===//
// Model state
//===----------------------------------------------------------------------===//

def Colo_GlobalStoreOp : Colo_CostedOp<"global_store",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     MemoryEffects<[MemWrite]>]> {
  let summary = "Replaces the value of a global";
  let description = [{
    The new value is what later `colo.global_load`s of the same global read,
    in this step and in the next ones (optimizer updates, running
    statistics, the step counter).
    ```mlir
    colo.global_store @"fc.weight", %w : tensor<10x64xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$global, Colo_Tensor:$value);
  let assemblyFormat = "$global `,` $value attr-dict `:` type($value)";
}

def Colo_GradientOp : Colo_CostedOp<"gradient",
    [Pure, SameOperandsAndResultType,
     DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Marks the gradient of a parameter (an identity)";
  let description = [{
    `colo-build-train-step` passes every parameter's gradient, summed over
    this step's batch, through one `colo.gradient` before clipping and the
    optimizer use it, so that the parallel plan passes find it: data
    parallelism all-reduces it, ZeRO reduce-scatters it. The value is the
    operand; lowering removes the op.
    ```mlir
    %g = colo.gradient %dw of @"fc.weight" : tensor<10x64xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$input, FlatSymbolRefAttr:$param);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = "$input `of` $param attr-dict `:` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Tensor parallelism
//===----------------------------------------------------------------------===//

def Colo_AllReduceGradOp : Colo_CostedOp<"all_reduce_grad",
    [Pure, SameOperandsAndResultType,
     DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Identity whose gradient is summed over mesh axes";
  let description = [{
    The entry of a column-parallel region (`colo-tensor-parallel`): every
    rank of `grid_axes` holds the whole input and computes its block of the
    region's outputs from it, so the input's gradient is the sum of the
    ranks' partial gradients. The forward value is the operand; the gradient
    rule (`colo-build-train-step`) is a `shard.all_reduce` with
    `reduction = sum` over the same axes (Megatron-LM's
    `copy_to_tensor_model_parallel_region`). Once the step is differentiated
    the op is an identity, and canonicalization removes it; the rewrites
    `colo-build-train-step` applies before differentiating do not.
    ```mlir
    %x = colo.all_reduce_grad %h on @mesh grid_axes = [1] : tensor<32x64xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$input, FlatSymbolRefAttr:$grid,
                       DenseI16ArrayAttr:$grid_axes);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = [{
    $input `on` $grid `grid_axes` `=` $grid_axes attr-dict `:` type($result)
  }];
  let hasCanonicalizer = 1;
}

def Colo_StopGradientOp : Colo_CostedOp<"stop_gradient",
    [Pure, SameOperandsAndResultType, Colo_DimensionMapOpInterface]> {
  let summary = "Identity through which no gradient flows";
  let description = [{
    PyTorch's `detach()`: the forward value is the operand, and
    differentiation treats the result as a constant. The vocabulary-parallel
    cross-entropy (`colo-vocab-parallel`) subtracts the maximum logit over
    all ranks through it: the loss does not depend on that shift, and the
    maximum's all-reduce has no gradient. The TorchScript importer makes one
    of each `aten::detach` of an activation. Like `colo.all_reduce_grad`, the
    op stays until the step is differentiated; canonicalization then removes
    it everywhere but in `@forward`, the model, which keeps it.
    ```mlir
    %m = colo.stop_gradient %max : tensor<4x15x1xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$input);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasCanonicalizer = 1;
}

def Colo_TransferOp : Colo_Op<"transfer", [SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Colo_CostOpInterface, ["getFlops"]>]> {
  let summary = "A tensor copied between device and host memory";
  let description = [{
    The result is the operand, in the host's memory (`to host`) or the
    device's (`to device`). `colo-offload` places these around the ops it
    runs on the host (the optimizer's update reads the gradient from the
    device and writes the parameter back); the step program runs them on
    the device's copy queue, beside the compute, and waits for each right
    before its result is needed. Its cost is the bytes it moves over the
    link: no FLOPs. Its result is a new buffer (an allocation, not a pure
    value), so that CSE keeps the copies a schedule places apart: a
    parameter fetched again for the backward after its forward copy was
    dropped.
    ```mlir
    %gh = colo.transfer %g to host : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, UnitAttr:$to_host);
  let results = (outs Res<AnyRankedTensor, "", [MemAlloc]>:$result);
  let assemblyFormat = [{
    $input `to` custom<TransferDirection>($to_host) attr-dict `:` type($result)
  }];
  let extraClassDeclaration = [{
    /// The bytes that cross the link.
    int64_t getLinkBytes();
  }];
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

def Colo_ScatterAddOp : Colo_CostedOp<"scatter_add", [Pure]> {
  let summary = "Adds slices into a zero tensor at the given indices (the adjoint of gather)";
  let description = [{
    The result has the type written after `->`; `updates` has the shape
    `result.shape[:axis] + indices.shape + result.shape[axis+1:]`, as
    `colo.gather` of the result would. Every update slice is added to the
    result slice its index names (repeated indices accumulate; negative ones
    count from the end). The gradient of `colo.gather` and of
    `colo.embedding` (axis 0).
    ```mlir
    %g = colo.scatter_add %d, %ids axis = 0
         : tensor<2x16x64xf32>, tensor<2x16xi64> -> tensor<1000x64xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$updates, Colo_IntTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = [{
    $updates `,` $indices `axis` `=` $axis attr-dict `:` type($updates) `,`
    type($indices) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Colo_SliceBackwardOp : Colo_CostedOp<"slice_backward", [Pure]> {
  let summary = "Places a slice's gradient into zeros of the sliced tensor's shape";
  let description = [{
    The adjoint of `colo.slice` with the same `start`, `limit` and `stride`:
    the result (of the type after `->`, the sliced tensor's) is zero except at
    the sliced positions, which hold `grad`.
    ```mlir
    %g = colo.slice_backward %d start = [0, 64] limit = [16, 128]
         stride = [1, 1] : tensor<16x64xf32> -> tensor<16x192xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$grad, DenseI64ArrayAttr:$start,
                       DenseI64ArrayAttr:$limit, DenseI64ArrayAttr:$stride);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `start` `=` $start `limit` `=` $limit `stride` `=` $stride attr-dict
    `:` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Colo_Conv2dBackwardInputOp : Colo_CostedOp<"conv2d_backward_input", [Pure,
    DeclareOpInterfaceMethods<Colo_CostOpInterface, ["getFlops", "getCostClass"]>]> {
  let summary = "Gradient of conv2d with respect to its input";
  let description = [{
    `grad` is the gradient of a `colo.conv2d` result whose input has the
    result type and whose filter is `filter`, with the same window
    attributes (a transposed convolution).
    ```mlir
    %dx = colo.conv2d_backward_input %dy, %w {strides = array<i64: 2, 2>,
            padding = array<i64: 3, 3, 3, 3>}
          : tensor<1x64x32x32xf32>, tensor<64x3x7x7xf32> -> tensor<1x3x64x64xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$grad, Colo_FloatTensor:$filter,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
      DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
      DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $filter attr-dict `:` type($grad) `,` type($filter) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Colo_Conv2dBackwardFilterOp : Colo_CostedOp<"conv2d_backward_filter", [Pure,
    DeclareOpInterfaceMethods<Colo_CostOpInterface, ["getFlops", "getCostClass"]>]> {
  let summary = "Gradient of conv2d with respect to its filter";
  let description = [{
    `grad` is the gradient of a `colo.conv2d` of `input` with a filter of the
    result type and the same window attributes.
    ```mlir
    %dw = colo.conv2d_backward_filter %x, %dy {strides = array<i64: 2, 2>,
            padding = array<i64: 3, 3, 3, 3>}
          : tensor<1x3x64x64xf32>, tensor<1x64x32x32xf32> -> tensor<64x3x7x7xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$input, Colo_FloatTensor:$grad,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
      DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
      DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad attr-dict `:` type($input) `,` type($grad) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Colo_MaxPool2dBackwardOp : Colo_CostedOp<"max_pool2d_backward", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "Gradient of max_pool2d";
  let description = [{
    Routes each window's gradient to the window's first maximal input
    element (row-major order within the window), as PyTorch does; the
    attributes are those of the forward `colo.max_pool2d`.
    ```mlir
    %dx = colo.max_pool2d_backward %x, %dy {kernel = array<i64: 3, 3>,
            strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>}
          : tensor<1x64x32x32xf32>, tensor<1x64x16x16xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$input, Colo_FloatTensor:$grad,
      DenseI64ArrayAttr:$kernel,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
      DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($input) `,` type($grad)";
  let hasVerifier = 1;
}

def Colo_AvgPool2dBackwardOp : Colo_CostedOp<"avg_pool2d_backward", [Pure]> {
  let summary = "Gradient of avg_pool2d";
  let description = [{
    Spreads each window's gradient evenly over the window (divided by the
    window size with or without padding, as the forward `count_include_pad`
    says); the result is the forward input's type.
    ```mlir
    %dx = colo.avg_pool2d_backward %dy {kernel = array<i64: 2, 2>,
            strides = array<i64: 2, 2>}
          : tensor<1x64x16x16xf32> -> tensor<1x64x32x32xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$grad, DenseI64ArrayAttr:$kernel,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
      DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
      UnitAttr:$count_include_pad);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let hasVerifier = 1;
}

def Colo_BatchNormBackwardOp : Colo_CostedOp<"batch_norm_backward", [Pure,
    AllTypesMatch<["input", "grad", "grad_input"]>,
    AllTypesMatch<["scale", "grad_scale", "grad_bias"]>]> {
  let summary = "Gradient of training-mode batch_norm";
  let description = [{
    Gradients of `colo.batch_norm ... {training}` with respect to its input,
    scale and bias; the batch statistics are recomputed from `input`.
    (Inference-mode batch norm is an affine map whose gradient the autodiff
    builds from elementwise ops.)
    ```mlir
    %dx, %dg, %db = colo.batch_norm_backward %x, %g, %dy {epsilon = 1.0e-05 : f64}
        : tensor<2x64x8x8xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$input, Colo_FloatTensor:$scale,
      Colo_FloatTensor:$grad, F64Attr:$epsilon);
  let results = (outs Colo_FloatTensor:$grad_input, Colo_FloatTensor:$grad_scale,
                      Colo_FloatTensor:$grad_bias);
  let assemblyFormat = [{
    $input `,` $scale `,` $grad attr-dict `:` type($input) `,` type($scale)
  }];
  let hasVerifier = 1;
}

def Colo_CrossEntropyBackwardOp : Colo_CostedOp<"cross_entropy_backward", [Pure,
    AllTypesMatch<["logits", "result"]>]> {
  let summary = "Gradient of cross_entropy with respect to the logits";
  let description = [{
    `grad * (softmax(logits) - target) / count` at positions whose label is
    not `ignore_index` (zero elsewhere), where `target` is the one-hot label
    mixed with the uniform distribution by `label_smoothing` and `count` the
    number of such positions; `grad` is the scalar gradient of the loss.
    ```mlir
    %dl = colo.cross_entropy_backward %logits, %labels, %dloss
          {ignore_index = -100 : i64, label_smoothing = 0.0 : f64}
          : tensor<2x15x1000xf32>, tensor<2x15xi64>, tensor<f32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$logits, Colo_IntTensor:$labels,
      0DTensorOf<[AnyFloat]>:$grad,
      DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
      DefaultValuedAttr<F64Attr, "0.0">:$label_smoothing);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $grad attr-dict `:` type($logits) `,` type($labels)
    `,` type($grad)
  }];
}

// cross_entropy and its gradient per position (colo-decompose-loss): each
// position's classes are independent of the others', so the CPU lowering
// computes them in pieces of rows, and only the sum and the count of the
// positions are taken over all of them.
def Colo_CrossEntropyRowsOp : Colo_CostedOp<"cross_entropy_rows", [DeclareOpInterfaceMethods<Colo_DimensionMapOpInterface, ["getDimensionMap"]>, Pure,
    InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<Colo_CostOpInterface, ["getFlops"]>]> {
  let summary = "Softmax cross-entropy of each position, not reduced";
  let description = [{
    PyTorch's `F.cross_entropy(..., reduction='none')`: `loss_i` of
    `colo.cross_entropy` at each position whose label is not `ignore_index`,
    0 at the others. The result has the labels' shape and the logits'
    element type.
    ```mlir
    %l = colo.cross_entropy_rows %logits, %labels {ignore_index = -100 : i64}
         : tensor<2x15x1000xf32>, tensor<2x15xi64>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$logits, Colo_IntTensor:$labels,
      DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
      DefaultValuedAttr<F64Attr, "0.0">:$label_smoothing);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels)
  }];
  let hasVerifier = 1;
}

def Colo_CrossEntropyRowsBackwardOp : Colo_CostedOp<"cross_entropy_rows_backward", [DeclareOpInterfaceMethods<Colo_DimensionMapOpInterface, ["getDimensionMap"]>, Pure,
    AllTypesMatch<["logits", "result"]>]> {
  let summary = "Gradient of cross_entropy_rows with respect to the logits";
  let description = [{
    `scale * (softmax(logits) - target)` at positions whose label is not
    `ignore_index` (zero elsewhere), with `target` as in
    `colo.cross_entropy_backward`; `scale` is a scalar of the logits'
    element type (a mean's gradient divided by the count of positions).
    ```mlir
    %dl = colo.cross_entropy_rows_backward %logits, %labels, %scale
          : tensor<2x15x1000xf32>, tensor<2x15xi64>, tensor<f32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$logits, Colo_IntTensor:$labels,
      0DTensorOf<[AnyFloat]>:$scale,
      DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
      DefaultValuedAttr<F64Attr, "0.0">:$label_smoothing);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels `,` $scale attr-dict `:` type($logits) `,` type($labels)
    `,` type($scale)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

// An update of one parameter: scalar learning rate (f32) and step (i64,
// counting from 1 at the first update) are operands, so schedules are IR.
class Colo_UpdateOp<string mnemonic, list<Trait> traits = []>
    : Colo_CostedOp<mnemonic, !listconcat(traits, [Pure])> {
  let hasVerifier = 1;
}

def Colo_SgdUpdateOp : Colo_UpdateOp<"sgd_update",
    [AllTypesMatch<["param", "grad", "momentum_buffer", "new_param",
                    "new_momentum_buffer"]>]> {
  let summary = "One step of SGD with momentum, dampening, Nesterov and weight decay";
  let description = [{
    PyTorch's `torch.optim.SGD`: `g = grad + weight_decay * param`; with
    momentum `buf = g` at step 1 and `momentum * buf + (1 - dampening) * g`
    after; the step direction is `g + momentum * buf` (Nesterov) or `buf`;
    `param -= lr * direction`. Without momentum the buffer is returned
    unchanged.
    ```mlir
    %p, %b = colo.sgd_update %w, %dw, %buf, %lr, %step
             {momentum = 0.9 : f64, dampening = 0.0 : f64, weight_decay = 0.0 : f64}
             : tensor<64xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$param, Colo_FloatTensor:$grad,
      Colo_FloatTensor:$momentum_buffer, Colo_F32Scalar:$lr,
      Colo_I64Scalar:$step, F64Attr:$momentum, F64Attr:$dampening,
      F64Attr:$weight_decay, UnitAttr:$nesterov);
  let results = (outs Colo_FloatTensor:$new_param,
                      Colo_FloatTensor:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad `,` $momentum_buffer `,` $lr `,` $step attr-dict `:` type($param)
  }];
  let extraClassDeclaration = "static constexpr int64_t kFlopsPerElement = 6;";
}

def Colo_AdamUpdateOp : Colo_UpdateOp<"adam_update",
    [AllTypesMatch<["param", "grad", "exp_avg", "exp_avg_sq", "new_param",
                    "new_exp_avg", "new_exp_avg_sq"]>]> {
  let summary = "One step of Adam or AdamW";
  let description = [{
    PyTorch's `torch.optim.Adam` / `AdamW` (`decoupled`): weight decay is
    added to the gradient (Adam) or multiplies the parameter by
    `1 - lr * weight_decay` (AdamW); `m = b1 m + (1 - b1) g`,
    `v = b2 v + (1 - b2) g^2`,
    `param -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)`.
    ```mlir
    %p, %m, %v = colo.adam_update %w, %dw, %m0, %v0, %lr, %step
        {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64,
         weight_decay = 0.01 : f64, decoupled} : tensor<64xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$param, Colo_FloatTensor:$grad,
      Colo_FloatTensor:$exp_avg, Colo_FloatTensor:$exp_avg_sq,
      Colo_F32Scalar:$lr, Colo_I64Scalar:$step, F64Attr:$beta1,
      F64Attr:$beta2, F64Attr:$epsilon, F64Attr:$weight_decay,
      UnitAttr:$decoupled);
  let results = (outs Colo_FloatTensor:$new_param, Colo_FloatTensor:$new_exp_avg,
                      Colo_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $lr `,` $step attr-dict
    `:` type($param)
  }];
  let extraClassDeclaration = "static constexpr int64_t kFlopsPerElement = 12;";
}

def Colo_LambUpdateOp : Colo_UpdateOp<"lamb_update",
    [AllTypesMatch<["param", "grad", "exp_avg", "exp_avg_sq", "new_param",
                    "new_exp_avg", "new_exp_avg_sq"]>]> {
  let summary = "One step of LAMB (layer-wise adaptive Adam)";
  let description = [{
    You et al. 2019, as Colossal-AI's Lamb: Adam moments with bias
    correction, `r = m_hat / (sqrt(v_hat) + eps) + weight_decay * param`,
    `trust = ||param|| / ||r||` (1 if either norm is 0),
    `param -= lr * trust * r`. The norms are over the whole parameter.
    ```mlir
    %p, %m, %v = colo.lamb_update %w, %dw, %m0, %v0, %lr, %step
        {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-06 : f64,
         weight_decay = 0.01 : f64} : tensor<64xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$param, Colo_FloatTensor:$grad,
      Colo_FloatTensor:$exp_avg, Colo_FloatTensor:$exp_avg_sq,
      Colo_F32Scalar:$lr, Colo_I64Scalar:$step, F64Attr:$beta1,
      F64Attr:$beta2, F64Attr:$epsilon, F64Attr:$weight_decay);
  let results = (outs Colo_FloatTensor:$new_param, Colo_FloatTensor:$new_exp_avg,
                      Colo_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $lr `,` $step attr-dict
    `:` type($param)
  }];
  let extraClassDeclaration = "static constexpr int64_t kFlopsPerElement = 16;";
}

def Colo_LarsUpdateOp : Colo_UpdateOp<"lars_update",
    [AllTypesMatch<["param", "grad", "momentum_buffer", "new_param",
                    "new_momentum_buffer"]>]> {
  let summary = "One step of LARS (layer-wise adaptive SGD with momentum)";
  let description = [{
    You et al. 2017, as Colossal-AI's Lars:
    `local_lr = trust_coefficient * ||param|| / (||grad|| + weight_decay *
    ||param|| + epsilon)` (1 if either norm is 0),
    `buf = momentum * buf + lr * local_lr * (grad + weight_decay * param)`,
    `param -= buf`.
    ```mlir
    %p, %b = colo.lars_update %w, %dw, %buf, %lr, %step
             {momentum = 0.9 : f64, weight_decay = 0.0001 : f64,
              trust_coefficient = 0.001 : f64, epsilon = 1.0e-08 : f64}
             : tensor<64xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$param, Colo_FloatTensor:$grad,
      Colo_FloatTensor:$momentum_buffer, Colo_F32Scalar:$lr,
      Colo_I64Scalar:$step, F64Attr:$momentum, F64Attr:$weight_decay,
      F64Attr:$trust_coefficient, F64Attr:$epsilon);
  let results = (outs Colo_FloatTensor:$new_param,
                      Colo_FloatTensor:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad `,` $momentum_buffer `,` $lr `,` $step attr-dict `:` type($param)
  }];
  let extraClassDeclaration = "static constexpr int64_t kFlopsPerElement = 10;";
}

#endif // COLO_TRAIN_OPS
