// libFuzzer target: cluster files (lib/Planner/Cluster.cpp).
#include "colo/Planner/Cluster.h"

#include "llvm/Support/Error.h"

// A file may name the preset `local-cpu`, which measures this machine once
// per process (seconds under the sanitizers): measured here, before the
// inputs and their per-input timeout, so that every input reuses it.
extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  llvm::consumeError(colo::planner::clusterPreset("local-cpu").takeError());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::consumeError(colo::planner::parseCluster(text, "input.json").takeError());
  return 0;
}
