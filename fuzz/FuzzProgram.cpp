// libFuzzer target: an executable directory's program.pb (runtime/
// Executable.cpp): parsed and validated as `colo run` loads it.
#include "FuzzInput.h"

#include "colo/Runtime/Error.h"
#include "colo/Runtime/Executable.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  namespace rt = colo::runtime;
  colo::fuzz::writeInput("program.pb", data, size);
  try {
    rt::Executable::load(colo::fuzz::scratchDirectory());
  } catch (const rt::Error &) {
  }
  return 0;
}
