//===- FuseElementwise.h - colo-fuse-elementwise ---------------*- C++ -*-===//
#ifndef COLO_CODEGEN_FUSEELEMENTWISE_H
#define COLO_CODEGEN_FUSEELEMENTWISE_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace colo {

/// Linalg elementwise fusion that also recomputes cheap producers for each
/// of their users (FuseElementwise.cpp).
std::unique_ptr<mlir::Pass> createFuseElementwisePass();

} // namespace colo

#endif
