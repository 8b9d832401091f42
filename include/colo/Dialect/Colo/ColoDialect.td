#ifndef COLO_DIALECT
#define COLO_DIALECT

include "mlir/IR/OpBase.td"

def Colo_Dialect : Dialect {
  let name = "colo";
  let cppNamespace = "::colo";
  let summary = "Tensor-level training graphs: model state, layers, losses, updates";
  let description = [{
    The `colo` dialect holds forward and training graphs of neural networks on
    statically shaped tensors. Model state (parameters, buffers, optimizer state)
    lives in module-level `colo.global` ops whose data is either inline, a lazy
    reference to an external file, or an initializer spec, so that models of any
    size can be imported and planned without reading their weights. Every op
    reports its cost (FLOPs, bytes read and written) through
    `ColoCostOpInterface`.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;

  // The attributes colo's passes leave on ops they do not own (functions,
  // the module, shard ops) for later passes and the compiler to read. Each
  // has a generated helper (`ColoDialect::StageAttrHelper(ctx).getAttr(op)`)
  // and is checked by verifyOperationAttribute / verifyRegionArgAttribute:
  // a misspelt or mistyped `colo.*` attribute is an error, not ignored.
  let discardableAttrs = (ins
    // shard.grid: one name per mesh axis ("pp", "dp", "sp", "tp", "row",
    // "col").
    "::mlir::ArrayAttr":$axes,
    // Any op: the pipeline stage it runs in (colo-pipeline-stages).
    "::mlir::IntegerAttr":$stage,
    // An op colo-recompute cloned before the backward: the segment it
    // recomputes (the block "h.3", or the attention "h.3.attn").
    "::mlir::StringAttr":$recomputed,
    // An op colo-pipeline cloned per microbatch: the microbatch's index.
    "::mlir::IntegerAttr":$micro,
    // @forward / @train_step: how many stages the ops are labeled with.
    "::mlir::IntegerAttr":$pipeline_stages,
    // A pipeline rank's step function: its stage, and its microbatch count.
    "::mlir::IntegerAttr":$pipeline_stage,
    "::mlir::IntegerAttr":$microbatches,
    // A function split by a plan pass: the size of the axis it was split over.
    "::mlir::IntegerAttr":$batch_parts,
    "::mlir::IntegerAttr":$data_parallel,
    "::mlir::IntegerAttr":$tensor_parallel,
    "::mlir::IntegerAttr":$tensor_parallel2d,
    "::mlir::IntegerAttr":$tensor_parallel3d,
    "::mlir::IntegerAttr":$sequence_parallel,
    "::mlir::IntegerAttr":$ulysses,
    "::mlir::IntegerAttr":$ring,
    "::mlir::IntegerAttr":$vocab_parallel,
    // @forward / @train_step whose first result a tensor grid left split
    // (colo-tensor-parallel-2d/-3d): the mesh axes its samples are split
    // over, and the one its last dimension (the classes) is split over,
    // absent when each rank holds all of them. The loss is computed on the
    // blocks (buildSplitCrossEntropy).
    "::mlir::ArrayAttr":$loss_sample_axes,
    "::mlir::StringAttr":$loss_class_axis,
    // @train_step after colo-zero: the ZeRO stage.
    "::mlir::IntegerAttr":$zero,
    // A ZeRO all-gather: the phase it serves ("forward", "backward").
    "::mlir::StringAttr":$zero_gather,
    // A send or receive between pipeline ranks: the message's tag.
    "::mlir::IntegerAttr":$tag,
    // A global (or its per-stage copy): the parameter's name in the model.
    "::mlir::StringAttr":$param_name,
    // A global that holds optimizer state.
    "::mlir::UnitAttr":$optimizer_state,
    // A global that colo-offload keeps in host memory, or an op it runs on
    // the host (the optimizer's update).
    "::mlir::UnitAttr":$on_host,
    // A transfer colo-offload's chunk schedule issues: the parameter chunk
    // whose fetch it belongs to.
    "::mlir::IntegerAttr":$chunk,
    // A transfer colo-offload-activations' schedule issues: the chunk of
    // stashed activations whose fetch back to the device it belongs to.
    "::mlir::IntegerAttr":$stash,
    // An integer function argument: its values lie in [0, int_max), or are
    // int_ignored (labels: the loss's ignore_index).
    "::mlir::IntegerAttr":$int_max,
    "::mlir::IntegerAttr":$int_ignored,
    // The module: where it came from (onnx, torchscript, synthetic), and
    // the exporter's name and opset or the synthetic family.
    "::mlir::StringAttr":$source,
    "::mlir::StringAttr":$producer,
    "::mlir::IntegerAttr":$opset,
    "::mlir::StringAttr":$family,
    // A kernel module between colo's kernel passes: its entry points.
    "::mlir::ArrayAttr":$kernels
  );
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
}

class Colo_Op<string mnemonic, list<Trait> traits = []>
    : Op<Colo_Dialect, mnemonic, traits>;

#endif // COLO_DIALECT
