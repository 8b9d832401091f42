// The library steps of the walk: matrix products as GEMMs that read
// transposed operands in place and absorb bias and residual adds,
// convolutions and pooling as oneDNN steps.
#include "StepBuilder.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"

using namespace mlir;
using namespace colo;

namespace {
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

/// The geometry attributes that convolution and pooling steps share.
struct Window {
  DenseI64ArrayAttr input, window, output, strides, padding, dilations;
};
Window window(OpBuilder &b, Value x, Value y, ArrayRef<int64_t> kernel,
              ArrayRef<int64_t> strides, ArrayRef<int64_t> pad, ArrayRef<int64_t> dil) {
  ArrayRef<int64_t> ys = tensorType(y).getShape();
  return {b.getDenseI64ArrayAttr(tensorType(x).getShape()), b.getDenseI64ArrayAttr(kernel),
          b.getDenseI64ArrayAttr(ys.take_back(2)), b.getDenseI64ArrayAttr(strides),
          b.getDenseI64ArrayAttr(pad), b.getDenseI64ArrayAttr(dil)};
}
} // namespace

bool colo::feedsOnlyGemms(TransposeOp t) {
  return !t->use_empty() && t.getPermutation().size() <= 4 &&
         gemmOperand(t.getInput(), t.getPermutation()) &&
         llvm::all_of(t->getUsers(), [](Operation *u) { return isa<MatmulOp>(u); });
}

bool colo::isLibraryOp(Operation *op) {
  return isa<MatmulOp, Conv2dOp, Conv2dBackwardInputOp, Conv2dBackwardFilterOp,
             MaxPool2dOp, AvgPool2dOp, MaxPool2dBackwardOp, AvgPool2dBackwardOp>(op) ||
         isCollective(op);
}

LogicalResult StepBuilder::visitLibrary(Operation *op) {
  if (failed(flush()))
    return failure();
  if (auto mm = dyn_cast<MatmulOp>(op))
    return visitMatmul(mm);
  if (isCollective(op))
    return visitCollective(op);
  SmallVector<Value> in;
  for (Value v : op->getOperands()) {
    FailureOr<Value> buffer = materialize(v);
    if (failed(buffer))
      return failure();
    in.push_back(*buffer);
  }
  FailureOr<Value> out = result(op);
  if (failed(out))
    return failure();
  Location loc = op->getLoc();
  StringAttr name = b.getStringAttr(stepName(op));
  MLIRContext *ctx = b.getContext();
  auto conv = [&](exec::ConvMode mode, Value x, Value w, Value bias, Value y, Value tx,
                  Value tw, Value ty, ArrayRef<int64_t> strides, ArrayRef<int64_t> pad,
                  ArrayRef<int64_t> dil, int64_t groups) {
    ArrayRef<int64_t> ws = tensorType(tw).getShape();
    Window g = window(b, tx, ty, ws.take_back(2), strides, pad, dil);
    exec::Conv2dOp::create(b, loc, name, exec::ConvModeAttr::get(ctx, mode), x, w, bias, y,
                           g.input, b.getI64IntegerAttr(ws[0]), g.window, g.output,
                           g.strides, g.padding, g.dilations, b.getI64IntegerAttr(groups));
  };
  auto pool = [&](exec::PoolMode mode, Value x, Value y, Value dx, Value dy, Value tx,
                  Value ty, ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                  ArrayRef<int64_t> pad, bool countIncludePad) {
    Window g = window(b, tx, ty, kernel, strides, pad, {1, 1});
    exec::Pool2dOp::create(b, loc, name, exec::PoolModeAttr::get(ctx, mode), x, y, dx, dy,
                           g.input, g.window, g.output, g.strides, g.padding, g.dilations,
                           countIncludePad ? b.getUnitAttr() : UnitAttr());
  };
  if (auto c = dyn_cast<Conv2dOp>(op))
    conv(exec::ConvMode::forward, in[0], in[1], c.getBias() ? in[2] : Value(), *out,
         c.getInput(), c.getFilter(), c.getResult(), c.getStrides(), c.getPadding(),
         c.getDilations(), c.getGroups());
  else if (auto c = dyn_cast<Conv2dBackwardInputOp>(op))
    conv(exec::ConvMode::backward_data, *out, in[1], {}, in[0], c.getResult(), c.getFilter(),
         c.getGrad(), c.getStrides(), c.getPadding(), c.getDilations(), c.getGroups());
  else if (auto c = dyn_cast<Conv2dBackwardFilterOp>(op))
    conv(exec::ConvMode::backward_weights, in[0], *out, {}, in[1], c.getInput(),
         c.getResult(), c.getGrad(), c.getStrides(), c.getPadding(), c.getDilations(),
         c.getGroups());
  else if (auto p = dyn_cast<MaxPool2dOp>(op))
    pool(exec::PoolMode::max_forward, in[0], *out, {}, {}, p.getInput(), p.getResult(),
         p.getKernel(), p.getStrides(), p.getPadding(), false);
  else if (auto p = dyn_cast<AvgPool2dOp>(op))
    pool(exec::PoolMode::avg_forward, in[0], *out, {}, {}, p.getInput(), p.getResult(),
         p.getKernel(), p.getStrides(), p.getPadding(), p.getCountIncludePad());
  else if (auto p = dyn_cast<MaxPool2dBackwardOp>(op))
    pool(exec::PoolMode::max_backward, in[0], {}, *out, in[1], p.getInput(), p.getGrad(),
         p.getKernel(), p.getStrides(), p.getPadding(), false);
  else if (auto p = dyn_cast<AvgPool2dBackwardOp>(op))
    pool(exec::PoolMode::avg_backward, {}, {}, *out, in[0], p.getResult(), p.getGrad(),
         p.getKernel(), p.getStrides(), p.getPadding(), p.getCountIncludePad());
  return success();
}

