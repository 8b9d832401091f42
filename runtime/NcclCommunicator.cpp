//===- NcclCommunicator.cpp - Collectives over NCCL on GPUs ---------------===//
//
// Data pointers are device pointers; the work goes on one stream that is
// ordered after the legacy default stream, so kernels the caller launched
// there are done first (work on other streams must be synchronized by the
// caller). NCCL communicators are created non-blocking: a blocking init or
// first connection waits for a dead peer forever. Each call then polls the
// communicator's state and the stream with a deadline and aborts the
// communicator when it passes. Unique ids travel through the MPI
// communicator, which also does gatherBytes and barrier.
//
//===----------------------------------------------------------------------===//

#include "LazyLibrary.h"
#include "colo/Runtime/Communicator.h"
#include "colo/Runtime/CudaDevice.h"
#include "colo/Runtime/Error.h"

#ifdef COLO_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <thread>
#endif

namespace colo::runtime {

#ifdef COLO_HAVE_NCCL
// clang-format off
#define COLO_NCCL_FUNCTIONS(X)                                                               \
  X(ncclAllGather) X(ncclAllReduce) X(ncclBroadcast) X(ncclReduce) X(ncclCommAbort) X(ncclCommDestroy)     \
  X(ncclCommFinalize) X(ncclCommGetAsyncError) X(ncclCommInitRankConfig)                     \
  X(ncclGetErrorString) X(ncclGetLastError) X(ncclGetUniqueId) X(ncclGroupEnd)              \
  X(ncclGroupStart) X(ncclRecv) X(ncclReduceScatter) X(ncclSend)
// clang-format on
/// NCCL, loaded when first used (LazyLibrary.h).
COLO_LAZY_LIBRARY(Nccl, ncclApi, "libnccl.so." + std::to_string(NCCL_MAJOR), COLO_NCCL_FUNCTIONS)
#endif

#ifndef COLO_HAVE_NCCL

std::unique_ptr<Communicator> createNcclCommunicator(Communicator &) {
  throw Error("colo was built without NCCL");
}

#else

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kSpinPolls = 200;

std::string groupString(const Group &group) {
  std::string s = "[";
  for (size_t i = 0; i < group.size(); ++i)
    s += (i ? ", " : "") + std::to_string(group[i]);
  return s + "]";
}

void checkCuda(cudaError_t code, const char *call, const std::string &what) {
  if (code != cudaSuccess)
    throw Error(what + ": " + call + " failed: " + cudaGetErrorString(code));
}

class NcclCommunicator final : public Communicator {
public:
  explicit NcclCommunicator(Communicator &mpi) : mpi_(mpi) {
    timeout_ = mpi.timeout();
    int devices = 0;
    cudaError_t code = cudaGetDeviceCount(&devices);
    if (code != cudaSuccess || devices == 0)
      throw Error(std::string("nccl: no GPU is visible") +
                  (code != cudaSuccess
                       ? std::string(" (") + cudaGetErrorString(code) + ")"
                       : ""));
    device_ = localRank(mpi.rank()) % devices;
    checkCuda(cudaSetDevice(device_), "cudaSetDevice", "nccl");
    checkCuda(cudaStreamCreate(&stream_), "cudaStreamCreate", "nccl");
    // Every rank calls this, so the world's communicator is made now and a
    // broken setup shows at startup rather than in the first step.
    commFor(world(), rank(), "nccl");
  }

  ~NcclCommunicator() override {
    for (auto &entry : comms_) {
      ncclComm_t comm = entry.second;
      if (!broken_ && ncclApi().ncclCommFinalize(comm) == ncclSuccess) {
        ncclResult_t state = ncclInProgress;
        auto deadline = Clock::now() + std::chrono::seconds(10);
        while (state == ncclInProgress && Clock::now() < deadline)
          ncclApi().ncclCommGetAsyncError(comm, &state);
        if (state == ncclSuccess) {
          ncclApi().ncclCommDestroy(comm);
          continue;
        }
      }
      ncclApi().ncclCommAbort(comm);
    }
    cudaStreamDestroy(stream_);
  }

