// Shape rules and verifiers of the colo ops.
#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace colo;
using colo::detail::windowOutput;

namespace {
RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

std::string str(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(shape, os);
  os << "]";
  return s;
}

LogicalResult inferBroadcast(std::optional<Location> loc, ValueRange operands,
                             Type elementType, SmallVectorImpl<Type> &inferred) {
  SmallVector<int64_t> shape;
  for (Value v : operands) {
    SmallVector<int64_t> next;
    if (failed(broadcastShapes(shape, tensorType(v).getShape(), next)))
      return emitOptionalError(loc, "operands are not broadcast-compatible: ",
                               str(shape), " vs ",
                               str(tensorType(v).getShape()));
    shape = std::move(next);
  }
  inferred.push_back(RankedTensorType::get(shape, elementType));
  return success();
}

LogicalResult inferElementwiseBinary(std::optional<Location> loc, Value lhs,
                                     Value rhs, Type resultElementType,
                                     SmallVectorImpl<Type> &inferred) {
  Type l = tensorType(lhs).getElementType(), r = tensorType(rhs).getElementType();
  if (l != r)
    return emitOptionalError(loc, "element type mismatch: ", l, " vs ", r);
  return inferBroadcast(loc, {lhs, rhs}, resultElementType ? resultElementType : l,
                        inferred);
}

/// Normalizes a possibly negative axis; fails if it is out of range.
FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    return failure();
  return axis < 0 ? axis + rank : axis;
}

/// The generated custom parsers call `inferReturnTypes` before inherent
/// attributes written in the attr-dict (`{keep_dims}`, `{strides = ...}`,
/// `{kernel = ...}`) are moved into the properties and before default values
/// are filled in (llvm/llvm-project#193284), so at parse time the adaptor sees
/// the former only in its attribute dictionary and the latter not at all.
/// Returns an adaptor whose properties are complete, so that inference sees
/// what the verifier later sees.
template <typename OpTy>
typename OpTy::Adaptor withInherentAttrs(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         typename OpTy::Adaptor adaptor) {
  typename OpTy::Properties props = adaptor.getProperties();
  DictionaryAttr attrs = adaptor.getAttributes();
  // Attributes of the wrong kind were rejected by the parser already.
  if (attrs && !attrs.empty())
    (void)OpTy::setPropertiesFromAttr(props, attrs, [&] {
      return emitError(loc.value_or(UnknownLoc::get(ctx)));
    });
  OpTy::populateDefaultProperties(OperationName(OpTy::getOperationName(), ctx),
                                  props);
  return typename OpTy::Adaptor(adaptor.getOperands(), attrs, props);
}

LogicalResult verifyAxis(Operation *op, int64_t axis, int64_t rank) {
  if (failed(normalizeAxis(axis, rank)))
    return op->emitOpError() << "axis " << axis << " out of range for rank "
                             << rank;
  return success();
}
} // namespace

LogicalResult colo::broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b,
                                    SmallVectorImpl<int64_t> &out) {
  size_t rank = std::max(a.size(), b.size());
  out.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1)
      return failure();
    out[i] = x == 1 ? y : x;
  }
  return success();
}

#define COLO_BINARY_INFER(OP)                                                  \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> loc, \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &inferred) {        \
    return inferElementwiseBinary(loc, adaptor.getLhs(), adaptor.getRhs(),     \
                                  Type(), inferred);                           \
  }
COLO_BINARY_INFER(AddOp)
COLO_BINARY_INFER(SubOp)
COLO_BINARY_INFER(MulOp)
COLO_BINARY_INFER(DivOp)
COLO_BINARY_INFER(PowOp)
COLO_BINARY_INFER(MaximumOp)
COLO_BINARY_INFER(MinimumOp)
#undef COLO_BINARY_INFER

LogicalResult CompareOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferElementwiseBinary(loc, adaptor.getLhs(), adaptor.getRhs(),
                                IntegerType::get(ctx, 1), inferred);
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  Type t = tensorType(adaptor.getTrueValue()).getElementType();
  Type f = tensorType(adaptor.getFalseValue()).getElementType();
  if (t != f)
    return emitOptionalError(loc, "element type mismatch: ", t, " vs ", f);
  return inferBroadcast(loc, adaptor.getOperands(), t, inferred);
}

