// Splits a train step into the steps of an exec.program. Matrix products
// become GEMM steps (a transpose of the last two dimensions that only feeds
// matrix products becomes a transpose flag), convolutions and pooling
// become oneDNN steps, global stores become copies, reshapes of
// materialized values become views, collectives become communication with
// a wait, and every other op joins the kernel being collected between two
// library steps: one generated function per group, whose elementwise chains
// the code generator fuses. This file holds the walk and the buffers.
#include "StepBuilder.h"

#include "colo/Passes/Pipeline.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;
using namespace colo;

namespace {
/// The most ops one kernel collects (see visit).
constexpr size_t kMaxKernelOps = 256;

/// A readable name for a buffer: the op's location name, if any.
std::string locName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (std::string n = locName(l); !n.empty())
        return n;
  return "";
}
} // namespace

StepBuilder::StepBuilder(func::FuncOp func, KernelLibrary &kernels, exec::ProgramOp program,
                         StringRef symbolPrefix, int64_t kernelPieces)
    : func(func), symbols(func->getParentOfType<ModuleOp>()), kernels(kernels),
      program(program), b(OpBuilder::atBlockEnd(&program.getBlock())),
      symbolPrefix(symbolPrefix.str()) {
  for (int64_t p = kernelPieces; p > 1; p /= 2)
    pieceCounts.push_back(p);
  int i = 0;
  for (Operation &op : func.front()) {
    order[&op] = i++;
    if (auto load = dyn_cast<GlobalLoadOp>(op))
      accessesOf[load.getGlobal()].push_back(&op);
    else if (auto store = dyn_cast<GlobalStoreOp>(op))
      accessesOf[store.getGlobal()].push_back(&op);
  }
}

LogicalResult StepBuilder::build() {
  for (BlockArgument arg : func.getArguments()) {
    std::string name = locName(arg.getLoc());
    if (name.empty())
      name = "input" + std::to_string(arg.getArgNumber());
    FailureOr<Value> buffer = newBuffer(arg, name, exec::BufferKind::input);
    if (failed(buffer))
      return failure();
    if (IntRange range = intRange(arg); range.max > 0) {
      Operation *op = buffer->getDefiningOp();
      op->setAttr("int_max", b.getI64IntegerAttr(range.max));
      if (range.ignored)
        op->setAttr("int_ignored", b.getI64IntegerAttr(*range.ignored));
    }
  }
  Block *body = b.getInsertionBlock();
  for (Operation &op : func.front().without_terminator()) {
    Operation *last = body->empty() ? nullptr : &body->back();
    if (failed(visit(&op)))
      return failure();
    // The steps `op` made (kernels and transfers, which may be emitted later
    // for other ops, are annotated where they are made).
    for (Operation *step = last ? last->getNextNode() : (body->empty() ? nullptr : &body->front());
         step; step = step->getNextNode())
      if (exec::isStep(step))
        annotateCost(step, &op);
  }
  if (failed(flush()))
    return failure();
  SmallVector<Value> reported;
  for (Value result : func.front().getTerminator()->getOperands()) {
    FailureOr<Value> buffer = materialize(result);
    if (failed(buffer))
      return failure();
    reported.push_back(*buffer);
  }
  exec::ReturnOp::create(b, func.getLoc(), reported);
  return describeMesh();
}

FailureOr<int> StepBuilder::meshAxis(Operation *user, StringRef name) {
  for (auto grid : func->getParentOfType<ModuleOp>().getOps<shard::GridOp>())
    if (ArrayAttr axes = ColoDialect::AxesAttrHelper(grid.getContext()).getAttr(grid))
      for (auto [i, axis] : llvm::enumerate(axes.getAsValueRange<StringAttr>()))
        if (axis == name)
          return int(i);
  return user->emitError() << "sharded over '" << name << "', which is not a mesh axis";
}

