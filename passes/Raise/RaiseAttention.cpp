// colo-raise-attention: softmax(q k^T * scale + mask) v, as the PyTorch ONNX
// exporters spell it -> colo.attention.
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Passes/Passes.h"
#include "Raise/PatternUtils.h"

#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace colo {
#define GEN_PASS_DEF_COLORAISEATTENTION
#include "colo/Passes/Passes.h.inc"
} // namespace colo

using namespace mlir;
using namespace colo;

namespace {
RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

double toDouble(APFloat v) {
  bool losesInfo;
  v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &losesInfo);
  return v.convertToDouble();
}

/// A mask value that removes its score: -inf, or a finite value so negative
/// that exp() of it underflows to exactly zero for any realistic score
/// (-1e9, or half the lowest finite value of a narrower type such as the
/// `finfo(dtype).min` that Hugging Face models add).
bool isLargeNegative(const APFloat &v) {
  if (v.isNaN() || !v.isNegative())
    return false;
  if (v.isInfinity())
    return true;
  double lowest = toDouble(APFloat::getLargest(v.getSemantics(), /*Negative=*/true));
  return toDouble(v) <= std::max(-1e9, lowest / 2);
}

enum class MaskKind { Zero, Causal, Other };

/// Classifies the values of a constant additive mask: all zero; causal for
/// scores of `[..., s, t]` (zero on and below the diagonal, large negative
/// above; only for `s == t`, where top-left and bottom-right alignment agree);
/// or anything else.
MaskKind classifyMask(DenseElementsAttr attr, int64_t s, int64_t t) {
  if (!isa<FloatType>(attr.getElementType()))
    return MaskKind::Other;
  ArrayRef<int64_t> shape = attr.getType().getShape();
  bool causal = s == t && shape.size() >= 2 && shape[shape.size() - 2] == s &&
                shape.back() == t;
  bool zero = true;
  int64_t f = 0;
  for (const APFloat &v : attr.getValues<APFloat>()) {
    int64_t j = causal ? f % t : 0, i = causal ? f / t % s : 0;
    ++f;
    if (v.isZero()) {
      causal &= j <= i;
    } else {
      zero = false;
      causal &= j > i && isLargeNegative(v);
    }
    if (!zero && !causal)
      return MaskKind::Other;
    if (attr.isSplat())
      break;
  }
  if (zero)
    return MaskKind::Zero;
  return causal ? MaskKind::Causal : MaskKind::Other;
}

/// One term that the scores are masked with: a tensor added to them, or a
/// select that replaces some of them by -inf (which is adding 0 or -inf).
struct MaskTerm {
  Value additive;
  SelectOp select;
  bool scoresWhenTrue = true; // Which branch of the select holds the scores.

  /// The term's values, where they are constant.
  DenseElementsAttr getConstant(Type elementType) {
    DenseElementsAttr attr;
    if (additive) {
      if (matchPattern(additive, m_Constant(&attr)))
        return attr;
      return {};
    }
    if (!matchPattern(select.getCondition(), m_Constant(&attr)))
      return {};
    auto floatType = cast<FloatType>(elementType);
    APFloat keep = APFloat::getZero(floatType.getFloatSemantics());
    APFloat drop = APFloat::getInf(floatType.getFloatSemantics(), /*Negative=*/true);
    SmallVector<APFloat> values;
    for (bool c : attr.getValues<bool>())
      values.push_back(c == scoresWhenTrue ? keep : drop);
    return DenseElementsAttr::get(
        RankedTensorType::get(attr.getType().getShape(), elementType), values);
  }

  /// The term as a tensor to add to the scores.
  Value materialize(PatternRewriter &rewriter, Location loc, Type elementType) {
    if (additive)
      return additive;
    if (DenseElementsAttr constant = getConstant(elementType))
      return ConstantOp::create(rewriter, loc, constant);
    auto floatType = cast<FloatType>(elementType);
    auto scalar = RankedTensorType::get({}, elementType);
    auto splat = [&](APFloat v) {
      return ConstantOp::create(rewriter, loc,
                                DenseElementsAttr::get(scalar, ArrayRef(v)));
    };
    Value keep = splat(APFloat::getZero(floatType.getFloatSemantics()));
    Value drop = splat(APFloat::getInf(floatType.getFloatSemantics(), true));
    return SelectOp::create(rewriter, loc, select.getCondition(),
                            scoresWhenTrue ? keep : drop,
                            scoresWhenTrue ? drop : keep);
  }
};

/// What the softmax's operand is made of: the q k^T matmul, the product of the
/// constant scales on the way, and the mask terms added to it.
struct Scores {
  MatmulOp matmul;
  double scale = 1.0;
  SmallVector<MaskTerm> masks;
};