//===----------------------------------------------------------------------===//
// Model state
//===----------------------------------------------------------------------===//

SmallVector<int64_t> GlobalShard::splitDims() const {
  SmallVector<int64_t> dims;
  for (auto [d, n] : llvm::enumerate(parts))
    if (n > 1)
      dims.push_back(d);
  return dims;
}

std::optional<GlobalShard> colo::getGlobalShard(GlobalOp global) {
  ShardAttr attr = global.getShardAttr();
  if (!attr)
    return std::nullopt;
  GlobalShard shard;
  for (Attribute dim : attr.getSplitAxes())
    shard.axes.emplace_back(cast<ArrayAttr>(dim).getAsValueRange<StringAttr>());
  shard.parts.assign(attr.getParts().begin(), attr.getParts().end());
  shard.groups = attr.getGroups();
  shard.flat = attr.getFlat();
  if (ArrayAttr flatAxes = attr.getFlatAxes())
    shard.flatAxes.assign(flatAxes.getAsValueRange<StringAttr>().begin(),
                          flatAxes.getAsValueRange<StringAttr>().end());
  shard.flatParts = attr.getFlatParts();
  return shard;
}

ShardAttr ShardAttr::split(MLIRContext *context, int64_t rank, int64_t dim, StringRef axis,
                           int64_t parts, int64_t groups) {
  Builder b(context);
  SmallVector<Attribute> axes(rank, b.getArrayAttr({}));
  SmallVector<int64_t> blocks(rank, 1);
  axes[dim] = b.getStrArrayAttr({axis});
  blocks[dim] = parts;
  return get(context, b.getArrayAttr(axes), blocks, groups, false, nullptr, 1);
}

ShardAttr ShardAttr::flattened(MLIRContext *context, StringRef axis, int64_t parts) {
  Builder b(context);
  return get(context, b.getArrayAttr({b.getStrArrayAttr({axis})}), {parts}, 1, true, nullptr,
             1);
}

ShardAttr ShardAttr::flattenedBlock(ShardAttr split, StringRef axis, int64_t parts) {
  Builder b(split.getContext());
  return get(split.getContext(), split.getSplitAxes(), split.getParts(), split.getGroups(),
             false, b.getStrArrayAttr({axis}), parts);
}

LogicalResult ShardAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                ArrayAttr splitAxes, ArrayRef<int64_t> parts, int64_t groups,
                                bool flat, ArrayAttr flatAxes, int64_t flatParts) {
  if (!splitAxes || splitAxes.empty() || splitAxes.size() != parts.size())
    return emitError() << "a shard has one entry of split_axes and of parts per dimension, "
                          "got "
                       << (splitAxes ? splitAxes.size() : 0) << " and " << parts.size();
  llvm::StringSet<> seen;
  int64_t split = 0;
  for (auto [axes, n] : llvm::zip(splitAxes, parts)) {
    auto names = dyn_cast<ArrayAttr>(axes);
    if (!names || !llvm::all_of(names, [](Attribute a) { return isa<StringAttr>(a); }))
      return emitError() << "a shard's split_axes entry is a list of mesh axis names, got "
                         << axes;
    for (StringRef name : names.getAsValueRange<StringAttr>())
      if (!seen.insert(name).second)
        return emitError() << "mesh axis \"" << name << "\" splits more than one dimension";
    if (n < 1 || (names.empty() && n != 1) || (!names.empty() && n == 1))
      return emitError() << "a dimension split over " << names << " has parts " << n
                         << " (at least 2 where split, 1 where whole)";
    split += !names.empty();
  }
  if (split == 0)
    return emitError() << "a shard splits at least one dimension";
  if (groups < 1 || (groups > 1 && split > 2))
    return emitError() << "a shard's groups (" << groups
                       << ") are at least 1, and more only with one or two split dimensions";
  if (flat && (parts.size() != 1 || groups != 1))
    return emitError() << "a flat shard has one entry, for the flattened tensor, and no groups";
  if (!flatAxes)
    return flatParts == 1 ? success()
                          : emitError() << "a shard's flat_parts (" << flatParts
                                        << ") come with its flat_axes";
  if (flat)
    return emitError() << "a flat shard's block is not flattened again (flat_axes)";
  if (flatAxes.empty() || flatParts < 2)
    return emitError() << "a shard's flat_axes name at least one mesh axis and its "
                          "flat_parts are at least 2, got "
                       << flatAxes << " and " << flatParts;
  for (Attribute axis : flatAxes) {
    auto name = dyn_cast<StringAttr>(axis);
    if (!name)
      return emitError() << "a shard's flat_axes are mesh axis names, got " << axis;
    if (!seen.insert(name.getValue()).second)
      return emitError() << "mesh axis " << name << " both splits and flattens";
  }
  return success();
}

