//===- DType.h - Element types, shapes and half-precision floats -*- C++ -*-===//
//
// The runtime's element type is the schema's colo::runtime::DType (generated
// from runtime/Program.proto). These helpers give sizes and names, count
// elements and convert 16-bit floats, with no dependency beyond the schema.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_DTYPE_H
#define COLO_RUNTIME_DTYPE_H

#include "colo/Runtime/Program.pb.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace colo::runtime {

using Shape = std::vector<int64_t>;

/// Bytes per element.
int64_t dtypeSize(DType dtype);
/// Lower-case name for messages: "f32", "bf16", "i64", "bool".
const char *dtypeName(DType dtype);
/// The safetensors name: "F32", "BF16", "I64", "BOOL".
const char *safetensorsName(DType dtype);
/// Inverse of safetensorsName; nullopt for types the runtime does not know.
std::optional<DType> parseSafetensorsName(const std::string &name);
bool isFloat(DType dtype);

/// Product of the dimensions (1 for a scalar); -1 if a dimension is negative
/// or the product overflows int64.
int64_t numElements(const Shape &shape);
/// "[4, 784]".
std::string shapeString(const Shape &shape);
/// "f32 [4, 784]".
std::string typeString(DType dtype, const Shape &shape);

/// Conversions between float and the 16-bit formats (round to nearest even;
/// NaN stays NaN).
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
// bf16's are inline: the loops that widen and narrow whole tensors vectorize.
inline float bf16ToFloat(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
inline uint16_t floatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffff) > 0x7f800000)
    return uint16_t((bits >> 16) | 0x40); // quiet NaN
  uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return uint16_t((bits + rounding) >> 16);
}

/// Reads element `index` of `data` (of type `dtype`) as a double.
double readAsDouble(const void *data, DType dtype, int64_t index = 0);

} // namespace colo::runtime

#endif
