//===- Verify.h - Static checks of a whole run's programs --------*- C++ -*-===//
//
// Before anything runs, the per-rank programs of an executable (one program,
// or one per pipeline stage) are checked together. Sharded state must be cut
// into blocks that hold every element of the whole tensor exactly once. Every
// rank's sends, receives and collectives are replayed in program order, sends
// never blocking (as the runtime sends), receives waiting for their message
// and collectives for every member of their group. The replay fails if a
// receive has no matching send (peer, tag, size), a send is never received,
// the members of a group disagree on a collective, or the ranks wait on each
// other in a cycle (a deadlock).
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_VERIFY_H
#define COLO_RUNTIME_VERIFY_H

#include "colo/Runtime/Program.pb.h"

#include <string>

namespace colo::runtime {

/// An empty string if every sharded buffer of `program` on every stage holds
/// one block of a split of its whole tensor over the mesh whose blocks hold
/// each element exactly once, else the first problem, naming the buffer and
/// the ranks holding its blocks.
std::string verifyShards(const Program &program);

/// An empty string if the communication of `program` on all its ranks
/// matches and completes, else the first problem, naming the rank and step.
std::string verifyCommunication(const Program &program);

/// The device memory a rank's program plans to hold: the arena, the state
/// and inputs, each 64-byte aligned as the session allocates them, and the
/// operand scratch that the CPU device reserves for its GEMMs and
/// convolutions (oneDNN's scratchpads, blocked layouts, widened 16-bit
/// operands), found by preparing them as a session on this machine would
/// (communication staging comes on top; snapshots are host memory).
struct PlannedMemory {
  int64_t arena = 0, stateAndInputs = 0, scratch = 0;
  std::string largest; ///< the largest buffer, temporary or not
  int64_t largestBytes = 0;
  /// Beside the device's: the host's arena and state (what is offloaded).
  int64_t host = 0;
  /// Bytes the transfers between device and host move per step.
  int64_t linkBytes = 0;
  int64_t total() const { return arena + stateAndInputs + scratch; }
};
PlannedMemory plannedMemory(const Program &rankProgram);

/// An empty string if every stage of `program` plans at most `capacity`
/// bytes of device memory per rank, else what overflows, by how much and
/// the largest buffer of the stage that overflows most.
std::string verifyDeviceMemory(const Program &program, int64_t capacity);

} // namespace colo::runtime

#endif
