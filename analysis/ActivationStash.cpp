// What a training step keeps from its forward for its backward.
#include "colo/Analysis/ActivationStash.h"
#include "colo/Dialect/Colo/ColoInterfaces.h"
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/Pipeline.h"

#include <map>

using namespace mlir;

namespace colo {

Operation *returnedLoss(func::FuncOp step) {
  if (!step || !step.getBody().hasOneBlock())
    return nullptr;
  auto ret = dyn_cast<func::ReturnOp>(step.front().getTerminator());
  return ret && ret.getNumOperands() ? ret.getOperand(0).getDefiningOp() : nullptr;
}

std::vector<StashedActivation> stashedActivations(func::FuncOp step, Operation *lossOp) {
  llvm::DenseMap<Operation *, int64_t> position;
  for (Operation &op : step.front())
    position[&op] = int64_t(position.size());
  int64_t loss = position.lookup(lossOp);
  llvm::DenseSet<Operation *> varying;
  std::vector<StashedActivation> found;
  for (Operation &op : step.front()) {
    if (llvm::any_of(op.getOperands(), [&](Value v) {
          Operation *def = v.getDefiningOp();
          return !def || varying.contains(def);
        }))
      varying.insert(&op);
    if (position.lookup(&op) >= loss || !varying.contains(&op) || isa<TransferOp>(op))
      continue;
    for (Value v : op.getResults()) {
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!type || !type.hasStaticShape() || llvm::is_contained(lossOp->getOperands(), v))
        continue;
      std::map<std::optional<int64_t>, std::vector<int64_t>> usesByStage;
      for (Operation *user : v.getUsers())
        if (position.lookup(user) > loss && !isa<GlobalStoreOp, func::ReturnOp>(user))
          usesByStage[getStage(user)].push_back(position.lookup(user));
      for (auto &[stage, uses] : usesByStage) {
        llvm::sort(uses);
        uses.erase(std::unique(uses.begin(), uses.end()), uses.end());
        found.push_back({v, stage, detail::typeBytes(type), uses});
      }
    }
  }
  return found;
}

} // namespace colo
