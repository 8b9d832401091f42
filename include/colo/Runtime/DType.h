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
float bf16ToFloat(uint16_t b);
uint16_t floatToBf16(float f);

/// Reads element `index` of `data` (of type `dtype`) as a double.
double readAsDouble(const void *data, DType dtype, int64_t index = 0);

} // namespace colo::runtime

#endif
