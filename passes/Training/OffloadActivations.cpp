// colo-offload-activations: the activations the backward reads from the
// forward wait in host memory instead of the device's, copied there as the
// forward computes them and fetched back in chunks ahead of the backward.
#include "colo/Analysis/ChunkSchedule.h"
#include "colo/Dialect/Colo/ColoInterfaces.h"
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/Passes.h"
#include "colo/Passes/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>

namespace colo {
#define GEN_PASS_DEF_COLOOFFLOADACTIVATIONS
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {

/// A forward value that the backward of one pipeline stage reads: the
/// activation that stage keeps between them.
struct Stashed {
  Value value;
  std::optional<int64_t> stage;
  HostTensor tensor; ///< its bytes and its backward readers' positions
};

class ActivationOffloader {
public:
  ActivationOffloader(func::FuncOp step, Operation *lossOp) : step(step), lossOp(lossOp) {
    for (Operation &op : step.front())
      position[&op] = int64_t(ops.size()), ops.push_back(&op);
  }

  /// The stashed activations: results of forward ops that depend on the
  /// batch (not parameters, constants or their casts) and that backward ops
  /// read, other than the loss's operands; one per stage whose backward
  /// reads it (a stage that did not compute it receives it from the
  /// pipeline's send with its forward).
  std::vector<Stashed> stashed() const {
    int64_t loss = position.lookup(lossOp);
    llvm::DenseSet<Operation *> varying;
    std::vector<Stashed> found;
    for (Operation *op : ops) {
      if (llvm::any_of(op->getOperands(), [&](Value v) {
            Operation *def = v.getDefiningOp();
            return !def || varying.contains(def);
          }))
        varying.insert(op);
      if (position.lookup(op) >= loss || !varying.contains(op) || isa<TransferOp>(op))
        continue;
      for (Value v : op->getResults()) {
        auto type = dyn_cast<RankedTensorType>(v.getType());
        // The loss's operands (the logits) are read again by the first
        // backward op: the device would hold them across no work.
        if (!type || !type.hasStaticShape() || llvm::is_contained(lossOp->getOperands(), v))
          continue;
        std::map<std::optional<int64_t>, std::vector<int64_t>> usesByStage;
        for (Operation *user : v.getUsers())
          if (position.lookup(user) > loss && !isa<GlobalStoreOp, func::ReturnOp>(user))
            usesByStage[getStage(user)].push_back(position.lookup(user));
        for (auto &[stage, uses] : usesByStage) {
          llvm::sort(uses);
          uses.erase(std::unique(uses.begin(), uses.end()), uses.end());
          found.push_back({v, stage, {colo::detail::typeBytes(type), uses}});
        }
      }
    }
    return found;
  }

  /// Each stashed value goes to the host right after it is computed; the
  /// chunk schedule fetches it back, one transfer per fetch and value,
  /// issued where the previous fetch's first reader runs so that the copy
  /// overlaps that backward compute. Returns the schedule.
  ChunkSchedule offload(const std::vector<Stashed> &values, int64_t chunkBytes) {
    std::vector<HostTensor> tensors;
    for (const Stashed &s : values)
      tensors.push_back(s.tensor);
    ChunkSchedule schedule = scheduleChunks(tensors, chunkBytes, chunkBytes);
    MLIRContext *ctx = step.getContext();
    OpBuilder b(ctx);
    std::vector<Value> onHost;
    for (const Stashed &s : values) {
      Operation *def = s.value.getDefiningOp();
      b.setInsertionPointAfter(def);
      auto copy = TransferOp::create(b, s.value.getLoc(), s.value.getType(), s.value,
                                     b.getUnitAttr());
      if (s.stage)
        setStage(copy, *s.stage);
      onHost.push_back(copy);
    }
    for (size_t i = 0; i < schedule.fetches.size(); ++i) {
      const ChunkFetch &fetch = schedule.fetches[i];
      int64_t issue = i == 0 ? fetch.uses.front() : schedule.fetches[i - 1].uses.front();
      for (int64_t t : fetch.tensors) {
        b.setInsertionPoint(ops[issue]);
        Value host = onHost[t];
        auto copy = TransferOp::create(b, host.getLoc(), host.getType(), host, nullptr);
        ColoDialect::StashAttrHelper(ctx).setAttr(copy, b.getI64IntegerAttr(fetch.chunk));
        if (values[t].stage)
          setStage(copy, *values[t].stage);
        Value stashed = values[t].value;
        stashed.replaceUsesWithIf(copy, [&](OpOperand &use) {
          auto at = position.find(use.getOwner());
          return at != position.end() && llvm::is_contained(fetch.uses, at->second);
        });
      }
    }
    return schedule;
  }

private:
  func::FuncOp step;
  Operation *lossOp;
  std::vector<Operation *> ops;
  llvm::DenseMap<Operation *, int64_t> position;
};

struct OffloadActivations : colo::impl::ColoOffloadActivationsBase<OffloadActivations> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!(chunkMb > 0)) {
      module.emitError() << "colo-offload-activations: chunk-mb must be positive, got "
                         << chunkMb;
      return signalPassFailure();
    }
    auto step = module.lookupSymbol<func::FuncOp>("train_step");
    if (!step || !step.getBody().hasOneBlock()) {
      module.emitError("colo-offload-activations: no single-block func.func @train_step (run "
                       "it after colo-build-train-step)");
      return signalPassFailure();
    }
    auto ret = cast<func::ReturnOp>(step.front().getTerminator());
    Operation *lossOp = ret.getNumOperands() ? ret.getOperand(0).getDefiningOp() : nullptr;
    if (!lossOp) {
      step.emitError("colo-offload-activations: the step returns no loss computed in it");
      return signalPassFailure();
    }
    ActivationOffloader offloader(step, lossOp);
    std::vector<Stashed> values = offloader.stashed();
    ChunkSchedule schedule = offloader.offload(values, int64_t(chunkMb * 1024.0 * 1024.0));
    numOffloaded += int64_t(values.size());
    numChunks += int64_t(schedule.chunks.size());
    numFetches += int64_t(schedule.fetches.size());
  }
};
} // namespace
