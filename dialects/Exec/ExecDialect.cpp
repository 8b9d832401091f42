// The exec dialect: registration and the verifiers that keep a step program
// serializable (docs/program-format.md).
#include "colo/Dialect/Exec/ExecOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace colo::exec;

#include "colo/Dialect/Exec/ExecDialect.cpp.inc"
#include "colo/Dialect/Exec/ExecEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "colo/Dialect/Exec/ExecAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "colo/Dialect/Exec/ExecTypes.cpp.inc"

#define GET_OP_CLASSES
#include "colo/Dialect/Exec/ExecOps.cpp.inc"

void ExecDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "colo/Dialect/Exec/ExecOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "colo/Dialect/Exec/ExecAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "colo/Dialect/Exec/ExecTypes.cpp.inc"
      >();
}

Value colo::exec::storageOf(Value buffer) {
  if (auto view = buffer.getDefiningOp<ViewOp>())
    return view.getSource();
  return buffer;
}

bool colo::exec::isStep(Operation *op) {
  return !isa<BufferOp, ViewOp, FreeOp, ReturnOp>(op);
}

MemRefType colo::exec::bufferType(ArrayRef<int64_t> shape, Type element, MemorySpace space) {
  return MemRefType::get(shape, element, MemRefLayoutAttrInterface(),
                         MemorySpaceAttr::get(element.getContext(), space));
}

int64_t colo::exec::byteSize(MemRefType t) {
  int64_t bits = t.getElementType().getIntOrFloatBitWidth();
  return t.getNumElements() * (bits == 1 ? 1 : bits / 8);
}

namespace {
std::optional<MemorySpace> spaceOf(Type t) {
  if (auto space = dyn_cast_or_null<MemorySpaceAttr>(cast<MemRefType>(t).getMemorySpace()))
    return space.getValue();
  return std::nullopt;
}

/// Buffers are dense and row-major, in an exec memory space.
LogicalResult verifyBuffer(Operation *op, Type t) {
  auto memref = cast<MemRefType>(t);
  if (!memref.getLayout().isIdentity())
    return op->emitOpError("buffers are dense and row-major: ") << t;
  if (!spaceOf(t))
    return op->emitOpError("a buffer's type names its memory space (#exec.space<...>): ") << t;
  return success();
}

/// The sizes of a convolution's or a pooling step's geometry attributes.
template <typename Op> LogicalResult verifyWindow(Op op) {
  if (op.getInputShape().size() != 4 || op.getWindow().size() != 2 ||
      op.getOutputSize().size() != 2 || op.getStrides().size() != 2 ||
      op.getPadding().size() != 4 || op.getDilations().size() != 2)
    return op.emitOpError("input_shape has 4 sizes, window, output_size, strides and "
                          "dilations 2, padding 4");
  return success();
}
} // namespace

LogicalResult ProgramOp::verifyRegions() {
  if (getBlock().empty() || !isa<ReturnOp>(getBlock().back()))
    return emitOpError("ends with exec.return");
  if (getMeshShape().has_value() != getMeshAxes().has_value() ||
      (getMeshShape() && getMeshShape()->size() != getMeshAxes()->size()))
    return emitOpError("mesh_shape and mesh_axes name the same axes");
  return success();
}

LogicalResult BufferOp::verify() {
  if (failed(verifyBuffer(*this, getType())))
    return failure();
  bool persistent = getKind() == BufferKind::state || getKind() == BufferKind::constant;
  if (getOffset() && getKind() != BufferKind::temp)
    return emitOpError("only temp buffers have an arena offset");
  if (getKind() == BufferKind::temp && spaceOf(getType()) == MemorySpace::pinned_host)
    return emitOpError("temp buffers live in an arena, in device or host memory");
  if ((getShard() || getParamName() || getStepCounter()) && !persistent)
    return emitOpError("shards, weight names and the step counter are state");
  if (getIntMax() && getKind() != BufferKind::input)
    return emitOpError("only inputs have a bound on their values");
  if (getIntIgnored() && !getIntMax())
    return emitOpError("int_ignored is an exception to an int_max");
  return success();
}

LogicalResult ViewOp::verify() {
  if (!getSource().getDefiningOp<BufferOp>())
    return emitOpError("views a buffer's storage (exec.buffer), not another view");
  if (failed(verifyBuffer(*this, getType())))
    return failure();
  if (spaceOf(getType()) != spaceOf(getSource().getType()))
    return emitOpError("stays in its source's memory space");
  if (byteSize(getType()) > byteSize(getSource().getType()))
    return emitOpError("is larger than its source: ")
           << getType() << " views " << getSource().getType();
  return success();
}

LogicalResult KernelOp::verify() {
  // A kernel runs where its buffers are: on the device, or on the host.
  std::optional<MemorySpace> space;
  for (Value v : getOperands())
    if (isa<MemRefType>(v.getType())) {
      std::optional<MemorySpace> s = spaceOf(v.getType());
      if (space && s != space)
        return emitOpError("reads and writes buffers of one memory space, not ")
               << stringifyMemorySpace(*space) << " and " << stringifyMemorySpace(*s);
      space = s;
    }
  if (getPieces() && *getPieces() > 1 &&
      (!getPieceBytes() ||
       getPieceBytes()->size() != getInputs().size() + getOutputs().size()))
    return emitOpError("in pieces names one piece size per argument");
  return success();
}

LogicalResult Conv2dOp::verify() {
  if (failed(verifyWindow(*this)))
    return failure();
  if (getBias() && getMode() != ConvMode::forward)
    return emitOpError("only a forward convolution adds a bias");
  return success();
}

LogicalResult Pool2dOp::verify() {
  if (failed(verifyWindow(*this)))
    return failure();
  bool forward = getMode() == PoolMode::max_forward || getMode() == PoolMode::avg_forward;
  bool readsX = getMode() != PoolMode::avg_backward;
  if (bool(getX()) != readsX || bool(getY()) != forward || bool(getDx()) == forward ||
      bool(getDy()) == forward)
    return emitOpError("forward pooling takes x and y, max_backward x, dy and dx, "
                       "avg_backward dy and dx");
  return success();
}

LogicalResult CopyOp::verify() {
  if (byteSize(getSrc().getType()) != byteSize(getDst().getType()))
    return emitOpError("copies between buffers of the same byte size");
  return success();
}

LogicalResult TransferOp::verify() {
  if (byteSize(getSrc().getType()) != byteSize(getDst().getType()))
    return emitOpError("moves between buffers of the same byte size");
  if (spaceOf(getSrc().getType()) == spaceOf(getDst().getType()))
    return emitOpError("moves between two memory spaces (exec.copy copies within one)");
  return success();
}
