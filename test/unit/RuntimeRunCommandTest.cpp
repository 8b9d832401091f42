// `colo run` end to end on hand-built executables (the test kernels stand in
// for generated code): the loss printed per step, the weights written with
// PyTorch names, and the exits for a missing directory, bad data and a NaN
// loss (which must never overwrite good weights with bad ones). Skipped when
// the colo binary has not been built.
#include "RuntimeTestUtil.h"
#include "colo/Runtime/Error.h"
#include "colo/Runtime/Files.h"
#include "ProgramBuilder.h"
#include "colo/Runtime/Safetensors.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

using namespace colo::runtime;

namespace {

struct Result {
  int status;
  std::string out, err;
  std::vector<std::string> errLines() const {
    std::vector<std::string> lines;
    std::istringstream in(err);
    for (std::string line; std::getline(in, line);)
      lines.push_back(line);
    return lines;
  }
};

Result runColo(const TempDir &dir, const std::string &args) {
  std::string cmd = std::string(COLO_BIN) + " run " + args + " > " + (dir / "out.txt") +
                    " 2> " + (dir / "err.txt");
  int status = std::system(cmd.c_str());
  Result r;
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = readFile(dir / "out.txt");
  r.err = readFile(dir / "err.txt");
  return r;
}

bool haveColo() { return isRegularFile(COLO_BIN); }

/// The toy model of RuntimeExecutableTest with x = 1 a CONSTANT and y an INPUT:
/// loss = (w - y)^2, SGD with lr 0.25 on w ("linear.weight"). `nanLossAt`
/// makes the loss NaN in that step (0-based; -1 never); `poisonAt` makes w NaN
/// at the end of that step (1-based; -1 never).
std::string writeToy(const TempDir &dir, int64_t nanLossAt = -1, int64_t poisonAt = -1) {
  std::string exe = dir / "exe";
  ProgramBuilder b;
  int32_t w = b.state("w", F32, {});
  int32_t step = b.state("step", I64, {});
  int32_t x = b.constant("x", F32, {});
  int32_t y = b.input("y", F32, {});
  int32_t lr = b.constant("lr", F32, {});
  int32_t nanAt = b.constant("nan_at", I64, {});
  int32_t poison = b.constant("poison_at", I64, {});
  int32_t loss = b.temp("loss", F32, {}), grad = b.temp("grad", F32, {});
  b.kernel("test_square_loss", {w, x, y, loss, grad}, "loss");
  b.kernel("test_nan_loss_at", {step, nanAt, loss}, "bad data");
  b.kernel("test_sgd", {grad, lr, w}, "sgd");
  b.kernel("test_increment", {step}, "step");
  b.kernel("test_poison_at", {step, poison, w}, "bad update");
  b.loss(loss);
  b.parameter(w, "linear.weight");
  b.stepCounter(step);
  float w0 = 0, x0 = 1, lr0 = 0.25f;
  int64_t zero = 0, poison0 = poisonAt < 0 ? 1 << 30 : poisonAt;
  writeExecutable(exe, b.program(),
                  {{"w", F32, {}, &w0},
                   {"step", I64, {}, &zero},
                   {"x", F32, {}, &x0},
                   {"lr", F32, {}, &lr0},
                   {"nan_at", I64, {}, &nanLossAt},
                   {"poison_at", I64, {}, &poison0}});
  std::filesystem::copy_file(COLO_TEST_KERNELS, exe + "/kernels.so");
  // y = 3 for every sample: a one-input program reads an .npy of shape [N].
  std::string data = dir / "y.npy";
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  dict += std::string((64 - (10 + dict.size() + 1) % 64) % 64, ' ') + "\n";
  std::string npy("\x93NUMPY\x01\x00", 8);
  npy += char(dict.size()), npy += char(0);
  float threes[2] = {3, 3};
  npy += dict + std::string(reinterpret_cast<const char *>(threes), 8);
  std::ofstream(data, std::ios::binary) << npy;
  return exe;
}

float savedWeight(const std::string &path) {
  auto file = SafetensorsFile::open(path);
  const auto *e = file->find("linear.weight");
  if (!e)
    throw Error("no linear.weight in " + path);
  return *static_cast<const float *>(file->data(*e));
}

TEST(RuntimeRunCommand, TrainsAndWritesWeights) {
  if (!haveColo())
    GTEST_SKIP() << "colo is not built";
  TempDir dir;
  std::string exe = writeToy(dir);
  Result r = runColo(dir, exe + " --steps 3 --data " + (dir / "y.npy") + " --threads 1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("step 1/3  loss 9.000000  ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step 2/3  loss 2.250000  ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step 3/3  loss 0.562500  ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote the weights (1 tensor) to " + exe + "/weights.safetensors"),
            std::string::npos);
  EXPECT_EQ(savedWeight(exe + "/weights.safetensors"), 2.625f);
  // The runtime's memory: the snapshot (one f32 parameter) is all it adds.
  EXPECT_NE(r.out.find("; runtime extra at most 0.0 MB (communication 0.0 MB, saving "
                       "weights 0.0 MB, snapshot 0.0 MB, scratch 0.0 MB); peak "),
            std::string::npos)
      << r.out;

  // -o, --weights (continue from them), --save-state and --profile.
  Result again = runColo(
      dir, exe + " --steps 1 --data " + (dir / "y.npy") + " --weights " + exe +
               "/weights.safetensors -o " + (dir / "w2.safetensors") + " --save-state " +
               (dir / "s.safetensors") + " --profile " + (dir / "trace.json"));
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.out.find("loaded 1 tensor from"), std::string::npos);
  EXPECT_NE(again.out.find("loss 0.140625"), std::string::npos) << again.out;
  EXPECT_EQ(savedWeight(dir / "w2.safetensors"), 2.8125f);
  EXPECT_NE(SafetensorsFile::open(dir / "s.safetensors")->find("step"), nullptr);
  EXPECT_NE(again.out.find("profile:"), std::string::npos);
  nlohmann::json trace = nlohmann::json::parse(readFile(dir / "trace.json"));
  // The run (process 0): its name, the iteration and its 5 steps. The cost
  // model's iteration (process 1): its name, its 3 tracks, the 5 steps on
  // the compute track.
  size_t measured = 0, predictedSteps = 0, predictedTracks = 0;
  for (const nlohmann::json &e : trace["traceEvents"]) {
    if (e["pid"] == 0)
      ++measured;
    else if (e["ph"] == "X" && e["tid"] == 0)
      ++predictedSteps;
    else if (e["ph"] == "M")
      ++predictedTracks;
  }
  EXPECT_EQ(measured, 1u + 5 + 1);
  EXPECT_EQ(predictedSteps, 5u);
  EXPECT_EQ(predictedTracks, 1u + 3);
  EXPECT_NE(again.out.find("predicted on local-cpu: "), std::string::npos) << again.out;
}

