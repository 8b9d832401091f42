#include "colo/Runtime/Shard.h"

#include <algorithm>
#include <cstring>

namespace colo::runtime {

namespace {
Shape fullShape(const Shard &shard) {
  return Shape(shard.full_shape().begin(), shard.full_shape().end());
}

/// Calls copy(fullOffset, localOffset, count) in elements for every
/// contiguous run of the block.
template <typename F>
void forEachRun(const Shard &shard, int64_t index, int64_t parts, F copy) {
  Shape full = fullShape(shard);
  if (shard.flat()) {
    int64_t n = numElements(full), per = (n + parts - 1) / parts;
    int64_t begin = std::min(n, index * per), end = std::min(n, begin + per);
    copy(begin, int64_t(0), end - begin);
    return;
  }
  int64_t outer = 1, inner = 1, dim = full[shard.dim()];
  for (int i = 0; i < shard.dim(); ++i)
    outer *= full[i];
  for (size_t i = shard.dim() + 1; i < full.size(); ++i)
    inner *= full[i];
  int64_t groups = std::max<int64_t>(shard.groups(), 1);
  int64_t group = dim / groups, block = group / parts;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t g = 0; g < groups; ++g)
      copy((o * dim + g * group + index * block) * inner,
           (o * (dim / parts) + g * block) * inner, block * inner);
}
} // namespace

Shape shardShape(const Shard &shard, int64_t parts) {
  Shape full = fullShape(shard);
  if (shard.flat())
    return {(numElements(full) + parts - 1) / parts};
  full[shard.dim()] /= parts;
  return full;
}

void copyBlockOut(const Shard &shard, int64_t index, int64_t parts, int64_t elementSize,
                  const void *full, void *local) {
  if (shard.flat())
    std::memset(local, 0, size_t(numElements(shardShape(shard, parts)) * elementSize));
  forEachRun(shard, index, parts, [&](int64_t f, int64_t l, int64_t n) {
    std::memcpy(static_cast<char *>(local) + l * elementSize,
                static_cast<const char *>(full) + f * elementSize, size_t(n * elementSize));
  });
}

void copyBlockIn(const Shard &shard, int64_t index, int64_t parts, int64_t elementSize,
                 const void *local, void *full) {
  forEachRun(shard, index, parts, [&](int64_t f, int64_t l, int64_t n) {
    std::memcpy(static_cast<char *>(full) + f * elementSize,
                static_cast<const char *>(local) + l * elementSize, size_t(n * elementSize));
  });
}

} // namespace colo::runtime