/// The module's mesh, and the axis that splits the batch.
LogicalResult StepBuilder::describeMesh() {
  auto grids = func->getParentOfType<ModuleOp>().getOps<shard::GridOp>();
  if (grids.empty())
    return success();
  shard::GridOp grid = *grids.begin();
  ArrayAttr axes = ColoDialect::AxesAttrHelper(grid.getContext()).getAttr(grid);
  if (!axes || axes.size() != grid.getShape().size() ||
      llvm::any_of(grid.getShape(), [](int64_t d) { return d <= 0; }))
    return grid.emitError("the mesh needs static sizes and colo.axes, one name per axis");
  program.setMeshShape(grid.getShape());
  program.setMeshAxesAttr(axes);
  for (auto [i, name] : llvm::enumerate(axes.getAsValueRange<StringAttr>()))
    if (name == "dp" && ColoDialect::DataParallelAttrHelper(grid.getContext()).isAttrPresent(func))
      program.setBatchAxis(int32_t(i));
  return success();
}

FailureOr<Value> StepBuilder::newBuffer(RankedTensorType t, StringRef name,
                                        exec::BufferKind kind, exec::MemorySpace space) {
  if (!runtimeDType(t.getElementType()))
    return func->emitError() << "no runtime element type for " << t.getElementType();
  return exec::BufferOp::create(b, func.getLoc(),
                                exec::bufferType(t.getShape(), t.getElementType(), space),
                                b.getStringAttr(name),
                                exec::BufferKindAttr::get(b.getContext(), kind), nullptr,
                                nullptr, nullptr, nullptr, nullptr)
      .getResult();
}

FailureOr<Value> StepBuilder::newBuffer(Value v, StringRef name, exec::BufferKind kind) {
  FailureOr<Value> buffer = newBuffer(tensorType(v), name, kind, spaceOf(v));
  if (succeeded(buffer))
    bufferOf[v] = *buffer;
  return buffer;
}

FailureOr<Value> StepBuilder::result(Operation *op, unsigned i) {
  return newBuffer(op->getResult(i), stepName(op, i), exec::BufferKind::temp);
}

/// The range of an integer input's values where the model tells it
/// (embedding ids: the vocabulary; labels: the classes and the loss's
/// ignore_index), so that synthetic data is valid and real data is checked.
StepBuilder::IntRange StepBuilder::intRange(Value v) {
  if (!isa<IntegerType>(tensorType(v).getElementType()))
    return {};
  // Ids that colo-vocab-parallel rebased to the rank's block of the table.
  // Read defensively: passes that add or drop block arguments (the
  // pipeline's stage functions) may leave the function's argument
  // attribute array shorter than its arguments.
  if (auto arg = dyn_cast<BlockArgument>(v))
    if (ArrayAttr attrs = func.getAllArgAttrs(); attrs && arg.getArgNumber() < attrs.size())
      if (auto dict = dyn_cast<DictionaryAttr>(attrs[arg.getArgNumber()]))
        if (auto max = dict.getAs<IntegerAttr>(ColoDialect::IntMaxAttrHelper::getNameStr())) {
          IntRange range{max.getInt(), std::nullopt};
          if (auto ignored =
                  dict.getAs<IntegerAttr>(ColoDialect::IntIgnoredAttrHelper::getNameStr()))
            range.ignored = ignored.getInt();
          return range;
        }
  for (Operation *user : v.getUsers()) {
    if (auto emb = dyn_cast<EmbeddingOp>(user))
      return {tensorType(emb.getTable()).getDimSize(0), std::nullopt};
    if (isa<CrossEntropyOp, CrossEntropyRowsOp, CrossEntropyRowsBackwardOp>(user) &&
        user->getOperand(1) == v)
      return {tensorType(user->getOperand(0)).getShape().back(),
              cast<IntegerAttr>(user->getAttr("ignore_index")).getInt()};
    // Ops that only move the ids: Ulysses slices the sequence of a stage's
    // ids between two transposes before the embedding reads them.
    if (isa<SliceOp, ReshapeOp, TransposeOp, shard::AllSliceOp, shard::AllGatherOp>(user))
      if (IntRange r = intRange(user->getResult(0)); r.max > 0)
        return r;
  }
  return {};
}

