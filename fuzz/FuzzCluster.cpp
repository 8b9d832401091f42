// libFuzzer target: cluster files (lib/Planner/Cluster.cpp).
#include "colo/Planner/Cluster.h"

#include "llvm/Support/Error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::consumeError(colo::planner::parseCluster(text, "input.json").takeError());
  return 0;
}
