#include "ImportBase.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

using namespace mlir;

namespace colo {

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
