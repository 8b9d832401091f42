// The compile-time chunk schedule of colo-offload's parameter offload: chunks
// in first-use order, residency by Belady's rule under a byte bound.
#include "colo/Analysis/ChunkSchedule.h"

#include <algorithm>
#include <limits>
#include <map>

using namespace colo;

namespace {

/// The chunks' use positions, merged over their tensors.
std::vector<std::vector<int64_t>> chunkUses(const std::vector<HostTensor> &tensors,
                                            const std::vector<std::vector<int64_t>> &chunks) {
  std::vector<std::vector<int64_t>> uses(chunks.size());
  for (size_t c = 0; c < chunks.size(); ++c) {
    for (int64_t t : chunks[c])
      uses[c].insert(uses[c].end(), tensors[t].uses.begin(), tensors[t].uses.end());
    std::sort(uses[c].begin(), uses[c].end());
    uses[c].erase(std::unique(uses[c].begin(), uses[c].end()), uses[c].end());
  }
  return uses;
}

} // namespace

ChunkSchedule colo::scheduleChunks(const std::vector<HostTensor> &tensors, int64_t chunkBytes,
                                   int64_t residentBytes) {
  ChunkSchedule s;
  std::vector<int64_t> order;
  for (size_t t = 0; t < tensors.size(); ++t)
    if (!tensors[t].uses.empty())
      order.push_back(int64_t(t));
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return tensors[a].uses.front() < tensors[b].uses.front();
  });
  std::vector<int64_t> chunkSize;
  for (int64_t t : order) {
    if (s.chunks.empty() || chunkSize.back() + tensors[t].bytes > chunkBytes) {
      s.chunks.emplace_back();
      chunkSize.push_back(0);
    }
    s.chunks.back().push_back(t);
    chunkSize.back() += tensors[t].bytes;
  }
  std::vector<std::vector<int64_t>> uses = chunkUses(tensors, s.chunks);

  // Positions in order, with the chunks each reads.
  std::map<int64_t, std::vector<int64_t>> readers;
  for (size_t c = 0; c < uses.size(); ++c)
    for (int64_t p : uses[c])
      readers[p].push_back(int64_t(c));
  auto nextUse = [&](int64_t c, int64_t after) {
    auto it = std::upper_bound(uses[c].begin(), uses[c].end(), after);
    return it == uses[c].end() ? std::numeric_limits<int64_t>::max() : *it;
  };
  // The open fetch of each resident chunk (-1: not resident).
  std::vector<int64_t> open(s.chunks.size(), -1);
  int64_t resident = 0;
  // Evicts the resident chunk used farthest after `pos` among those `keep`
  // does not name; false if there is none.
  auto evict = [&](int64_t pos, const std::vector<int64_t> &keep) {
    int64_t victim = -1;
    for (size_t r = 0; r < open.size(); ++r)
      if (open[r] >= 0 && std::find(keep.begin(), keep.end(), int64_t(r)) == keep.end() &&
          (victim < 0 || nextUse(int64_t(r), pos) > nextUse(victim, pos)))
        victim = int64_t(r);
    if (victim < 0)
      return false;
    open[victim] = -1;
    resident -= chunkSize[victim];
    return true;
  };
  for (auto &[pos, read] : readers) {
    for (int64_t c : read) {
      if (open[c] >= 0)
        continue;
      // Where what this position reads exceeds the bound alone, it is all
      // resident for the position.
      while (resident + chunkSize[c] > residentBytes && evict(pos, read)) {
      }
      open[c] = int64_t(s.fetches.size());
      s.fetches.push_back({c, {}, {}});
      resident += chunkSize[c];
    }
    for (int64_t c : read) {
      s.fetches[open[c]].uses.push_back(pos);
      if (nextUse(c, pos) == std::numeric_limits<int64_t>::max()) {
        open[c] = -1;
        resident -= chunkSize[c];
      }
    }
    // Back within the bound once the position has run.
    while (resident > residentBytes && evict(pos, {})) {
    }
  }
  // Each fetch carries the chunk's tensors that it serves.
  for (ChunkFetch &f : s.fetches)
    for (int64_t t : s.chunks[f.chunk]) {
      const std::vector<int64_t> &u = tensors[t].uses;
      if (std::any_of(f.uses.begin(), f.uses.end(),
                      [&](int64_t p) { return std::binary_search(u.begin(), u.end(), p); })) {
        f.tensors.push_back(t);
        s.fetchedBytes += tensors[t].bytes;
      }
    }
  return s;
}
