// Splits a train step into the runtime's steps. Matrix products become GEMM
// steps (a transpose of the last two dimensions that only feeds matrix
// products becomes a transpose flag), convolutions and pooling become oneDNN
// steps, global stores become copies, reshapes of materialized values become
// aliases, and every other op joins the kernel being collected between two
// library steps: one generated function per group, whose elementwise chains
// the code generator fuses.
#include "ExecutableBuilder.h"
#include "KernelPieces.h"

#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/Pipeline.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace colo;
namespace rt = colo::runtime;

namespace {
RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Kernels writing fewer elements stay whole: waking a thread costs more
/// than their work.
constexpr int64_t kMinPieceElements = 1 << 15;

FailureOr<rt::DType> dtypeOf(Operation *op, Type t) {
  if (t.isF32())
    return rt::F32;
  if (t.isF64())
    return rt::F64;
  if (t.isBF16())
    return rt::BF16;
  if (t.isF16())
    return rt::F16;
  if (t.isInteger(64))
    return rt::I64;
  if (t.isInteger(32))
    return rt::I32;
  if (t.isInteger(8))
    return rt::I8;
  if (t.isInteger(1))
    return rt::BOOL;
  return op->emitError() << "no runtime element type for " << t;
}

/// How a GEMM step reads an operand of logical shape [batch..., rows, cols]
/// in place: from `stored`'s buffer, rows and columns transposed or not,
/// with leading dimension `ld` and these element strides of the batch
/// dimensions.
struct GemmOperand {
  Value stored;
  bool trans;
  int64_t ld;
  SmallVector<int64_t> batchStrides;
};

/// `v` read through `perm` (logical dimension i is dimension perm[i] of the
/// row-major `stored`); none if neither of the last two logical dimensions
/// is the stored innermost one, which BLAS needs.
std::optional<GemmOperand> gemmOperand(Value stored, ArrayRef<int64_t> perm) {
  ArrayRef<int64_t> shape = tensorType(stored).getShape();
  int64_t r = shape.size();
  if (r < 2)
    return std::nullopt;
  SmallVector<int64_t> strides = computeStrides(shape);
  int64_t rows = strides[perm[r - 2]], cols = strides[perm[r - 1]];
  if (rows != 1 && cols != 1)
    return std::nullopt;
  GemmOperand o{stored, cols != 1, cols != 1 ? cols : rows, {}};
  for (int64_t i = 0; i + 2 < r; ++i)
    o.batchStrides.push_back(strides[perm[i]]);
  return o;
}

/// Transposes that GEMM steps absorb by reading their input in place: a
/// permutation that GEMMs read through (gemmOperand) with at most two batch
/// dimensions, so that any product's batch fits the step's two levels.
bool feedsOnlyGemms(TransposeOp t) {
  return !t->use_empty() && t.getPermutation().size() <= 4 &&
         gemmOperand(t.getInput(), t.getPermutation()) &&
         llvm::all_of(t->getUsers(), [](Operation *u) { return isa<MatmulOp>(u); });
}

/// An add that a matrix product's step absorbs (Gemm.bias) and the bias it
/// adds: the product's only use, adding a float vector along its rows that
/// exists before the product runs. Float products of one matrix only, where
/// the epilogue computes the bits the add would.
struct BiasEpilogue {
  AddOp add;
  Value bias;
};
std::optional<BiasEpilogue> biasEpilogue(MatmulOp mm) {
  RankedTensorType t = tensorType(mm.getResult());
  if (t.getRank() != 2 || !t.getElementType().isF32() || !mm->hasOneUse())
    return std::nullopt;
  auto add = dyn_cast<AddOp>(*mm->user_begin());
  if (!add || add.getType() != t)
    return std::nullopt;
  Value bias = add.getLhs() == mm.getResult() ? add.getRhs() : add.getLhs();
  RankedTensorType bt = tensorType(bias);
  Operation *def = bias.getDefiningOp();
  if (bias == mm.getResult() || bt.getRank() != 1 || bt.getDimSize(0) != t.getDimSize(1) ||
      !bt.getElementType().isF32() || (def && !def->isBeforeInBlock(mm)))
    return std::nullopt;
  return BiasEpilogue{add, bias};
}

/// A residual add that a matrix product's step absorbs after its bias
/// (Gemm.residual): the only use of `v` (the product, or its bias add),
/// through at most one reshape (which keeps the elements in order), adding a
/// float tensor of the same type that exists before the product. Float
/// matrices only (one product, C written row after row, as the residual's
/// buffer lies), where the epilogue computes the bits the add would.
struct ResidualEpilogue {
  ReshapeOp reshape; // or null
  AddOp add;
  Value residual;
};
std::optional<ResidualEpilogue> residualEpilogue(MatmulOp mm, Value v) {
  RankedTensorType t = tensorType(mm.getResult());
  if (t.getRank() != 2 || !t.getElementType().isF32() || !v.hasOneUse())
    return std::nullopt;
  auto reshape = dyn_cast<ReshapeOp>(*v.user_begin());
  if (reshape) {
    v = reshape.getResult();
    if (!v.hasOneUse())
      return std::nullopt;
  }
  auto add = dyn_cast<AddOp>(*v.user_begin());
  if (!add || add.getType() != v.getType())
    return std::nullopt;
  Value residual = add.getLhs() == v ? add.getRhs() : add.getLhs();
  Operation *def = residual.getDefiningOp();
  if (residual == v || residual.getType() != v.getType() ||
      (def && !def->isBeforeInBlock(mm)))
    return std::nullopt;
  return ResidualEpilogue{reshape, add, residual};
}

/// The transpose of a matrix product that its step computes instead, as the
/// product of the operands swapped and transposed (C^T = op(B)^T op(A)^T):
/// the product's only use, swapping the two dimensions of a matrix (a
/// weight gradient wanted in the weight's layout, e.g. a tied LM head's).
TransposeOp transposedProduct(MatmulOp mm) {
  if (tensorType(mm.getResult()).getRank() != 2 || !mm->hasOneUse())
    return nullptr;
  auto t = dyn_cast<TransposeOp>(*mm->user_begin());
  return t && t.getPermutation() == ArrayRef<int64_t>{1, 0} ? t : nullptr;
}

bool isCollective(Operation *op) {
  return isa<shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp,
             shard::AllToAllOp, shard::AllSliceOp, shard::SendOp, shard::RecvOp>(op);
}

bool isLibraryOp(Operation *op) {
  return isa<MatmulOp, Conv2dOp, Conv2dBackwardInputOp, Conv2dBackwardFilterOp,
             MaxPool2dOp, AvgPool2dOp, MaxPool2dBackwardOp, AvgPool2dBackwardOp>(op) ||
         isCollective(op);
}

/// Collectives move contiguous blocks: cutting or joining along `axis` must
/// not interleave, i.e. every dimension before it is 1.
bool blocksAreContiguous(Value v, int64_t axis) {
  return llvm::all_of(tensorType(v).getShape().take_front(axis),
                      [](int64_t d) { return d == 1; });
}

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

class PlanBuilder {
public:
  PlanBuilder(func::FuncOp func, KernelLibrary &kernels, StringRef symbolPrefix,
              int64_t kernelPieces)
      : func(func), symbols(func->getParentOfType<ModuleOp>()), kernels(kernels),
        symbolPrefix(symbolPrefix.str()) {
    for (int64_t p = kernelPieces; p > 1; p /= 2)
      pieceCounts.push_back(p);
    int i = 0;
    for (Operation &op : func.front())
      order[&op] = i++;
  }

