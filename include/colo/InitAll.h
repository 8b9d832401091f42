#ifndef COLO_INITALL_H
#define COLO_INITALL_H

#include "colo/Dialect/Colo/ColoDialect.h"
#include "colo/Dialect/Exec/ExecOps.h"
#include "colo/Passes/Passes.h"
#include "mlir/IR/DialectRegistry.h"

namespace colo {

inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<ColoDialect, exec::ExecDialect, mlir::shard::ShardDialect>();
}

inline void registerAllPasses() { registerPassesAndPipelines(); }

} // namespace colo

#endif
