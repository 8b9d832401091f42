// The kernels of the walk: the ops collected between two library steps
// become generated functions in the kernel library (split into pieces the
// runtime runs side by side where their rows are independent), called by
// exec.kernel steps.
#include "StepBuilder.h"
#include "KernelPieces.h"

#include "colo/Passes/Pipeline.h"

#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace colo;

namespace {
/// Kernels writing fewer elements stay whole: waking a thread costs more
/// than their work.
constexpr int64_t kMinPieceElements = 1 << 15;

bool isScalar(Value v) { return tensorType(v).getRank() == 0; }

/// Whether an op of `members` with a result that is not a scalar uses
/// `op`'s result, directly or through ops with scalar results.
bool usedByRows(Operation *op, const DenseSet<Operation *> &members) {
  return llvm::any_of(op->getUsers(), [&](Operation *user) {
    return members.contains(user) &&
           (!llvm::all_of(user->getResults(), isScalar) || usedByRows(user, members));
  });
}

/// The 0-d sums over rows among `ops` (in order) that depend only on the
/// group's inputs and that ops with rows use (through scalar ops), with the
/// ops of the group they are computed from.
DenseSet<Operation *> scalarsOverInputRows(ArrayRef<Operation *> ops) {
  DenseSet<Operation *> members(ops.begin(), ops.end()), fromInputs, first;
  for (Operation *op : ops)
    if (llvm::all_of(op->getOperands(), [&](Value v) {
          Operation *def = v.getDefiningOp();
          return !def || !members.contains(def) || fromInputs.contains(def);
        }))
      fromInputs.insert(op);
  SmallVector<Operation *> work;
  for (Operation *op : ops)
    if (fromInputs.contains(op) && sumsOverRows(op) && isScalar(op->getResult(0)) &&
        usedByRows(op, members))
      work.push_back(op);
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!first.insert(op).second)
      continue;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp(); def && members.contains(def))
        work.push_back(def);
  }
  return first;
}
} // namespace

/// Emits the collected ops as kernels. Where their rows are independent
/// but for sums over the rows (bias and norm gradients), the sums and
/// what uses them become a second, whole kernel, so that the rest runs in
/// pieces. A scalar summed over the rows of the group's inputs (a loss's
/// count of positions), which every row may need, is computed first by a
/// whole kernel of its own.
LogicalResult StepBuilder::flush() {
  if (failed(flushKernels()))
    return failure();
  // The transfers of what the kernels computed start after them.
  for (size_t i = 0; i < pendingTransfers.size();) {
    TransferOp transfer = pendingTransfers[i];
    if (!bufferOf.contains(transfer.getInput())) {
      ++i; // computed by a group that a nested flush set aside
      continue;
    }
    pendingTransfers.erase(pendingTransfers.begin() + long(i));
    if (failed(emitTransfer(transfer)))
      return failure();
  }
  return success();
}

LogicalResult StepBuilder::flushKernels() {
  if (group.empty())
    return success();
  SmallVector<Operation *> ops(group.begin(), group.end());
  group.clear();
  DenseSet<Operation *> all(ops.begin(), ops.end());
  if (!pieceCounts.empty()) {
    DenseSet<Operation *> first = scalarsOverInputRows(ops);
    if (!first.empty()) {
      SmallVector<Operation *> rest;
      SmallVector<Operation *> firstOps;
      for (Operation *op : ops)
        (first.contains(op) ? firstOps : rest).push_back(op);
      if (failed(emitKernel(firstOps, all, false)))
        return failure();
      ops = std::move(rest);
      all = DenseSet<Operation *>(ops.begin(), ops.end());
      if (ops.empty())
        return success();
    }
    SmallVector<Operation *> rows, sums;
    DenseSet<Operation *> inSums;
    for (Operation *op : ops) {
      bool sum = sumsOverRows(op) || llvm::any_of(op->getOperands(), [&](Value v) {
                   return inSums.contains(v.getDefiningOp());
                 });
      if (sum)
        inSums.insert(op);
      (sum ? sums : rows).push_back(op);
    }
    if (!sums.empty() && !rows.empty()) {
      FailureOr<bool> split = emitKernel(rows, all, /*onlyInPieces=*/true);
      if (failed(split))
        return failure();
      if (*split)
        return failure(failed(emitKernel(sums, all, false)));
    }
  }
  return failure(failed(emitKernel(ops, all, false)));
}

