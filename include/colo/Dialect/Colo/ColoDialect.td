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
}

class Colo_Op<string mnemonic, list<Trait> traits = []>
    : Op<Colo_Dialect, mnemonic, traits>;

#endif // COLO_DIALECT
