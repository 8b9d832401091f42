//===- Communicator.h - Collectives among the ranks of a run -----*- C++ -*-===//
//
// One interface, two backends: MPI for CPU ranks (always built) and NCCL for
// GPUs (built when CUDA and NCCL are found, bootstrapped through MPI). The
// compiler's per-rank programs name a group of world ranks and a buffer; the
// session calls these methods for their Collective steps.
//
// Bytes sent are counted per call as the ring algorithms send them (an
// all-reduce of n bytes over p ranks sends 2 (p-1)/p n from every rank), which
// is what the MPI backend really sends: it runs ring algorithms over
// non-blocking point-to-point messages, so that every wait has a deadline. A
// peer that died or hangs makes the call throw Error after `timeout` seconds,
// never a silent hang.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_COMMUNICATOR_H
#define COLO_RUNTIME_COMMUNICATOR_H

#include "colo/Runtime/DType.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace colo::runtime {

enum class ReduceOp { Sum, Average, Max };

/// Totals since construction or the last resetStats().
struct CommStats {
  int64_t bytesSent = 0;     ///< payload bytes this rank sent
  int64_t bytesReceived = 0; ///< payload bytes this rank received
  int64_t calls = 0;         ///< collective or point-to-point calls
  double seconds = 0;        ///< wall time inside the calls
};

/// The peer a communicator gave up on, after one of its calls threw Error.
struct LostPeer {
  enum Reason {
    TimedOut, ///< a wait for it passed the timeout: it died or hangs
    Failed,   ///< it announced its own failure (announceFailure)
  } reason;
  int rank;
};

/// A group is the list of world ranks taking part, in group order (its
/// position is the rank's index in the group); every member calls the same
/// collective with the same group, count and dtype. A group of one rank is
/// valid and moves nothing.
using Group = std::vector<int>;

/// A collective started by Communicator::startAllReduce (or startShift,
/// startBroadcast) and not finished yet: its buffer belongs to the communicator until progress() returned
/// true or wait() returned. Work destroyed unfinished (an error elsewhere
/// ended the step) abandons its messages, and the communicator is unusable
/// after it, as after a timeout.
class Work {
public:
  virtual ~Work();
  /// Advances the collective as far as it can without blocking; true once
  /// it finished.
  virtual bool progress() = 0;
  /// Finishes the collective; throws Error after the communicator's timeout.
  virtual void wait() = 0;
};

class Communicator {
public:
  virtual ~Communicator();

  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "mpi" or "nccl".
  virtual std::string backend() const = 0;
  /// Every rank, in rank order.
  Group world() const;

  /// Makes the communicators of this rank's `groups` once, before their
  /// first collective. Collective over the world: every rank calls it at
  /// the same point with the groups it will use (the session does, for its
  /// program's groups). A group used without it is set up at its first
  /// collective, collectively over its members, which must then all reach
  /// it before any of them waits on another new group.
  virtual void createGroups(const std::vector<Group> &groups);