/// Emits `ops`, some or all of the `flushed` group, as one kernel: its
/// arguments are the values it reads from outside, its results the values
/// used after it. With `onlyInPieces`, emits nothing and returns false
/// unless the kernel splits into pieces.
FailureOr<bool> StepBuilder::emitKernel(ArrayRef<Operation *> ops,
                                        const DenseSet<Operation *> &flushed,
                                        bool onlyInPieces) {
  llvm::SetVector<Value> inputs, outputs;
  DenseSet<Operation *> members(ops.begin(), ops.end());
  for (Operation *op : ops) {
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if ((def && members.contains(def)) || (def && isa<ConstantOp>(def)))
        continue;
      inputs.insert(v);
    }
    for (Value r : op->getResults())
      if (llvm::any_of(r.getUsers(), [&](Operation *u) { return !members.contains(u); }))
        outputs.insert(r);
  }
  // An output that only reshapes another for later steps is a view of its
  // buffer, not a copy the kernel writes.
  SmallVector<ReshapeOp> views;
  DenseSet<Operation *> viewOps;
  for (Value v : outputs)
    if (auto reshape = v.getDefiningOp<ReshapeOp>();
        reshape && outputs.contains(reshape.getInput()) &&
        llvm::none_of(v.getUsers(), [&](Operation *u) { return members.contains(u); })) {
      views.push_back(reshape);
      viewOps.insert(reshape);
    }
  for (ReshapeOp view : views)
    outputs.remove(view.getResult());
  std::string symbol = symbolPrefix + "k" + std::to_string(kernelCount++) + "_" +
                       ops.front()->getName().stripDialect().str();
  OpBuilder kb = OpBuilder::atBlockEnd(kernels.module().getBody());
  SmallVector<Type> inTypes, outTypes;
  for (Value v : inputs)
    inTypes.push_back(v.getType());
  for (Value v : outputs)
    outTypes.push_back(v.getType());
  auto kernel = func::FuncOp::create(kb, ops.front()->getLoc(), symbol,
                                     kb.getFunctionType(inTypes, outTypes));
  Block *body = kernel.addEntryBlock();
  IRMapping map;
  for (auto [v, arg] : llvm::zip(inputs, body->getArguments()))
    map.map(v, arg);
  kb.setInsertionPointToEnd(body);
  // Without the schedule's labels (which stage and microbatch an op is
  // of), so that every stage and microbatch calls the same kernels.
  auto cloneUnlabeled = [&](Operation &op) {
    Operation *c = kb.clone(op, map);
    c->removeDiscardableAttr(ColoDialect::StageAttrHelper(c->getContext()).getName());
    c->removeDiscardableAttr(ColoDialect::MicroAttrHelper(c->getContext()).getName());
    c->removeDiscardableAttr(ColoDialect::OnHostAttrHelper(c->getContext()).getName());
    return c;
  };
  for (Operation *op : ops) {
    if (viewOps.contains(op))
      continue;
    for (Value v : op->getOperands())
      if (auto c = v.getDefiningOp<ConstantOp>(); c && !map.contains(v))
        map.map(v, cloneUnlabeled(*c)->getResult(0));
    cloneUnlabeled(*op);
  }
  SmallVector<Value> results;
  for (Value v : outputs)
    results.push_back(map.lookup(v));
  func::ReturnOp::create(kb, ops.back()->getLoc(), results);
  std::optional<KernelPieces> pieces =
      splitKernelIntoPieces(kernel, pieceCounts, kMinPieceElements);
  if (onlyInPieces && !pieces) {
    kernel.erase();
    return false;
  }
  symbol = kernels.add(kernel);

  SmallVector<Value> args, written;
  for (Value v : inputs) {
    FailureOr<Value> buffer = materialize(v);
    if (failed(buffer))
      return failure();
    args.push_back(*buffer);
  }
  for (Value v : outputs) {
    if (std::optional<Value> state = ops.size() == 1 ? updatedInPlace(v, flushed)
                                                      : std::nullopt) {
      bufferOf[v] = *state;
      written.push_back(*state);
      continue;
    }
    FailureOr<Value> buffer = result(v.getDefiningOp(), cast<OpResult>(v).getResultNumber());
    if (failed(buffer))
      return failure();
    written.push_back(*buffer);
  }
  for (ReshapeOp view : views)
    if (failed(aliasReshape(view)))
      return failure();
  auto call = exec::KernelOp::create(b, ops.front()->getLoc(),
                                     symbol, stepName(ops.front()), args, written,
                                     nullptr, nullptr);
  if (pieces) {
    call.setPiecesAttr(b.getI64IntegerAttr(pieces->pieces));
    call.setPieceBytes(pieces->pieceBytes);
  }
  annotateCost(call, ops);
  return true;
}

