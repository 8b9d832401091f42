//===- CudaProbe.h - is there a CUDA GPU here? -------------------*- C++ -*-===//
#ifndef COLO_RUNTIME_CUDAPROBE_H
#define COLO_RUNTIME_CUDAPROBE_H

#include <string>

namespace colo::runtime {

/// Why no CUDA GPU can be used here, or an empty string when one can.
std::string cudaGpuProblem();

} // namespace colo::runtime

#endif