  /// In place: every member ends with the reduction of all members' `data`.
  /// Average divides the sum by the group size. F32, F64 (and I64 for Sum/Max).
  virtual void allReduce(void *data, int64_t count, DType dtype, ReduceOp op,
                         const Group &group) = 0;
  /// allReduce that returns at once; the work's progress() calls (between
  /// the caller's other work) and wait() carry it out. Members start their
  /// works in the same order as their other collectives on the group, and
  /// the result has the bits allReduce gives. A backend without
  /// asynchronous collectives runs allReduce before returning.
  virtual std::unique_ptr<Work> startAllReduce(void *data, int64_t count, DType dtype,
                                               ReduceOp op, const Group &group);
  /// One exchange around a ring (Collective SHIFT): sends `bytes` of `send`
  /// to world rank `to` (asynchronously, as sendAsync) and receives as many
  /// from world rank `from` into `recv`, both tagged `tag`; the work's
  /// wait() finishes the receive. A backend without asynchronous receives
  /// receives before returning.
  virtual std::unique_ptr<Work> startShift(const void *send, void *recv, int64_t bytes, int to,
                                           int from, int tag);
  /// `send` holds `count` elements; `recv` gets count * group.size() elements,
  /// member i's block at i * count. `send` may alias its own block of `recv`.
  virtual void allGather(const void *send, void *recv, int64_t count,
                         DType dtype, const Group &group) = 0;
  /// allGather that returns at once, as startAllReduce: `send` is copied to
  /// its block before it returns, `recv` belongs to the work until it
  /// finished (3-D tensor parallelism's next weight block arrives while the
  /// current product runs). A backend without asynchronous collectives
  /// gathers before returning.
  virtual std::unique_ptr<Work> startAllGather(const void *send, void *recv, int64_t count,
                                               DType dtype, const Group &group);
  /// `send` holds count * group.size() elements; member i gets the reduction
  /// of block i into `recv` (`count` elements).
  virtual void reduceScatter(const void *send, void *recv, int64_t count,
                             DType dtype, ReduceOp op, const Group &group) = 0;
  /// `send` and `recv` hold count * group.size() elements; block j of `send`
  /// goes to member j and arrives in its block i (i: this member's index).
  virtual void allToAll(const void *send, void *recv, int64_t count,
                        DType dtype, const Group &group) = 0;
  /// Member `root` (an index into group) sends `data` to all others.
  virtual void broadcast(void *data, int64_t count, DType dtype, int root,
                         const Group &group) = 0;
  /// broadcast that returns at once, as startAllReduce: `data` belongs to
  /// the work until it finished (SUMMA's next blocks arrive while the
  /// current ones multiply). A backend without asynchronous collectives
  /// broadcasts before returning.
  virtual std::unique_ptr<Work> startBroadcast(void *data, int64_t count, DType dtype, int root,
                                               const Group &group);
  /// Member `root` (an index into group) gets the sum of every member's
  /// `send` (`count` elements) in `recv`; the others' `recv` is their
  /// working space, left with partial sums. F32 or F64.
  virtual void reduce(const void *send, void *recv, int64_t count, DType dtype, int root,
                      const Group &group) = 0;
  /// Point to point between world ranks; `tag` separates concurrent streams.
  virtual void send(const void *data, int64_t bytes, int peer, int tag) = 0;
  virtual void recv(void *data, int64_t bytes, int peer, int tag) = 0;
  /// A send that returns at once: `data` is copied and sent in the
  /// background (pipeline stages send activations without waiting for their
  /// receivers, so no schedule deadlocks on sends). waitSends() waits for
  /// all of them, with the timeout.
  virtual void sendAsync(const void *data, int64_t bytes, int peer, int tag) = 0;
  virtual void waitSends() = 0;
  /// Gathers variable-sized byte blobs on world rank 0 (for writing one
  /// weights file from sharded state); other ranks get an empty vector.
  virtual std::vector<std::vector<char>>
  gatherBytes(const std::vector<char> &mine) = 0;
  /// All ranks of the world; throws Error after the timeout.
  virtual void barrier() = 0;
  /// Tells the other ranks that this one ends with an error (`message`,
  /// which it printed), so that each stops at its next wait with its own
  /// line naming this rank instead of waiting out its timeout, whoever
  /// started the ranks; returns once they answered or after a second. Does
  /// nothing after an error that another rank announced.
  virtual void announceFailure(const std::string &message) { (void)message; }
  /// The peer behind this communicator's last error, if it was a peer.
  virtual std::optional<LostPeer> lostPeer() const { return std::nullopt; }
  /// Ends the whole run (all ranks) with `code`; used after an Error on one
  /// rank so that the others do not wait for it. After an error another
  /// rank announced, leaves the ending to that rank (and ends this process
  /// alone if it does not come within a second).
  [[noreturn]] virtual void abort(int code) = 0;

  /// Seconds any single wait may take before the call throws Error.
  void setTimeout(double seconds) { timeout_ = seconds; }
  double timeout() const { return timeout_; }
  /// Host memory the communicator holds besides the caller's buffers
  /// (reduction staging, copies of asynchronous sends, gathered blobs), now
  /// and at most since construction, bytes. A backend that stages nothing in
  /// host memory reports 0.
  virtual int64_t stagingBytes() const { return 0; }
  virtual int64_t peakStagingBytes() const { return 0; }

  const CommStats &stats() const { return stats_; }
  void resetStats() { stats_ = {}; }

protected:
  /// What every call of a backend begins with: refuses the call once the
  /// backend is `broken` (an earlier wait failed, so a peer is lost), counts
  /// it, and adds its wall time to stats() however it ends.
  class CallScope {
  public:
    CallScope(Communicator &comm, bool broken, const char *backend,
              const char *name);
    ~CallScope();
    CallScope(const CallScope &) = delete;
    CallScope &operator=(const CallScope &) = delete;

    const std::string what; ///< the call's name, for errors
  private:
    CommStats &stats_;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  };

  double timeout_ = 300;
  CommStats stats_;
};

/// The bytes each member sends for one call under the ring algorithms
/// (`bytes`: the size of the full tensor, i.e. of allReduce's data, of
/// allGather's recv, of reduceScatter's send, of allToAll's send).
int64_t ringBytesSent(const std::string &collective, int64_t bytes,
                      int groupSize);

/// What this process's communication is waiting for now, e.g. "waiting for
/// rank 1 in allReduce", or "" when it waits for nothing: what a rank that
/// the launcher ends reports (a fixed buffer, readable in a signal handler).
const char *currentWait();
/// The world rank currentWait() waits for, or -1.
int currentWaitPeer();
/// Sets currentWait() (truncated to 255 characters) and currentWaitPeer();
/// "" clears them.
void setCurrentWait(const std::string &what, int peer = -1);

/// True if this process was started by mpirun/srun (OMPI_COMM_WORLD_SIZE,
/// PMI_SIZE or PMIX_RANK set) with more than one rank.
bool launchedWithRanks();

/// Initializes MPI (once per process) and returns the world communicator.
/// Throws Error if MPI cannot start.
std::unique_ptr<Communicator> createMpiCommunicator();

/// NCCL over the GPUs of the ranks, bootstrapped through `mpi`; throws Error
/// if colo was built without NCCL or no GPU is visible.
std::unique_ptr<Communicator> createNcclCommunicator(Communicator &mpi);

} // namespace colo::runtime

#endif
