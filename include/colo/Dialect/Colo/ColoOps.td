#ifndef COLO_OPS
#define COLO_OPS

include "colo/Dialect/Colo/ColoDialect.td"
include "colo/Dialect/Colo/ColoAttrs.td"
include "colo/Dialect/Colo/ColoInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Colo_Tensor : StaticShapeTensorOf<[AnyType]>;
def Colo_FloatTensor : StaticShapeTensorOf<[AnyFloat]>;
def Colo_IntTensor : StaticShapeTensorOf<[AnySignlessInteger]>;
def Colo_BoolTensor : StaticShapeTensorOf<[I1]>;
def Colo_F32Scalar : 0DTensorOf<[F32]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getF32Type())">;
def Colo_I64Scalar : 0DTensorOf<[I64]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getIntegerType(64))">;

// Ops whose cost is computed by the default model (bytes moved, no FLOPs
// unless the op declares kFlopsPerElement).
class Colo_CostedOp<string mnemonic, list<Trait> traits = []>
    : Colo_Op<mnemonic, !listconcat(traits, [Colo_CostOpInterface])>;

//===----------------------------------------------------------------------===//
// Model state
//===----------------------------------------------------------------------===//

def Colo_GlobalOp : Colo_Op<"global", [Symbol]> {
  let summary = "A tensor of model state: parameter, buffer or optimizer state";
  let description = [{
    Declares a named tensor that lives across training steps. Its initial value
    is one of: inline data (any `ElementsAttr`, usually a `dense_resource` blob
    that dumps elide), a lazy reference to external data (`#colo.external`,
    nothing is read at import), or an initializer spec (`#colo.init`). A global
    without a value is filled by the runtime. `trainable` marks parameters that
    the optimizer updates; buffers such as batch-norm running statistics are
    not trainable. `shard` (`#colo.shard`) says which block of it each rank
    holds under tensor parallelism or ZeRO-3.

    ```mlir
    colo.global trainable @"h.0.attn.c_attn.weight" : tensor<64x192xf32>
        = #colo.init<distribution = "normal", a = 0.0 : f64, b = 2.0e-02 : f64>
    colo.global @"bn1.running_mean" : tensor<64xf32> = dense<0.0> : tensor<64xf32>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<Colo_Tensor>:$type,
                       OptionalAttr<AnyAttr>:$initial_value,
                       UnitAttr:$trainable,
                       OptionalAttr<Colo_ShardAttr>:$shard);
  let assemblyFormat = [{
    (`trainable` $trainable^)? $sym_name `:` $type
    (`=` $initial_value^)? attr-dict
  }];
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
  let hasVerifier = 1;
}

def Colo_GlobalLoadOp : Colo_CostedOp<"global_load",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>, MemoryEffects<[MemRead]>]> {
  let summary = "Reads the current value of a global";
  let description = [{
    ```mlir
    %w = colo.global_load @"fc.weight" : tensor<10x64xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$global);
  let results = (outs Colo_Tensor:$result);
  let assemblyFormat = "$global attr-dict `:` type($result)";
}

def Colo_ConstantOp : Colo_CostedOp<"constant", [ConstantLike, Pure,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "A constant tensor";
  let description = [{
    ```mlir
    %c = colo.constant dense<[1.0, 2.0]> : tensor<2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Colo_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Colo_UnaryOp<string mnemonic, int flopsPerElement, list<Trait> traits = []>
    : Colo_CostedOp<mnemonic, !listconcat(traits,
          [Pure, Elementwise, SameOperandsAndResultType,
           Colo_DimensionMapOpInterface])> {
  let arguments = (ins Colo_FloatTensor:$input);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let extraClassDeclaration = "static constexpr int64_t kFlopsPerElement = "
                              # flopsPerElement # ";";
  let description = [{
    Applies the function to every element; the result has the input's type.

    ```mlir
    %y = colo.}] # mnemonic # [{ %x : tensor<4x8xf32>
    ```
  }];
}

def Colo_NegOp : Colo_UnaryOp<"neg", 1> { let summary = "-x"; }
def Colo_AbsOp : Colo_UnaryOp<"abs", 1> {
  let summary = "|x|";
  let description = [{
    Its gradient is the gradient times sign(x), 0 at 0 (PyTorch's).
  }];
}
def Colo_ExpOp : Colo_UnaryOp<"exp", 1> { let summary = "e^x"; }
def Colo_LogOp : Colo_UnaryOp<"log", 1> { let summary = "natural logarithm"; }
def Colo_SqrtOp : Colo_UnaryOp<"sqrt", 1> { let summary = "square root"; }
def Colo_RsqrtOp : Colo_UnaryOp<"rsqrt", 2> { let summary = "1 / sqrt(x)"; }
def Colo_ReciprocalOp : Colo_UnaryOp<"reciprocal", 1> { let summary = "1 / x"; }
def Colo_TanhOp : Colo_UnaryOp<"tanh", 1> { let summary = "hyperbolic tangent"; }
def Colo_ErfOp : Colo_UnaryOp<"erf", 1> { let summary = "Gauss error function"; }
def Colo_SigmoidOp : Colo_UnaryOp<"sigmoid", 3> { let summary = "1 / (1 + e^-x)"; }
def Colo_ReluOp : Colo_UnaryOp<"relu", 1> { let summary = "max(x, 0)"; }
def Colo_SiluOp : Colo_UnaryOp<"silu", 4> { let summary = "x * sigmoid(x)"; }
def Colo_CosOp : Colo_UnaryOp<"cos", 1> { let summary = "cosine"; }
def Colo_SinOp : Colo_UnaryOp<"sin", 1> { let summary = "sine"; }

def Colo_GeluOp : Colo_UnaryOp<"gelu", 8> {
  let summary = "Gaussian error linear unit";
  let description = [{
    `x * Phi(x)` with the normal CDF `Phi` evaluated exactly through erf
    (`none`) or by the tanh approximation used by GPT-2 (`tanh`).

    ```mlir
    %y = colo.gelu %x approximation = tanh : tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$input,
      DefaultValuedAttr<Colo_GeluApproximationAttr,
                        "::colo::GeluApproximation::none">:$approximation);
  let assemblyFormat =
      "$input (`approximation` `=` $approximation^)? attr-dict `:` type($input)";
}

