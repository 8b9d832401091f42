//===- CommunicatorTest.cpp - The MPI communicator under mpirun -----------===//
//
// Run as `mpirun -np N colo-comm-tests` (or alone: a world of one). Every rank
// runs every test; the tests call collectives in the same order on all ranks,
// so checks use EXPECT (an early return would leave the others waiting).
// Expected values are computed here from the formula each rank filled its
// data with, never by another collective.
//
// COLO_COMM_FAULT=hang|die|announce runs Fault.* instead: rank 1 hangs, kills
// itself or announces its failure while the others all-reduce with a 3 s
// timeout.
//
//===----------------------------------------------------------------------===//

#include "colo/Runtime/Communicator.h"
#include "colo/Runtime/Error.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <thread>
#include <unistd.h>

using namespace colo::runtime;

namespace {

Communicator *comm;

Communicator &world() { return *comm; }
int rank() { return comm->rank(); }
int size() { return comm->size(); }

Group iota(int n) {
  Group g(n);
  std::iota(g.begin(), g.end(), 0);
  return g;
}

/// This rank's groups, in the same order on every rank: the world, the world
/// reversed, the ranks of its parity (strided, uneven with an odd world) and
/// that reversed, and itself alone.
std::vector<Group> groups() {
  Group all = iota(size()), parity;
  for (int r = rank() % 2; r < size(); r += 2)
    parity.push_back(r);
  return {all, Group(all.rbegin(), all.rend()), parity,
          Group(parity.rbegin(), parity.rend()), Group{rank()}};
}

int indexIn(const Group &g) {
  return int(std::find(g.begin(), g.end(), rank()) - g.begin());
}

const int64_t kCounts[] = {0, 1, 7, 1000};

template <typename T> DType dtypeOf();
template <> DType dtypeOf<float>() { return F32; }
template <> DType dtypeOf<double>() { return F64; }
template <> DType dtypeOf<int64_t>() { return I64; }

/// Data of rank r at index i: small multiples of 1/2, so sums are exact in
/// any order; i64 values above 2^32 check that no bits are lost.
template <typename T> T fill(int r, int64_t i) {
  int64_t x = (r + 1) * 3 + i % 11 - 5;
  if constexpr (std::is_integral_v<T>)
    return T(x) + (T(r) << 36);
  else
    return T(x) * T(0.5);
}

/// Values whose maximum comes from a different rank at each index.
template <typename T> T fillMax(int r, int64_t i) {
  return T((r * 7 + i * 3) % 13 - 6);
}

template <typename T>
std::vector<T> expectedReduce(const Group &g, int64_t count, ReduceOp op,
                              int64_t offset = 0) {
  std::vector<T> out(count);
  for (int64_t i = 0; i < count; ++i) {
    T acc = op == ReduceOp::Max ? fillMax<T>(g[0], offset + i)
                                : fill<T>(g[0], offset + i);
    for (size_t m = 1; m < g.size(); ++m)
      acc = op == ReduceOp::Max ? std::max(acc, fillMax<T>(g[m], offset + i))
                                : acc + fill<T>(g[m], offset + i);
    out[i] = op == ReduceOp::Average ? acc / T(g.size()) : acc;
  }
  return out;
}

template <typename T>
std::vector<T> filled(int r, int64_t count, ReduceOp op, int64_t offset = 0) {
  std::vector<T> v(count);
  for (int64_t i = 0; i < count; ++i)
    v[i] = op == ReduceOp::Max ? fillMax<T>(r, offset + i)
                               : fill<T>(r, offset + i);
  return v;
}

template <typename T> std::vector<ReduceOp> opsFor() {
  if (std::is_integral_v<T>)
    return {ReduceOp::Sum, ReduceOp::Max};
  return {ReduceOp::Sum, ReduceOp::Average, ReduceOp::Max};
}

/// Sum over the group of one number per member (an i64 all-reduce, which
/// the Sum tests check on their own).
int64_t groupSum(int64_t mine, const Group &g) {
  world().allReduce(&mine, 1, I64, ReduceOp::Sum, g);
  return mine;
}

std::string where(const Group &g, int64_t count) {
  std::string s = "rank " + std::to_string(rank()) + " group [";
  for (int m : g)
    s += std::to_string(m) + " ";
  return s + "] count " + std::to_string(count);
}

template <typename T> class Collective : public ::testing::Test {};
using Types = ::testing::Types<float, double, int64_t>;
TYPED_TEST_SUITE(Collective, Types);

TEST(Communicator, World) {
  EXPECT_EQ(world().backend(), "mpi");
  EXPECT_GE(rank(), 0);
  EXPECT_LT(rank(), size());
  EXPECT_EQ(launchedWithRanks(), size() > 1);
}

TEST(Communicator, RingBytes) {
  EXPECT_EQ(ringBytesSent("allReduce", 800, 4), 1200);
  EXPECT_EQ(ringBytesSent("allGather", 800, 4), 600);
  EXPECT_EQ(ringBytesSent("reduceScatter", 900, 3), 600);
  EXPECT_EQ(ringBytesSent("allToAll", 800, 2), 400);
  EXPECT_EQ(ringBytesSent("broadcast", 800, 4), 800);
  EXPECT_EQ(ringBytesSent("send", 8, 1), 8);
  EXPECT_EQ(ringBytesSent("allReduce", 800, 1), 0);
  EXPECT_THROW(ringBytesSent("gossip", 8, 2), Error);
}

TYPED_TEST(Collective, AllReduce) {
  using T = TypeParam;
  DType dt = dtypeOf<T>();
  int64_t es = sizeof(T);
  for (const Group &g : groups())
    for (int64_t count : kCounts)
      for (ReduceOp op : opsFor<T>()) {
        std::vector<T> data = filled<T>(rank(), count, op);
        world().resetStats();
        world().allReduce(data.data(), count, dt, op, g);
        CommStats s = world().stats();
        EXPECT_EQ(data, expectedReduce<T>(g, count, op)) << where(g, count);
        EXPECT_EQ(s.calls, 1);
        int64_t p = g.size(), nominal = ringBytesSent("allReduce", count * es, p);
        if (count % p == 0) {
          EXPECT_EQ(s.bytesSent, nominal) << where(g, count);
        }
        // Uneven chunks: members differ, the group's total does not.
        EXPECT_EQ(groupSum(s.bytesSent, g), 2 * (p - 1) * count * es);
        EXPECT_EQ(groupSum(s.bytesReceived, g), 2 * (p - 1) * count * es);
      }
}

TYPED_TEST(Collective, AllGather) {
  using T = TypeParam;
  for (const Group &g : groups())
    for (int64_t count : kCounts)
      for (bool inPlace : {false, true}) {
        int64_t p = g.size(), me = indexIn(g);
        std::vector<T> mine = filled<T>(rank(), count, ReduceOp::Sum);
        std::vector<T> all(count * p, T(-99));
        if (inPlace)
          std::copy(mine.begin(), mine.end(), all.begin() + me * count);
        world().resetStats();
        world().allGather(inPlace ? all.data() + me * count : mine.data(),
                          all.data(), count, dtypeOf<T>(), g);
        for (int64_t m = 0; m < p; ++m)
          for (int64_t i = 0; i < count; ++i)
            EXPECT_EQ(all[m * count + i], fill<T>(g[m], i)) << where(g, count);
        int64_t bytes = count * p * sizeof(T);
        EXPECT_EQ(world().stats().bytesSent, ringBytesSent("allGather", bytes, p));
        EXPECT_EQ(world().stats().bytesReceived, world().stats().bytesSent);
      }
}

TYPED_TEST(Collective, ReduceScatter) {
  using T = TypeParam;
  for (const Group &g : groups())
    for (int64_t count : kCounts)
      for (ReduceOp op : opsFor<T>()) {
        int64_t p = g.size(), me = indexIn(g);
        std::vector<T> send = filled<T>(rank(), count * p, op);
        std::vector<T> recv(count, T(-99));
        world().resetStats();
        world().reduceScatter(send.data(), recv.data(), count, dtypeOf<T>(), op, g);
        EXPECT_EQ(recv, expectedReduce<T>(g, count, op, me * count)) << where(g, count);
        int64_t bytes = count * p * sizeof(T);
        EXPECT_EQ(world().stats().bytesSent, ringBytesSent("reduceScatter", bytes, p));
      }
}

TYPED_TEST(Collective, AllToAll) {
  using T = TypeParam;
  // Element i of the block from member `from` to member `to`.
  auto value = [](int from, int to, int64_t i) { return T(from * 10000 + to * 100 + i % 97); };
  for (const Group &g : groups())
    for (int64_t count : kCounts) {
      int64_t p = g.size(), me = indexIn(g);
      std::vector<T> send(count * p), recv(count * p, T(-1));
      for (int64_t j = 0; j < p; ++j)
        for (int64_t i = 0; i < count; ++i)
          send[j * count + i] = value(rank(), g[j], i);
      world().resetStats();
      world().allToAll(send.data(), recv.data(), count, dtypeOf<T>(), g);
      for (int64_t m = 0; m < p; ++m)
        for (int64_t i = 0; i < count; ++i)
          EXPECT_EQ(recv[m * count + i], value(g[m], g[me], i)) << where(g, count);
      int64_t bytes = count * p * sizeof(T);
      EXPECT_EQ(world().stats().bytesSent, ringBytesSent("allToAll", bytes, p));
    }
}

TYPED_TEST(Collective, Broadcast) {
  using T = TypeParam;
  for (const Group &g : groups())
    for (int64_t count : {int64_t(0), int64_t(1), int64_t(1000), int64_t(100003)}) {
      int64_t p = g.size(), me = indexIn(g);
      for (int root = 0; root < p; ++root) {
        std::vector<T> data = me == root ? filled<T>(g[root], count, ReduceOp::Sum)
                                         : std::vector<T>(count, T(-7));
        world().resetStats();
        world().broadcast(data.data(), count, dtypeOf<T>(), root, g);
        EXPECT_EQ(data, filled<T>(g[root], count, ReduceOp::Sum)) << where(g, count);
        int64_t bytes = count * sizeof(T);
        bool last = (me + 1) % p == root;
        EXPECT_EQ(world().stats().bytesSent,
                  last ? 0 : ringBytesSent("broadcast", bytes, p));
        EXPECT_EQ(world().stats().bytesReceived, me == root ? 0 : bytes);
      }
    }
}

/// The broadcast's chain backwards: the root gets the sum, and every member
/// but the root sends the tensor once.
TYPED_TEST(Collective, Reduce) {
  using T = TypeParam;
  for (const Group &g : groups())
    for (int64_t count : {int64_t(0), int64_t(1), int64_t(1000), int64_t(100003)}) {
      int64_t p = g.size(), me = indexIn(g);
      for (int root = 0; root < p; ++root) {
        std::vector<T> send = filled<T>(rank(), count, ReduceOp::Sum), recv(count, T(-7));
        world().resetStats();
        world().reduce(send.data(), recv.data(), count, dtypeOf<T>(), root, g);
        if (me == root) {
          EXPECT_EQ(recv, expectedReduce<T>(g, count, ReduceOp::Sum)) << where(g, count);
        }
        int64_t bytes = count * sizeof(T);
        EXPECT_EQ(world().stats().bytesSent, me == root || p == 1 ? 0 : bytes);
      }
    }
}

/// Summation order would show in the last bits: every member must still get
/// exactly the same bits (compared on rank 0 via gatherBytes).
TEST(Communicator, AllReduceIsBitIdentical) {
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Average})
    for (const Group &g : groups()) {
      std::vector<float> data(10007);
      for (size_t i = 0; i < data.size(); ++i)
        data[i] = std::sin(float(rank() * 1000 + i)) * std::pow(10.0f, float(i % 7));
      world().allReduce(data.data(), int64_t(data.size()), F32, op, g);
      for (size_t i = 0; i < data.size(); i += 101) {
        double sum = 0;
        for (int m : g)
          sum += std::sin(float(m * 1000 + i)) * std::pow(10.0f, float(i % 7));
        if (op == ReduceOp::Average)
          sum /= g.size();
        EXPECT_NEAR(data[i], sum, 1e-5 * std::pow(10.0, double(i % 7)) * g.size());
      }
      std::vector<char> mine(reinterpret_cast<char *>(data.data()),
                             reinterpret_cast<char *>(data.data() + data.size()));
      auto all = world().gatherBytes(mine);
      // On rank 0, g is its own group: the world or the even ranks.
      for (int r = 1; r < int(all.size()); ++r)
        if (g.size() > 1 && (g.size() == size_t(size()) || r % 2 == 0)) {
          EXPECT_EQ(all[r], all[0]) << "rank " << r << " differs";
        }
    }
}

