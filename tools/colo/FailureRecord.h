//===- FailureRecord.h - Which rank of a run failed first -------*- C++ -*-===//
//
// When `colo run --np N` starts the ranks, it gives them a directory
// (COLO_FAILURE_DIR) where each rank that ends with an error leaves one
// record: how it ended, the peer it lost, when, and its message. After a
// failed run the launcher reads them and says which rank failed first: the
// earliest rank that failed by itself; or else the rank the earliest
// timeout waited for (it died or hangs); or else a rank the others lost
// without a word from it (killed by a signal or the kernel's OOM killer,
// crashed).
//
//===----------------------------------------------------------------------===//

#ifndef COLO_TOOLS_FAILURERECORD_H
#define COLO_TOOLS_FAILURERECORD_H

#include <cstdint>
#include <string>

namespace colo::tool {

enum class RankEnd {
  Failed,   ///< an error of its own
  Heard,    ///< another rank announced its failure
  TimedOut, ///< a wait for the peer passed --comm-timeout
  Ended,    ///< the launcher ended it (SIGTERM) while it waited for the peer
};

/// Makes the directory for a run's records; the ranks find it in the
/// environment. Empty if it cannot be made (the run goes on without).
std::string createFailureDirectory();

/// Where this rank's record goes, if the launcher asked for one; called once
/// before the rank can fail.
void prepareFailureRecord(int rank);

/// Writes this rank's record once (`peer` -1: none; the message is the
/// parts joined). Async-signal-safe.
void writeFailureRecord(RankEnd end, int peer, const char *message, const char *more = "",
                        const char *last = "");

/// The launcher's line after a failed run ("rank 1 failed first: ..."), or
/// "" when the records say nothing; removes the directory.
std::string firstFailure(const std::string &dir, int64_t ranks);

} // namespace colo::tool

#endif
