// Arena offsets for the temporaries: buffers whose lifetimes overlap never
// share bytes; the rest reuse memory. Greedy by size (largest first), each
// at the lowest aligned offset that fits among the placed buffers it
// overlaps with in time.
#include "ExecutableBuilder.h"

#include "colo/Runtime/Executable.h"

#include <algorithm>
#include <limits>
#include <numeric>

using namespace colo;
namespace rt = colo::runtime;

namespace {
constexpr int64_t kAlignment = 64;

int64_t byteSize(const rt::Buffer &b) {
  int64_t n = 1;
  for (int64_t d : b.shape())
    n *= d;
  switch (b.dtype()) {
  case rt::F64:
  case rt::I64:
    return n * 8;
  case rt::F32:
  case rt::I32:
    return n * 4;
  case rt::BF16:
  case rt::F16:
    return n * 2;
  default:
    return n;
  }
}

} // namespace

int colo::storageOf(const rt::Program &program, int id) {
  const rt::Buffer &b = program.buffers(id);
  return b.has_alias_of() && b.alias_of() >= 0 ? b.alias_of() : id;
}

void colo::planMemory(rt::Program &program) {
  int n = program.buffers_size();
  auto root = [&](int id) { return storageOf(program, id); };
  std::vector<int> first(n, std::numeric_limits<int>::max()), last(n, -1);
  for (int i = 0; i < program.steps_size(); ++i)
    // An overlapped collective works on its buffers until its wait.
    rt::forEachBuffer(program.steps(i).has_wait()
                          ? program.steps(program.steps(i).wait().collective_step())
                          : program.steps(i),
                      [&](int id) {
                        int r = root(id);
                        first[r] = std::min(first[r], i);
                        last[r] = std::max(last[r], i);
                      });
  for (int id : program.loss())
    last[root(id)] = program.steps_size();

  std::vector<int> temps;
  for (int id = 0; id < n; ++id)
    if (program.buffers(id).kind() == rt::Buffer::TEMP &&
        !program.buffers(id).has_alias_of() && last[id] >= 0)
      temps.push_back(id);
  std::stable_sort(temps.begin(), temps.end(), [&](int a, int b) {
    return byteSize(program.buffers(a)) > byteSize(program.buffers(b));
  });

  struct Placed {
    int64_t offset, size;
    int first, last;
  };
  std::vector<Placed> placed;
  int64_t arena = 0;
  for (int id : temps) {
    int64_t size = (byteSize(program.buffers(id)) + kAlignment - 1) / kAlignment * kAlignment;
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const Placed &p : placed)
      if (p.first <= last[id] && first[id] <= p.last)
        busy.emplace_back(p.offset, p.offset + p.size);
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (auto [begin, end] : busy) {
      if (offset + size <= begin)
        break;
      offset = std::max(offset, end);
    }
    program.mutable_buffers(id)->set_offset(offset);
    placed.push_back({offset, size, first[id], last[id]});
    arena = std::max(arena, offset + size);
  }
  program.set_arena_bytes(arena);
}