/// Started all-reduces, several in flight at once with a blocking one among
/// them, advanced by progress() and finished in another order than started,
/// give allReduce's bits.
TEST(Communicator, StartedAllReducesGiveAllReduceBits) {
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Average})
    for (const Group &g : groups()) {
      // The last is rendezvous-sized and its count does not divide by 3.
      std::vector<std::vector<float>> started;
      for (size_t n : {size_t(0), size_t(7), size_t(10007), size_t(1 << 19 | 1)}) {
        std::vector<float> &data = started.emplace_back(n);
        for (size_t i = 0; i < n; ++i)
          data[i] = std::sin(float(rank() * 1000 + i)) * std::pow(10.0f, float(i % 7));
      }
      std::vector<std::vector<float>> blocking = started;
      for (auto &data : blocking)
        world().allReduce(data.data(), int64_t(data.size()), F32, op, g);
      std::vector<std::unique_ptr<Work>> works;
      for (auto &data : started)
        works.push_back(world().startAllReduce(data.data(), int64_t(data.size()), F32, op, g));
      std::vector<double> other(1000, double(rank()));
      world().allReduce(other.data(), int64_t(other.size()), F64, ReduceOp::Sum, g);
      for (int poll = 0; poll < 100; ++poll)
        for (auto &work : works)
          work->progress();
      for (size_t i = works.size(); i-- > 0;)
        works[i]->wait();
      EXPECT_TRUE(works[0]->progress()); // finished work stays finished
      for (size_t i = 0; i < started.size(); ++i)
        EXPECT_EQ(0, std::memcmp(started[i].data(), blocking[i].data(),
                                 started[i].size() * sizeof(float)))
            << where(g, int64_t(started[i].size()));
      double members = 0;
      for (int m : g)
        members += m;
      EXPECT_EQ(other[0], members);
    }
}