RankedTensorType colo::localType(GlobalOp global) {
  RankedTensorType type = global.getTensorType();
  std::optional<GlobalShard> shard = getGlobalShard(global);
  if (!shard)
    return type;
  if (shard->flat)
    return RankedTensorType::get(
        {(type.getNumElements() + shard->parts[0] - 1) / shard->parts[0]},
        type.getElementType());
  SmallVector<int64_t> shape(type.getShape());
  for (auto [size, n] : llvm::zip(shape, shard->parts))
    size /= n;
  RankedTensorType block = type.clone(shape);
  if (shard->flatAxes.empty())
    return block;
  return RankedTensorType::get(
      {(block.getNumElements() + shard->flatParts - 1) / shard->flatParts},
      type.getElementType());
}

LogicalResult GlobalOp::verify() {
  if (ShardAttr shard = getShardAttr(); shard && !shard.getFlat()) {
    RankedTensorType type = getTensorType();
    if (static_cast<int64_t>(shard.getParts().size()) != type.getRank())
      return emitOpError() << "shard " << shard << " describes a rank-"
                           << shard.getParts().size() << " tensor, not " << type;
    // The groups are on the last split dimension.
    int64_t grouped = -1;
    for (auto [d, n] : llvm::enumerate(shard.getParts()))
      if (n > 1)
        grouped = int64_t(d);
    for (auto [d, n] : llvm::enumerate(shard.getParts()))
      if (type.getDimSize(d) % (n * (int64_t(d) == grouped ? shard.getGroups() : 1)))
        return emitOpError() << "shard " << shard << " does not divide " << type
                             << ": dimension " << d << " must be a multiple of parts * groups";
  }
  Attribute value = getInitialValueAttr();
  if (!value)
    return success();
  RankedTensorType type = getTensorType();
  if (auto elements = dyn_cast<ElementsAttr>(value)) {
    if (elements.getType() != type)
      return emitOpError() << "initial value type " << elements.getType()
                           << " does not match global type " << type;
    return success();
  }
  if (auto external = dyn_cast<ExternalDataAttr>(value)) {
    // Element types without a storage size (index, opaque types) cannot be
    // read from a file; complex numbers take two of their parts.
    Type elementType = type.getElementType();
    if (auto complex = dyn_cast<ComplexType>(elementType))
      elementType = complex.getElementType();
    if (!elementType.isIntOrFloat())
      return emitOpError() << "external data needs integer, float or complex "
                              "elements, got "
                           << type;
    int64_t bits = elementType.getIntOrFloatBitWidth() *
                   (isa<ComplexType>(type.getElementType()) ? 2 : 1);
    int64_t expected = (type.getNumElements() * bits + 7) / 8;
    if (external.getLength() != expected)
      return emitOpError() << "external data length " << external.getLength()
                           << " bytes does not match " << type << " ("
                           << expected << " bytes)";
    if (external.getOffset() < 0)
      return emitOpError() << "external data offset is negative: "
                           << external.getOffset();
    return success();
  }
  if (isa<InitializerAttr>(value))
    return success();
  return emitOpError() << "initial value must be elements, #colo.external or "
                          "#colo.init, got "
                       << value;
}

