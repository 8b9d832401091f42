// state.safetensors: the initial value of every STATE buffer, in the
// buffer's element type, read by the interpreter (inline data, external data
// files, #colo.init specs).
#include "StateWriter.h"

#include "colo/Interpreter/Interpreter.h"
#include "colo/Runtime/Error.h"
#include "colo/Runtime/Safetensors.h"

#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>

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

LogicalResult colo::writeInitialState(const rt::Program &program, ModuleOp module,
                                      const std::string &path) {
  Interpreter reader(module);
  std::vector<std::vector<char>> storage;
  std::vector<rt::TensorView> views;
  // A pipeline's stages have their own buffers; each global is written once.
  std::vector<const rt::Buffer *> buffers;
  std::set<std::string> seen;
  for (const rt::Program &stage : program.stages())
    for (const rt::Buffer &b : stage.buffers())
      buffers.push_back(&b);
  for (const rt::Buffer &b : program.buffers())
    buffers.push_back(&b);
  for (const rt::Buffer *buffer : buffers) {
    const rt::Buffer &b = *buffer;
    if (b.kind() != rt::Buffer::STATE || !seen.insert(b.name()).second)
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