  /// MPI's groups first (NCCL's setup broadcasts over them), then this
  /// rank's NCCL communicators in the same (sorted) order on every rank, so
  /// that no two members of a group wait on different new groups.
  void createGroups(const std::vector<Group> &groups) override {
    mpi_.createGroups(groups);
    for (const Group &g : std::set<Group>(groups.begin(), groups.end()))
      if (g.size() > 1)
        commFor(g, member(g, "createGroups"), "createGroups");
  }

  int rank() const override { return mpi_.rank(); }
  int size() const override { return mpi_.size(); }
  std::string backend() const override { return "nccl"; }

  void allReduce(void *data, int64_t count, DType dtype, ReduceOp op,
                 const Group &group) override {
    if (onHost(data))
      return viaMpi([&] { mpi_.allReduce(data, count, dtype, op, group); });
    Call call(*this, "allReduce");
    int me = member(group, call.what);
    ncclDataType_t type = reduceType(dtype, op, call.what);
    if (count < 0)
      throw Error("allReduce: negative count");
    int64_t bytes = count * dtypeSize(dtype);
    countRing(call.what, bytes, int(group.size()));
    if (group.size() == 1 || count == 0)
      return;
    ncclComm_t comm = commFor(group, me, call.what);
    finish(ncclApi().ncclAllReduce(data, data, size_t(count), type, ncclOpOf(op), comm, stream_),
           comm, "ncclAllReduce", call.what);
  }

  void allGather(const void *send, void *recv, int64_t count, DType dtype,
                 const Group &group) override {
    if (onHost(recv))
      return viaMpi([&] { mpi_.allGather(send, recv, count, dtype, group); });
    Call call(*this, "allGather");
    int64_t block;
    ncclComm_t comm = blocks(call.what, send, recv, count, dtype, group,
                             member(group, call.what), block);
    if (!comm)
      return;
    finish(ncclApi().ncclAllGather(send, recv, size_t(block), ncclInt8, comm, stream_), comm,
           "ncclAllGather", call.what);
  }

  void reduceScatter(const void *send, void *recv, int64_t count, DType dtype,
                     ReduceOp op, const Group &group) override {
    if (onHost(recv))
      return viaMpi([&] { mpi_.reduceScatter(send, recv, count, dtype, op, group); });
    Call call(*this, "reduceScatter");
    int me = member(group, call.what);
    ncclDataType_t type = reduceType(dtype, op, call.what);
    int64_t block;
    ncclComm_t comm = blocks(call.what, send, recv, count, dtype, group, me, block);
    if (!comm)
      return;
    finish(
        ncclApi().ncclReduceScatter(send, recv, size_t(count), type, ncclOpOf(op), comm, stream_),
        comm, "ncclReduceScatter", call.what);
  }

  void allToAll(const void *send, void *recv, int64_t count, DType dtype,
                const Group &group) override {
    if (onHost(recv))
      return viaMpi([&] { mpi_.allToAll(send, recv, count, dtype, group); });
    Call call(*this, "allToAll");
    int64_t block;
    ncclComm_t comm = blocks(call.what, send, recv, count, dtype, group,
                             member(group, call.what), block);
    if (!comm)
      return;
    int64_t p = group.size();
    const char *in = static_cast<const char *>(send);
    char *out = static_cast<char *>(recv);
    nccl(ncclApi().ncclGroupStart(), comm, "ncclGroupStart", call.what);
    for (int64_t j = 0; j < p; ++j) {
      nccl(ncclApi().ncclSend(in + j * block, size_t(block), ncclInt8, int(j), comm, stream_), comm,
           "ncclSend", call.what);
      nccl(ncclApi().ncclRecv(out + j * block, size_t(block), ncclInt8, int(j), comm, stream_),
           comm, "ncclRecv", call.what);
    }
    finish(ncclApi().ncclGroupEnd(), comm, "ncclGroupEnd", call.what);
  }