LogicalResult
GlobalLoadOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto global =
      symbolTable.lookupNearestSymbolFrom<GlobalOp>(*this, getGlobalAttr());
  if (!global)
    return emitOpError() << "'" << getGlobal() << "' does not name a colo.global";
  if (localType(global) != getType())
    return emitOpError() << "result type " << getType()
                         << " does not match global type " << localType(global);
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult ClampOp::verify() {
  if (getMin().convertToDouble() > getMax().convertToDouble())
    return emitOpError() << "min " << getMin().convertToDouble()
                         << " is greater than max " << getMax().convertToDouble();
  return success();
}

LogicalResult ConvertOp::verify() {
  if (tensorType(getInput()).getShape() != getType().getShape())
    return emitOpError() << "shape mismatch: " << getInput().getType() << " vs "
                         << getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  RankedTensorType lhs = tensorType(adaptor.getLhs());
  RankedTensorType rhs = tensorType(adaptor.getRhs());
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return emitOptionalError(loc, "operands must have rank >= 2: ", lhs, " vs ",
                             rhs);
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "element type mismatch: ",
                             lhs.getElementType(), " vs ", rhs.getElementType());
  int64_t k = lhs.getShape().back(), k2 = rhs.getShape()[rhs.getRank() - 2];
  if (k != k2)
    return emitOptionalError(loc, "contraction dimension mismatch: ", k, " vs ",
                             k2);
  SmallVector<int64_t> batch;
  if (failed(broadcastShapes(lhs.getShape().drop_back(2),
                             rhs.getShape().drop_back(2), batch)))
    return emitOptionalError(loc, "batch dimensions are not broadcast-compatible: ",
                             str(lhs.getShape().drop_back(2)), " vs ",
                             str(rhs.getShape().drop_back(2)));
  batch.push_back(lhs.getShape()[lhs.getRank() - 2]);
  batch.push_back(rhs.getShape().back());
  inferred.push_back(RankedTensorType::get(batch, lhs.getElementType()));
  return success();
}

int64_t colo::detail::windowOutput(int64_t in, int64_t padBefore,
                                   int64_t padAfter, int64_t kernel,
                                   int64_t stride, int64_t dilation) {
  int64_t extent = dilation * (kernel - 1) + 1;
  int64_t span = in + padBefore + padAfter - extent;
  return span < 0 ? 0 : span / stride + 1;
}

static LogicalResult checkWindowAttrs(std::optional<Location> loc,
                                      ArrayRef<int64_t> strides,
                                      ArrayRef<int64_t> padding,
                                      ArrayRef<int64_t> dilations) {
  if (strides.size() != 2 || dilations.size() != 2 || padding.size() != 4)
    return emitOptionalError(loc, "expected 2 strides, 2 dilations and 4 pads, got ",
                             strides.size(), ", ", dilations.size(), " and ",
                             padding.size());
  if (llvm::any_of(strides, [](int64_t s) { return s < 1; }) ||
      llvm::any_of(dilations, [](int64_t s) { return s < 1; }) ||
      llvm::any_of(padding, [](int64_t s) { return s < 0; }))
    return emitOptionalError(loc, "strides and dilations must be positive and "
                                  "padding non-negative");
  return success();
}

