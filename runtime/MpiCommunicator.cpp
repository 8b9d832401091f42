//===- MpiCommunicator.cpp - Collectives over MPI point-to-point ----------===//
//
// Ring algorithms over MPI_Isend/MPI_Irecv, completed by polling: MPI's own
// collectives and blocking calls cannot time out, and a run whose peer died
// must end with a message, not hang. Messages are raw bytes. Each group has
// its own MPI communicator (createGroups splits them off a copy of the world
// once; a group used without that is created at first use), and its calls'
// tags are its own sequence numbers, so no two groups share a tag space and
// two calls never match each other's messages. Users' point-to-point
// messages go on MPI_COMM_WORLD, which no collective uses.
//
//===----------------------------------------------------------------------===//

#include "colo/Runtime/Communicator.h"
#include "colo/Runtime/Error.h"

// The C API only: OpenMPI's and MPICH's C++ bindings need their own library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <memory>
#include <thread>
#include <type_traits>

namespace colo::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// MPI counts are int: larger messages go as several pieces.
constexpr int64_t kMaxPiece = int64_t(1) << 30;
// Broadcast segments: small enough that the chain pipelines.
constexpr int64_t kSegment = int64_t(1) << 18;
// Polls before a wait starts sleeping between polls, so that oversubscribed
// ranks leave the cores to the peers they wait for.
constexpr int kSpinPolls = 200;

// Failure notices travel on a communicator of their own: kNoticeTag carries
// a failing rank's message to every other rank, kAnswerTag the reply that it
// was read (and printed), after which the failing rank ends the run.
constexpr int kNoticeTag = 0, kAnswerTag = 1;
constexpr int kNoticeBytes = 1024;
// How long a failing rank waits for the answers, and a rank that answered
// waits for the failing one to end the run.
constexpr double kGraceSeconds = 1.0;

bool ownsMpi = false; // this file called MPI_Init, so it finalizes
bool broken = false;  // a wait failed: MPI_Finalize would wait for the lost peer
MPI_Request *postedNotice = nullptr; // the notice receive, cancelled before finalizing

/// Cancels a receive that is still posted (a cancelled receive completes
/// locally).
void cancelReceive(MPI_Request &request) {
  if (request == MPI_REQUEST_NULL)
    return;
  MPI_Cancel(&request);
  MPI_Wait(&request, MPI_STATUS_IGNORE);
}

bool pastDeadline(Clock::time_point deadline) { return Clock::now() > deadline; }

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(std::min(seconds, 1e8)));
}

void finalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized || !ownsMpi)
    return;
  if (broken) {
    std::fflush(nullptr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (postedNotice)
    cancelReceive(*postedNotice);
  MPI_Finalize();
}

std::string mpiMessage(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, length);
}

void check(int code, const char *call, const std::string &what) {
  if (code == MPI_SUCCESS)
    return;
  broken = true;
  throw Error(what + ": " + call + " failed: " + mpiMessage(code));
}

/// MPI calls on `comm` return their errors instead of aborting, so that
/// `check` can report them.
void returnErrors(MPI_Comm comm, const std::string &what) {
  check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", what);
}

std::string groupString(const Group &group) {
  std::string s = "[";
  for (size_t i = 0; i < group.size(); ++i)
    s += (i ? ", " : "") + std::to_string(group[i]);
  return s + "]";
}

int64_t mod(int64_t a, int64_t p) { return ((a % p) + p) % p; }

/// `count` elements in p chunks; the first count % p get one more element.
struct Chunks {
  int64_t count, p;
  int64_t size(int64_t k) const { return count / p + (k < count % p); }
  int64_t offset(int64_t k) const {
    return k * (count / p) + std::min(k, count % p);
  }
  int64_t largest() const { return size(0); }
};

const char *opName(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return "sum";
  case ReduceOp::Average:
    return "average";
  case ReduceOp::Max:
    return "max";
  }
  return "?";
}

template <typename T>
void combineAs(void *accumulator, const void *in, int64_t n, ReduceOp op) {
  T *acc = static_cast<T *>(accumulator);
  const T *x = static_cast<const T *>(in);
  if (op == ReduceOp::Max) {
    // NaN wins, as in the frameworks.
    for (int64_t j = 0; j < n; ++j)
      if (!(acc[j] >= x[j]) && acc[j] == acc[j])
        acc[j] = x[j];
  } else if constexpr (std::is_integral_v<T>) {
    for (int64_t j = 0; j < n; ++j) // wraps instead of undefined overflow
      acc[j] = T(uint64_t(acc[j]) + uint64_t(x[j]));
  } else {
    for (int64_t j = 0; j < n; ++j)
      acc[j] += x[j];
  }
}

void combine(void *acc, const void *in, int64_t n, DType dtype, ReduceOp op) {
  if (dtype == F32)
    combineAs<float>(acc, in, n, op);
  else if (dtype == F64)
    combineAs<double>(acc, in, n, op);
  else
    combineAs<int64_t>(acc, in, n, op);
}

void divide(void *data, int64_t n, DType dtype, int p) {
  if (dtype == F32)
    for (float *x = static_cast<float *>(data), *e = x + n; x != e; ++x)
      *x /= float(p);
  else
    for (double *x = static_cast<double *>(data), *e = x + n; x != e; ++x)
      *x /= double(p);
}