FailureOr<Value> StepBuilder::materialize(Value v) {
  if (auto it = bufferOf.find(v); it != bufferOf.end())
    return it->second;
  Operation *def = v.getDefiningOp();
  if (isa_and_nonnull<ConstantOp>(def)) {
    // Constants live in the kernels that use them; one that a library step
    // reads is produced by a kernel of its own.
    llvm::SetVector<Operation *> pending = std::move(group);
    group.clear();
    group.insert(def);
    LogicalResult flushed = flush();
    group = std::move(pending);
    if (failed(flushed))
      return failure();
    return bufferOf.at(v);
  }
  if (def && (group.contains(def) || llvm::is_contained(pendingTransfers, def))) {
    if (failed(flush()))
      return failure();
    return materialize(v);
  }
  return (def ? def : func.getOperation())->emitError("value used before it is computed");
}

LogicalResult StepBuilder::visit(Operation *op) {
  if (auto load = dyn_cast<GlobalLoadOp>(op))
    return visitLoad(load);
  if (auto store = dyn_cast<GlobalStoreOp>(op)) {
    // Kernels collected so far run before the store overwrites the state
    // they may read.
    if (failed(flush()))
      return failure();
    if (storedByTransfer.contains(op))
      return success();
    FailureOr<Value> src = materialize(store.getValue());
    FailureOr<Value> dst = stateBuffer(store, store.getGlobal());
    if (failed(src) || failed(dst))
      return failure();
    if (*src != *dst)
      exec::CopyOp::create(b, op->getLoc(), stepName(op), *src, *dst);
    return success();
  }
  if (isa<ConstantOp>(op))
    return success();
  if (auto t = dyn_cast<TransposeOp>(op); t && feedsOnlyGemms(t))
    return success();
  if (computedByGemm.contains(op))
    return success(); // biasEpilogue, residualEpilogue, transposedProduct
  if (auto reshape = dyn_cast<ReshapeOp>(op))
    if (bufferOf.contains(reshape.getInput()))
      return aliasReshape(reshape);
  if (isLibraryOp(op))
    return visitLibrary(op);
  if (auto transfer = dyn_cast<TransferOp>(op))
    return visitTransfer(transfer);
  // A kernel runs on the device or on the host, with its buffers.
  if (!group.empty() && spaceOf(group.front()->getResult(0)) != spaceOf(op->getResult(0)) &&
      failed(flush()))
    return failure();
  group.insert(op);
  // A group as long as the model (the optimizer's slices of every gradient
  // from the flat buckets, with nothing between them to end the group) would
  // make one kernel whose bufferization and LLVM optimization grow faster
  // than its size; capped, kernels.so grows linearly with the model.
  if (group.size() >= kMaxKernelOps)
    return flush();
  return success();
}

