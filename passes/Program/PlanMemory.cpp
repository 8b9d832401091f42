// colo-plan-memory: arena offsets for the temporaries, one arena per memory
// space (device; host for the steps run there). Buffers whose lifetimes
// overlap never share bytes; the rest reuse memory. Greedy by
// size (largest first, declaration order among equals), each at the lowest
// aligned offset that fits among the placed buffers it overlaps in time.
#include "colo/Passes/Passes.h"

#include <limits>

namespace colo {
#define GEN_PASS_DEF_COLOPLANMEMORY
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
constexpr int64_t kAlignment = 64;

struct Lifetime {
  int first = std::numeric_limits<int>::max(), last = -1;
};

struct PlanMemory : colo::impl::ColoPlanMemoryBase<PlanMemory> {
  void runOnOperation() override {
    exec::ProgramOp program = getOperation();
    // Lifetimes in step positions: from the first step that touches the
    // storage to the last step before its free (or the end).
    DenseMap<Value, Lifetime> life;
    int position = 0;
    for (Operation &op : program.getBlock()) {
      if (auto free = dyn_cast<exec::FreeOp>(op)) {
        life[free.getBuffer()].last = position - 1;
        continue;
      }
      if (!exec::isStep(&op))
        continue;
      for (Value v : op.getOperands())
        if (isa<MemRefType>(v.getType())) {
          Lifetime &l = life[exec::storageOf(v)];
          l.first = std::min(l.first, position);
          l.last = std::numeric_limits<int>::max(); // until freed
        }
      ++position;
    }

    OpBuilder b(&getContext());
    for (exec::MemorySpace space : {exec::MemorySpace::device, exec::MemorySpace::host}) {
      int64_t arena = place(program, life, space);
      if (space == exec::MemorySpace::device)
        program.setArenaBytesAttr(b.getI64IntegerAttr(arena));
      else if (arena > 0)
        program.setHostArenaBytesAttr(b.getI64IntegerAttr(arena));
    }
  }

  /// Places the temporaries of `space`; returns the arena's bytes.
  int64_t place(exec::ProgramOp program, const DenseMap<Value, Lifetime> &life,
                exec::MemorySpace space) {
    SmallVector<exec::BufferOp> temps;
    for (exec::BufferOp buffer : program.getBlock().getOps<exec::BufferOp>())
      // A buffer no step touches needs no bytes, freed or not.
      if (buffer.getKind() == exec::BufferKind::temp &&
          cast<exec::MemorySpaceAttr>(buffer.getType().getMemorySpace()).getValue() == space &&
          life.lookup(buffer.getResult()).first != std::numeric_limits<int>::max())
        temps.push_back(buffer);
    llvm::stable_sort(temps, [](exec::BufferOp a, exec::BufferOp b) {
      return exec::byteSize(a.getType()) > exec::byteSize(b.getType());
    });

    struct Placed {
      int64_t offset, end;
      Lifetime life;
    };
    std::vector<Placed> placed;
    // Indices into `placed` by (offset, end): the first fit stops at the
    // first buffer that begins above the gap, so a buffer placed low looks
    // at the few below it instead of at every buffer placed so far.
    std::vector<unsigned> byOffset;
    auto below = [&](unsigned i, unsigned j) {
      return std::pair(placed[i].offset, placed[i].end) <
             std::pair(placed[j].offset, placed[j].end);
    };
    int64_t arena = 0;
    OpBuilder b(&getContext());
    for (exec::BufferOp buffer : temps) {
      Lifetime l = life.lookup(buffer.getResult());
      int64_t size = (exec::byteSize(buffer.getType()) + kAlignment - 1) / kAlignment * kAlignment;
      int64_t offset = 0;
      for (unsigned i : byOffset) {
        const Placed &p = placed[i];
        if (offset + size <= p.offset)
          break;
        if (p.life.first <= l.last && l.first <= p.life.last)
          offset = std::max(offset, p.end);
      }
      buffer.setOffsetAttr(b.getI64IntegerAttr(offset));
      placed.push_back({offset, offset + size, l});
      byOffset.insert(llvm::upper_bound(byOffset, placed.size() - 1, below),
                      placed.size() - 1);
      arena = std::max(arena, offset + size);
      ++numPlaced;
    }
    return arena;
  }
};
} // namespace
