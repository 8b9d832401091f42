//===- Communicator.cpp - What both backends share -------------------------===//

#include "colo/Runtime/Communicator.h"
#include "colo/Runtime/Error.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <cstring>

namespace colo::runtime {

Communicator::~Communicator() = default;
Work::~Work() = default;

namespace {
/// Work that was finished when it was started.
struct FinishedWork final : Work {
  bool progress() override { return true; }
  void wait() override {}
};
} // namespace

Communicator::CallScope::CallScope(Communicator &comm, bool broken,
                                   const char *backend, const char *name)
    : what(name), stats_(comm.stats_) {
  if (broken)
    throw Error(what + ": " + backend +
                " is unusable after an earlier communication failure");
  ++stats_.calls;
}

Communicator::CallScope::~CallScope() {
  stats_.seconds += std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start_)
                        .count();
}

void Communicator::createGroups(const std::vector<Group> &) {}

std::unique_ptr<Work> Communicator::startAllReduce(void *data, int64_t count, DType dtype,
                                                   ReduceOp op, const Group &group) {
  allReduce(data, count, dtype, op, group);
  return std::make_unique<FinishedWork>();
}

std::unique_ptr<Work> Communicator::startAllGather(const void *send, void *recv, int64_t count,
                                                   DType dtype, const Group &group) {
  allGather(send, recv, count, dtype, group);
  return std::make_unique<FinishedWork>();
}

std::unique_ptr<Work> Communicator::startBroadcast(void *data, int64_t count, DType dtype,
                                                   int root, const Group &group) {
  broadcast(data, count, dtype, root, group);
  return std::make_unique<FinishedWork>();
}

std::unique_ptr<Work> Communicator::startShift(const void *send, void *recv, int64_t bytes, int to,
                                               int from, int tag) {
  sendAsync(send, bytes, to, tag);
  this->recv(recv, bytes, from, tag);
  return std::make_unique<FinishedWork>();
}

Group Communicator::world() const {
  Group all(static_cast<size_t>(size()));
  for (int r = 0; r < size(); ++r)
    all[size_t(r)] = r;
  return all;
}

int64_t ringBytesSent(const std::string &collective, int64_t bytes,
                      int groupSize) {
  std::string name;
  for (char c : collective)
    if (c != '_' && c != '-')
      name += char(std::tolower(static_cast<unsigned char>(c)));
  bool known = name == "allreduce" || name == "allgather" ||
               name == "reducescatter" || name == "alltoall" ||
               name == "broadcast" || name == "send" || name == "sendrecv";
  if (!known)
    throw Error("unknown collective '" + collective +
                "' (allReduce, allGather, reduceScatter, allToAll, broadcast, "
                "send)");
  if (name == "send" || name == "sendrecv")
    return std::max<int64_t>(bytes, 0);
  if (groupSize <= 1 || bytes <= 0)
    return 0;
  __int128 n = bytes, p = groupSize;
  // All-reduce: reduce-scatter then all-gather, each p - 1 chunks of n / p.
  // When the element count does not divide by p the chunks differ by one
  // element, so members send a little more or less than this, but the
  // group's total is exactly p times it.
  if (name == "allreduce")
    return int64_t(2 * (p - 1) * n / p);
  // Every block but one's own goes out once; n is a multiple of p here.
  if (name == "allgather" || name == "reducescatter" || name == "alltoall")
    return int64_t((p - 1) * n / p);
  // Broadcast is a pipelined chain from the root: every member sends the
  // whole tensor once, except the last in the chain, which sends nothing.
  return bytes;
}

namespace {
char waitingFor[256];
volatile std::sig_atomic_t waitingForPeer = -1;
} // namespace

const char *currentWait() { return waitingFor; }
int currentWaitPeer() { return waitingFor[0] ? int(waitingForPeer) : -1; }

void setCurrentWait(const std::string &what, int peer) {
  // The first character goes in last, so that a signal handler reading in
  // between sees "" rather than a mix of two messages.
  size_t n = std::min(what.size(), sizeof waitingFor - 1);
  waitingFor[0] = '\0';
  if (n == 0)
    return;
  waitingForPeer = peer;
  std::memcpy(waitingFor + 1, what.data() + 1, n - 1);
  waitingFor[n] = '\0';
  std::atomic_signal_fence(std::memory_order_release);
  waitingFor[0] = what[0];
}

bool launchedWithRanks() {
  for (const char *var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"})
    if (const char *value = std::getenv(var))
      return std::atoi(value) > 1;
  // PMIx alone does not say how many, and MPI_Init of a lone process sets
  // PMIX_RANK=0 itself: only another rank's number proves company.
  const char *pmixRank = std::getenv("PMIX_RANK");
  return pmixRank && std::atoi(pmixRank) > 0;
}

} // namespace colo::runtime
