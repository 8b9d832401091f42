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

#endif // COLO_ATTRS
