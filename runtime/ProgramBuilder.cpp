//===- ProgramBuilder.cpp - Building and writing executables --------------===//

#include "ProgramBuilder.h"
#include "colo/Runtime/Error.h"
#include "colo/Runtime/Files.h"

#include <cerrno>
#include <cstring>
#include <sys/stat.h>

namespace colo::runtime {

int32_t ProgramBuilder::add(const std::string &name, DType dtype, const Shape &shape,
                            Buffer::Kind kind) {
  Buffer *b = program_.add_buffers();
  b->set_name(name);
  b->set_dtype(dtype);
  for (int64_t d : shape)
    b->add_shape(d);
  b->set_kind(kind);
  if (kind == Buffer::TEMP) {
    int64_t offset = (program_.arena_bytes() + 63) / 64 * 64;
    b->set_offset(offset);
    program_.set_arena_bytes(offset + numElements(shape) * dtypeSize(dtype));
  }
  return program_.buffers_size() - 1;
}

int32_t ProgramBuilder::alias(const std::string &name, DType dtype, const Shape &shape,
                              int32_t target) {
  Buffer *b = program_.add_buffers();
  b->set_name(name);
  b->set_dtype(dtype);
  for (int64_t d : shape)
    b->add_shape(d);
  b->set_kind(Buffer::TEMP);
  b->set_alias_of(target);
  return program_.buffers_size() - 1;
}

KernelCall &ProgramBuilder::kernel(const std::string &symbol,
                                   const std::vector<int32_t> &args,
                                   const std::string &stepName) {
  Step *step = program_.add_steps();
  step->set_name(stepName);
  KernelCall *k = step->mutable_kernel();
  k->set_symbol(symbol);
  for (int32_t id : args)
    k->add_args(id);
  return *k;
}

Gemm &ProgramBuilder::gemm(int32_t a, int32_t b, int32_t c, int64_t m, int64_t n,
                           int64_t k, const std::string &stepName) {
  Step *step = program_.add_steps();
  step->set_name(stepName);
  Gemm *g = step->mutable_gemm();
  g->set_a(a);
  g->set_b(b);
  g->set_c(c);
  g->set_m(m);
  g->set_n(n);
  g->set_k(k);
  return *g;
}

Conv2d &ProgramBuilder::conv(const std::string &stepName) {
  Step *step = program_.add_steps();
  step->set_name(stepName);
  return *step->mutable_conv();
}

Pool2d &ProgramBuilder::pool(const std::string &stepName) {
  Step *step = program_.add_steps();
  step->set_name(stepName);
  return *step->mutable_pool();
}

Copy &ProgramBuilder::copy(int32_t src, int32_t dst, const std::string &stepName) {
  Step *step = program_.add_steps();
  step->set_name(stepName);
  Copy *c = step->mutable_copy();
  c->set_src(src);
  c->set_dst(dst);
  return *c;
}

void ProgramBuilder::parameter(int32_t id, const std::string &torchName) {
  (*program_.mutable_param_names())[program_.buffers(id).name()] = torchName;
}

void writeExecutable(const std::string &dir, const Program &program,
                     const std::vector<TensorView> &state) {
  if (!isDirectory(dir) && ::mkdir(dir.c_str(), 0777) != 0)
    throw Error("cannot create '" + dir + "': " + std::strerror(errno));
  std::string bytes;
  if (!program.SerializeToString(&bytes))
    throw Error("cannot serialize the program for '" + dir + "'");
  writeFileAtomically(joinPath(dir, "program.pb"),
                      [&](std::ostream &out) { out.write(bytes.data(), bytes.size()); });
  if (!state.empty())
    writeSafetensors(joinPath(dir, "state.safetensors"), state);
}

} // namespace colo::runtime