/// Started broadcasts from every root, in flight at once with a blocking
/// all-reduce among them, advanced by progress() and finished in reverse
/// order, give broadcast's bits and bytes: SUMMA's next blocks on a row
/// and a column of the grid.
/// What this rank's part of a one-element all-reduce on `g` sends alone
/// (the started-work tests run one among their works); the statistics
/// reset.
int64_t scalarAllReduceBytes(const Group &g) {
  double x = double(rank());
  world().resetStats();
  world().allReduce(&x, 1, F64, ReduceOp::Sum, g);
  int64_t bytes = world().stats().bytesSent;
  world().resetStats();
  return bytes;
}

TEST(Communicator, StartedBroadcastsGiveBroadcastBits) {
  for (const Group &g : groups()) {
    int64_t p = int64_t(g.size()), me = indexIn(g);
    // Several segments each, the last one short; one empty.
    for (int64_t count : {int64_t(0), int64_t(100003)}) {
      auto block = [&](int root) { return filled<float>(g[root], count, ReduceOp::Sum); };
      std::vector<std::vector<float>> data;
      for (int root = 0; root < p; ++root)
        data.push_back(me == root ? block(root) : std::vector<float>(count, -7.0f));
      int64_t reduced = scalarAllReduceBytes(g);
      std::vector<std::unique_ptr<Work>> works;
      for (int root = 0; root < p; ++root)
        works.push_back(world().startBroadcast(data[root].data(), count, F32, root, g));
      double x = double(rank());
      world().allReduce(&x, 1, F64, ReduceOp::Sum, g);
      for (int poll = 0; poll < 100; ++poll)
        for (auto &work : works)
          work->progress();
      for (size_t i = works.size(); i-- > 0;)
        works[i]->wait();
      int64_t bytes = count * int64_t(sizeof(float)), sent = 0;
      for (int root = 0; root < p; ++root) {
        EXPECT_EQ(data[root], block(root)) << where(g, count) << " root " << root;
        sent += (me + 1) % p == root ? 0 : ringBytesSent("broadcast", bytes, p);
      }
      EXPECT_EQ(world().stats().bytesSent, sent + reduced);
      double members = 0;
      for (int m : g)
        members += m;
      EXPECT_EQ(x, members);
    }
  }
}

