// colo run: train with a compiled executable on the CPU for a number of steps,
// printing the loss of each step, and write the final weights with PyTorch
// names. The runtime (runtime/, no MLIR) does the work and reports problems
// as exceptions, so this file is compiled with exceptions (see
// tools/colo/CMakeLists.txt) and turns each into one "colo: error:" line.
#include "Commands.h"
#include "FailureRecord.h"

#include "colo/Planner/StepTimes.h"
#include "colo/Runtime/Checkpoint.h"
#include "colo/Runtime/Communicator.h"
#include "colo/Runtime/CudaDevice.h"
#include "colo/Runtime/DataSource.h"
#include "colo/Runtime/Error.h"
#include "colo/Runtime/Files.h"
#include "colo/Runtime/Session.h"
#include "colo/Runtime/TrainLoop.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/WithColor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <new>
#include <optional>
#include <thread>
#include <unistd.h>

using namespace llvm;
using namespace colo::tool;
namespace rt = colo::runtime;

namespace {
cl::SubCommand runCmd("run", "Train with a compiled executable on the CPU");
cl::opt<std::string> runDir(cl::Positional, cl::desc("<executable directory>"),
                            cl::Required, cl::sub(runCmd));
cl::opt<int64_t> runSteps("steps", cl::desc("Training steps to run (default 10)"),
                          cl::init(10), cl::sub(runCmd), cl::sub(trainCommand()));
cl::opt<std::string> runData(
    "data",
    cl::desc("Input data: FILE.npy, FILE.npz, a token file (with --token-dtype) or "
             "'synthetic'"),
    cl::value_desc("file|synthetic"), cl::sub(runCmd), cl::sub(trainCommand()));
cl::opt<std::string>
    runTokenDType("token-dtype",
                  cl::desc("Read --data as a flat binary of token ids: uint8 (any file as "
                           "bytes), uint16 or int32"),
                  cl::value_desc("uint8|uint16|int32"), cl::sub(runCmd), cl::sub(trainCommand()));
cl::opt<bool> runShiftLabels(
    "shift-labels",
    cl::desc("Token data: inputs named labels/targets take the next token (default: "
             "the same tokens as the other inputs)"),
    cl::sub(runCmd), cl::sub(trainCommand()));
cl::opt<uint64_t> runSeed("seed", cl::desc("Seed of synthetic data (default 0)"),
                          cl::init(0), cl::sub(runCmd), cl::sub(trainCommand()));
cl::opt<int> runThreads("threads",
                        cl::desc("Threads for BLAS and oneDNN (default: all cores)"),
                        cl::init(0), cl::sub(runCmd), cl::sub(trainCommand()));
cl::opt<std::string> runGemm(
    "gemm",
    cl::desc("Library of the float and 16-bit matrix products: onednn (default; its "
             "kernels follow the processor's instructions) or openblas (f64 products "
             "always run on OpenBLAS)"),
    cl::value_desc("onednn|openblas"), cl::init("onednn"), cl::sub(runCmd),
    cl::sub(trainCommand()));
cl::opt<std::string> runOutput(
    "o", cl::desc("Write the final weights here (default EXE_DIR/weights.safetensors)"),
    cl::value_desc("weights.safetensors"), cl::sub(runCmd), cl::sub(trainCommand()));
cl::opt<std::string> runWeights(
    "weights",
    cl::desc("Start from these weights (safetensors; PyTorch or buffer names) instead "
             "of the executable's state"),
    cl::value_desc("init.safetensors"), cl::sub(runCmd), cl::sub(trainCommand()));
cl::opt<std::string> runSaveState(
    "save-state",
    cl::desc("Also write the whole state (optimizer moments, step counter) here"),
    cl::value_desc("state.safetensors"), cl::sub(runCmd), cl::sub(trainCommand()));
cl::opt<std::string> runCheckpointDir(
    "checkpoint-dir",
    cl::desc("Write sharded checkpoints (each rank its own part) into this directory: "
             "every --checkpoint-every steps and at the end"),
    cl::value_desc("DIR"), cl::sub(runCmd), cl::sub(trainCommand()));
cl::opt<int64_t> runCheckpointEvery(
    "checkpoint-every",
    cl::desc("Steps between checkpoints (default 0: only at the end of the run)"),
    cl::init(0), cl::sub(runCmd), cl::sub(trainCommand()));
cl::opt<int> runCheckpointKeep(
    "checkpoint-keep",
    cl::desc("Checkpoints to keep, the newest (default 2; 0 keeps all)"), cl::init(2),
    cl::sub(runCmd), cl::sub(trainCommand()));
cl::opt<std::string> runResume(
    "resume",
    cl::desc("Continue from the newest checkpoint in DIR (or from checkpoint DIR itself), "
             "under this plan or another: --steps counts from the start of the run"),
    cl::value_desc("DIR"), cl::sub(runCmd), cl::sub(trainCommand()));
cl::list<std::string> runResumeIgnore(
    "resume-ignore",
    cl::desc("Names (shell patterns) that --resume may leave out: a state buffer the "
             "checkpoint lacks keeps its initial value, a checkpoint tensor the program "
             "lacks is dropped"),
    cl::value_desc("PATTERN"), cl::CommaSeparated, cl::sub(runCmd), cl::sub(trainCommand()));
cl::opt<std::string>
    runProfile("profile",
               cl::desc("Time every step; write a Chrome trace (chrome://tracing) here, with "
                        "the cost model's steps on local-cpu as a process of their own"),
               cl::value_desc("trace.json"), cl::sub(runCmd), cl::sub(trainCommand()));
cl::opt<std::string> runTimeline(
    "timeline",
    cl::desc("Profile the steps and draw the device and host memory the program holds over "
             "one step (parameters, optimizer state, inputs, scratch, temporaries; transfers "
             "and recomputed steps marked) into this SVG file, over the measured step times "
             "and the cost model's on local-cpu (this machine measured for it: about a second)"),
    cl::value_desc("memory.svg"), cl::sub(runCmd), cl::sub(trainCommand()));
cl::opt<bool> runNoSnapshot(
    "no-snapshot",
    cl::desc("Do not copy the parameters before each step (a NaN loss then leaves no "
             "weights to save)"),
    cl::sub(runCmd), cl::sub(trainCommand()));

cl::opt<std::string> runDeviceMemory(
    "device-memory",
    cl::desc("Cap the device memory of each rank (the arena, the state and inputs, the "
             "scratch): bytes, or with K, M, G (binary: 1G = 1024^3). A program that "
             "does not fit stops with an error naming what did not fit"),
    cl::value_desc("SIZE"), cl::sub(runCmd), cl::sub(trainCommand()));
cl::opt<double> runLinkBandwidth(
    "link-bandwidth",
    cl::desc("Throttle the copies between device and host memory (an offloaded "
             "optimizer's gradients and parameters) to this many GB/s, like a PCIe link "
             "(default: as fast as memory goes)"),
    cl::value_desc("GB/s"), cl::init(0), cl::sub(runCmd), cl::sub(trainCommand()));
cl::opt<bool> runNoOverlap(
    "no-overlap",
    cl::desc("Finish each all-reduce in its own step instead of while the steps up to "
             "its wait run (the same results; for measuring what overlap saves)"),
    cl::sub(runCmd), cl::sub(trainCommand()));

cl::opt<int> runRanks(
    "np",
    cl::desc("Ranks to run (through mpirun; default: the number the executable was "
             "compiled for). Under mpirun or srun, leave it out"),
    cl::init(0), cl::sub(runCmd), cl::sub(trainCommand()));
cl::opt<double> runCommTimeout(
    "comm-timeout",
    cl::desc("Seconds a rank waits for another in a collective before the run stops "
             "with an error (default 300)"),
    cl::init(300), cl::sub(runCmd), cl::sub(trainCommand()));

raw_ostream &note() { return WithColor::note(errs(), "colo"); }

std::string megabytes(int64_t bytes) { return formatv("{0:F1} MB", bytes / 1e6).str(); }

/// "41 ms", "3.25 ms": whole milliseconds unless that would hide the time.

std::string milliseconds(double ms) {
  return formatv(ms < 10 ? "{0:F2} ms" : "{0:F0} ms", ms).str();
}

std::string tensors(size_t n) {
  return std::to_string(n) + (n == 1 ? " tensor" : " tensors");
}

/// Under mpirun, standard output is mpirun's pseudo-terminal whatever the
/// user's is; the launcher passes on whether the user's is a terminal.
bool onTerminal() {
  if (const char *launcher = std::getenv("COLO_PROGRESS"))
    return std::string(launcher) == "1";
  return !rt::launchedWithRanks() && sys::Process::StandardOutIsDisplayed();
}

/// The step line's progress bar on a terminal, redrawn below the step lines.
class Progress {
public:
  Progress(int64_t total, bool speaks) : total(total), enabled(speaks && onTerminal()) {}
  void clear() {
    if (enabled && drawn)
      outs() << "\r\033[K";
    drawn = false;
  }
  void draw(int64_t done, double secondsPerStep) {
    if (!enabled)
      return;
    constexpr int width = 30;
    int filled = int(width * done / std::max<int64_t>(total, 1));
    int64_t eta = int64_t(secondsPerStep * double(total - done) + 0.5);
    outs() << "[" << std::string(filled, '=') << std::string(width - filled, ' ') << "] "
           << done << "/" << total
           << formatv("  {0:F0} ms/step  eta {1}:{2:d2}:{3:d2}", secondsPerStep * 1e3,
                      eta / 3600, eta / 60 % 60, eta % 60);
    outs().flush();
    drawn = true;
  }

private:
  int64_t total;
  bool enabled, drawn = false;
};

void printProfile(const rt::Session &session) {
  std::vector<rt::StepTime> times = session.stepTimes();
  double total = 0;
  std::map<std::string, double> byKind;
  for (const rt::StepTime &t : times) {
    total += t.seconds;
    byKind[t.kind] += t.seconds;
  }
  if (total <= 0)
    return;
  outs() << "profile: " << milliseconds(total * 1e3) << " in steps over "
         << session.stepsRun() << " iterations;";
  for (const auto &[kind, seconds] : byKind)
    outs() << formatv(" {0} {1:F1}%", kind, 100 * seconds / total);
  outs() << "\n";
  rt::CommunicationTime comm = session.communicationTime();
  if (comm.inFlight > 0)
    outs() << formatv("communication: {0} exposed of {1} in flight ({2:F0}% overlapped)\n",
                      milliseconds(comm.exposed * 1e3), milliseconds(comm.inFlight * 1e3),
                      100 * std::max(0.0, 1 - comm.exposed / comm.inFlight));
  rt::CopyTime copies = session.copyTime();
  if (copies.busy > 0)
    outs() << formatv("copies between device and host: {0} exposed of {1} copying ({2:F0}% "
                      "overlapped), {3} per step\n",
                      milliseconds(copies.exposed * 1e3), milliseconds(copies.busy * 1e3),
                      100 * std::max(0.0, 1 - copies.exposed / copies.busy),
                      megabytes(copies.bytesPerStep));
  std::sort(times.begin(), times.end(), [](const rt::StepTime &a, const rt::StepTime &b) {
    return a.seconds > b.seconds;
  });
  outs() << formatv("  {0,10}  {1,6}  {2,-6}  {3}\n", "ms", "share", "kind", "step");
  for (size_t i = 0; i < std::min<size_t>(times.size(), 10); ++i)
    outs() << formatv("  {0,10:F3}  {1,5:F1}%  {2,-6}  #{3} {4}\n",
                      times[i].seconds * 1e3, 100 * times[i].seconds / total,
                      times[i].kind, times[i].index, times[i].name);
}

/// After a failed step `k`: writes the parameters from before it, if a finite
/// copy was kept, and says what was written.
void writeLastGoodWeights(rt::Session &session, int64_t k, const std::string &output) {
  std::string bad;
  switch (rt::keepLastGoodWeights(session, &bad)) {
  case rt::GoodWeights::NoSnapshot:
    note() << "no weights written: no copy of the parameters was kept ("
           << (runNoSnapshot ? std::string("--no-snapshot")
                             : "they take " + megabytes(session.snapshotBytes()))
           << "); " << output << " was left as it was\n";
    return;
  case rt::GoodWeights::NotFinite:
    note() << "no weights written: parameter '" << bad
           << "' was already not finite before step " << k << "; " << output
           << " was left as it was\n";
    return;
  case rt::GoodWeights::Restored:
    session.saveWeights(output);
    note() << "wrote the weights from before step " << k
           << (k == 1 ? " (the initial weights)" : " (after step " + std::to_string(k - 1) + ")")
           << " to " << output << "\n";
    return;
  }
}

/// The run options given on the command line, as `colo run` arguments for
/// the ranks that mpirun starts.
std::vector<std::string> runArguments() {
  std::vector<std::string> args;
  auto add = [&](const cl::Option &o, const std::string &value) {
    if (o.getNumOccurrences())
      args.push_back("--" + o.ArgStr.str() + "=" + value);
  };
  add(runSteps, std::to_string(runSteps));
  add(runData, runData);
  add(runTokenDType, runTokenDType);
  if (runShiftLabels)
    args.push_back("--shift-labels");
  add(runSeed, std::to_string(runSeed));
  add(runThreads, std::to_string(runThreads));
  add(runOutput, runOutput);
  add(runWeights, runWeights);
  add(runSaveState, runSaveState);
  add(runProfile, runProfile);
  add(runTimeline, runTimeline);
  add(runCheckpointDir, runCheckpointDir);
  add(runCheckpointEvery, std::to_string(runCheckpointEvery));
  add(runCheckpointKeep, std::to_string(runCheckpointKeep));
  add(runResume, runResume);
  add(runResumeIgnore, llvm::join(runResumeIgnore, ","));
  if (runNoSnapshot)
    args.push_back("--no-snapshot");
  if (runNoOverlap)
    args.push_back("--no-overlap");
  add(runDeviceMemory, runDeviceMemory);
  add(runGemm, runGemm.getValue());
  add(runCommTimeout, formatv("{0}", runCommTimeout.getValue()).str());
  add(runLinkBandwidth, formatv("{0}", runLinkBandwidth.getValue()).str());
  return args;
}

/// This rank's communicator, if it runs with others: after an error the whole
/// run is ended through it, so that no rank waits for this one.
std::unique_ptr<rt::Communicator> comm;

/// "colo: error: rank R: ended by the launcher", made before the handler.
char endedPrefix[96];

/// SIGTERM, which mpirun sends the other ranks when one dies or fails: this
/// rank says so in colo's one line, with what it was waiting for (the rank
/// that is gone, in a collective), and ends. Async-signal-safe: write(2) only.
extern "C" void endedByLauncher(int) {
  auto put = [](const char *s) { (void)!::write(2, s, std::strlen(s)); };
  put(endedPrefix);
  const char *waiting = rt::currentWait();
  const char *during = *waiting ? " while " : " while computing (not in a collective)";
  put(during);
  put(waiting);
  put(": another rank failed or died\n");
  writeFailureRecord(RankEnd::Ended, rt::currentWaitPeer(), "ended by the launcher", during,
                     waiting);
  ::_exit(1);
}

void reportWhenEndedByLauncher(int rank) {
  prepareFailureRecord(rank);
  std::snprintf(endedPrefix, sizeof endedPrefix, "colo: error: rank %d: ended by the launcher",
                rank);
  struct sigaction action = {};
  action.sa_handler = endedByLauncher;
  ::sigaction(SIGTERM, &action, nullptr);
}

/// Loads the checkpoint of --resume into `session` and moves `data` past its
/// steps, saying what it did; returns the checkpoint's path.
std::string resumeRun(rt::Session &session, rt::DataSource *data,
                      const rt::CheckpointRun &record, raw_ostream &out) {
  int rank = session.rank();
  std::unique_ptr<rt::Checkpoint> checkpoint = rt::Checkpoint::open(runResume);
  rt::ResumeReport report = rt::resumeFrom(session, comm.get(), *checkpoint, runResumeIgnore);
  if (data)
    data->seek(report.step);
  int64_t counts[] = {report.copied, report.resharded};
  if (comm)
    comm->allReduce(counts, 2, rt::I64, rt::ReduceOp::Sum, comm->world());
  out << "resumed from " << checkpoint->path() << " at step " << report.step << " (written by "
      << checkpoint->planDescription() << "; " << tensors(counts[0]) << " as written, "
      << counts[1] << " resharded)\n";
  if (rank != 0)
    return checkpoint->path();
  for (const char *field : {"data", "seed"}) {
    auto it = checkpoint->run().fields.find(field);
    if (it != checkpoint->run().fields.end() && it->second != record.fields.at(field))
      WithColor::warning(errs(), "colo")
          << "the checkpoint's run had --" << field << " '" << it->second
          << "', this one has '" << record.fields.at(field) << "'\n";
  }
  if (!report.ignored.empty())
    note() << report.ignored.size() << " state buffers keep their initial values "
           << "(--resume-ignore; the first is '" << report.ignored[0] << "')\n";
  if (report.step >= runSteps)
    note() << "the checkpoint is at step " << report.step << " and --steps is " << runSteps
           << ": no step to run\n";
  return checkpoint->path();
}

int run(const std::string &dir) {
  auto exe = rt::Executable::load(dir);
  if (runSteps < 0)
    return reportError("--steps must not be negative");
  if (runThreads < 0)
    return reportError("--threads must not be negative");
  if (runRanks < 0)
    return reportError("--np must not be negative");
  if (!(runCommTimeout > 0))
    return reportError("--comm-timeout must be positive");
  if (!(runLinkBandwidth >= 0) || std::isinf(runLinkBandwidth))
    return reportError(formatv("--link-bandwidth must be a number of GB/s, at least 0 (0: no "
                               "limit), got {0}", runLinkBandwidth.getValue()).str());
  if (runCheckpointEvery < 0 || runCheckpointKeep < 0)
    return reportError("--checkpoint-every and --checkpoint-keep must not be negative");
  if (runCheckpointEvery > 0 && runCheckpointDir.empty())
    return reportError("--checkpoint-every needs --checkpoint-dir DIR");
  if (!runResume.empty() && !runWeights.empty())
    return reportError("--resume and --weights both give the starting weights: use one");
  if (!runCheckpointDir.empty() && runResume.empty())
    if (std::string latest = rt::Checkpoint::latest(runCheckpointDir); !latest.empty())
      return reportError("'" + runCheckpointDir + "' already holds checkpoints (the newest " +
                         latest + "): add --resume " + runCheckpointDir +
                         " to continue from it, or choose another --checkpoint-dir");
  std::optional<int64_t> deviceMemory;
  if (!runDeviceMemory.empty() && !(deviceMemory = parseBytes(runDeviceMemory)))
    return reportError("--device-memory '" + runDeviceMemory +
                       "' is not a size (bytes, or a number with K, M or G)");
  if (int64_t compiled = exe->program().device_memory(); compiled > 0) {
    if (deviceMemory && *deviceMemory < compiled)
      return reportError(formatv("'{0}' was compiled to fit {1} of device memory per rank "
                                 "(colo compile --device-memory), and this run gives "
                                 "{2}: give at least that, or compile for less",
                                 dir, megabytes(compiled), megabytes(*deviceMemory)));
    if (!deviceMemory)
      deviceMemory = compiled;
  }
  int64_t world = exe->worldSize();
  if (rt::launchedWithRanks()) {
    comm = rt::createMpiCommunicator();
    comm->setTimeout(runCommTimeout);
    reportWhenEndedByLauncher(comm->rank());
  } else if (runRanks > 1 || world > 1) {
    int64_t ranks = runRanks ? runRanks.getValue() : world;
    if (ranks != world)
      return reportError(formatv("'{0}' is compiled for {1} rank{2}, not {3} (compile "
                                 "with another --plan to change it)",
                                 dir, world, world == 1 ? "" : "s", ranks));
    return launchRanks(dir, ranks, runArguments());
  }
  int rank = comm ? comm->rank() : 0;
  // A pipeline's ranks run the program of their stage.
  if (exe->pipelineStages() > 1 && rank != 0)
    exe = rt::Executable::load(dir, rank);
  // Ranks sharing the cores share them evenly unless told otherwise.
  int threads = runThreads;
  if (!threads && comm)
    threads = std::max<int>(1, int(std::thread::hardware_concurrency()) /
                                   std::max(1, comm->size()));
  rt::setThreads(threads);
  std::unique_ptr<rt::Device> device =
      rt::createDeviceFor(*exe, rank, rt::parseGemmLibrary(runGemm));
  if (deviceMemory)
    device->setCapacity(rt::MemorySpace::Device, *deviceMemory);
  device->setLinkBandwidth(runLinkBandwidth * 1e9);
  // GPUs exchange through NCCL, bootstrapped over MPI.
  std::unique_ptr<rt::Communicator> nccl;
  if (comm && exe->program().target() == "cuda") {
    nccl = rt::createNcclCommunicator(*comm);
    nccl->setTimeout(runCommTimeout);
  }
  rt::Session session(exe, nccl ? nccl.get() : comm.get(), device.get());
  // Rank 0 speaks for the run; the others only report errors.
  raw_ostream &out = rank == 0 ? outs() : nulls();
  if (std::vector<std::string> paths = session.gemmPaths(); !paths.empty()) {
    out << "products: " << llvm::join(paths, "; ") << "\n";
    if (rank == 0 && rt::openBlasIsGeneric() &&
        llvm::any_of(paths, [](const std::string &p) { return p.find("OpenBLAS") != p.npos; }))
      WithColor::warning(errs(), "colo")
          << "OpenBLAS does not know this processor and runs its generic "
          << rt::openBlasCore() << " kernels: its products are several times slower\n";
  }

  std::string output = runOutput.empty()
                           ? rt::joinPath(exe->directory(), "weights.safetensors")
                           : runOutput.getValue();
  if (!runWeights.empty()) {
    rt::LoadReport report = session.loadWeights(runWeights);
    out << "loaded " << tensors(report.loaded.size()) << " from " << runWeights
           << "\n";
    if (!report.unused.empty())
      WithColor::warning(errs(), "colo")
          << report.unused.size() << " tensors of " << runWeights
          << " match no parameter and were ignored (the first is '" << report.unused[0]
          << "')\n";
    if (!report.missing.empty())
      note() << report.missing.size() << " parameters keep their initial values (the "
             << "first is '" << report.missing[0] << "')\n";
  }

  std::unique_ptr<rt::DataSource> data;
  if (!exe->inputs().empty()) {
    if (runData.empty())
      return reportError("the program has inputs: give --data FILE (.npy, .npz, tokens "
                         "with --token-dtype) or --data synthetic");
    rt::DataOptions options;
    options.part = exe->position(rank).batchPart;
    options.tokenDType = runTokenDType;
    options.shiftLabels = runShiftLabels;
    options.seed = runSeed;
    data = rt::openDataSource(runData, *exe, options);
    out << "data: " << data->description() << "\n";
  }

  // What a checkpoint records of the run, and what resuming compares.
  rt::CheckpointRun record;
  record.fields = {{"data", runData.getValue()}, {"seed", std::to_string(runSeed)},
                   {"executable", exe->directory()}};
  // The step the checkpoint dir already holds (-1: none of this run's).
  int64_t lastCheckpoint = -1;
  if (!runResume.empty()) {
    std::string from = resumeRun(session, data.get(), record, out);
    bool sameDir = false;
    if (!runCheckpointDir.empty() &&
        !sys::fs::equivalent(sys::path::parent_path(from), runCheckpointDir, sameDir) &&
        sameDir)
      lastCheckpoint = session.stepsRun();
  }
  int64_t stepsLeft = std::max<int64_t>(0, runSteps - session.stepsRun());
  auto checkpoint = [&](int64_t k) {
    record.step = k;
    rt::writeCheckpoint(session, comm.get(), runCheckpointDir, record, runCheckpointKeep);
    lastCheckpoint = k;
  };

  session.setSnapshots(!runNoSnapshot && session.snapshotBytes() <= rt::kSnapshotLimit);
  session.setProfiling(!runProfile.empty() || !runTimeline.empty());
  session.setOverlap(!runNoOverlap);
  if (exe->parameters().empty())
    WithColor::warning(errs(), "colo")
        << "the program names no parameters (param_names is empty): the weights file "
           "will hold no tensors\n";

  const colo::runtime::Program &program = exe->program();
  Progress progress(runSteps, rank == 0);
  auto runStart = std::chrono::steady_clock::now();
  int64_t firstStep = session.stepsRun();
  std::vector<double> stepMs; // each step's wall time, for the measured figure
  double firstStepWaits = 0;  // the ranks' start is in the first step's waits
  rt::TrainLoopResult result = rt::runTrainLoop(
      session, data.get(), stepsLeft, comm.get(),
      [&](int64_t k, double ms) {
        if (stepMs.empty())
          firstStepWaits = session.communicationTime().exposed;
        stepMs.push_back(ms);
        progress.clear();
        out << "step " << k << "/" << runSteps;
        for (int i = 0; i < program.loss_size(); ++i) {
          double v = session.scalar(program.loss(i));
          out << "  "
              << (i == 0 ? std::string("loss") : exe->buffer(program.loss(i)).name())
              << " " << formatv("{0:F6}", v);
        }
        out << "  (" << milliseconds(ms) << ")\n";
        double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - runStart).count();
        if (k < runSteps)
          progress.draw(k, elapsed / double(k - firstStep));
      },
      [&](int64_t k) {
        if (runCheckpointEvery > 0 && k % runCheckpointEvery == 0)
          checkpoint(k);
      });
  progress.clear();
  // A step whose loss or update is not finite stops the run, keeping the
  // weights from before it.
  if (result.stop != rt::TrainStop::Done) {
    out.flush();
    if (rank != 0) {
      // The collectives of writeLastGoodWeights, without its messages.
      if (rt::keepLastGoodWeights(session) == rt::GoodWeights::Restored)
        session.saveWeights(output);
      return 1;
    }
    reportError(result.message());
    writeLastGoodWeights(session, result.stepsRun + 1, output);
    return 1;
  }
  double seconds = result.seconds;
  int64_t stepBytes = result.bytesSent;
  if (stepsLeft > 0)
    out << formatv("{0} steps in {1:F2} s (", stepsLeft, seconds)
        << milliseconds(seconds * 1e3 / double(stepsLeft)) << " per step)\n";
  if (!runCheckpointDir.empty()) {
    if (lastCheckpoint != session.stepsRun())
      checkpoint(session.stepsRun());
    out << "checkpoint of step " << lastCheckpoint << ": "
        << rt::Checkpoint::latest(runCheckpointDir) << "\n";
  }

