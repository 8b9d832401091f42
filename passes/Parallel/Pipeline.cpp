// colo-pipeline: splits @train_step, whose ops carry pipeline stages, into
// one function per pipeline rank that runs its stages' forwards and
// backwards for every microbatch in the schedule's order, with explicit
// sends and receives between ranks, gradients summed over microbatches, and
// the update of the parameters the rank uses.
#include "colo/Passes/Pipeline.h"
#include "Parallel/Mesh.h"
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/Passes.h"
#include "colo/Passes/PipelineSchedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"

#include <map>
#include <set>

namespace colo {
#define GEN_PASS_DEF_COLOPIPELINE
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

class PipelineSplitter {
public:
  PipelineSplitter(ModuleOp module, func::FuncOp step, int64_t pp, int64_t v,
                   int64_t micro, PipelineSchedule schedule)
      : module(module), step(step), pp(pp), v(v), micro(micro), schedule(schedule),
        body(step.front()) {}

  LogicalResult run() {
    if (failed(analyze()))
      return failure();
    findReducedOnce();
    if (pp > 1) {
      FailureOr<MeshAxis> axis = getOrCreateMeshAxis(module, "pp", pp, step);
      if (failed(axis))
        return failure();
      ppAxis = *axis;
    }
    SmallVector<func::FuncOp> ranks;
    for (int64_t r = 0; r < pp; ++r) {
      FailureOr<func::FuncOp> f = buildRank(r);
      if (failed(f))
        return failure();
      ranks.push_back(*f);
    }
    if (tags.size() >= (1u << 15))
      return step.emitError() << "the pipeline needs " << tags.size()
                              << " messages per step; at most 32768 are supported";
    giveRanksTheirGlobals(ranks);
    step.erase();
    if (pp == 1)
      ranks.front().setName("train_step");
    return success();
  }

private:
  int64_t rankOf(Operation *op) const { return *getStage(op) % pp; }
  bool isPerMicro(Operation *op) const { return perMicro.contains(op); }

  LogicalResult analyze() {
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    if (ret.getNumOperands() != 1)
      return step.emitError("colo-pipeline expects a step that returns only the loss");
    loss = ret.getOperand(0);
    Operation *lossOp = loss.getDefiningOp();
    if (!lossOp || !getStage(lossOp))
      return step.emitError("colo-pipeline needs a step whose forward was cut into "
                            "stages (colo-pipeline-stages before colo-build-train-step)");
    int64_t stages = *getStage(lossOp) + 1;
    if (stages != pp * v)
      return step.emitError() << "the step has " << stages << " pipeline stages, the plan "
                              << pp << " ranks x " << v << " virtual stages";
    classify(lossOp);
    // State the forward updates (batch norm's running statistics) is carried
    // from microbatch to microbatch: its loads vary too, so classify again.
    for (Operation *store : stores) {
      auto s = cast<GlobalStoreOp>(store);
      Operation *def = s.getValue().getDefiningOp();
      if (!def || !isPerMicro(def) || backward.contains(def))
        continue;
      carried[s.getGlobalAttr().getAttr()] = s.getValue();
    }
    if (!carried.empty())
      classify(lossOp);
    findInputGradients();
    for (Operation &op : body.without_terminator())
      if (auto load = dyn_cast<GlobalLoadOp>(op)) {
        Value value = carried.lookup(load.getGlobalAttr().getAttr());
        if (value && rankOf(load) != rankOf(value.getDefiningOp()))
          return load.emitError() << "@" << load.getGlobal()
                                  << " is updated by the forward on another pipeline rank "
                                     "than the one that reads it";
      }

    // Which ranks run each parameter update: those holding every parameter
    // whose gradient it reads (all ranks for updates that read none).
    for (int64_t r = 0; r < pp; ++r) {
      SmallVector<Operation *> roots;
      for (Operation *store : stores) {
        std::set<StringRef> params;
        collectParams(store, params);
        bool mine = llvm::all_of(params, [&](StringRef p) { return held[r].count(p); });
        if (Value value = carriedValue(store))
          mine = rankOf(value.getDefiningOp()) == r;
        if (!params.empty() && llvm::none_of(llvm::seq<int64_t>(0, pp), [&](int64_t q) {
              return llvm::all_of(params, [&](StringRef p) { return held[q].count(p); });
            }))
          return store->emitError("this update reads gradients of parameters on several "
                                  "pipeline ranks (gradient clipping by global norm and "
                                  "dynamic loss scaling are not implemented with pipeline "
                                  "parallelism)");
        if (mine)
          roots.push_back(store);
      }
      roots.push_back(ret);
      DenseSet<Operation *> &needed = perStepOf[r];
      SmallVector<Operation *> work(roots);
      for (Operation *op : roots)
        needed.insert(op);
      while (!work.empty()) {
        Operation *op = work.pop_back_val();
        for (Value x : op->getOperands()) {
          Operation *def = x.getDefiningOp();
          if (!def)
            return op->emitError("colo-pipeline: an update reads a step input directly");
          if (isPerMicro(def) && carriedValue(op) == x) {
            continue; // the last microbatch's
          } else if (isPerMicro(def)) {
            if (!backward.contains(def) && x != loss)
              return op->emitError("colo-pipeline: an update reads a forward value; "
                                   "every forward op needs a stage");
            averagedFor[x].insert(r);
          } else if (perStep.contains(def) && needed.insert(def).second) {
            work.push_back(def);
          }
        }
      }
    }
    return success();
  }

