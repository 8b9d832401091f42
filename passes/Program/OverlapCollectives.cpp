// colo-overlap-collectives: all-reduces whose result is needed only some
// steps later (data-parallel gradient buckets) finish at a wait right
// before the first step that touches their buffers; so do all-gathers (3-D
// tensor parallelism's next weight block) and broadcasts (SUMMA's next
// blocks, which arrive while the current ones multiply) and shifts (ring
// attention's next key block), before the first that touches their output
// (the runtime sends a copy of their input at once); so do transfers
// between memory spaces, and those from a temporary of the device at the
// latest when the second transfer after them starts, so that few of those
// are in flight and the device's buffers die soon.
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
    SmallVector<int> transfers;
    for (auto transfer : body.getOps<exec::TransferOp>())
      transfers.push_back(position.lookup(transfer));
    for (Operation *op : steps) {
      auto transfer = dyn_cast<exec::TransferOp>(op);
      auto shift = dyn_cast<exec::ShiftOp>(op);
      if (!isa<exec::AllReduceOp, exec::AllGatherOp, exec::BroadcastOp>(op) && !transfer && !shift)
        continue;
      Value token = op->getResult(0);
      if (!token.hasOneUse())
        continue;
      auto wait = dyn_cast<exec::WaitOp>(*token.getUsers().begin());
      if (!wait)
        continue;
      int at = position.lookup(op);
      int next = steps.size(); // the first step after it that touches its buffers
      auto src = transfer ? exec::storageOf(transfer.getSrc()).getDefiningOp<exec::BufferOp>()
                          : exec::BufferOp();
      if (src && src.getKind() == exec::BufferKind::temp &&
          cast<exec::MemorySpaceAttr>(src.getType().getMemorySpace()).getValue() ==
              exec::MemorySpace::device)
        if (const int *later = llvm::upper_bound(transfers, at);
            later != transfers.end() && later + 1 != transfers.end())
          next = *(later + 1);
      SmallVector<Value> buffers =
          shift ? SmallVector<Value>{shift.getOutput()} : SmallVector<Value>(op->getOperands());
      for (Value v : buffers) {
        // A reference: lookup would return a copy that dies here.
        const SmallVector<int> &touched = touchedAt[exec::storageOf(v)];
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