TEST(Communicator, StartedAllGathersGiveAllGatherBits) {
  for (const Group &g : groups()) {
    int64_t p = int64_t(g.size()), me = indexIn(g);
    // Several in flight at once, one empty, one large; finished in reverse
    // order after an all-reduce on the same group.
    for (int64_t count : {int64_t(0), int64_t(7), int64_t(100003)}) {
      std::vector<std::vector<float>> mine, all;
      for (int k = 0; k < 3; ++k) {
        mine.push_back(filled<float>(rank() + k, count, ReduceOp::Sum));
        all.emplace_back(count * p, -7.0f);
      }
      int64_t reduced = scalarAllReduceBytes(g);
      std::vector<std::unique_ptr<Work>> works;
      for (int k = 0; k < 3; ++k)
        works.push_back(world().startAllGather(mine[k].data(), all[k].data(), count, F32, g));
      double x = double(rank());
      world().allReduce(&x, 1, F64, ReduceOp::Sum, g);
      for (size_t i = works.size(); i-- > 0;)
        works[i]->wait();
      for (int k = 0; k < 3; ++k)
        for (int64_t m = 0; m < p; ++m)
          for (int64_t i = 0; i < count; ++i)
            ASSERT_EQ(all[k][m * count + i], fill<float>(g[m] + k, i)) << where(g, count);
      double members = 0;
      for (int m : g)
        members += m;
      EXPECT_EQ(x, members);
      int64_t bytes = count * p * int64_t(sizeof(float));
      EXPECT_EQ(world().stats().bytesSent, 3 * ringBytesSent("allGather", bytes, p) + reduced)
          << where(g, count) << " member " << me;
    }
  }
}