  /// Sorts the step's ops into per-microbatch (forward and backward),
  /// per-step and invariant ones; loads of carried globals vary.
  void classify(Operation *lossOp) {
    varying.clear();
    perMicro.clear();
    backward.clear();
    perStep.clear();
    stores.clear();
    held.clear();
    bool pastLoss = false;
    for (Operation &op : body.without_terminator()) {
      auto load = dyn_cast<GlobalLoadOp>(op);
      bool isVarying = (load && carried.count(load.getGlobalAttr().getAttr())) ||
                       llvm::any_of(op.getOperands(), [&](Value x) {
                         Operation *def = x.getDefiningOp();
                         return !def || varying.contains(def);
                       });
      if (isVarying)
        varying.insert(&op);
      if (isa<GlobalStoreOp>(op))
        stores.push_back(&op);
      else if (isVarying && getStage(&op)) {
        perMicro.insert(&op);
        if (pastLoss)
          backward.insert(&op);
      } else if (isVarying) {
        perStep.insert(&op);
      }
      if (load && getStage(&op))
        held[rankOf(&op)].insert(load.getGlobal());
      pastLoss |= &op == lossOp;
    }
  }

  /// Whether a schedule's `phase` runs the per-microbatch `op`.
  bool runs(PipelinePhase phase, Operation *op) const {
    switch (phase) {
    case PipelinePhase::Forward:
      return !backward.contains(op);
    case PipelinePhase::Backward:
      return backward.contains(op);
    case PipelinePhase::InputGrad:
      return inputGrad.contains(op);
    case PipelinePhase::WeightGrad:
      return backward.contains(op) && !inputGrad.contains(op);
    }
    return false;
  }

  /// The backward's input-gradient part: the ops whose results another
  /// stage reads, and what they read of their stage's backward. The rest of
  /// a stage's backward only leads to its parameters' gradients, which a
  /// zero-bubble schedule runs later.
  void findInputGradients() {
    inputGrad.clear();
    for (Operation &op : llvm::reverse(body.without_terminator())) {
      if (!backward.contains(&op))
        continue;
      bool needed = llvm::any_of(op.getUsers(), [&](Operation *user) {
        return isPerMicro(user) && (getStage(user) != getStage(&op) || inputGrad.contains(user));
      });
      if (needed)
        inputGrad.insert(&op);
    }
  }

  /// The per-microbatch value `op` stores when it updates a carried global.
  Value carriedValue(Operation *op) const {
    auto store = dyn_cast<GlobalStoreOp>(op);
    return store ? carried.lookup(store.getGlobalAttr().getAttr()) : Value();
  }

  /// The parameters whose gradient markers `op` depends on through updates.
  void collectParams(Operation *op, std::set<StringRef> &params) {
    DenseSet<Operation *> seen;
    SmallVector<Operation *> work{op};
    while (!work.empty()) {
      Operation *o = work.pop_back_val();
      if (auto g = dyn_cast<GradientOp>(o))
        params.insert(g.getParam());
      for (Value x : o->getOperands())
        if (Operation *def = x.getDefiningOp())
          if (perStep.contains(def) && seen.insert(def).second)
            work.push_back(def);
    }
  }