/// `lhs[..., m, k] x rhs[..., k, n]` as one GEMM step over at most two
/// levels of batch, reading transposed operands in place.
LogicalResult StepBuilder::visitMatmul(MatmulOp mm) {
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
  FailureOr<Value> a = materialize(lhs.stored), bm = materialize(rhs.stored);
  FailureOr<Value> bias = epilogue ? materialize(epilogue->bias) : FailureOr<Value>(Value());
  FailureOr<Value> added =
      residual ? materialize(residual->residual) : FailureOr<Value>(Value());
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
  FailureOr<Value> c = result(written);
  if (failed(a) || failed(bm) || failed(bias) || failed(added) || failed(c))
    return failure();
  auto i64 = [&](int64_t v) { return b.getI64IntegerAttr(v); };
  // The layout attributes are set below where they are not the defaults.
  auto gemm = [&](Value a, Value bm, Value bias, Value residual, bool transA, bool transB,
                  int64_t m, int64_t n, int64_t k) {
    return exec::GemmOp::create(b, mm.getLoc(), stepName(mm), a, bm, bias, residual, *c,
                                transA, transB, m, n, k, nullptr, nullptr, nullptr, nullptr,
                                nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                nullptr, nullptr);
  };
  if (transposed) {
    // n x m = op(B)^T op(A)^T: B's storage read the other way round first.
    RankedTensorType lt = tensorType(mm.getLhs()), ot = tensorType(mm.getResult());
    auto g = gemm(*bm, *a, Value(), Value(), !rhs.trans, !lhs.trans, ot.getDimSize(1),
                  ot.getDimSize(0), lt.getDimSize(1));
    g.setLdaAttr(i64(rhs.ld)), g.setLdbAttr(i64(lhs.ld)), g.setLdcAttr(i64(ot.getDimSize(0)));
    return success();
  }
  RankedTensorType lt = tensorType(mm.getLhs()), rt = tensorType(mm.getRhs()),
                   ot = tensorType(mm.getResult());
  int64_t m = lt.getDimSize(lt.getRank() - 2), k = lt.getShape().back(),
          n = ot.getShape().back();
  auto g = gemm(*a, *bm, *bias, *added, lhs.trans, rhs.trans, m, n, k);
  g.setLdaAttr(i64(lhs.ld)), g.setLdbAttr(i64(rhs.ld)), g.setLdcAttr(i64(n));

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
      levels.insert(levels.begin(),
                    {batchShape[d], strideIn(lhs, lt, d), strideIn(rhs, rt, d), cStride});
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
                          << lt << " x " << rt;
  if (levels.size() == 1 && levels[0].b == 0 && !lhs.trans && levels[0].a == m * lhs.ld) {
    // A's matrices follow one another and B is shared: one product of
    // batch * m rows.
    g.setMAttr(i64(levels[0].size * m));
    return success();
  }
  if (!levels.empty()) {
    const Level &in = levels.back();
    g.setBatchAttr(i64(in.size));
    g.setStrideAAttr(i64(in.a)), g.setStrideBAttr(i64(in.b)), g.setStrideCAttr(i64(in.c));
  }
  if (levels.size() == 2) {
    const Level &o = levels.front();
    g.setBatchOuterAttr(i64(o.size));
    g.setOuterStrideAAttr(i64(o.a)), g.setOuterStrideBAttr(i64(o.b));
    g.setOuterStrideCAttr(i64(o.c));
  }
  return success();
}