  FailureOr<rt::Program> build() {
    for (BlockArgument arg : func.getArguments()) {
      std::string name = locName(arg.getLoc());
      if (name.empty())
        name = "input" + std::to_string(arg.getArgNumber());
      FailureOr<int> id = newBuffer(arg, name, rt::Buffer::INPUT);
      if (failed(id))
        return failure();
      program.mutable_buffers(*id)->set_int_max(intRange(arg));
    }
    for (Operation &op : func.front().without_terminator())
      if (failed(visit(&op)))
        return failure();
    if (failed(flush()))
      return failure();
    for (Value result : func.front().getTerminator()->getOperands()) {
      FailureOr<int> id = materialize(result);
      if (failed(id))
        return failure();
      program.add_loss(*id);
    }
    if (failed(describeMesh()))
      return failure();
    overlapCollectives(program);
    planMemory(program);
    program.set_kernels_library("kernels.so");
    return std::move(program);
  }

private:
  /// The index of the mesh axis `name`.
  FailureOr<int> meshAxis(Operation *user, StringRef name) {
    for (auto grid : func->getParentOfType<ModuleOp>().getOps<shard::GridOp>())
      if (auto axes = grid->getAttrOfType<ArrayAttr>("colo.axes"))
        for (auto [i, axis] : llvm::enumerate(axes.getAsValueRange<StringAttr>()))
          if (axis == name)
            return int(i);
    return user->emitError() << "sharded over '" << name << "', which is not a mesh axis";
  }