  int64_t tagOf(Value x, int64_t m) {
    auto [it, inserted] = tags.try_emplace({x, m}, tags.size());
    return it->second;
  }

  /// One rank's function, built op by op in schedule order.
  FailureOr<func::FuncOp> buildRank(int64_t r) {
    OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
    SmallVector<Type> args;
    for (Type t : body.getArgumentTypes()) {
      auto tensor = cast<RankedTensorType>(t);
      SmallVector<int64_t> shape(tensor.getShape());
      shape[0] *= micro;
      args.push_back(tensor.clone(shape));
    }
    auto f = func::FuncOp::create(mb, step.getLoc(), "train_step_stage" + std::to_string(r),
                                  mb.getFunctionType(args, {loss.getType()}));
    for (NamedAttribute a : step->getDiscardableAttrs())
      f->setAttr(a.getName(), a.getValue());
    MLIRContext *ctx = mb.getContext();
    f->removeAttr(ColoDialect::PipelineStagesAttrHelper(ctx).getName());
    ColoDialect::MicrobatchesAttrHelper(ctx).setAttr(f, mb.getI64IntegerAttr(micro));
    if (pp > 1)
      ColoDialect::PipelineStageAttrHelper(ctx).setAttr(f, mb.getI64IntegerAttr(r));
    Block *entry = f.addEntryBlock();
    for (auto [a, old] : llvm::zip(entry->getArguments(), body.getArguments()))
      a.setLoc(old.getLoc());
    Rank rank(r, entry);
    rank.at.resize(micro);

    for (PipelineAction a : pipelineOrder(r, pp, v, micro, schedule))
      for (Operation &op : body.without_terminator())
        if (isPerMicro(&op) && *getStage(&op) == a.stage && runs(a.phase, &op))
          cloneForMicro(rank, &op, a.micro);
    for (Operation &op : body.without_terminator())
      if (perStepOf[r].contains(&op)) {
        IRMapping map;
        for (Value x : op.getOperands())
          map.map(x, get(rank, x, -1));
        Operation *c = rank.b.clone(op, map);
        for (auto [x, cx] : llvm::zip(op.getResults(), c->getResults()))
          rank.perStep.map(x, cx);
      }
    func::ReturnOp::create(rank.b, step.getLoc(), get(rank, loss, -1));
    return f;
  }

  struct Rank {
    Rank(int64_t r, Block *entry) : r(r), entry(entry), b(OpBuilder::atBlockEnd(entry)) {}
    int64_t r;
    Block *entry;
    OpBuilder b;
    IRMapping invariant, perStep;
    std::vector<IRMapping> at;                        // per microbatch
    DenseMap<Value, Value> sum, average;              // gradients over microbatches
    // Per gradient reduced once: the sum of its microbatches' inputs.
    DenseMap<Value, Value> reducedInputs;
    DenseMap<Value, int64_t> summed;
    DenseMap<std::pair<Value, int64_t>, Value> slices, received;
  };

  /// `x` in rank's function for microbatch m (-1: the step's average).
  Value get(Rank &rank, Value x, int64_t m) {
    if (auto arg = dyn_cast<BlockArgument>(x))
      return slice(rank, arg, m);
    Operation *def = x.getDefiningOp();
    if (!varying.contains(def))
      return cloneInvariant(rank, x);
    if (!isPerMicro(def))
      return rank.perStep.lookup(x);
    if (rankOf(def) != rank.r)
      return receive(rank, x, m);
    if (m < 0 && llvm::any_of(carried, [&](auto &c) { return c.second == x; }))
      return rank.at[micro - 1].lookup(x);
    return m < 0 ? rank.average.lookup(x) : rank.at[m].lookup(x);
  }