/// Pairs with a common member, as a mesh's row and column groups have, made
/// up front: all-reduces started on each at once and finished in reverse
/// order still give each pair its own sum (a message of one group matched
/// by another's call would show in the sums).
TEST(Communicator, CreatedGroupsKeepTheirMessagesApart) {
  std::vector<Group> pairs;
  for (int other = 0; other < size(); ++other)
    if (other != rank())
      pairs.push_back(rank() < other ? Group{rank(), other} : Group{other, rank()});
  std::vector<Group> mine = pairs;
  mine.push_back(iota(size()));
  world().createGroups(mine);
  std::vector<std::vector<double>> data;
  std::vector<std::unique_ptr<Work>> works;
  for (const Group &g : pairs) { // in increasing order on every rank
    data.emplace_back(100003, double(rank() + 1) * double(g[0] + 10 * g[1] + 1));
    works.push_back(
        world().startAllReduce(data.back().data(), 100003, F64, ReduceOp::Sum, g));
  }
  for (size_t i = works.size(); i-- > 0;)
    works[i]->wait();
  for (size_t i = 0; i < pairs.size(); ++i) {
    const Group &g = pairs[i];
    double factor = double(g[0] + 10 * g[1] + 1);
    EXPECT_EQ(data[i].front(), factor * double(g[0] + 1 + g[1] + 1)) << where(g, 100003);
    EXPECT_EQ(data[i].back(), data[i].front());
  }
  // Groups made again, or used before: nothing changes for their calls.
  world().createGroups(groups());
  for (const Group &g : groups()) {
    double x = double(rank());
    world().allReduce(&x, 1, F64, ReduceOp::Sum, g);
    double members = 0;
    for (int m : g)
      members += m;
    EXPECT_EQ(x, members) << where(g, 1);
  }
  EXPECT_THROW(world().createGroups({Group{rank(), rank()}}), Error);
}

TEST(Communicator, LargeAllReduce) {
  // Rendezvous-sized messages and a count that does not divide by 3.
  std::vector<double> data(1 << 20 | 1);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = double(rank() + 1) * double(i % 1024);
  world().allReduce(data.data(), int64_t(data.size()), F64, ReduceOp::Sum, iota(size()));
  double ranks = size() * (size() + 1) / 2.0;
  int64_t wrong = 0;
  for (size_t i = 0; i < data.size(); ++i)
    wrong += data[i] != ranks * double(i % 1024);
  EXPECT_EQ(wrong, 0);
}

