#include "Shard.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace colo::runtime {

namespace {
Shape fullShape(const Shard &shard) {
  return Shape(shard.full_shape().begin(), shard.full_shape().end());
}

/// How many of `parts` flatten a block (Program.proto's flat_parts).
int64_t flatParts(const Shard &shard, int64_t parts) {
  return shard.flat_parts() > 0 ? shard.flat_parts() : parts;
}

/// Calls copy(fullOffset, localOffset, count) in elements for every
/// contiguous run of block `index` of `parts` of dimension `dim`.
template <typename F>
void forEachSplitRun(const Shard &shard, int64_t index, int64_t parts, F copy) {
  Shape full = fullShape(shard);
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

/// Calls copy(fullOffset, localOffset, count) in elements for every
/// contiguous run of the block.
template <typename F>
void forEachRun(const Shard &shard, int64_t index, int64_t parts, F copy) {
  if (!shard.flat()) {
    forEachSplitRun(shard, index, parts, copy);
    return;
  }
  // Part index % flat of the flattened block index / flat (the whole tensor
  // where the flattening takes every part): that block's runs, each cut to
  // the part.
  int64_t flat = flatParts(shard, parts), outer = parts / flat;
  int64_t n = numElements(fullShape(shard)) / outer, per = (n + flat - 1) / flat;
  int64_t begin = std::min(n, index % flat * per), end = std::min(n, begin + per);
  if (outer == 1) {
    copy(begin, int64_t(0), end - begin);
    return;
  }
  forEachSplitRun(shard, index / flat, outer, [&](int64_t f, int64_t l, int64_t c) {
    int64_t from = std::max(l, begin), to = std::min(l + c, end);
    if (from < to)
      copy(f + from - l, from - begin, to - from);
  });
}

} // namespace

std::string splitProblem(const Shard &shard, int64_t parts) {
  Shape full = fullShape(shard);
  auto str = [](int64_t v) { return std::to_string(v); };
  if (parts < 1)
    return "splits into " + str(parts) + " parts";
  if (numElements(full) < 0)
    return "full_shape " + shapeString(full) + " is invalid";
  if (!shard.flat() && shard.flat_parts() != 0)
    return "flat_parts " + str(shard.flat_parts()) + " without flat";
  int64_t flat = shard.flat() ? flatParts(shard, parts) : 1;
  if (shard.flat_parts() < 0 || (shard.flat() && parts % flat))
    return "flat_parts " + str(shard.flat_parts()) + " does not divide " + str(parts) +
           " parts";
  if (!shard.flat() || flat < parts) {
    int64_t split = parts / flat;
    if (shard.dim() < 0 || shard.dim() >= int(full.size()))
      return "dim " + str(shard.dim()) + " is not a dimension of " + shapeString(full);
    int64_t groups = std::max<int64_t>(shard.groups(), 1);
    if (shard.groups() < 0 || full[shard.dim()] % (groups * split))
      return "dimension " + str(shard.dim()) + " of " + shapeString(full) +
             " does not split into " + str(groups) + " groups of " + str(split) + " parts";
  }

  // Consecutive parts of a flattened tensor (or of a block that the checks
  // above showed the split tiles) tile it.
  if (shard.flat())
    return "";
  // Every row before the split dimension is cut alike: the blocks' runs
  // through the first must tile it.
  Shard row = shard;
  for (int i = 0; i < shard.dim(); ++i)
    row.set_full_shape(i, 1);
  struct Run {
    int64_t begin, end, index;
  };
  std::vector<Run> runs;
  for (int64_t index = 0; index < parts; ++index)
    forEachRun(row, index, parts, [&](int64_t f, int64_t, int64_t n) {
      if (n > 0)
        runs.push_back({f, f + n, index});
    });
  std::sort(runs.begin(), runs.end(),
            [](const Run &a, const Run &b) { return a.begin < b.begin; });
  int64_t covered = 0, total = numElements(fullShape(row));
  for (size_t k = 0; k < runs.size(); ++k) {
    if (runs[k].begin > covered)
      return "no block holds elements [" + str(covered) + ", " + str(runs[k].begin) + ")";
    if (runs[k].begin < covered)
      return "blocks " + str(runs[k - 1].index) + " and " + str(runs[k].index) + " of " +
             str(parts) + " both hold element " + str(runs[k].begin);
    covered = runs[k].end;
  }
  if (covered != total)
    return "no block holds elements [" + str(covered) + ", " + str(total) + ")";
  return "";
}
std::string shardProblem(const Buffer &buffer, const Mesh &mesh) {
  const Shard &shard = buffer.shard();
  int64_t parts = 1;
  std::vector<int> seen;
  for (int axis : shard.mesh_axes()) {
    if (axis < 0 || axis >= mesh.shape_size())
      return "mesh axis " + std::to_string(axis) + " is not an axis of the mesh";
    if (std::find(seen.begin(), seen.end(), axis) != seen.end())
      return "mesh axis " + std::to_string(axis) + " is named twice";
    seen.push_back(axis);
    parts *= mesh.shape(axis);
  }
  if (shard.flat() && shard.flat_parts() > 0) {
    // The flattening's ranks are the group's last axes.
    int64_t last = 1;
    for (auto a = shard.mesh_axes().rbegin(); a != shard.mesh_axes().rend() &&
                                              last < shard.flat_parts();
         ++a)
      last *= mesh.shape(*a);
    if (last != shard.flat_parts())
      return "flat_parts " + std::to_string(shard.flat_parts()) +
             " is not the size of the group's last mesh axes";
  }
  if (std::string problem = splitProblem(shard, parts); !problem.empty())
    return problem;
  Shape block = shardShape(shard, parts), shape(buffer.shape().begin(), buffer.shape().end());
  if (block != shape)
    return "the block of " + shapeString(fullShape(shard)) + " is " + shapeString(block) +
           ", not the buffer's " + shapeString(shape);
  return "";
}

Shape shardShape(const Shard &shard, int64_t parts) {
  Shape full = fullShape(shard);
  if (shard.flat()) {
    int64_t flat = flatParts(shard, parts);
    return {(numElements(full) / (parts / flat) + flat - 1) / flat};
  }
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