  void broadcast(void *data, int64_t count, DType dtype, int root,
                 const Group &group) override {
    if (onHost(data))
      return viaMpi([&] { mpi_.broadcast(data, count, dtype, root, group); });
    Call call(*this, "broadcast");
    int me = member(group, call.what);
    int64_t bytes = bytesOf(count, dtype, call.what);
    int64_t p = group.size();
    if (root < 0 || root >= p)
      throw Error("broadcast: root " + std::to_string(root) +
                  " is not an index into group " + groupString(group));
    // Counted as the MPI backend's chain: the last member sends nothing.
    if (p > 1) {
      stats_.bytesSent += (me + 1) % p == root ? 0 : bytes;
      stats_.bytesReceived += me == root ? 0 : bytes;
    }
    if (p == 1 || bytes == 0)
      return;
    ncclComm_t comm = commFor(group, me, call.what);
    finish(ncclApi().ncclBroadcast(data, data, size_t(bytes), ncclInt8, root, comm, stream_), comm,
           "ncclBroadcast", call.what);
  }

  void reduce(const void *send, void *recv, int64_t count, DType dtype, int root,
              const Group &group) override {
    if (onHost(recv))
      return viaMpi([&] { mpi_.reduce(send, recv, count, dtype, root, group); });
    Call call(*this, "reduce");
    int me = member(group, call.what);
    ncclDataType_t type = reduceType(dtype, ReduceOp::Sum, call.what);
    int64_t bytes = bytesOf(count, dtype, call.what);
    int64_t p = group.size();
    if (root < 0 || root >= p)
      throw Error("reduce: root " + std::to_string(root) + " is not an index into group " +
                  groupString(group));
    // Counted as the MPI backend's chain: the root sends nothing.
    if (p > 1) {
      stats_.bytesSent += me == root ? 0 : bytes;
      stats_.bytesReceived += (me + 1) % p == root ? 0 : bytes;
    }
    if (p == 1 || bytes == 0)
      return copy(recv, send, bytes, call.what);
    ncclComm_t comm = commFor(group, me, call.what);
    finish(ncclApi().ncclReduce(send, recv, size_t(count), type, ncclSum, root, comm, stream_),
           comm, "ncclReduce", call.what);
  }

  /// NCCL has no tags: messages between two ranks arrive in call order.
  void send(const void *data, int64_t bytes, int peer, int tag) override {
    if (onHost(data))
      return viaMpi([&] { mpi_.send(data, bytes, peer, tag); });
    Call call(*this, "send");
    ncclComm_t comm = pointToPoint(bytes, peer, tag, call.what);
    stats_.bytesSent += bytes;
    finish(ncclApi().ncclSend(data, size_t(bytes), ncclInt8, peer, comm, stream_), comm, "ncclSend",
           call.what);
  }

  /// Completes before it returns: NCCL orders a rank's point-to-point calls
  /// on its stream, so pipelines on NCCL rely on their schedules pairing
  /// sends with receives (untested: no GPU in CI).
  void sendAsync(const void *data, int64_t bytes, int peer, int tag) override {
    send(data, bytes, peer, tag);
  }
  void waitSends() override {}

  void recv(void *data, int64_t bytes, int peer, int tag) override {
    if (onHost(data))
      return viaMpi([&] { mpi_.recv(data, bytes, peer, tag); });
    Call call(*this, "recv");
    ncclComm_t comm = pointToPoint(bytes, peer, tag, call.what);
    stats_.bytesReceived += bytes;
    finish(ncclApi().ncclRecv(data, size_t(bytes), ncclInt8, peer, comm, stream_), comm, "ncclRecv",
           call.what);
  }

  std::vector<std::vector<char>>
  gatherBytes(const std::vector<char> &mine) override {
    std::vector<std::vector<char>> all;
    viaMpi([&] { all = mpi_.gatherBytes(mine); });
    return all;
  }

  void barrier() override {
    Call call(*this, "barrier");
    mpi_.barrier();
  }