def Colo_ClampOp : Colo_UnaryOp<"clamp", 2> {
  let summary = "min(max(x, min), max)";
  let description = [{
    Clamps every element into `[min, max]` (ReLU6 is `clamp 0, 6`).

    ```mlir
    %y = colo.clamp %x min = 0.0 max = 6.0 : tensor<8xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$input, F64Attr:$min, F64Attr:$max);
  let assemblyFormat =
      "$input `min` `=` $min `max` `=` $max attr-dict `:` type($input)";
  let hasVerifier = 1;
}

// Binary ops broadcast like NumPy; the result type is inferred.
class Colo_BinaryOp<string mnemonic, int flopsPerElement, list<Trait> traits = []>
    : Colo_CostedOp<mnemonic, !listconcat(traits,
          [Pure, InferTypeOpAdaptor, Colo_DimensionMapOpInterface])> {
  let arguments = (ins Colo_Tensor:$lhs, Colo_Tensor:$rhs);
  let results = (outs Colo_Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
  let extraClassDeclaration = "static constexpr int64_t kFlopsPerElement = "
                              # flopsPerElement # ";";
  let description = [{
    Elementwise with NumPy broadcasting; both operands have the same element
    type and the result shape is the broadcast of both shapes.

    ```mlir
    %z = colo.}] # mnemonic # [{ %x, %y : tensor<4x8xf32>, tensor<8xf32>
    ```
  }];
}

def Colo_AddOp : Colo_BinaryOp<"add", 1, [Commutative]> {
  let summary = "x + y"; let hasFolder = 1;
}
def Colo_SubOp : Colo_BinaryOp<"sub", 1> { let summary = "x - y"; let hasFolder = 1; }
def Colo_MulOp : Colo_BinaryOp<"mul", 1, [Commutative]> {
  let summary = "x * y"; let hasFolder = 1;
}
def Colo_DivOp : Colo_BinaryOp<"div", 1> { let summary = "x / y"; let hasFolder = 1; }
def Colo_PowOp : Colo_BinaryOp<"pow", 1> { let summary = "x ^ y"; }
def Colo_MaximumOp : Colo_BinaryOp<"maximum", 1, [Commutative]> {
  let summary = "max(x, y)";
}
def Colo_MinimumOp : Colo_BinaryOp<"minimum", 1, [Commutative]> {
  let summary = "min(x, y)";
}

def Colo_CompareOp : Colo_CostedOp<"compare", [Colo_DimensionMapOpInterface, Pure, InferTypeOpAdaptor]> {
  let summary = "Elementwise comparison producing i1";
  let description = [{
    ```mlir
    %m = colo.compare lt, %x, %y : tensor<4x4xi64>, tensor<4x4xi64>
    ```
  }];
  let arguments = (ins Colo_ComparePredicateAttr:$predicate,
                       Colo_Tensor:$lhs, Colo_Tensor:$rhs);
  let results = (outs Colo_BoolTensor:$result);
  let assemblyFormat =
      "$predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
}

def Colo_SelectOp : Colo_CostedOp<"select", [Colo_DimensionMapOpInterface, Pure, InferTypeOpAdaptor]> {
  let summary = "cond ? x : y, with broadcasting";
  let description = [{
    ```mlir
    %z = colo.select %mask, %x, %y : tensor<1x1x4x4xi1>, tensor<2x4x4x4xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Colo_BoolTensor:$condition, Colo_Tensor:$true_value,
                       Colo_Tensor:$false_value);
  let results = (outs Colo_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $true_value `,` $false_value attr-dict `:`
    type($condition) `,` type($true_value) `,` type($false_value)
  }];
}