TEST(Communicator, SendRecv) {
  if (size() < 2)
    GTEST_SKIP() << "needs two ranks";
  // Rank 0 talks to each rank in turn, so no send waits on a later recv.
  for (int peer = 1; peer < size(); ++peer)
    for (int64_t bytes : {int64_t(0), int64_t(5), int64_t(3 << 20)}) {
      if (rank() != 0 && rank() != peer)
        continue;
      std::vector<char> out(bytes), in(bytes, 0);
      for (int64_t i = 0; i < bytes; ++i)
        out[i] = char((i * 7 + rank()) & 0x7f);
      world().resetStats();
      if (rank() == 0) {
        world().send(out.data(), bytes, peer, 3);
        world().recv(in.data(), bytes, peer, 4);
      } else {
        world().recv(in.data(), bytes, 0, 3);
        world().send(out.data(), bytes, 0, 4);
      }
      int other = rank() == 0 ? peer : 0;
      int64_t wrong = 0;
      for (int64_t i = 0; i < bytes; ++i)
        wrong += in[i] != char((i * 7 + other) & 0x7f);
      EXPECT_EQ(wrong, 0);
      EXPECT_EQ(world().stats().bytesSent, bytes);
      EXPECT_EQ(world().stats().bytesReceived, bytes);
      EXPECT_EQ(world().stats().calls, 2);
    }
  // Tags keep streams apart: tag 6 is received before the earlier tag 5.
  if (rank() == 0) {
    int a = 5, b = 6;
    world().send(&a, sizeof a, 1, 5);
    world().send(&b, sizeof b, 1, 6);
  } else if (rank() == 1) {
    int a = 0, b = 0;
    world().recv(&b, sizeof b, 0, 6);
    world().recv(&a, sizeof a, 0, 5);
    EXPECT_EQ(a, 5);
    EXPECT_EQ(b, 6);
  }
  world().barrier();
}

TEST(Communicator, GatherBytes) {
  // Different sizes, one rank sending nothing.
  auto blob = [](int r) {
    std::vector<char> b(r == 1 ? 0 : r * 37 + 5 + (r == 2 ? 2 << 20 : 0));
    for (size_t i = 0; i < b.size(); ++i)
      b[i] = char((r * 31 + i) & 0xff);
    return b;
  };
  world().resetStats();
  auto all = world().gatherBytes(blob(rank()));
  if (rank() == 0) {
    ASSERT_EQ(all.size(), size_t(size()));
    for (int r = 0; r < size(); ++r)
      EXPECT_EQ(all[r], blob(r)) << "from rank " << r;
  } else {
    EXPECT_TRUE(all.empty());
    EXPECT_EQ(world().stats().bytesSent, int64_t(8 + blob(rank()).size()));
  }
}

TEST(Communicator, Barrier) {
  // Rank 0 arrives late; nobody may leave before it arrives.
  using Clock = std::chrono::steady_clock;
  world().barrier();
  auto start = Clock::now();
  if (rank() == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  world().barrier();
  double waited = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_GE(waited, 0.25); // less the skew of leaving the first barrier
}

TEST(Communicator, Errors) {
  std::vector<double> x(4, 1.0);
  std::vector<int64_t> n(4, 1);
  Group all = iota(size());
  EXPECT_THROW(world().allReduce(n.data(), 4, I64, ReduceOp::Average, all), Error);
  EXPECT_THROW(world().allReduce(x.data(), 4, F16, ReduceOp::Sum, all), Error);
  EXPECT_THROW(world().allReduce(x.data(), 4, BOOL, ReduceOp::Max, all), Error);
  EXPECT_THROW(world().allReduce(x.data(), -1, F64, ReduceOp::Sum, all), Error);
  EXPECT_THROW(world().allReduce(x.data(), 4, F64, ReduceOp::Sum, Group{}), Error);
  EXPECT_THROW(world().allReduce(x.data(), 4, F64, ReduceOp::Sum, Group{rank(), rank()}), Error);
  EXPECT_THROW(world().allReduce(x.data(), 4, F64, ReduceOp::Sum, Group{rank(), size()}), Error);
  EXPECT_THROW(world().broadcast(x.data(), 4, F64, 1, Group{rank()}), Error);
  EXPECT_THROW(world().send(x.data(), 8, rank(), 0), Error);
  EXPECT_THROW(world().send(x.data(), 8, size(), 0), Error);
  EXPECT_THROW(world().recv(x.data(), 8, (rank() + 1) % size(), -1), Error);
  try {
    int other = size() > 1 ? (rank() + 1) % size() : 99;
    world().allReduce(x.data(), 4, F64, ReduceOp::Sum, Group{other});
    ADD_FAILURE() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("group ["), std::string::npos) << e.what();
  }
  // The errors did not disturb later collectives.
  world().allReduce(x.data(), 4, F64, ReduceOp::Sum, all);
  EXPECT_EQ(x[3], double(size()));
}

