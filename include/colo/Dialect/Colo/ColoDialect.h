#ifndef COLO_DIALECT_COLO_COLODIALECT_H
#define COLO_DIALECT_COLO_COLODIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/Operation.h"

#include "colo/Dialect/Colo/ColoOpsDialect.h.inc"

#endif
