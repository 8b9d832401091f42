//===- OneDnn.h - The oneDNN engine and stream the steps share --*- C++ -*-===//
//
// Private to the runtime: convolutions, pooling and matmuls run on one CPU
// engine, and from the session's thread on one stream.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_ONEDNN_H
#define COLO_RUNTIME_ONEDNN_H

#include <dnnl.hpp>

namespace colo::runtime {

inline dnnl::engine &cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

inline dnnl::stream &cpuStream() {
  static dnnl::stream stream(cpuEngine());
  return stream;
}

} // namespace colo::runtime

#endif