LogicalResult Conv2dOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  adaptor = withInherentAttrs<Conv2dOp>(ctx, loc, adaptor);
  RankedTensorType in = tensorType(adaptor.getInput());
  RankedTensorType w = tensorType(adaptor.getFilter());
  if (in.getRank() != 4 || w.getRank() != 4)
    return emitOptionalError(loc, "input and filter must have rank 4: ", in,
                             " vs ", w);
  ArrayRef<int64_t> strides = adaptor.getStrides(), pad = adaptor.getPadding(),
                    dil = adaptor.getDilations();
  if (failed(checkWindowAttrs(loc, strides, pad, dil)))
    return failure();
  int64_t groups = adaptor.getGroups();
  if (groups < 1 || w.getDimSize(0) % groups != 0)
    return emitOptionalError(loc, "output channels ", w.getDimSize(0),
                             " not divisible by groups ", groups);
  if (in.getDimSize(1) != w.getDimSize(1) * groups)
    return emitOptionalError(loc, "input channel mismatch: ", in.getDimSize(1),
                             " vs ", w.getDimSize(1), " x ", groups, " groups");
  if (Value bias = adaptor.getBias()) {
    RankedTensorType b = tensorType(bias);
    if (b.getRank() != 1 || b.getDimSize(0) != w.getDimSize(0))
      return emitOptionalError(loc, "bias shape mismatch: ", b, " vs ",
                               w.getDimSize(0), " output channels");
  }
  int64_t h = windowOutput(in.getDimSize(2), pad[0], pad[2], w.getDimSize(2),
                           strides[0], dil[0]);
  int64_t wd = windowOutput(in.getDimSize(3), pad[1], pad[3], w.getDimSize(3),
                            strides[1], dil[1]);
  inferred.push_back(RankedTensorType::get(
      {in.getDimSize(0), w.getDimSize(0), h, wd}, in.getElementType()));
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  RankedTensorType q = tensorType(adaptor.getQuery());
  RankedTensorType k = tensorType(adaptor.getKey());
  RankedTensorType v = tensorType(adaptor.getValue());
  if (q.getRank() != 4 || k.getRank() != 4 || v.getRank() != 4)
    return emitOptionalError(loc, "query, key and value must have rank 4: ",
                             q, " vs ", k, " vs ", v);
  if (q.getDimSize(0) != k.getDimSize(0) || k.getDimSize(0) != v.getDimSize(0))
    return emitOptionalError(loc, "batch mismatch: ", q.getDimSize(0), " vs ",
                             k.getDimSize(0), " vs ", v.getDimSize(0));
  if (k.getDimSize(1) != v.getDimSize(1) ||
      q.getDimSize(1) % k.getDimSize(1) != 0)
    return emitOptionalError(loc, "query heads ", q.getDimSize(1),
                             " not a multiple of key/value heads ",
                             k.getDimSize(1), " / ", v.getDimSize(1));
  if (q.getDimSize(3) != k.getDimSize(3))
    return emitOptionalError(loc, "head dimension mismatch: ", q.getDimSize(3),
                             " vs ", k.getDimSize(3));
  if (k.getDimSize(2) != v.getDimSize(2))
    return emitOptionalError(loc, "key/value length mismatch: ", k.getDimSize(2),
                             " vs ", v.getDimSize(2));
  SmallVector<int64_t> shape{q.getDimSize(0), q.getDimSize(1), q.getDimSize(2),
                             v.getDimSize(3)};
  if (Value mask = adaptor.getMask()) {
    SmallVector<int64_t> scores{shape[0], shape[1], shape[2], k.getDimSize(2)};
    SmallVector<int64_t> out;
    if (failed(broadcastShapes(tensorType(mask).getShape(), scores, out)) ||
        ArrayRef<int64_t>(out) != ArrayRef<int64_t>(scores))
      return emitOptionalError(loc, "mask shape ", str(tensorType(mask).getShape()),
                               " does not broadcast to scores ", str(scores));
  }
  inferred.push_back(RankedTensorType::get(shape, q.getElementType()));
  return success();
}

LogicalResult AttentionOp::verify() {
  double p = getDropout().convertToDouble();
  if (!(p >= 0 && p < 1))
    return emitOpError() << "dropout " << p << " outside [0, 1)";
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), getType().getRank());
}
LogicalResult CumSumOp::verify() {
  return verifyAxis(*this, getAxis(), getType().getRank());
}
LogicalResult LogSoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), getType().getRank());
}

/// scale and bias of layer_norm / rms_norm cover the normalized dimensions.
static LogicalResult verifyNormParams(Operation *op, RankedTensorType input,
                                      int64_t axis, ValueRange params) {
  if (failed(verifyAxis(op, axis, input.getRank())))
    return failure();
  ArrayRef<int64_t> normalized =
      input.getShape().drop_front(*normalizeAxis(axis, input.getRank()));
  for (Value p : params) {
    if (!p)
      continue;
    if (tensorType(p).getShape() != normalized)
      return op->emitOpError() << "parameter shape " << str(tensorType(p).getShape())
                               << " does not match normalized shape "
                               << str(normalized);
    if (tensorType(p).getElementType() != input.getElementType())
      return op->emitOpError() << "parameter element type "
                               << tensorType(p).getElementType()
                               << " does not match input " << input.getElementType();
  }
  return success();
}

