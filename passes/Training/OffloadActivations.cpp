// colo-offload-activations: the activations the backward reads from the
// forward wait in host memory instead of the device's, copied there as the
// forward computes them and fetched back in chunks ahead of the backward.
#include "colo/Analysis/ActivationStash.h"
#include "colo/Analysis/ChunkSchedule.h"
#include "colo/Dialect/Colo/ColoInterfaces.h"
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/Passes.h"
#include "colo/Passes/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace colo {
#define GEN_PASS_DEF_COLOOFFLOADACTIVATIONS
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {

class ActivationOffloader {
public:
  explicit ActivationOffloader(func::FuncOp step) : step(step) {
    for (Operation &op : step.front())
      position[&op] = int64_t(ops.size()), ops.push_back(&op);
  }

  /// Each stashed value goes to the host right after it is computed; the
  /// chunk schedule fetches it back, one transfer per fetch and value,
  /// issued where the previous fetch's first reader runs so that the copy
  /// overlaps that backward compute. Returns the schedule.
  ChunkSchedule offload(const std::vector<StashedActivation> &values, int64_t chunkBytes) {
    std::vector<HostTensor> tensors;
    for (const StashedActivation &s : values)
      tensors.push_back({s.bytes, s.uses});
    ChunkSchedule schedule = scheduleChunks(tensors, chunkBytes, chunkBytes);
    MLIRContext *ctx = step.getContext();
    OpBuilder b(ctx);
    std::vector<Value> onHost;
    for (const StashedActivation &s : values) {
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
    Operation *lossOp = returnedLoss(step);
    if (!lossOp) {
      step.emitError("colo-offload-activations: the step returns no loss computed in it");
      return signalPassFailure();
    }
    std::vector<StashedActivation> values = stashedActivations(step, lossOp);
    ActivationOffloader offloader(step);
    ChunkSchedule schedule = offloader.offload(values, int64_t(chunkMb * 1024.0 * 1024.0));
    numOffloaded += int64_t(values.size());
    numChunks += int64_t(schedule.chunks.size());
    numFetches += int64_t(schedule.fetches.size());
  }
};
} // namespace
