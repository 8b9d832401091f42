#ifndef COLO_ANALYSIS_CHUNKSCHEDULE_H
#define COLO_ANALYSIS_CHUNKSCHEDULE_H

#include <cstdint>
#include <vector>

namespace colo {

/// A tensor that lives in host memory and that device ops read: its size
/// and the positions (in step order, ascending) of the ops that read it.
struct HostTensor {
  int64_t bytes = 0;
  std::vector<int64_t> uses;
};

/// One copy of a chunk to the device: which tensors it carries (those read
/// while it is resident) and the positions it serves, from the first (where
/// it must have arrived) to the last (after which its memory is free).
struct ChunkFetch {
  int64_t chunk = 0;
  std::vector<int64_t> tensors;
  std::vector<int64_t> uses;
};

/// Gemini's chunks, decided at compile time: the tensors packed into chunks
/// of at most `chunkBytes` in first-use order (a larger tensor is a chunk by
/// itself), and each chunk's device residency. A chunk is fetched when a
/// use finds it absent; while the resident chunks and the fetched one exceed
/// `residentBytes`, the resident chunk whose next use is farthest away and
/// that the use does not read is evicted (Belady's rule, optimal for a known
/// sequence of uses of chunks of one size); a chunk is dropped after its
/// last use. Only a position that reads more than the bound exceeds it, and
/// only while it runs. With no bound
/// every chunk is fetched once. The fetches come in the order of their
/// first use.
struct ChunkSchedule {
  std::vector<std::vector<int64_t>> chunks; ///< tensor indices per chunk
  std::vector<ChunkFetch> fetches;
  int64_t fetchedBytes = 0; ///< bytes all fetches copy
};

ChunkSchedule scheduleChunks(const std::vector<HostTensor> &tensors, int64_t chunkBytes,
                             int64_t residentBytes);

} // namespace colo

#endif
