//===- Initializer.h - Initial values made by the runtime -------*- C++ -*-===//
//
// The initial values of state that the compiler records as specs
// (Program.proto's Initializer) instead of writing them to
// state.safetensors: fills and the distributions of #colo.init, drawn
// exactly as the interpreter draws them.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_INITIALIZER_H
#define COLO_RUNTIME_INITIALIZER_H

#include "colo/Runtime/Program.pb.h"
#include "colo/Runtime/DType.h"

#include <cstdint>

namespace colo::runtime {

/// Whether UNIFORM and NORMAL initial values can be made in `dtype` (F32,
/// F64, BF16; a FILL can be made in any).
inline bool drawsIn(DType dtype) { return dtype == F32 || dtype == F64 || dtype == BF16; }

/// Writes the `count` elements of the whole tensor that `init` describes,
/// in `dtype`'s encoding, to `out`. Throws Error for a distribution on a
/// dtype it does not support.
void makeInitialValue(const Initializer &init, DType dtype, int64_t count, void *out);

/// `x` rounded to bf16, to nearest even, directly from double (not through
/// float, which would round twice).
uint16_t doubleToBf16(double x);

} // namespace colo::runtime

#endif