/// Without a GPU (or NCCL) the NCCL backend must say why, not crash.
TEST(Nccl, CreatesOrExplains) {
  if (size() != 1)
    GTEST_SKIP() << "ranks may share one GPU, which NCCL refuses";
  try {
    auto nccl = createNcclCommunicator(world());
    EXPECT_EQ(nccl->backend(), "nccl");
    nccl->barrier();
  } catch (const Error &e) {
    std::string m = e.what();
    EXPECT_TRUE(m.find("without NCCL") != m.npos || m.find("no GPU") != m.npos) << m;
  }
}

TEST(Fault, SurvivorsTimeOut) {
  const char *mode = std::getenv("COLO_COMM_FAULT");
  if (!mode || size() < 3)
    GTEST_SKIP() << "run by ctest's comm-fault-* under mpirun -np 3";
  bool announce = std::string(mode) == "announce";
  if (rank() == 1) {
    world().barrier();
    if (std::string(mode) == "die")
      raise(SIGKILL);
    if (announce) {
      world().announceFailure("its disk is full");
      world().abort(1);
    }
    // Hang, but not beyond any ctest timeout should the others not abort.
    std::this_thread::sleep_for(std::chrono::seconds(100));
    _exit(0);
  }
  // The survivors' barrier is inside the try: rank 1 may leave it and fail
  // before they do, and hearing of the fault there is as right as later.
  world().setTimeout(3);
  std::vector<float> data(1000, 1.0f);
  auto start = std::chrono::steady_clock::now();
  try {
    world().barrier();
    world().allReduce(data.data(), 1000, F32, ReduceOp::Sum, iota(size()));
    ADD_FAILURE() << "allReduce returned although rank 1 is gone";
  } catch (const Error &e) {
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("colo-comm-fault: rank %d detected the fault after %.2f s: %s\n",
                rank(), seconds, e.what());
    std::fflush(stdout);
    std::optional<LostPeer> lost = world().lostPeer();
    ASSERT_TRUE(lost.has_value());
    if (announce) {
      EXPECT_EQ(lost->rank, 1);
      // Heard at once, not at the deadline.
      EXPECT_LE(seconds, 1.0);
      EXPECT_EQ(lost->reason, LostPeer::Failed);
      EXPECT_NE(std::string(e.what()).find("rank 1 failed: its disk is full (this rank was "
                                           "waiting for "),
                std::string::npos);
      return;
    }
    EXPECT_GE(seconds, 2.9);
    EXPECT_LE(seconds, 6.0);
    // The ring's survivors wait for their left neighbour: rank 1, or a
    // survivor that waits for it.
    EXPECT_EQ(lost->reason, LostPeer::TimedOut);
    EXPECT_NE(lost->rank, rank());
    EXPECT_NE(std::string(e.what()).find("timed out after 3 s waiting for rank " +
                                         std::to_string(lost->rank) + " in"),
              std::string::npos);
  }
}

/// Prints only failures, prefixed with the rank, for ranks other than 0.
class FailurePrinter : public ::testing::EmptyTestEventListener {
  void OnTestPartResult(const ::testing::TestPartResult &result) override {
    if (result.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank(),
                   result.file_name() ? result.file_name() : "?",
                   result.line_number(), result.summary());
  }
};

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::unique_ptr<Communicator> mpi;
  try {
    mpi = createMpiCommunicator();
  } catch (const Error &e) {
    std::fprintf(stderr, "colo-comm-tests: %s\n", e.what());
    return 1;
  }
  comm = mpi.get();
  comm->setTimeout(30); // a bug fails the tests well within ctest's limit
  if (comm->rank() != 0) {
    auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter);
  }
  int failed = RUN_ALL_TESTS();
  // The first survivor to exit aborts the job (MPI cannot finalize without
  // the lost rank): give the others time to report first.
  if (std::getenv("COLO_COMM_FAULT"))
    std::this_thread::sleep_for(std::chrono::seconds(1));
  return failed;
}
