#ifndef COLO_EXEC_BASE
#define COLO_EXEC_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Exec_Dialect : Dialect {
  let name = "exec";
  let cppNamespace = "::colo::exec";
  let summary = "The step program of one rank: buffers, calls, communication";
  let description = [{
    The `exec` dialect is what `colo compile` makes of a training step
    before it writes `program.pb`: one `exec.program` per rank program (per
    pipeline stage under pipeline parallelism) whose body runs in order, once
    per training step. Buffers are `memref`s in a memory space
    (`#exec.space<device>`, `host`, `pinned_host`) declared by `exec.buffer`
    (storage) or `exec.view` (another shape of the same bytes). Steps are
    generated-kernel calls, library calls (GEMM, convolution, pooling),
    copies, and collectives and point-to-point messages, each of which
    produces a `!exec.token` that an `exec.wait` finishes. `exec.free` ends
    a buffer's lifetime. Scheduling (`colo-overlap-collectives`), lifetimes
    (`colo-insert-frees`) and memory placement (`colo-plan-memory`) are
    passes on this IR, and `program.pb` is its serialization
    (docs/program-format.md gives the fields).
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  // What a step costs, from the colo ops it runs (CostOpInterface), written
  // into program.pb for predicted timelines: the FLOPs of its matrix
  // products and convolutions, the bytes its memory-bound ops read and
  // write (a transfer's: the bytes over the link), and whether it runs ops
  // that colo-recompute cloned.
  let discardableAttrs = (ins
    "::mlir::IntegerAttr":$flops,
    "::mlir::IntegerAttr":$bytes,
    "::mlir::UnitAttr":$recomputed
  );
}

class Exec_Op<string mnemonic, list<Trait> traits = []>
    : Op<Exec_Dialect, mnemonic, traits>;

def Exec_MemorySpace : I32EnumAttr<"MemorySpace", "where a buffer's bytes live", [
    I32EnumAttrCase<"device", 0>, I32EnumAttrCase<"host", 1>,
    I32EnumAttrCase<"pinned_host", 2>]> {
  let cppNamespace = "::colo::exec";
  let genSpecializedAttr = 0;
}
def Exec_MemorySpaceAttr : EnumAttr<Exec_Dialect, Exec_MemorySpace, "space"> {
  let assemblyFormat = "`<` $value `>`";
}

def Exec_BufferKind : I32EnumAttr<"BufferKind", "who fills a buffer and how long it lives", [
    I32EnumAttrCase<"temp", 0>, I32EnumAttrCase<"state", 1>,
    I32EnumAttrCase<"input", 2>, I32EnumAttrCase<"constant", 3>]> {
  let cppNamespace = "::colo::exec";
  let genSpecializedAttr = 0;
}
def Exec_BufferKindAttr : EnumAttr<Exec_Dialect, Exec_BufferKind, "kind">;

def Exec_Reduction : I32EnumAttr<"Reduction", "how a collective combines values", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"average", 1>,
    I32EnumAttrCase<"max", 2>]> {
  let cppNamespace = "::colo::exec";
  let genSpecializedAttr = 0;
}
def Exec_ReductionAttr : EnumAttr<Exec_Dialect, Exec_Reduction, "reduction">;

def Exec_ConvMode : I32EnumAttr<"ConvMode", "what a convolution step computes", [
    I32EnumAttrCase<"forward", 0>, I32EnumAttrCase<"backward_data", 1>,
    I32EnumAttrCase<"backward_weights", 2>]> {
  let cppNamespace = "::colo::exec";
  let genSpecializedAttr = 0;
}
def Exec_ConvModeAttr : EnumAttr<Exec_Dialect, Exec_ConvMode, "conv_mode">;

def Exec_PoolMode : I32EnumAttr<"PoolMode", "what a pooling step computes", [
    I32EnumAttrCase<"max_forward", 0>, I32EnumAttrCase<"max_backward", 1>,
    I32EnumAttrCase<"avg_forward", 2>, I32EnumAttrCase<"avg_backward", 3>]> {
  let cppNamespace = "::colo::exec";
  let genSpecializedAttr = 0;
}
def Exec_PoolModeAttr : EnumAttr<Exec_Dialect, Exec_PoolMode, "pool_mode">;

def Exec_ShardAttr : AttrDef<Exec_Dialect, "Shard"> {
  let mnemonic = "shard";
  let summary = "The block of a larger tensor that a state buffer holds";
  let description = [{
    Block `index` of `parts` of the tensor of shape `full_shape`, where the
    group is the ranks along `mesh_axes`: without `flat`, the block of
    dimension `dim` (with `groups` > 1 that dimension viewed as `groups`
    equal groups, the index-th part of each); with `flat`, the tensor
    flattened and zero-padded to a multiple of `parts`, or, with
    `flat_parts` > 0, the block of `dim` that the group's first axes split,
    flattened and cut by its last axes into `flat_parts`; with `inner_parts`
    > 0 (2-D tensor parallelism), the group's last axes, of `inner_parts`
    ranks, split dimension `inner_dim` and its first axes dimension `dim`.
    Program.proto's `Shard`.

    ```mlir
    #exec.shard<full_shape = [768, 2304], dim = 1, groups = 3, flat = false, mesh_axes = [1]>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$full_shape, "int64_t":$dim,
                        "int64_t":$groups, "bool":$flat,
                        ArrayRefParameter<"int32_t">:$mesh_axes,
                        DefaultValuedParameter<"int64_t", "0">:$flat_parts,
                        DefaultValuedParameter<"int64_t", "0">:$inner_dim,
                        DefaultValuedParameter<"int64_t", "0">:$inner_parts);
  let assemblyFormat = [{
    `<` `full_shape` `=` `[` $full_shape `]` `,` `dim` `=` $dim `,` `groups` `=` $groups `,`
    `flat` `=` $flat `,` `mesh_axes` `=` `[` $mesh_axes `]`
    (`,` `flat_parts` `=` $flat_parts^)?
    (`,` `inner_parts` `=` $inner_parts^ `,` `inner_dim` `=` $inner_dim)? `>`
  }];
}

def Exec_TokenType : TypeDef<Exec_Dialect, "Token"> {
  let mnemonic = "token";
  let summary = "Communication in flight";
  let description = [{
    Produced by a collective or a message; the `exec.wait` that takes it
    finishes the communication. Until then no step touches the
    communication's buffers.
  }];
}

#endif // COLO_EXEC_BASE
