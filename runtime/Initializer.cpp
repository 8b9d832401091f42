//===- Initializer.cpp - Initial values made by the runtime ---------------===//
//
// The same draws as the interpreter's #colo.init (lib/Interpreter): the
// compiler no longer materializes these values, and the bits must not
// change for it.
//
//===----------------------------------------------------------------------===//

#include "Initializer.h"
#include "colo/Runtime/Error.h"

#include <cmath>
#include <cstring>
#include <random>

namespace colo::runtime {

uint16_t doubleToBf16(double x) {
  if (std::isnan(x))
    return floatToBf16(float(x));
  // bf16 keeps 8 significant bits, down to 2^-126 (its smallest normal);
  // below, a fixed quantum of 2^-133. Scaling by a power of two is exact, so
  // nearbyint rounds the value once, to nearest even.
  double magnitude = std::fabs(x);
  int exponent = 0;
  std::frexp(magnitude, &exponent); // magnitude = m 2^exponent, 0.5 <= m < 1
  int quantum = magnitude >= 0x1p-126 ? exponent - 8 : -133;
  double rounded = std::nearbyint(std::ldexp(x, -quantum));
  double value = std::ldexp(rounded, quantum);
  // Exact in float (8 significant bits in float's range, or infinity).
  return floatToBf16(float(value));
}

namespace {
template <typename T, typename Convert>
void fill(void *out, int64_t count, double value, Convert convert) {
  T v = convert(value);
  T *p = static_cast<T *>(out);
  std::fill(p, p + count, v);
}

/// Integers as the interpreter rounds them: truncated, NaN as 0.
int64_t truncated(double x) { return std::isnan(x) ? 0 : int64_t(std::trunc(x)); }
} // namespace

void makeInitialValue(const Initializer &init, DType dtype, int64_t count, void *out) {
  if (init.distribution() == Initializer::FILL) {
    double a = init.a();
    switch (dtype) {
    case F32:
      return fill<float>(out, count, a, [](double x) { return float(x); });
    case F64:
      return fill<double>(out, count, a, [](double x) { return x; });
    case BF16:
      return fill<uint16_t>(out, count, a, doubleToBf16);
    case I64:
      return fill<int64_t>(out, count, a, truncated);
    case I32:
      return fill<int32_t>(out, count, a, [](double x) { return int32_t(truncated(x)); });
    case I8:
      return fill<int8_t>(out, count, a, [](double x) { return int8_t(truncated(x)); });
    case BOOL:
      return fill<uint8_t>(out, count, a, [](double x) { return uint8_t(x != 0); });
    default:
      throw Error(std::string("a fill of ") + dtypeName(dtype) + " is not supported");
    }
  }
  if (!drawsIn(dtype))
    throw Error(std::string("a random initial value of ") + dtypeName(dtype) +
                " is not supported (f32, f64 and bf16 are)");
  std::mt19937_64 gen(init.seed());
  auto uniform01 = [&] { return double(gen() >> 11) * 0x1.0p-53; };
  double a = init.a(), b = init.b();
  bool normal = init.distribution() == Initializer::NORMAL;
  if (!normal && init.distribution() != Initializer::UNIFORM)
    throw Error("unknown initial value distribution " + std::to_string(init.distribution()));
  auto draw = [&] {
    if (!normal)
      return a + (b - a) * uniform01();
    double u1 = 1.0 - uniform01(), u2 = uniform01(); // Box-Muller
    return a + b * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  };
  for (int64_t i = 0; i < count; ++i) {
    double x = draw();
    if (dtype == F32)
      static_cast<float *>(out)[i] = float(x);
    else if (dtype == F64)
      static_cast<double *>(out)[i] = x;
    else
      static_cast<uint16_t *>(out)[i] = doubleToBf16(x);
  }
}

} // namespace colo::runtime
