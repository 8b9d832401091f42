//===- Verify.h - Static checks of a whole run's communication --*- C++ -*-===//
//
// Before anything runs, the per-rank programs of an executable (one program,
// or one per pipeline stage) are checked together: every rank's sends,
// receives and collectives are replayed in program order, sends never
// blocking (as the runtime sends), receives waiting for their message and
// collectives for every member of their group. The replay fails if a
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

/// An empty string if the communication of `program` on all its ranks
/// matches and completes, else the first problem, naming the rank and step.
std::string verifyCommunication(const Program &program);

} // namespace colo::runtime

#endif