FailureOr<Value> StepBuilder::stateBuffer(Operation *user, StringRef global) {
  if (auto it = stateOf.find(global); it != stateOf.end())
    return it->second;
  auto g = symbols.lookup<GlobalOp>(global);
  if (!g)
    return user->emitError() << "unknown global '" << global << "'";
  FailureOr<Value> state =
      newBuffer(localType(g), global, exec::BufferKind::state,
                ColoDialect::OnHostAttrHelper(g.getContext()).isAttrPresent(g)
                    ? exec::MemorySpace::host
                    : exec::MemorySpace::device);
  if (failed(state))
    return failure();
  auto buffer = state->getDefiningOp<exec::BufferOp>();
  if (std::optional<GlobalShard> shard = getGlobalShard(g)) {
    // The runtime's shards (Program.proto) cut one dimension, or two: the
    // grouped one (the last) by the group's first axes, the other by its
    // last axes.
    SmallVector<int64_t> dims = shard->splitDims();
    if (dims.size() > 2)
      return g.emitError() << "@" << global << " is sharded along " << dims.size()
                           << " dimensions; programs shard a global along one or two";
    int64_t dim = dims.back(), inner = dims.front();
    SmallVector<int32_t> axes;
    auto addAxes = [&](ArrayRef<StringRef> names) -> LogicalResult {
      for (StringRef name : names) {
        FailureOr<int> axis = meshAxis(g, name);
        if (failed(axis))
          return failure();
        axes.push_back(*axis);
      }
      return success();
    };
    // ZeRO-3 over a split: the flattening's axes follow the split's.
    if (failed(addAxes(shard->axes[dim])) ||
        (dims.size() == 2 && failed(addAxes(shard->axes[inner]))) ||
        failed(addAxes(shard->flatAxes)))
      return failure();
    buffer.setShardAttr(exec::ShardAttr::get(
        b.getContext(), g.getTensorType().getShape(), dim, shard->groups, shard->flattened(), axes,
        shard->flatAxes.empty() ? 0 : shard->flatParts, dims.size() == 2 ? inner : 0,
        dims.size() == 2 ? shard->parts[inner] : 0));
  }
  // Pipeline ranks' own copies of a global keep the model's name.
  StringRef modelName = global;
  if (StringAttr name = ColoDialect::ParamNameAttrHelper(g.getContext()).getAttr(g))
    modelName = name.getValue();
  if (modelName == "colo.step")
    buffer.setStepCounter(true);
  if (!ColoDialect::OptimizerStateAttrHelper(g.getContext()).isAttrPresent(g))
    buffer.setParamName(modelName);
  stateOf[global] = *state;
  return *state;
}

/// A load reads the state buffer directly unless the global is stored
/// before the load's last use: then it reads a copy taken at the load.
LogicalResult StepBuilder::visitLoad(GlobalLoadOp load) {
  FailureOr<Value> state = stateBuffer(load, load.getGlobal());
  if (failed(state))
    return failure();
  int lastUse = order[load];
  for (Operation *user : load->getUsers())
    lastUse = std::max(lastUse, order[func.front().findAncestorOpInBlock(*user)]);
  bool storedBefore = llvm::any_of(accessesOf[load.getGlobal()], [&](Operation *op) {
    return isa<GlobalStoreOp>(op) && order[op] > order[load] && order[op] < lastUse;
  });
  if (!storedBefore) {
    bufferOf[load.getResult()] = *state;
    return success();
  }
  FailureOr<Value> copy = newBuffer(load.getResult(), stepName(load), exec::BufferKind::temp);
  if (failed(copy))
    return failure();
  exec::CopyOp::create(b, load.getLoc(), stepName(load), *state, *copy);
  return success();
}

std::string StepBuilder::stepName(Operation *op, unsigned result) {
  std::string name = locName(op->getLoc());
  std::string opName = op->getName().stripDialect().str();
  return (name.empty() ? opName : name + "." + opName) +
         (op->getNumResults() > 1 ? "#" + std::to_string(result) : "") + "." +
         std::to_string(order[op]);
}

void StepBuilder::annotateCost(Operation *step, ArrayRef<Operation *> sources) {
  MLIRContext *ctx = step->getContext();
  auto flopsAttr = exec::ExecDialect::FlopsAttrHelper(ctx);
  // A wait costs what the step it finishes does, charged there.
  if (flopsAttr.isAttrPresent(step) || isa<exec::WaitOp>(step))
    return;
  int64_t flops = 0, bytes = 0;
  bool recomputed = false;
  for (Operation *op : sources) {
    recomputed |= ColoDialect::RecomputedAttrHelper(ctx).isAttrPresent(op);
    if (auto transfer = dyn_cast<TransferOp>(op))
      bytes += transfer.getLinkBytes();
    else if (auto cost = dyn_cast<CostOpInterface>(op))
      cost.getCostClass() == CostClass::Matmul
          ? flops += cost.getFlops()
          : bytes += cost.getBytesRead() + cost.getBytesWritten();
  }
  // A fused kernel moves its operands and results through memory, not the
  // values between its ops (which its loops keep in registers).
  if (isa<exec::KernelOp>(step)) {
    bytes = 0;
    for (Value v : step->getOperands())
      if (auto t = dyn_cast<MemRefType>(v.getType()); t && t.hasStaticShape())
        bytes += t.getNumElements() * int64_t(t.getElementTypeBitWidth() / 8);
  }
  Builder builder(ctx);
  flopsAttr.setAttr(step, builder.getI64IntegerAttr(flops));
  exec::ExecDialect::BytesAttrHelper(ctx).setAttr(step, builder.getI64IntegerAttr(bytes));
  if (recomputed)
    exec::ExecDialect::RecomputedAttrHelper(ctx).setAttr(step, builder.getUnitAttr());
}

