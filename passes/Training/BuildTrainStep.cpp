// colo-build-train-step: @forward -> @train_step (loss, backward by
// reverse-mode differentiation, gradient clipping, learning-rate schedule,
// optimizer updates written back to the globals).
#include "Training/Autodiff.h"
#include "Parallel/Mesh.h"
#include "colo/Passes/Passes.h"
#include "colo/Passes/Pipeline.h"
#include "Parallel/VocabParallel.h"

#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <numeric>

namespace colo {
#define GEN_PASS_DEF_COLOBUILDTRAINSTEP
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

class TrainStepBuilder {
public:
  TrainStepBuilder(ModuleOp module, func::FuncOp step, const ColoBuildTrainStepOptions &o)
      : module(module), step(step), o(o), b(step.front().getTerminator()),
        loc(step.getLoc()) {
    // Pipeline stages (colo-pipeline-stages) carry over to the loss and the
    // gradient ops; the parameter updates belong to no stage.
    if (IntegerAttr stages =
            ColoDialect::PipelineStagesAttrHelper(step.getContext()).getAttr(step)) {
      lastStage = stages.getInt() - 1;
      b.setListener(&labeler);
    }
  }

  LogicalResult build(int64_t &numParams) {
    auto ret = cast<func::ReturnOp>(step.front().getTerminator());
    if (ret.getNumOperands() == 0)
      return step.emitError("@forward returns nothing to train on");
    Value stepCount = incrementStepCounter();
    keyDropouts(stepCount);
    labeler.stage = lastStage;
    FailureOr<Value> loss = buildLoss(ret.getOperand(0));
    labeler.stage.reset();
    if (failed(loss))
      return failure();
    storeRunningStatistics();
    if (failed(expandSyncBatchNorms(step)))
      return failure();
    Value scale = lossScale();
    FailureOr<llvm::MapVector<GlobalOp, Value>> grads = buildBackward(*loss, scale);
    if (failed(grads))
      return failure();
    numParams = grads->size();
    for (auto &[param, grad] : *grads)
      grad = GradientOp::create(b, loc, grad.getType(), grad,
                                FlatSymbolRefAttr::get(param.getSymNameAttr()));
    FailureOr<Value> finite = scale ? unscale(*grads, scale) : Value();
    if (failed(finite))
      return failure();
    if (o.maxGradNorm > 0 && failed(clipGradients(*grads)))
      return failure();
    Value lr = learningRate(stepCount);
    Value optimizerStep = *finite ? countSkippedSteps(stepCount, *finite) : stepCount;
    for (auto &[param, grad] : *grads)
      update(param, grad, lr, optimizerStep, *finite);
    if (*finite)
      updateLossScale(scale, *finite);
    func::ReturnOp::create(b, ret.getLoc(), *loss);
    ret.erase();
    step.setFunctionType(FunctionType::get(
        module.getContext(), step.front().getArgumentTypes(), {loss->getType()}));
    return success();
  }

private:
  /// A 0-d constant of the float type `elementType`.
  Value scalar(Type elementType, double v) {
    auto type = RankedTensorType::get({}, elementType);
    return ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, b.getFloatAttr(elementType, v)));
  }
  Value f32(double v) { return scalar(b.getF32Type(), v); }
  Value i64(int64_t v) {
    auto type = RankedTensorType::get({}, b.getIntegerType(64));
    return ConstantOp::create(b, loc, DenseElementsAttr::get(type, v));
  }

  /// Through the function, so that argument attributes (colo.int_max) stay
  /// one per argument.
  Value addArgument(RankedTensorType type, StringRef name) {
    unsigned i = step.getNumArguments();
    (void)step.insertArgument(i, type, DictionaryAttr(), NameLoc::get(b.getStringAttr(name)));
    return step.getArgument(i);
  }

  FailureOr<Value> buildLoss(Value output) {
    RankedTensorType out = tensorType(output);
    Location lossLoc = NameLoc::get(b.getStringAttr("loss"));
    bool vocabParallel =
        ColoDialect::VocabParallelAttrHelper(step.getContext()).isAttrPresent(step);
    FailureOr<LossSplit> split = lossSplitOf(step);
    if (failed(split))
      return failure();
    auto crossEntropy = [&](Value logits, Value labels) -> FailureOr<Value> {
      if (split->any())
        return buildSplitCrossEntropy(b, lossLoc, step, *split, logits, labels, o.ignoreIndex,
                                      o.labelSmoothing);
      return CrossEntropyOp::create(b, lossLoc, logits, labels,
                                    b.getI64IntegerAttr(o.ignoreIndex),
                                    b.getF64FloatAttr(o.labelSmoothing))
          .getResult();
    };
    StringRef lossName = stringifyLoss(o.loss);
    if (vocabParallel && o.loss != Loss::CrossEntropy && o.loss != Loss::Lm)
      return step.emitError() << "loss=" << lossName << " of vocab-parallel logits (each tp "
                              << "rank holds a block of the vocabulary): use loss=lm or "
                              << "cross-entropy";
    // A tensor grid's blocks, which only the cross-entropies read split.
    if (split->any() && o.loss != Loss::CrossEntropy && o.loss != Loss::Lm) {
      output = gatherLossInput(b, lossLoc, *split, output);
      out = tensorType(output);
      *split = LossSplit();
    }
    if (o.loss == Loss::Output) {
      if (out.getRank() != 0 || !isa<FloatType>(out.getElementType()))
        return step.emitError() << "loss=output needs a scalar float first result, got "
                                << out;
      return output;
    }
    if (o.loss == Loss::Mse)
      return MseLossOp::create(b, lossLoc, output, addArgument(out, "target")).getResult();
    if ((out.getRank() != 2 && out.getRank() != 3) ||
        !isa<FloatType>(out.getElementType()))
      return step.emitError() << "loss=" << lossName
                              << " needs logits [N, C] or [B, S, C], got " << out;
    // The labels' shape: every sample's positions.
    SmallVector<int64_t> positions(out.getShape().drop_back());
    positions[0] *= split->sampleParts;
    if (o.loss == Loss::CrossEntropy)
      return crossEntropy(output, addArgument(RankedTensorType::get(
                                                  positions, b.getIntegerType(64)),
                                              "labels"));
    // Next-token prediction: logits of tokens [0, S-1) against ids [1, S).
    if (out.getRank() != 3 || out.getDimSize(1) < 2)
      return step.emitError() << "loss=lm needs logits [B, S, V] with S >= 2, got " << out;
    auto ids = llvm::find_if(step.getArguments(), [&](BlockArgument arg) {
      RankedTensorType t = tensorType(arg);
      return isa<IntegerType>(t.getElementType()) && t.getShape() == ArrayRef<int64_t>(positions);
    });
    if (ids == step.getArguments().end())
      return step.emitError() << "loss=lm needs an integer input of shape ["
                              << positions[0] << ", " << positions[1]
                              << "] (the token ids) to shift into labels";
    int64_t batch = out.getDimSize(0), seq = out.getDimSize(1), vocab = out.getDimSize(2);
    Value logits = SliceOp::create(b, lossLoc, output, ArrayRef<int64_t>{0, 0, 0},
                                   ArrayRef<int64_t>{batch, seq - 1, vocab},
                                   ArrayRef<int64_t>{1, 1, 1});
    Value labels = SliceOp::create(b, lossLoc, *ids, ArrayRef<int64_t>{0, 1},
                                   ArrayRef<int64_t>{positions[0], seq}, ArrayRef<int64_t>{1, 1});
    return crossEntropy(logits, labels);
  }

  /// Training-mode batch norms return updated running statistics: write them
  /// back to the globals they were read from.
  void storeRunningStatistics() {
    step.walk([&](BatchNormOp bn) {
      for (auto [stat, updated] : {std::pair(bn.getRunningMean(), bn.getNewRunningMean()),
                                   std::pair(bn.getRunningVar(), bn.getNewRunningVar())})
        if (auto load = stat.getDefiningOp<GlobalLoadOp>())
          GlobalStoreOp::create(b, bn.getLoc(), load.getGlobalAttr(), updated);
    });
  }

  bool isTrainable(GlobalLoadOp load) {
    auto global = module.lookupSymbol<GlobalOp>(load.getGlobalAttr());
    return global && global.getTrainable();
  }

  /// Reverse-mode sweep from the loss; returns each trainable global with the
  /// sum of the gradients of its loads, in module order.
  FailureOr<llvm::MapVector<GlobalOp, Value>> buildBackward(Value loss, Value scale) {
    Block &body = step.front();
    SmallVector<Operation *> forward;
    DenseSet<Value> active;
    for (Operation &op : body.without_terminator()) {
      if (isa<GlobalStoreOp>(op))
        continue;
      forward.push_back(&op);
      auto load = dyn_cast<GlobalLoadOp>(op);
      bool isActive = load ? isTrainable(load)
                           : llvm::any_of(op.getOperands(),
                                          [&](Value v) { return active.contains(v); });
      if (isActive)
        active.insert(op.result_begin(), op.result_end());
    }

    DenseMap<Value, Value> grads;
    auto accumulate = [&](Value v, Value g) {
      Value &slot = grads[v];
      slot = slot ? AddOp::create(b, g.getLoc(), slot, g).getResult() : g;
    };
    labeler.stage = lastStage;
    Type lossType = tensorType(loss).getElementType();
    grads[loss] = !scale                ? scalar(lossType, 1.0)
                  : lossType.isF32()   ? scale
                                       : ConvertOp::create(b, loc, tensorType(loss), scale)
                                             .getResult();
    for (Operation *op : llvm::reverse(forward)) {
      if (isa<GlobalLoadOp>(op) ||
          llvm::none_of(op->getResults(), [&](Value r) { return active.contains(r); }))
        continue;
      SmallVector<Value> resultGrads;
      for (Value r : op->getResults())
        resultGrads.push_back(grads.lookup(r));
      if (llvm::all_of(resultGrads, [](Value g) { return !g; }))
        continue;
      if (lastStage)
        labeler.stage = getStage(op);
      FailureOr<SmallVector<Value>> operandGrads =
          buildOperandGradients(b, op, resultGrads);
      if (failed(operandGrads))
        return failure();
      // Gradients are summed where they are computed (the stage of `op`), so
      // a value used twice by a later stage is sent back once.
      for (auto [operand, g] : llvm::zip(op->getOperands(), *operandGrads))
        if (g && active.contains(operand))
          accumulate(operand, g);
    }
    labeler.stage.reset();

    llvm::MapVector<GlobalOp, Value> paramGrads;
    for (Operation *op : forward)
      if (auto load = dyn_cast<GlobalLoadOp>(op))
        if (Value g = grads.lookup(load.getResult())) {
          auto global = module.lookupSymbol<GlobalOp>(load.getGlobalAttr());
          Value &slot = paramGrads[global];
          slot = slot ? AddOp::create(b, load.getLoc(), slot, g).getResult() : g;
        }
    return paramGrads;
  }

  /// The sum over all gradients of `term(g)`, a 0-d f32 of the gradient as
  /// f32. A tensor-parallel rank holds blocks of the sharded parameters'
  /// gradients: their terms are summed over the ranks that hold the blocks
  /// (per set of mesh axes: 2-D tensor parallelism's weights over the grid,
  /// what its rows share over its columns), the replicated ones' counted
  /// once.
  FailureOr<Value> sumOverGradients(const llvm::MapVector<GlobalOp, Value> &grads,
                                    function_ref<Value(Value)> term) {
    Value total;
    std::map<SmallVector<StringRef>, Value> blockTotals;
    for (auto [param, g] : grads) {
      RankedTensorType t = tensorType(g);
      Value g32 = t.getElementType().isF32()
                      ? g
                      : ConvertOp::create(b, loc, t.clone(b.getF32Type()), g).getResult();
      std::optional<GlobalShard> shard = getGlobalShard(param);
      if (shard && shard->flattened())
        return param.emitError("a global norm or overflow check of a flat-sharded (ZeRO-3) "
                               "parameter's gradient");
      SmallVector<StringRef> axes;
      for (int64_t d : shard ? shard->splitDims() : SmallVector<int64_t>{})
        axes.append(shard->axes[d].begin(), shard->axes[d].end());
      Value &sum = shard ? blockTotals[axes] : total;
      Value v = term(g32);
      sum = sum ? AddOp::create(b, loc, sum, v).getResult() : v;
    }
    for (auto &[names, blockTotal] : blockTotals) {
      SmallVector<int16_t> axes;
      for (StringRef name : names) {
        FailureOr<MeshAxis> axis = meshAxisNamed(name);
        if (failed(axis))
          return failure();
        axes.push_back(axis->axis);
      }
      auto grid = *module.getOps<shard::GridOp>().begin();
      Value summed = shard::AllReduceOp::create(b, loc, blockTotal, grid.getSymName(), axes,
                                                shard::ReductionKind::Sum);
      total = total ? AddOp::create(b, loc, total, summed).getResult() : summed;
    }
    return total;
  }

  /// The module's mesh axis `name`, whatever its size.
  FailureOr<MeshAxis> meshAxisNamed(StringRef name) {
    for (shard::GridOp grid : module.getOps<shard::GridOp>())
      if (ArrayAttr axes = ColoDialect::AxesAttrHelper(module.getContext()).getAttr(grid))
        for (auto [i, axis] : llvm::enumerate(axes.getAsValueRange<StringAttr>()))
          if (axis == name)
            return getOrCreateMeshAxis(module, name, grid.getShape()[i], step);
    return step->emitError() << "a sharded gradient's mesh axis '" << name
                             << "' is not an axis of the module's mesh";
  }

  Value sumAll(Value v) {
    SmallVector<int64_t> all(tensorType(v).getRank());
    std::iota(all.begin(), all.end(), 0);
    return ReduceSumOp::create(b, loc, v, b.getDenseI64ArrayAttr(all), nullptr);
  }

  /// `coef` (0-d f32) times every gradient.
  void scaleGradients(llvm::MapVector<GlobalOp, Value> &grads, Value coef) {
    for (auto &[param, g] : grads) {
      Type e = tensorType(g).getElementType();
      Value c = e.isF32() ? coef
                          : ConvertOp::create(b, loc, RankedTensorType::get({}, e), coef)
                                .getResult();
      g = MulOp::create(b, loc, g, c);
    }
  }

  /// torch.nn.utils.clip_grad_norm_: scale every gradient by
  /// min(1, max_norm / (total_norm + 1e-6)).
  LogicalResult clipGradients(llvm::MapVector<GlobalOp, Value> &grads) {
    FailureOr<Value> total = sumOverGradients(
        grads, [&](Value g) { return sumAll(MulOp::create(b, loc, g, g)); });
    if (failed(total))
      return failure();
    if (!*total)
      return success();
    Value norm = SqrtOp::create(b, loc, *total);
    Value coef = DivOp::create(b, loc, f32(o.maxGradNorm),
                               AddOp::create(b, loc, norm, f32(1e-6)));
    scaleGradients(grads, MinimumOp::create(b, loc, coef, f32(1.0)));
    return success();
  }

  /// The loss scale (0-d f32): a constant, or under dynamic scaling the
  /// global colo.loss_scale; null without loss scaling.
  Value lossScale() {
    if (o.lossScale == "none")
      return {};
    if (o.lossScale != "dynamic")
      return f32(std::stod(o.lossScale));
    auto type = RankedTensorType::get({}, b.getF32Type());
    GlobalOp global = createGlobal("colo.loss_scale", type,
                                   DenseElementsAttr::get(type, float(o.initScale)));
    return GlobalLoadOp::create(b, loc, type, global.getSymName());
  }

  /// Divides the gradients by the loss scale. Under dynamic scaling, returns
  /// whether every gradient is finite (0-d i1; inf * 0 and NaN * 0 are NaN,
  /// so the sum of g * 0 is 0 exactly when they are), else null.
  FailureOr<Value> unscale(llvm::MapVector<GlobalOp, Value> &grads, Value scale) {
    Value poison;
    if (o.lossScale == "dynamic") {
      FailureOr<Value> sum = sumOverGradients(
          grads, [&](Value g) { return sumAll(MulOp::create(b, loc, g, f32(0.0))); });
      if (failed(sum))
        return failure();
      poison = *sum;
    }
    scaleGradients(grads, DivOp::create(b, loc, f32(1.0), scale));
    if (!poison)
      return Value();
    return CompareOp::create(b, loc, ComparePredicate::eq, poison, f32(0.0)).getResult();
  }

  /// The optimizer's step number under dynamic loss scaling: skipped steps
  /// do not count (PyTorch's GradScaler does not call optimizer.step()).
  Value countSkippedSteps(Value stepCount, Value finite) {
    auto type = RankedTensorType::get({}, b.getIntegerType(64));
    GlobalOp skipped = createGlobal("colo.skipped_steps", type,
                                    DenseElementsAttr::get(type, int64_t(0)));
    Value before = GlobalLoadOp::create(b, loc, type, skipped.getSymName());
    GlobalStoreOp::create(b, loc, skipped.getSymName(),
                          AddOp::create(b, loc, before,
                                        SelectOp::create(b, loc, finite, i64(0), i64(1))));
    return SubOp::create(b, loc, stepCount, before);
  }

  /// GradScaler.update: halve the scale after an overflow, double it after
  /// scale-window finite steps in a row.
  void updateLossScale(Value scale, Value finite) {
    auto type = RankedTensorType::get({}, b.getIntegerType(64));
    GlobalOp good = createGlobal("colo.loss_scale_good_steps", type,
                                 DenseElementsAttr::get(type, int64_t(0)));
    Value count = AddOp::create(b, loc, GlobalLoadOp::create(b, loc, type, good.getSymName()),
                                i64(1));
    Value grow = CompareOp::create(b, loc, ComparePredicate::eq, count, i64(o.scaleWindow));
    Value grown = SelectOp::create(b, loc, grow, MulOp::create(b, loc, scale, f32(2.0)), scale);
    GlobalStoreOp::create(
        b, loc, "colo.loss_scale",
        SelectOp::create(b, loc, finite, grown, MulOp::create(b, loc, scale, f32(0.5))));
    Value kept = SelectOp::create(b, loc, grow, i64(0), count);
    GlobalStoreOp::create(b, loc, good.getSymName(),
                          SelectOp::create(b, loc, finite, kept, i64(0)));
  }

  GlobalOp createGlobal(StringRef name, RankedTensorType type, Attribute init) {
    // After the model's own globals, before the functions.
    OpBuilder mb(module.lookupSymbol("forward"));
    auto global = GlobalOp::create(mb, loc, mb.getStringAttr(name), TypeAttr::get(type),
                                   init, /*trainable=*/nullptr,
                                   /*shard=*/nullptr);
    ColoDialect::OptimizerStateAttrHelper(mb.getContext()).setAttr(global, mb.getUnitAttr());
    return global;
  }

  /// The number of this update, counting from 1, kept in the global colo.step:
  /// read and incremented first (dropout keys use it), stored at the end.
  Value incrementStepCounter() {
    auto type = RankedTensorType::get({}, b.getIntegerType(64));
    GlobalOp counter =
        createGlobal("colo.step", type, DenseElementsAttr::get(type, int64_t(0)));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&step.front());
    Value next = AddOp::create(
        b, loc, GlobalLoadOp::create(b, loc, type, counter.getSymName()),
        i64(1));
    b.setInsertionPoint(step.front().getTerminator());
    GlobalStoreOp::create(b, loc, counter.getSymName(), next);
    return next;
  }

  /// Gives every dropout a key of its own for this step:
  /// (seed * 2^28 + step) * 2^12 + its position, so masks differ between ops
  /// and steps and repeat between runs.
  void keyDropouts(Value stepCount) {
    int64_t position = 0;
    step.walk([&](DropoutOp dropout) {
      if (dropout.getKey() || dropout.getRatio().isZero())
        return;
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(dropout);
      Value base = AddOp::create(b, loc, stepCount, i64(o.seed << 28));
      Value key = AddOp::create(b, loc, MulOp::create(b, loc, base, i64(4096)),
                                i64(position++));
      dropout.getKeyMutable().assign(key);
    });
  }

  /// Constant, or Hugging Face's get_cosine_schedule_with_warmup: linear from 0
  /// over the warm-up, then cosine to 0 at total-steps.
  Value learningRate(Value stepCount) {
    Value base = f32(o.lr);
    if (o.schedule == LrSchedule::Constant)
      return base;
    Value index = ConvertOp::create(
        b, loc, RankedTensorType::get({}, b.getF32Type()),
        SubOp::create(b, loc, stepCount, i64(1)));
    double warmup = static_cast<double>(o.warmupSteps);
    double decay = static_cast<double>(std::max<int64_t>(1, o.totalSteps - o.warmupSteps));
    Value warm = MulOp::create(b, loc, index, f32(1.0 / std::max(1.0, warmup)));
    Value progress = MulOp::create(b, loc, SubOp::create(b, loc, index, f32(warmup)),
                                   f32(1.0 / decay));
    Value cosine = MulOp::create(
        b, loc,
        AddOp::create(b, loc, f32(1.0),
                      CosOp::create(b, loc,
                                    MulOp::create(b, loc, progress, f32(llvm::numbers::pi)))),
        f32(0.5));
    cosine = MaximumOp::create(b, loc, cosine, f32(0.0));
    Value inWarmup = CompareOp::create(b, loc, ComparePredicate::lt, index, f32(warmup));
    return MulOp::create(b, loc, base, SelectOp::create(b, loc, inWarmup, warm, cosine));
  }

  /// A zero-initialized optimizer state of `param`'s type, sharded like it
  /// (tensor parallelism): each rank keeps the state of its block.
  Value state(GlobalOp param, StringRef name) {
    RankedTensorType type = param.getTensorType();
    GlobalOp global = createGlobal((param.getSymName() + "#" + name).str(), type,
                                   DenseElementsAttr::get(type, b.getZeroAttr(
                                                                    type.getElementType())));
    global.setShardAttr(param.getShardAttr());
    states.push_back(global);
    stateValues.push_back(
        GlobalLoadOp::create(b, loc, localType(global), global.getSymName()));
    return stateValues.back();
  }

  /// Stores the optimizer's new parameter and state; a step whose
  /// gradients overflowed (`finite` false, if given) stores the old ones.
  void update(GlobalOp param, Value grad, Value lr, Value stepCount, Value finite) {
    Location paramLoc = NameLoc::get(b.getStringAttr(param.getSymName() + "#update"));
    Value p = GlobalLoadOp::create(b, paramLoc, localType(param), param.getSymName());
    auto f64 = [&](double v) { return b.getF64FloatAttr(v); };
    auto store = [&](StringRef name, Value v, Value old) {
      if (finite)
        v = SelectOp::create(b, paramLoc, finite, v, old);
      GlobalStoreOp::create(b, paramLoc, name, v);
    };
    states.clear();
    stateValues.clear();
    Operation *updateOp;
    if (o.optimizer == Optimizer::Sgd || o.optimizer == Optimizer::Lars) {
      bool buffered = o.optimizer == Optimizer::Lars || o.momentum != 0;
      Value buf = buffered ? state(param, "momentum_buffer") : grad;
      if (o.optimizer == Optimizer::Sgd)
        updateOp = SgdUpdateOp::create(b, paramLoc, p, grad, buf, lr, stepCount,
                                       f64(o.momentum), f64(o.dampening),
                                       f64(weightDecay()),
                                       o.nesterov ? b.getUnitAttr() : nullptr);
      else
        updateOp = LarsUpdateOp::create(b, paramLoc, p, grad, buf, lr, stepCount,
                                        f64(o.momentum), f64(weightDecay()),
                                        f64(o.trustCoefficient), f64(epsilon()));
    } else {
      Value m = state(param, "exp_avg"), v = state(param, "exp_avg_sq");
      if (o.optimizer == Optimizer::Lamb)
        updateOp = LambUpdateOp::create(b, paramLoc, p, grad, m, v, lr, stepCount,
                                        f64(o.beta1), f64(o.beta2), f64(epsilon()),
                                        f64(weightDecay()));
      else
        updateOp = AdamUpdateOp::create(b, paramLoc, p, grad, m, v, lr, stepCount,
                                        f64(o.beta1), f64(o.beta2), f64(epsilon()),
                                        f64(weightDecay()),
                                        o.optimizer == Optimizer::AdamW ? b.getUnitAttr()
                                                                        : nullptr);
    }
    store(param.getSymName(), updateOp->getResult(0), p);
    for (auto [i, s] : llvm::enumerate(states))
      store(s.getSymName(), updateOp->getResult(i + 1), stateValues[i]);
  }

  double weightDecay() const {
    if (o.weightDecay >= 0)
      return o.weightDecay;
    return o.optimizer == Optimizer::AdamW || o.optimizer == Optimizer::Lamb ? 0.01 : 0.0;
  }
  double epsilon() const {
    if (o.epsilon >= 0)
      return o.epsilon;
    return o.optimizer == Optimizer::Lamb ? 1e-6 : 1e-8;
  }

  ModuleOp module;
  func::FuncOp step;
  const ColoBuildTrainStepOptions &o;
  OpBuilder b;
  Location loc;
  SmallVector<GlobalOp> states; // of the parameter being updated
  SmallVector<Value> stateValues; // their values before the update
  StageLabeler labeler;
  std::optional<int64_t> lastStage;
};

