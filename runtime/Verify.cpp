// Checks every rank's program before anything runs: the sharded state's
// blocks, the communication replayed to find mismatched messages and
// deadlocks, and the device memory each rank plans.
#include "colo/Runtime/Verify.h"

#include "colo/Runtime/DType.h"
#include "colo/Runtime/Device.h"
#include "colo/Runtime/Error.h"
#include "Shard.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>
#include <vector>

namespace colo::runtime {
namespace {

struct Event {
  int step;
  Collective::Kind kind;
  std::vector<int> group; // world ranks, in group order
  int peer = -1;          // world rank (SEND, RECV)
  int tag = 0;
  int64_t bytes = 0;
  int64_t root = -1; // group index (BROADCAST, REDUCE)
};

int64_t bytesOf(const Program &p, int32_t id) {
  if (id < 0 || id >= p.buffers_size())
    return -1;
  int64_t n = dtypeSize(p.buffers(id).dtype());
  for (int64_t d : p.buffers(id).shape())
    n *= d;
  return n;
}

std::vector<int64_t> coordsOf(const Mesh &mesh, int rank) {
  std::vector<int64_t> c(mesh.shape_size());
  for (int i = mesh.shape_size() - 1; i >= 0; --i) {
    c[i] = rank % mesh.shape(i);
    rank /= int(mesh.shape(i));
  }
  return c;
}

int rankOf(const Mesh &mesh, const std::vector<int64_t> &c) {
  int64_t r = 0;
  for (int i = 0; i < mesh.shape_size(); ++i)
    r = r * mesh.shape(i) + c[i];
  return int(r);
}

/// The world ranks along `axes` (the first slowest) through `rank`.
std::vector<int> groupOf(const Mesh &mesh, int rank, const std::vector<int> &axes) {
  std::vector<std::vector<int64_t>> members{coordsOf(mesh, rank)};
  for (int axis : axes) {
    std::vector<std::vector<int64_t>> next;
    for (const auto &m : members)
      for (int64_t c = 0; c < mesh.shape(axis); ++c) {
        next.push_back(m);
        next.back()[axis] = c;
      }
    members = std::move(next);
  }
  std::vector<int> ranks;
  for (const auto &m : members)
    ranks.push_back(rankOf(mesh, m));
  return ranks;
}

const char *kindName(Collective::Kind k) {
  switch (k) {
  case Collective::ALL_REDUCE: return "all-reduce";
  case Collective::ALL_GATHER: return "all-gather";
  case Collective::REDUCE_SCATTER: return "reduce-scatter";
  case Collective::ALL_TO_ALL: return "all-to-all";
  case Collective::SEND: return "send";
  case Collective::RECV: return "receive";
  case Collective::SHIFT:
    return "shift";
  case Collective::BROADCAST:
    return "broadcast";
  case Collective::REDUCE:
    return "reduce";
  default: return "collective";
  }
}
} // namespace

std::string verifyShards(const Program &top) {
  const Mesh &mesh = top.mesh();
  int axis = top.stages_size() ? top.pipeline_axis() : -1;
  int stages = std::max(top.stages_size(), 1);
  for (int s = 0; s < stages; ++s) {
    const Program &p = top.stages_size() ? top.stages(s) : top;
    for (const Buffer &b : p.buffers()) {
      if (!b.has_shard())
        continue;
      std::vector<int> axes(b.shard().mesh_axes().begin(), b.shard().mesh_axes().end());
      std::string problem = shardProblem(b, mesh);
      if (problem.empty() && std::find(axes.begin(), axes.end(), axis) != axes.end())
        problem = "split over the pipeline axis, whose ranks run other stages";
      if (problem.empty())
        continue;
      std::string where = top.stages_size() ? "stage " + std::to_string(s) + " " : "";
      std::string ranks;
      if (std::all_of(axes.begin(), axes.end(),
                      [&](int a) { return a >= 0 && a < mesh.shape_size(); })) {
        std::vector<int64_t> first(mesh.shape_size(), 0);
        if (axis >= 0)
          first[axis] = s;
        for (int r : groupOf(mesh, rankOf(mesh, first), axes))
          ranks += (ranks.empty() ? " (blocks on ranks " : ", ") + std::to_string(r);
        ranks += ")";
      }
      return where + "buffer '" + b.name() + "': its shard" + ranks + ": " + problem;
    }
  }
  return "";
}

namespace {
/// The scratch a CPU session reserves for `p`'s GEMMs and convolutions:
/// their preparation reserves it and touches no data (the pointers are
/// captured for a run that never comes).
int64_t cpuScratchBytes(const Program &p) {
  alignas(64) static char nowhere[64];
  auto scratch = std::make_shared<Scratch>();
  std::unique_ptr<Device> cpu = createCpuDevice();
  auto f32 = reinterpret_cast<float *>(nowhere);
  for (const Step &step : p.steps())
    try {
      if (step.has_gemm()) {
        const Gemm &g = step.gemm();
        GemmEpilogue epilogue{g.has_bias() ? f32 : nullptr, g.has_residual() ? f32 : nullptr};
        cpu->prepareGemm(g, p.buffers(g.c()).dtype(), nowhere, nowhere, nowhere, epilogue,
                         scratch);
      } else if (step.has_conv()) {
        const Conv2d &c = step.conv();
        cpu->prepareConv(c, f32, f32, c.has_bias() && c.bias() >= 0 ? f32 : nullptr, f32,
                         scratch);
      }
    } catch (const Error &) {
      // The session reports what it cannot prepare.
    }
  return scratch->size();
}
} // namespace

PlannedMemory plannedMemory(const Program &p) {
  auto aligned = [](int64_t v) { return (std::max<int64_t>(v, 1) + 63) / 64 * 64; };
  PlannedMemory m;
  m.arena = aligned(p.arena_bytes());
  m.host = p.host_arena_bytes();
  for (const Step &step : p.steps())
    if (step.has_transfer())
      m.linkBytes += std::max<int64_t>(bytesOf(p, step.transfer().src()), 0);
  for (int32_t id = 0; id < p.buffers_size(); ++id) {
    const Buffer &b = p.buffers(id);
    if (b.has_alias_of() && b.alias_of() >= 0)
      continue;
    int64_t bytes = std::max<int64_t>(bytesOf(p, id), 0);
    if (b.space() != Buffer::DEVICE) {
      m.host += b.kind() != Buffer::TEMP ? bytes : 0;
      continue;
    }
    if (b.kind() != Buffer::TEMP)
      m.stateAndInputs += aligned(bytes);
    if (bytes > m.largestBytes) {
      m.largestBytes = bytes;
      m.largest = b.name();
    }
  }
  m.stateAndInputs = aligned(m.stateAndInputs);
  m.scratch = cpuScratchBytes(p);
  return m;
}

std::string verifyDeviceMemory(const Program &program, int64_t capacity) {
  auto mb = [](int64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MB", double(bytes) / 1e6);
    return std::string(text);
  };
  int worst = -1;
  PlannedMemory most;
  int stages = std::max(program.stages_size(), 1);
  for (int s = 0; s < stages; ++s) {
    PlannedMemory m = plannedMemory(program.stages_size() ? program.stages(s) : program);
    if (m.total() > capacity && m.total() > most.total()) {
      worst = s;
      most = m;
    }
  }
  if (worst < 0)
    return "";
  std::string where = program.stages_size() ? " on pipeline stage " + std::to_string(worst) : "";
  return "the step plans " + mb(most.total()) + " of device memory per rank" + where +
         " (arena " + mb(most.arena) + ", state and inputs " + mb(most.stateAndInputs) +
         ", scratch " + mb(most.scratch) + "; the largest buffer, '" + most.largest + "', " + mb(most.largestBytes) +
         "), more than the " + mb(capacity) + " of --device-memory by " +
         mb(most.total() - capacity);
}

std::string verifyCommunication(const Program &top) {
  const Mesh &mesh = top.mesh();
  int world = 1;
  for (int64_t d : mesh.shape())
    world *= int(d);
  int axis = top.stages_size() ? top.pipeline_axis() : -1;
  if (top.stages_size() && (axis < 0 || axis >= mesh.shape_size() ||
                            mesh.shape(axis) != top.stages_size()))
    return "the pipeline stages do not match the mesh's pipeline axis";

  std::vector<const Program *> programOf(world);
  std::vector<std::vector<Event>> events(world);
  for (int r = 0; r < world; ++r) {
    const Program &p = axis >= 0 ? top.stages(int(coordsOf(mesh, r)[axis])) : top;
    programOf[r] = &p;
    for (int i = 0; i < p.steps_size(); ++i) {
      if (!p.steps(i).has_collective())
        continue;
      const Collective &c = p.steps(i).collective();
      if (c.kind() == Collective::ALL_SLICE)
        continue; // no communication
      Event e{i, c.kind(), groupOf(mesh, r, {c.mesh_axes().begin(), c.mesh_axes().end()})};
      if (c.kind() == Collective::SHIFT) {
        // A send along the ring, then the receive from the other side.
        int n = int(e.group.size());
        auto at = std::find(e.group.begin(), e.group.end(), r) - e.group.begin();
        int64_t off = c.offset();
        Event out = e, in = e;
        out.kind = Collective::SEND, in.kind = Collective::RECV;
        out.peer = e.group[size_t((at + off) % n)];
        in.peer = e.group[size_t(((at - off) % n + n) % n)];
        out.tag = in.tag = c.tag();
        out.bytes = in.bytes = bytesOf(p, c.input());
        events[r].push_back(std::move(out));
        events[r].push_back(std::move(in));
        continue;
      }
      bool send = c.kind() == Collective::SEND, recv = c.kind() == Collective::RECV;
      if (send || recv) {
        if (c.peer() < 0 || c.peer() >= int64_t(e.group.size()))
          return "rank " + std::to_string(r) + " step " + std::to_string(i) +
                 ": peer " + std::to_string(c.peer()) + " is not in its group";
        e.peer = e.group[size_t(c.peer())];
        e.tag = c.tag();
      }
      e.bytes = bytesOf(p, recv ? c.output() : c.input());
      if (c.kind() == Collective::BROADCAST || c.kind() == Collective::REDUCE)
        e.root = c.root();
      events[r].push_back(std::move(e));
    }
  }

  auto where = [&](int r, const Event &e) {
    const Step &s = programOf[r]->steps(e.step);
    return "rank " + std::to_string(r) + " step " + std::to_string(e.step) +
           (s.name().empty() ? "" : " '" + s.name() + "'") + " (" + kindName(e.kind) +
           (e.peer >= 0 ? (e.kind == Collective::SEND ? " to rank " : " from rank ") +
                              std::to_string(e.peer) + ", tag " + std::to_string(e.tag)
                        : std::string()) +
           ")";
  };

  // (sender, receiver, tag) -> (bytes, the sender's event), in send order.
  std::map<std::tuple<int, int, int>, std::vector<std::pair<int64_t, std::string>>> inFlight;
  std::vector<size_t> next(world, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < world; ++r) {
      while (next[r] < events[r].size()) {
        const Event &e = events[r][next[r]];
        if (e.kind == Collective::SEND) {
          inFlight[{r, e.peer, e.tag}].push_back({e.bytes, where(r, e)});
        } else if (e.kind == Collective::RECV) {
          auto it = inFlight.find({e.peer, r, e.tag});
          if (it == inFlight.end() || it->second.empty())
            break;
          auto [bytes, sender] = it->second.front();
          if (bytes != e.bytes)
            return where(r, e) + " receives " + std::to_string(e.bytes) + " bytes but " +
                   sender + " sends " + std::to_string(bytes);
          it->second.erase(it->second.begin());
        } else {
          // A collective completes when every member has reached it.
          bool ready = true;
          for (int m : e.group) {
            if (next[m] >= events[m].size()) {
              return where(r, e) + " waits for rank " + std::to_string(m) +
                     ", which has finished its step";
            }
            const Event &o = events[m][next[m]];
            if (o.kind == Collective::SEND || o.kind == Collective::RECV) {
              ready = false;
              break;
            }
            if (o.group != e.group) {
              ready = false;
              break;
            }
            if (o.kind != e.kind || o.bytes != e.bytes || o.root != e.root)
              return where(r, e) + " meets " + where(m, o) + " in the same group" +
                     (o.root != e.root ? " with another root" : "");
          }
          if (!ready)
            break;
          for (int m : e.group)
            if (m != r)
              ++next[m];
        }
        ++next[r];
        progress = true;
      }
    }
  }
  for (int r = 0; r < world; ++r)
    if (next[r] < events[r].size()) {
      std::string waiting;
      for (int q = 0; q < world; ++q)
        if (next[q] < events[q].size())
          waiting += (waiting.empty() ? "" : "; ") + where(q, events[q][next[q]]);
      return "the ranks would deadlock: " + waiting + " wait for each other";
    }
  for (const auto &[key, sends] : inFlight)
    if (!sends.empty())
      return sends.front().second + " is never received by rank " +
             std::to_string(std::get<1>(key));
  return "";
}

} // namespace colo::runtime
