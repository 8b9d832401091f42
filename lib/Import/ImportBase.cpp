#include "ImportBase.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/StringSwitch.h"

#include <cctype>

using namespace mlir;

namespace colo {

FailureOr<InputShape> parseInputShape(llvm::StringRef spec, MLIRContext &ctx) {
  llvm::SmallVector<llvm::StringRef> parts;
  spec.split(parts, 'x');
  InputShape shape;
  bool ok = !spec.empty();
  if (!parts.empty() && !parts.back().empty() && !std::isdigit(parts.back()[0])) {
    llvm::StringRef t = parts.pop_back_val();
    Builder b(&ctx);
    shape.elementType = llvm::StringSwitch<Type>(t)
                            .Case("f32", b.getF32Type())
                            .Case("f64", b.getF64Type())
                            .Case("f16", b.getF16Type())
                            .Case("bf16", b.getBF16Type())
                            .Case("i64", b.getI64Type())
                            .Case("i32", b.getI32Type())
                            .Case("i8", b.getI8Type())
                            .Case("i1", b.getI1Type())
                            .Default(Type());
    ok &= static_cast<bool>(shape.elementType);
  }
  for (llvm::StringRef p : parts) {
    int64_t d;
    ok &= !p.getAsInteger(10, d) && d > 0;
    shape.dims.push_back(d);
  }
  if (!ok)
    return emitError(UnknownLoc::get(&ctx))
           << "bad input shape '" << spec
           << "': expected dims joined by 'x' and an optional element type (f32, f64, "
              "f16, bf16, i64, i32, i8, i1), e.g. 2x16xi64 or 1x3x224x224";
  return shape;
}

LogicalResult ImportBase::inferTypes(Operation *op) {
  SmallVector<Type> types;
  auto iface = cast<InferTypeOpInterface>(op);
  if (failed(iface.inferReturnTypes(&ctx, op->getLoc(), op->getOperands(),
                                    op->getRawDictionaryAttrs(),
                                    op->getPropertiesStorage(), op->getRegions(),
                                    types)))
    return failure();
  for (auto [r, t] : llvm::zip(op->getResults(), types))
    r.setType(t);
  return verify(op, /*verifyRecursively=*/false);
}

FailureOr<Value> ImportBase::createUnary(llvm::StringRef mnemonic, Value x) {
  OperationState state(loc, ("colo." + mnemonic).str());
  state.addOperands(x);
  state.addTypes(x.getType());
  Operation *op = builder.create(state);
  if (!op->isRegistered() || failed(verify(op, /*verifyRecursively=*/false))) {
    op->erase();
    return failure();
  }
  return op->getResult(0);
}

std::optional<std::string>
ImportBase::capture(llvm::function_ref<LogicalResult()> importOne) {
  std::string captured;
  nodeError.clear();
  LogicalResult result = success();
  {
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error && captured.empty())
        captured = d.str();
      return success();
    });
    result = importOne();
  }
  if (succeeded(result))
    return std::nullopt;
  return nodeError.empty() ? captured : nodeError;
}

} // namespace colo
