// program.pb from the exec IR: buffers are numbered in the order they are
// declared, steps in the order they run; a wait right after its
// communication is the communication's own end (no step), a later one an
// overlapped collective and its Wait step. Frees are already in the arena
// offsets that colo-plan-memory gave the temporaries.
#include "ExecutableBuilder.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace colo;
namespace rt = colo::runtime;

std::optional<rt::DType> colo::runtimeDType(Type t) {
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
  return std::nullopt;
}

namespace {
/// The window geometry that Conv2d and Pool2d share (same field names).
template <typename Step, typename Op> void setWindow(Step *s, Op op) {
  ArrayRef<int64_t> in = op.getInputShape(), win = op.getWindow(), out = op.getOutputSize(),
                    st = op.getStrides(), pad = op.getPadding(), dil = op.getDilations();
  s->set_n(in[0]), s->set_c(in[1]), s->set_h(in[2]), s->set_w(in[3]);
  s->set_r(win[0]), s->set_s(win[1]);
  s->set_oh(out[0]), s->set_ow(out[1]);
  s->set_stride_h(st[0]), s->set_stride_w(st[1]);
  s->set_pad_t(pad[0]), s->set_pad_l(pad[1]), s->set_pad_b(pad[2]), s->set_pad_r(pad[3]);
  s->set_dil_h(dil[0]), s->set_dil_w(dil[1]);
}

class Serializer {
public:
  FailureOr<rt::Program> run(exec::ProgramOp op) {
    Block &body = op.getBlock();
    for (Operation &o : body) {
      int before = program.steps_size();
      if (failed(visit(&o)))
        return failure();
      if (program.steps_size() > before)
        cost(o, program.mutable_steps(program.steps_size() - 1));
    }
    for (Value v : cast<exec::ReturnOp>(body.getTerminator()).getReported())
      program.add_loss(ids.lookup(v));
    if (std::optional<ArrayRef<int64_t>> shape = op.getMeshShape()) {
      for (auto [size, name] : llvm::zip(*shape, op.getMeshAxes()->getAsValueRange<StringAttr>())) {
        program.mutable_mesh()->add_shape(size);
        program.mutable_mesh()->add_axes(name.str());
      }
    }
    if (std::optional<int32_t> axis = op.getBatchAxis())
      program.set_batch_axis(*axis);
    program.set_arena_bytes(op.getArenaBytes().value_or(0));
    program.set_host_arena_bytes(op.getHostArenaBytes().value_or(0));
    program.set_kernels_library("kernels.so");
    return std::move(program);
  }

private:
  int newBuffer(Value v, StringRef name, rt::Buffer::Kind kind) {
    auto t = cast<MemRefType>(v.getType());
    int id = program.buffers_size();
    rt::Buffer *b = program.add_buffers();
    b->set_name(name.str());
    b->set_dtype(*runtimeDType(t.getElementType()));
    for (int64_t d : t.getShape())
      b->add_shape(d);
    b->set_kind(kind);
    ids[v] = id;
    return id;
  }

  LogicalResult buffer(exec::BufferOp op) {
    if (!runtimeDType(op.getType().getElementType()))
      return op.emitError() << "no runtime element type for " << op.getType().getElementType();
    static constexpr rt::Buffer::Kind kinds[] = {rt::Buffer::TEMP, rt::Buffer::STATE,
                                                 rt::Buffer::INPUT, rt::Buffer::CONSTANT};
    int id = newBuffer(op, op.getName(), kinds[int(op.getKind())]);
    rt::Buffer *b = program.mutable_buffers(id);
    static constexpr rt::Buffer::Space spaces[] = {rt::Buffer::DEVICE, rt::Buffer::HOST,
                                                   rt::Buffer::PINNED_HOST};
    b->set_space(
        spaces[int(cast<exec::MemorySpaceAttr>(op.getType().getMemorySpace()).getValue())]);
    if (std::optional<int64_t> offset = op.getOffset())
      b->set_offset(*offset);
    if (std::optional<int64_t> max = op.getIntMax())
      b->set_int_max(*max);
    if (std::optional<int64_t> ignored = op.getIntIgnored())
      b->set_int_ignored(*ignored);
    if (exec::ShardAttr shard = op.getShardAttr()) {
      rt::Shard *s = b->mutable_shard();
      for (int64_t d : shard.getFullShape())
        s->add_full_shape(d);
      s->set_dim(shard.getDim());
      s->set_groups(shard.getGroups());
      s->set_flat(shard.getFlat());
      s->set_flat_parts(shard.getFlatParts());
      s->set_inner_dim(int32_t(shard.getInnerDim()));
      s->set_inner_parts(shard.getInnerParts());
      for (int32_t axis : shard.getMeshAxes())
        s->add_mesh_axes(axis);
    }
    if (op.getStepCounter())
      program.set_step_counter(id);
    if (std::optional<StringRef> name = op.getParamName())
      (*program.mutable_param_names())[op.getName().str()] = name->str();
    return success();
  }

