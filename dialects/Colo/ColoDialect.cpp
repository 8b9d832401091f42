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

namespace {
/// What a discardable `colo.*` attribute's value must be, beyond its type.
enum class Range { Any, NonNegative, Positive };

LogicalResult verifyInteger(Attribute value, Range range, StringRef name,
                            function_ref<InFlightDiagnostic()> emitError) {
  auto integer = dyn_cast<IntegerAttr>(value);
  if (!integer || !integer.getType().isInteger(64))
    return emitError() << "'" << name << "' must be a 64-bit integer";
  int64_t v = integer.getInt();
  if ((range == Range::Positive && v < 1) || (range == Range::NonNegative && v < 0))
    return emitError() << "'" << name << "' must be "
                       << (range == Range::Positive ? "at least 1" : "non-negative")
                       << ", got " << v;
  return success();
}

LogicalResult verifyStrings(Attribute value, StringRef name,
                            function_ref<InFlightDiagnostic()> emitError) {
  auto array = dyn_cast<ArrayAttr>(value);
  if (!array || !llvm::all_of(array, llvm::IsaPred<StringAttr>))
    return emitError() << "'" << name << "' must be an array of strings";
  return success();
}
} // namespace

LogicalResult ColoDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  auto emitError = [&] { return op->emitOpError(); };
  using Counted = std::pair<StringRef, Range>;
  for (auto [known, range] : {
           Counted{StageAttrHelper::getNameStr(), Range::NonNegative},
           {MicroAttrHelper::getNameStr(), Range::NonNegative},
           {PipelineStageAttrHelper::getNameStr(), Range::NonNegative},
           {TagAttrHelper::getNameStr(), Range::NonNegative},
           {ChunkAttrHelper::getNameStr(), Range::NonNegative},
           {StashAttrHelper::getNameStr(), Range::NonNegative},
           {OpsetAttrHelper::getNameStr(), Range::NonNegative},
           {PipelineStagesAttrHelper::getNameStr(), Range::Positive},
           {MicrobatchesAttrHelper::getNameStr(), Range::Positive},
           {BatchPartsAttrHelper::getNameStr(), Range::Positive},
           {DataParallelAttrHelper::getNameStr(), Range::Positive},
           {TensorParallelAttrHelper::getNameStr(), Range::Positive},
           {TensorParallel2dAttrHelper::getNameStr(), Range::Positive},
           {TensorParallel3dAttrHelper::getNameStr(), Range::Positive},
           {SequenceParallelAttrHelper::getNameStr(), Range::Positive},
           {UlyssesAttrHelper::getNameStr(), Range::Positive},
           {RingAttrHelper::getNameStr(), Range::Positive},
           {VocabParallelAttrHelper::getNameStr(), Range::Positive}})
    if (name == known)
      return verifyInteger(value, range, name, emitError);
  if (name == ZeroAttrHelper::getNameStr()) {
    if (failed(verifyInteger(value, Range::Positive, name, emitError)))
      return failure();
    if (cast<IntegerAttr>(value).getInt() > 3)
      return emitError() << "'" << name << "' is a ZeRO stage (1, 2 or 3), got "
                         << cast<IntegerAttr>(value).getInt();
    return success();
  }
  if (name == AxesAttrHelper::getNameStr() || name == KernelsAttrHelper::getNameStr() ||
      name == LossSampleAxesAttrHelper::getNameStr())
    return verifyStrings(value, name, emitError);
  if (name == ZeroGatherAttrHelper::getNameStr()) {
    auto phase = dyn_cast<StringAttr>(value);
    if (!phase || (phase.getValue() != "forward" && phase.getValue() != "backward"))
      return emitError() << "'" << name << "' must be \"forward\" or \"backward\"";
    return success();
  }
  for (StringRef known : {ParamNameAttrHelper::getNameStr(), SourceAttrHelper::getNameStr(),
                          RecomputedAttrHelper::getNameStr(), LossClassAxisAttrHelper::getNameStr(),
                          ProducerAttrHelper::getNameStr(), FamilyAttrHelper::getNameStr()})
    if (name == known) {
      if (!isa<StringAttr>(value))
        return emitError() << "'" << name << "' must be a string";
      return success();
    }
  if (name == OptimizerStateAttrHelper::getNameStr() || name == OnHostAttrHelper::getNameStr()) {
    if (!isa<UnitAttr>(value))
      return emitError() << "'" << name << "' is a unit attribute";
    return success();
  }
  if (name == IntMaxAttrHelper::getNameStr() || name == IntIgnoredAttrHelper::getNameStr())
    return emitError() << "'" << name << "' belongs on a function argument";
  return emitError() << "has an unknown attribute '" << name << "'";
}

LogicalResult ColoDialect::verifyRegionArgAttribute(Operation *op, unsigned, unsigned,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == IntIgnoredAttrHelper::getNameStr()) {
    if (!isa<IntegerAttr>(attr.getValue()))
      return op->emitOpError() << "'" << name << "' must be an integer";
    return success();
  }
  if (name != IntMaxAttrHelper::getNameStr())
    return op->emitOpError() << "has an unknown argument attribute '" << name << "'";
  return verifyInteger(attr.getValue(), Range::Positive, name,
                       [&] { return op->emitOpError(); });
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
