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

#endif // COLO_INTERFACES
