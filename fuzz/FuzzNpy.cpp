// libFuzzer target: .npy and .npz files (runtime/Npy.cpp). A reader may
// refuse an input with colo::runtime::Error; anything else (a crash, a
// sanitizer report, another exception, an allocation past -malloc_limit_mb)
// is a bug.
#include "FuzzInput.h"

#include "colo/Runtime/Error.h"
#include "../runtime/Npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  namespace rt = colo::runtime;
  std::string path = colo::fuzz::writeInput("input.npz", data, size);
  try {
    rt::readNpz(path);
  } catch (const rt::Error &) {
  }
  try {
    rt::parseNpy(std::string(reinterpret_cast<const char *>(data), size), "input.npy");
  } catch (const rt::Error &) {
  }
  return 0;
}