  Value slice(Rank &rank, BlockArgument arg, int64_t m) {
    Value whole = rank.entry->getArgument(arg.getArgNumber());
    if (micro == 1)
      return whole;
    Value &s = rank.slices[{arg, m}];
    if (!s) {
      RankedTensorType t = tensorType(arg);
      SmallVector<int64_t> start(t.getRank(), 0), limit(t.getShape()), strides(t.getRank(), 1);
      start[0] = m * t.getDimSize(0);
      limit[0] = start[0] + t.getDimSize(0);
      s = SliceOp::create(rank.b, arg.getLoc(), whole, start, limit, strides);
    }
    return s;
  }

  Value cloneInvariant(Rank &rank, Value x) {
    if (Value c = rank.invariant.lookupOrNull(x))
      return c;
    Operation *def = x.getDefiningOp();
    for (Value operand : def->getOperands())
      cloneInvariant(rank, operand);
    rank.b.clone(*def, rank.invariant);
    return rank.invariant.lookup(x);
  }

  /// Whether `x` is only averaged over the microbatches: no op of a
  /// microbatch reads it.
  bool onlyAveraged(Value x) const {
    return averagedFor.contains(x) &&
           llvm::none_of(x.getUsers(), [&](Operation *u) { return isPerMicro(u); });
  }

  /// A summing all-reduce: sums over microbatches commute with it.
  static bool isSummingAllReduce(Operation *op) {
    auto reduce = dyn_cast_if_present<shard::AllReduceOp>(op);
    return reduce && (reduce.getReduction() == shard::ReductionKind::Sum ||
                      reduce.getReduction() == shard::ReductionKind::Average);
  }

  /// Finds the gradients that are all-reduced once per step instead of once
  /// per microbatch, as Megatron and DeepSpeed reduce those of parameters
  /// that each sequence-parallel rank's tokens give part of: a summing
  /// all-reduce, then only views (transposes, reshapes), whose end is only
  /// averaged or feeds one add that is (a tied table whose rows the split
  /// tokens read and the whole sequence reads too). Sums commute with all of
  /// them, so the microbatches' inputs are summed and the chain runs once.
  void findReducedOnce() {
    for (Operation &op : body) {
      if (!isPerMicro(&op) || !isSummingAllReduce(&op))
        continue;
      ReducedOnce r;
      r.chain.push_back(&op);
      Value end = op.getResult(0);
      // Every op of it runs on the all-reduce's pipeline stage.
      auto sameStage = [&](Operation *user) {
        return isPerMicro(user) && getStage(user) == getStage(&op);
      };
      while (end.hasOneUse() && isa<TransposeOp, ReshapeOp>(*end.getUsers().begin()) &&
             sameStage(*end.getUsers().begin())) {
        r.chain.push_back(*end.getUsers().begin());
        end = r.chain.back()->getResult(0);
      }
      Value into = end;
      if (!onlyAveraged(end)) {
        auto add = end.hasOneUse() ? dyn_cast<AddOp>(*end.getUsers().begin()) : nullptr;
        if (!add || !sameStage(add) || !onlyAveraged(add.getResult()))
          continue;
        r.other = add.getLhs() == end ? add.getRhs() : add.getLhs();
        if (r.other == end || isSummingAllReduce(r.other.getDefiningOp()))
          continue;
        into = add.getResult();
        hoisted[add] = into;
      }
      for (Operation *link : r.chain)
        hoisted[link] = into;
      reducedOnce[into] = std::move(r);
    }
  }

  static Value add(Rank &rank, Location loc, Value sum, Value term) {
    return sum ? AddOp::create(rank.b, loc, sum, term).getResult() : term;
  }

  /// Adds microbatch m's `cx` (null: nothing but a reduced part) to the sum
  /// of `x` over microbatches; after the last, the average (with the
  /// all-reduce of its reduced part's sum) goes to the ranks that read it.
  void accumulate(Rank &rank, Value x, Value cx, Location loc) {
    auto readers = averagedFor.find(x);
    if (readers == averagedFor.end())
      return;
    Value &sum = rank.sum[x];
    if (cx)
      sum = add(rank, loc, sum, cx);
    if (++rank.summed[x] < micro)
      return;
    Value average = sum;
    if (auto it = reducedOnce.find(x); it != reducedOnce.end()) {
      IRMapping map;
      map.map(it->second.chain.front()->getOperand(0), rank.reducedInputs[x]);
      for (Operation *link : it->second.chain)
        rank.b.clone(*link, map);
      average = add(rank, loc, average, map.lookup(it->second.chain.back()->getResult(0)));
    }
    if (micro > 1) {
      auto type = RankedTensorType::get({}, tensorType(x).getElementType());
      Value scale = ConstantOp::create(
          rank.b, loc,
          DenseElementsAttr::get(type,
                                 rank.b.getFloatAttr(type.getElementType(), 1.0 / micro)));
      average = MulOp::create(rank.b, loc, average, scale);
    }
    rank.average[x] = average;
    for (int64_t dest : readers->second)
      if (dest != rank.r)
        send(rank, average, dest, tagOf(x, -1));
  }