LogicalResult LayerNormOp::verify() {
  return verifyNormParams(*this, getType(), getAxis(), {getScale(), getBias()});
}
LogicalResult RmsNormOp::verify() {
  return verifyNormParams(*this, getType(), getAxis(), {getScale()});
}

LogicalResult BatchNormOp::verify() {
  RankedTensorType in = getResult().getType();
  if (in.getRank() < 2)
    return emitOpError() << "input must have rank >= 2, got " << in;
  RankedTensorType p = tensorType(getScale());
  if (p.getRank() != 1 || p.getDimSize(0) != in.getDimSize(1))
    return emitOpError() << "channel mismatch: parameters " << p << " vs "
                         << in.getDimSize(1) << " input channels";
  if (getMomentum().convertToDouble() < 0 || getMomentum().convertToDouble() > 1)
    return emitOpError() << "momentum " << getMomentum().convertToDouble()
                         << " outside [0, 1]";
  if (static_cast<bool>(getSyncGrid()) != static_cast<bool>(getSyncAxes()))
    return emitOpError("needs both sync_grid and sync_axes, or neither");
  return success();
}

LogicalResult DropoutOp::verify() {
  double r = getRatio().convertToDouble();
  if (r < 0 || r >= 1)
    return emitOpError() << "ratio " << r << " outside [0, 1)";
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions and pooling
//===----------------------------------------------------------------------===//

static LogicalResult inferReduce(std::optional<Location> loc, Value input,
                                 ArrayRef<int64_t> dims, bool keepDims,
                                 SmallVectorImpl<Type> &inferred) {
  RankedTensorType t = tensorType(input);
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (d < 0 || d >= t.getRank())
      return emitOptionalError(loc, "reduction dimension ", d,
                               " out of range for rank ", t.getRank());
    if (i > 0 && dims[i - 1] >= d)
      return emitOptionalError(loc, "reduction dimensions must be sorted and "
                                    "unique: ",
                               str(dims));
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < t.getRank(); ++i) {
    if (!llvm::is_contained(dims, i))
      shape.push_back(t.getDimSize(i));
    else if (keepDims)
      shape.push_back(1);
  }
  inferred.push_back(RankedTensorType::get(shape, t.getElementType()));
  return success();
}

#define COLO_REDUCE_INFER(OP)                                                  \
  LogicalResult OP::inferReturnTypes(MLIRContext *ctx,                         \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &inferred) {        \
    adaptor = withInherentAttrs<OP>(ctx, loc, adaptor);                        \
    if (!adaptor.getProperties().dims)                                         \
      return emitOptionalError(loc, "requires attribute 'dims'");              \
    return inferReduce(loc, adaptor.getInput(), adaptor.getDims(),             \
                       adaptor.getKeepDims(), inferred);                       \
  }
COLO_REDUCE_INFER(ReduceSumOp)
COLO_REDUCE_INFER(ReduceMeanOp)
COLO_REDUCE_INFER(ReduceMaxOp)
#undef COLO_REDUCE_INFER

template <typename OpTy>
static LogicalResult inferPool(MLIRContext *ctx, std::optional<Location> loc,
                               typename OpTy::Adaptor adaptor,
                               SmallVectorImpl<Type> &inferred) {
  adaptor = withInherentAttrs<OpTy>(ctx, loc, adaptor);
  if (!adaptor.getProperties().kernel)
    return emitOptionalError(loc, "requires attribute 'kernel'");
  RankedTensorType in = tensorType(adaptor.getInput());
  if (in.getRank() != 4)
    return emitOptionalError(loc, "input must have rank 4, got ", in);
  ArrayRef<int64_t> k = adaptor.getKernel(), s = adaptor.getStrides(),
                    p = adaptor.getPadding();
  SmallVector<int64_t> dil{1, 1};
  if (failed(checkWindowAttrs(loc, s, p, dil)))
    return failure();
  if (k.size() != 2 || k[0] < 1 || k[1] < 1)
    return emitOptionalError(loc, "expected 2 positive kernel sizes, got ", str(k));
  inferred.push_back(RankedTensorType::get(
      {in.getDimSize(0), in.getDimSize(1),
       windowOutput(in.getDimSize(2), p[0], p[2], k[0], s[0], 1),
       windowOutput(in.getDimSize(3), p[1], p[3], k[1], s[1], 1)},
      in.getElementType()));
  return success();
}

