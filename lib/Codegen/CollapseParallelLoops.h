//===- CollapseParallelLoops.h - colo-collapse-parallel-loops ---*- C++ -*-===//
#ifndef COLO_CODEGEN_COLLAPSEPARALLELLOOPS_H
#define COLO_CODEGEN_COLLAPSEPARALLELLOOPS_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace colo {

/// Collapses the loops of elementwise linalg.generics on buffers into as few
/// as their operands allow (CollapseParallelLoops.cpp).
std::unique_ptr<mlir::Pass> createCollapseParallelLoopsPass();

} // namespace colo

#endif
