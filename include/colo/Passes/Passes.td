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

def ColoJoinSliceGradients : Pass<"colo-join-slice-gradients"> {
  let summary = "Joins the summed gradients of adjacent slices into a concat";
  let description = [{
    Autodiff sums the gradients of the slices cut from one tensor (GPT-2's
    q, k and v from one projection) as zero-padded `colo.slice_backward`s.
    Where two summed windows are adjacent along one axis and equal on the
    others (unit strides), their sum is one `slice_backward` of the concat
    of the two gradients, and a window that covers the whole tensor is the
    concat itself: the kernels copy each gradient once instead of adding
    zeros. Exact, since every element is one gradient or zero.

    Before:
    ```mlir
    %a = colo.slice_backward %gk start = [0, 0] limit = [4, 8] stride = [1, 1]
         : tensor<4x8xf32> -> tensor<4x16xf32>
    %b = colo.slice_backward %gv start = [0, 8] limit = [4, 16] stride = [1, 1]
         : tensor<4x8xf32> -> tensor<4x16xf32>
    %g = colo.add %a, %b : tensor<4x16xf32>, tensor<4x16xf32>
    ```
    After:
    ```mlir
    %g = colo.concat %gk, %gv axis = 1 : tensor<4x8xf32>, tensor<4x8xf32>
    ```
  }];
  let statistics = [
    Statistic<"numJoined", "num-joined", "Sums of slice gradients joined">,
  ];
}

def ColoAutocast : Pass<"colo-autocast", "mlir::ModuleOp"> {
  let summary = "Runs matrix products and attention in bf16 or fp16";
  let description = [{
    Mixed precision as `torch.autocast` runs it: every `colo.matmul` and
    `colo.attention` of `func` with float operands reads 16-bit copies of
    them and gives a 16-bit result, converted back to float for its users.
    Norms, softmax, losses and the optimizer stay float, parameters stay
    float master weights, and autodiff makes the backward GEMMs 16-bit
    too (the gradient of a convert is the opposite convert). A transposed
    operand is converted before its transpose, so that the GEMM still
    absorbs it; converts back and forth fold away between products.

    Before:
    ```mlir
    %y = colo.matmul %x, %w : tensor<4x8xf32>, tensor<8x2xf32>
    ```
    After (precision=bf16):
    ```mlir
    %xl = colo.convert %x : tensor<4x8xf32> to tensor<4x8xbf16>
    %wl = colo.convert %w : tensor<8x2xf32> to tensor<8x2xbf16>
    %yl = colo.matmul %xl, %wl : tensor<4x8xbf16>, tensor<8x2xbf16>
    %y = colo.convert %yl : tensor<4x2xbf16> to tensor<4x2xf32>
    ```
  }];
  let options = [
    Option<"precision", "precision", "colo::Precision", "colo::Precision::Bf16",
           "16-bit type of the products", [{::llvm::cl::values(
             clEnumValN(colo::Precision::Bf16, "bf16", "bfloat16"),
             clEnumValN(colo::Precision::Fp16, "fp16", "IEEE half precision"))}]>,
    Option<"func", "func", "std::string", "\"forward\"",
           "Function to rewrite">,
  ];
}

