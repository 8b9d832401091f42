#ifndef COLO_ENUMS
#define COLO_ENUMS

include "colo/Dialect/Colo/ColoDialect.td"
include "mlir/IR/EnumAttr.td"

def Colo_ComparePredicate : I32EnumAttr<"ComparePredicate",
    "elementwise comparison", [
      I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>,
      I32EnumAttrCase<"lt", 2>, I32EnumAttrCase<"le", 3>,
      I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::colo";
  let genSpecializedAttr = 0;
}
def Colo_ComparePredicateAttr
    : EnumAttr<Colo_Dialect, Colo_ComparePredicate, "predicate">;

def Colo_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "how gelu evaluates the normal CDF", [
      I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"tanh", 1>]> {
  let cppNamespace = "::colo";
  let genSpecializedAttr = 0;
}
def Colo_GeluApproximationAttr
    : EnumAttr<Colo_Dialect, Colo_GeluApproximation, "approximation">;

#endif // COLO_ENUMS
