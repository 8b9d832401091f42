//===- ForallToGpuLaunch.h - colo-forall-to-gpu-launch -----------*- C++ -*-===//
#ifndef COLO_CODEGEN_FORALLTOGPULAUNCH_H
#define COLO_CODEGEN_FORALLTOGPULAUNCH_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace colo {

/// Turns colo-map-generics-to-gpu's block x thread scf.forall nests into
/// gpu.launch ops (ForallToGpuLaunch.cpp).
std::unique_ptr<mlir::Pass> createForallToGpuLaunchPass();

} // namespace colo

#endif
