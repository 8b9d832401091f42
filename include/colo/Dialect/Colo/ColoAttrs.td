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
  let summary = "How a global is divided among the ranks of mesh axes";
  let description = [{
    The rank with coordinate c in the group of `axes` (the ranks whose mesh
    coordinates differ only along them, the first axis slowest) holds block
    c of `parts` along dimension `dim` of the global's tensor; with `groups`
    > 1 the dimension is first viewed as `groups` equal groups (a fused QKV
    projection) and the rank holds block c of each, concatenated. With
    `flat` (ZeRO-3) the tensor is flattened and padded with zeros to a
    multiple of `parts` first, and `dim` does not apply. The global's type
    and initial value stay the whole tensor; its loads and stores have the
    local type. `parts` is the product of the axes' sizes.

    ```mlir
    colo.global trainable @c_attn.weight : tensor<8x24xf32> {shard = #colo.shard<axes = ["tp"], dim = 1, parts = 2, groups = 3>}
    colo.global trainable @proj : tensor<3x4xf32> {shard = #colo.shard<axes = ["dp"], dim = 0, parts = 2, flat = true>}
    ```
  }];
  let parameters = (ins "::mlir::ArrayAttr":$axes,
                        "int64_t":$dim,
                        "int64_t":$parts,
                        DefaultValuedParameter<"int64_t", "1">:$groups,
                        DefaultValuedParameter<"bool", "false">:$flat);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // COLO_ATTRS