  /// What the cost model charges the step (StepBuilder::annotateCost).
  static void cost(Operation &op, rt::Step *s) {
    MLIRContext *ctx = op.getContext();
    if (IntegerAttr flops = exec::ExecDialect::FlopsAttrHelper(ctx).getAttr(&op))
      s->set_flops(flops.getInt());
    if (IntegerAttr bytes = exec::ExecDialect::BytesAttrHelper(ctx).getAttr(&op))
      s->set_bytes(bytes.getInt());
    s->set_recomputed(exec::ExecDialect::RecomputedAttrHelper(ctx).isAttrPresent(&op));
  }

  rt::Step *step(StringRef name) {
    rt::Step *s = program.add_steps();
    s->set_name(name.str());
    return s;
  }

  /// The collective's proto, its step remembered for a later Wait.
  rt::Collective *collective(Operation *op, StringRef name, rt::Collective::Kind kind,
                             ArrayRef<int32_t> axes) {
    stepOf[op->getResult(0)] = program.steps_size();
    rt::Collective *c = step(name)->mutable_collective();
    c->set_kind(kind);
    for (int32_t axis : axes)
      c->add_mesh_axes(axis);
    return c;
  }
  template <typename Op>
  rt::Collective *group(Op op, rt::Collective::Kind kind) {
    rt::Collective *c = collective(op, op.getName(), kind, op.getMeshAxes());
    c->set_input(ids.lookup(op.getInput()));
    c->set_output(ids.lookup(op.getOutput()));
    return c;
  }
  static rt::Collective::Reduction reduction(exec::Reduction r) {
    static constexpr rt::Collective::Reduction kinds[] = {
        rt::Collective::SUM, rt::Collective::AVERAGE, rt::Collective::MAX};
    return kinds[int(r)];
  }

  /// A wait that is not the next step after its communication makes it
  /// overlapped; the runtime overlaps all-reduces, all-gathers, broadcasts
  /// and shifts.
  LogicalResult wait(exec::WaitOp op) {
    Operation *started = op.getToken().getDefiningOp();
    Operation *next = started->getNextNode();
    while (next && !exec::isStep(next))
      next = next->getNextNode();
    int index = stepOf.lookup(op.getToken());
    if (isa<exec::TransferOp>(started)) {
      step(op.getName())->mutable_wait()->set_collective_step(index);
      return success();
    }
    if (next == op)
      return success();
    if (!isa<exec::AllReduceOp, exec::AllGatherOp, exec::ShiftOp, exec::BroadcastOp>(started))
      return op.emitError("the runtime overlaps all-reduces, all-gathers, broadcasts and shifts "
                          "only; this wait must follow its communication");
    program.mutable_steps(index)->mutable_collective()->set_overlap(true);
    step(op.getName())->mutable_wait()->set_collective_step(index);
    return success();
  }

