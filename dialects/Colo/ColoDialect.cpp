#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace colo;

#include "colo/Dialect/Colo/ColoOpsDialect.cpp.inc"
#include "colo/Dialect/Colo/ColoEnums.cpp.inc"
#include "colo/Dialect/Colo/ColoInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "colo/Dialect/Colo/ColoAttrs.cpp.inc"

void ColoDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "colo/Dialect/Colo/ColoOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "colo/Dialect/Colo/ColoAttrs.cpp.inc"
      >();
}

Operation *ColoDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

LogicalResult
InitializerAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        StringRef distribution, FloatAttr aAttr,
                        FloatAttr bAttr) {
  if (!aAttr || !bAttr)
    return emitError() << "initializer parameters must be floats";
  double a = aAttr.getValueAsDouble(), b = bAttr.getValueAsDouble();
  if (!llvm::is_contained({"normal", "uniform", "zeros", "ones"}, distribution))
    return emitError() << "unknown distribution '" << distribution
                       << "': expected normal, uniform, zeros or ones";
  if (distribution == "uniform" && a > b)
    return emitError() << "uniform bounds out of order: " << a << " > " << b;
  if (distribution == "normal" && b < 0)
    return emitError() << "normal standard deviation is negative: " << b;
  return success();
}
