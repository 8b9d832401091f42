// state.safetensors: the initial value of every STATE buffer, in the
// buffer's element type, read by the interpreter (inline data, external data
// files); fills and #colo.init specs become the buffers' Initializer, which
// the runtime makes when a session starts.
#include "StateWriter.h"

#include "colo/Dialect/Colo/ColoDialect.h"
#include "colo/Dialect/Colo/ColoOps.h"
#include "colo/Interpreter/Interpreter.h"
#include "colo/Runtime/Error.h"
#include "colo/Runtime/Safetensors.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>

#include <optional>
#include <set>

using namespace mlir;
using namespace colo;
namespace rt = colo::runtime;

namespace {
/// Round-to-nearest-even truncation of an f32 to its upper 16 bits.
uint16_t toBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f))
    return 0x7fc0;
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

/// `values` in the runtime's little-endian encoding of `dtype`.
std::vector<char> encode(const std::vector<double> &values, rt::DType dtype) {
  std::vector<char> out;
  auto put = [&](auto v) {
    const char *p = reinterpret_cast<const char *>(&v);
    out.insert(out.end(), p, p + sizeof(v));
  };
  for (double v : values) {
    switch (dtype) {
    case rt::F32:
      put(static_cast<float>(v));
      break;
    case rt::F64:
      put(v);
      break;
    case rt::BF16:
      put(toBf16(static_cast<float>(v)));
      break;
    case rt::I64:
      put(static_cast<int64_t>(v));
      break;
    case rt::I32:
      put(static_cast<int32_t>(v));
      break;
    case rt::I8:
      put(static_cast<int8_t>(v));
      break;
    case rt::BOOL:
      put(static_cast<uint8_t>(v != 0));
      break;
    default:
      put(static_cast<float>(v)); // F16 is rejected before encoding.
    }
  }
  return out;
}
} // namespace

std::optional<rt::Initializer> colo::initializerOf(GlobalOp global, rt::DType dtype) {
  Attribute init = global.getInitialValueAttr();
  Type element = global.getTensorType().getElementType();
  rt::Initializer spec;
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(init); dense && dense.isSplat()) {
    if (auto f = dyn_cast<FloatType>(element)) {
      if (!f.isF32() && !f.isF64() && !f.isBF16())
        return std::nullopt;
      spec.set_a(dense.getSplatValue<APFloat>().convertToDouble());
    } else if (element.isSignlessInteger(1)) {
      spec.set_a(dense.getSplatValue<bool>() ? 1.0 : 0.0);
    } else if (element.isSignlessInteger()) {
      int64_t v = dense.getSplatValue<APInt>().getSExtValue();
      if (v > (int64_t(1) << 53) || v < -(int64_t(1) << 53))
        return std::nullopt; // not exact as a double
      spec.set_a(double(v));
    } else {
      return std::nullopt;
    }
    spec.set_distribution(rt::Initializer::FILL);
    return spec;
  }
  auto drawn = dyn_cast_or_null<InitializerAttr>(init);
  bool sameType = (element.isF32() && dtype == rt::F32) ||
                  (element.isF64() && dtype == rt::F64) ||
                  (element.isBF16() && dtype == rt::BF16);
  if (!drawn || !sameType)
    return std::nullopt;
  StringRef dist = drawn.getDistribution();
  if (dist == "zeros" || dist == "ones") {
    spec.set_distribution(rt::Initializer::FILL);
    spec.set_a(dist == "ones" ? 1.0 : 0.0);
    return spec;
  }
  if (dist != "normal" && dist != "uniform")
    return std::nullopt; // the interpreter reports it
  spec.set_distribution(dist == "normal" ? rt::Initializer::NORMAL : rt::Initializer::UNIFORM);
  spec.set_a(drawn.getA().getValueAsDouble());
  spec.set_b(drawn.getB().getValueAsDouble());
  spec.set_seed(initializerSeed(global));
  return spec;
}
LogicalResult colo::writeInitialState(rt::Program &program, ModuleOp module,
                                      const std::string &path) {
  Interpreter reader(module);
  std::vector<std::vector<char>> storage;
  std::vector<rt::TensorView> views;
  // A pipeline's stages have their own buffers; each global is written once.
  std::vector<rt::Buffer *> buffers;
  std::set<std::string> seen;
  for (rt::Program &stage : *program.mutable_stages())
    for (rt::Buffer &b : *stage.mutable_buffers())
      buffers.push_back(&b);
  for (rt::Buffer &b : *program.mutable_buffers())
    buffers.push_back(&b);
  SymbolTable symbols(module);
  for (rt::Buffer *buffer : buffers) {
    rt::Buffer &b = *buffer;
    if (b.kind() != rt::Buffer::STATE)
      continue;
    bool alias = b.has_alias_of() && b.alias_of() >= 0;
    if (auto global = symbols.lookup<GlobalOp>(b.name()); global && !alias)
      if (std::optional<rt::Initializer> init = initializerOf(global, b.dtype())) {
        *b.mutable_init() = *init;
        continue;
      }
    if (!seen.insert(b.name()).second)
      continue;
    if (b.dtype() == rt::F16)
      return module.emitError() << "'" << b.name()
                                << "': f16 state is not supported by the CPU runtime";
    HostArray *value = reader.global(b.name());
    if (!value)
      return failure();
    storage.push_back(encode(value->data, b.dtype()));
    // A sharded buffer's file entry is the whole tensor; ranks take blocks.
    rt::Shape shape = b.has_shard()
                          ? rt::Shape(b.shard().full_shape().begin(), b.shard().full_shape().end())
                          : rt::Shape(b.shape().begin(), b.shape().end());
    views.push_back({b.name(), b.dtype(), shape, storage.back().data()});
  }
  try {
    rt::writeSafetensors(path, views);
  } catch (const rt::Error &e) {
    return module.emitError() << e.what();
  }
  return success();
}