/// A reshape's result as a view of its input's storage.
LogicalResult StepBuilder::aliasReshape(ReshapeOp reshape) {
  Value storage = exec::storageOf(bufferOf.lookup(reshape.getInput()));
  RankedTensorType t = tensorType(reshape.getResult());
  if (!runtimeDType(t.getElementType()))
    return reshape->emitError() << "no runtime element type for " << t.getElementType();
  auto space = cast<MemRefType>(storage.getType()).getMemorySpace();
  auto type = MemRefType::get(t.getShape(), t.getElementType(), MemRefLayoutAttrInterface(),
                              space);
  bufferOf[reshape.getResult()] =
      exec::ViewOp::create(b, reshape.getLoc(), type, storage, stepName(reshape));
  return success();
}

exec::MemorySpace StepBuilder::spaceOf(Value v) {
  Operation *def = v.getDefiningOp();
  bool host = false;
  if (auto transfer = dyn_cast_or_null<TransferOp>(def))
    host = transfer.getToHost();
  else if (auto load = dyn_cast_or_null<GlobalLoadOp>(def))
    host = ColoDialect::OnHostAttrHelper(def->getContext())
               .isAttrPresent(symbols.lookup<GlobalOp>(load.getGlobal()));
  else if (def)
    host = ColoDialect::OnHostAttrHelper(def->getContext()).isAttrPresent(def);
  return host ? exec::MemorySpace::host : exec::MemorySpace::device;
}

LogicalResult StepBuilder::visitTransfer(TransferOp transfer) {
  Operation *def = transfer.getInput().getDefiningOp();
  if (def && group.contains(def)) {
    pendingTransfers.push_back(transfer);
    return success();
  }
  return emitTransfer(transfer);
}

/// A transfer whose only user stores it into a global, with no access to
/// that global between them, writes the global's state buffer directly.
LogicalResult StepBuilder::emitTransfer(TransferOp transfer) {
  FailureOr<Value> src = materialize(transfer.getInput());
  if (failed(src))
    return failure();
  FailureOr<Value> dst;
  auto store = transfer->hasOneUse() ? dyn_cast<GlobalStoreOp>(*transfer->user_begin())
                                     : GlobalStoreOp();
  if (store && llvm::none_of(accessesOf[store.getGlobal()], [&](Operation *op) {
        return order[op] > order[transfer] && order[op] < order[store];
      })) {
    dst = stateBuffer(store, store.getGlobal());
    if (succeeded(dst)) {
      bufferOf[transfer.getResult()] = *dst;
      storedByTransfer.insert(store);
    }
  } else {
    dst = result(transfer);
  }
  if (failed(dst))
    return failure();
  std::string name = stepName(transfer);
  auto started = exec::TransferOp::create(b, transfer.getLoc(), b.getType<exec::TokenType>(),
                                          name, *src, *dst);
  annotateCost(started, transfer.getOperation());
  waitFor(started.getToken(), name);
  return success();
}

LogicalResult colo::buildStepProgram(func::FuncOp func, KernelLibrary &kernels,
                                     exec::ProgramOp program, StringRef symbolPrefix,
                                     int64_t kernelPieces) {
  return StepBuilder(func, kernels, program, symbolPrefix, kernelPieces).build();
}
