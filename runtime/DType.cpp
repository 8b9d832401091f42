//===- DType.cpp - Element types, shapes and half-precision floats --------===//

#include "colo/Runtime/DType.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace colo::runtime {

int64_t dtypeSize(DType dtype) {
  switch (dtype) {
  case F32:
  case I32:
    return 4;
  case F64:
  case I64:
    return 8;
  case BF16:
  case F16:
    return 2;
  case I8:
  case BOOL:
    return 1;
  default:
    return 0;
  }
}

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case F32:
    return "f32";
  case F64:
    return "f64";
  case BF16:
    return "bf16";
  case F16:
    return "f16";
  case I64:
    return "i64";
  case I32:
    return "i32";
  case I8:
    return "i8";
  case BOOL:
    return "bool";
  default:
    return "unknown";
  }
}

const char *safetensorsName(DType dtype) {
  switch (dtype) {
  case F32:
    return "F32";
  case F64:
    return "F64";
  case BF16:
    return "BF16";
  case F16:
    return "F16";
  case I64:
    return "I64";
  case I32:
    return "I32";
  case I8:
    return "I8";
  case BOOL:
    return "BOOL";
  default:
    return "?";
  }
}

std::optional<DType> parseSafetensorsName(const std::string &name) {
  for (DType d : {F32, F64, BF16, F16, I64, I32, I8, BOOL})
    if (name == safetensorsName(d))
      return d;
  return std::nullopt;
}

bool isFloat(DType dtype) {
  return dtype == F32 || dtype == F64 || dtype == BF16 || dtype == F16;
}

int64_t numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      return -1;
    n *= d;
  }
  return n;
}

std::string shapeString(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string typeString(DType dtype, const Shape &shape) {
  return std::string(dtypeName(dtype)) + " " + shapeString(shape);
}

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000 | (mant << 13); // inf or NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else { // subnormal: normalize
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while (!(mant & 0x400));
    bits = sign | (uint32_t(112 - e) << 23) | ((mant & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint16_t sign = (bits >> 16) & 0x8000;
  uint32_t absBits = bits & 0x7fffffff;
  if (absBits > 0x7f800000) // NaN: keep it quiet
    return sign | 0x7e00 | ((absBits >> 13) & 0x3ff);
  if (absBits >= 0x477ff000) // rounds to >= 65520: infinity
    return sign | 0x7c00;
  if (absBits < 0x38800000) { // below the smallest normal half: subnormal or 0
    float a;
    std::memcpy(&a, &absBits, 4);
    // a / 2^-24, rounded to nearest even by the FPU's default mode.
    return sign | uint16_t(std::nearbyint(a * 16777216.0f));
  }
  uint32_t mant = absBits & 0x7fffff;
  uint32_t exp = (absBits >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h; // may carry into the exponent, which is right
  return sign | uint16_t(h);
}

double readAsDouble(const void *data, DType dtype, int64_t index) {
  const char *p = static_cast<const char *>(data) + index * dtypeSize(dtype);
  switch (dtype) {
  case F32: {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case F64: {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  case BF16:
  case F16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return dtype == BF16 ? bf16ToFloat(v) : halfToFloat(v);
  }
  case I64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return double(v);
  }
  case I32: {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case I8:
    return double(static_cast<const int8_t *>(static_cast<const void *>(p))[0]);
  case BOOL:
    return p[0] ? 1.0 : 0.0;
  default:
    return std::nan("");
  }
}

} // namespace colo::runtime