  int64_t sentPerStep = 0; // rank 0's, for the prediction's comparison
  if (comm && stepsLeft > 0) {
    // What the program's collectives sent (not the run's own bookkeeping).
    int64_t all = stepBytes;
    comm->allReduce(&all, 1, rt::I64, rt::ReduceOp::Sum, comm->world());
    sentPerStep = stepBytes / stepsLeft;
    out << formatv("communication: {0} bytes sent per step by rank 0, {1} by all ranks\n",
                   sentPerStep, all / stepsLeft);
  }
  session.saveWeights(output);
  // What this run held in host memory, per rank: the program's buffers and
  // the runtime's own staging (the largest over the ranks, each figure).
  rt::MemoryReport mem = session.memory();
  int64_t figures[] = {mem.planned(), mem.arena,   mem.stateAndInputs,
                       mem.peakExtra, mem.communication, mem.saving,
                       mem.snapshot,  mem.scratch, mem.peak()};
  if (comm)
    comm->allReduce(figures, std::size(figures), rt::I64, rt::ReduceOp::Max, comm->world());
  out << formatv("memory: {0} planned per rank (arena {1}, state and inputs {2}); "
                 "runtime extra at most {3} (communication {4}, saving weights {5}, "
                 "snapshot {6}, scratch {7}); peak {8}\n",
                 megabytes(figures[0]), megabytes(figures[1]), megabytes(figures[2]),
                 megabytes(figures[3]), megabytes(figures[4]), megabytes(figures[5]),
                 megabytes(figures[6]), megabytes(figures[7]), megabytes(figures[8]));
  if (deviceMemory) {
    int64_t peak = session.device().usage(rt::MemorySpace::Device).peak;
    if (comm)
      comm->allReduce(&peak, 1, rt::I64, rt::ReduceOp::Max, comm->world());
    out << formatv("device memory: {0} at most per rank ({1} bytes) of the {2} of "
                   "--device-memory\n",
                   megabytes(peak), peak, megabytes(*deviceMemory));
  }
  if (int64_t host = session.device().usage(rt::MemorySpace::Host).peak; host > 0 || comm) {
    if (comm)
      comm->allReduce(&host, 1, rt::I64, rt::ReduceOp::Max, comm->world());
    if (host > 0)
      out << formatv("host memory: {0} at most per rank (the program's buffers in host "
                     "memory: the offloaded state, optimizer and parameters, and the temporaries of the "
                     "host's ops)\n",
                     megabytes(host));
  }
  if (comm && !runProfile.empty() && stepMs.size() > 1) {
    // Each rank's time in communication steps and waits per step after the
    // first: under a pipeline, mostly the bubble it waits through
    // (bench/pipeline_bubble_bench.py).
    std::vector<double> waits(size_t(world), 0.0);
    waits[size_t(rank)] =
        (session.communicationTime().exposed - firstStepWaits) / double(stepMs.size() - 1);
    comm->allReduce(waits.data(), world, rt::F64, rt::ReduceOp::Sum, comm->world());
    out << "waiting in communication per step after the first:";
    for (int64_t r = 0; r < world; ++r)
      out << (r ? "," : "") << " rank " << r << " " << milliseconds(waits[size_t(r)] * 1e3);
    out << "\n";
  }
  if (rank != 0)
    return 0;
  out << "wrote the weights (" << tensors(exe->parameters().size()) << ") to "
         << output << "\n";
  if (!runSaveState.empty()) {
    session.saveState(runSaveState);
    out << "wrote the state to " << runSaveState << "\n";
  }
  std::optional<rt::PredictedSteps> predicted;
  // A GPU's run is always compared with the cost model of its preset.
  std::optional<std::string> gpuPreset;
  if (exe->program().target() == "cuda")
    gpuPreset = colo::planner::clusterPresetForGpu(session.device().name());
  std::string presetName = gpuPreset ? *gpuPreset : "local-cpu";
  if (!runProfile.empty() || !runTimeline.empty() || gpuPreset) {
    // The cost model of this machine, with the run's link, beside the
    // measured step: the median after the first (which warms up).
    Expected<colo::planner::ClusterSpec> local =
        colo::planner::clusterPreset(presetName, 1, exe->worldSize());
    if (!local)
      return reportError(toString(local.takeError()));
    if (runLinkBandwidth > 0)
      local->pcieBandwidth = runLinkBandwidth * 1e9;
    predicted = colo::planner::predictStepTimes(program, *local);
    out << formatv("predicted on {0}: {1:F1} ms per step", presetName, predicted->total * 1e3);
    if (!stepMs.empty()) {
      std::vector<double> warm(stepMs.begin() + (stepMs.size() > 1), stepMs.end());
      std::nth_element(warm.begin(), warm.begin() + warm.size() / 2, warm.end());
      double measured = warm[warm.size() / 2];
      double error = 100 * (predicted->total * 1e3 - measured) / measured;
      out << formatv(", measured {0:F1} ms (the median; {1}{2:F1}%)", measured,
                     error >= 0 ? "+" : "", error);
    }
    if (comm)
      out << formatv("; rank 0 sends {0:F0} bytes per step by the cost model's rings, "
                     "{1} measured",
                     predicted->bytesSent, sentPerStep);
    out << "\n";
  }
  if (!runProfile.empty()) {
    printProfile(session);
    session.writeTrace(runProfile, &*predicted, presetName);
    out << "wrote the trace to " << runProfile << "\n";
  }
  if (!runTimeline.empty()) {
    session.writeMemoryTimeline(runTimeline, predicted->seconds);
    out << "wrote the memory timeline to " << runTimeline << "\n";
  }
  return 0;
}
} // namespace