  /// The module's mesh, and the axis that splits the batch.
  LogicalResult describeMesh() {
    auto module = func->getParentOfType<ModuleOp>();
    auto grids = module.getOps<shard::GridOp>();
    if (grids.empty())
      return success();
    shard::GridOp grid = *grids.begin();
    auto axes = grid->getAttrOfType<ArrayAttr>("colo.axes");
    if (!axes || axes.size() != grid.getShape().size() ||
        llvm::any_of(grid.getShape(), [](int64_t d) { return d <= 0; }))
      return grid.emitError("the mesh needs static sizes and colo.axes, one name per axis");
    rt::Mesh *mesh = program.mutable_mesh();
    for (auto [size, name] : llvm::zip(grid.getShape(), axes.getAsValueRange<StringAttr>())) {
      mesh->add_shape(size);
      mesh->add_axes(name.str());
      if (name == "dp" && func->hasAttr("colo.data_parallel"))
        program.set_batch_axis(mesh->shape_size() - 1);
    }
    return success();
  }

  FailureOr<int> newBuffer(RankedTensorType t, StringRef name, rt::Buffer::Kind kind) {
    FailureOr<rt::DType> dtype = dtypeOf(func, t.getElementType());
    if (failed(dtype))
      return failure();
    int id = program.buffers_size();
    rt::Buffer *b = program.add_buffers();
    b->set_name(name.str());
    b->set_dtype(*dtype);
    for (int64_t d : t.getShape())
      b->add_shape(d);
    b->set_kind(kind);
    return id;
  }
  FailureOr<int> newBuffer(Value v, StringRef name, rt::Buffer::Kind kind) {
    FailureOr<int> id = newBuffer(tensorType(v), name, kind);
    if (succeeded(id))
      bufferOf[v] = *id;
    return id;
  }

  /// The exclusive upper bound of an integer input's values where the model
  /// tells it (embedding ids: the vocabulary; labels: the classes), so that
  /// synthetic data is valid.
  int64_t intRange(Value v) {
    if (!isa<IntegerType>(tensorType(v).getElementType()))
      return 0;
    // Ids that colo-vocab-parallel rebased to the rank's block of the table.
    // Read defensively: passes that add or drop block arguments (the
    // pipeline's stage functions) may leave the function's argument
    // attribute array shorter than its arguments.
    if (auto arg = dyn_cast<BlockArgument>(v))
      if (ArrayAttr attrs = func.getAllArgAttrs(); attrs && arg.getArgNumber() < attrs.size())
        if (auto dict = dyn_cast<DictionaryAttr>(attrs[arg.getArgNumber()]))
          if (auto max = dict.getAs<IntegerAttr>("colo.int_max"))
            return max.getInt();
    for (Operation *user : v.getUsers()) {
      if (auto emb = dyn_cast<EmbeddingOp>(user))
        return tensorType(emb.getTable()).getDimSize(0);
      if (isa<CrossEntropyOp, CrossEntropyRowsOp, CrossEntropyRowsBackwardOp>(user) &&
          user->getOperand(1) == v)
        return tensorType(user->getOperand(0)).getShape().back();
      if (isa<SliceOp, ReshapeOp>(user))
        if (int64_t r = intRange(user->getResult(0)))
          return r;
    }
    return 0;
  }

  /// The buffer holding `v`, emitting the kernel group that computes it if
  /// it has not run yet.
  FailureOr<int> materialize(Value v) {
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
    if (def && group.contains(def)) {
      if (failed(flush()))
        return failure();
      return materialize(v);
    }
    return (def ? def : func.getOperation())->emitError("value used before it is computed");
  }