  void cloneForMicro(Rank &rank, Operation *op, int64_t m) {
    if (Value into = hoisted.lookup(op)) {
      const ReducedOnce &r = reducedOnce[into];
      if (op == r.chain.front()) {
        Value &inputs = rank.reducedInputs[into];
        inputs = add(rank, op->getLoc(), inputs, get(rank, op->getOperand(0), m));
      }
      // The chain's last op, or the add it feeds: the microbatch is summed.
      if (op->getResult(0) == into)
        accumulate(rank, into, r.other ? get(rank, r.other, m) : nullptr, op->getLoc());
      return;
    }
    // After the first microbatch, a carried global is what the one before
    // stored (the same rank computed it: analyze checks).
    if (auto load = dyn_cast<GlobalLoadOp>(op); load && m > 0)
      if (Value value = carried.lookup(load.getGlobalAttr().getAttr())) {
        rank.at[m].map(load.getResult(), rank.at[m - 1].lookup(value));
        return;
      }
    IRMapping map;
    for (Value x : op->getOperands())
      map.map(x, get(rank, x, m));
    // Every microbatch draws its own dropout masks.
    if (auto dropout = dyn_cast<DropoutOp>(op); dropout && dropout.getKey() && m > 0) {
      Value key = map.lookup(dropout.getKey());
      auto type = cast<RankedTensorType>(key.getType());
      Value offset = ConstantOp::create(
          rank.b, op->getLoc(), DenseElementsAttr::get(type, m << 48));
      map.map(dropout.getKey(), AddOp::create(rank.b, op->getLoc(), key, offset).getResult());
    }
    Operation *c = rank.b.clone(*op, map);
    ColoDialect::MicroAttrHelper(c->getContext()).setAttr(c, rank.b.getI64IntegerAttr(m));
    for (auto [x, cx] : llvm::zip(op->getResults(), c->getResults())) {
      rank.at[m].map(x, cx);
      std::set<int64_t> to;
      for (Operation *user : x.getUsers())
        if (isPerMicro(user) && rankOf(user) != rank.r)
          to.insert(rankOf(user));
      for (int64_t dest : to)
        send(rank, cx, dest, tagOf(x, m));
      accumulate(rank, x, cx, op->getLoc());
    }
  }

  /// Messages carry tensors of rank >= 1 (shard.send/recv); scalars travel
  /// as one element.
  static RankedTensorType wireType(RankedTensorType t) {
    return t.getRank() == 0 ? RankedTensorType::get({1}, t.getElementType()) : t;
  }

  void send(Rank &rank, Value x, int64_t dest, int64_t tag) {
    OpBuilder &b = rank.b;
    RankedTensorType wire = wireType(tensorType(x));
    if (wire != x.getType())
      x = ReshapeOp::create(b, x.getLoc(), wire, x);
    auto s = shard::SendOp::create(b, x.getLoc(), wire, ppAxis.grid.getSymName(),
                                   {ppAxis.axis}, x, b.getDenseI64ArrayAttr({dest}),
                                   ValueRange{});
    ColoDialect::TagAttrHelper(b.getContext()).setAttr(s, b.getI64IntegerAttr(tag));
  }

