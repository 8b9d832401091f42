// Which rank of a run failed first (FailureRecord.h). A record is one file
// per rank, "rank-R": a line "END PEER SECONDS NANOSECONDS" (CLOCK_REALTIME;
// the ranks of `colo run --np` share one machine and its clock), then the
// rank's message.
#include "FailureRecord.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <time.h>
#include <unistd.h>
#include <vector>

using namespace llvm;

namespace colo::tool {
namespace {

constexpr const char *kVariable = "COLO_FAILURE_DIR";

char recordPath[4096];
volatile std::sig_atomic_t recordWritten = 0;

/// Appends the decimal digits of `v` to `out`; no allocation.
char *putNumber(char *out, int64_t v) {
  if (v < 0) {
    *out++ = '-';
    v = -v;
  }
  char digits[24];
  int n = 0;
  do {
    digits[n++] = char('0' + v % 10);
    v /= 10;
  } while (v > 0);
  while (n > 0)
    *out++ = digits[--n];
  return out;
}

struct Record {
  RankEnd end;
  int peer;
  double time;
  std::string message;
};

std::optional<Record> readRecord(const std::string &path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> file = MemoryBuffer::getFile(path);
  if (!file)
    return std::nullopt;
  StringRef text = (*file)->getBuffer();
  auto [head, message] = text.split('\n');
  int end = 0, peer = -1;
  long long seconds = 0, nanoseconds = 0;
  if (std::sscanf(head.str().c_str(), "%d %d %lld %lld", &end, &peer, &seconds,
                  &nanoseconds) != 4 ||
      end < 0 || end > int(RankEnd::Ended))
    return std::nullopt;
  return Record{RankEnd(end), peer, double(seconds) + double(nanoseconds) * 1e-9,
                message.rtrim('\n').str()};
}

} // namespace

std::string createFailureDirectory() {
  SmallString<128> dir;
  if (sys::fs::createUniqueDirectory("colo-ranks", dir))
    return "";
  ::setenv(kVariable, dir.c_str(), 1);
  return dir.str().str();
}

void prepareFailureRecord(int rank) {
  const char *dir = std::getenv(kVariable);
  if (!dir || !*dir)
    return;
  std::snprintf(recordPath, sizeof recordPath, "%s/rank-%d", dir, rank);
}

void writeFailureRecord(RankEnd end, int peer, const char *message, const char *more,
                        const char *last) {
  if (!recordPath[0] || recordWritten)
    return;
  recordWritten = 1;
  int fd = ::open(recordPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return;
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  char head[96], *p = head;
  p = putNumber(p, int64_t(end));
  *p++ = ' ';
  p = putNumber(p, peer);
  *p++ = ' ';
  p = putNumber(p, now.tv_sec);
  *p++ = ' ';
  p = putNumber(p, now.tv_nsec);
  *p++ = '\n';
  (void)!::write(fd, head, size_t(p - head));
  (void)!::write(fd, message, std::strlen(message));
  (void)!::write(fd, more, std::strlen(more));
  (void)!::write(fd, last, std::strlen(last));
  ::close(fd);
}

std::string firstFailure(const std::string &dir, int64_t ranks) {
  if (dir.empty())
    return "";
  std::vector<std::optional<Record>> records;
  for (int64_t r = 0; r < ranks; ++r) {
    std::string path = dir + "/rank-" + std::to_string(r);
    records.push_back(readRecord(path));
    sys::fs::remove(path);
  }
  sys::fs::remove(dir);

  // The earliest record that `matches`, or -1.
  auto earliest = [&](auto matches) {
    int found = -1;
    for (int r = 0; r < int(ranks); ++r)
      if (records[r] && matches(*records[r]) &&
          (found < 0 || records[r]->time < records[found]->time))
        found = r;
    return found;
  };
  auto lostRank = [&](const Record &rec) { return rec.peer >= 0 && rec.peer < ranks; };
  if (int r = earliest([](const Record &rec) { return rec.end == RankEnd::Failed; }); r >= 0)
    return "rank " + std::to_string(r) + " failed first: " + records[r]->message;
  if (int r = earliest([&](const Record &rec) {
        return rec.end == RankEnd::TimedOut && lostRank(rec);
      });
      r >= 0)
    return "rank " + std::to_string(records[r]->peer) +
           " failed first: it stopped answering (it died or hangs); rank " +
           std::to_string(r) + ": " + records[r]->message;
  if (int r = earliest([&](const Record &rec) {
        return lostRank(rec) && !records[size_t(rec.peer)];
      });
      r >= 0)
    return "rank " + std::to_string(records[r]->peer) +
           " failed first, without a word of its own (killed by a signal such as SIGKILL "
           "or the kernel's OOM killer, or crashed); rank " + std::to_string(r) + ": " +
           records[r]->message;
  return "";
}

} // namespace colo::tool
