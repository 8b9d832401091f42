// colo-offload's chunk schedule (analysis/ChunkSchedule.cpp): packing in
// first-use order, fetches that cover every use within the bound, and, for
// chunks of one size, as few fetches as exhaustive search over every
// eviction choice finds (Belady's rule is optimal there).
#include "colo/Analysis/ChunkSchedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <functional>
#include <set>

using namespace colo;

namespace {

/// Random use positions in [0, positions) for `n` tensors of `bytes` each.
std::vector<HostTensor> randomTensors(int n, int positions, int64_t bytes, std::mt19937 &rng) {
  std::uniform_int_distribution<int> pos(0, positions - 1), count(1, 4);
  std::vector<HostTensor> tensors(static_cast<size_t>(n));
  for (HostTensor &t : tensors) {
    t.bytes = bytes;
    for (int k = count(rng); k > 0; --k)
      t.uses.push_back(pos(rng));
    std::sort(t.uses.begin(), t.uses.end());
    t.uses.erase(std::unique(t.uses.begin(), t.uses.end()), t.uses.end());
  }
  return tensors;
}

/// The fewest fetches of single-tensor chunks that serve every use with at
/// most `capacity` resident at once, trying every choice of what to evict.
int fewestFetches(const std::vector<HostTensor> &tensors, size_t capacity) {
  std::map<int64_t, std::vector<int>> readers;
  for (size_t t = 0; t < tensors.size(); ++t)
    for (int64_t p : tensors[t].uses)
      readers[p].push_back(int(t));
  std::vector<std::pair<int64_t, std::vector<int>>> steps(readers.begin(), readers.end());
  auto lastUse = [&](int t) { return tensors[size_t(t)].uses.back(); };
  int best = 1 << 30;
  // At step i with `resident` chunks and `fetched` fetches so far.
  std::function<void(size_t, std::set<int>, int)> search = [&](size_t i, std::set<int> resident,
                                                              int fetched) {
    if (fetched >= best)
      return;
    if (i == steps.size()) {
      best = fetched;
      return;
    }
    auto &[pos, read] = steps[i];
    std::vector<int> missing;
    for (int t : read)
      if (!resident.count(t))
        missing.push_back(t);
    // Make room by evicting any `need` of the residents this step does not read.
    std::vector<int> evictable;
    for (int r : resident)
      if (std::find(read.begin(), read.end(), r) == read.end())
        evictable.push_back(r);
    size_t need = resident.size() + missing.size() > capacity
                      ? resident.size() + missing.size() - capacity
                      : 0;
    need = std::min(need, evictable.size());
    std::vector<bool> pick(evictable.size(), false);
    std::fill(pick.begin(), pick.begin() + long(need), true);
    do {
      std::set<int> next = resident;
      for (size_t k = 0; k < evictable.size(); ++k)
        if (pick[k])
          next.erase(evictable[k]);
      for (int t : missing)
        next.insert(t);
      for (int t : read)
        if (lastUse(t) == pos)
          next.erase(t);
      // Back within the room after the step: any of the residents may go.
      std::vector<int> held(next.begin(), next.end());
      size_t over = held.size() > capacity ? held.size() - capacity : 0;
      std::vector<bool> drop(held.size(), false);
      std::fill(drop.begin(), drop.begin() + long(over), true);
      do {
        std::set<int> kept;
        for (size_t k = 0; k < held.size(); ++k)
          if (!drop[k])
            kept.insert(held[k]);
        search(i + 1, kept, fetched + int(missing.size()));
      } while (std::prev_permutation(drop.begin(), drop.end()));
    } while (std::prev_permutation(pick.begin(), pick.end()));
  };
  search(0, {}, 0);
  return best;
}

TEST(ChunkSchedule, PacksInFirstUseOrderUpToTheChunkSize) {
  std::vector<HostTensor> tensors{{40, {5}}, {40, {1, 9}}, {100, {3}}, {20, {7}}, {10, {}}};
  ChunkSchedule s = scheduleChunks(tensors, 80, 1000);
  // By first use: 1 (40), 2 (100, alone: larger than a chunk), 0 + 3 (60);
  // the unused tensor is in no chunk.
  ASSERT_EQ(s.chunks.size(), 3u);
  EXPECT_EQ(s.chunks[0], (std::vector<int64_t>{1}));
  EXPECT_EQ(s.chunks[1], (std::vector<int64_t>{2}));
  EXPECT_EQ(s.chunks[2], (std::vector<int64_t>{0, 3}));
  // Everything fits: each chunk is fetched once, in first-use order.
  ASSERT_EQ(s.fetches.size(), 3u);
  EXPECT_EQ(s.fetches[0].uses, (std::vector<int64_t>{1, 9}));
  EXPECT_EQ(s.fetchedBytes, 200);
}

TEST(ChunkSchedule, EvictsTheChunkUsedFarthestAway) {
  // Capacity for two: at position 2, chunk 2 arrives and chunk 0 (next use
  // 9) goes, not chunk 1 (next use 3).
  std::vector<HostTensor> tensors{{10, {0, 9}}, {10, {1, 3}}, {10, {2, 4}}};
  ChunkSchedule s = scheduleChunks(tensors, 10, 20);
  ASSERT_EQ(s.fetches.size(), 4u);
  EXPECT_EQ(s.fetches[3].chunk, 0);
  EXPECT_EQ(s.fetches[3].uses, (std::vector<int64_t>{9}));
  EXPECT_EQ(s.fetches[1].uses, (std::vector<int64_t>{1, 3}));
}

TEST(ChunkSchedule, ServesEveryUseWithinTheBound) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<HostTensor> tensors = randomTensors(8, 30, 0, rng);
    std::uniform_int_distribution<int64_t> bytes(1, 50);
    for (HostTensor &t : tensors)
      t.bytes = bytes(rng);
    int64_t chunk = 60, bound = 120;
    ChunkSchedule s = scheduleChunks(tensors, chunk, bound);
    std::map<int64_t, int64_t> chunkBytes;
    for (size_t c = 0; c < s.chunks.size(); ++c)
      for (int64_t t : s.chunks[c])
        chunkBytes[int64_t(c)] += tensors[size_t(t)].bytes;
    for (size_t t = 0; t < tensors.size(); ++t)
      for (int64_t p : tensors[t].uses) {
        int serving = 0;
        for (const ChunkFetch &f : s.fetches)
          serving += std::count(f.tensors.begin(), f.tensors.end(), int64_t(t)) &&
                     std::binary_search(f.uses.begin(), f.uses.end(), p);
        EXPECT_EQ(serving, 1) << "trial " << trial << ": tensor " << t << " at " << p;
      }
    // At every position the chunks between their fetch's first and last use
    // fit the bound, unless what the position reads exceeds it alone.
    for (int64_t p = 0; p < 30; ++p) {
      int64_t resident = 0, read = 0;
      for (const ChunkFetch &f : s.fetches)
        if (f.uses.front() <= p && p <= f.uses.back()) {
          resident += chunkBytes[f.chunk];
          if (std::binary_search(f.uses.begin(), f.uses.end(), p))
            read += chunkBytes[f.chunk];
        }
      EXPECT_LE(resident, std::max(bound, read)) << "trial " << trial << " at " << p;
    }
  }
}

TEST(ChunkSchedule, FetchesAsFewAsExhaustiveSearchForChunksOfOneSize) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 150; ++trial) {
    std::vector<HostTensor> tensors = randomTensors(6, 14, 10, rng);
    for (size_t capacity : {1u, 2u, 3u}) {
      ChunkSchedule s = scheduleChunks(tensors, 10, int64_t(capacity) * 10);
      EXPECT_EQ(int(s.fetches.size()), fewestFetches(tensors, capacity))
          << "trial " << trial << ", room for " << capacity << [&] {
               std::string d;
               for (const HostTensor &t : tensors) {
                 d += "\n ";
                 for (int64_t u : t.uses)
                   d += " " + std::to_string(u);
               }
               for (const ChunkFetch &f : s.fetches) {
                 d += "\n fetch " + std::to_string(f.chunk) + ":";
                 for (int64_t u : f.uses)
                   d += " " + std::to_string(u);
               }
               return d;
             }();
    }
  }
}

} // namespace