  Value receive(Rank &rank, Value x, int64_t m) {
    Value &got = rank.received[{x, m}];
    if (got)
      return got;
    OpBuilder &b = rank.b;
    RankedTensorType t = tensorType(x), wire = wireType(t);
    // The receive's operand only gives its type.
    Value like = ConstantOp::create(b, x.getLoc(),
                                    DenseElementsAttr::get(wire, b.getZeroAttr(wire.getElementType())));
    auto r = shard::RecvOp::create(b, x.getLoc(), wire, ppAxis.grid.getSymName(),
                                   {ppAxis.axis}, like,
                                   b.getDenseI64ArrayAttr({rankOf(x.getDefiningOp())}),
                                   ValueRange{});
    ColoDialect::TagAttrHelper(b.getContext()).setAttr(r, b.getI64IntegerAttr(tagOf(x, m)));
    got = r.getResult();
    if (wire != t)
      got = ReshapeOp::create(b, x.getLoc(), t, got);
    return got;
  }

  /// Each rank gets its own copy of every global it uses: `@name` stays
  /// with the first rank, the others use `@name.pp<r>` (colo.param_name
  /// keeps the model's name for weights files).
  void giveRanksTheirGlobals(ArrayRef<func::FuncOp> ranks) {
    std::map<StringRef, int64_t> owner;
    for (auto [r, rankFunc] : llvm::enumerate(ranks)) {
      func::FuncOp f = rankFunc;
      std::set<StringRef> used;
      f.walk([&](Operation *op) {
        if (auto load = dyn_cast<GlobalLoadOp>(op))
          used.insert(load.getGlobal());
        else if (auto store = dyn_cast<GlobalStoreOp>(op))
          used.insert(store.getGlobal());
      });
      for (StringRef name : used) {
        if (owner.try_emplace(name, r).second)
          continue;
        auto global = module.lookupSymbol<GlobalOp>(name);
        OpBuilder b(global);
        b.setInsertionPointAfter(global);
        auto copy = cast<GlobalOp>(b.clone(*global));
        std::string renamed = (name + ".pp" + Twine(r)).str();
        copy.setSymName(renamed);
        ColoDialect::ParamNameAttrHelper paramName(b.getContext());
        if (!paramName.isAttrPresent(copy))
          paramName.setAttr(copy, b.getStringAttr(name));
        (void)SymbolTable::replaceAllSymbolUses(global.getSymNameAttr(),
                                                b.getStringAttr(renamed), f);
      }
    }
  }

  ModuleOp module;
  func::FuncOp step;
  int64_t pp, v, micro;
  PipelineSchedule schedule;
  Block &body;
  MeshAxis ppAxis;
  Value loss;
  DenseSet<Operation *> varying, perMicro, backward, perStep, inputGrad;
  /// Globals the forward updates, with the value stored (per microbatch).
  DenseMap<Attribute, Value> carried;
  SmallVector<Operation *> stores;
  std::map<int64_t, std::set<StringRef>> held;
  std::map<int64_t, DenseSet<Operation *>> perStepOf;
  DenseMap<Value, std::set<int64_t>> averagedFor; // value -> ranks reading its average
  /// findReducedOnce's chains, by the averaged value they end in, and the
  /// ops of each chain (and its add) with that value.
  struct ReducedOnce {
    SmallVector<Operation *> chain; // the all-reduce, then views
    Value other;                    // the add's other term, or null
  };
  DenseMap<Value, ReducedOnce> reducedOnce;
  DenseMap<Operation *, Value> hoisted;
  DenseMap<std::pair<Value, int64_t>, int64_t> tags;
};

struct ColoPipeline : colo::impl::ColoPipelineBase<ColoPipeline> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>("train_step");
    if (!step || !step.getBody().hasOneBlock()) {
      module.emitError("colo-pipeline: no single-block func.func @train_step");
      return signalPassFailure();
    }
    auto fail = [&](const Twine &msg) {
      step.emitError(msg);
      signalPassFailure();
    };
    if (pp < 1 || virtualStages < 1 || micro < 1)
      return fail("colo-pipeline: pp, virtual and micro must be at least 1");
    bool interleaved = schedule == PipelineSchedule::Interleaved;
    if (interleaved != (virtualStages > 1))
      return fail("virtual stages go with schedule=interleaved and only with it");
    if (interleaved && micro % pp != 0)
      return fail("schedule=interleaved needs micro (" + Twine(int64_t(micro)) +
                  ") to be a multiple of pp (" + Twine(int64_t(pp)) + ")");
    if (failed(PipelineSplitter(module, step, pp, virtualStages, micro, schedule).run()))
      return signalPassFailure();
  }
};
} // namespace
