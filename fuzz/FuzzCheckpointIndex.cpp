// libFuzzer target: a checkpoint's index.json (runtime/Checkpoint.cpp),
// then every tensor put together from the (absent or scratch) rank files.
#include "FuzzInput.h"

#include "colo/Runtime/Checkpoint.h"
#include "colo/Runtime/Error.h"

#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  namespace rt = colo::runtime;
  colo::fuzz::writeInput("index.json", data, size);
  try {
    std::unique_ptr<rt::Checkpoint> c = rt::Checkpoint::open(colo::fuzz::scratchDirectory());
    for (const rt::Checkpoint::Tensor &t : c->tensors()) {
      // The index may claim any size; only read what a small file could hold.
      if (rt::numElements(t.shape) * rt::dtypeSize(t.dtype) > (int64_t(1) << 20))
        continue;
      std::vector<char> whole(size_t(rt::numElements(t.shape) * rt::dtypeSize(t.dtype)));
      try {
        c->readWhole(t, whole.data());
      } catch (const rt::Error &) {
      }
    }
  } catch (const rt::Error &) {
  }
  return 0;
}
