//===- ProgramBuilder.h - Building and writing executables -------*- C++ -*-===//
//
// A small helper over the generated colo.runtime.Program classes: it adds
// buffers (placing TEMP buffers in the arena, 64-byte aligned, and growing
// arena_bytes) and steps, and writes an executable directory (program.pb and
// state.safetensors). The tests build their programs with it; a backend may
// use it too, or fill the protobuf message directly.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_PROGRAMBUILDER_H
#define COLO_RUNTIME_PROGRAMBUILDER_H

#include "colo/Runtime/DType.h"
#include "colo/Runtime/Safetensors.h"

#include <string>
#include <vector>

namespace colo::runtime {

class ProgramBuilder {
public:
  /// Adds a buffer; a TEMP buffer gets the next 64-byte aligned arena offset.
  int32_t add(const std::string &name, DType dtype, const Shape &shape,
              Buffer::Kind kind);
  int32_t temp(const std::string &name, DType dtype, const Shape &shape) {
    return add(name, dtype, shape, Buffer::TEMP);
  }
  int32_t state(const std::string &name, DType dtype, const Shape &shape) {
    return add(name, dtype, shape, Buffer::STATE);
  }
  int32_t input(const std::string &name, DType dtype, const Shape &shape) {
    return add(name, dtype, shape, Buffer::INPUT);
  }
  int32_t constant(const std::string &name, DType dtype, const Shape &shape) {
    return add(name, dtype, shape, Buffer::CONSTANT);
  }
  /// A view of `target`'s storage with another shape (kind TEMP).
  int32_t alias(const std::string &name, DType dtype, const Shape &shape, int32_t target);

  /// Appends a step of each kind; the returned message can be adjusted.
  KernelCall &kernel(const std::string &symbol, const std::vector<int32_t> &args,
                     const std::string &stepName = "");
  Gemm &gemm(int32_t a, int32_t b, int32_t c, int64_t m, int64_t n, int64_t k,
             const std::string &stepName = "");
  Conv2d &conv(const std::string &stepName = "");
  Pool2d &pool(const std::string &stepName = "");
  Copy &copy(int32_t src, int32_t dst, const std::string &stepName = "");

  /// Marks a scalar buffer as a loss, a buffer as a parameter with its
  /// PyTorch name, and the step counter.
  void loss(int32_t id) { program_.add_loss(id); }
  void parameter(int32_t id, const std::string &torchName);
  void stepCounter(int32_t id) { program_.set_step_counter(id); }

  Program &program() { return program_; }

private:
  Program program_;
};

/// Creates `dir` if needed and writes program.pb and (when `state` is not
/// empty) state.safetensors, each atomically. The kernels library is the
/// backend's to place there.
void writeExecutable(const std::string &dir, const Program &program,
                     const std::vector<TensorView> &state);

} // namespace colo::runtime

#endif