def ColoDecomposeAttention : Pass<"colo-decompose-attention"> {
  let summary = "Rewrites colo.attention as matmul, masks, softmax and matmul";
  let description = [{
    For targets without a fused attention kernel (the CPU lowering) and for
    differentiation on them: `softmax(q k^T * scale + causal + mask) v`, with
    grouped key/value heads repeated by reshape and broadcast and the causal
    mask as an additive constant (top-left aligned, as PyTorch's is_causal).

    Before:
    ```mlir
    %o = colo.attention %q, %k, %v {causal, scale = 0.125 : f64}
         : tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>
    ```
    After:
    ```mlir
    %kt = colo.transpose %k permutation = [0, 1, 3, 2] : tensor<1x2x8x8xf32>
    %s = colo.matmul %q, %kt : tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>
    %c = colo.constant dense<1.250000e-01> : tensor<f32>
    %ss = colo.mul %s, %c : tensor<1x2x8x8xf32>, tensor<f32>
    %m = colo.constant dense<...> : tensor<8x8xf32>
    %sm = colo.add %ss, %m : tensor<1x2x8x8xf32>, tensor<8x8xf32>
    %p = colo.softmax %sm axis = 3 : tensor<1x2x8x8xf32>
    %o = colo.matmul %p, %v : tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>
    ```
  }];
}

def ColoDecomposeLoss : Pass<"colo-decompose-loss"> {
  let summary = "Rewrites cross_entropy and its gradient as per-position ops, a sum and a count";
  let description = [{
    Each position's loss and logit gradient depend only on its own classes;
    what makes the mean a whole-tensor op is the sum and the count of the
    counted positions. Written apart, the CPU lowering computes the
    per-position ops in pieces of rows on all threads and only the scalars
    over all positions. The gradient's factor `grad / count` is computed once
    as the fused op computed it per element, so the logit gradient keeps its
    bits. Float and double logits; 16-bit logits (whose factor would be
    rounded to their type) are left as they are.

    Before:
    ```mlir
    %l = colo.cross_entropy %x, %t : tensor<4x10xf32>, tensor<4xi64>
    %dx = colo.cross_entropy_backward %x, %t, %g : tensor<4x10xf32>, tensor<4xi64>, tensor<f32>
    ```
    After (and CSE, which keeps one count):
    ```mlir
    %r = colo.cross_entropy_rows %x, %t : tensor<4x10xf32>, tensor<4xi64>
    %s = colo.reduce_sum %r dims = [0] : tensor<4xf32>
    %i = colo.constant dense<-100> : tensor<i64>
    %v = colo.compare ne, %t, %i : tensor<4xi64>, tensor<i64>
    %c = colo.convert %v : tensor<4xi1> to tensor<4xf32>
    %n = colo.reduce_sum %c dims = [0] : tensor<4xf32>
    %l = colo.div %s, %n : tensor<f32>, tensor<f32>
    %k = colo.div %g, %n : tensor<f32>, tensor<f32>
    %dx = colo.cross_entropy_rows_backward %x, %t, %k : tensor<4x10xf32>, tensor<4xi64>, tensor<f32>
    ```
  }];
}

def ColoRecompute : Pass<"colo-recompute", "::mlir::ModuleOp"> {
  let summary = "Recomputes forward activations right before their backward "
                "instead of keeping them";
  let description = [{
    Runs on `@train_step` after `colo-build-train-step` (and before
    `colo-pipeline`, which schedules the recomputation of each microbatch
    with its backward). A *segment* is a set of forward ops: with `full`,
    each repeated block of the model (its layers, found from the ops'
    module paths) without its parameter loads and constants; with
    `selective`, the core of each attention (Megatron-LM's selective
    recomputation: the scores' product, scaling and masks, the softmax and
    its dropout, up to the product with the values), whose memory grows with
    the square of the sequence. With `budget`, each block is kept, has its
    attention cores recomputed, or is recomputed whole, whichever needs the
    fewest recomputed FLOPs while the blocks' kept activations plus the
    largest block's recomputed ones fit `budget-mb`
    (analysis/RecomputeSolver.h: an exact dynamic program over the chain of
    blocks).

    A segment's *boundary* values are those that forward ops outside it read
    (a block's output: the checkpoint); they are kept. Its other values that
    the backward reads are recomputed: the ops that compute them, from the
    boundary values and the segment's inputs, are cloned right before the
    first backward op that reads one, with `colo.recomputed` naming the
    segment, and the backward reads the clones. The originals then die
    after their last forward use. The clones compute the same bits (the
    same ops on the same values; dropout masks come from the same keys).

    ```mlir
    %h = colo.gelu %x : tensor<4x8xf32>            // forward, read by the backward
    ...
    %g = colo.mul %dy, %h : tensor<4x8xf32>        // backward
    ```
    becomes
    ```mlir
    %h = colo.gelu %x : tensor<4x8xf32>
    ...
    %h2 = colo.gelu %x {colo.recomputed = "h.0"} : tensor<4x8xf32>
    %g = colo.mul %dy, %h2 : tensor<4x8xf32>
    ```
  }];
  let options = [
    Option<"policy", "policy", "colo::RecomputePolicy", "colo::RecomputePolicy::Full",
           "What to recompute", [{::llvm::cl::values(
             clEnumValN(colo::RecomputePolicy::None, "none", "nothing"),
             clEnumValN(colo::RecomputePolicy::Selective, "selective",
                        "the attention cores (scores, softmax, dropout)"),
             clEnumValN(colo::RecomputePolicy::Full, "full",
                        "every repeated block from its input"),
             clEnumValN(colo::RecomputePolicy::Budget, "budget",
                        "per block, the least recomputation that fits budget-mb"))}]>,
    Option<"budgetMb", "budget-mb", "double", "0",
           "recompute=budget: MiB for the layers' activations (kept from the "
           "forward to the backward, and recomputed)">,
  ];
  let statistics = [
    Statistic<"numSegments", "num-segments", "Segments recomputed">,
    Statistic<"numCloned", "num-cloned", "Ops cloned to recompute">,
  ];
}

def ColoOffload : Pass<"colo-offload", "::mlir::ModuleOp"> {
  let summary = "Keeps the optimizer's state in host memory and runs its "
                "update on the host (ZeRO-Offload)";
  let description = [{
    Runs on every step function after the plan's passes (data parallelism,
    ZeRO, pipelines), so that it moves what each rank updates. The globals
    an optimizer update reads as its state (moments, momentum buffers) get
    `colo.on_host`: they live in host memory. The update ops get it too, and
    so does every op that reads a host value and whose results only host
    ops read or host globals keep (fp16's keep-or-skip selects of the
    moments): they run on the host. Each value such an op reads from the
    device (the gradient, the learning rate, the step) is moved to the host
    by a `colo.transfer ... to host` right after it is computed, so that
    the copy overlaps the rest of the backward; each host value a device op
    reads (the new parameter) is moved back by a `colo.transfer ... to
    device`. The parameters stay on the device, where the forward and
    backward read them; the update reads them through a transfer too (no
    master copy is kept on the host, so weights loaded into the device's
    parameters are what the update reads).

    ```mlir
    %g = ...                                             // the gradient
    %p, %m, %v = colo.adam_update %w, %g, %m0, %v0, %lr, %step {...}
    colo.global_store @w, %p
    ```
    becomes
    ```mlir
    %g = ...
    %gh = colo.transfer %g to host : tensor<64xf32>
    ...
    %wh = colo.transfer %w to host : tensor<64xf32>
    %p, %m, %v = colo.adam_update %wh, %gh, %m0, %v0, %lrh, %steph {colo.on_host, ...}
    %pd = colo.transfer %p to device : tensor<64xf32>
    colo.global_store @w, %pd
    ```

    With `params=true` (which needs `optimizer`) the trainable globals are
    on the host too (Gemini, ZeRO-Infinity): the updates read and store
    them there, a narrowing convert of one (a bf16 copy) runs on the host so
    that the device gets the narrow copy, and the host tensors device ops
    read are packed into chunks of at most `chunk-mb` MiB in first-use
    order. A compile-time schedule (analysis/ChunkSchedule.cpp) gives each
    chunk its residency: fetched when a use finds it absent, the resident
    chunk used farthest away evicted while the resident chunks exceed
    `resident-mb` (Belady), dropped after its last use. Each fetch is a
    `colo.transfer ... to device {colo.chunk = N}` per tensor, issued where
    the previous fetch's first reader runs so that it overlaps that
    compute; the readers within the fetch read it.
  }];
  let options = [
    Option<"optimizer", "optimizer", "bool", "true",
           "Keep the optimizer state on the host and update there">,
    Option<"params", "params", "bool", "false",
           "Keep the parameters on the host too and fetch them in chunks">,
    Option<"chunkMb", "chunk-mb", "double", "32",
           "Largest chunk of parameters fetched by one group of copies (MiB)">,
    Option<"residentMb", "resident-mb", "double", "-1",
           "Parameter chunks the device holds between uses at most (MiB; "
           "default: one chunk)">,
  ];
  let statistics = [
    Statistic<"numHostOps", "num-host-ops", "Ops run on the host">,
    Statistic<"numTransfers", "num-transfers", "Transfers between device and host">,
    Statistic<"numChunks", "num-chunks", "Chunks of parameters">,
    Statistic<"numFetches", "num-fetches", "Fetches of parameter chunks">,
  ];
}

def ColoOffloadActivations : Pass<"colo-offload-activations", "::mlir::ModuleOp"> {
  let summary = "Keeps the activations the backward reads from the forward "
                "in host memory, fetched back in chunks";
  let description = [{
    Runs on `@train_step` after `colo-build-train-step` and `colo-recompute`
    (whose kept checkpoints it then moves: DeepSpeed's CPU checkpointing)
    and before `colo-pipeline`, which clones each transfer with its
    microbatch's forward or backward. A *stashed* value is a result of a
    forward op (one before the loss) that depends on the batch and that a
    backward op of the same pipeline stage reads; parameters, constants and
    what is made of them alone are not activations and stay.

    Each stashed value is copied to the host by a `colo.transfer ... to
    host` right after it is computed, so the copy overlaps the rest of the
    forward and the device's copy dies after its last forward reader. The
    values are packed into chunks of at most `chunk-mb` MiB in the order of
    their first backward reader and fetched back by the chunk schedule of
    `colo-offload`'s parameters (analysis/ChunkSchedule.cpp) with one chunk
    resident between uses: one `colo.transfer ... to device {colo.stash =
    N}` per fetch and value, issued where the previous fetch's first reader
    runs so that the copy overlaps that backward compute; the backward reads
    the fetched copy. The bits are the same; device memory holds no
    activation from its last forward reader to its first backward reader.

    ```mlir
    %h = colo.gelu %x : tensor<4x8xf32>             // forward
    ...
    %g = colo.mul %dy, %h : tensor<4x8xf32>         // backward
    ```
    becomes
    ```mlir
    %h = colo.gelu %x : tensor<4x8xf32>
    %hh = colo.transfer %h to host : tensor<4x8xf32>
    ...
    %hd = colo.transfer %hh to device {colo.stash = 0 : i64} : tensor<4x8xf32>
    %g = colo.mul %dy, %hd : tensor<4x8xf32>
    ```
  }];
  let options = [
    Option<"chunkMb", "chunk-mb", "double", "32",
           "Largest chunk of activations fetched by one group of copies (MiB)">,
  ];
  let statistics = [
    Statistic<"numOffloaded", "num-offloaded", "Stashed activations kept on the host">,
    Statistic<"numChunks", "num-chunks", "Chunks of activations">,
    Statistic<"numFetches", "num-fetches", "Fetches of activation chunks">,
  ];
}

def ColoFreeze : Pass<"colo-freeze", "::mlir::ModuleOp"> {
  let summary = "Keeps the named parameters fixed: their globals stop being trainable";
  let description = [{
    Clears `trainable` on every `colo.global` whose name matches one of the
    glob patterns (`*`, `?`, `[...]`, as llvm::GlobPattern reads them): the
    training step then computes no gradient for it, keeps no optimizer state
    and never stores it. For fine-tuning, and for exports that do not say
    which initializers are buffers (the TorchScript-based ONNX exporter). A
    pattern that matches no global is a warning: a buffer the importer folded
    into constants is already fixed.

    With `globals=final_logits_bias,encoder.*`:
    ```mlir
    colo.global trainable @final_logits_bias : tensor<1x256xf32>
    // becomes
    colo.global @final_logits_bias : tensor<1x256xf32>
    ```
  }];
  let options = [
    ListOption<"globals", "globals", "std::string",
               "Glob patterns of the globals to freeze">,
  ];
}

def ColoBuildTrainStep : Pass<"colo-build-train-step", "::mlir::ModuleOp"> {
  let summary = "Turns @forward into @train_step: loss, backward, optimizer update";
  let description = [{
    Builds `func.func @train_step` next to `@forward`: the forward graph (batch
    norms in training mode, attention decomposed), the loss, the backward graph
    by reverse-mode differentiation of every op (passes/Autodiff.cpp), gradient
    clipping by global norm, the learning-rate schedule, and one optimizer
    update per trainable global, whose new value and optimizer state are written
    back with `colo.global_store`. The step counter is the global `colo.step`;
    optimizer state globals are named `<param>#<state>` and carry
    `colo.optimizer_state`. `@train_step` returns the loss. Every dropout gets
    a key from the seed, the step and its position, so its mask is
    reproducible and its gradient reuses it.

    Loss scaling (fp16 training, `torch.amp.GradScaler`'s algorithm): the
    backward starts from the loss scale instead of 1 and the gradients are
    divided by it before clipping and the optimizer. With `loss-scale=dynamic`
    the scale is the global `colo.loss_scale` (from `init-scale`): a step
    whose gradients hold an inf or NaN (summed over tensor-parallel ranks)
    leaves parameters and optimizer state unchanged, does not count as an
    optimizer step, and halves the scale; `scale-window` steps in a row
    without one double it (`colo.loss_scale_good_steps`, `colo.skipped_steps`).

    Losses: `cross-entropy` (a new argument `labels` of the output's shape
    without the class dimension), `lm` (next-token cross-entropy of the logits
    against the first integer input shifted by one), `mse` (a new argument
    `target` of the output's type), `output` (the model's first result is
    already the scalar loss). Where a plan pass left the logits as the rank's
    block (`colo.vocab_parallel`, or a tensor grid's `colo.loss_sample_axes`
    and `colo.loss_class_axis`), the cross-entropies are computed on the
    blocks (the labels, whole, cut to the rank's samples; log-sum-exp and
    the target's logit summed over the classes' ranks, the losses and their
    count over the samples'), and `mse` gathers them whole first.
  }];
  let options = [
    Option<"loss", "loss", "colo::Loss", "colo::Loss::CrossEntropy",
           "The loss", [{::llvm::cl::values(
             clEnumValN(colo::Loss::CrossEntropy, "cross-entropy",
                        "of the first output against the labels"),
             clEnumValN(colo::Loss::Lm, "lm",
                        "cross-entropy of each position against the next token"),
             clEnumValN(colo::Loss::Mse, "mse", "mean squared error against the targets"),
             clEnumValN(colo::Loss::Output, "output", "the first output, already the loss"))}]>,
    Option<"ignoreIndex", "ignore-index", "int64_t", "-100",
           "Label that cross-entropy ignores">,
    Option<"labelSmoothing", "label-smoothing", "double", "0.0",
           "Cross-entropy label smoothing">,
    Option<"optimizer", "optimizer", "colo::Optimizer", "colo::Optimizer::AdamW",
           "The optimizer", [{::llvm::cl::values(
             clEnumValN(colo::Optimizer::Sgd, "sgd", "SGD, with optional momentum"),
             clEnumValN(colo::Optimizer::Adam, "adam", "Adam"),
             clEnumValN(colo::Optimizer::AdamW, "adamw", "Adam with decoupled weight decay"),
             clEnumValN(colo::Optimizer::Lamb, "lamb", "LAMB (layer-wise trust ratio)"),
             clEnumValN(colo::Optimizer::Lars, "lars", "LARS (layer-wise trust ratio)"))}]>,
    Option<"lr", "lr", "double", "1e-3", "Peak learning rate">,
    Option<"momentum", "momentum", "double", "0.0", "SGD/LARS momentum">,
    Option<"dampening", "dampening", "double", "0.0", "SGD dampening">,
    Option<"nesterov", "nesterov", "bool", "false", "SGD Nesterov momentum">,
    Option<"beta1", "beta1", "double", "0.9", "Adam/LAMB beta1">,
    Option<"beta2", "beta2", "double", "0.999", "Adam/LAMB beta2">,
    Option<"epsilon", "eps", "double", "-1",
           "Optimizer epsilon (default: 1e-8 Adam, 1e-6 LAMB, 1e-8 LARS)">,
    Option<"weightDecay", "weight-decay", "double", "-1",
           "Weight decay (default: 0.01 for adamw and lamb, 0 otherwise)">,
    Option<"trustCoefficient", "trust-coefficient", "double", "0.001",
           "LARS trust coefficient">,
    Option<"maxGradNorm", "max-grad-norm", "double", "0.0",
           "Clip gradients to this global L2 norm (0: no clipping)">,
    Option<"schedule", "schedule", "colo::LrSchedule", "colo::LrSchedule::Constant",
           "Learning-rate schedule (after a linear warm-up)", [{::llvm::cl::values(
             clEnumValN(colo::LrSchedule::Constant, "constant", "the peak rate"),
             clEnumValN(colo::LrSchedule::Cosine, "cosine", "cosine decay to 0"))}]>,
    Option<"warmupSteps", "warmup-steps", "int64_t", "0", "Warm-up steps">,
    Option<"totalSteps", "total-steps", "int64_t", "0",
           "Steps of the whole run (cosine schedule)">,
    Option<"seed", "seed", "int64_t", "0", "Seed of the dropout masks">,
    Option<"lossScale", "loss-scale", "std::string", "\"none\"",
           "none, dynamic, or a constant factor (fp16 training)">,
    Option<"initScale", "init-scale", "double", "65536.0",
           "First factor of dynamic loss scaling">,
    Option<"scaleWindow", "scale-window", "int64_t", "2000",
           "Steps without overflow after which dynamic loss scaling doubles">,
  ];
  let statistics = [
    Statistic<"numParams", "num-params", "Parameters updated">,
  ];
}

def ColoDataParallel : Pass<"colo-data-parallel", "::mlir::ModuleOp"> {
  let summary = "Averages the gradients over the data-parallel mesh axis";
  let description = [{
    Runs after `colo-build-train-step` on a step whose forward was split by
    `colo-split-batch` (each rank holds `batch / dp` samples). Every
    `colo.gradient` is averaged over the mesh's `dp` axis before clipping and
    the optimizer read it, so every rank applies the same update, equal to
    the single-device step on the whole batch (for losses that are means
    over equally many samples per rank). Gradients are grouped into buckets
    of at most `bucket-mb` MiB in the order the backward computes them; each
    bucket is flattened, concatenated and reduced by one `shard.all_reduce`
    placed right after its last gradient is computed, so that communication
    can overlap the rest of the backward. The returned loss is averaged too.
    Without a mesh the pass creates `shard.grid @mesh(shape = dp)` with
    `colo.axes = ["dp"]`.

    ```mlir
    %g = colo.gradient %dw of @w : tensor<4x4xf32>
    ```
    becomes
    ```mlir
    %f = colo.reshape %dw : tensor<4x4xf32> -> tensor<16xf32>
    %r = shard.all_reduce %f on @mesh grid_axes = [0] reduction = average
         : tensor<16xf32> -> tensor<16xf32>
    %s = colo.reshape %r : tensor<16xf32> -> tensor<4x4xf32>
    %g = colo.gradient %s of @w : tensor<4x4xf32>
    ```
  }];
  let options = [
    Option<"dp", "dp", "int64_t", "1", "Ranks on the data-parallel axis">,
    Option<"bucketMb", "bucket-mb", "double", "25.0",
           "Gradient bytes per all-reduce, in MiB (PyTorch DDP's default)">,
    Option<"func", "func", "std::string", "\"train_step\"",
           "The training step function">,
  ];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

def ColoZero : Pass<"colo-zero", "::mlir::ModuleOp"> {
  let summary = "Shards the optimizer state, gradients and parameters over the "
                "data-parallel mesh axis (ZeRO-1/2/3)";
  let description = [{
    ZeRO stages 1, 2 and 3 (Rajbhandari et al., 2020); runs after
    `colo-build-train-step`, on a step split by `colo-split-batch`, instead
    of `colo-data-parallel`. Each parameter's gradient, flattened and padded
    with zeros to `n'` elements (its size rounded up to a multiple of `dp`),
    is averaged over the mesh's `dp` axis by a `shard.reduce_scatter`, so that
    rank `r` receives only block `r` of it (`n' / dp` elements). The rank
    takes the same block of the parameter locally (`shard.all_slice`) and
    runs the optimizer update, which is elementwise, on the blocks: the
    optimizer state globals (`<param>#exp_avg`, ...) hold only the rank's
    block, a `dp`-th of their memory. A `shard.all_gather` of the updated
    blocks gives every rank the whole new parameter, which is stored.
    Together the two collectives send the bytes of one all-reduce.

    Gradients are bucketed as in `colo-data-parallel` (at most `bucket-mb`
    MiB of padded gradients per reduce-scatter, in the order the backward
    computes them, placed right after the bucket's last gradient); the
    updated blocks are gathered in buckets of the same size in update order.
    In a bucket each gradient is viewed as `[dp, n' / dp]` and the bucket is
    concatenated along the second dimension, so that row `r`, rank `r`'s
    share, holds block `r` of every parameter. The returned loss is averaged
    over `dp`. The `colo.gradient` markers, which mark whole gradients, are
    removed: the updates read the blocks.

    Stages 1 (optimizer state partitioning) and 2 (gradient partitioning as
    well) produce the same program with one microbatch per step: each
    gradient is reduce-scattered once, as soon as it is complete, so the
    averaged gradient only ever exists as the rank's block. Under gradient
    accumulation (`colo-pipeline` with micro > 1, which adds each
    microbatch's gradient, computed by an op of `colo.micro` m, in order and
    scales the sum by 1/micro), stage 1 reduce-scatters the sum; stages 2
    and 3 reduce-scatter each microbatch's gradients, bucketed in the order that
    microbatch's backward computes them and placed right after the bucket's
    last one, and adds the rank's blocks as they arrive before scaling them,
    so no whole gradient outlives its microbatch: micro reduce-scatters per
    step instead of one. A gradient that is not such a sum is
    reduce-scattered once. The function records
    `colo.zero = <stage>` and `colo.data_parallel = <dp>` (the compiler splits
    the data by the latter).

    Stage 3 (parameter partitioning as well) makes every trainable parameter
    global `shard = #colo.shard<flat = true, split_axes = [["dp"]], parts = [dp]>`
    (under tensor parallelism: its tp split with `flat_axes = ["dp"]`): each
    rank keeps a zero-padded contiguous block of `n' / dp` elements (of its tp
    block), which is what every `colo.global_load` of it yields. In the step,
    one `shard.all_gather` (`gather_axis = 0`, `[n'/dp] -> [n']`, then the
    padding cut and the shape restored) is placed before the first use in
    the forward (up to the loss, the returned value) and serves the forward's
    uses; a second one before the first use in the backward serves the
    backward's, so the whole parameter need not live from the forward to the
    backward. Under gradient accumulation each microbatch has its own two
    (marked with its `colo.micro`; its forward ends with its loss), so none
    lives from one microbatch to the next. Reshapes, transposes and converts
    of the parameter that one phase computes and another reads (the
    forward's transposed weight in the backward, a view computed once per
    step in every microbatch) are computed again from that phase's gather.
    A parameter that the backward does not read (a bias, an embedding table)
    is gathered once per microbatch. The all-gathers carry
    `colo.zero_gather = "forward"` or `"backward"` (which also keeps CSE from
    merging them). Gradients are reduce-scattered as in stage 2; the update
    runs on the loaded block (no `shard.all_slice`) and its new block is
    stored straight back (no all-gather after the update). Per step and
    microbatch that is 2 all-gathers and a reduce-scatter of `n'` per
    parameter: 1.5 times the data-parallel volume.
    A read of the parameter in the optimizer part, other than by its update,
    is an error. Other functions of the module (`@forward`) gather each load
    of the parameter right after it.

    Only `colo.adam_update` (Adam, AdamW) and `colo.sgd_update` can run on
    blocks; LAMB and LARS need norms of whole parameters, and so does
    gradient clipping: both are errors. `dp=1` changes nothing.

    Before (`dp=2`):
    ```mlir
    colo.global @"b#exp_avg" : tensor<3xf32> = dense<0.0> : tensor<3xf32> {colo.optimizer_state}
    %g = colo.gradient %db of @b : tensor<3xf32>
    %p = colo.global_load @b : tensor<3xf32>
    %m = colo.global_load @"b#exp_avg" : tensor<3xf32>
    %np, %nm, %nv = colo.adam_update %p, %g, %m, %v, %lr, %step {...} : tensor<3xf32>
    colo.global_store @b, %np : tensor<3xf32>
    colo.global_store @"b#exp_avg", %nm : tensor<3xf32>
    ```
    After:
    ```mlir
    colo.global @"b#exp_avg" : tensor<2xf32> = dense<0.0> : tensor<2xf32> {colo.optimizer_state}
    %z = colo.constant dense<0.0> : tensor<1xf32>
    %fp = colo.concat %db, %z axis = 0 : tensor<3xf32>, tensor<1xf32>
    %r = colo.reshape %fp : tensor<4xf32> -> tensor<2x2xf32>
    %rs = shard.reduce_scatter %r on @mesh grid_axes = [0] reduction = average
          scatter_axis = 0 : tensor<2x2xf32> -> tensor<1x2xf32>
    %gs = colo.reshape %rs : tensor<1x2xf32> -> tensor<2xf32>
    %p = colo.global_load @b : tensor<3xf32>
    %m = colo.global_load @"b#exp_avg" : tensor<2xf32>
    ... %p padded to %pp : tensor<4xf32> as %db was
    %ps = shard.all_slice %pp on @mesh grid_axes = [0] slice_axis = 0
          : tensor<4xf32> -> tensor<2xf32>
    %np, %nm, %nv = colo.adam_update %ps, %gs, %m, %v, %lr, %step {...} : tensor<2xf32>
    %n1 = colo.reshape %np : tensor<2xf32> -> tensor<1x2xf32>
    %ag = shard.all_gather %n1 on @mesh grid_axes = [0] gather_axis = 0
          : tensor<1x2xf32> -> tensor<2x2xf32>
    %f = colo.reshape %ag : tensor<2x2xf32> -> tensor<4xf32>
    %new = colo.slice %f start = [0] limit = [3] stride = [1] : tensor<4xf32>
    colo.global_store @b, %new : tensor<3xf32>
    colo.global_store @"b#exp_avg", %nm : tensor<2xf32>
    ```
  }];
  let options = [
    Option<"stage", "stage", "int64_t", "1",
           "ZeRO stage: 1 (optimizer state), 2 (and gradients) or 3 (and "
           "parameters)">,
    Option<"dp", "dp", "int64_t", "1", "Ranks on the data-parallel axis">,
    Option<"bucketMb", "bucket-mb", "double", "25.0",
           "Padded gradient bytes per reduce-scatter (and parameter bytes per "
           "all-gather), in MiB">,
    Option<"func", "func", "std::string", "\"train_step\"",
           "The training step function">,
  ];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

def ColoPipelineStages : Pass<"colo-pipeline-stages", "::mlir::ModuleOp"> {
  let summary = "Cuts @forward into pipeline stages of balanced cost";
  let description = [{
    Labels every op of `@forward` with `colo.stage = s`, `s` in
    `[0, stages)` (pipeline ranks times virtual stages per rank), in order:
    stage `s` runs after stage `s - 1`. Cuts go only where the fewest values
    of the forward cross (between transformer layers, the residual stream
    alone), and among those places they minimize the costliest stage's FLOPs
    (the cost interface), by dynamic programming. Ops that do not depend on
    the inputs (parameter loads, constants, masks, weight transposes) are
    copied into every stage that uses them, so stages exchange activations
    only and each stage loads the parameters it uses. The function records
    `colo.pipeline_stages = stages`. colo-build-train-step keeps the labels:
    each gradient op gets the stage of the op it differentiates, the loss
    the last stage; colo-pipeline then splits the step by them.

    With `layer-ends` (a plan's `stages`), the cuts are given in layers
    instead: stage `s` ends after layer `layer-ends[s]` - 1 of the repeated
    blocks the model summary finds, at the last place before that layer's
    next one where the fewest values cross.

    Errors: fewer places to cut than `stages - 1` (more stages than layers);
    `layer-ends` not one increasing end per stage, the last the number of
    layers, or naming a layer boundary with no place to cut.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", "1", "Pipeline stages (ranks x virtual stages)">,
    ListOption<"layerEnds", "layer-ends", "int64_t",
               "The layer each stage ends before (its last layer + 1), one per stage; "
               "empty: balance the stages' cost">,
  ];
}

def ColoPipeline : Pass<"colo-pipeline", "::mlir::ModuleOp"> {
  let summary = "Splits @train_step into per-rank pipeline programs over microbatches";
  let description = [{
    Runs after colo-build-train-step on a step whose forward was labeled by
    colo-pipeline-stages (and split into microbatches by colo-split-batch).
    The step's arguments become `micro` microbatches wide; microbatch `m`
    reads rows `[m * b, (m + 1) * b)` of each. Stage `s` lives on pipeline
    rank `s mod pp` (with `virtual` stages per rank: Megatron-LM's
    interleaved model chunks). Each rank gets a function
    `@train_step_stage<r>` (`@train_step` itself when `pp` is 1: gradient
    accumulation) that runs, in the schedule's order, the forward and the
    backward of its stages for every microbatch:

    - `gpipe`: all forwards, then all backwards;
    - `1f1b`: `pp - r - 1` warm-up forwards, then one forward and one
      backward alternately, then the remaining backwards;
    - `interleaved`: Megatron-LM's interleaved 1F1B over virtual stages
      (`micro` a multiple of `pp`);
    - `zb-h1`: Qi et al.'s zero-bubble H1. Each stage's backward is split
      into its input-gradient part (the ops whose results another stage
      reads, and what they read of the same backward) and its
      weight-gradient part (the rest: the parameters' gradients). Rank `r`
      runs the input-gradient part as soon as the next stage's arrives, a
      forward when fewer than `pp - r` microbatches have forwards without
      weight gradients (the activations 1F1B keeps), and the weight
      gradients otherwise, in what would be the bubble. The order is fixed
      at compile time by running the schedule with unit times
      (include/colo/Passes/PipelineSchedule.h).

    A value that a stage on another rank uses is sent once per microbatch
    (`shard.send` / `shard.recv` on the `pp` axis, each message tagged
    `colo.tag`; sends do not block, receives wait). Gradients are summed over
    the microbatches where they are computed and averaged, as is the loss;
    a rank receives those it needs from others (a parameter used on two
    ranks, such as tied embeddings, gets the sum of both ranks' gradients on
    both). Each rank updates the parameters it uses; every global a rank
    uses becomes that rank's own (`@name` on the first rank using it,
    `@name.pp<r>` on the others, with `colo.param_name`). Every rank returns
    the loss.

    State the forward updates (a `global_store` of a forward value: batch
    norm's running statistics) is carried from microbatch to microbatch in
    order, as PyTorch's forward calls update it under gradient accumulation:
    microbatch `m > 0` reads what microbatch `m - 1` stored, and the step
    stores the last one's.

    Errors: a step without stages, state read and updated on different
    ranks, gradient clipping across ranks, a schedule that does not fit
    (`interleaved` without `micro` a multiple of `pp`).
  }];
  let options = [
    Option<"pp", "pp", "int64_t", "1", "Pipeline ranks">,
    Option<"virtualStages", "virtual", "int64_t", "1", "Stages per pipeline rank">,
    Option<"micro", "micro", "int64_t", "1", "Microbatches per step">,
    Option<"schedule", "schedule", "colo::PipelineSchedule",
           "colo::PipelineSchedule::OneFOneB", "Pipeline schedule", [{::llvm::cl::values(
             clEnumValN(colo::PipelineSchedule::GPipe, "gpipe",
                        "every forward, then every backward"),
             clEnumValN(colo::PipelineSchedule::OneFOneB, "1f1b",
                        "one forward, one backward"),
             clEnumValN(colo::PipelineSchedule::Interleaved, "interleaved",
                        "1F1B over several virtual stages per rank"),
             clEnumValN(colo::PipelineSchedule::ZeroBubbleH1, "zb-h1",
                        "1F1B with each backward's weight gradients deferred "
                        "into the bubble (zero-bubble H1)"))}]>,
  ];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

def ColoSplitBatch : Pass<"colo-split-batch", "::mlir::ModuleOp"> {
  let summary = "Rewrites @forward to run on one of `parts` slices of the batch";
  let description = [{
    Data parallelism and gradient accumulation run the forward on a slice of
    the batch. This pass divides every argument's leading dimension (the
    batch) by `parts` and gives every value derived from it its local type,
    following the batch through the function in order: elementwise ops,
    matmuls, convolutions, pooling, attention, norms over other dimensions,
    transposes (which move it), reshapes that keep it the outermost factor of
    a dimension, full slices of it, concatenations and gathers along other
    dimensions, embeddings of batched ids. The result is the same as running
    the original function on the whole batch and taking the slice's rows of
    every result.

    Batch-independent operands (parameters, constants) that meet the batch at
    size 1 broadcast and are kept; a constant or `broadcast_to` of the full
    batch size whose `parts` chunks along it are equal (a splat, an expanded
    mask) is replaced by its first chunk, and so is a value computed at the
    batch size from such operands by ops that keep that dimension (OPT's
    position embeddings: every sample gathers the same rows), recomputed on
    the chunks. Errors, on the op: an argument
    whose leading dimension is missing, 1 or not divisible by `parts`; an op
    that reduces over the batch (reductions, softmax or norms along it, a
    contraction or loss over it); a reshape that moves the batch into a
    non-leading factor; a partial slice of the batch; a batch-independent
    operand of the batch size that differs between slices; any other op on
    a batch-dependent value (`global_store`, the training-step ops: split
    `@forward` before `colo-build-train-step`).

    `colo.batch_norm` computes its training statistics over the batch. With
    `sync-ranks=N` (data parallelism over the mesh's `dp` axis of N ranks)
    each batch norm on the batch gets `sync_grid`/`sync_axes` naming that
    axis: its statistics are the whole batch's over the N ranks, PyTorch's
    SyncBatchNorm (under gradient accumulation, `parts` = N x microbatches:
    the microbatch's over the ranks, as PyTorch computes them per forward
    call). With `sync-ranks=1` they are the slice's, as DistributedDataParallel
    without SyncBatchNorm computes them. A keyed `colo.dropout` draws its
    mask by local element index, so slices see different masks than the
    whole batch would (inference dropout, without a key, is unaffected).

    The function records the split as `colo.batch_parts` (multiplied when
    the pass runs again); `parts=1` changes nothing.

    Before (`parts=2`):
    ```mlir
    func.func @forward(%x: tensor<8x16x64xf32>) -> tensor<8x16x64xf32> {
      %r = colo.reshape %x : tensor<8x16x64xf32> -> tensor<128x64xf32>
      %y = colo.matmul %r, %w : tensor<128x64xf32>, tensor<64x64xf32>
      %z = colo.reshape %y : tensor<128x64xf32> -> tensor<8x16x64xf32>
      return %z : tensor<8x16x64xf32>
    }
    ```
    After:
    ```mlir
    func.func @forward(%x: tensor<4x16x64xf32>) -> tensor<4x16x64xf32>
        attributes {colo.batch_parts = 2 : i64} {
      %r = colo.reshape %x : tensor<4x16x64xf32> -> tensor<64x64xf32>
      %y = colo.matmul %r, %w : tensor<64x64xf32>, tensor<64x64xf32>
      %z = colo.reshape %y : tensor<64x64xf32> -> tensor<4x16x64xf32>
      return %z : tensor<4x16x64xf32>
    }
    ```
  }];
  let options = [
    Option<"parts", "parts", "int64_t", "0",
           "Number of slices the batch is split into (required, >= 1)">,
    Option<"syncRanks", "sync-ranks", "int64_t", "1",
           "Data-parallel ranks (the mesh's dp axis) over which batch norms "
           "compute their statistics (1: each slice its own)">,
    Option<"func", "func", "std::string", "\"forward\"",
           "Name of the function to split">,
  ];
  let statistics = [
    Statistic<"numOps", "num-ops", "Ops given local types">,
  ];
}

def ColoCreateMesh : Pass<"colo-create-mesh", "::mlir::ModuleOp"> {
  let summary = "Creates the device mesh of a parallel plan";
  let description = [{
    Adds `shard.grid @mesh` with one axis per plan dimension of size > 1, in
    Megatron-LM's order (pipeline outermost, then data-parallel, then
    tensor-parallel: the `tp` ranks of one group are neighbours), named by
    `colo.axes`. The plan passes
    find their axis by name, so the pipeline runs this first when a plan has
    several dimensions. A module that already has a mesh must have exactly
    these axes. Nothing is created when every size is 1.

    With `dp=2 tp=4`:
    ```mlir
    shard.grid @mesh(shape = 2x4) {colo.axes = ["dp", "tp"]}
    ```
  }];
  let options = [
    Option<"dp", "dp", "int64_t", "1", "Ranks on the data-parallel axis">,
    Option<"tp", "tp", "int64_t", "1", "Ranks on the tensor-parallel axis">,
    Option<"pp", "pp", "int64_t", "1", "Ranks on the pipeline axis">,
    Option<"sp", "sp", "int64_t", "1",
           "Ranks on the Ulysses sequence-parallel axis (between dp and tp)">,
    Option<"tp2d", "tp2d", "int64_t", "1",
           "The side q of 2-D tensor parallelism's grid: axes \"row\" and \"col\" of q "
           "ranks each, after tp">,
    Option<"depth", "depth", "int64_t", "1",
           "2.5-D tensor parallelism's depth d: axis \"depth\" of d copies of the grid, "
           "before \"row\"">,
    Option<"tp3d", "tp3d", "int64_t", "1",
           "The side q of 3-D tensor parallelism's cube: axes \"x\", \"y\" and \"z\" of q "
           "ranks each, last">,
  ];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

def ColoTensorParallel : Pass<"colo-tensor-parallel", "::mlir::ModuleOp"> {
  let summary = "Megatron-style 1-D tensor parallelism of the transformer blocks";
  let description = [{
    Shards the matrix products of attention and MLP blocks over the mesh axis
    `tp` (Shoeybi et al., 2019). Runs on `func` (`@forward`) after
    `colo-split-batch` and before `colo-build-train-step`, which derives the
    backward from the sharded forward.

    Regions are found by propagation, not by matching a fixed sequence. A
    matmul `x @ W` whose left operand is replicated and whose right operand is
    a trainable global used nowhere else (`[in, out]`, or `[out, in]` through
    a transpose as `nn.Linear` exports it) starts a candidate column-parallel
    region: each rank computes a block of the output features. "The features
    are sharded" then follows the values forward through elementwise ops and
    activations (a bias or other trainable operand along the features is
    sharded with them; values sharded alike may be combined, as in SwiGLU),
    transposes, reshapes (splitting features into heads divides the heads;
    merging them back, or merging the batch into the heads, keeps the
    blocks), slices along other dimensions or along whole groups of a fused
    projection, matmuls over sharded heads, and `colo.attention` over sharded
    heads (with grouped key/value heads). It ends at matmuls whose weight contracts the sharded
    dimension: these become row-parallel, each rank's partial product is
    summed by a `shard.all_reduce` (`sum`), and what follows (the bias) is
    replicated again. Each distinct input of the column-parallel matmuls is
    wrapped in `colo.all_reduce_grad`, whose gradient sums the ranks' partial
    gradients. Regions connected through shared values are one region. A
    region that reaches anything else (a norm, softmax or reduction over the
    sharded dimension, a concatenation along it, a contraction with a
    non-weight, a result of the function, a store) is left replicated, so
    the LM head, whose logits are returned, stays whole, like the embedding
    and the norms.

    Sharded globals keep their whole type and value and get
    `shard = #colo.shard<split_axes = [..., ["tp"], ...], parts = [..., tp, ...]>`
    (dimension D split over tp); their loads have the local type. A fused projection whose output is sliced into `k` equal
    pieces (GPT-2's `c_attn`: q, k, v) is sharded with `groups = k`: each
    rank holds block r of each piece, and the slices become slices of the
    local tensor. Errors, on the op: a region whose sizes `tp` does not divide
    (features, heads, key/value heads). The function records
    `colo.tensor_parallel = tp`; `tp=1` changes nothing.

    Before (`tp=2`):
    ```mlir
    colo.global trainable @w1 : tensor<64x256xf32> = ...
    colo.global trainable @w2 : tensor<256x64xf32> = ...
    func.func @forward(%x: tensor<32x64xf32>) -> tensor<32x64xf32> {
      %w1 = colo.global_load @w1 : tensor<64x256xf32>
      %w2 = colo.global_load @w2 : tensor<256x64xf32>
      %h = colo.matmul %x, %w1 : tensor<32x64xf32>, tensor<64x256xf32>
      %a = colo.gelu %h : tensor<32x256xf32>
      %y = colo.matmul %a, %w2 : tensor<32x256xf32>, tensor<256x64xf32>
      return %y : tensor<32x64xf32>
    }
    ```
    After:
    ```mlir
    shard.grid @mesh(shape = 2) {colo.axes = ["tp"]}
    colo.global trainable @w1 : tensor<64x256xf32> = ...
        {shard = #colo.shard<split_axes = [[], ["tp"]], parts = [1, 2]>}
    colo.global trainable @w2 : tensor<256x64xf32> = ...
        {shard = #colo.shard<split_axes = [["tp"], []], parts = [2, 1]>}
    func.func @forward(%x: tensor<32x64xf32>) -> tensor<32x64xf32>
        attributes {colo.tensor_parallel = 2 : i64} {
      %w1 = colo.global_load @w1 : tensor<64x128xf32>
      %w2 = colo.global_load @w2 : tensor<128x64xf32>
      %xr = colo.all_reduce_grad %x on @mesh grid_axes = [0] : tensor<32x64xf32>
      %h = colo.matmul %xr, %w1 : tensor<32x64xf32>, tensor<64x128xf32>
      %a = colo.gelu %h : tensor<32x128xf32>
      %p = colo.matmul %a, %w2 : tensor<32x128xf32>, tensor<128x64xf32>
      %y = shard.all_reduce %p on @mesh grid_axes = [0] reduction = sum
           : tensor<32x64xf32> -> tensor<32x64xf32>
      return %y : tensor<32x64xf32>
    }
    ```
  }];
  let options = [
    Option<"tp", "tp", "int64_t", "1", "Ranks on the tensor-parallel mesh axis">,
    Option<"func", "func", "std::string", "\"forward\"",
           "Name of the function to shard">,
  ];
  let statistics = [
    Statistic<"numColumn", "num-column", "Column-parallel matmuls">,
    Statistic<"numRow", "num-row", "Row-parallel matmuls">,
    Statistic<"numReplicated", "num-replicated",
              "Candidate column-parallel matmuls left replicated">,
  ];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

def ColoVocabParallel : Pass<"colo-vocab-parallel", "::mlir::ModuleOp"> {
  let summary = "Megatron-style vocabulary-parallel embedding, LM head and loss";
  let description = [{
    Megatron-LM's vocabulary parallelism (plan `tp=N,vocab`) on `func`
    (`@forward`), before `colo-tensor-parallel` and `colo-build-train-step`.
    The function's first result must be an LM head: a `colo.matmul` of the
    hidden states with a trainable weight read as `[hidden, vocab]` or
    through a `[1, 0]` transpose of `[vocab, hidden]`, returned directly or
    through reshapes that keep the vocabulary last.

    - The head's weight becomes a sharded global (its vocabulary dimension
      split over `["tp"]` into N parts): each rank computes its block of the
      logits, the head's input passes through `colo.all_reduce_grad`
      (identity forward, gradient all-reduced), and the function returns
      the block.
    - Lookups of token ids (ids read from an argument) in the head's table
      (GPT-2's tied `wte`) or in another `[vocab, hidden]` table (Llama's
      `embed_tokens`) are split the same way: each rank looks up the ids of
      its block (`ids - start`, where `start` is the rank's element of a
      constant taken by `shard.all_slice`), zeroes the rows of other ids,
      and the partial embeddings are summed by `shard.all_reduce`, whose
      gradient is the replicated gradient: the table's gradient is local.
      The ids argument gets `colo.int_max = vocab` for the data checks.
    - The function records `colo.vocab_parallel = N`, from which
      `colo-build-train-step` computes the loss on the blocks (max, sum of
      exponentials and target logit each all-reduced over `tp`, as Megatron's
      vocab-parallel cross-entropy; no gradient through the max).

    Errors: no LM head, N not dividing the vocabulary, a split global that
    something other than these lookups and the head reads. `tp=1` changes
    nothing.

    Before (`tp=2`):
    ```mlir
    %w = colo.global_load @wte : tensor<256x64xf32>
    %x = colo.embedding %w, %ids : tensor<256x64xf32>, tensor<4x16xi64>
    ...
    %wt = colo.transpose %w permutation = [1, 0] : tensor<256x64xf32>
    %y = colo.matmul %h, %wt : tensor<4x16x64xf32>, tensor<64x256xf32>
    return %y : tensor<4x16x256xf32>
    ```
    After (`@wte` gets `shard = #colo.shard<split_axes = [["tp"], []], parts = [2, 1]>`):
    ```mlir
    %starts = colo.constant dense<[0, 128]> : tensor<2xi64>
    %s = shard.all_slice %starts on @mesh grid_axes = [0] slice_axis = 0
         : tensor<2xi64> -> tensor<1xi64>
    %start = colo.reshape %s : tensor<1xi64> -> tensor<i64>
    %w = colo.global_load @wte : tensor<128x64xf32>
    %local = colo.sub %ids, %start : tensor<4x16xi64>, tensor<i64>
    %lo = colo.maximum %local, %c0 : tensor<4x16xi64>, tensor<i64>
    %row = colo.minimum %lo, %c127 : tensor<4x16xi64>, tensor<i64>
    %mine = colo.compare eq, %row, %local : tensor<4x16xi64>, tensor<4x16xi64>
    %e = colo.embedding %w, %row : tensor<128x64xf32>, tensor<4x16xi64>
    %m = colo.reshape %mine : tensor<4x16xi1> -> tensor<4x16x1xi1>
    %p = colo.select %m, %e, %zero : tensor<4x16x1xi1>, tensor<4x16x64xf32>, tensor<f32>
    %x = shard.all_reduce %p on @mesh grid_axes = [0] : tensor<4x16x64xf32> -> tensor<4x16x64xf32>
    ...
    %wt = colo.transpose %w permutation = [1, 0] : tensor<128x64xf32>
    %hg = colo.all_reduce_grad %h on @mesh grid_axes = [0] : tensor<4x16x64xf32>
    %y = colo.matmul %hg, %wt : tensor<4x16x64xf32>, tensor<64x128xf32>
    return %y : tensor<4x16x128xf32>
    ```
  }];
  let options = [
    Option<"tp", "tp", "int64_t", "1", "Ranks on the tensor-parallel mesh axis">,
    Option<"func", "func", "std::string", "\"forward\"",
           "Name of the function to split">,
  ];
  let statistics = [
    Statistic<"numEmbeddings", "num-embeddings", "Embedding lookups split over the vocabulary">,
  ];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

def ColoSequenceParallel : Pass<"colo-sequence-parallel", "::mlir::ModuleOp"> {
  let summary = "Megatron-style sequence parallelism between the tensor-parallel regions";
  let description = [{
    Sequence parallelism (Korthikanti et al., 2022) on `func` (`@forward`)
    after `colo-tensor-parallel` and before `colo-build-train-step`: outside
    the tensor-parallel regions (norms, residual adds, dropout, the biases
    after the row-parallel sums), every rank of the `tp` axis computes only
    its block of the tokens, so those activations take 1/tp of the memory.

    - Each `shard.all_reduce` (`sum`) that ends a row-parallel region becomes
      a `shard.reduce_scatter`: the rank receives the summed rows of its
      tokens.
    - Per-token ops (elementwise ops, dropout, layer and RMS norms over the
      features, reshapes that keep the tokens outermost) run on the rank's
      tokens. A replicated operand with all tokens is cut to the rank's
      block by `shard.all_slice` (whose gradient is an all-gather): the
      embeddings, sliced where they reach the first block's norm. An
      operand that broadcasts over the tokens (a norm's scale and bias, a
      bias) is wrapped in `colo.all_reduce_grad`: each rank's tokens give
      part of its gradient, which is summed over `tp`.
    - The input of a column-parallel region is gathered by
      `shard.all_gather` under its `colo.all_reduce_grad`; autodiff turns
      the pair into a reduce-scatter of the input's gradient.
    - Anything else (the LM head, the function's results) reads the
      `shard.all_gather` of all tokens, whose gradient is the rank's block.

    Per layer that is 2 all-gathers and 2 reduce-scatters of the
    activations in the forward and as many in the backward: the volume of
    the 4 all-reduces of tensor parallelism. Tokens are split into `tp`
    contiguous blocks of their row-major order, along each value's first
    dimension larger than 1: the batch, or the sequence when the batch is
    1 (Megatron's layout is `[s, b, h]`, which makes that the sequence; the
    runtime cuts tensors along their outermost dimension, so no transposes
    are needed). Errors, on the op: a token dimension `tp` does not divide.
    The function records `colo.sequence_parallel = tp`; `tp=1` changes
    nothing.

    Before (`tp=2`, after `colo-tensor-parallel`):
    ```mlir
    %x = colo.embedding %wte, %ids : tensor<256x64xf32>, tensor<4x16xi64>
    %h = colo.layer_norm %x scale %g : tensor<64xf32> {axis = 2 : i64, ...} : tensor<4x16x64xf32>
    %e = colo.all_reduce_grad %h on @mesh grid_axes = [0] : tensor<4x16x64xf32>
    ...
    %y = shard.all_reduce %p on @mesh grid_axes = [0] : tensor<4x16x64xf32> -> tensor<4x16x64xf32>
    %r = colo.add %x, %y : tensor<4x16x64xf32>, tensor<4x16x64xf32>
    ```
    After:
    ```mlir
    %x = colo.embedding %wte, %ids : tensor<256x64xf32>, tensor<4x16xi64>
    %xs = shard.all_slice %x on @mesh grid_axes = [0] slice_axis = 0
          : tensor<4x16x64xf32> -> tensor<2x16x64xf32>
    %gs = colo.all_reduce_grad %g on @mesh grid_axes = [0] : tensor<64xf32>
    %h = colo.layer_norm %xs scale %gs : tensor<64xf32> {axis = 2 : i64, ...} : tensor<2x16x64xf32>
    %hg = shard.all_gather %h on @mesh grid_axes = [0] gather_axis = 0
          : tensor<2x16x64xf32> -> tensor<4x16x64xf32>
    %e = colo.all_reduce_grad %hg on @mesh grid_axes = [0] : tensor<4x16x64xf32>
    ...
    %y = shard.reduce_scatter %p on @mesh grid_axes = [0] scatter_axis = 0
         : tensor<4x16x64xf32> -> tensor<2x16x64xf32>
    %r = colo.add %xs, %y : tensor<2x16x64xf32>, tensor<2x16x64xf32>
    ```
  }];
  let options = [
    Option<"tp", "tp", "int64_t", "1", "Ranks on the tensor-parallel mesh axis">,
    Option<"func", "func", "std::string", "\"forward\"",
           "Name of the function to split">,
  ];
  let statistics = [
    Statistic<"numScattered", "num-scattered",
              "Row-parallel all-reduces turned into reduce-scatters">,
    Statistic<"numGathered", "num-gathered",
              "Column-parallel inputs gathered from the rank's tokens">,
  ];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

def ColoUlysses : Pass<"colo-ulysses", "::mlir::ModuleOp"> {
  let summary = "DeepSpeed-Ulysses sequence parallelism: sequence blocks, all-to-all around attention";
  let description = [{
    Ulysses (Jacobs et al., 2023) on `func` (`@forward`) before
    `colo-build-train-step`: every rank of the mesh's `sp` axis holds a
    contiguous block of `s / sp` positions of every sample.

    - The function's arguments of rank >= 2 are `[b, s, ...]`: each rank cuts
      its block of positions (`shard.all_slice`), and "dimension d carries
      the sequence" propagates through every op whose dimension table keeps
      it (elementwise ops, norms, matmuls with weights, embeddings, slices,
      transposes, and reshapes that keep the sequence whole in one
      dimension, such as `[b, s, h] -> [b*s, h]`).
    - Before each `colo.attention`, q, k and v go from sequence blocks
      `[b, h, s/sp, d]` to head blocks `[b, h/sp, s, d]` with one
      `shard.all_to_all` each, and the output goes back with another:
      attention sees whole sequences (the causal mask is unchanged) and the
      rank's heads (grouped-query attention keeps its groups when `sp`
      divides the key/value heads).
    - A replicated operand aligned with the sequence (position embeddings,
      rotary tables) is cut to the rank's positions; one that broadcasts
      over the tokens (weights, norm parameters, embedding tables) goes
      through `colo.all_reduce_grad`, so its gradient is summed over `sp`.
    - The LM head (a matmul whose result is returned) and anything else that
      mixes positions read the `shard.all_gather` of all tokens, whose
      gradient is the rank's block: the logits and the loss are replicated.
    - After `colo-tensor-parallel` (as DeepSpeed-Ulysses composes with
      Megatron), its entries (`colo.all_reduce_grad`) and sums
      (`shard.all_reduce`) over `tp` run on the rank's tokens, and the
      all-to-alls exchange the rank's tp heads.

    The runtime cuts and joins along the outermost dimension and its
    all-to-all splits and concatenates along one dimension: reshapes and
    transposes bring the `sp` blocks outermost around each collective.
    Errors, on the op: `sp` not dividing the sequence or the (key/value)
    heads. The function records `colo.ulysses = sp`; `sp=1` changes nothing.

    Before (`sp=2`):
    ```mlir
    %o = colo.attention %q, %k, %v {causal, scale = 0.25 : f64}
         : tensor<4x4x16x16xf32>, tensor<4x4x16x16xf32>, tensor<4x4x16x16xf32>
    ```
    After (q shown; k, v and the output alike):
    ```mlir
    %q5 = colo.reshape %q : tensor<4x4x8x16xf32> -> tensor<4x2x2x8x16xf32>
    %qt = colo.transpose %q5 permutation = [1, 0, 2, 3, 4] : tensor<4x2x2x8x16xf32>
    %qa = shard.all_to_all %qt on @mesh grid_axes = [0] split_axis = 0 concat_axis = 0
          : tensor<2x4x2x8x16xf32> -> tensor<2x4x2x8x16xf32>
    %qh = colo.transpose %qa permutation = [1, 2, 0, 3, 4] : tensor<2x4x2x8x16xf32>
    %qs = colo.reshape %qh : tensor<4x2x2x8x16xf32> -> tensor<4x2x16x16xf32>
    %o = colo.attention %qs, %ks, %vs {causal, scale = 0.25 : f64}
         : tensor<4x2x16x16xf32>, tensor<4x2x16x16xf32>, tensor<4x2x16x16xf32>
    ```
  }];
  let options = [
    Option<"sp", "sp", "int64_t", "1", "Ranks on the Ulysses mesh axis \"sp\"">,
    Option<"func", "func", "std::string", "\"forward\"",
           "Name of the function to split">,
  ];
  let statistics = [
    Statistic<"numAllToAll", "num-all-to-all",
              "All-to-alls around attention (4 per attention)">,
    Statistic<"numGathered", "num-gathered", "All-gathers of the sequence">,
    Statistic<"numSummed", "num-summed",
              "Replicated values whose gradient is summed over sp">,
  ];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

def ColoRingAttention : Pass<"colo-ring-attention", "::mlir::ModuleOp"> {
  let summary = "Ring attention: sequence blocks, key and value blocks passed around the ring";
  let description = [{
    Ring attention (Liu et al., 2023) on `func` (`@forward`) before
    `colo-build-train-step`: every rank of the mesh's `sp` axis (`ring`
    ranks) holds `s / ring` positions of every sample, in zigzag order by
    default (with the sequence in `2 ring` chunks, rank r holds chunks r and
    `2 ring - 1 - r`, so that under a causal mask every rank scores as many
    pairs; Colossal-AI's and Brandon et al.'s balancing) or contiguous
    (`zigzag=false`). The tokens are cut and propagated as colo-ulysses cuts
    them (passes/Parallel/SequenceSplit.h): per-token ops run on the rank's
    tokens, tables aligned with the positions are cut (permuted first in
    zigzag order), replicated operands get their gradients summed over the
    ring, and the LM head reads all tokens, gathered and put back in order.

    Each `colo.attention` keeps the rank's queries. Its key and value blocks
    go around the ring (`shard.shift` by one, `ring - 1` times: at step t
    the rank holds rank `(r - t) mod ring`'s, grouped-query heads unrepeated)
    and each block is folded into an online softmax: a running row maximum
    (without gradient: the result does not depend on it), the rescaled sum
    of `exp(S_t - m_t) v_t` and of the row sums, the output their quotient.
    The causal mask of step t depends on the rank: one constant holds every
    rank's block and each takes its own (`shard.all_slice`). Scores and the
    softmax are f32 for 16-bit models. The gradient of a shift is the shift
    back: the backward sends the key and value gradients around the ring the
    other way. Per layer and microbatch each rank sends `2 (ring - 1)` key
    and value blocks forward and as many gradient blocks backward.

    Errors, on the op: `ring` (times 2 in zigzag order) not dividing the
    sequence, attention dropout, an attention mask operand (only the causal
    flag is implemented). The function records `colo.ring = ring`;
    `ring=1` changes nothing.
  }];
  let options = [
    Option<"ring", "ring", "int64_t", "1", "Ranks on the ring (the mesh axis \"sp\")">,
    Option<"zigzag", "zigzag", "bool", "true",
           "Give rank r chunks r and 2 ring - 1 - r of the sequence (else one contiguous block)">,
    Option<"func", "func", "std::string", "\"forward\"",
           "Name of the function to split">,
  ];
  let statistics = [
    Statistic<"numShifts", "num-shifts",
              "Shifts of key and value blocks (2 (ring - 1) per attention)">,
    Statistic<"numGathered", "num-gathered", "All-gathers of the sequence">,
    Statistic<"numSummed", "num-summed",
              "Replicated values whose gradient is summed over the ring">,
  ];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

def ColoTensorParallel2D : Pass<"colo-tensor-parallel-2d", "::mlir::ModuleOp"> {
  let summary = "2-D and 2.5-D tensor parallelism: SUMMA over a q x q grid of ranks";
  let description = [{
    2-D tensor parallelism (Xu et al., 2021; Colossal-AI's `parallel_2d`) on
    `func` (`@forward`) before `colo-build-train-step`, over the mesh axes
    "row" (i) and "col" (j), `q` ranks each. Rank (i, j) holds block i of
    the batch and block j of the features of every activation, and block
    (i, j) of every linear layer's weight [in, out] (`#colo.shard<split_axes
    = [["row"], ["col"]]>`, or transposed for a weight stored [out, in]).

    A product `Y = X W` of split features with a weight read once is SUMMA in
    `q` steps: at step k the ranks of row i receive `X_ik` from rank (i, k)
    (`shard.broadcast` over "col") and the ranks of column j receive `W_kj`
    from rank (k, j) (over "row"), and each adds `X_ik W_kj` to its `Y_ij`.
    Step k + 1's broadcasts come before step k's product, so two blocks are
    held at a time. The backward is the broadcasts' adjoint: the gradients
    of `X_ik` and `W_kj` are summed to their roots (`shard.reduce`), which is
    Colossal-AI's ABT and ATB products. Per product each rank sends, on
    average, `(q - 1) / q` of the q blocks of X and of W forward, as many
    gradient blocks backward.

    The rest keeps the layout. The inputs are cut to the rank's samples
    (`shard.all_slice` over "row"). Per-feature weights (biases, norm
    scales, embedding and position tables) hold block j of their features
    on every row, with their gradients summed over "row"
    (`colo.all_reduce_grad`). Layer and RMS norms over the split features
    sum the rank's statistics over "col", with their gradients summed too.
    Attention runs on the rank's samples and heads (q divides the query and
    the key/value heads). A product of two operands split along their
    contracted features (an LM head on the tied embedding table) is summed
    over "col" (the logits reduce-scattered along the vocabulary). A
    convolution of the rank's samples with trainable filters (a ViT's patch
    embedding) computes the column's output channels; a weight broadcast to
    the batch (a ViT's class token) holds the column's features and is
    broadcast to the rank's samples. The results are gathered whole but the
    first (the logits), which stays the rank's block: the function records
    its axes (`colo.loss_sample_axes`, `colo.loss_class_axis`), and
    `colo-build-train-step` computes the loss on the blocks.

    Errors, on the op: sizes q does not divide, dropout, ops that mix or
    reduce the split features or the batch other than the above. The
    function records `colo.tensor_parallel2d = q`; `q=1` changes nothing.

    With `depth` d > 1 this is 2.5-D tensor parallelism (Wang et al., 2021,
    Tesseract; Colossal-AI's `parallel_2p5d`): d copies of the grid on mesh
    axis "depth", each on block k of the batch (the inputs are cut over
    "depth" and "row"), every weight whole on each copy and its gradient
    summed over "depth"; the samples of the results and of the loss are
    over "depth" too.
  }];
  let options = [
    Option<"q", "q", "int64_t", "1", "The grid's side: q x q ranks (mesh axes \"row\" and \"col\")">,
    Option<"depth", "depth", "int64_t", "1",
           "2.5-D: d copies of the grid (mesh axis \"depth\"), each on 1/d of the batch">,
    Option<"func", "func", "std::string", "\"forward\"", "Name of the function to split">,
  ];
  let statistics = [
    Statistic<"numSumma", "num-summa", "Products computed by SUMMA">,
    Statistic<"numNorms", "num-norms", "Norms whose statistics are summed over \"col\"">,
    Statistic<"numSummed", "num-summed",
              "Values whose gradient is summed over \"row\" or \"col\"">,
  ];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

def ColoTensorParallel3D : Pass<"colo-tensor-parallel-3d", "::mlir::ModuleOp"> {
  let summary = "3-D tensor parallelism: products over a q x q x q cube of ranks";
  let description = [{
    3-D tensor parallelism (Bian et al., 2021; Colossal-AI's `parallel_3d`)
    on `func` (`@forward`) before `colo-build-train-step`, over the mesh
    axes "x", "y" and "z", `q` ranks each. An activation is in one of two
    layouts: A, its features split over "y" and its samples over ("x",
    "z"); B, its features over "z" and its samples over ("x", "y"). The
    inputs are cut to A.

    A product `Y = X W` of X in A with a weight [K, N] read once, whose
    rank's block is K over ("y", "x") and N over "z":
    ```
    X' = shard.all_gather X over "z"        [b / q, K / q]  (samples of x)
    W' = shard.all_gather W over "x"        [K / q, N / q]  (K block y, N block z)
    Y  = shard.reduce_scatter (X' W') over "y" along the samples: B
    ```
    and a product from B to A exchanges "y" and "z". Both gathers go
    through `colo.all_reduce_grad`, so the backward reduce-scatters their
    gradients (dX over "z", dW over "x") and gathers Y's over "y": Colossal-AI's
    all-gather, reduce-scatter over three axes. A weight stored [out, in] is
    read through its transpose.

    The rest keeps its value's layout, as in `colo-tensor-parallel-2d`:
    per-feature weights hold the layout's feature block, their gradients
    summed over its sample axes; norms sum their statistics over its
    feature axis; attention runs on the rank's samples and heads; a product
    of two feature-split operands (a tied LM head) is summed over the
    feature axis (the logits reduce-scattered along the vocabulary); the
    results are gathered whole but the logits, left split for the loss. The
    function records `colo.tensor_parallel3d = q`; `q=1` changes nothing.
  }];
  let options = [
    Option<"q", "q", "int64_t", "1", "The cube's side: q^3 ranks (mesh axes \"x\", \"y\", \"z\")">,
    Option<"func", "func", "std::string", "\"forward\"", "Name of the function to split">,
  ];
  let statistics = [
    Statistic<"numProducts", "num-products", "Products computed over the cube">,
    Statistic<"numNorms", "num-norms", "Norms whose statistics are summed over a feature axis">,
    Statistic<"numSummed", "num-summed", "Values whose gradient is summed over the ranks">,
  ];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

def ColoLowerToLinalg : Pass<"colo-lower-to-linalg"> {
  let summary = "Lowers colo kernel ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Converts the ops a CPU or GPU kernel is made of into upstream ops on
    tensors, one pattern per op (or op family), following the interpreter's
    semantics:

    - unary and binary elementwise ops, clamp, gelu (erf or tanh form),
      compare, select, convert and broadcast_to become one parallel
      `linalg.generic` each, reading operands with NumPy broadcasting through
      their indexing maps (a size-1 dimension reads index 0);
    - reduce_sum / reduce_mean / reduce_max become a reduction generic
      (`keep_dims` through `tensor.expand_shape`); softmax subtracts the max,
      log_softmax is `x - max - log(sum(exp(x - max)))`; layer_norm, rms_norm
      and batch_norm compute two-pass biased variances (batch_norm's running
      variance uses the unbiased one); cross_entropy and mse_loss reduce to a
      0-d mean (NaN when every label is ignored);
    - transpose is `linalg.transpose`, reshape a collapse and/or expand,
      slice a strided `tensor.extract_slice`, concat `tensor.insert_slice`s,
      gather and embedding a generic with `tensor.extract` at the index
      (clamped into range, so a bad index cannot read out of bounds);
    - constant is `arith.constant`; dropout with ratio 0 is the identity
      (a positive ratio is an error: CPU kernels draw no random numbers yet).

    Arithmetic on f16 and bf16 is done in f32; reductions accumulate in f32
    for f32, f16 and bf16 inputs (in f64 for f64), where the interpreter
    accumulates in double. Ops without a pattern (matmul, convolution,
    pooling, attention, globals) are left as they are.

    Before:
    ```mlir
    %y = colo.add %x, %b : tensor<4x8xf32>, tensor<8xf32>
    ```
    After:
    ```mlir
    %e = tensor.empty() : tensor<4x8xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
           affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>],
           iterator_types = ["parallel", "parallel"]}
           ins(%x, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%a: f32, %c: f32, %out: f32):
      %s = arith.addf %a, %c : f32
      linalg.yield %s : f32
    } -> tensor<4x8xf32>
    ```
  }];
  let dependentDialects = [
    "mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect",
    "mlir::arith::ArithDialect", "mlir::math::MathDialect",
  ];
}

//===----------------------------------------------------------------------===//
// Step programs (exec dialect)
//===----------------------------------------------------------------------===//

def ColoOverlapCollectives : Pass<"colo-overlap-collectives", "::colo::exec::ProgramOp"> {
  let summary = "Lets collectives run while the steps that do not need them compute";
  let description = [{
    An all-reduce whose buffers the next step does not touch (a
    data-parallel gradient bucket, reduced during the backward and read by
    the optimizer) keeps running: its `exec.wait` moves to just before the
    first later step that touches its input or output (or to the end). So
    do broadcasts (SUMMA's blocks for the next product, which arrive while
    the current one multiplies), shifts and transfers.
    Waits that end up before the same step keep the order of their
    collectives.

    Before:
    ```mlir
    %t = exec.all_reduce average "bucket.0" %g -> %g over [0] : ...
    exec.wait %t "bucket.0.wait"
    exec.kernel @k4_mul "fc1.mul.9" ins(%a : ...) outs(%b : ...)
    exec.kernel @k5_adam "fc.adam.12" ins(%g, ... : ...) outs(...)
    ```
    After:
    ```mlir
    %t = exec.all_reduce average "bucket.0" %g -> %g over [0] : ...
    exec.kernel @k4_mul "fc1.mul.9" ins(%a : ...) outs(%b : ...)
    exec.wait %t "bucket.0.wait"
    exec.kernel @k5_adam "fc.adam.12" ins(%g, ... : ...) outs(...)
    ```
  }];
  let statistics = [
    Statistic<"numOverlapped", "num-overlapped", "All-reduces overlapped">,
  ];
}

def ColoInsertFrees : Pass<"colo-insert-frees", "::colo::exec::ProgramOp"> {
  let summary = "Ends each temporary buffer's lifetime after its last use";
  let description = [{
    Puts an `exec.free` of every `temp` buffer right after the last step
    that touches it or a view of it (a wait counts as touching the buffers
    of its communication). Buffers that `exec.return` reports live to the
    end and are not freed, nor are buffers no step touches or that are
    freed already.
  }];
}

def ColoPlanMemory : Pass<"colo-plan-memory", "::colo::exec::ProgramOp"> {
  let summary = "Places the temporaries in one arena by their lifetimes";
  let description = [{
    Gives every `temp` buffer an arena `offset` (a multiple of 64) so that
    buffers whose lifetimes overlap never share bytes, and sets the
    program's `arena_bytes`. A lifetime runs from the first step that
    touches the buffer or a view of it to its `exec.free` (without one, to
    the end). Greedy by size, largest first, each at the lowest offset that
    fits among the buffers placed before it that it overlaps in time.
  }];
  let statistics = [
    Statistic<"numPlaced", "num-placed", "Temporaries placed">,
  ];
}

#endif // COLO_PASSES