TEST(RuntimeRunCommand, ErrorsAreOneLine) {
  if (!haveColo())
    GTEST_SKIP() << "colo is not built";
  TempDir dir;
  Result r = runColo(dir, dir / "no-such-dir");
  EXPECT_EQ(r.status, 1);
  ASSERT_EQ(r.errLines().size(), 1u) << r.err;
  EXPECT_EQ(r.errLines()[0].rfind("colo: error: cannot open executable directory", 0), 0u)
      << r.err;
  EXPECT_EQ(r.out, "");

  std::string exe = writeToy(dir);
  for (const std::string &args :
       {exe + " --data " + (dir / "missing.npy"), exe + " --steps 2",
        exe + " --data " + (dir / "y.npy") + " --weights " + (dir / "none.safetensors"),
        exe + " --data " + exe + "/program.pb --token-dtype int32"}) {
    SCOPED_TRACE(args);
    Result bad = runColo(dir, args);
    EXPECT_EQ(bad.status, 1);
    ASSERT_EQ(bad.errLines().size(), 1u) << bad.err;
    EXPECT_EQ(bad.errLines()[0].rfind("colo: error: ", 0), 0u) << bad.err;
  }
  // A device too small for the program, or a size that is none.
  for (auto [size, words] : {std::pair<std::string, std::string>{"100", "device memory: the "
                                                                          "state and inputs "
                                                                          "needs"},
                             {"12parsecs", "--device-memory '12parsecs' is not a size"}}) {
    Result small = runColo(dir, exe + " --data " + (dir / "y.npy") + " --device-memory " + size);
    EXPECT_EQ(small.status, 1);
    ASSERT_EQ(small.errLines().size(), 1u) << small.err;
    EXPECT_NE(small.err.find(words), std::string::npos) << small.err;
  }
  Result fits = runColo(dir, exe + " --data " + (dir / "y.npy") + " --device-memory 1K");
  EXPECT_EQ(fits.status, 0) << fits.err;
  EXPECT_NE(fits.out.find("of the 0.0 MB of --device-memory"), std::string::npos) << fits.out;
  std::filesystem::remove(exe + "/kernels.so");
  Result noKernels = runColo(dir, exe + " --data " + (dir / "y.npy"));
  EXPECT_EQ(noKernels.status, 1);
  ASSERT_EQ(noKernels.errLines().size(), 1u);
  EXPECT_NE(noKernels.err.find("kernels.so' does not exist"), std::string::npos);
}

TEST(RuntimeRunCommand, NanLossKeepsTheLastGoodWeights) {
  if (!haveColo())
    GTEST_SKIP() << "colo is not built";
  TempDir dir;
  // The loss of step 3 is NaN: the weights from before it (after step 2) are
  // written.
  std::string exe = writeToy(dir, /*nanLossAt=*/2);
  Result r = runColo(dir, exe + " --steps 5 --data " + (dir / "y.npy"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("colo: error: loss is nan at step 3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("wrote the weights from before step 3 (after step 2)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("step 2/5"), std::string::npos);
  EXPECT_EQ(r.out.find("step 4/5"), std::string::npos);
  EXPECT_EQ(savedWeight(exe + "/weights.safetensors"), 2.25f);

  // Without snapshots nothing is written: an existing file stays as it was.
  std::ofstream(dir / "keep.safetensors") << "earlier";
  Result none = runColo(dir, exe + " --steps 5 --no-snapshot --data " + (dir / "y.npy") +
                                 " -o " + (dir / "keep.safetensors"));
  EXPECT_EQ(none.status, 1);
  EXPECT_NE(none.err.find("no weights written"), std::string::npos) << none.err;
  EXPECT_EQ(readFile(dir / "keep.safetensors"), "earlier");
}

TEST(RuntimeRunCommand, AnUpdateThatPoisonsTheParametersStopsTheRun) {
  if (!haveColo())
    GTEST_SKIP() << "colo is not built";
  TempDir dir;
  // Step 2's update makes w NaN while its loss is still finite: the run stops
  // there and keeps the weights from before step 2.
  std::string exe = writeToy(dir, -1, /*poisonAt=*/2);
  std::ofstream(dir / "keep.safetensors") << "earlier";
  Result r = runColo(dir, exe + " --steps 5 --data " + (dir / "y.npy") + " -o " +
                              (dir / "keep.safetensors"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("the update of step 2 made parameter 'linear.weight' not finite"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("wrote the weights from before step 2 (after step 1)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("step 3/5"), std::string::npos);
  EXPECT_TRUE(std::isfinite(savedWeight(dir / "keep.safetensors")));
}

} // namespace
