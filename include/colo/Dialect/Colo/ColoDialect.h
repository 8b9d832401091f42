#ifndef COLO_DIALECT_COLO_COLODIALECT_H
#define COLO_DIALECT_COLO_COLODIALECT_H

#include "mlir/IR/Dialect.h"

#include "colo/Dialect/Colo/ColoOpsDialect.h.inc"

#endif