  LogicalResult visit(Operation *op) {
    auto id = [&](Value v) { return ids.lookup(v); };
    return llvm::TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](exec::BufferOp b) { return buffer(b); })
        .Case([&](exec::ViewOp v) {
          int view = newBuffer(v, v.getName(), rt::Buffer::TEMP);
          program.mutable_buffers(view)->set_alias_of(id(v.getSource()));
          return success();
        })
        .Case([&](exec::KernelOp k) {
          rt::KernelCall *c = step(k.getName())->mutable_kernel();
          c->set_symbol(k.getCallee().str());
          for (Value v : k.getInputs())
            c->add_args(id(v));
          for (Value v : k.getOutputs())
            c->add_args(id(v));
          if (std::optional<int64_t> pieces = k.getPieces()) {
            c->set_pieces(*pieces);
            ArrayRef<int64_t> pieceBytes = k.getPieceBytes().value_or(ArrayRef<int64_t>());
            for (int64_t bytes : pieceBytes)
              c->add_piece_bytes(bytes);
          }
          return success();
        })
        .Case([&](exec::GemmOp g) {
          rt::Gemm *s = step(g.getName())->mutable_gemm();
          s->set_trans_a(g.getTransA()), s->set_trans_b(g.getTransB());
          s->set_m(g.getM()), s->set_n(g.getN()), s->set_k(g.getK());
          s->set_batch(g.getBatch().value_or(0));
          s->set_lda(g.getLda().value_or(0)), s->set_ldb(g.getLdb().value_or(0));
          s->set_ldc(g.getLdc().value_or(0));
          s->set_stride_a(g.getStrideA().value_or(0));
          s->set_stride_b(g.getStrideB().value_or(0));
          s->set_stride_c(g.getStrideC().value_or(0));
          s->set_batch_outer(g.getBatchOuter().value_or(0));
          s->set_outer_stride_a(g.getOuterStrideA().value_or(0));
          s->set_outer_stride_b(g.getOuterStrideB().value_or(0));
          s->set_outer_stride_c(g.getOuterStrideC().value_or(0));
          if (std::optional<APFloat> alpha = g.getAlpha())
            s->set_alpha(alpha->convertToDouble());
          if (std::optional<APFloat> beta = g.getBeta())
            s->set_beta(beta->convertToDouble());
          s->set_a(id(g.getA())), s->set_b(id(g.getB())), s->set_c(id(g.getC()));
          if (g.getBias())
            s->set_bias(id(g.getBias()));
          if (g.getResidual())
            s->set_residual(id(g.getResidual()));
          return success();
        })
        .Case([&](exec::Conv2dOp c) {
          rt::Conv2d *s = step(c.getName())->mutable_conv();
          s->set_mode(rt::Conv2d::Mode(int(c.getMode())));
          setWindow(s, c);
          s->set_k(c.getK());
          s->set_groups(c.getGroups());
          s->set_x(id(c.getX())), s->set_weight(id(c.getWeight())), s->set_y(id(c.getY()));
          if (c.getBias())
            s->set_bias(id(c.getBias()));
          return success();
        })
        .Case([&](exec::Pool2dOp p) {
          rt::Pool2d *s = step(p.getName())->mutable_pool();
          s->set_mode(rt::Pool2d::Mode(int(p.getMode())));
          setWindow(s, p);
          s->set_count_include_pad(p.getCountIncludePad());
          if (p.getX())
            s->set_x(id(p.getX()));
          if (p.getY())
            s->set_y(id(p.getY()));
          if (p.getDx())
            s->set_dx(id(p.getDx()));
          if (p.getDy())
            s->set_dy(id(p.getDy()));
          return success();
        })
        .Case([&](exec::CopyOp c) {
          rt::Copy *s = step(c.getName())->mutable_copy();
          s->set_src(id(c.getSrc())), s->set_dst(id(c.getDst()));
          return success();
        })
        .Case([&](exec::TransferOp t) {
          stepOf[t.getToken()] = program.steps_size();
          rt::Transfer *s = step(t.getName())->mutable_transfer();
          s->set_src(id(t.getSrc())), s->set_dst(id(t.getDst()));
          return success();
        })
        .Case([&](exec::AllReduceOp c) {
          group(c, rt::Collective::ALL_REDUCE)->set_reduction(reduction(c.getReduction()));
          return success();
        })
        .Case([&](exec::ReduceScatterOp c) {
          group(c, rt::Collective::REDUCE_SCATTER)->set_reduction(reduction(c.getReduction()));
          return success();
        })
        .Case([&](exec::AllGatherOp c) { return group(c, rt::Collective::ALL_GATHER), success(); })
        .Case([&](exec::AllToAllOp c) { return group(c, rt::Collective::ALL_TO_ALL), success(); })
        .Case([&](exec::AllSliceOp c) { return group(c, rt::Collective::ALL_SLICE), success(); })
        .Case([&](exec::ShiftOp c) {
          rt::Collective *out = group(c, rt::Collective::SHIFT);
          out->set_offset(c.getOffset()), out->set_tag(int32_t(c.getTag()));
          return success();
        })
        .Case([&](exec::BroadcastOp c) {
          group(c, rt::Collective::BROADCAST)->set_root(c.getRoot());
          return success();
        })
        .Case([&](exec::ReduceOp c) {
          rt::Collective *out = group(c, rt::Collective::REDUCE);
          out->set_reduction(reduction(c.getReduction())), out->set_root(c.getRoot());
          return success();
        })
        .Case([&](exec::SendOp s) {
          rt::Collective *c = collective(s, s.getName(), rt::Collective::SEND, s.getMeshAxes());
          c->set_peer(s.getPeer()), c->set_tag(int32_t(s.getTag()));
          c->set_input(id(s.getInput())), c->set_output(-1);
          return success();
        })
        .Case([&](exec::RecvOp r) {
          rt::Collective *c = collective(r, r.getName(), rt::Collective::RECV, r.getMeshAxes());
          c->set_peer(r.getPeer()), c->set_tag(int32_t(r.getTag()));
          c->set_input(-1), c->set_output(id(r.getOutput()));
          return success();
        })
        .Case([&](exec::WaitOp w) { return wait(w); })
        .Case<exec::FreeOp, exec::ReturnOp>([](Operation *) { return success(); })
        .Default([](Operation *o) { return o->emitError("not a step of an exec.program"); });
  }

  rt::Program program;
  DenseMap<Value, int> ids;
  DenseMap<Value, int> stepOf; // token -> index of the step that started it
};
} // namespace

FailureOr<rt::Program> colo::serializeExecutable(ModuleOp steps) {
  SmallVector<exec::ProgramOp> programs(steps.getOps<exec::ProgramOp>());
  llvm::stable_sort(programs, [](exec::ProgramOp a, exec::ProgramOp b) {
    return a.getStage().value_or(0) < b.getStage().value_or(0);
  });
  if (programs.empty())
    return steps.emitError("no exec.program to serialize");
  if (programs.size() == 1)
    return Serializer().run(programs.front());
  rt::Program program;
  for (exec::ProgramOp stage : programs) {
    FailureOr<rt::Program> p = Serializer().run(stage);
    if (failed(p))
      return failure();
    *program.add_stages() = std::move(*p);
  }
  *program.mutable_mesh() = program.stages(0).mesh();
  const auto &axes = program.mesh().axes();
  program.set_pipeline_axis(int(llvm::find(axes, "pp") - axes.begin()));
  return program;
}
