//===- Shard.h - A rank's block of a sharded tensor --------------*- C++ -*-===//
//
// Buffers with a Shard (Program.proto) hold one block of a whole tensor. These
// copy the block out of the whole tensor (loading state and weights) and back
// into it (gathering weights to save them).
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_SHARD_H
#define COLO_RUNTIME_SHARD_H

#include "colo/Runtime/DType.h"

#include <string>

namespace colo::runtime {

/// Why `buffer`'s shard over `mesh` does not hold one block of a split
/// whose blocks hold every element of the whole tensor exactly once (an axis
/// outside the mesh or named twice, a dimension that does not divide, a
/// buffer shape other than the block's), or "" if it does.
std::string shardProblem(const Buffer &buffer, const Mesh &mesh);

/// Why blocks 0..parts-1 of `shard`'s whole tensor do not hold every element
/// exactly once (a dimension that does not divide, a bad dim), or "".
std::string splitProblem(const Shard &shard, int64_t parts);

/// The shape a rank holds of `shard`'s whole tensor split into `parts`.
Shape shardShape(const Shard &shard, int64_t parts);

/// Copies block `index` of `parts` of the whole tensor `full` into `local`
/// (flat shards are zero-padded).
void copyBlockOut(const Shard &shard, int64_t index, int64_t parts, int64_t elementSize,
                  const void *full, void *local);
/// The inverse: writes `local` into its place in `full` (padding dropped).
void copyBlockIn(const Shard &shard, int64_t index, int64_t parts, int64_t elementSize,
                 const void *local, void *full);

} // namespace colo::runtime

#endif