  LogicalResult visit(Operation *op) {
    if (auto load = dyn_cast<GlobalLoadOp>(op))
      return visitLoad(load);
    if (auto store = dyn_cast<GlobalStoreOp>(op)) {
      // Kernels collected so far run before the store overwrites the state
      // they may read.
      if (failed(flush()))
        return failure();
      FailureOr<int> src = materialize(store.getValue());
      FailureOr<int> dst = stateBuffer(store, store.getGlobal());
      if (failed(src) || failed(dst))
        return failure();
      if (*src != *dst) {
        rt::Step *s = addStep(op);
        s->mutable_copy()->set_src(*src);
        s->mutable_copy()->set_dst(*dst);
      }
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
    group.insert(op);
    return success();
  }

  FailureOr<int> stateBuffer(Operation *user, StringRef global) {
    if (auto it = stateOf.find(global); it != stateOf.end())
      return it->second;
    auto g = symbols.lookup<GlobalOp>(global);
    if (!g)
      return user->emitError() << "unknown global '" << global << "'";
    FailureOr<int> id = newBuffer(localType(g), global, rt::Buffer::STATE);
    if (failed(id))
      return failure();
    if (std::optional<GlobalShard> shard = getGlobalShard(g)) {
      rt::Shard *s = program.mutable_buffers(*id)->mutable_shard();
      for (int64_t d : g.getTensorType().getShape())
        s->add_full_shape(d);
      s->set_dim(shard->dim);
      s->set_groups(shard->groups);
      s->set_flat(shard->flat);
      FailureOr<int> axis = meshAxis(g, shard->axis);
      if (failed(axis))
        return failure();
      s->add_mesh_axes(*axis);
    }
    // Pipeline ranks' own copies of a global keep the model's name.
    StringRef modelName = global;
    if (auto name = g->getAttrOfType<StringAttr>("colo.param_name"))
      modelName = name.getValue();
    if (modelName == "colo.step")
      program.set_step_counter(*id);
    if (!g->hasAttr("colo.optimizer_state"))
      (*program.mutable_param_names())[global.str()] = modelName.str();
    stateOf[global] = *id;
    return *id;
  }

  /// A load reads the state buffer directly unless the global is stored
  /// before the load's last use: then it reads a copy taken at the load.
  LogicalResult visitLoad(GlobalLoadOp load) {
    FailureOr<int> state = stateBuffer(load, load.getGlobal());
    if (failed(state))
      return failure();
    int lastUse = order[load];
    for (Operation *user : load->getUsers())
      lastUse = std::max(lastUse, order[func.front().findAncestorOpInBlock(*user)]);
    bool storedBefore = false;
    for (Operation &op : func.front())
      if (auto store = dyn_cast<GlobalStoreOp>(op);
          store && store.getGlobal() == load.getGlobal() && order[&op] > order[load] &&
          order[&op] < lastUse)
        storedBefore = true;
    if (!storedBefore) {
      bufferOf[load.getResult()] = *state;
      return success();
    }
    FailureOr<int> copy = newBuffer(load.getResult(), bufferName(load), rt::Buffer::TEMP);
    if (failed(copy))
      return failure();
    rt::Step *s = addStep(load);
    s->mutable_copy()->set_src(*state);
    s->mutable_copy()->set_dst(*copy);
    return success();
  }

  /// "<location name or op name>[#result].<position>", e.g. "fc1.matmul.5".
  std::string bufferName(Operation *op, unsigned result = 0) {
    std::string name = locName(op->getLoc());
    std::string opName = op->getName().stripDialect().str();
    return (name.empty() ? opName : name + "." + opName) +
           (op->getNumResults() > 1 ? "#" + std::to_string(result) : "") + "." +
           std::to_string(order[op]);
  }

  rt::Step *addStep(Operation *op) {
    rt::Step *s = program.add_steps();
    s->set_name(bufferName(op));
    return s;
  }

  /// A reshape's result as a view of its input's buffer.
  LogicalResult aliasReshape(ReshapeOp reshape) {
    // Read before newBuffer inserts into bufferOf, which may move it.
    int root = bufferOf.lookup(reshape.getInput());
    FailureOr<int> id = newBuffer(reshape.getResult(), bufferName(reshape), rt::Buffer::TEMP);
    if (failed(id))
      return failure();
    if (program.buffers(root).has_alias_of())
      root = program.buffers(root).alias_of();
    program.mutable_buffers(*id)->set_alias_of(root);
    return success();
  }

  FailureOr<int> result(Operation *op, unsigned i = 0) {
    return newBuffer(op->getResult(i), bufferName(op, i), rt::Buffer::TEMP);
  }

  LogicalResult visitLibrary(Operation *op) {
    if (failed(flush()))
      return failure();
    if (auto mm = dyn_cast<MatmulOp>(op))
      return visitMatmul(mm);
    if (isCollective(op))
      return visitCollective(op);
    SmallVector<int> ids;
    for (Value v : op->getOperands()) {
      FailureOr<int> id = materialize(v);
      if (failed(id))
        return failure();
      ids.push_back(*id);
    }
    FailureOr<int> out = result(op);
    if (failed(out))
      return failure();
    if (auto conv = dyn_cast<Conv2dOp>(op)) {
      rt::Conv2d *c = convStep(op, conv.getInput(), conv.getFilter(), conv.getResult(),
                               conv.getStrides(), conv.getPadding(), conv.getDilations(),
                               conv.getGroups(), rt::Conv2d::FORWARD);
      c->set_x(ids[0]);
      c->set_weight(ids[1]);
      if (conv.getBias())
        c->set_bias(ids[2]);
      c->set_y(*out);
    } else if (auto back = dyn_cast<Conv2dBackwardInputOp>(op)) {
      rt::Conv2d *c = convStep(op, back.getResult(), back.getFilter(), back.getGrad(),
                               back.getStrides(), back.getPadding(), back.getDilations(),
                               back.getGroups(), rt::Conv2d::BACKWARD_DATA);
      c->set_y(ids[0]);
      c->set_weight(ids[1]);
      c->set_x(*out);
    } else if (auto back = dyn_cast<Conv2dBackwardFilterOp>(op)) {
      rt::Conv2d *c = convStep(op, back.getInput(), back.getResult(), back.getGrad(),
                               back.getStrides(), back.getPadding(), back.getDilations(),
                               back.getGroups(), rt::Conv2d::BACKWARD_WEIGHTS);
      c->set_x(ids[0]);
      c->set_y(ids[1]);
      c->set_weight(*out);
    } else if (auto pool = dyn_cast<MaxPool2dOp>(op)) {
      rt::Pool2d *p = poolStep(op, pool.getInput(), pool.getResult(), pool.getKernel(),
                               pool.getStrides(), pool.getPadding(), false,
                               rt::Pool2d::MAX_FORWARD);
      p->set_x(ids[0]);
      p->set_y(*out);
    } else if (auto pool = dyn_cast<AvgPool2dOp>(op)) {
      rt::Pool2d *p = poolStep(op, pool.getInput(), pool.getResult(), pool.getKernel(),
                               pool.getStrides(), pool.getPadding(),
                               pool.getCountIncludePad(), rt::Pool2d::AVG_FORWARD);
      p->set_x(ids[0]);
      p->set_y(*out);
    } else if (auto back = dyn_cast<MaxPool2dBackwardOp>(op)) {
      rt::Pool2d *p = poolStep(op, back.getInput(), back.getGrad(), back.getKernel(),
                               back.getStrides(), back.getPadding(), false,
                               rt::Pool2d::MAX_BACKWARD);
      p->set_x(ids[0]);
      p->set_dy(ids[1]);
      p->set_dx(*out);
    } else if (auto back = dyn_cast<AvgPool2dBackwardOp>(op)) {
      rt::Pool2d *p = poolStep(op, back.getResult(), back.getGrad(), back.getKernel(),
                               back.getStrides(), back.getPadding(),
                               back.getCountIncludePad(), rt::Pool2d::AVG_BACKWARD);
      p->set_dy(ids[0]);
      p->set_dx(*out);
    }
    return success();
  }

  /// A pipeline message: the peer is an index on the op's one grid axis.
  LogicalResult visitPointToPoint(Operation *op, ArrayRef<int16_t> axes,
                                  ArrayRef<int64_t> peer) {
    auto tag = op->getAttrOfType<IntegerAttr>("colo.tag");
    if (!tag || axes.size() != 1 || peer.size() != 1)
      return op->emitError("the runtime sends between members of one grid axis, "
                           "with a colo.tag");
    rt::Step *step = addStep(op);
    rt::Collective *c = step->mutable_collective();
    c->add_mesh_axes(axes[0]);
    c->set_peer(peer[0]);
    c->set_tag(static_cast<int32_t>(tag.getInt()));
    if (auto send = dyn_cast<shard::SendOp>(op)) {
      FailureOr<int> in = materialize(send.getInput());
      if (failed(in))
        return failure();
      c->set_kind(rt::Collective::SEND);
      c->set_input(*in);
      c->set_output(-1);
      bufferOf[send.getResult()] = *in;
      return success();
    }
    FailureOr<int> out = result(op);
    if (failed(out))
      return failure();
    c->set_kind(rt::Collective::RECV);
    c->set_input(-1);
    c->set_output(*out);
    return success();
  }

  LogicalResult visitCollective(Operation *op) {
    if (auto send = dyn_cast<shard::SendOp>(op))
      return visitPointToPoint(op, send.getGridAxes(), send.getDestination());
    if (auto recv = dyn_cast<shard::RecvOp>(op))
      return visitPointToPoint(op, recv.getGridAxes(), recv.getSource().value_or(ArrayRef<int64_t>{}));
    FailureOr<int> in = materialize(op->getOperand(0));
    if (failed(in))
      return failure();
    // An all-reduce reduces in place a temporary that nothing else reads
    // (a data-parallel bucket), with no copy of it first.
    const rt::Buffer &input = program.buffers(*in);
    bool inPlace = isa<shard::AllReduceOp>(op) && op->getOperand(0).hasOneUse() &&
                   input.kind() == rt::Buffer::TEMP && !input.has_alias_of();
    if (inPlace)
      bufferOf[op->getResult(0)] = *in;
    FailureOr<int> out = inPlace ? in : result(op);
    if (failed(out))
      return failure();
    rt::Collective *c = addStep(op)->mutable_collective();
    c->set_input(*in);
    c->set_output(*out);
    auto reduction = [&](shard::ReductionKind kind) -> LogicalResult {
      switch (kind) {
      case shard::ReductionKind::Sum:
        c->set_reduction(rt::Collective::SUM);
        return success();
      case shard::ReductionKind::Average:
        c->set_reduction(rt::Collective::AVERAGE);
        return success();
      case shard::ReductionKind::Max:
        c->set_reduction(rt::Collective::MAX);
        return success();
      default:
        return op->emitError("the runtime reduces by sum, average or max only");
      }
    };
    auto axisIsLeading = [&](Value v, int64_t axis) -> LogicalResult {
      if (blocksAreContiguous(v, axis))
        return success();
      return op->emitError() << "the runtime cuts and joins tensors along their "
                                "outermost non-unit dimension only, not dimension "
                             << axis << " of " << v.getType();
    };
    ArrayRef<int16_t> axes;
    LogicalResult ok = success();
    if (auto r = dyn_cast<shard::AllReduceOp>(op)) {
      c->set_kind(rt::Collective::ALL_REDUCE);
      axes = r.getGridAxes();
      ok = reduction(r.getReduction());
    } else if (auto g = dyn_cast<shard::AllGatherOp>(op)) {
      c->set_kind(rt::Collective::ALL_GATHER);
      axes = g.getGridAxes();
      ok = axisIsLeading(g.getResult(), g.getGatherAxis().getSExtValue());
    } else if (auto r = dyn_cast<shard::ReduceScatterOp>(op)) {
      c->set_kind(rt::Collective::REDUCE_SCATTER);
      axes = r.getGridAxes();
      ok = succeeded(reduction(r.getReduction()))
               ? axisIsLeading(r.getInput(), r.getScatterAxis().getSExtValue())
               : failure();
    } else if (auto a = dyn_cast<shard::AllToAllOp>(op)) {
      c->set_kind(rt::Collective::ALL_TO_ALL);
      axes = a.getGridAxes();
      if (a.getSplitAxis() != a.getConcatAxis())
        ok = op->emitError("the runtime's all-to-all splits and concatenates along "
                           "the same dimension");
      else
        ok = axisIsLeading(a.getInput(), a.getSplitAxis().getSExtValue());
    } else if (auto sl = dyn_cast<shard::AllSliceOp>(op)) {
      c->set_kind(rt::Collective::ALL_SLICE);
      axes = sl.getGridAxes();
      ok = axisIsLeading(sl.getInput(), sl.getSliceAxis().getSExtValue());
    }
    for (int16_t axis : axes)
      c->add_mesh_axes(axis);
    return ok;
  }

  rt::Conv2d *convStep(Operation *op, Value x, Value w, Value y, ArrayRef<int64_t> strides,
                       ArrayRef<int64_t> pad, ArrayRef<int64_t> dil, int64_t groups,
                       rt::Conv2d::Mode mode) {
    ArrayRef<int64_t> xs = tensorType(x).getShape(), ws = tensorType(w).getShape(),
                      ys = tensorType(y).getShape();
    rt::Conv2d *c = addStep(op)->mutable_conv();
    c->set_mode(mode);
    c->set_n(xs[0]), c->set_c(xs[1]), c->set_h(xs[2]), c->set_w(xs[3]);
    c->set_k(ws[0]), c->set_r(ws[2]), c->set_s(ws[3]);
    c->set_oh(ys[2]), c->set_ow(ys[3]);
    c->set_stride_h(strides[0]), c->set_stride_w(strides[1]);
    c->set_pad_t(pad[0]), c->set_pad_l(pad[1]), c->set_pad_b(pad[2]), c->set_pad_r(pad[3]);
    c->set_dil_h(dil[0]), c->set_dil_w(dil[1]);
    c->set_groups(groups);
    return c;
  }

  rt::Pool2d *poolStep(Operation *op, Value x, Value y, ArrayRef<int64_t> kernel,
                       ArrayRef<int64_t> strides, ArrayRef<int64_t> pad,
                       bool countIncludePad, rt::Pool2d::Mode mode) {
    ArrayRef<int64_t> xs = tensorType(x).getShape(), ys = tensorType(y).getShape();
    rt::Pool2d *p = addStep(op)->mutable_pool();
    p->set_mode(mode);
    p->set_n(xs[0]), p->set_c(xs[1]), p->set_h(xs[2]), p->set_w(xs[3]);
    p->set_r(kernel[0]), p->set_s(kernel[1]);
    p->set_oh(ys[2]), p->set_ow(ys[3]);
    p->set_stride_h(strides[0]), p->set_stride_w(strides[1]);
    p->set_pad_t(pad[0]), p->set_pad_l(pad[1]), p->set_pad_b(pad[2]), p->set_pad_r(pad[3]);
    p->set_dil_h(1), p->set_dil_w(1);
    p->set_count_include_pad(countIncludePad);
    return p;
  }

  /// `lhs[..., m, k] x rhs[..., k, n]` as one GEMM step over at most two
  /// levels of batch, reading transposed operands in place.
  LogicalResult visitMatmul(MatmulOp mm) {
    auto operand = [&](Value v) {
      if (auto t = v.getDefiningOp<TransposeOp>(); t && feedsOnlyGemms(t))
        return *gemmOperand(t.getInput(), t.getPermutation());
      return *gemmOperand(v, llvm::to_vector(llvm::seq<int64_t>(0, tensorType(v).getRank())));
    };
    GemmOperand lhs = operand(mm.getLhs()), rhs = operand(mm.getRhs());
    std::optional<BiasEpilogue> epilogue = biasEpilogue(mm);
    std::optional<ResidualEpilogue> residual =
        residualEpilogue(mm, epilogue ? epilogue->add.getResult() : mm.getResult());
    TransposeOp transposed = transposedProduct(mm);
    FailureOr<int> a = materialize(lhs.stored), b = materialize(rhs.stored);
    FailureOr<int> bias = epilogue ? materialize(epilogue->bias) : FailureOr<int>(-1);
    FailureOr<int> added = residual ? materialize(residual->residual) : FailureOr<int>(-1);
    // The op whose value the step writes: the last op it absorbs.
    Operation *written = residual     ? residual->add.getOperation()
                         : epilogue   ? epilogue->add.getOperation()
                         : transposed ? transposed.getOperation()
                                      : mm.getOperation();
    for (Operation *op : {epilogue ? epilogue->add.getOperation() : nullptr,
                          residual ? residual->reshape.getOperation() : nullptr,
                          residual ? residual->add.getOperation() : nullptr,
                          transposed.getOperation()})
      if (op)
        computedByGemm.insert(op);
    FailureOr<int> c = result(written);
    if (failed(a) || failed(b) || failed(bias) || failed(added) || failed(c))
      return failure();
    if (transposed) {
      // n x m = op(B)^T op(A)^T: B's storage read the other way round first.
      RankedTensorType lt = tensorType(mm.getLhs()), ot = tensorType(mm.getResult());
      rt::Gemm *g = addStep(mm)->mutable_gemm();
      g->set_trans_a(!rhs.trans), g->set_trans_b(!lhs.trans);
      g->set_a(*b), g->set_b(*a), g->set_c(*c);
      g->set_lda(rhs.ld), g->set_ldb(lhs.ld), g->set_ldc(ot.getDimSize(0));
      g->set_m(ot.getDimSize(1)), g->set_k(lt.getDimSize(1)), g->set_n(ot.getDimSize(0));
      return success();
    }
    RankedTensorType lt = tensorType(mm.getLhs()), rt_ = tensorType(mm.getRhs()),
                     ot = tensorType(mm.getResult());
    int64_t m = lt.getDimSize(lt.getRank() - 2), k = lt.getShape().back(),
            n = ot.getShape().back();
    rt::Gemm *g = addStep(mm)->mutable_gemm();
    g->set_trans_a(lhs.trans), g->set_trans_b(rhs.trans);
    g->set_a(*a), g->set_b(*b), g->set_c(*c);
    if (epilogue)
      g->set_bias(*bias);
    if (residual)
      g->set_residual(*added);
    g->set_lda(lhs.ld), g->set_ldb(rhs.ld), g->set_ldc(n);
    g->set_m(m), g->set_k(k), g->set_n(n);

    // Batch dimensions of the result, aligned right with each operand's (a
    // missing or size-1 operand dimension is broadcast: stride 0), then
    // merged where every operand steps through them as through one.
    struct Level {
      int64_t size, a, b, c;
    };
    ArrayRef<int64_t> batchShape = ot.getShape().drop_back(2);
    auto strideIn = [&](const GemmOperand &o, RankedTensorType t, size_t d) -> int64_t {
      int64_t offset = int64_t(batchShape.size()) - int64_t(o.batchStrides.size());
      int64_t i = int64_t(d) - offset;
      return i < 0 || t.getDimSize(i) == 1 ? 0 : o.batchStrides[i];
    };
    SmallVector<Level> levels;
    int64_t cStride = m * n;
    for (size_t d = batchShape.size(); d-- > 0;) {
      if (batchShape[d] != 1)
        levels.insert(levels.begin(), {batchShape[d], strideIn(lhs, lt, d),
                                       strideIn(rhs, rt_, d), cStride});
      cStride *= batchShape[d];
    }
    for (size_t i = 0; i + 1 < levels.size();) {
      Level &o = levels[i], &in = levels[i + 1];
      if (o.a == in.a * in.size && o.b == in.b * in.size && o.c == in.c * in.size) {
        in.size *= o.size;
        levels.erase(levels.begin() + i);
      } else {
        ++i;
      }
    }
    if (levels.size() > 2)
      return mm.emitError() << "matrix product with more than two batch dimensions "
                               "that cannot be merged is not supported by the CPU "
                               "lowering: "
                            << lt << " x " << rt_;
    if (levels.size() == 1 && levels[0].b == 0 && !lhs.trans && levels[0].a == m * lhs.ld) {
      // A's matrices follow one another and B is shared: one product of
      // batch * m rows.
      g->set_m(levels[0].size * m);
      return success();
    }
    if (!levels.empty()) {
      const Level &in = levels.back();
      g->set_batch(in.size);
      g->set_stride_a(in.a), g->set_stride_b(in.b), g->set_stride_c(in.c);
    }
    if (levels.size() == 2) {
      const Level &o = levels.front();
      g->set_batch_outer(o.size);
      g->set_outer_stride_a(o.a), g->set_outer_stride_b(o.b), g->set_outer_stride_c(o.c);
    }
    return success();
  }

  /// Emits the collected ops as kernels. Where their rows are independent
  /// but for sums over the rows (bias and norm gradients), the sums and
  /// what uses them become a second, whole kernel, so that the rest runs in
  /// pieces. A scalar summed over the rows of the group's inputs (a loss's
  /// count of positions), which every row may need, is computed first by a
  /// whole kernel of its own.
  LogicalResult flush() {
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

  /// The 0-d sums over rows among `ops` (in order) that depend only on the
  /// group's inputs and that ops with rows use (through scalar ops), with the
  /// ops of the group they are computed from.
  static DenseSet<Operation *> scalarsOverInputRows(ArrayRef<Operation *> ops) {
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

  static bool isScalar(Value v) { return tensorType(v).getRank() == 0; }

  /// Whether an op of `members` with a result that is not a scalar uses
  /// `op`'s result, directly or through ops with scalar results.
  static bool usedByRows(Operation *op, const DenseSet<Operation *> &members) {
    return llvm::any_of(op->getUsers(), [&](Operation *user) {
      return members.contains(user) &&
             (!llvm::all_of(user->getResults(), isScalar) || usedByRows(user, members));
    });
  }

  /// Emits `ops`, some or all of the `flushed` group, as one kernel: its
  /// arguments are the values it reads from outside, its results the values
  /// used after it. With `onlyInPieces`, emits nothing and returns false
  /// unless the kernel splits into pieces.
  FailureOr<bool> emitKernel(ArrayRef<Operation *> ops, const DenseSet<Operation *> &flushed,
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
      c->removeDiscardableAttr(kStageAttr);
      c->removeDiscardableAttr(kMicroAttr);
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

    SmallVector<int> args;
    for (Value v : inputs) {
      FailureOr<int> id = materialize(v);
      if (failed(id))
        return failure();
      args.push_back(*id);
    }
    for (Value v : outputs) {
      if (std::optional<int> state =
              ops.size() == 1 ? updatedInPlace(v, flushed) : std::nullopt) {
        bufferOf[v] = *state;
        args.push_back(*state);
        continue;
      }
      FailureOr<int> id = result(v.getDefiningOp(), cast<OpResult>(v).getResultNumber());
      if (failed(id))
        return failure();
      args.push_back(*id);
    }
    for (ReshapeOp view : views)
      if (failed(aliasReshape(view)))
        return failure();
    rt::Step *s = addStep(ops.front());
    s->mutable_kernel()->set_symbol(symbol);
    for (int id : args)
      s->mutable_kernel()->add_args(id);
    if (pieces) {
      s->mutable_kernel()->set_pieces(pieces->pieces);
      for (int64_t bytes : pieces->pieceBytes)
        s->mutable_kernel()->add_piece_bytes(bytes);
    }
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
  std::optional<int> updatedInPlace(Value v, const DenseSet<Operation *> &flushed) {
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
    for (Operation &op : func.front())
      if (auto load = dyn_cast<GlobalLoadOp>(op);
          load && load.getGlobal() == store.getGlobal() && order[load] < order[store] &&
          readLater(load.getResult()))
        return std::nullopt;
    return it->second;
  }

  func::FuncOp func;
  SymbolTable symbols;
  KernelLibrary &kernels;
  rt::Program program;
  DenseMap<Operation *, int> order;
  DenseMap<Value, int> bufferOf;
  // Ops whose values a Gemm step writes, or which it absorbs on the way.
  DenseSet<Operation *> computedByGemm;
  llvm::StringMap<int> stateOf;
  llvm::SetVector<Operation *> group;
  int kernelCount = 0;
  std::string symbolPrefix;
  SmallVector<int64_t> pieceCounts; // tried in order
};
} // namespace

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

FailureOr<rt::Program> colo::buildExecutablePlan(func::FuncOp func, KernelLibrary &kernels,
                                                 StringRef symbolPrefix,
                                                 int64_t kernelPieces) {
  return PlanBuilder(func, kernels, symbolPrefix, kernelPieces).build();
}
