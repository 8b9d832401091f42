// colo-insert-frees: an exec.free after the last step that touches each
// temporary, so that lifetimes are explicit in the IR.
#include "colo/Passes/Passes.h"

namespace colo {
#define GEN_PASS_DEF_COLOINSERTFREES
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
struct InsertFrees : colo::impl::ColoInsertFreesBase<InsertFrees> {
  void runOnOperation() override {
    Block &body = getOperation().getBlock();
    DenseMap<Value, Operation *> lastUse;
    for (Operation &op : body) {
      if (!exec::isStep(&op))
        continue;
      // A wait ends its communication's work on the communication's buffers.
      auto wait = dyn_cast<exec::WaitOp>(op);
      Operation *touching = wait ? wait.getToken().getDefiningOp() : &op;
      for (Value v : touching->getOperands())
        if (isa<MemRefType>(v.getType()))
          lastUse[exec::storageOf(v)] = &op;
    }
    for (Value v : body.getTerminator()->getOperands())
      lastUse.erase(exec::storageOf(v));
    OpBuilder b(&getContext());
    for (auto buffer : llvm::make_early_inc_range(body.getOps<exec::BufferOp>())) {
      Operation *last = lastUse.lookup(buffer.getResult());
      bool freed = llvm::any_of(buffer->getUsers(),
                                [](Operation *u) { return isa<exec::FreeOp>(u); });
      if (buffer.getKind() != exec::BufferKind::temp || !last || freed)
        continue;
      b.setInsertionPointAfter(last);
      exec::FreeOp::create(b, buffer.getLoc(), buffer.getResult());
    }
  }
};
} // namespace