// Not `Elementwise`: that trait's shape check runs before `verify()` and
// names neither type; `verify()` checks the same shapes and names both.
def Colo_ConvertOp : Colo_CostedOp<"convert", [Colo_DimensionMapOpInterface, Pure]> {
  let summary = "Converts the element type";
  let description = [{
    The shape is unchanged.

    ```mlir
    %y = colo.convert %x : tensor<4xf32> to tensor<4xbf16>
    ```
  }];
  let arguments = (ins Colo_Tensor:$input);
  let results = (outs Colo_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def Colo_MatmulOp : Colo_CostedOp<"matmul", [DeclareOpInterfaceMethods<Colo_DimensionMapOpInterface, ["getDimensionMap"]>, Pure, InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<Colo_CostOpInterface, ["getFlops", "getCostClass"]>]> {
  let summary = "Batched matrix product with broadcast batch dimensions";
  let description = [{
    `lhs[..., m, k] x rhs[..., k, n] -> [..., m, n]`; both operands have rank
    at least 2 and their batch dimensions broadcast like NumPy. Costs
    `2 * batch * m * n * k` FLOPs.

    ```mlir
    %y = colo.matmul %x, %w : tensor<8x128x64xf32>, tensor<64x256xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$lhs, Colo_FloatTensor:$rhs);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
}

def Colo_Conv2dOp : Colo_CostedOp<"conv2d", [DeclareOpInterfaceMethods<Colo_DimensionMapOpInterface, ["getDimensionMap"]>, Pure, InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<Colo_CostOpInterface, ["getFlops", "getCostClass"]>]> {
  let summary = "2-D convolution, NCHW input and OIHW filter";
  let description = [{
    Grouped, strided, dilated and padded (`padding` is top, left, bottom,
    right) convolution with an optional per-channel bias.

    ```mlir
    %y = colo.conv2d %x, %w bias %b {strides = array<i64: 2, 2>,
           padding = array<i64: 3, 3, 3, 3>}
         : tensor<1x3x64x64xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$input, Colo_FloatTensor:$filter,
      Optional<Colo_FloatTensor>:$bias,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
      DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
      DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter (`bias` $bias^)? attr-dict `:` type($input) `,`
    type($filter) (`,` type($bias)^)?
  }];
}

def Colo_AttentionOp : Colo_CostedOp<"attention", [DeclareOpInterfaceMethods<Colo_DimensionMapOpInterface, ["getDimensionMap"]>, Pure, InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<Colo_CostOpInterface, ["getFlops", "getCostClass"]>]> {
  let summary = "Scaled dot-product attention with grouped key/value heads";
  let description = [{
    `softmax(q k^T * scale + mask) v` over `q: [b, h, s, d]`,
    `k: [b, hkv, t, d]`, `v: [b, hkv, t, dv]` with `h` a multiple of `hkv`
    (grouped-query attention: query head `i` uses key/value head
    `i / (h / hkv)`); `causal` masks keys after the query position. The
    optional additive mask broadcasts to `[b, h, s, t]`. `dropout` is the
    probability with which training zeroes each attention probability (the
    rest are scaled by `1 / (1 - dropout)`, as `colo.dropout` does); it lies
    in `[0, 1)` and defaults to 0. With 16-bit operands (mixed precision)
    the scores are scaled, masked and normalized in f32 and the mask may be
    f32.

    ```mlir
    %o = colo.attention %q, %k, %v {scale = 0.125 : f64, causal, dropout = 0.1 : f64}
         : tensor<2x4x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$query, Colo_FloatTensor:$key,
      Colo_FloatTensor:$value, Optional<Colo_FloatTensor>:$mask,
      F64Attr:$scale, UnitAttr:$causal,
      DefaultValuedAttr<F64Attr, "0.0">:$dropout);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^)? attr-dict `:` type($query) `,`
    type($key) `,` type($value) (`,` type($mask)^)?
  }];
  // Without dropout, as inference and the importers build it.
  let builders = [
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$query,
      "::mlir::Value":$key, "::mlir::Value":$value, "::mlir::Value":$mask,
      "::mlir::FloatAttr":$scale, "::mlir::UnitAttr":$causal), [{
      build($_builder, $_state, result, query, key, value, mask, scale, causal,
            $_builder.getF64FloatAttr(0.0));
    }]>
  ];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalization, activation with state, and regularization
//===----------------------------------------------------------------------===//

def Colo_SoftmaxOp : Colo_CostedOp<"softmax", [DeclareOpInterfaceMethods<Colo_DimensionMapOpInterface, ["getDimensionMap"]>, Pure, SameOperandsAndResultType]> {
  let summary = "exp(x) / sum(exp(x)) along one axis";
  let description = [{
    ```mlir
    %p = colo.softmax %x axis = 3 : tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = "$input `axis` `=` $axis attr-dict `:` type($input)";
  let extraClassDeclaration = "static constexpr int64_t kFlopsPerElement = 5;";
  let hasVerifier = 1;
}

def Colo_CumSumOp : Colo_CostedOp<"cumsum", [DeclareOpInterfaceMethods<Colo_DimensionMapOpInterface, ["getDimensionMap"]>, Pure, SameOperandsAndResultType]> {
  let summary = "Running sums along one axis";
  let description = [{
    Element `i` along `axis` is the sum of the input's elements `0..i`
    (`exclusive`: `0..i-1`; `reverse`: from `i` to the end), added in that
    order: ONNX CumSum, torch.cumsum. RoBERTa numbers its positions with it
    from the ids. Its gradient is the cumsum of the gradient the other way.

    ```mlir
    %p = colo.cumsum %m axis = 1 : tensor<2x16xi64>
    ```
  }];
  let arguments = (ins Colo_Tensor:$input, I64Attr:$axis, UnitAttr:$exclusive,
                       UnitAttr:$reverse);
  let results = (outs Colo_Tensor:$result);
  let assemblyFormat = "$input `axis` `=` $axis attr-dict `:` type($input)";
  let extraClassDeclaration = "static constexpr int64_t kFlopsPerElement = 1;";
  let hasVerifier = 1;
}

def Colo_LogSoftmaxOp : Colo_CostedOp<"log_softmax", [DeclareOpInterfaceMethods<Colo_DimensionMapOpInterface, ["getDimensionMap"]>, Pure, SameOperandsAndResultType]> {
  let summary = "x - log(sum(exp(x))) along one axis";
  let description = [{
    ```mlir
    %p = colo.log_softmax %x axis = 1 : tensor<8x10xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = "$input `axis` `=` $axis attr-dict `:` type($input)";
  let extraClassDeclaration = "static constexpr int64_t kFlopsPerElement = 5;";
  let hasVerifier = 1;
}

def Colo_LayerNormOp : Colo_CostedOp<"layer_norm", [DeclareOpInterfaceMethods<Colo_DimensionMapOpInterface, ["getDimensionMap"]>, Pure,
    AllTypesMatch<["input", "result"]>, AttrSizedOperandSegments]> {
  let summary = "Layer normalization over the trailing dimensions";
  let description = [{
    Normalizes over dimensions `[axis, rank)` to zero mean and unit variance
    (biased), then applies the optional elementwise `scale` and `bias`, whose
    shape is the normalized shape.

    ```mlir
    %y = colo.layer_norm %x scale %g : tensor<64xf32> bias %b : tensor<64xf32>
         {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$input,
      Optional<Colo_FloatTensor>:$scale, Optional<Colo_FloatTensor>:$bias,
      I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`scale` $scale^ `:` type($scale))? (`bias` $bias^ `:` type($bias))?
    attr-dict `:` type($input)
  }];
  let extraClassDeclaration = "static constexpr int64_t kFlopsPerElement = 8;";
  let hasVerifier = 1;
}

def Colo_RmsNormOp : Colo_CostedOp<"rms_norm", [DeclareOpInterfaceMethods<Colo_DimensionMapOpInterface, ["getDimensionMap"]>, Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "Root-mean-square normalization over the trailing dimensions";
  let description = [{
    `x / sqrt(mean(x^2) + epsilon) * scale` over dimensions `[axis, rank)`
    (Llama's RMSNorm).

    ```mlir
    %y = colo.rms_norm %x scale %g : tensor<64xf32>
         {axis = 2 : i64, epsilon = 1.0e-06 : f64} : tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$input,
      Optional<Colo_FloatTensor>:$scale, I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`scale` $scale^ `:` type($scale))? attr-dict `:` type($input)
  }];
  let extraClassDeclaration = "static constexpr int64_t kFlopsPerElement = 5;";
  let hasVerifier = 1;
}

def Colo_BatchNormOp : Colo_CostedOp<"batch_norm", [DeclareOpInterfaceMethods<Colo_DimensionMapOpInterface, ["getDimensionMap"]>, Pure,
    AllTypesMatch<["input", "result"]>,
    AllTypesMatch<["scale", "bias", "running_mean", "running_var",
                   "new_running_mean", "new_running_var"]>]> {
  let summary = "Batch normalization over N, H, W of an NC... tensor";
  let description = [{
    In `training` mode normalizes with the batch statistics and returns the
    running statistics updated with `momentum`
    (`new = (1 - momentum) * running + momentum * batch`, unbiased variance,
    as PyTorch does); otherwise normalizes with the running statistics and
    returns them unchanged.

    With `sync_grid` and `sync_axes` (set by `colo-split-batch` under data
    parallelism) the input is one rank's slice of the batch and the training
    statistics are those of the whole batch, over every rank of those grid
    axes: PyTorch's SyncBatchNorm. `colo-build-train-step` expands such a
    training-mode batch norm into its sums, their `shard.all_reduce`s and the
    normalization; it does not reach the interpreter or the lowering.

    ```mlir
    %y, %m, %v = colo.batch_norm %x, %g, %b, %rm, %rv
        {epsilon = 1.0e-05 : f64, momentum = 0.1 : f64, training}
        : tensor<2x64x8x8xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$input, Colo_FloatTensor:$scale,
      Colo_FloatTensor:$bias, Colo_FloatTensor:$running_mean,
      Colo_FloatTensor:$running_var, F64Attr:$epsilon, F64Attr:$momentum,
      UnitAttr:$training, OptionalAttr<FlatSymbolRefAttr>:$sync_grid,
      OptionalAttr<DenseI16ArrayAttr>:$sync_axes);
  let results = (outs Colo_FloatTensor:$result,
                      Colo_FloatTensor:$new_running_mean,
                      Colo_FloatTensor:$new_running_var);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $running_mean `,` $running_var attr-dict
    `:` type($input) `,` type($scale)
  }];
  let extraClassDeclaration = "static constexpr int64_t kFlopsPerElement = 7;";
  let hasVerifier = 1;
}

def Colo_DropoutOp : Colo_CostedOp<"dropout", [Colo_DimensionMapOpInterface, Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "Zeroes elements with probability `ratio` and rescales the rest";
  let description = [{
    Training-mode dropout: each element is kept with probability `1 - ratio`
    and scaled by `1 / (1 - ratio)`. The random stream is counter-based: with
    a `key` (an i64 scalar; the train step derives one per op and step), the
    element at row-major index `i` is dropped when the top 24 bits of the
    splitmix64 finalizer of `key * 0x9e3779b97f4a7c15 + i` are below
    `ratio * 2^24`, so a run is reproducible and the backward pass applies the
    same mask by calling dropout on the gradient with the same key. Without a
    key (as imported, for inference) the op keeps every element.
    ```mlir
    %y = colo.dropout %x key %k ratio = 1.0e-01 : tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$input, Optional<Colo_I64Scalar>:$key,
                       F64Attr:$ratio);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`key` $key^)? `ratio` `=` $ratio attr-dict `:` type($input)
  }];
  // Without a key, as the importers and inference build it.
  let builders = [
    OpBuilder<(ins "::mlir::Type":$result, "::mlir::Value":$input,
      "::mlir::FloatAttr":$ratio), [{
      build($_builder, $_state, result, input, ::mlir::Value(), ratio);
    }]>,
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::FloatAttr":$ratio), [{
      build($_builder, $_state, input.getType(), input, ::mlir::Value(), ratio);
    }]>
  ];
  let extraClassDeclaration = "static constexpr int64_t kFlopsPerElement = 2;";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Reductions and pooling
//===----------------------------------------------------------------------===//

class Colo_ReduceOp<string mnemonic>
    : Colo_CostedOp<mnemonic, [Pure, InferTypeOpAdaptor,
                               DeclareOpInterfaceMethods<Colo_DimensionMapOpInterface, ["getDimensionMap"]>]> {
  let arguments = (ins Colo_Tensor:$input, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keep_dims);
  let results = (outs Colo_Tensor:$result);
  let assemblyFormat = "$input `dims` `=` $dims attr-dict `:` type($input)";
  let extraClassDeclaration = "static constexpr int64_t kFlopsPerElement = 1;";
  let description = [{
    Reduces the listed dimensions (sorted, unique, in range); `keep_dims`
    keeps them with size 1.

    ```mlir
    %s = colo.}] # mnemonic # [{ %x dims = [1] {keep_dims} : tensor<4x8xf32>
    ```
  }];
}
def Colo_ReduceSumOp : Colo_ReduceOp<"reduce_sum"> { let summary = "Sum over dims"; }
def Colo_ReduceMeanOp : Colo_ReduceOp<"reduce_mean"> { let summary = "Mean over dims"; }
def Colo_ReduceMaxOp : Colo_ReduceOp<"reduce_max"> { let summary = "Maximum over dims"; }

class Colo_Pool2dOp<string mnemonic> : Colo_CostedOp<mnemonic,
    [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Colo_DimensionMapOpInterface, ["getDimensionMap"]>,
     DeclareOpInterfaceMethods<Colo_CostOpInterface, ["getFlops"]>]> {
  let arguments = (ins Colo_FloatTensor:$input, DenseI64ArrayAttr:$kernel,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
      DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
      UnitAttr:$count_include_pad);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let description = [{
    Pools NCHW windows of size `kernel` (strided, padded top, left, bottom,
    right). `count_include_pad` only matters for averages.

    ```mlir
    %y = colo.}] # mnemonic # [{ %x {kernel = array<i64: 3, 3>,
           strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>}
         : tensor<1x64x32x32xf32>
    ```
  }];
}
def Colo_MaxPool2dOp : Colo_Pool2dOp<"max_pool2d"> { let summary = "2-D max pooling"; }
def Colo_AvgPool2dOp : Colo_Pool2dOp<"avg_pool2d"> { let summary = "2-D average pooling"; }

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Colo_ReshapeOp : Colo_CostedOp<"reshape", [Pure,
    DeclareOpInterfaceMethods<Colo_CostOpInterface, ["getBytesRead", "getBytesWritten"]>]> {
  let summary = "Reinterprets the elements in a new shape";
  let description = [{
    The element count and type are unchanged; row-major order is kept, so a
    reshape moves no data.

    ```mlir
    %y = colo.reshape %x : tensor<2x16x64xf32> -> tensor<32x64xf32>
    ```
  }];
  let arguments = (ins Colo_Tensor:$input);
  let results = (outs Colo_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Colo_TransposeOp : Colo_CostedOp<"transpose", [DeclareOpInterfaceMethods<Colo_DimensionMapOpInterface, ["getDimensionMap"]>, Pure, InferTypeOpAdaptor]> {
  let summary = "Permutes dimensions";
  let description = [{
    Result dimension `i` is input dimension `permutation[i]`.

    ```mlir
    %y = colo.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32>
    ```
  }];
  let arguments = (ins Colo_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Colo_Tensor:$result);
  let assemblyFormat =
      "$input `permutation` `=` $permutation attr-dict `:` type($input)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Colo_SliceOp : Colo_CostedOp<"slice", [DeclareOpInterfaceMethods<Colo_DimensionMapOpInterface, ["getDimensionMap"]>, Pure, InferTypeOpAdaptor]> {
  let summary = "Strided static slice";
  let description = [{
    Takes `[start, limit)` with positive `stride` along every dimension.

    ```mlir
    %y = colo.slice %x start = [0, 64] limit = [16, 128] stride = [1, 1]
         : tensor<16x192xf32>
    ```
  }];
  let arguments = (ins Colo_Tensor:$input, DenseI64ArrayAttr:$start,
                       DenseI64ArrayAttr:$limit, DenseI64ArrayAttr:$stride);
  let results = (outs Colo_Tensor:$result);
  let assemblyFormat = [{
    $input `start` `=` $start `limit` `=` $limit `stride` `=` $stride attr-dict
    `:` type($input)
  }];
  let hasFolder = 1;
}

def Colo_ConcatOp : Colo_CostedOp<"concat", [DeclareOpInterfaceMethods<Colo_DimensionMapOpInterface, ["getDimensionMap"]>, Pure, InferTypeOpAdaptor]> {
  let summary = "Joins tensors along one axis";
  let description = [{
    ```mlir
    %y = colo.concat %a, %b axis = 1 : tensor<2x3xf32>, tensor<2x5xf32>
    ```
  }];
  let arguments = (ins Variadic<Colo_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Colo_Tensor:$result);
  let assemblyFormat = "$inputs `axis` `=` $axis attr-dict `:` type($inputs)";
  let hasFolder = 1;
}

def Colo_BroadcastToOp : Colo_CostedOp<"broadcast_to", [Colo_DimensionMapOpInterface, Pure]> {
  let summary = "Broadcasts to a larger shape (NumPy rules)";
  let description = [{
    ```mlir
    %y = colo.broadcast_to %x : tensor<1x16xf32> -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Colo_Tensor:$input);
  let results = (outs Colo_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Colo_GatherOp : Colo_CostedOp<"gather", [DeclareOpInterfaceMethods<Colo_DimensionMapOpInterface, ["getDimensionMap"]>, Pure, InferTypeOpAdaptor]> {
  let summary = "Takes slices along one axis at the given indices";
  let description = [{
    NumPy `take`: the result shape is `input.shape[:axis] + indices.shape +
    input.shape[axis+1:]`; negative indices count from the end.

    ```mlir
    %y = colo.gather %x, %i axis = 1 : tensor<4x10xf32>, tensor<3xi64>
    ```
  }];
  let arguments = (ins Colo_Tensor:$input, Colo_IntTensor:$indices, I64Attr:$axis);
  let results = (outs Colo_Tensor:$result);
  let assemblyFormat =
      "$input `,` $indices `axis` `=` $axis attr-dict `:` type($input) `,` type($indices)";
}

def Colo_EmbeddingOp : Colo_CostedOp<"embedding", [DeclareOpInterfaceMethods<Colo_DimensionMapOpInterface, ["getDimensionMap"]>, Pure, InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<Colo_CostOpInterface, ["getBytesRead"]>]> {
  let summary = "Looks up rows of a [vocab, dim] table";
  let description = [{
    The result shape is `ids.shape + [dim]`. Kept apart from `gather` so that
    vocab-parallel plans can find it. `padding_idx` is PyTorch's: the row it
    names is looked up like any other but its gradient is zero (the
    TorchScript importer reads it from `aten::embedding`; ONNX's Gather
    cannot say it).

    ```mlir
    %e = colo.embedding %table, %ids : tensor<1000x64xf32>, tensor<2x16xi64>
    %p = colo.embedding %table, %ids {padding_idx = 1 : i64}
        : tensor<1000x64xf32>, tensor<2x16xi64>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$table, Colo_IntTensor:$ids,
                       OptionalAttr<I64Attr>:$padding_idx);
  let results = (outs Colo_FloatTensor:$result);
  let assemblyFormat = "$table `,` $ids attr-dict `:` type($table) `,` type($ids)";
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Colo_CrossEntropyOp : Colo_CostedOp<"cross_entropy", [DeclareOpInterfaceMethods<Colo_DimensionMapOpInterface, ["getDimensionMap"]>, Pure,
    InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<Colo_CostOpInterface, ["getFlops"]>]> {
  let summary = "Mean softmax cross-entropy of class logits and integer labels";
  let description = [{
    PyTorch's `F.cross_entropy(..., reduction='mean')` with the class
    dimension last: `logits` is `[N, C]` or `[B, S, C]`, `labels` has the
    logits' shape without the class dimension. For each position `i` whose
    label is not `ignore_index`,
    `loss_i = (1 - label_smoothing) * -log_softmax(logits_i)[label_i]
              + label_smoothing * mean_c(-log_softmax(logits_i)[c])`;
    the result is the mean of `loss_i` over those positions, a scalar of the
    logits' element type (NaN when every label is ignored, as in PyTorch).

    A language-model loss compares the logits of tokens `[0, S-1)` with the
    tokens `[1, S)`; the caller shifts them with `colo.slice` first:

    ```mlir
    %l = colo.slice %logits start = [0, 0, 0] limit = [2, 15, 1000]
         stride = [1, 1, 1] : tensor<2x16x1000xf32>
    %t = colo.slice %ids start = [0, 1] limit = [2, 16] stride = [1, 1]
         : tensor<2x16xi64>
    %loss = colo.cross_entropy %l, %t
            {ignore_index = -100 : i64, label_smoothing = 0.0 : f64}
            : tensor<2x15x1000xf32>, tensor<2x15xi64>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$logits, Colo_IntTensor:$labels,
      DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
      DefaultValuedAttr<F64Attr, "0.0">:$label_smoothing);
  let results = (outs 0DTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels)
  }];
  let hasVerifier = 1;
}

def Colo_MseLossOp : Colo_CostedOp<"mse_loss", [DeclareOpInterfaceMethods<Colo_DimensionMapOpInterface, ["getDimensionMap"]>, Pure, InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<Colo_CostOpInterface, ["getFlops"]>]> {
  let summary = "Mean squared error: mean((pred - target)^2)";
  let description = [{
    PyTorch's `F.mse_loss(..., reduction='mean')`; `pred` and `target` have
    the same type and the result is a scalar of their element type.

    ```mlir
    %loss = colo.mse_loss %pred, %target : tensor<8x4xf32>, tensor<8x4xf32>
    ```
  }];
  let arguments = (ins Colo_FloatTensor:$pred, Colo_FloatTensor:$target);
  let results = (outs 0DTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = [{
    $pred `,` $target attr-dict `:` type($pred) `,` type($target)
  }];
  let hasVerifier = 1;
}

include "colo/Dialect/Colo/ColoTrainOps.td"

#endif // COLO_OPS