/// Matches `v` down to the q k^T matmul through constant scales and, above
/// them, additive or -inf-select masks. A mask below a scale would be scaled
/// with the scores, so once a scale is peeled no mask may follow.
std::optional<Scores> matchScores(Value v, int depth = 0) {
  double scale = 1.0;
  Value x = stripConstantScale(v, scale);
  if (auto matmul = x.getDefiningOp<MatmulOp>())
    return Scores{matmul, scale, {}};
  if (x != v || depth > 4)
    return std::nullopt;
  if (auto add = x.getDefiningOp<AddOp>()) {
    for (auto [inner, term] : {std::pair(add.getLhs(), add.getRhs()),
                               std::pair(add.getRhs(), add.getLhs())}) {
      // The term must broadcast into the scores, not widen them.
      if (inner.getType() != add.getType())
        continue;
      if (std::optional<Scores> s = matchScores(inner, depth + 1)) {
        s->masks.push_back(MaskTerm{term, {}, true});
        return s;
      }
    }
  }
  if (auto select = x.getDefiningOp<SelectOp>()) {
    for (bool scoresWhenTrue : {true, false}) {
      Value inner = scoresWhenTrue ? select.getTrueValue() : select.getFalseValue();
      Value fill = scoresWhenTrue ? select.getFalseValue() : select.getTrueValue();
      // Only -inf makes the select an addition: a finite fill differs from
      // scores + fill, most visibly in a row that is masked entirely.
      std::optional<double> c = getSplatConstant(fill);
      if (!c || !std::isinf(*c) || *c > 0 || inner.getType() != select.getType())
        continue;
      if (std::optional<Scores> s = matchScores(inner, depth + 1)) {
        s->masks.push_back(MaskTerm{{}, select, scoresWhenTrue});
        return s;
      }
    }
  }
  return std::nullopt;
}

/// How to build k `[b, h, t, d]` from the matmul's right operand
/// `[b, h, d, t]`: that operand, its scales peeled, is
/// `reshape(transpose(x, perm))` with the transpose's two trailing dimensions
/// `d, t` and the reshape only regrouping the leading ones, so
/// `k = reshape(transpose(x, perm with its last two entries swapped))`.
struct KeyPlan {
  Value source;
  SmallVector<int64_t> perm; // Empty when the swapped permutation is the identity.
};

std::optional<KeyPlan> matchTransposedKey(Value keyT, double &scale) {
  auto transpose = stripConstantScale(keyT, scale, /*throughReshapes=*/true)
                       .getDefiningOp<TransposeOp>();
  if (!transpose)
    return std::nullopt;
  ArrayRef<int64_t> shape = transpose.getType().getShape();
  ArrayRef<int64_t> want = tensorType(keyT).getShape(); // [b, h, d, t]
  if (shape.size() < 2 || shape.back() != want[3] ||
      shape[shape.size() - 2] != want[2])
    return std::nullopt;
  int64_t leading = 1;
  for (int64_t n : shape.drop_back(2))
    leading *= n;
  if (leading != want[0] * want[1])
    return std::nullopt;
  SmallVector<int64_t> perm(transpose.getPermutation());
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    perm.clear();
  return KeyPlan{transpose.getInput(), perm};
}

/// If `full` (`[b, h, t, d]` in row-major order, through reshapes) is
/// repeat_kv's `reshape(broadcast_to(reshape(x, [b, hkv, 1, t, d]),
/// [b, hkv, h / hkv, t, d]))`, or multi-query attention's
/// `broadcast_to(x: [b, 1, t, d], [b, h, t, d])`, returns the tensor before
/// the broadcast. Query head `i` then reads key/value head `i / (h / hkv)`,
/// which is how colo.attention groups heads.
std::optional<Value> matchRepeatKv(Value full, ArrayRef<int64_t> fullShape) {
  auto broadcast = stripReshapes(full).getDefiningOp<BroadcastToOp>();
  if (!broadcast)
    return std::nullopt;
  ArrayRef<int64_t> out = broadcast.getType().getShape();
  ArrayRef<int64_t> in = tensorType(broadcast.getInput()).getShape();
  int64_t b = fullShape[0], h = fullShape[1], t = fullShape[2], d = fullShape[3];
  bool grouped = out.size() == 5 && out[0] == b && out[1] * out[2] == h &&
                 out[3] == t && out[4] == d &&
                 in == ArrayRef<int64_t>{b, out[1], 1, t, d};
  bool multiQuery = out == fullShape && in == ArrayRef<int64_t>{b, 1, t, d};
  if (!grouped && !multiQuery)
    return std::nullopt;
  return broadcast.getInput();
}

Value reshapeTo(PatternRewriter &rewriter, Location loc, Value v,
                ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, tensorType(v).getElementType());
  if (v.getType() == type)
    return v;
  return ReshapeOp::create(rewriter, loc, type, v);
}