class MpiCommunicator final : public Communicator {
public:
  MpiCommunicator() {
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank", "mpi");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size", "mpi");
    int *ub = nullptr, found = 0;
    check(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found),
          "MPI_Comm_get_attr", "mpi");
    tags_ = (found ? int64_t(*ub) : 32767) + 1;
    // Collective over the world, like MPI_Init: every rank constructs one.
    check(MPI_Comm_dup(MPI_COMM_WORLD, &collectives_), "MPI_Comm_dup", "mpi");
    returnErrors(collectives_, "mpi");
    check(MPI_Comm_dup(MPI_COMM_WORLD, &notices_), "MPI_Comm_dup", "mpi");
    returnErrors(notices_, "mpi");
    check(MPI_Irecv(notice_, kNoticeBytes, MPI_BYTE, MPI_ANY_SOURCE, kNoticeTag, notices_,
                    &noticeRequest_),
          "MPI_Irecv", "mpi");
    postedNotice = &noticeRequest_;
  }

  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized)
      return;
    for (auto &[group, channel] : groups_)
      if (channel.comm != MPI_COMM_SELF)
        MPI_Comm_free(&channel.comm);
    MPI_Comm_free(&collectives_);
    cancelReceive(noticeRequest_);
    postedNotice = nullptr;
    MPI_Comm_free(&notices_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }

  void allReduce(void *data, int64_t count, DType dtype, ReduceOp op,
                 const Group &group) override {
    Call call(*this, "allReduce");
    std::unique_ptr<RingAllReduce> ring = startRing(data, count, dtype, op, group, call);
    if (ring->steps() > 0)
      ring->finish(stage(receive_, ring->stagingBytes()));
  }

  std::unique_ptr<Work> startAllReduce(void *data, int64_t count, DType dtype, ReduceOp op,
                                       const Group &group) override {
    Call call(*this, "allReduce");
    std::unique_ptr<RingAllReduce> ring = startRing(data, count, dtype, op, group, call);
    if (ring->steps() > 0)
      ring->own();
    ring->progress();
    return ring;
  }

  void allGather(const void *send, void *recv, int64_t count, DType dtype,
                 const Group &group) override {
    Call call(*this, "allGather");
    Gather g = startGather(send, recv, count, dtype, group, call);
    if (g.chunks.p > 1 && count > 0)
      allGatherRing(g.out, g.chunks, g.es, g.me, g.ch, call.what);
  }

  std::unique_ptr<Work> startAllGather(const void *send, void *recv, int64_t count, DType dtype,
                                       const Group &group) override {
    Call call(*this, "allGather");
    Gather g = startGather(send, recv, count, dtype, group, call);
    // The ring all-reduce's second half: each member's chunk is its block.
    auto ring = std::make_unique<RingAllReduce>(*this, g.out, g.chunks, g.es, dtype, ReduceOp::Sum,
                                                g.me, g.ch, /*gatherOnly=*/true);
    if (ring->steps() > 0)
      ring->own();
    ring->progress();
    return ring;
  }

  void reduceScatter(const void *send, void *recv, int64_t count, DType dtype,
                     ReduceOp op, const Group &group) override {
    Call call(*this, "reduceScatter");
    int me = member(group, call.what);
    checkReduce(dtype, op, call.what);
    checkBuffer(send, count, call.what);
    checkBuffer(recv, count, call.what);
    Channel ch = channel(group, call.what);
    int64_t p = group.size();
    if (count == 0)
      return;
    if (p == 1) {
      std::memmove(recv, send, count * dtypeSize(dtype));
      return;
    }
    reduceScatterRing(static_cast<const char *>(send),
                      static_cast<char *>(recv), Chunks{count * p, p},
                      dtypeSize(dtype), dtype, op, me, ch, call.what);
  }

  void allToAll(const void *send, void *recv, int64_t count, DType dtype,
                const Group &group) override {
    Call call(*this, "allToAll");
    int me = member(group, call.what);
    int64_t block = count * elementSize(dtype, call.what);
    checkBuffer(send, count, call.what);
    checkBuffer(recv, count, call.what);
    Channel ch = channel(group, call.what);
    const char *in = static_cast<const char *>(send);
    char *out = static_cast<char *>(recv);
    if (block > 0)
      std::memmove(out + me * block, in + me * block, block);
    // Pairwise exchange: at step s, send to the member s ahead and receive
    // from the one s behind, so every pair meets exactly once.
    int64_t p = group.size();
    for (int64_t s = 1; s < p && block > 0; ++s) {
      int64_t to = mod(me + s, p), from = mod(me - s, p);
      Pending pending;
      postSend(pending, in + to * block, block, int(to), ch, call.what);
      postRecv(pending, out + from * block, block, int(from), ch, call.what);
      wait(pending, call.what);
    }
  }

  void broadcast(void *data, int64_t count, DType dtype, int root,
                 const Group &group) override {
    Call call(*this, "broadcast");
    startChain(data, count, dtype, root, group, call)->wait();
  }

  std::unique_ptr<Work> startBroadcast(void *data, int64_t count, DType dtype, int root,
                                       const Group &group) override {
    Call call(*this, "broadcast");
    std::unique_ptr<ChainBroadcast> chain = startChain(data, count, dtype, root, group, call);
    chain->progress();
    return chain;
  }

  /// The broadcast's chain run backwards: the member before the root in
  /// group order starts, and each member adds what it receives to its own
  /// input and passes the sum on, segment by segment, so that every member
  /// but the root sends the tensor once.
  void reduce(const void *send, void *recv, int64_t count, DType dtype, int root,
              const Group &group) override {
    Call call(*this, "reduce");
    int me = member(group, call.what);
    checkReduce(dtype, ReduceOp::Sum, call.what);
    int64_t es = elementSize(dtype, call.what), bytes = count * es;
    checkBuffer(send, count, call.what);
    checkBuffer(recv, count, call.what);
    int64_t p = group.size();
    checkRoot(root, group, call.what);
    Channel ch = channel(group, call.what);
    char *sum = static_cast<char *>(recv);
    if (send != recv && bytes > 0)
      std::memmove(sum, send, size_t(bytes));
    if (p == 1 || bytes == 0)
      return;
    int64_t position = mod(me - root, p);
    int prev = int(mod(me - 1, p)), next = int(mod(me + 1, p));
    int64_t segment = kSegment / es * es, segments = (bytes + segment - 1) / segment;
    char *staging = position == p - 1 ? nullptr : stage(receive_, std::min(segment, bytes));
    Pending sends;
    for (int64_t k = 0; k < segments; ++k) {
      int64_t size = std::min(segment, bytes - k * segment);
      if (staging) {
        Pending in;
        postRecv(in, staging, size, next, ch, call.what);
        wait(in, call.what);
        combine(sum + k * segment, staging, size / es, dtype, ReduceOp::Sum);
      }
      if (position != 0)
        postSend(sends, sum + k * segment, size, prev, ch, call.what);
    }
    wait(sends, call.what);
  }

  void send(const void *data, int64_t bytes, int peer, int tag) override {
    Call call(*this, "send");
    checkPointToPoint(data, bytes, peer, tag, call.what);
    Pending pending;
    postSend(pending, data, bytes, peer, users(tag), call.what);
    wait(pending, call.what);
  }

  void sendAsync(const void *data, int64_t bytes, int peer, int tag) override {
    Call call(*this, "send");
    checkPointToPoint(data, bytes, peer, tag, call.what);
    auto &copy = asyncSends_.emplace_back();
    copy.first.assign(static_cast<const char *>(data), static_cast<const char *>(data) + bytes);
    hold(bytes);
    postSend(copy.second, copy.first.data(), bytes, peer, users(tag), call.what);
  }

  void waitSends() override {
    Call call(*this, "send");
    for (auto &[bytes, pending] : asyncSends_) {
      wait(pending, call.what);
      held_ -= int64_t(bytes.size());
    }
    asyncSends_.clear();
  }

  int64_t stagingBytes() const override { return held_; }
  int64_t peakStagingBytes() const override { return peakHeld_; }

  void recv(void *data, int64_t bytes, int peer, int tag) override {
    Call call(*this, "recv");
    checkPointToPoint(data, bytes, peer, tag, call.what);
    Pending pending;
    postRecv(pending, data, bytes, peer, users(tag), call.what);
    wait(pending, call.what);
  }

  std::unique_ptr<Work> startShift(const void *send, void *recv, int64_t bytes, int to, int from,
                                   int tag) override {
    sendAsync(send, bytes, to, tag);
    Call call(*this, "shift");
    checkPointToPoint(recv, bytes, from, tag, call.what);
    auto work = std::make_unique<Receive>(*this);
    postRecv(work->pending_, recv, bytes, from, users(tag), call.what);
    return work;
  }

  /// Sizes first (8 bytes from every rank but 0), then the payloads.
  std::vector<std::vector<char>>
  gatherBytes(const std::vector<char> &mine) override {
    Call call(*this, "gatherBytes");
    Channel ch = channel(world(), call.what);
    if (rank_ != 0) {
      int64_t bytes = int64_t(mine.size());
      Pending pending;
      postSend(pending, &bytes, sizeof bytes, 0, ch, call.what);
      postSend(pending, mine.data(), bytes, 0, ch, call.what);
      wait(pending, call.what);
      return {};
    }
    std::vector<int64_t> sizes(size_);
    Pending pending;
    for (int r = 1; r < size_; ++r)
      postRecv(pending, &sizes[r], sizeof(int64_t), r, ch, call.what);
    wait(pending, call.what);
    std::vector<std::vector<char>> all(size_);
    all[0] = mine;
    for (int r = 1; r < size_; ++r) {
      if (sizes[r] < 0)
        throw Error("gatherBytes: rank " + std::to_string(r) +
                    " announced a negative size");
      all[r].resize(sizes[r]);
      postRecv(pending, all[r].data(), sizes[r], r, ch, call.what);
    }
    wait(pending, call.what);
    return all;
  }

  /// Dissemination: in round k each rank signals the one 2^k ahead and waits
  /// for the one 2^k behind; after ceil(log2 p) rounds all have arrived.
  void barrier() override {
    Call call(*this, "barrier");
    if (size_ == 1)
      return;
    Channel ch = channel(world(), call.what);
    for (int k = 1; k < size_; k *= 2) {
      Pending pending;
      postSend(pending, nullptr, 0, (rank_ + k) % size_, ch, call.what);
      postRecv(pending, nullptr, 0, (rank_ - k + size_) % size_, ch, call.what);
      wait(pending, call.what);
    }
  }

  /// Everyone's groups first (an all-gather of the lists, which times out
  /// like any wait), then one MPI_Comm_split of the world per round of
  /// pairwise disjoint groups (one per mesh axis for a mesh's groups), in
  /// the same order on every rank. A group made earlier keeps its
  /// communicator; the split still runs, since every rank takes part.
  void createGroups(const std::vector<Group> &mine) override {
    Call call(*this, "createGroups");
    std::vector<int> flat; // size, then members, for each group
    for (const Group &g : mine) {
      member(g, call.what);
      flat.push_back(int(g.size()));
      flat.insert(flat.end(), g.begin(), g.end());
    }
    int length = int(flat.size());
    std::vector<int> lengths(size_), offsets(size_);
    Pending pending;
    MPI_Request request;
    check(MPI_Iallgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, collectives_,
                         &request),
          "MPI_Iallgather", call.what);
    add(pending, request, -1, true);
    wait(pending, call.what);
    int total = 0;
    for (int r = 0; r < size_; ++r)
      offsets[r] = total, total += lengths[r];
    std::vector<int> all(total);
    check(MPI_Iallgatherv(flat.data(), length, MPI_INT, all.data(), lengths.data(),
                          offsets.data(), MPI_INT, collectives_, &request),
          "MPI_Iallgatherv", call.what);
    add(pending, request, -1, true);
    wait(pending, call.what);
    std::set<Group> every;
    for (size_t i = 0; i < all.size(); i += size_t(all[i]) + 1)
      if (all[i] > 1)
        every.emplace(all.begin() + i + 1, all.begin() + i + 1 + all[i]);
    std::vector<std::vector<const Group *>> rounds;
    std::vector<std::vector<char>> taken; // per round, the ranks in it
    for (const Group &g : every) {
      auto disjoint = [&](const std::vector<char> &in) {
        return std::none_of(g.begin(), g.end(), [&](int m) { return in[m]; });
      };
      size_t r = std::find_if(taken.begin(), taken.end(), disjoint) - taken.begin();
      if (r == rounds.size())
        rounds.emplace_back(), taken.emplace_back(size_, 0);
      rounds[r].push_back(&g);
      for (int m : g)
        taken[r][m] = 1;
    }
    for (const std::vector<const Group *> &round : rounds) {
      int color = MPI_UNDEFINED, key = 0;
      for (size_t c = 0; c < round.size(); ++c) {
        auto at = std::find(round[c]->begin(), round[c]->end(), rank_);
        if (at != round[c]->end())
          color = int(c), key = int(at - round[c]->begin());
      }
      MPI_Comm comm = MPI_COMM_NULL;
      check(MPI_Comm_split(collectives_, color, key, &comm), "MPI_Comm_split", call.what);
      if (comm == MPI_COMM_NULL)
        continue;
      returnErrors(comm, call.what);
      if (!groups_.emplace(*round[size_t(color)], GroupComm{comm}).second)
        MPI_Comm_free(&comm);
    }
  }

  void announceFailure(const std::string &message) override {
    if (size_ == 1 || heardFailure())
      return;
    // Best effort: MPI may be broken, and the run ends after this anyway, so
    // errors are ignored and unfinished requests left to the abort.
    std::string text = message.substr(0, kNoticeBytes);
    std::vector<MPI_Request> answers(size_t(size_), MPI_REQUEST_NULL);
    std::vector<char> answer(size_t(size_), 0);
    int awaiting = 0;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_)
        continue;
      MPI_Request send;
      if (MPI_Isend(text.data(), int(text.size()), MPI_BYTE, r, kNoticeTag, notices_, &send) ==
          MPI_SUCCESS)
        MPI_Request_free(&send);
      // A peer this rank timed out on will not answer.
      if (lost_ && lost_->rank == r)
        continue;
      if (MPI_Irecv(&answer[size_t(r)], 1, MPI_BYTE, r, kAnswerTag, notices_,
                    &answers[size_t(r)]) == MPI_SUCCESS)
        ++awaiting;
    }
    for (auto deadline = after(std::min(kGraceSeconds, timeout_));
         awaiting > 0 && !pastDeadline(deadline);) {
      for (MPI_Request &request : answers) {
        int done = 0;
        if (request != MPI_REQUEST_NULL &&
            MPI_Test(&request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done)
          --awaiting;
      }
      // A rank that fails at the same time answers with its own notice.
      int heard = 0;
      MPI_Status status;
      if (noticeRequest_ != MPI_REQUEST_NULL &&
          MPI_Test(&noticeRequest_, &heard, &status) == MPI_SUCCESS && heard) {
        if (status.MPI_SOURCE >= 0 && status.MPI_SOURCE < size_) {
          MPI_Request &request = answers[size_t(status.MPI_SOURCE)];
          if (request != MPI_REQUEST_NULL) {
            cancelReceive(request);
            --awaiting;
          }
        }
        MPI_Irecv(notice_, kNoticeBytes, MPI_BYTE, MPI_ANY_SOURCE, kNoticeTag, notices_,
                  &noticeRequest_);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  std::optional<LostPeer> lostPeer() const override { return lost_; }

  [[noreturn]] void abort(int code) override {
    std::fflush(nullptr);
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
      std::_Exit(code);
    if (heardFailure()) {
      // The rank that failed ends the run once every rank answered it.
      char answer = 1;
      MPI_Request send = MPI_REQUEST_NULL;
      MPI_Isend(&answer, 1, MPI_BYTE, lost_->rank, kAnswerTag, notices_, &send);
      for (auto deadline = after(kGraceSeconds); !pastDeadline(deadline);) {
        int done = 0;
        if (send != MPI_REQUEST_NULL)
          MPI_Test(&send, &done, MPI_STATUS_IGNORE); // drives the send
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      std::_Exit(code);
    }
    // A launcher that does not end the ranks may leave MPI_Abort waiting.
    std::thread([code] {
      std::this_thread::sleep_for(std::chrono::duration<double>(kGraceSeconds));
      std::_Exit(code);
    }).detach();
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

private:
  bool heardFailure() const { return lost_ && lost_->reason == LostPeer::Failed; }

  struct Call : CallScope {
    Call(MpiCommunicator &comm, const char *name) : CallScope(comm, broken, "MPI", name) {}
  };

  /// Where a call's messages go: a communicator, the call's tag there, and
  /// the group whose members are its ranks (null: the world's ranks).
  struct Channel {
    MPI_Comm comm;
    int tag;
    const Group *group;
    int worldRank(int peer) const { return group ? (*group)[size_t(peer)] : peer; }
  };

  /// Requests of one step, with the world rank each one waits for.
  struct Pending {
    std::vector<MPI_Request> requests;
    std::vector<int> peers;
    std::vector<char> receives;
  };

  /// Sends to `peer`, a rank of `ch`'s communicator.
  void postSend(Pending &pending, const void *data, int64_t bytes, int peer,
                const Channel &ch, const std::string &what) {
    post(pending, const_cast<void *>(data), bytes, peer, ch, what, false);
  }

  void postRecv(Pending &pending, void *data, int64_t bytes, int peer,
                const Channel &ch, const std::string &what) {
    post(pending, data, bytes, peer, ch, what, true);
  }

  /// Posts `bytes` in messages of at most kMaxPiece (MPI counts are int).
  void post(Pending &pending, void *data, int64_t bytes, int peer,
            const Channel &ch, const std::string &what, bool receive) {
    char *p = static_cast<char *>(data);
    int64_t done = 0;
    do { // one message even for 0 bytes
      int piece = int(std::min(bytes - done, kMaxPiece));
      MPI_Request request;
      if (receive)
        check(MPI_Irecv(p + done, piece, MPI_BYTE, peer, ch.tag, ch.comm, &request),
              "MPI_Irecv", what);
      else
        check(MPI_Isend(p + done, piece, MPI_BYTE, peer, ch.tag, ch.comm, &request),
              "MPI_Isend", what);
      add(pending, request, ch.worldRank(peer), receive);
      (receive ? stats_.bytesReceived : stats_.bytesSent) += piece;
      done += piece;
    } while (done < bytes);
  }

  static void add(Pending &pending, MPI_Request request, int peer,
                  bool receive) {
    pending.requests.push_back(request);
    pending.peers.push_back(peer);
    pending.receives.push_back(receive);
  }

  /// Whether every request completed (then `pending` is emptied), without
  /// blocking.
  static bool testAll(Pending &pending, const char *what) {
    int done = 1;
    if (!pending.requests.empty())
      check(MPI_Testall(int(pending.requests.size()), pending.requests.data(), &done,
                        MPI_STATUSES_IGNORE),
            "MPI_Testall", what);
    if (done)
      pending = {};
    return done != 0;
  }

  /// Polls until every request completed; throws after timeout() seconds.
  void wait(Pending &pending, const std::string &what) {
    int n = int(pending.requests.size()), left = n;
    std::vector<int> completed(n);
    auto deadline = after(timeout_);
    for (int polls = 0; left > 0; ++polls) {
      if (polls >= kSpinPolls || polls % 16 == 0)
        checkNotice(pending, what);
      // Started collectives move on while this call waits: a peer may wait
      // for their next message before it sends what this call waits for.
      for (StartedWork *work : active_)
        work->advanceUnless(&pending);
      int count = 0;
      check(MPI_Testsome(n, pending.requests.data(), &count, completed.data(),
                         MPI_STATUSES_IGNORE),
            "MPI_Testsome", what);
      if (count != MPI_UNDEFINED)
        left -= count;
      if (left == 0 || polls < kSpinPolls)
        continue;
      if (polls == kSpinPolls)
        setCurrentWait("waiting for " + awaited(pending) + " in " + what,
                       awaitedRank(pending));
      if (pastDeadline(deadline))
        timedOut(pending, what);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    setCurrentWait("");
    pending = {};
  }

  /// The world rank a wait hears from last, or -1 (a receive before a
  /// send: a send only if no receive is left).
  static int awaitedRank(const Pending &pending) {
    int peer = -1;
    for (size_t i = 0; i < pending.requests.size(); ++i)
      if (pending.requests[i] != MPI_REQUEST_NULL && (peer < 0 || pending.receives[i]))
        peer = pending.peers[i];
    return peer;
  }

  /// "rank 3", or "the other ranks".
  static std::string awaited(const Pending &pending) {
    int peer = awaitedRank(pending);
    return peer < 0 ? "the other ranks" : "rank " + std::to_string(peer);
  }

  /// Gives up `pending` with an error naming the rank if another rank
  /// announced its failure.
  void checkNotice(Pending &pending, const std::string &what) {
    if (noticeRequest_ == MPI_REQUEST_NULL) // heard already
      return;
    int heard = 0;
    MPI_Status status;
    check(MPI_Test(&noticeRequest_, &heard, &status), "MPI_Test", what);
    if (!heard)
      return;
    int length = 0;
    MPI_Get_count(&status, MPI_BYTE, &length);
    lost_ = LostPeer{LostPeer::Failed, status.MPI_SOURCE};
    std::string whom = awaited(pending);
    setCurrentWait("");
    abandon(pending);
    throw Error("rank " + std::to_string(status.MPI_SOURCE) +
                " failed: " + std::string(notice_, size_t(std::max(length, 0))) +
                " (this rank was waiting for " + whom + " in " + what + ")");
  }

  [[noreturn]] void timedOut(Pending &pending, const std::string &what) {
    std::string whom = awaited(pending);
    if (int peer = awaitedRank(pending); peer >= 0)
      lost_ = LostPeer{LostPeer::TimedOut, peer};
    setCurrentWait("");
    abandon(pending);
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", timeout_);
    throw Error("communication timed out after " + std::string(seconds) + " s waiting for " +
                whom + " in " + what + " (a rank died or hangs)");
  }

  /// Gives up on unfinished messages; MPI is unusable after it.
  static void abandon(Pending &pending) {
    for (size_t i = 0; i < pending.requests.size(); ++i) {
      MPI_Request &request = pending.requests[i];
      if (request == MPI_REQUEST_NULL)
        continue;
      // A late message must not land in a buffer the caller has reused.
      if (pending.receives[i])
        MPI_Cancel(&request);
      MPI_Request_free(&request);
    }
    pending = {};
    broken = true;
  }

  /// A staging buffer that grows to the largest request. Its bytes are left
  /// uninitialized: pages never written never become resident.
  struct Staging {
    std::unique_ptr<char[]> data;
    int64_t size = 0;
  };

  char *stage(Staging &staging, int64_t bytes) {
    if (bytes > staging.size) {
      staging.data.reset(); // the old one goes first: the peak is the new size
      held_ -= staging.size;
      staging.data.reset(new char[size_t(bytes)]);
      staging.size = bytes;
      hold(bytes);
    }
    return staging.data.get();
  }

  void hold(int64_t bytes) {
    held_ += bytes;
    peakHeld_ = std::max(peakHeld_, held_);
  }

  /// A receive posted now and finished by the work's wait (ring attention's
  /// next key block arrives while the current one is scored).
  class Receive final : public Work {
  public:
    explicit Receive(MpiCommunicator &comm) : comm_(comm) {}
    ~Receive() override {
      if (!pending_.requests.empty())
        comm_.abandon(pending_);
    }
    bool progress() override { return testAll(pending_, "shift"); }
    void wait() override {
      Call call(comm_, "shift");
      comm_.wait(pending_, call.what);
    }
    Pending pending_;

  private:
    MpiCommunicator &comm_;
  };

  /// allReduce's ring, one exchange of messages at a time: p - 1 steps of a
  /// reduce-scatter in place, where at step s member i sends chunk i-s-1 of
  /// `data` (its own, then the one it reduced last step) and adds chunk
  /// i-s-2, arriving from the left into the staging chunk, to its copy; then
  /// p - 1 steps of an all-gather of the reduced chunks. Everyone copies the
  /// owners' results, so all end bit-identical, started at once or not.
  /// Work the communicator's waits advance while it is in flight.
  class StartedWork : public Work {
  public:
    explicit StartedWork(MpiCommunicator &comm) : comm_(comm) {}
    /// Advances unless `pending` is its own (a wait inside it).
    virtual void advanceUnless(const Pending *pending) = 0;
    bool progress() final {
      Clock::time_point start = Clock::now();
      bool done = advance();
      comm_.stats_.seconds += std::chrono::duration<double>(Clock::now() - start).count();
      return done;
    }

  protected:
    /// Moves on as far as it can without blocking; true once finished.
    virtual bool advance() = 0;
    MpiCommunicator &comm_;
  };

  class RingAllReduce final : public StartedWork {
  public:
    /// `gatherOnly`: the second half alone, an all-gather of the chunks
    /// the members hold (member i chunk i), which stages nothing.
    RingAllReduce(MpiCommunicator &comm, char *data, Chunks chunks, int64_t es, DType dtype,
                  ReduceOp op, int64_t me, Channel ch, bool gatherOnly = false)
        : StartedWork(comm), data_(data), chunks_(chunks), es_(es), dtype_(dtype), op_(op),
          left_(int(mod(me - 1, chunks.p))), right_(int(mod(me + 1, chunks.p))), me_(me), ch_(ch),
          gatherOnly_(gatherOnly), what_(gatherOnly ? "allGather" : "allReduce") {
      if (gatherOnly)
        step_ = steps() / 2;
    }
    ~RingAllReduce() override {
      if (!pending_.requests.empty())
        comm_.abandon(pending_);
      comm_.held_ -= int64_t(owned_.size());
      comm_.active_.erase(std::remove(comm_.active_.begin(), comm_.active_.end(), this),
                          comm_.active_.end());
    }
    /// Exchanges of messages: none where nothing moves.
    int64_t steps() const { return chunks_.count == 0 ? 0 : 2 * (chunks_.p - 1); }
    int64_t stagingBytes() const { return gatherOnly_ ? 0 : chunks_.largest() * es_; }
    /// The staging chunk of its own, for work that outlives the call, which
    /// the communicator's other waits advance too.
    void own() {
      owned_.resize(size_t(stagingBytes()));
      comm_.hold(stagingBytes());
      receiving_ = owned_.data();
      comm_.active_.push_back(this);
    }
    void advanceUnless(const Pending *pending) override {
      if (pending != &pending_)
        advance();
    }
    /// Runs every step, staging in `receiving`.
    void finish(char *receiving) {
      receiving_ = receiving;
      while (post())
        comm_.wait(pending_, what_), complete();
    }
    void wait() override {
      Clock::time_point start = Clock::now();
      while (!pending_.requests.empty() || step_ < steps()) {
        if (!pending_.requests.empty())
          comm_.wait(pending_, what_), complete();
        else
          post();
      }
      comm_.stats_.seconds += std::chrono::duration<double>(Clock::now() - start).count();
    }

  private:
    /// Posts the messages of the next step; false when none is left.
    bool post() {
      if (step_ == steps())
        return false;
      int64_t p = chunks_.p, s = step_ < p - 1 ? step_ : step_ - (p - 1);
      bool reducing = step_ < p - 1;
      int64_t sent = reducing ? mod(me_ - s - 1, p) : mod(me_ - s, p);
      int64_t received = reducing ? mod(me_ - s - 2, p) : mod(me_ - s - 1, p);
      char *into = reducing ? receiving_ : data_ + chunks_.offset(received) * es_;
      comm_.postSend(pending_, data_ + chunks_.offset(sent) * es_, chunks_.size(sent) * es_, right_,
                     ch_, what_);
      comm_.postRecv(pending_, into, chunks_.size(received) * es_, left_, ch_, what_);
      return true;
    }
    /// What the step does once its messages arrived.
    void complete() {
      int64_t p = chunks_.p;
      if (step_ < p - 1) {
        // Addition commutes, so the sums do not depend on the ring's order.
        int64_t received = mod(me_ - step_ - 2, p);
        combine(data_ + chunks_.offset(received) * es_, receiving_, chunks_.size(received),
                dtype_, op_);
        if (step_ == p - 2 && op_ == ReduceOp::Average)
          divide(data_ + chunks_.offset(me_) * es_, chunks_.size(me_), dtype_, int(p));
      }
      ++step_;
    }
    bool advance() override {
      for (;;) {
        if (pending_.requests.empty() && !post())
          return true;
        if (!testAll(pending_, what_))
          return false;
        complete();
      }
    }

    char *data_;
    Chunks chunks_;
    int64_t es_;
    DType dtype_;
    ReduceOp op_;
    int left_, right_;
    int64_t me_;
    Channel ch_;
    bool gatherOnly_;
    const char *what_;
    int64_t step_ = 0;
    Pending pending_;
    char *receiving_ = nullptr;
    std::vector<char> owned_;
  };

  /// A pipelined chain in group order from the root: each member forwards a
  /// segment as soon as it arrives, so the root and every middle member send
  /// the whole tensor once and the last member sends nothing. The root posts
  /// every segment at once, the others every receive; a middle member
  /// forwards the segments that arrived whenever progress(), wait() or
  /// another wait of the communicator finds them.
  class ChainBroadcast final : public StartedWork {
  public:
    ChainBroadcast(MpiCommunicator &comm, char *data, int64_t bytes, int64_t position,
                   int64_t p, int prev, int next, Channel ch)
        : StartedWork(comm), data_(data), bytes_(bytes), next_(next), forwards_(position != p - 1),
          ch_(ch) {
      int64_t segments = p == 1 ? 0 : (bytes + kSegment - 1) / kSegment;
      if (position == 0) {
        for (int64_t k = 0; k < segments; ++k)
          comm_.postSend(sends_, segment(k), size(k), next_, ch_, "broadcast");
      } else {
        receives_.resize(size_t(segments));
        for (int64_t k = 0; k < segments; ++k)
          comm_.postRecv(receives_[k], segment(k), size(k), prev, ch_, "broadcast");
      }
      comm_.active_.push_back(this);
    }
    ~ChainBroadcast() override {
      for (Pending &pending : receives_)
        if (!pending.requests.empty())
          comm_.abandon(pending);
      if (!sends_.requests.empty())
        comm_.abandon(sends_);
      comm_.active_.erase(std::remove(comm_.active_.begin(), comm_.active_.end(), this),
                          comm_.active_.end());
    }
    void advanceUnless(const Pending *) override {
      if (!waiting_)
        advance();
    }
    void wait() override {
      Clock::time_point start = Clock::now();
      waiting_ = true;
      for (; arrived_ < receives_.size(); ++arrived_) {
        comm_.wait(receives_[arrived_], "broadcast");
        forward(arrived_);
      }
      comm_.wait(sends_, "broadcast");
      waiting_ = false;
      comm_.stats_.seconds += std::chrono::duration<double>(Clock::now() - start).count();
    }

  private:
    char *segment(int64_t k) const { return data_ + k * kSegment; }
    int64_t size(int64_t k) const { return std::min(kSegment, bytes_ - k * kSegment); }
    void forward(size_t k) {
      if (forwards_)
        comm_.postSend(sends_, segment(int64_t(k)), size(int64_t(k)), next_, ch_, "broadcast");
    }
    /// Forwards the segments that arrived, in order; true once every
    /// message is done.
    bool advance() override {
      for (; arrived_ < receives_.size(); ++arrived_) {
        if (!testAll(receives_[arrived_], "broadcast"))
          return false;
        forward(arrived_);
      }
      return testAll(sends_, "broadcast");
    }

    char *data_;
    int64_t bytes_;
    int next_;
    bool forwards_;
    Channel ch_;
    std::vector<Pending> receives_;
    size_t arrived_ = 0; // receives done and forwarded
    Pending sends_;
    bool waiting_ = false; // in wait(), which advances it itself
  };

  static void checkRoot(int root, const Group &group, const std::string &what) {
    if (root < 0 || root >= int(group.size()))
      throw Error(what + ": root " + std::to_string(root) + " is not an index into group " +
                  groupString(group));
  }

  /// broadcast's chain after the checks, its messages posted.
  std::unique_ptr<ChainBroadcast> startChain(void *data, int64_t count, DType dtype, int root,
                                             const Group &group, const Call &call) {
    int me = member(group, call.what);
    int64_t bytes = count * elementSize(dtype, call.what);
    checkBuffer(data, count, call.what);
    int64_t p = group.size();
    checkRoot(root, group, call.what);
    Channel ch = channel(group, call.what);
    return std::make_unique<ChainBroadcast>(*this, static_cast<char *>(data), bytes,
                                            mod(me - root, p), p, int(mod(me - 1, p)),
                                            int(mod(me + 1, p)), ch);
  }

  /// allReduce's ring after the checks.
  /// An all-gather's checks and channel, with `send` copied to its block of
  /// `recv`.
  struct Gather {
    char *out;
    Chunks chunks;
    int64_t es, me;
    Channel ch;
  };
  Gather startGather(const void *send, void *recv, int64_t count, DType dtype, const Group &group,
                     const Call &call) {
    int me = member(group, call.what);
    int64_t es = elementSize(dtype, call.what);
    checkBuffer(send, count, call.what);
    checkBuffer(recv, count, call.what);
    Channel ch = channel(group, call.what);
    int64_t p = group.size();
    char *out = static_cast<char *>(recv);
    if (count > 0 && send != out + me * count * es)
      std::memmove(out + me * count * es, send, count * es);
    return {out, Chunks{count * p, p}, es, me, ch};
  }

  std::unique_ptr<RingAllReduce> startRing(void *data, int64_t count, DType dtype, ReduceOp op,
                                           const Group &group, const Call &call) {
    int me = member(group, call.what);
    checkReduce(dtype, op, call.what);
    checkBuffer(data, count, call.what);
    return std::make_unique<RingAllReduce>(*this, static_cast<char *>(data),
                                           Chunks{count, int64_t(group.size())},
                                           dtypeSize(dtype), dtype, op, me,
                                           channel(group, call.what));
  }

  /// Ring reduce-scatter: at step s member i sends chunk i-s-1 (its own data,
  /// then what it reduced last step) and adds its data to chunk i-s-2 coming
  /// from the left, so after p-1 steps it holds the full reduction of chunk
  /// i, which it writes to `out`.
  void reduceScatterRing(const char *local, char *out, Chunks chunks,
                         int64_t es, DType dtype, ReduceOp op, int64_t me,
                         const Channel &ch, const std::string &what) {
    int64_t p = chunks.p;
    int left = int(mod(me - 1, p)), right = int(mod(me + 1, p));
    // Two ranks send only their own data: one buffer receives.
    char *receiving = stage(receive_, chunks.largest() * es);
    char *sending = p > 2 ? stage(send_, chunks.largest() * es) : nullptr;
    for (int64_t s = 0; s < p - 1; ++s) {
      int64_t sent = mod(me - s - 1, p), received = mod(me - s - 2, p);
      Pending pending;
      postSend(pending, s == 0 ? local + chunks.offset(sent) * es : sending,
               chunks.size(sent) * es, right, ch, what);
      postRecv(pending, receiving, chunks.size(received) * es, left, ch, what);
      wait(pending, what);
      combine(receiving, local + chunks.offset(received) * es,
              chunks.size(received), dtype, op);
      std::swap(sending, receiving);
    }
    if (op == ReduceOp::Average)
      divide(sending, chunks.size(me), dtype, int(p));
    std::memcpy(out, sending, chunks.size(me) * es);
  }

  /// Ring all-gather: at step s member i forwards chunk i-s to the right and
  /// receives chunk i-s-1 from the left, in place in `buffer`.
  void allGatherRing(char *buffer, Chunks chunks, int64_t es, int64_t me,
                     const Channel &ch, const std::string &what) {
    int64_t p = chunks.p;
    int left = int(mod(me - 1, p)), right = int(mod(me + 1, p));
    for (int64_t s = 0; s < p - 1; ++s) {
      int64_t sent = mod(me - s, p), received = mod(me - s - 1, p);
      Pending pending;
      postSend(pending, buffer + chunks.offset(sent) * es,
               chunks.size(sent) * es, right, ch, what);
      postRecv(pending, buffer + chunks.offset(received) * es,
               chunks.size(received) * es, left, ch, what);
      wait(pending, what);
    }
  }

  /// This rank's index in `group`, after checking the group.
  int member(const Group &group, const std::string &what) const {
    if (group.empty())
      throw Error(what + ": empty group");
    int me = -1;
    for (size_t i = 0; i < group.size(); ++i) {
      if (group[i] < 0 || group[i] >= size_)
        throw Error(what + ": group " + groupString(group) + " names rank " +
                    std::to_string(group[i]) + " but the world has " +
                    std::to_string(size_) + " ranks");
      if (group[i] == rank_)
        me = int(i);
    }
    Group sorted = group;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      throw Error(what + ": group " + groupString(group) +
                  " names a rank twice");
    if (me < 0)
      throw Error(what + ": rank " + std::to_string(rank_) +
                  " is not in group " + groupString(group));
    return me;
  }

  static int64_t elementSize(DType dtype, const std::string &what) {
    int64_t es = dtypeSize(dtype);
    if (es <= 0)
      throw Error(what + ": unknown element type " + std::to_string(dtype));
    return es;
  }

  static void checkReduce(DType dtype, ReduceOp op, const std::string &what) {
    if (dtype == F32 || dtype == F64 ||
        (dtype == I64 && op != ReduceOp::Average))
      return;
    throw Error(what + ": " + opName(op) + " of " + dtypeName(dtype) +
                " is not supported (f32, f64; i64 for sum and max)");
  }

  static void checkBuffer(const void *data, int64_t count,
                          const std::string &what) {
    if (count < 0)
      throw Error(what + ": negative count " + std::to_string(count));
    if (count > 0 && !data)
      throw Error(what + ": null buffer");
  }

  void checkPointToPoint(const void *data, int64_t bytes, int peer, int tag,
                         const std::string &what) const {
    checkBuffer(data, bytes, what);
    if (peer < 0 || peer >= size_ || peer == rank_)
      throw Error(what + ": rank " + std::to_string(rank_) +
                  " cannot talk to rank " + std::to_string(peer) +
                  " (world of " + std::to_string(size_) + ")");
    if (tag < 0 || tag >= tags_)
      throw Error(what + ": tag " + std::to_string(tag) + " is outside [0, " +
                  std::to_string(tags_) + ")");
  }

  /// Users' point-to-point messages: on MPI_COMM_WORLD, where no
  /// collective sends.
  static Channel users(int tag) { return Channel{MPI_COMM_WORLD, tag, nullptr}; }

  /// The group's communicator and the tag of its next call: members call a
  /// group's collectives in the same order, so they draw the same tag.
  Channel channel(const Group &group, const std::string &what) {
    auto it = groups_.find(group);
    if (it == groups_.end())
      it = groups_.emplace(group, GroupComm{createAtFirstUse(group, what)}).first;
    GroupComm &g = it->second;
    return Channel{g.comm, int(g.calls++ % uint64_t(tags_)), &it->first};
  }

  /// A communicator made at the group's first use, collectively over its
  /// members only (MPI_Comm_create_group): they must all reach it before
  /// any of them waits on another new group, which createGroups does not
  /// need. The tag tells concurrent creations of overlapping groups apart.
  MPI_Comm createAtFirstUse(const Group &group, const std::string &what) {
    if (group.size() == 1)
      return MPI_COMM_SELF;
    uint64_t hash = 1469598103934665603ull; // FNV-1a
    for (int m : group)
      hash = (hash ^ uint32_t(m)) * 1099511628211ull;
    MPI_Group world, members;
    check(MPI_Comm_group(collectives_, &world), "MPI_Comm_group", what);
    check(MPI_Group_incl(world, int(group.size()), group.data(), &members),
          "MPI_Group_incl", what);
    MPI_Comm comm = MPI_COMM_NULL;
    int code = MPI_Comm_create_group(collectives_, members, int(hash % uint64_t(tags_)), &comm);
    MPI_Group_free(&members);
    MPI_Group_free(&world);
    check(code, "MPI_Comm_create_group", what);
    returnErrors(comm, what);
    return comm;
  }

  int rank_ = 0, size_ = 1;
  int64_t tags_ = 0; // MPI's tag bound + 1
  // The parent of the groups' communicators; no message goes on it.
  MPI_Comm collectives_ = MPI_COMM_NULL;
  // Failure notices, with a receive from any rank always posted.
  MPI_Comm notices_ = MPI_COMM_NULL;
  MPI_Request noticeRequest_ = MPI_REQUEST_NULL;
  char notice_[kNoticeBytes];
  std::optional<LostPeer> lost_;
  struct GroupComm {
    MPI_Comm comm;
    uint64_t calls = 0; // the next call's sequence number
  };
  std::map<Group, GroupComm> groups_;
  Staging receive_, send_;
  int64_t held_ = 0, peakHeld_ = 0; // staging bytes, now and at most
  // sendAsync's copies and their requests; a deque keeps both in place.
  std::deque<std::pair<std::vector<char>, Pending>> asyncSends_;
  // Started collectives not finished yet.
  std::vector<StartedWork *> active_;
};

} // namespace

std::unique_ptr<Communicator> createMpiCommunicator() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized)
    throw Error("mpi: MPI was already finalized");
  if (!initialized) {
    // Serialized rather than funneled: the session may call from a thread
    // other than main, never from two at once.
    int provided = 0;
    int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED,
                               &provided);
    if (code != MPI_SUCCESS)
      throw Error("mpi: MPI_Init_thread failed: " + mpiMessage(code));
    ownsMpi = true;
    std::atexit(finalizeAtExit);
  }
  returnErrors(MPI_COMM_WORLD, "mpi");
  return std::make_unique<MpiCommunicator>();
}

} // namespace colo::runtime
