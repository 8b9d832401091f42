// colo-offload: the optimizer's state in host memory and its update run on
// the host (ZeRO-Offload), with the transfers between device and host as ops
// of the step.
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

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

class Offloader {
public:
  Offloader(func::FuncOp func, SymbolTable &symbols) : func(func), symbols(symbols) {}

  /// Marks what runs on the host and inserts the transfers; counts both.
  void run(int64_t &hostOps, int64_t &transfers) {
    Block &body = func.front();
    for (Operation &op : body)
      if (isUpdate(&op)) {
        host.insert(&op);
        for (Value state : stateOperands(&op))
          if (auto load = state.getDefiningOp<GlobalLoadOp>())
            if (GlobalOp g = symbols.lookup<GlobalOp>(load.getGlobal());
                g && ColoDialect::OptimizerStateAttrHelper(g.getContext()).isAttrPresent(g))
              ColoDialect::OnHostAttrHelper(g.getContext()).setAttr(g, UnitAttr::get(g.getContext()));
      }
    if (host.empty())
      return;
    hoistParameterLoads();
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
    hostOps += int64_t(host.size());
    transfers += int64_t(moved.size());
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
  llvm::SetVector<Operation *> host;
  llvm::DenseMap<Value, Value> moved;
};

struct Offload : colo::impl::ColoOffloadBase<Offload> {
  using ColoOffloadBase::ColoOffloadBase;

  void runOnOperation() override {
    if (!optimizer)
      return;
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    int64_t hostOps = 0, transfers = 0;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal())
        Offloader(func, symbols).run(hostOps, transfers);
    numHostOps += hostOps;
    numTransfers += transfers;
  }
};
} // namespace
