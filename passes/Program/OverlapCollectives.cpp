// colo-overlap-collectives: all-reduces whose result is needed only some
// steps later (data-parallel gradient buckets) finish at a wait right
// before the first step that touches their buffers.
#include "colo/Passes/Passes.h"


namespace colo {
#define GEN_PASS_DEF_COLOOVERLAPCOLLECTIVES
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
struct OverlapCollectives : colo::impl::ColoOverlapCollectivesBase<OverlapCollectives> {
  void runOnOperation() override {
    Block &body = getOperation().getBlock();
    // The steps in order, waits aside (they touch nothing of their own),
    // and the positions of the steps that touch each storage.
    DenseMap<Operation *, int> position;
    SmallVector<Operation *> steps;
    DenseMap<Value, SmallVector<int>> touchedAt;
    for (Operation &op : body) {
      if (!exec::isStep(&op) || isa<exec::WaitOp>(op))
        continue;
      int at = steps.size();
      position[&op] = at;
      steps.push_back(&op);
      for (Value v : op.getOperands())
        if (isa<MemRefType>(v.getType())) {
          SmallVector<int> &positions = touchedAt[exec::storageOf(v)];
          if (positions.empty() || positions.back() != at)
            positions.push_back(at);
        }
    }
    for (exec::AllReduceOp reduce : body.getOps<exec::AllReduceOp>()) {
      if (!reduce.getToken().hasOneUse())
        continue;
      auto wait = dyn_cast<exec::WaitOp>(*reduce.getToken().getUsers().begin());
      if (!wait)
        continue;
      int at = position.lookup(reduce);
      int next = steps.size(); // the first step after it that touches its buffers
      for (Value v : {reduce.getInput(), reduce.getOutput()}) {
        ArrayRef<int> touched = touchedAt.lookup(exec::storageOf(v));
        const int *it = llvm::upper_bound(touched, at);
        if (it != touched.end())
          next = std::min(next, *it);
      }
      if (at + 1 == static_cast<int>(steps.size()) || next == at + 1)
        continue; // needed at once, or nothing follows: nothing to overlap
      wait->moveBefore(next < static_cast<int>(steps.size()) ? steps[next] : body.getTerminator());
      ++numOverlapped;
    }
  }
};
} // namespace