  [[noreturn]] void abort(int code) override {
    for (auto &entry : comms_)
      ncclApi().ncclCommAbort(entry.second);
    comms_.clear();
    mpi_.abort(code);
    std::_Exit(code); // not reached; the compiler cannot see through virtual
  }

private:
  struct Call : CallScope {
    Call(NcclCommunicator &comm, const char *name)
        : CallScope(comm, comm.broken_, "NCCL", name) {}
  };

  /// What allGather, reduceScatter and allToAll (`count` elements from each
  /// member, so `count * dtype` bytes a block) share: the check, the count,
  /// and the one-member copy. The group's communicator, or null where no
  /// message is needed.
  ncclComm_t blocks(const std::string &what, const void *send, void *recv,
                    int64_t count, DType dtype, const Group &group, int me,
                    int64_t &block) {
    block = bytesOf(count, dtype, what);
    int64_t p = group.size();
    countRing(what, block * p, int(p));
    if (block == 0)
      return nullptr;
    if (p == 1) {
      copy(recv, send, block, what);
      return nullptr;
    }
    return commFor(group, me, what);
  }

  void countRing(const std::string &what, int64_t bytes, int p) {
    int64_t n = ringBytesSent(what, bytes, p);
    stats_.bytesSent += n;
    stats_.bytesReceived += n;
  }

  /// The group's communicator; the first call on a group makes it, with a
  /// unique id from the group's first member.
  ncclComm_t commFor(const Group &group, int me, const std::string &what) {
    auto it = comms_.find(group);
    if (it != comms_.end())
      return it->second;
    ncclUniqueId id{};
    if (me == 0)
      nccl(ncclApi().ncclGetUniqueId(&id), nullptr, "ncclGetUniqueId", what);
    mpi_.broadcast(&id, sizeof id, I8, 0, group);
    checkCuda(cudaSetDevice(device_), "cudaSetDevice", what);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t comm = nullptr;
    nccl(ncclApi().ncclCommInitRankConfig(&comm, int(group.size()), id, me, &config), comm,
         "ncclCommInitRankConfig", what);
    comms_[group] = comm;
    complete(comm, what + " (creating the communicator of group " +
                       groupString(group) + ")");
    return comm;
  }

  ncclComm_t pointToPoint(int64_t bytes, int peer, int tag,
                          const std::string &what) {
    if (bytes < 0)
      throw Error(what + ": negative size");
    if (peer < 0 || peer >= size() || peer == rank() || tag < 0)
      throw Error(what + ": rank " + std::to_string(rank()) +
                  " cannot talk to rank " + std::to_string(peer) +
                  " with tag " + std::to_string(tag));
    return commFor(world(), rank(), what);
  }