/// The state buffer that the result `v` of a kernel holding one optimizer
/// update can be written into directly, instead of a temporary copied
/// there by its global_store: `v` is only stored to a global G whose old
/// value the update reads at the same positions, straight from G's state
/// buffer, and nothing else reads G's old value after the kernel (every
/// reader of every load of G before the store, through the views that read
/// it in place, ran before the `flushed` group). Adam and SGD lower to one
/// generic that reads each element before it writes it, so the kernel may
/// read and write the same buffer; a kernel with more ops may not
/// (bufferization may stage other values in an output buffer, taking
/// outputs and arguments as distinct: AdamW with clipping, fused into the
/// backward's last kernel, trained wrongly).
std::optional<Value> StepBuilder::updatedInPlace(Value v,
                                                 const DenseSet<Operation *> &flushed) {
  Operation *update = v.getDefiningOp();
  if (!isa_and_nonnull<AdamUpdateOp, SgdUpdateOp>(update) || !v.hasOneUse())
    return std::nullopt;
  auto store = dyn_cast<GlobalStoreOp>(*v.getUsers().begin());
  if (!store)
    return std::nullopt;
  auto it = stateOf.find(store.getGlobal());
  bool readsOld = llvm::any_of(update->getOperands(), [&](Value o) {
    auto load = o.getDefiningOp<GlobalLoadOp>();
    return load && load.getGlobal() == store.getGlobal() && o.getType() == v.getType() &&
           it != stateOf.end() && bufferOf.lookup(o) == it->second;
  });
  if (!readsOld)
    return std::nullopt;
  // Whether a reader of `x` (or of a view of it) runs at or after the update.
  std::function<bool(Value)> readLater = [&](Value x) {
    for (Operation *user : x.getUsers()) {
      Operation *u = func.front().findAncestorOpInBlock(*user);
      if (u == update)
        continue;
      if (flushed.contains(u) || order[u] > order[update])
        return true;
      if (isa<ReshapeOp, TransposeOp>(u) && readLater(u->getResult(0)))
        return true;
    }
    return false;
  };
  for (Operation *op : accessesOf[store.getGlobal()])
    if (isa<GlobalLoadOp>(op) && order[op] < order[store] && readLater(op->getResult(0)))
      return std::nullopt;
  return it->second;
}

KernelLibrary::KernelLibrary(MLIRContext *context)
    : kernels(ModuleOp::create(UnknownLoc::get(context))) {}

std::string KernelLibrary::add(func::FuncOp kernel) {
  llvm::hash_code key = hash_value(kernel.getFunctionType());
  kernel.getBody().walk([&](Operation *op) {
    key = llvm::hash_combine(key, OperationEquivalence::computeHash(
                                      op, OperationEquivalence::ignoreHashValue,
                                      OperationEquivalence::ignoreHashValue,
                                      OperationEquivalence::IgnoreLocations));
  });
  SmallVector<func::FuncOp> &same = byHash[key];
  for (func::FuncOp other : same)
    if (other.getFunctionType() == kernel.getFunctionType() &&
        OperationEquivalence::isRegionEquivalentTo(&other.getBody(), &kernel.getBody(),
                                                   OperationEquivalence::IgnoreLocations)) {
      kernel.erase();
      return other.getSymName().str();
    }
  same.push_back(kernel);
  return kernel.getSymName().str();
}