/// "1073741824", "512M", "1.5G", "64KiB" as bytes (binary multiples); none
/// if it is not a positive size.
std::optional<int64_t> colo::tool::parseBytes(StringRef text) {
  StringRef number = text.take_while([](char c) { return isDigit(c) || c == '.'; });
  std::string u = text.drop_front(number.size()).trim().lower();
  double value;
  if (number.empty() || number.getAsDouble(value) || !(value > 0))
    return std::nullopt;
  if (!u.empty() && u.back() == 'b')
    u.pop_back();
  if (u.size() == 2 && u.back() == 'i')
    u.pop_back();
  int shift = u.empty() ? 0 : u == "k" ? 10 : u == "m" ? 20 : u == "g" ? 30 : u == "t" ? 40 : -1;
  if (shift < 0 || value * double(int64_t(1) << shift) >= 9e18)
    return std::nullopt;
  return int64_t(value * double(int64_t(1) << shift));
}

cl::SubCommand &colo::tool::runCommand() { return runCmd; }

int colo::tool::runRun() { return runExecutable(runDir); }

int colo::tool::runExecutable(StringRef dir) {
  auto failed = [](const Twine &msg) {
    outs().flush();
    if (comm && comm->size() > 1) {
      std::string text = msg.str();
      // One write, so that the ranks' lines do not interleave.
      std::string line = "colo: error: rank " + std::to_string(comm->rank()) + ": " + text + "\n";
      errs().flush();
      (void)!::write(2, line.data(), line.size());
      std::signal(SIGTERM, SIG_DFL); // said already: the abort's SIGTERM says no more
      std::optional<rt::LostPeer> lost = comm->lostPeer();
      RankEnd end = !lost                                    ? RankEnd::Failed
                    : lost->reason == rt::LostPeer::TimedOut ? RankEnd::TimedOut
                                                             : RankEnd::Heard;
      writeFailureRecord(end, lost ? lost->rank : -1, text.c_str());
      comm->announceFailure(text);
      comm->abort(1);
    }
    return reportError(msg);
  };
  try {
    return run(dir.str());
  } catch (const rt::Error &e) {
    return failed(e.what());
  } catch (const std::bad_alloc &) {
    return failed("out of memory");
  } catch (const std::exception &e) {
    return failed(Twine("internal error: ") + e.what());
  }
}