  /// Polls until NCCL has enqueued the work (non-blocking communicators
  /// report ncclInProgress until then) and the stream has run it.
  void complete(ncclComm_t comm, const std::string &what) {
    auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(
                                           std::min(timeout_, 1e8)));
    for (int polls = 0;; ++polls) {
      ncclResult_t state = ncclSuccess;
      if (comm)
        ncclApi().ncclCommGetAsyncError(comm, &state);
      if (state != ncclSuccess && state != ncclInProgress)
        fail(comm, what + ": NCCL failed: " + ncclApi().ncclGetErrorString(state) + " (" +
                       ncclApi().ncclGetLastError(comm) + ")");
      if (state == ncclSuccess) {
        cudaError_t code = cudaStreamQuery(stream_);
        if (code == cudaSuccess)
          return;
        if (code != cudaErrorNotReady)
          fail(comm, what + ": CUDA failed: " + cudaGetErrorString(code));
      }
      if (polls < kSpinPolls)
        continue;
      if (Clock::now() > deadline) {
        char seconds[32];
        std::snprintf(seconds, sizeof seconds, "%g", timeout_);
        fail(comm, "communication timed out after " + std::string(seconds) +
                       " s in " + what + " (a rank died or hangs)");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  /// Checks the result of a call that enqueued work, then waits for it.
  void finish(ncclResult_t result, ncclComm_t comm, const char *call,
              const std::string &what) {
    nccl(result, comm, call, what);
    complete(comm, what);
  }

  [[noreturn]] void fail(ncclComm_t comm, const std::string &message) {
    broken_ = true;
    if (comm) {
      ncclApi().ncclCommAbort(comm);
      for (auto it = comms_.begin(); it != comms_.end(); ++it)
        if (it->second == comm) {
          comms_.erase(it);
          break;
        }
    }
    throw Error(message);
  }

  void nccl(ncclResult_t result, ncclComm_t comm, const char *call,
            const std::string &what) {
    if (result == ncclSuccess || result == ncclInProgress)
      return;
    fail(comm,
         what + ": " + call + " failed: " + ncclApi().ncclGetErrorString(result) +
             (comm ? std::string(" (") + ncclApi().ncclGetLastError(comm) + ")" : std::string()));
  }

  void copy(void *to, const void *from, int64_t bytes,
            const std::string &what) {
    if (to != from)
      checkCuda(cudaMemcpyAsync(to, from, size_t(bytes),
                                cudaMemcpyDeviceToDevice, stream_),
                "cudaMemcpyAsync", what);
    complete(nullptr, what);
  }

  int member(const Group &group, const std::string &what) const {
    int me = -1;
    for (size_t i = 0; i < group.size(); ++i) {
      if (group[i] < 0 || group[i] >= size())
        throw Error(what + ": group " + groupString(group) + " names rank " +
                    std::to_string(group[i]) + " but the world has " +
                    std::to_string(size()) + " ranks");
      if (std::count(group.begin(), group.end(), group[i]) > 1)
        throw Error(what + ": group " + groupString(group) +
                    " names a rank twice");
      if (group[i] == rank())
        me = int(i);
    }
    if (me < 0)
      throw Error(what + ": rank " + std::to_string(rank()) +
                  " is not in group " + groupString(group));
    return me;
  }

  /// Whether `p` is host memory (the session's own bookkeeping: flags,
  /// sizes, staged weights), which goes through MPI: NCCL reads GPU memory.
  static bool onHost(const void *p) {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
      cudaGetLastError(); // not CUDA's: host memory
      return true;
    }
    return attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged;
  }
  /// Runs `f` on the MPI communicator, counting what it moved as this one's.
  template <typename F> void viaMpi(F f) {
    Call call(*this, "host memory over MPI");
    CommStats before = mpi_.stats();
    f();
    stats_.bytesSent += mpi_.stats().bytesSent - before.bytesSent;
    stats_.bytesReceived += mpi_.stats().bytesReceived - before.bytesReceived;
  }

  static int64_t bytesOf(int64_t count, DType dtype, const std::string &what) {
    if (count < 0 || dtypeSize(dtype) <= 0)
      throw Error(what + ": bad count or element type");
    return count * dtypeSize(dtype);
  }

  static ncclDataType_t reduceType(DType dtype, ReduceOp op,
                                   const std::string &what) {
    if (dtype == F32)
      return ncclFloat32;
    if (dtype == F64)
      return ncclFloat64;
    if (dtype == I64 && op != ReduceOp::Average)
      return ncclInt64;
    throw Error(what + ": this reduction of " + dtypeName(dtype) +
                " is not supported (f32, f64; i64 for sum and max)");
  }

  static ncclRedOp_t ncclOpOf(ReduceOp op) {
    return op == ReduceOp::Sum ? ncclSum
                               : op == ReduceOp::Max ? ncclMax : ncclAvg;
  }

  Communicator &mpi_;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  std::map<Group, ncclComm_t> comms_;
  bool broken_ = false;
};

} // namespace

std::unique_ptr<Communicator> createNcclCommunicator(Communicator &mpi) {
  return std::make_unique<NcclCommunicator>(mpi);
}

#endif

} // namespace colo::runtime