/// Rooted at `p v`: matches the probabilities back to q, k and the mask.
struct RaiseAttentionPattern : OpRewritePattern<MatmulOp> {
  RaiseAttentionPattern(MLIRContext *ctx, llvm::Statistic &count)
      : OpRewritePattern(ctx), count(count) {}

  LogicalResult matchAndRewrite(MatmulOp op, PatternRewriter &rewriter) const override {
    // p = softmax(scores) [dropout]; both used only here, since the rewrite
    // recomputes them inside the attention (and a dropout draws anew).
    Value probs = op.getLhs();
    double dropout = 0.0;
    if (auto drop = probs.getDefiningOp<DropoutOp>()) {
      if (!drop->hasOneUse())
        return failure();
      dropout = drop.getRatio().convertToDouble();
      probs = drop.getInput();
    }
    auto softmax = probs.getDefiningOp<SoftmaxOp>();
    if (!softmax || !softmax->hasOneUse())
      return failure();
    ArrayRef<int64_t> scoresShape = softmax.getType().getShape();
    // getAxis() returns the I64Attr as unsigned; read it back as signed.
    int64_t axis = static_cast<int64_t>(softmax.getAxis());
    if (scoresShape.size() != 4 || (axis != 3 && axis != -1))
      return failure();
    int64_t b = scoresShape[0], h = scoresShape[1], s = scoresShape[2],
            t = scoresShape[3];

    std::optional<Scores> scores = matchScores(softmax.getInput());
    if (!scores)
      return failure();
    double scale = scores->scale;
    Value query = stripConstantScale(scores->matmul.getLhs(), scale);
    Value keyT = scores->matmul.getRhs();
    Value value = op.getRhs();
    ArrayRef<int64_t> qShape = tensorType(query).getShape();
    ArrayRef<int64_t> vShape = tensorType(value).getShape();
    if (qShape.size() != 4 || vShape.size() != 4)
      return failure();
    int64_t d = qShape[3], dv = vShape[3];
    // No broadcast batch dimensions: every operand has all of [b, h].
    if (qShape != ArrayRef<int64_t>{b, h, s, d} ||
        tensorType(keyT).getShape() != ArrayRef<int64_t>{b, h, d, t} ||
        vShape != ArrayRef<int64_t>{b, h, t, dv})
      return failure();
    std::optional<KeyPlan> key = matchTransposedKey(keyT, scale);
    if (!key)
      return failure();

    // Masks: causal and all-zero constants become the attribute or nothing;
    // at most one other term remains, since adding two would reassociate.
    Type elementType = softmax.getType().getElementType();
    bool causal = false;
    std::optional<MaskTerm> mask;
    for (MaskTerm &term : scores->masks) {
      MaskKind kind = MaskKind::Other;
      if (DenseElementsAttr constant = term.getConstant(elementType))
        kind = classifyMask(constant, s, t);
      if (kind == MaskKind::Causal)
        causal = true;
      else if (kind == MaskKind::Other && mask)
        return failure();
      else if (kind == MaskKind::Other)
        mask = term;
    }

    // Grouped-query attention: peel repeat_kv when k and v agree on it.
    std::optional<Value> kGroups, vGroups;
    if (key->perm.empty()) {
      kGroups = matchRepeatKv(key->source, {b, h, t, d});
      vGroups = matchRepeatKv(value, {b, h, t, dv});
    }

    Location loc = op.getLoc();
    Value k, v;
    if (kGroups && vGroups &&
        tensorType(*kGroups).getDimSize(1) == tensorType(*vGroups).getDimSize(1)) {
      int64_t hkv = tensorType(*kGroups).getDimSize(1);
      k = reshapeTo(rewriter, loc, *kGroups, {b, hkv, t, d});
      v = reshapeTo(rewriter, loc, *vGroups, {b, hkv, t, dv});
    } else {
      Value source = key->source;
      if (!key->perm.empty())
        source = TransposeOp::create(rewriter, loc, source, key->perm);
      k = reshapeTo(rewriter, loc, source, {b, h, t, d});
      v = value;
    }
    Value maskValue = mask ? mask->materialize(rewriter, loc, elementType) : Value();
    rewriter.replaceOpWithNewOp<AttentionOp>(
        op, op.getType(), query, k, v, maskValue, rewriter.getF64FloatAttr(scale),
        causal ? rewriter.getUnitAttr() : UnitAttr(),
        rewriter.getF64FloatAttr(dropout));
    ++count;
    return success();
  }
  llvm::Statistic &count;
};

struct ColoRaiseAttentionPass
    : colo::impl::ColoRaiseAttentionBase<ColoRaiseAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RaiseAttentionPattern>(&getContext(), numRaised);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
