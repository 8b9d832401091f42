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

/// How many of `parts` split `inner_dim` (Program.proto's inner_parts; 1
/// where none does).
int64_t innerParts(const Shard &shard) { return shard.inner_parts() > 0 ? shard.inner_parts() : 1; }

/// Calls copy(fullOffset, localOffset, count) in elements for every
/// contiguous run of block `index` of `parts`: of dimension `dim` (by
/// groups) and, with inner_parts, of dimension `inner_dim`.
template <typename F>
void forEachSplitRun(const Shard &shard, int64_t index, int64_t parts, F copy) {
  Shape full = fullShape(shard), local = full;
  struct Run {
    int64_t full, local, count;
  };
  // Per dimension, the runs of its indices that the block holds.
  std::vector<std::vector<Run>> runs(full.size());
  for (size_t d = 0; d < full.size(); ++d)
    runs[d] = {{0, 0, full[d]}};
  int64_t inner = innerParts(shard), dim = shard.dim(), last = dim;
  int64_t groups = std::max<int64_t>(shard.groups(), 1), group = full[dim] / groups;
  int64_t block = group / (parts / inner);
  runs[dim].clear();
  for (int64_t g = 0; g < groups; ++g)
    runs[dim].push_back({g * group + index / inner * block, g * block, block});
  local[dim] = groups * block;
  if (shard.inner_parts() > 0) {
    int64_t d = shard.inner_dim(), n = full[d] / inner;
    runs[d] = {{index % inner * n, 0, n}};
    local[d] = n;
    last = std::max(last, d);
  }
  // The dimensions after the last split one are copied whole with it.
  int64_t tail = 1;
  for (size_t d = last + 1; d < full.size(); ++d)
    tail *= full[d];
  std::vector<int64_t> fullStride(last + 1, tail), localStride(last + 1, tail);
  for (int64_t d = last - 1; d >= 0; --d) {
    fullStride[d] = fullStride[d + 1] * full[d + 1];
    localStride[d] = localStride[d + 1] * local[d + 1];
  }
  auto walk = [&](auto &self, int64_t d, int64_t fullAt, int64_t localAt) -> void {
    for (const Run &r : runs[d]) {
      if (d == last) {
        copy(fullAt + r.full * fullStride[d], localAt + r.local * localStride[d], r.count * tail);
        continue;
      }
      for (int64_t i = 0; i < r.count; ++i)
        self(self, d + 1, fullAt + (r.full + i) * fullStride[d],
             localAt + (r.local + i) * localStride[d]);
    }
  };
  walk(walk, 0, 0, 0);
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
  if (shard.inner_parts() != 0) {
    if (shard.flat() && flat == parts)
      return "inner_parts with a whole flattened tensor";
    int64_t d = shard.inner_dim(), n = shard.inner_parts();
    if (n < 0 || parts % n)
      return "inner_parts " + str(n) + " does not divide " + str(parts) + " parts";
    if (d < 0 || d >= int(full.size()) || d == shard.dim())
      return "inner_dim " + str(d) + " is not a dimension of " + shapeString(full) +
             " other than dim " + str(shard.dim());
    if (full[d] % n)
      return "dimension " + str(d) + " of " + shapeString(full) + " does not split into " + str(n) +
             " parts";
  }
  if (!shard.flat() || flat < parts) {
    int64_t split = parts / flat / innerParts(shard);
    if (shard.dim() < 0 || shard.dim() >= int(full.size()))
      return "dim " + str(shard.dim()) + " is not a dimension of " + shapeString(full);
    int64_t groups = std::max<int64_t>(shard.groups(), 1);
    if (shard.groups() < 0 || full[shard.dim()] % (groups * split))
      return "dimension " + str(shard.dim()) + " of " + shapeString(full) +
             " does not split into " + str(groups) + " groups of " + str(split) + " parts";
  }

  // Consecutive parts of a flattened tensor (or of a block that the checks
  // above showed the split tiles) tile it, as do blocks of two dimensions
  // that each divide.
  if (shard.flat() || shard.inner_parts() > 0)
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
  // The flattening's ranks are the group's last axes, and the inner
  // dimension's the last before them.
  std::vector<int64_t> sizes;
  for (int axis : shard.mesh_axes())
    sizes.push_back(mesh.shape(axis));
  auto takeLast = [&](int64_t size) {
    int64_t taken = 1;
    while (!sizes.empty() && taken < size)
      taken *= sizes.back(), sizes.pop_back();
    return taken == size;
  };
  if (shard.flat() && shard.flat_parts() > 0 && !takeLast(shard.flat_parts()))
    return "flat_parts " + std::to_string(shard.flat_parts()) +
           " is not the size of the group's last mesh axes";
  if (shard.inner_parts() > 0 && !takeLast(shard.inner_parts()))
    return "inner_parts " + std::to_string(shard.inner_parts()) +
           " is not the size of the group's last mesh axes before the flattening's";
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
  full[shard.dim()] /= parts / innerParts(shard);
  if (shard.inner_parts() > 0)
    full[shard.inner_dim()] /= shard.inner_parts();
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
