// colo-offload: the optimizer's state in host memory and its update run on
// the host (ZeRO-Offload), optionally the parameters too, fetched in chunks
// by a compile-time schedule (Gemini), with the transfers between device and
// host as ops of the step.
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Analysis/ChunkSchedule.h"
#include "colo/Dialect/Colo/ColoInterfaces.h"
#include "colo/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"

namespace colo {
#define GEN_PASS_DEF_COLOOFFLOAD
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {

bool isUpdate(Operation *op) {
  return isa<AdamUpdateOp, SgdUpdateOp, LambUpdateOp, LarsUpdateOp>(op);
}

/// The optimizer-state operands of an update: between the gradient and the
/// learning rate and step.
OperandRange stateOperands(Operation *update) {
  return update->getOperands().drop_front(2).drop_back(2);
}

struct ParameterOffload {
  bool enabled = false;
  int64_t chunkBytes = 0, residentBytes = 0;
};

struct OffloadCounts {
  int64_t hostOps = 0, transfers = 0, chunks = 0, fetches = 0;
};

class Offloader {
public:
  Offloader(func::FuncOp func, SymbolTable &symbols, ParameterOffload params)
      : func(func), symbols(symbols), params(params) {}

  /// Marks what runs on the host and inserts the transfers; counts both.
  void run(OffloadCounts &counts) {
    Block &body = func.front();
    if (params.enabled)
      hostParameters();
    for (Operation &op : body)
      if (isUpdate(&op)) {
        host.insert(&op);
        for (Value state : stateOperands(&op))
          if (auto load = state.getDefiningOp<GlobalLoadOp>())
            if (GlobalOp g = symbols.lookup<GlobalOp>(load.getGlobal());
                g && ColoDialect::OptimizerStateAttrHelper(g.getContext()).isAttrPresent(g))
              ColoDialect::OnHostAttrHelper(g.getContext()).setAttr(g, UnitAttr::get(g.getContext()));
      }
    if (host.empty() && !params.enabled)
      return;
    hoistParameterLoads();
    if (params.enabled)
      narrowOnHost();
    // What the updates' results flow through before a host global keeps
    // them (fp16's keep-or-skip selects) runs on the host too.
    for (bool changed = true; changed;) {
      changed = false;
      for (Operation &op : body)
        if (!host.contains(&op) && op.getNumResults() && !isa<GlobalLoadOp, TransferOp>(op) &&
            llvm::any_of(op.getOperands(), [&](Value v) { return onHost(v); }) &&
            llvm::all_of(op.getUsers(), [&](Operation *u) { return runsOnHost(u); }))
          changed |= host.insert(&op);
    }
    for (Operation *op : host)
      ColoDialect::OnHostAttrHelper(op->getContext()).setAttr(op, UnitAttr::get(op->getContext()));
    if (params.enabled)
      fetchParameterChunks(counts);

    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (isa<TransferOp>(op))
        continue;
      // Host ops and stores into host globals read host values (constants
      // are in the kernels); every other op reads device values.
      auto store = dyn_cast<GlobalStoreOp>(op);
      bool hostSide = host.contains(&op) || (store && hostGlobal(store.getGlobal()));
      for (OpOperand &use : op.getOpOperands()) {
        Value v = use.get();
        if (hostSide && !onHost(v) && !v.getDefiningOp<ConstantOp>())
          use.set(transfer(v, /*toHost=*/true));
        else if (!hostSide && onHost(v))
          use.set(transfer(v, /*toHost=*/false));
      }
    }
    counts.hostOps += int64_t(host.size());
    counts.transfers += int64_t(moved.size()) + fetched;
  }

private:
  /// The parameters the updates read do not change before the updates: each
  /// update's load of its parameter moves to the start of the step, and so
  /// does the parameter's transfer to the host, which then overlaps the
  /// forward and backward instead of waiting after them.
  void hoistParameterLoads() {
    Block &body = func.front();
    Operation *first = &body.front();
    for (Operation *update : host) {
      auto load = update->getOperand(0).getDefiningOp<GlobalLoadOp>();
      if (!load || !load->hasOneUse())
        continue;
      bool storedBefore = false;
      for (Operation *op = &body.front(); op != load.getOperation() && !storedBefore;
           op = op->getNextNode())
        if (auto store = dyn_cast<GlobalStoreOp>(op))
          storedBefore = store.getGlobal() == load.getGlobal();
      if (!storedBefore)
        load->moveBefore(first);
    }
  }

  /// The trainable globals move to the host, and their loads to the start
  /// of the step where nothing has stored them yet, so that the chunk
  /// schedule may fetch them as early as it likes.
  void hostParameters() {
    MLIRContext *ctx = func.getContext();
    Block &body = func.front();
    llvm::StringSet<> stored;
    SmallVector<Operation *> loads;
    for (Operation &op : body) {
      if (auto store = dyn_cast<GlobalStoreOp>(op))
        stored.insert(store.getGlobal());
      auto load = dyn_cast<GlobalLoadOp>(op);
      GlobalOp g = load ? symbols.lookup<GlobalOp>(load.getGlobal()) : nullptr;
      if (!g || !g.getTrainable())
        continue;
      ColoDialect::OnHostAttrHelper(ctx).setAttr(g, UnitAttr::get(ctx));
      if (!stored.contains(load.getGlobal()))
        loads.push_back(load);
    }
    for (Operation *load : llvm::reverse(loads))
      load->moveBefore(&body.front());
  }

  /// A narrowing convert of a host parameter (mixed precision's bf16 or fp16
  /// copy) runs on the host, right after the load, so that the device is
  /// sent the narrow copy: half the bytes over the link and in its memory.
  void narrowOnHost() {
    for (Operation &op : llvm::make_early_inc_range(func.front())) {
      auto convert = dyn_cast<ConvertOp>(op);
      if (!convert || !onHost(convert.getInput()))
        continue;
      auto from = cast<ShapedType>(convert.getInput().getType());
      auto to = cast<ShapedType>(convert.getType());
      if (to.getElementTypeBitWidth() >= from.getElementTypeBitWidth())
        continue;
      host.insert(convert);
      if (Operation *def = convert.getInput().getDefiningOp())
        convert->moveAfter(def);
    }
  }

  /// Each host parameter (or its narrow copy) that device ops read reaches
  /// them through the chunk schedule's fetches: one transfer per fetch and
  /// tensor, issued when the previous fetch's first reader runs, so that the
  /// copy overlaps that chunk's compute; its readers within the fetch read
  /// the transfer.
  void fetchParameterChunks(OffloadCounts &counts) {
    Block &body = func.front();
    SmallVector<Operation *> ops;
    llvm::DenseMap<Operation *, int64_t> position;
    for (Operation &op : body) {
      position[&op] = int64_t(ops.size());
      ops.push_back(&op);
    }
    SmallVector<Value> values;
    std::vector<HostTensor> tensors;
    for (Operation *op : ops)
      for (Value v : op->getResults()) {
        if (!onHost(v) || !isParameter(v))
          continue;
        HostTensor t;
        for (Operation *user : v.getUsers())
          if (!runsOnHost(user) && !isa<TransferOp>(user))
            t.uses.push_back(position.lookup(body.findAncestorOpInBlock(*user)));
        if (t.uses.empty())
          continue;
        llvm::sort(t.uses);
        t.uses.erase(std::unique(t.uses.begin(), t.uses.end()), t.uses.end());
        t.bytes = colo::detail::typeBytes(v.getType());
        values.push_back(v);
        tensors.push_back(std::move(t));
      }
    ChunkSchedule schedule = scheduleChunks(tensors, params.chunkBytes, params.residentBytes);
    MLIRContext *ctx = func.getContext();
    OpBuilder b(ctx);
    for (size_t i = 0; i < schedule.fetches.size(); ++i) {
      const ChunkFetch &fetch = schedule.fetches[i];
      int64_t issue = i == 0 ? fetch.uses.front() : schedule.fetches[i - 1].uses.front();
      for (int64_t t : fetch.tensors) {
        Value v = values[t];
        Operation *at = ops[issue];
        if (Operation *def = v.getDefiningOp(); def && position.lookup(def) >= issue)
          at = def->getNextNode();
        b.setInsertionPoint(at);
        auto copy = TransferOp::create(b, v.getLoc(), v.getType(), v, nullptr);
        ColoDialect::ChunkAttrHelper(ctx).setAttr(copy, b.getI64IntegerAttr(fetch.chunk));
        v.replaceUsesWithIf(copy, [&](OpOperand &use) {
          Operation *user = body.findAncestorOpInBlock(*use.getOwner());
          return user != copy && !runsOnHost(user) && !isa<TransferOp>(user) &&
                 llvm::is_contained(fetch.uses, position.lookup(user));
        });
        ++fetched;
      }
    }
    counts.chunks += int64_t(schedule.chunks.size());
    counts.fetches += int64_t(schedule.fetches.size());
  }

  /// A trainable global's load, or what host ops made of it.
  bool isParameter(Value v) {
    Operation *def = v.getDefiningOp();
    if (auto load = dyn_cast_or_null<GlobalLoadOp>(def)) {
      GlobalOp g = symbols.lookup<GlobalOp>(load.getGlobal());
      return g && g.getTrainable();
    }
    return def && host.contains(def) &&
           llvm::any_of(def->getOperands(), [&](Value in) { return isParameter(in); });
  }

  bool hostGlobal(StringRef name) {
    GlobalOp g = symbols.lookup<GlobalOp>(name);
    return g && ColoDialect::OnHostAttrHelper(g.getContext()).isAttrPresent(g);
  }
  bool onHost(Value v) {
    Operation *def = v.getDefiningOp();
    if (!def)
      return false;
    if (auto t = dyn_cast<TransferOp>(def))
      return t.getToHost();
    if (auto load = dyn_cast<GlobalLoadOp>(def))
      return hostGlobal(load.getGlobal());
    return host.contains(def);
  }
  bool runsOnHost(Operation *user) {
    if (auto store = dyn_cast<GlobalStoreOp>(user))
      return hostGlobal(store.getGlobal());
    return host.contains(user);
  }
  /// `v` in the other memory space: one transfer per value, right after `v`
  /// is computed, so that it starts as early as it can.
  Value transfer(Value v, bool toHost) {
    Value &t = moved[v];
    if (t)
      return t;
    OpBuilder b(func.getContext());
    if (Operation *def = v.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(&func.front());
    t = TransferOp::create(b, v.getLoc(), v.getType(), v, toHost ? b.getUnitAttr() : nullptr)
            .getResult();
    return t;
  }

  func::FuncOp func;
  SymbolTable &symbols;
  ParameterOffload params;
  llvm::SetVector<Operation *> host;
  llvm::DenseMap<Value, Value> moved;
  int64_t fetched = 0;
};

struct Offload : colo::impl::ColoOffloadBase<Offload> {
  using ColoOffloadBase::ColoOffloadBase;

  void runOnOperation() override {
    if (!optimizer) {
      if (params) {
        getOperation().emitError("colo-offload: parameters on the host need the optimizer "
                                 "there too (offload=optimizer+params)");
        signalPassFailure();
      }
      return;
    }
    if (!(chunkMb > 0)) {
      getOperation().emitError() << "colo-offload: chunk-mb must be positive, got " << chunkMb;
      return signalPassFailure();
    }
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    constexpr double kMiB = 1024.0 * 1024.0;
    // A negative bound: one chunk.
    ParameterOffload p{params, int64_t(chunkMb * kMiB),
                       int64_t((residentMb < 0 ? chunkMb : residentMb) * kMiB)};
    OffloadCounts counts;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal())
        Offloader(func, symbols, p).run(counts);
    numHostOps += counts.hostOps;
    numTransfers += counts.transfers;
    numChunks += counts.chunks;
    numFetches += counts.fetches;
  }
};
} // namespace
