// colo run --np N: starts the ranks of a run through OpenMPI's mpirun, each
// running `colo run` on the same executable directory.
#include "Commands.h"
#include "FailureRecord.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <unistd.h>

using namespace llvm;

int colo::tool::launchRanks(StringRef dir, int64_t ranks, ArrayRef<std::string> runArgs) {
  ErrorOr<std::string> mpirun = sys::findProgramByName("mpirun");
  if (!mpirun)
    return reportError("running " + Twine(ranks) +
                       " ranks needs mpirun (OpenMPI), which is not on the PATH");
  std::string self = sys::fs::getMainExecutable(nullptr, (void *)&launchRanks);
  if (self.empty())
    return reportError("cannot find the colo executable to start the ranks with");
  std::vector<std::string> args = {*mpirun, "-np", std::to_string(ranks),
                                   // More ranks than cores is how CPU runs
                                   // emulate clusters; binding would serialize them.
                                   "--oversubscribe", "--bind-to", "none"};
  if (::geteuid() == 0)
    args.push_back("--allow-run-as-root");
  ::setenv("COLO_PROGRESS", sys::Process::StandardOutIsDisplayed() ? "1" : "0", 1);
  args.insert(args.end(), {"-x", "COLO_PROGRESS"});
  // Where ranks that fail leave a record, to say which failed first.
  std::string failures = createFailureDirectory();
  if (!failures.empty())
    args.insert(args.end(), {"-x", "COLO_FAILURE_DIR"});
  // The options (all --name=value) first, then `--`: a directory that
  // begins with '-' stays the executable directory for each rank.
  args.insert(args.end(), {self, "run"});
  args.insert(args.end(), runArgs.begin(), runArgs.end());
  args.insert(args.end(), {"--", dir.str()});
  outs() << "launching " << ranks << " ranks with mpirun\n";
  outs().flush();
  std::vector<StringRef> argv(args.begin(), args.end());
  std::string error;
  int rc = sys::ExecuteAndWait(*mpirun, argv, std::nullopt, {}, 0, 0, &error);
  std::string first = colo::tool::firstFailure(failures, ranks);
  if (rc < 0)
    return reportError("mpirun failed: " + error);
  if (rc != 0 && !first.empty())
    reportError(first);
  return rc;
}
