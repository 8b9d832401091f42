// libFuzzer target: plan files (lib/Planner/Plan.cpp), JSON and inline.
#include "colo/Planner/Plan.h"

#include "llvm/Support/Error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::consumeError(colo::planner::parsePlanJSON(text, "input.json").takeError());
  if (!text.contains('/') && !text.ends_with(".json")) // inline, never a path
    llvm::consumeError(colo::planner::parsePlan(text).takeError());
  return 0;
}
