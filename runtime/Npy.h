//===- Npy.h - NumPy .npy and .npz files -------------------------*- C++ -*-===//
//
// .npy: magic "\x93NUMPY", version 1.0 (2-byte header length), 2.0 or 3.0
// (4-byte), a Python dict literal {'descr': '<f4', 'fortran_order': False,
// 'shape': (3, 4), } padded with spaces, then the data in C order.
// .npz: a zip archive of .npy files named after the arrays (np.savez stores
// them, np.savez_compressed deflates them; numpy writes zip64 records). Entries
// are read through the central directory and their CRC-32 is checked.
//
// Little-endian arrays of bool, int8..int64, uint8..uint64 and float16/32/64
// are read; others (big-endian, Fortran order, objects, strings) are errors
// that name the file and array.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_NPY_H
#define COLO_RUNTIME_NPY_H

#include "colo/Runtime/DType.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace colo::runtime {

struct NpyArray {
  /// NumPy's kind character: 'b' bool, 'i' signed, 'u' unsigned, 'f' float.
  char kind = 'f';
  /// Bytes per element (1, 2, 4 or 8).
  int itemSize = 4;
  Shape shape;
  std::string data; ///< numElements(shape) * itemSize bytes, C order

  /// NumPy's name: "float32", "int64", "uint16", "bool".
  std::string typeName() const;
  int64_t numElements() const { return colo::runtime::numElements(shape); }
};

/// Parses one .npy image; `what` names it in errors ("data.npz: array 'x'").
NpyArray parseNpy(const std::string &bytes, const std::string &what);
NpyArray readNpy(const std::string &path);
/// Arrays by name (the member name without ".npy").
std::map<std::string, NpyArray> readNpz(const std::string &path);

/// True if arrays of NumPy type (kind, itemSize) can fill a buffer of `dtype`:
/// floats into float buffers (f64 -> f32 narrows), integers into integer
/// buffers (range checked when converting), bools into BOOL.
bool convertible(char kind, int itemSize, DType dtype);

/// The valid values of an integer input: [0, max) and `ignored` (labels:
/// the loss's ignore_index, -100 as in PyTorch). max 0: any value.
struct IntBound {
  int64_t max = 0;
  std::optional<int64_t> ignored;
  bool admits(int64_t v) const { return max <= 0 || (v >= 0 && v < max) || v == ignored; }
  /// Why `v` is not admitted: "is not below 32, the input's int_max".
  std::string refusal(int64_t v) const;
};

/// Converts `count` elements of type (kind, itemSize) at `src` into `dst` of
/// type `dtype`. Integers out of the destination's range or not admitted by
/// `bound` are errors that name `what` and the element's index (`firstIndex`
/// + its position).
void convertElements(const void *src, char kind, int itemSize, DType dtype, void *dst,
                     int64_t count, const std::string &what, const IntBound &bound = {},
                     int64_t firstIndex = 0);

} // namespace colo::runtime

#endif
