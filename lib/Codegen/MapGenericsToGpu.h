//===- MapGenericsToGpu.h - colo-map-generics-to-gpu -------------*- C++ -*-===//
#ifndef COLO_CODEGEN_MAPGENERICSTOGPU_H
#define COLO_CODEGEN_MAPGENERICSTOGPU_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace colo {

/// Maps every linalg.generic on buffers to a block x thread scf.forall nest
/// with GPU mapping attributes (MapGenericsToGpu.cpp).
std::unique_ptr<mlir::Pass> createMapGenericsToGpuPass(int64_t blockSize = 256);

} // namespace colo

#endif