struct ColoBuildTrainStep : colo::impl::ColoBuildTrainStepBase<ColoBuildTrainStep> {
  using ColoBuildTrainStepBase::ColoBuildTrainStepBase;

  ColoBuildTrainStepOptions options() const {
    ColoBuildTrainStepOptions o;
    o.loss = loss;
    o.ignoreIndex = ignoreIndex;
    o.labelSmoothing = labelSmoothing;
    o.optimizer = optimizer;
    o.lr = lr;
    o.momentum = momentum;
    o.dampening = dampening;
    o.nesterov = nesterov;
    o.beta1 = beta1;
    o.beta2 = beta2;
    o.epsilon = epsilon;
    o.weightDecay = weightDecay;
    o.trustCoefficient = trustCoefficient;
    o.maxGradNorm = maxGradNorm;
    o.schedule = schedule;
    o.warmupSteps = warmupSteps;
    o.totalSteps = totalSteps;
    o.seed = seed;
    o.lossScale = lossScale;
    o.initScale = initScale;
    o.scaleWindow = scaleWindow;
    return o;
  }

  LogicalResult checkOptions(ModuleOp module) {
    auto fail = [&](const Twine &msg) { return module.emitError(msg); };
    if (!(lr > 0))
      return fail("lr must be positive, got " + std::to_string(static_cast<double>(lr)));
    if (schedule == LrSchedule::Cosine && totalSteps <= warmupSteps)
      return fail("schedule=cosine needs total-steps (" + Twine(static_cast<int64_t>(totalSteps)) +
                  ") greater than warmup-steps (" + Twine(static_cast<int64_t>(warmupSteps)) + ")");
    if (warmupSteps < 0 || maxGradNorm < 0)
      return fail("warmup-steps and max-grad-norm must not be negative");
    if (lossScale != "none" && lossScale != "dynamic") {
      char *end = nullptr;
      double factor = std::strtod(lossScale.c_str(), &end);
      if (lossScale.empty() || *end || !(factor > 0) || !std::isfinite(factor))
        return fail("loss-scale must be none, dynamic or a positive number, got '" +
                    lossScale + "'");
    }
    if (!(initScale > 0) || scaleWindow < 1)
      return fail("init-scale must be positive and scale-window at least 1");
    if (nesterov && (momentum <= 0 || dampening != 0))
      return fail("nesterov needs momentum > 0 and dampening 0 (as torch.optim.SGD)");
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward || forward.isExternal()) {
      module.emitError("no func.func @forward to build a training step from");
      return signalPassFailure();
    }
    if (module.lookupSymbol("train_step")) {
      module.emitError("the module already has a @train_step");
      return signalPassFailure();
    }
    if (failed(checkOptions(module)))
      return signalPassFailure();

    auto step = cast<func::FuncOp>(forward->clone());
    step.setName("train_step");
    module.getBody()->push_back(step);
    step.walk([](BatchNormOp bn) { bn.setTraining(true); });
    RewritePatternSet patterns(&getContext());
    populateDecomposeAttentionPatterns(patterns);
    if (failed(applyPatternsGreedily(step, std::move(patterns))))
      return signalPassFailure();
    if (ColoDialect::PipelineStagesAttrHelper(step.getContext()).isAttrPresent(step))
      inferMissingStages(step.front());

    int64_t params = 0;
    ColoBuildTrainStepOptions opts = options();
    if (failed(TrainStepBuilder(module, step, opts).build(params)))
      return signalPassFailure();
    numParams = params;
  }
};
} // namespace

LogicalResult colo::parseBuildTrainStepOptions(
    StringRef text, ColoBuildTrainStepOptions &options,
    function_ref<LogicalResult(const Twine &)> error) {
  ColoBuildTrainStep pass;
  if (failed(pass.initializeOptions(text, error)))
    return failure();
  options = pass.options();
  return success();
}