LogicalResult MaxPool2dOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return inferPool<MaxPool2dOp>(ctx, loc, adaptor, inferred);
}
LogicalResult AvgPool2dOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return inferPool<AvgPool2dOp>(ctx, loc, adaptor, inferred);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  RankedTensorType in = tensorType(getInput());
  if (in.getNumElements() != getType().getNumElements())
    return emitOpError() << "element count mismatch: " << in << " has "
                         << in.getNumElements() << ", " << getType() << " has "
                         << getType().getNumElements();
  if (in.getElementType() != getType().getElementType())
    return emitOpError() << "element type mismatch: " << in.getElementType()
                         << " vs " << getType().getElementType();
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  RankedTensorType in = tensorType(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  if (static_cast<int64_t>(perm.size()) != in.getRank())
    return emitOptionalError(loc, "permutation size ", perm.size(),
                             " does not match rank ", in.getRank());
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank() || seen[p])
      return emitOptionalError(loc, "not a permutation: ", str(perm));
    seen[p] = true;
    shape.push_back(in.getDimSize(p));
  }
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  RankedTensorType in = tensorType(adaptor.getInput());
  ArrayRef<int64_t> start = adaptor.getStart(), limit = adaptor.getLimit(),
                    stride = adaptor.getStride();
  if (static_cast<int64_t>(start.size()) != in.getRank() ||
      limit.size() != start.size() || stride.size() != start.size())
    return emitOptionalError(loc, "expected ", in.getRank(),
                             " starts, limits and strides, got ", start.size(),
                             ", ", limit.size(), " and ", stride.size());
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < in.getRank(); ++i) {
    if (stride[i] < 1 || start[i] < 0 || start[i] > limit[i] ||
        limit[i] > in.getDimSize(i))
      return emitOptionalError(loc, "dimension ", i, ": slice [", start[i], ", ",
                               limit[i], ") step ", stride[i],
                               " out of bounds for size ", in.getDimSize(i));
    shape.push_back((limit[i] - start[i] + stride[i] - 1) / stride[i]);
  }
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, "expected at least one input");
  RankedTensorType first = tensorType(inputs.front());
  FailureOr<int64_t> axis = normalizeAxis(adaptor.getAxis(), first.getRank());
  if (failed(axis) || first.getRank() == 0)
    return emitOptionalError(loc, "axis ",
                             static_cast<int64_t>(adaptor.getAxis()),
                             " out of range for rank ", first.getRank());
  SmallVector<int64_t> shape(first.getShape());
  shape[*axis] = 0;
  for (Value v : inputs) {
    RankedTensorType t = tensorType(v);
    if (t.getElementType() != first.getElementType())
      return emitOptionalError(loc, "element type mismatch: ",
                               first.getElementType(), " vs ", t.getElementType());
    if (t.getRank() != first.getRank())
      return emitOptionalError(loc, "rank mismatch: ", first, " vs ", t);
    for (int64_t i = 0; i < t.getRank(); ++i)
      if (i != *axis && t.getDimSize(i) != first.getDimSize(i))
        return emitOptionalError(loc, "dimension ", i, " mismatch: ", first,
                                 " vs ", t);
    shape[*axis] += t.getDimSize(*axis);
  }
  inferred.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult BroadcastToOp::verify() {
  RankedTensorType in = tensorType(getInput());
  SmallVector<int64_t> out;
  if (in.getElementType() != getType().getElementType())
    return emitOpError() << "element type mismatch: " << in.getElementType()
                         << " vs " << getType().getElementType();
  if (failed(broadcastShapes(in.getShape(), getType().getShape(), out)) ||
      ArrayRef<int64_t>(out) != getType().getShape())
    return emitOpError() << "cannot broadcast " << in << " to " << getType();
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  RankedTensorType in = tensorType(adaptor.getInput());
  FailureOr<int64_t> axis = normalizeAxis(adaptor.getAxis(), in.getRank());
  if (failed(axis) || in.getRank() == 0)
    return emitOptionalError(loc, "axis ",
                             static_cast<int64_t>(adaptor.getAxis()),
                             " out of range for rank ", in.getRank());
  SmallVector<int64_t> shape(in.getShape().take_front(*axis));
  llvm::append_range(shape, tensorType(adaptor.getIndices()).getShape());
  llvm::append_range(shape, in.getShape().drop_front(*axis + 1));
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  RankedTensorType table = tensorType(adaptor.getTable());
  if (table.getRank() != 2)
    return emitOptionalError(loc, "table must have rank 2, got ", table);
  SmallVector<int64_t> shape(tensorType(adaptor.getIds()).getShape());
  shape.push_back(table.getDimSize(1));
  inferred.push_back(RankedTensorType::get(shape, table.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location>,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &inferred) {
  inferred.push_back(
      RankedTensorType::get({}, tensorType(adaptor.getLogits()).getElementType()));
  return success();
}

/// The logits, labels and label smoothing of the cross-entropy ops.
static LogicalResult verifyCrossEntropy(Operation *op, Value logitsValue, Value labelsValue,
                                        double smoothing) {
  RankedTensorType logits = tensorType(logitsValue);
  if (logits.getRank() != 2 && logits.getRank() != 3)
    return op->emitOpError() << "logits must be [N, C] or [B, S, C], got " << logits;
  ArrayRef<int64_t> positions = logits.getShape().drop_back();
  ArrayRef<int64_t> labels = tensorType(labelsValue).getShape();
  if (labels != positions)
    return op->emitOpError() << "label shape " << str(labels)
                             << " does not match logits shape " << str(logits.getShape())
                             << " without its class dimension " << str(positions);
  if (!(smoothing >= 0 && smoothing < 1))
    return op->emitOpError() << "label_smoothing " << smoothing << " outside [0, 1)";
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  return verifyCrossEntropy(*this, getLogits(), getLabels(),
                            getLabelSmoothing().convertToDouble());
}

LogicalResult CrossEntropyRowsOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                                   Adaptor adaptor,
                                                   SmallVectorImpl<Type> &inferred) {
  inferred.push_back(tensorType(adaptor.getLabels())
                         .clone(tensorType(adaptor.getLogits()).getElementType()));
  return success();
}

LogicalResult CrossEntropyRowsOp::verify() {
  return verifyCrossEntropy(*this, getLogits(), getLabels(),
                            getLabelSmoothing().convertToDouble());
}

LogicalResult CrossEntropyRowsBackwardOp::verify() {
  if (getScale().getType().getElementType() != getLogits().getType().getElementType())
    return emitOpError() << "scale " << getScale().getType()
                         << " is not of the logits' element type";
  return verifyCrossEntropy(*this, getLogits(), getLabels(),
                            getLabelSmoothing().convertToDouble());
}

LogicalResult MseLossOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  inferred.push_back(
      RankedTensorType::get({}, tensorType(adaptor.getPred()).getElementType()));
  return success();
}

LogicalResult MseLossOp::verify() {
  if (getPred().getType() != getTarget().getType())
    return emitOpError() << "pred and target types differ: " << getPred().getType()
                         << " vs " << getTarget().getType();
  return success();
}

/// `to host` / `to device` of colo.transfer.
static ParseResult parseTransferDirection(OpAsmParser &parser, UnitAttr &toHost) {
  StringRef where;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeyword(&where))
    return failure();
  if (where != "host" && where != "device")
    return parser.emitError(loc, "expected 'host' or 'device'");
  toHost = where == "host" ? parser.getBuilder().getUnitAttr() : nullptr;
  return success();
}

static void printTransferDirection(OpAsmPrinter &printer, Operation *, UnitAttr toHost) {
  printer << (toHost ? "host" : "device");
}

#define GET_OP_CLASSES
#include "colo/Dialect/Colo/ColoOps.cpp.inc"
