// The compile-time replay of all ranks' communication (Verify.h).
#include "colo/Runtime/Verify.h"

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
} // namespace
