// libFuzzer target: safetensors files (runtime/Safetensors.cpp): open, and
// read every entry's bytes.
#include "FuzzInput.h"

#include "colo/Runtime/Error.h"
#include "colo/Runtime/Safetensors.h"

#include <numeric>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  namespace rt = colo::runtime;
  std::string path = colo::fuzz::writeInput("input.safetensors", data, size);
  try {
    std::unique_ptr<rt::SafetensorsFile> file = rt::SafetensorsFile::open(path);
    unsigned sum = 0;
    for (const rt::SafetensorsFile::Entry &e : file->entries()) {
      const auto *bytes = static_cast<const unsigned char *>(file->data(e));
      sum = std::accumulate(bytes, bytes + (e.end - e.begin), sum);
    }
    volatile unsigned keep = sum;
    (void)keep;
  } catch (const rt::Error &) {
  }
  return 0;
}
