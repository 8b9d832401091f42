#ifndef COLO_ATTRS
#define COLO_ATTRS

include "colo/Dialect/Colo/ColoDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "colo/Dialect/Colo/ColoEnums.td"

class Colo_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Colo_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Colo_ExternalDataAttr : Colo_Attr<"ExternalData", "external"> {
  let summary = "Lazy reference to tensor data stored in a file";
  let description = [{
    Names the bytes of a tensor in an external file (as ONNX external data
    does): `path` is absolute, `offset` and `length` are in bytes. Nothing is
    read until a consumer needs the values.

    ```mlir
    #colo.external<path = "/models/gpt.onnx.data", offset = 0, length = 4096>
    ```
  }];
  let parameters = (ins StringRefParameter<"file holding the data">:$path,
                        "int64_t":$offset, "int64_t":$length);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Colo_InitializerAttr : Colo_Attr<"Initializer", "init"> {
  let summary = "Initializer spec of a tensor whose values are not stored";
  let description = [{
    Describes how a tensor is initialized instead of storing it, so synthetic
    models of any size cost no memory until they run. `distribution` is one of
    `normal`, `uniform`, `zeros`, `ones`; `a` and `b` are its parameters (mean
    and standard deviation, or lower and upper bound).

    ```mlir
    #colo.init<distribution = "normal", a = 0.0 : f64, b = 2.0e-02 : f64>
    ```
  }];
  let parameters = (ins StringRefParameter<"distribution">:$distribution,
                        "::mlir::FloatAttr":$a, "::mlir::FloatAttr":$b);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Colo_ShardAttr : Colo_Attr<"Shard", "shard"> {
  let summary = "How a global is divided among the ranks of the mesh, per dimension";
  let description = [{
    Entry d of `split_axes` names the mesh axes that split dimension d of
    the global's tensor (`[]` where every rank holds it whole; an axis splits
    at most one dimension), and entry d of `parts` is that dimension's
    number of blocks, the product of its axes' sizes (1 where whole). The
    rank whose coordinate in the group of dimension d's axes (the ranks
    whose mesh coordinates differ only along them, the first axis slowest)
    is c holds block c along dimension d, for every d at once. With `groups`
    > 1 the split dimension (the last one where two are split) is first
    viewed as `groups` equal groups (a fused QKV projection) and the rank
    holds block c of each, concatenated.
    With `flat` (ZeRO-3) the tensor is flattened and padded with zeros to a
    multiple of its parts first, and `split_axes` has one entry, for the
    flattened tensor. With `flat_axes` (ZeRO-3 over tensor parallelism) the
    block that the split gives a rank is then flattened, zero-padded to a
    multiple of `flat_parts` (the product of those axes' sizes) and cut
    again: the rank whose coordinate in the group of `flat_axes` is c holds
    part c. The global's type and initial value stay the whole tensor; its
    loads and stores have the local type.

    ```mlir
    colo.global trainable @c_attn.weight : tensor<8x24xf32> {shard = #colo.shard<groups = 3, split_axes = [[], ["tp"]], parts = [1, 2]>}
    colo.global trainable @w : tensor<8x8xf32> {shard = #colo.shard<split_axes = [["row"], ["col"]], parts = [2, 2]>}
    colo.global trainable @proj : tensor<3x4xf32> {shard = #colo.shard<flat = true, split_axes = [["dp"]], parts = [2]>}
    colo.global trainable @fc : tensor<8x6xf32> {shard = #colo.shard<split_axes = [[], ["tp"]], parts = [1, 2], flat_axes = ["dp"], flat_parts = 2>}
    ```
  }];
  let parameters = (ins "::mlir::ArrayAttr":$split_axes,
                        ArrayRefParameter<"int64_t">:$parts,
                        DefaultValuedParameter<"int64_t", "1">:$groups,
                        DefaultValuedParameter<"bool", "false">:$flat,
                        OptionalParameter<"::mlir::ArrayAttr">:$flat_axes,
                        DefaultValuedParameter<"int64_t", "1">:$flat_parts);
  let assemblyFormat = [{
    `<` (`groups` `=` $groups^ `,` ` `)? (`flat` `=` $flat^ `,` ` `)?
    `split_axes` `=` $split_axes `,` `parts` `=` `[` $parts `]`
    (`,` `flat_axes` `=` $flat_axes^ `,` `flat_parts` `=` $flat_parts)? `>`
  }];
  let extraClassDeclaration = [{
    /// Dimension `dim` of a rank-`rank` tensor split over `axis` into
    /// `parts` blocks (of each of `groups` groups).
    static ShardAttr split(::mlir::MLIRContext *context, int64_t rank, int64_t dim,
                           ::llvm::StringRef axis, int64_t parts, int64_t groups = 1);
    /// The flattened tensor split over `axis` into `parts` blocks.
    static ShardAttr flattened(::mlir::MLIRContext *context, ::llvm::StringRef axis,
                               int64_t parts);
    /// The block that `split` gives a rank, flattened and split over `axis`
    /// into `parts`.
    static ShardAttr flattenedBlock(ShardAttr split, ::llvm::StringRef axis, int64_t parts);
  }];
  let genVerifyDecl = 1;
}

#endif // COLO_ATTRS
