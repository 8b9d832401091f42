//===- PassEnums.h - The enums of the passes' options ------------*- C++ -*-===//
#ifndef COLO_PASSES_PASSENUMS_H
#define COLO_PASSES_PASSENUMS_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>

#include "colo/Passes/PassEnums.h.inc"

#endif // COLO_PASSES_PASSENUMS_H
