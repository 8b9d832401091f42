#ifndef COLO_INTERFACES
#define COLO_INTERFACES

include "mlir/IR/OpBase.td"

def Colo_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::colo";
  let description = [{
    The cost of one execution of an op for its static shapes: floating-point
    operations (a multiply-add counts as two) and bytes read and written. The
    planner turns these into time per device class; the cost class says which
    throughput applies (tensor-core math or memory-bound work).
  }];
  let methods = [
    InterfaceMethod<"Floating-point operations of one execution.",
      "int64_t", "getFlops", (ins), [{}], [{
        return ::colo::detail::defaultElementwiseFlops($_op);
      }]>,
    InterfaceMethod<"Bytes read from memory by one execution.",
      "int64_t", "getBytesRead", (ins), [{}], [{
        return ::colo::detail::operandBytes($_op);
      }]>,
    InterfaceMethod<"Bytes written to memory by one execution.",
      "int64_t", "getBytesWritten", (ins), [{}], [{
        return ::colo::detail::resultBytes($_op);
      }]>,
    InterfaceMethod<"Which throughput the op runs at.",
      "::colo::CostClass", "getCostClass", (ins), [{}], [{
        return ::colo::CostClass::Memory;
      }]>,
  ];
}

def Colo_DimensionMapOpInterface : OpInterface<"DimensionMapOpInterface"> {
  let cppNamespace = "::colo";
  let description = [{
    How an op carries each operand dimension into its result: for operand i
    and its dimension d, the result dimension it becomes (>= 0), `kReduced`
    (summed, averaged, normalized, contracted over) or `kMixed` (combined
    across positions: windows, indices, heads, concatenation; or a weight
    that is not split). Every pass that splits a dimension over ranks or
    kernel pieces (batch splitting, tensor, sequence and Ulysses
    parallelism, kernel pieces) follows a split through an op by this map
    alone, so an op states how it shards once. The default is NumPy
    broadcasting: operand dimensions right-aligned with the result's.
  }];
  let methods = [
    InterfaceMethod<"[operand][operand dimension] -> result dimension of result 0.",
      "::colo::DimMap", "getDimensionMap", (ins), [{}], [{
        return ::colo::detail::broadcastingDimensionMap($_op);
      }]>,
  ];
}

#endif // COLO_INTERFACES
