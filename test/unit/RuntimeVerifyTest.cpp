// The compile-time checks of all ranks' programs (Verify.h): sharded state and
// the replay of their communication.
#include "colo/Runtime/Verify.h"
#include "ProgramBuilder.h"

#include <gtest/gtest.h>

using namespace colo::runtime;

namespace {
/// A two-stage pipeline over mesh [pp = 2]; each stage has one F32 buffer
/// of `elements[stage]` elements and the given point-to-point steps.
struct Messages {
  struct Op {
    Collective::Kind kind;
    int tag;
  };
  std::vector<Op> stage[2];
  int64_t elements[2] = {4, 4};

  Program program() const {
    Program top;
    top.mutable_mesh()->add_shape(2);
    top.mutable_mesh()->add_axes("pp");
    top.set_pipeline_axis(0);
    for (int s = 0; s < 2; ++s) {
      Program *p = top.add_stages();
      Buffer *b = p->add_buffers();
      b->set_name("x");
      b->set_dtype(F32);
      b->add_shape(elements[s]);
      for (const Op &op : stage[s]) {
        Step *step = p->add_steps();
        step->set_name("msg");
        Collective *c = step->mutable_collective();
        c->set_kind(op.kind);
        c->add_mesh_axes(0);
        c->set_peer(1 - s);
        c->set_tag(op.tag);
        c->set_input(op.kind == Collective::SEND ? 0 : -1);
        c->set_output(op.kind == Collective::RECV ? 0 : -1);
      }
    }
    return top;
  }
};

constexpr auto Send = Collective::SEND;
constexpr auto Recv = Collective::RECV;

TEST(RuntimeVerify, MatchedMessagesPass) {
  Messages m;
  m.stage[0] = {{Send, 0}, {Recv, 1}};
  m.stage[1] = {{Recv, 0}, {Send, 1}};
  EXPECT_EQ(verifyCommunication(m.program()), "");
}

TEST(RuntimeVerify, SendsDoNotBlock) {
  // Both send first, then receive: fine, because sends do not wait.
  Messages m;
  m.stage[0] = {{Send, 0}, {Recv, 1}};
  m.stage[1] = {{Send, 1}, {Recv, 0}};
  EXPECT_EQ(verifyCommunication(m.program()), "");
}

TEST(RuntimeVerify, ReceivesInACycleDeadlock) {
  Messages m;
  m.stage[0] = {{Recv, 1}, {Send, 0}};
  m.stage[1] = {{Recv, 0}, {Send, 1}};
  std::string problem = verifyCommunication(m.program());
  EXPECT_NE(problem.find("deadlock"), std::string::npos) << problem;
  EXPECT_NE(problem.find("rank 0 step 0 'msg' (receive from rank 1, tag 1)"), std::string::npos)
      << problem;
}

TEST(RuntimeVerify, SizesMustAgree) {
  Messages m;
  m.stage[0] = {{Send, 0}};
  m.stage[1] = {{Recv, 0}};
  m.elements[1] = 8;
  std::string problem = verifyCommunication(m.program());
  EXPECT_NE(problem.find("receives 32 bytes but rank 0 step 0 'msg' (send to rank 1, tag 0) "
                         "sends 16"),
            std::string::npos)
      << problem;
}

TEST(RuntimeVerify, EverySendIsReceived) {
  Messages m;
  m.stage[0] = {{Send, 0}, {Send, 1}};
  m.stage[1] = {{Recv, 0}};
  std::string problem = verifyCommunication(m.program());
  EXPECT_NE(problem.find("tag 1) is never received by rank 1"), std::string::npos) << problem;
}

/// One SPMD program over a ring of `n` ranks (mesh [sp = n]) whose steps
/// shift one buffer by the given (offset, tag) pairs.
Program shifts(int n, std::vector<std::pair<int64_t, int>> steps) {
  Program p;
  p.mutable_mesh()->add_axes("sp");
  p.mutable_mesh()->add_shape(n);
  for (const char *name : {"k", "k.next"}) {
    Buffer *b = p.add_buffers();
    b->set_name(name);
    b->set_dtype(F32);
    b->add_shape(4);
  }
  for (auto [offset, tag] : steps) {
    Step *step = p.add_steps();
    step->set_name("shift");
    Collective *c = step->mutable_collective();
    c->set_kind(Collective::SHIFT);
    c->add_mesh_axes(0);
    c->set_offset(offset);
    c->set_tag(tag);
    c->set_input(0);
    c->set_output(1);
  }
  return p;
}

TEST(RuntimeVerify, ShiftsAroundTheRingPass) {
  // Ring attention's pattern: every rank sends to the next and receives from
  // the previous, twice (keys and values), then back (their gradients).
  EXPECT_EQ(verifyCommunication(shifts(4, {{1, 0}, {1, 1}, {3, 2}, {3, 3}})), "");
}

TEST(RuntimeVerify, ShiftsWithDifferentTagsNeverMatch) {
  // Rank r's message to r + 1 carries tag 0, while r + 1 waits for tag 1.
  Program p = shifts(2, {{1, 0}});
  Program other = shifts(2, {{1, 1}});
  Program top;
  *top.mutable_mesh() = p.mesh();
  top.set_pipeline_axis(0);
  *top.add_stages() = p;
  *top.add_stages() = other;
  std::string problem = verifyCommunication(top);
  EXPECT_NE(problem.find("deadlock"), std::string::npos) << problem;
}

/// A [row = 2, col = 2] program of broadcasts over "col", from the roots
/// `roots` in turn (SUMMA's steps; a reduce where `reduce`).
Program broadcasts(std::vector<int64_t> roots, bool reduce = false) {
  Program p;
  for (const char *axis : {"row", "col"}) {
    p.mutable_mesh()->add_axes(axis);
    p.mutable_mesh()->add_shape(2);
  }
  for (const char *name : {"x", "x.block"}) {
    Buffer *b = p.add_buffers();
    b->set_name(name);
    b->set_dtype(F32);
    b->add_shape(4);
  }
  for (int64_t root : roots) {
    Collective *c = p.add_steps()->mutable_collective();
    c->set_kind(reduce ? Collective::REDUCE : Collective::BROADCAST);
    c->add_mesh_axes(1);
    c->set_root(root);
    c->set_input(0);
    c->set_output(1);
  }
  return p;
}

TEST(RuntimeVerify, SummaBroadcastsPass) {
  EXPECT_EQ(verifyCommunication(broadcasts({0, 1})), "");
  EXPECT_EQ(verifyCommunication(broadcasts({0, 1}, /*reduce=*/true)), "");
}

TEST(RuntimeVerify, BroadcastsFromDifferentRootsAreNamed) {
  // Ranks (0, 0) and (0, 1) disagree on the first broadcast's root.
  Program top;
  Program a = broadcasts({0}), b = broadcasts({1});
  *top.mutable_mesh() = a.mesh();
  top.set_pipeline_axis(1);
  *top.add_stages() = a;
  *top.add_stages() = b;
  std::string problem = verifyCommunication(top);
  EXPECT_NE(problem.find("(broadcast) meets rank 1 step 0 (broadcast) in the same group with "
                         "another root"),
            std::string::npos)
      << problem;
}

/// A [dp = 2, tp = 2] program holding one state buffer of whole shape
/// `full`, split on `dim` in `groups` over the mesh `axes`, with the block
/// shape `local`.
Program sharded(std::vector<int64_t> full, int dim, int64_t groups, std::vector<int> axes,
                std::vector<int64_t> local, bool flat = false) {
  Program p;
  for (auto [name, size] : {std::pair{"dp", 2}, std::pair{"tp", 2}}) {
    p.mutable_mesh()->add_axes(name);
    p.mutable_mesh()->add_shape(size);
  }
  Buffer *b = p.add_buffers();
  b->set_name("h.0.attn.c_attn.weight");
  b->set_dtype(F32);
  b->set_kind(Buffer::STATE);
  for (int64_t d : local)
    b->add_shape(d);
  Shard *s = b->mutable_shard();
  for (int64_t d : full)
    s->add_full_shape(d);
  s->set_dim(dim);
  s->set_groups(groups);
  s->set_flat(flat);
  for (int a : axes)
    s->add_mesh_axes(a);
  return p;
}

TEST(RuntimeVerify, MegatronAndZeroShardsCoverTheirTensors) {
  // Fused q, k, v columns split per part (groups = 3) over tp.
  EXPECT_EQ(verifyShards(sharded({8, 24}, 1, 3, {1}, {8, 12})), "");
  // ZeRO: flat blocks over dp and tp, the last padded (10 = 3 + 3 + 3 + 1).
  EXPECT_EQ(verifyShards(sharded({10}, 0, 1, {0, 1}, {3}, true)), "");
}

TEST(RuntimeVerify, TwoDimensionalBlocksCoverTheirTensors) {
  // 2-D tensor parallelism's fused q, k, v weight [8, 24] on the [dp, tp]
  // mesh read as a 2 x 2 grid: its columns (in 3 groups) over the first
  // axis, its rows over the last.
  Program p = sharded({8, 24}, 1, 3, {0, 1}, {4, 12});
  p.mutable_buffers(0)->mutable_shard()->set_inner_dim(0);
  p.mutable_buffers(0)->mutable_shard()->set_inner_parts(2);
  EXPECT_EQ(verifyShards(p), "");
}

TEST(RuntimeVerify, AShardThatDoesNotDivideNamesTheBufferAndRanks) {
  std::string problem = verifyShards(sharded({8, 21}, 1, 3, {1}, {8, 10}));
  EXPECT_NE(problem.find("buffer 'h.0.attn.c_attn.weight': its shard (blocks on ranks 0, 1): "
                         "dimension 1 of [8, 21] does not split into 3 groups of 2 parts"),
            std::string::npos)
      << problem;
}

TEST(RuntimeVerify, ABlockOfTheWrongShapeIsRejected) {
  std::string problem = verifyShards(sharded({8, 24}, 1, 3, {1}, {8, 8}));
  EXPECT_NE(problem.find("the block of [8, 24] is [8, 12], not the buffer's [8, 8]"),
            std::string::npos)
      << problem;
}

TEST(RuntimeVerify, AMeshAxisNamedTwiceIsRejected) {
  std::string problem = verifyShards(sharded({8, 24}, 1, 1, {1, 1}, {8, 6}));
  EXPECT_NE(problem.find("mesh axis 1 is named twice"), std::string::npos) << problem;
}

TEST(RuntimeVerify, AShardOverThePipelineAxisIsRejected) {
  Messages m;
  Program top = m.program();
  Buffer *b = top.mutable_stages(1)->mutable_buffers(0);
  b->set_kind(Buffer::STATE);
  b->mutable_shard()->add_full_shape(8);
  b->mutable_shard()->add_mesh_axes(0);
  std::string problem = verifyShards(top);
  EXPECT_NE(problem.find("stage 1 buffer 'x': its shard (blocks on ranks 0, 1): split over "
                         "the pipeline axis"),
            std::string::npos)
      << problem;
}
} // namespace

/// The device memory a rank plans counts the operand scratch that the CPU
/// device reserves for its products: a GEMM that adds to its output
/// (beta 1) computes the product into a float buffer of C's size first.
TEST(RuntimeVerify, PlannedDeviceMemoryCountsTheProductsScratch) {
  ProgramBuilder b;
  int32_t a = b.temp("a", F32, {64, 64}), w = b.state("w", F32, {64, 64}),
          c = b.temp("c", F32, {64, 64});
  b.gemm(a, w, c, 64, 64, 64, "accumulate").set_beta(1.0);
  PlannedMemory m = plannedMemory(b.program());
  EXPECT_EQ(m.stateAndInputs, 64 * 64 * 4);
  EXPECT_GE(m.scratch, 64 * 64 * 4);
  EXPECT_EQ(m.total(), m.arena + m.stateAndInputs + m.scratch);
  EXPECT_EQ(verifyDeviceMemory(b.program(), m.total()), "");
  std::string problem = verifyDeviceMemory(b.program(), m.total() - 1);
  EXPECT_NE(problem.find("scratch"), std::string::npos) << problem;
  EXPECT_NE(problem.find("more than the"), std::string::npos) << problem;
}
