// colo-overlap-collectives: all-reduces whose result is needed only some
// steps later (data-parallel gradient buckets) finish at a wait right
// before the first step that touches their buffers.
#include "colo/Passes/Passes.h"

#include "llvm/ADT/SmallPtrSet.h"

namespace colo {
#define GEN_PASS_DEF_COLOOVERLAPCOLLECTIVES
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
struct OverlapCollectives : colo::impl::ColoOverlapCollectivesBase<OverlapCollectives> {
  void runOnOperation() override {
    exec::ProgramOp program = getOperation();
    SmallVector<exec::AllReduceOp> reduces(program.getBlock().getOps<exec::AllReduceOp>());
    for (exec::AllReduceOp reduce : reduces) {
      if (!reduce.getToken().hasOneUse())
        continue;
      auto wait = dyn_cast<exec::WaitOp>(*reduce.getToken().getUsers().begin());
      if (!wait)
        continue;
      SmallPtrSet<Value, 2> storage{exec::storageOf(reduce.getInput()),
                                    exec::storageOf(reduce.getOutput())};
      auto touches = [&](Operation *op) {
        return llvm::any_of(op->getOperands(), [&](Value v) {
          return storage.contains(exec::storageOf(v));
        });
      };
      // The steps after it, waits aside (they touch nothing of their own).
      Operation *next = reduce->getNextNode();
      auto advance = [&] {
        while (next && (!exec::isStep(next) || isa<exec::WaitOp>(next)))
          next = next->getNextNode();
      };
      advance();
      if (!next || touches(next))
        continue; // needed at once: nothing to overlap
      while (next && !touches(next)) {
        next = next->getNextNode();
        advance();
      }
      wait->moveBefore(next ? next : program.getBlock().getTerminator());
      ++numOverlapped;
    }
  }
};
} // namespace
