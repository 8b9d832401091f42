// Executables and sessions: validation errors (each names the file and the
// step or buffer), kernels from a shared library, aliasing, a tiny training
// loop (SGD on a scalar STATE parameter) whose weights are saved with PyTorch
// names and loaded back, snapshots and profiling.
#include "ProgramBuilder.h"
#include "RuntimeTestUtil.h"
#include "colo/Runtime/CudaDevice.h"
#include "colo/Runtime/Device.h"
#include "colo/Runtime/Error.h"
#include "colo/Runtime/Files.h"
#include "colo/Runtime/Session.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

using namespace colo::runtime;

namespace {

template <typename F> void expectError(F f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error &e) {
    std::string msg = e.what();
    for (const std::string &p : parts)
      EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

/// An executable directory under construction: a program, its initial state
/// and (a copy of) the test kernels library.
struct ExeDir {
  TempDir dir;
  ProgramBuilder b;
  std::vector<std::tuple<std::string, DType, Shape, std::string>> state;

  template <typename T>
  int32_t stateBuffer(const std::string &name, DType dtype, const Shape &shape,
                      std::vector<T> values, Buffer::Kind kind = Buffer::STATE) {
    state.emplace_back(name, dtype, shape,
                       std::string(reinterpret_cast<const char *>(values.data()),
                                   values.size() * sizeof(T)));
    return b.add(name, dtype, shape, kind);
  }

  void write() {
    std::vector<TensorView> views;
    for (const auto &[name, dtype, shape, bytes] : state)
      views.push_back({name, dtype, shape, bytes.data()});
    writeExecutable(dir.path, b.program(), views);
    std::filesystem::copy_file(COLO_TEST_KERNELS, dir / "kernels.so",
                               std::filesystem::copy_options::overwrite_existing);
  }
  std::shared_ptr<const Executable> load() {
    write();
    return Executable::load(dir.path);
  }
};

/// The toy model: loss = (w x - y)^2, SGD with lr 0.25 on the parameter w
/// (PyTorch name "linear.weight"), a step counter. Ids of its buffers:
struct Toy {
  int32_t w, step, x, y, lr, loss, grad;
};

Toy buildToy(ExeDir &e) {
  Toy t;
  t.w = e.stateBuffer<float>("w", F32, {}, {0.0f});
  t.step = e.stateBuffer<int64_t>("step", I64, {}, {0});
  t.x = e.b.input("x", F32, {});
  t.y = e.b.input("y", F32, {});
  t.lr = e.stateBuffer<float>("lr", F32, {}, {0.25f}, Buffer::CONSTANT);
  t.loss = e.b.temp("loss", F32, {});
  t.grad = e.b.temp("grad", F32, {});
  e.b.kernel("test_square_loss", {t.w, t.x, t.y, t.loss, t.grad}, "model.py:3 loss");
  e.b.kernel("test_sgd", {t.grad, t.lr, t.w}, "optimizer");
  e.b.kernel("test_increment", {t.step}, "optimizer.step");
  e.b.loss(t.loss);
  e.b.parameter(t.w, "linear.weight");
  e.b.stepCounter(t.step);
  return t;
}

void setToyInputs(Session &s, float x, float y) {
  s.setInput("x", F32, {}, &x);
  s.setInput("y", F32, {}, &y);
}

float readF32(const Session &s, int32_t id) {
  float v;
  s.readBuffer(id, &v);
  return v;
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

/// The toy trained, saved and loaded again, on a CPU device whose device
/// memory is open to the host or (`guarded`) closed to it but through the
/// device's own copies and work, as a GPU's is: the session must stage
/// every read and write of it (inputs, losses, weights, state, snapshots).
void trainsAScalarParameter(bool guarded) {
  ExeDir e;
  Toy t = buildToy(e);
  std::unique_ptr<Device> device = createCpuDevice(GemmLibrary::OneDnn, guarded);
  Session s(e.load(), nullptr, device.get());
  s.setSnapshots(true);
  EXPECT_EQ(s.stepCounter(), 0);
  double losses[3], weights[3];
  for (int k = 0; k < 3; ++k) {
    setToyInputs(s, 1, 3);
    s.step();
    losses[k] = s.loss();
    weights[k] = readF32(s, t.w);
  }
  // w <- w - 0.25 * 2 (w - 3), from w = 0.
  EXPECT_EQ(losses[0], 9);
  EXPECT_EQ(losses[1], 2.25);
  EXPECT_EQ(losses[2], 0.5625);
  EXPECT_EQ(weights[0], 1.5);
  EXPECT_EQ(weights[1], 2.25);
  EXPECT_EQ(weights[2], 2.625);
  EXPECT_EQ(s.stepCounter(), 3);
  EXPECT_EQ(s.stepsRun(), 3);
  EXPECT_EQ(s.scalar(t.lr), 0.25);

  // Weights: the parameter under its PyTorch name, nothing else.
  s.saveWeights(e.dir / "weights.safetensors");
  auto weightsFile = SafetensorsFile::open(e.dir / "weights.safetensors");
  ASSERT_EQ(weightsFile->entries().size(), 1u);
  const auto *lw = weightsFile->find("linear.weight");
  ASSERT_NE(lw, nullptr);
  EXPECT_EQ(lw->dtype, F32);
  EXPECT_TRUE(lw->shape.empty());
  EXPECT_EQ(*static_cast<const float *>(weightsFile->data(*lw)), 2.625f);

  // State: every STATE buffer under its buffer name (not the CONSTANT lr).
  s.saveState(e.dir / "state-out.safetensors");
  auto stateFile = SafetensorsFile::open(e.dir / "state-out.safetensors");
  EXPECT_NE(stateFile->find("w"), nullptr);
  ASSERT_NE(stateFile->find("step"), nullptr);
  int64_t step; // safetensors data is not aligned: after a 4-byte tensor here
  std::memcpy(&step, stateFile->data(*stateFile->find("step")), sizeof step);
  EXPECT_EQ(step, 3);
  EXPECT_EQ(stateFile->find("lr"), nullptr);

  // The snapshot from before the last step brings its weight back.
  EXPECT_TRUE(s.restoreSnapshot());
  EXPECT_EQ(readF32(s, t.w), 2.25f);
  EXPECT_TRUE(s.parametersFinite());

  // A fresh session starts from the executable's state and loads either file.
  Session fresh(Executable::load(e.dir.path), nullptr, device.get());
  EXPECT_EQ(readF32(fresh, t.w), 0.0f);
  LoadReport r = fresh.loadWeights(e.dir / "weights.safetensors");
  EXPECT_EQ(r.loaded, std::vector<std::string>{"linear.weight"});
  EXPECT_TRUE(r.unused.empty());
  EXPECT_TRUE(r.missing.empty());
  EXPECT_EQ(readF32(fresh, t.w), 2.625f);
  EXPECT_EQ(fresh.stepCounter(), 0);
  fresh.loadWeights(e.dir / "state-out.safetensors");
  EXPECT_EQ(fresh.stepCounter(), 3);
  // Training continues where it stopped.
  setToyInputs(fresh, 1, 3);
  fresh.step();
  EXPECT_EQ(readF32(fresh, t.w), 2.8125f);
}

TEST(RuntimeSession, TrainsAScalarParameter) { trainsAScalarParameter(false); }

TEST(RuntimeSession, TrainsOnDeviceMemoryTheHostCannotReach) {
  trainsAScalarParameter(true);
  // The guard is real: the host touching the device memory directly faults.
  ExeDir e;
  Toy t = buildToy(e);
  std::unique_ptr<Device> device = createCpuDevice(GemmLibrary::OneDnn, true);
  Session s(e.load(), nullptr, device.get());
  EXPECT_DEATH((void)*static_cast<volatile const float *>(s.data(t.w)), "");
}

TEST(RuntimeSession, LoadWeightsChecksNamesShapesAndTypes) {
  ExeDir e;
  Toy t = buildToy(e);
  Session s(e.load());
  float one = 1, two[2] = {1, 2};
  double d = 1;
  writeSafetensors(e.dir / "other.safetensors", {{"encoder.bias", F32, {}, &one}});
  expectError([&] { s.loadWeights(e.dir / "other.safetensors"); },
              {"other.safetensors", "none of its 1 tensors", "encoder.bias"});
  writeSafetensors(e.dir / "shape.safetensors", {{"linear.weight", F32, {2}, two}});
  expectError([&] { s.loadWeights(e.dir / "shape.safetensors"); },
              {"tensor 'linear.weight' is f32 [2]", "buffer 0 'w' is f32 []"});
  writeSafetensors(e.dir / "dtype.safetensors", {{"w", F64, {}, &d}});
  expectError([&] { s.loadWeights(e.dir / "dtype.safetensors"); },
              {"is f64 []", "f32 []"});
  EXPECT_EQ(readF32(s, t.w), 0.0f); // nothing was written
  writeSafetensors(e.dir / "extra.safetensors",
                   {{"linear.weight", F32, {}, &one}, {"unrelated", F32, {}, &one}});
  LoadReport r = s.loadWeights(e.dir / "extra.safetensors");
  EXPECT_EQ(r.unused, std::vector<std::string>{"unrelated"});
  EXPECT_EQ(readF32(s, t.w), 1.0f);
  writeSafetensors(e.dir / "empty.safetensors", {});
  r = s.loadWeights(e.dir / "empty.safetensors");
  EXPECT_EQ(r.missing, std::vector<std::string>{"linear.weight"});
}

TEST(RuntimeSession, Inputs) {
  ExeDir e;
  buildToy(e);
  Session s(e.load());
  float x = 1;
  s.setInput("x", &x, 4);
  expectError([&] { s.step(); }, {"input 'y' was never set"});
  expectError([&] { s.setInput("z", &x, 4); }, {"no input 'z'", "its inputs: x, y"});
  expectError([&] { s.setInput("w", &x, 4); }, {"no input 'w'"});
  expectError([&] { s.setInput("y", &x, 8); },
              {"input 'y' takes 4 bytes (f32 [])", "got 8"});
  int64_t i = 1;
  expectError([&] { s.setInput("y", I64, {}, &i); },
              {"input 'y' is f32 []", "got i64 []"});
  expectError([&] { s.scalar(99); }, {"out of range"});
}

TEST(RuntimeSession, SnapshotRestoresTheParametersOfTheLastStep) {
  ExeDir e;
  Toy t = buildToy(e);
  Session s(e.load());
  EXPECT_EQ(s.snapshotBytes(), 4);
  EXPECT_FALSE(s.restoreSnapshot());
  s.setSnapshots(true);
  setToyInputs(s, 1, 3);
  s.step();
  s.step();
  EXPECT_EQ(readF32(s, t.w), 2.25f);
  EXPECT_TRUE(s.restoreSnapshot());
  EXPECT_EQ(readF32(s, t.w), 1.5f);
  EXPECT_TRUE(s.parametersFinite());
  *static_cast<float *>(s.data(t.w)) = NAN;
  std::string bad;
  EXPECT_FALSE(s.parametersFinite(&bad));
  EXPECT_EQ(bad, "linear.weight");
}

TEST(RuntimeSession, ReportsItsMemory) {
  ExeDir e;
  buildToy(e);
  auto exe = e.load();
  Session s(exe);
  MemoryReport m = s.memory();
  EXPECT_EQ(m.arena, (std::max<int64_t>(exe->program().arena_bytes(), 1) + 63) / 64 * 64);
  EXPECT_GT(m.stateAndInputs, 0);
  EXPECT_EQ(m.planned(), m.arena + m.stateAndInputs);
  EXPECT_EQ(m.peakExtra, 0);
  // The snapshot is the runtime's; whole weights are saved from their buffers.
  s.setSnapshots(true);
  setToyInputs(s, 1, 3);
  s.step();
  s.saveWeights(e.dir / "weights.safetensors");
  m = s.memory();
  EXPECT_EQ(m.snapshot, 4);
  EXPECT_EQ(m.saving, 0);
  EXPECT_EQ(m.communication, 0);
  EXPECT_EQ(m.peakExtra, 4);
  EXPECT_EQ(m.peak(), m.planned() + 4);
}

TEST(RuntimeSession, ProfilesEveryStep) {
  ExeDir e;
  buildToy(e);
  Session s(e.load());
  s.setProfiling(true);
  setToyInputs(s, 1, 3);
  s.step();
  s.step();
  std::vector<StepTime> times = s.stepTimes();
  ASSERT_EQ(times.size(), 3u);
  EXPECT_EQ(times[0].name, "model.py:3 loss");
  EXPECT_EQ(times[0].kind, "kernel");
  for (const StepTime &t : times) {
    EXPECT_EQ(t.calls, 2);
    EXPECT_GE(t.seconds, 0);
  }
  s.writeTrace(e.dir / "trace.json");
  nlohmann::json trace = nlohmann::json::parse(readFile(e.dir / "trace.json"));
  const auto &events = trace["traceEvents"];
  ASSERT_EQ(events.size(), 1u + 2 * (3 + 1)); // process name + 2 x (3 steps + iteration)
  int iterations = 0;
  for (const auto &ev : events)
    if (ev["ph"] == "X") {
      EXPECT_GE(ev["dur"].get<double>(), 0);
      iterations += ev["cat"] == "iteration";
    }
  EXPECT_EQ(iterations, 2);
}

//===----------------------------------------------------------------------===//
// Aliases, copies, library path
//===----------------------------------------------------------------------===//

TEST(RuntimeSession, AliasesShareStorage) {
  ExeDir e;
  int32_t in = e.b.input("in", F32, {4});
  int32_t flat = e.b.temp("flat", F32, {4});
  int32_t square = e.b.alias("square", F32, {2, 2}, flat);
  int32_t again = e.b.alias("square_again", F32, {2, 2}, square); // a chain
  int32_t product = e.b.temp("product", F32, {2, 2});
  int32_t out = e.stateBuffer<float>("out", F32, {4}, {0, 0, 0, 0});
  int32_t outView = e.b.alias("out_view", F32, {2, 2}, out);
  e.b.kernel("test_scale2_4", {in, flat});
  e.b.gemm(square, again, product, 2, 2, 2, "square @ square");
  e.b.copy(product, outView);
  Session s(e.load());
  EXPECT_EQ(s.data(square), s.data(flat));
  EXPECT_EQ(s.data(again), s.data(flat));
  EXPECT_EQ(s.data(outView), s.data(out));
  std::vector<float> values = {1, 2, 3, 4};
  s.setInput("in", values.data(), 16);
  s.step();
  // [[2, 4], [6, 8]]^2 = [[28, 40], [60, 88]]
  const float *o = static_cast<const float *>(s.data(out));
  EXPECT_EQ(std::vector<float>(o, o + 4), (std::vector<float>{28, 40, 60, 88}));
}

TEST(RuntimeDevice, CountsItsSpacesAgainstTheirCapacity) {
  std::unique_ptr<Device> cpu = createCpuDevice();
  cpu->setCapacity(MemorySpace::Device, 1000);
  void *a = cpu->allocate(MemorySpace::Device, 600, "a");
  void *h = cpu->allocate(MemorySpace::Host, 5000, "h"); // no capacity: any size
  EXPECT_EQ(static_cast<char *>(a)[599], 0);             // zeroed
  expectError([&] { cpu->allocate(MemorySpace::Device, 401, "the arena"); },
              {"device memory: the arena needs 0.0 MB, but 0.0 MB of the 0.0 MB capacity are "
               "in use"});
  cpu->free(a);
  void *b = cpu->allocate(MemorySpace::Device, 1000, "b");
  SpaceUsage u = cpu->usage(MemorySpace::Device);
  EXPECT_EQ(u.used, 1000);
  EXPECT_EQ(u.peak, 1000);
  EXPECT_EQ(u.capacity, 1000);
  EXPECT_EQ(cpu->usage(MemorySpace::Host).used, 5000);
  cpu->free(b);
  cpu->free(h);
  EXPECT_EQ(cpu->usage(MemorySpace::Device).used, 0);
}

namespace {
/// A generated kernel's shape: args[0] in, args[1] out, 4 floats each.
void doublePiece(void **args) {
  const float *in = static_cast<const float *>(args[0]);
  float *out = static_cast<float *>(args[1]);
  for (int i = 0; i < 4; ++i)
    out[i] = 2 * in[i];
}
} // namespace

/// The CPU runs work when it is launched, in launch order; its events are
/// complete when recorded; a kernel in pieces sees each piece's arguments.
TEST(RuntimeDevice, QueuesRunInOrderAndKernelsInPieces) {
  std::unique_ptr<Device> cpu = createCpuDevice();
  std::vector<int> order;
  cpu->launch(Device::Queue::Compute, [&] { order.push_back(1); });
  std::shared_ptr<Device::Event> done = cpu->record(Device::Queue::Compute);
  cpu->wait(Device::Queue::Copy, *done);
  cpu->launch(Device::Queue::Compute, [&] { order.push_back(2); });
  EXPECT_TRUE(done->complete());
  EXPECT_EQ(order, (std::vector<int>{1, 2}));

  std::vector<float> in(16), out(16, -1), copied(16);
  for (int i = 0; i < 16; ++i)
    in[i] = float(i);
  PreparedOp kernel = cpu->prepareKernel(&doublePiece, {in.data(), out.data()}, 4,
                                         {4 * sizeof(float), 4 * sizeof(float)});
  cpu->launch(Device::Queue::Compute, kernel);
  cpu->synchronize(Device::Queue::Compute);
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(out[i], 2 * float(i));
  cpu->copyAsync(Device::Queue::Copy, copied.data(), out.data(), 16 * sizeof(float));
  cpu->synchronize(Device::Queue::Copy);
  EXPECT_EQ(copied, out);
}

/// A session holds its state, arena and scratch in the device's space.
TEST(RuntimeSession, HoldsItsBuffersOnItsDevice) {
  ExeDir e;
  buildToy(e);
  std::shared_ptr<const Executable> exe = e.load();
  std::unique_ptr<Device> cpu = createCpuDevice();
  {
    Session s(exe, nullptr, cpu.get());
    MemoryReport m = s.memory();
    EXPECT_EQ(cpu->usage(MemorySpace::Device).used,
              m.stateAndInputs + exe->program().arena_bytes());
  }
  EXPECT_EQ(cpu->usage(MemorySpace::Device).used, 0);
  cpu->setCapacity(MemorySpace::Device, 16);
  expectError([&] { Session(exe, nullptr, cpu.get()); },
              {"device memory: the state and inputs needs"});
}

/// A state buffer in host memory (an offloaded optimizer moment, say) is
/// allocated from the host space: the device cap does not count it, and a
/// kernel of host buffers updates it.
TEST(RuntimeSession, KeepsHostBuffersInHostMemory) {
  ExeDir e;
  Toy t = buildToy(e);
  int32_t count = e.stateBuffer<int64_t>("host.count", I64, {}, {0});
  e.b.program().mutable_buffers(count)->set_space(Buffer::HOST);
  e.b.kernel("test_increment", {count}, "on the host");
  std::shared_ptr<const Executable> exe = e.load();
  std::unique_ptr<Device> cpu = createCpuDevice();
  Session s(exe, nullptr, cpu.get());
  EXPECT_EQ(cpu->usage(MemorySpace::Host).used, 64); // one 64-byte aligned slot
  EXPECT_EQ(cpu->usage(MemorySpace::Device).used,
            s.memory().stateAndInputs + exe->program().arena_bytes());
  setToyInputs(s, 1.0f, 2.0f);
  s.step();
  // w' = w - lr * d/dw (w x - y)^2 = 0 - 0.25 * 2 * (0 - 2) * 1 = 1
  EXPECT_FLOAT_EQ(readF32(s, t.w), 1.0f);
  EXPECT_EQ(*static_cast<const int64_t *>(s.data(count)), 1);
}

// A program names its kernels library by a file name in its own directory
// (an absolute path is refused: RuntimeValidation.KernelsAndState).
TEST(RuntimeSession, KernelsLibraryByFileName) {
  ExeDir e;
  int32_t a = e.b.input("a", F32, {4}), b = e.b.input("b", F32, {4});
  int32_t c = e.b.temp("c", F32, {4});
  e.b.kernel("test_add4", {a, b, c});
  std::filesystem::copy_file(COLO_TEST_KERNELS, e.dir.path + "/test_kernels.so");
  e.b.program().set_kernels_library("test_kernels.so");
  std::vector<TensorView> none;
  writeExecutable(e.dir.path, e.b.program(), none);
  Session s(Executable::load(e.dir.path));
  std::vector<float> x = {1, 2, 3, 4}, y = {10, 20, 30, 40};
  s.setInput("a", x.data(), 16);
  s.setInput("b", y.data(), 16);
  s.step();
  const float *r = static_cast<const float *>(s.data(c));
  EXPECT_EQ(std::vector<float>(r, r + 4), (std::vector<float>{11, 22, 33, 44}));
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

/// Builds the toy, applies `edit`, and expects loading to fail with `parts`.
void expectInvalid(const std::function<void(ExeDir &, Toy &)> &edit,
                   std::initializer_list<std::string> parts) {
  ExeDir e;
  Toy t = buildToy(e);
  edit(e, t);
  expectError([&] { e.load(); }, parts);
}

TEST(RuntimeValidation, Buffers) {
  expectInvalid(
      [](ExeDir &e, Toy &t) { e.b.program().mutable_buffers(t.loss)->set_space(Buffer::PINNED_HOST); },
      {"program.pb", "buffer 5 'loss': a TEMP buffer lives in the arena of device or host memory",
       "PINNED_HOST"});
  expectInvalid(
      [](ExeDir &e, Toy &t) { e.b.program().mutable_buffers(t.y)->set_name("x"); },
      {"program.pb", "buffer 3 'x': the name is also buffer 2"});
  expectInvalid(
      [](ExeDir &e, Toy &t) {
        Buffer *loss = e.b.program().mutable_buffers(t.loss);
        loss->set_offset(e.b.program().arena_bytes());
      },
      {"program.pb", "buffer 5 'loss'", "outside the arena"});
  expectInvalid(
      [](ExeDir &e, Toy &t) { e.b.program().mutable_buffers(t.loss)->set_offset(2); },
      {"buffer 5 'loss'", "not a multiple of the f32 element size"});
  expectInvalid(
      [](ExeDir &e, Toy &t) { e.b.program().mutable_buffers(t.x)->add_shape(-1); },
      {"buffer 2 'x': bad shape [-1]"});
  expectInvalid([](ExeDir &e, Toy &) { e.b.program().set_arena_bytes(-1); },
                {"arena_bytes is negative"});
}

TEST(RuntimeValidation, Aliases) {
  expectInvalid([](ExeDir &e, Toy &) { e.b.alias("bad", F32, {}, 42); },
                {"buffer 7 'bad': alias_of 42 is not a buffer id"});
  expectInvalid(
      [](ExeDir &e, Toy &) {
        int32_t a = e.b.alias("a", F32, {}, 8);
        e.b.alias("b", F32, {}, a);
      },
      {"alias_of forms a cycle"});
  expectInvalid([](ExeDir &e, Toy &t) { e.b.alias("big", F32, {2}, t.loss); },
                {"buffer 7 'big': 8 bytes do not fit in the 4 bytes", "buffer 5 'loss'"});
  // An alias does not need its own entry in state.safetensors.
  ExeDir e;
  Toy t = buildToy(e);
  int32_t view = e.b.alias("w_view", F32, {1}, t.w);
  Session s(e.load());
  EXPECT_EQ(s.data(view), s.data(t.w));
}

TEST(RuntimeValidation, Steps) {
  expectInvalid([](ExeDir &e, Toy &t) { e.b.gemm(t.x, 99, t.loss, 1, 1, 1, "mm"); },
                {"program.pb", "step 3 'mm' (gemm): operand b 99 is not a buffer id"});
  expectInvalid(
      [](ExeDir &e, Toy &) {
        int32_t a = e.b.temp("a", F32, {6});
        int32_t c = e.b.temp("c", F32, {3, 4});
        e.b.gemm(a, a, c, 3, 4, 2, "mm");
      },
      {"operand b buffer 7 'a' has 6 elements", "needs at least 8"});
  expectInvalid(
      [](ExeDir &e, Toy &) {
        int32_t a = e.b.temp("a", I64, {4});
        int32_t c = e.b.temp("c", F32, {4});
        e.b.gemm(a, a, c, 2, 2, 2);
      },
      {"step 3 (gemm): operand a buffer 7 'a' is i64, expected f32"});
  expectInvalid(
      [](ExeDir &e, Toy &) {
        int32_t a = e.b.temp("a", F32, {4});
        e.b.gemm(a, a, a, 2, 2, 2).set_lda(1);
      },
      {"lda 1 is less than the stored row length 2"});
  expectInvalid(
      [](ExeDir &e, Toy &) {
        int32_t a = e.b.temp("a", F32, {64});
        Gemm &g = e.b.gemm(a, a, a, 2, 2, 2);
        g.set_batch(2), g.set_stride_c(4);
        g.set_batch_outer(2), g.set_outer_stride_c(4);
      },
      {"outer_stride_c 4 makes the outer batch's C matrices overlap"});
  expectInvalid(
      [](ExeDir &e, Toy &) {
        int32_t a = e.b.temp("a", F32, {8});
        Gemm &g = e.b.gemm(a, a, a, 2, 2, 2);
        g.set_batch_outer(3), g.set_outer_stride_a(4);
      },
      {"operand a buffer", "has 8 elements", "needs at least"});
  expectInvalid(
      [](ExeDir &e, Toy &t) { e.b.copy(t.x, t.step, "copy"); },
      {"step 3 'copy' (copy): src buffer 2 'x' has 4 bytes, dst buffer 1 'step' "
       "has 8"});
  expectInvalid([](ExeDir &e, Toy &t) { e.b.copy(t.x, t.lr); },
                {"writes CONSTANT buffer 4 'lr'"});
  expectInvalid([](ExeDir &e, Toy &) { e.b.program().add_steps()->set_name("empty"); },
                {"step 3 'empty' (empty): the step has no kind"});
  expectInvalid(
      [](ExeDir &e, Toy &) {
        int32_t x = e.b.temp("cx", F32, {1, 1, 5, 5});
        int32_t w = e.b.temp("cw", F32, {1, 1, 3, 3});
        int32_t y = e.b.temp("cy", F32, {1, 1, 5, 5});
        Conv2d &c = e.b.conv("features.0");
        c.set_n(1), c.set_c(1), c.set_h(5), c.set_w(5), c.set_k(1), c.set_r(3),
            c.set_s(3);
        c.set_oh(5), c.set_ow(5), c.set_x(x), c.set_weight(w), c.set_y(y);
      },
      {"step 3 'features.0' (conv): the output is 5 x 5 but the geometry gives 3 x 3"});
  expectInvalid(
      [](ExeDir &e, Toy &) {
        int32_t x = e.b.temp("px", F32, {1, 1, 4, 4});
        int32_t y = e.b.temp("py", F32, {1, 1, 3, 3});
        Pool2d &p = e.b.pool("pool");
        p.set_n(1), p.set_c(1), p.set_h(4), p.set_w(4), p.set_r(2), p.set_s(2);
        p.set_stride_h(2), p.set_stride_w(2), p.set_oh(2), p.set_ow(2);
        p.set_x(x), p.set_y(y);
      },
      {"step 3 'pool' (pool): y buffer 8 'py' has 9 elements (f32 [1, 1, 3, 3]), the "
       "step "
       "needs 4"});
}

/// Step 3: the toy's gradient all-reduced into a temporary (`reduced`),
/// overlapping the steps up to its wait.
int32_t overlappedAllReduce(ExeDir &e, Toy &t) {
  Step *s = e.b.program().add_steps();
  s->set_name("grads");
  Collective *c = s->mutable_collective();
  c->set_kind(Collective::ALL_REDUCE);
  c->set_input(t.grad);
  c->set_output(e.b.temp("reduced", F32, {}));
  c->set_overlap(true);
  return c->output();
}

void addWait(ExeDir &e, int collectiveStep) {
  Step *s = e.b.program().add_steps();
  s->set_name("wait");
  s->mutable_wait()->set_collective_step(collectiveStep);
}

TEST(RuntimeValidation, Waits) {
  expectInvalid([](ExeDir &e, Toy &t) { overlappedAllReduce(e, t); },
                {"step 3 'grads' (collective): an overlapped collective or a transfer that no "
                 "step waits for"});
  expectInvalid([](ExeDir &e, Toy &) { addWait(e, 1); },
                {"step 3 'wait' (wait): waits for step 1, which is not an earlier "
                 "overlapped collective or transfer"});
  expectInvalid(
      [](ExeDir &e, Toy &t) {
        overlappedAllReduce(e, t);
        addWait(e, 3);
        addWait(e, 3);
      },
      {"step 5 'wait' (wait): waits for step 3, which an earlier step already waited for"});
  expectInvalid(
      [](ExeDir &e, Toy &t) {
        overlappedAllReduce(e, t);
        e.b.copy(t.grad, t.loss, "early");
        addWait(e, 3);
      },
      {"step 4 'early' (copy): uses buffer 6 'grad' while step 3 "
       "'grads' (collective) still works on it (before its wait)"});

  // Waited for, it runs: one rank's all-reduce is the gradient itself.
  ExeDir e;
  Toy t = buildToy(e);
  int32_t reduced = overlappedAllReduce(e, t);
  addWait(e, 3);
  Session s(e.load());
  setToyInputs(s, 2.0f, 3.0f);
  s.step();
  EXPECT_EQ(readF32(s, reduced), readF32(s, t.grad));
  EXPECT_NE(readF32(s, reduced), 0.0f);
}

/// Step 3: the toy's gradient shifted around a ring of one into `shifted`,
/// overlapping the steps up to its wait.
int32_t overlappedShift(ExeDir &e, Toy &t, int64_t offset = 1) {
  Step *s = e.b.program().add_steps();
  s->set_name("shift");
  Collective *c = s->mutable_collective();
  c->set_kind(Collective::SHIFT);
  c->set_input(t.grad);
  c->set_output(e.b.temp("shifted", F32, {}));
  c->set_offset(offset);
  c->set_overlap(true);
  return c->output();
}

TEST(RuntimeValidation, ShiftsLockOnlyTheirOutput) {
  expectInvalid([](ExeDir &e, Toy &t) { overlappedShift(e, t, 0), addWait(e, 3); },
                {"step 3 'shift' (collective): shift offset 0 is not in (0, group size 1)"});
  expectInvalid(
      [](ExeDir &e, Toy &t) {
        int32_t shifted = overlappedShift(e, t);
        e.b.copy(shifted, t.loss, "early");
        addWait(e, 3);
      },
      {"step 4 'early' (copy): uses buffer 7 'shifted' while step 3 'shift' (collective) "
       "still works on it (before its wait)"});
  // Its input was sent at once: a step may read it before the wait.
  ExeDir e;
  Toy t = buildToy(e);
  int32_t shifted = overlappedShift(e, t);
  int32_t copied = e.b.temp("copied", F32, {});
  e.b.copy(t.grad, copied, "read the input");
  addWait(e, 3);
  Session s(e.load());
  setToyInputs(s, 2.0f, 3.0f);
  s.step();
  EXPECT_EQ(readF32(s, shifted), readF32(s, t.grad));
  EXPECT_EQ(readF32(s, copied), readF32(s, t.grad));
}

/// A broadcast (or reduce) of the toy's gradient from `root`, in a group of
/// one; its output.
int32_t rooted(ExeDir &e, Toy &t, Collective::Kind kind, int64_t root) {
  Step *s = e.b.program().add_steps();
  s->set_name("summa");
  Collective *c = s->mutable_collective();
  c->set_kind(kind);
  c->set_input(t.grad);
  c->set_output(e.b.temp("block", F32, {}));
  c->set_root(root);
  return c->output();
}

TEST(RuntimeValidation, BroadcastsAndReducesNameTheirRoot) {
  expectInvalid([](ExeDir &e, Toy &t) { rooted(e, t, Collective::BROADCAST, 1); },
                {"step 3 'summa' (collective): root 1 is not a member of a group of 1"});
  expectInvalid(
      [](ExeDir &e, Toy &t) {
        rooted(e, t, Collective::REDUCE, 0);
        e.b.program().mutable_steps(3)->mutable_collective()->set_reduction(Collective::MAX);
      },
      {"step 3 'summa' (collective): a reduce to a root sums"});
  // Alone, the root's output is its input.
  for (Collective::Kind kind : {Collective::BROADCAST, Collective::REDUCE}) {
    ExeDir e;
    Toy t = buildToy(e);
    int32_t out = rooted(e, t, kind, 0);
    Session s(e.load());
    setToyInputs(s, 2.0f, 3.0f);
    s.step();
    EXPECT_EQ(readF32(s, out), readF32(s, t.grad));
  }
}

/// A TEMP buffer of host memory, in the program's host arena.
int32_t hostTemp(ExeDir &e, const std::string &name) {
  Program &p = e.b.program();
  int32_t id = e.b.temp(name, F32, {});
  p.mutable_buffers(id)->set_space(Buffer::HOST);
  p.mutable_buffers(id)->set_offset(p.host_arena_bytes());
  p.set_host_arena_bytes(p.host_arena_bytes() + 64);
  return id;
}

void addTransfer(ExeDir &e, int32_t src, int32_t dst) {
  Step *s = e.b.program().add_steps();
  s->set_name("transfer");
  s->mutable_transfer()->set_src(src);
  s->mutable_transfer()->set_dst(dst);
}

/// The toy's gradient to the host and back, each transfer waited for.
int32_t gradientThroughTheHost(ExeDir &e, Toy &t) {
  int32_t host = hostTemp(e, "grad.host"), back = e.b.temp("grad.back", F32, {});
  addTransfer(e, t.grad, host);
  addWait(e, 3);
  addTransfer(e, host, back);
  addWait(e, 5);
  return back;
}

TEST(RuntimeValidation, Transfers) {
  expectInvalid([](ExeDir &e, Toy &t) { addTransfer(e, t.grad, t.loss); },
                {"step 3 'transfer' (transfer): src and dst are both in DEVICE memory"});
  expectInvalid([](ExeDir &e, Toy &t) { addTransfer(e, t.grad, hostTemp(e, "h")); },
                {"step 3 'transfer' (transfer): an overlapped collective or a transfer that "
                 "no step waits for"});
  expectInvalid(
      [](ExeDir &e, Toy &t) {
        int32_t h = hostTemp(e, "h");
        addTransfer(e, t.grad, h);
        e.b.kernel("test_increment", {h}, "early");
        addWait(e, 3);
      },
      {"step 4 'early' (kernel): uses buffer 7 'h' while step 3 'transfer' (transfer) still "
       "works on it"});
  expectInvalid(
      [](ExeDir &e, Toy &t) { e.b.kernel("test_sgd", {t.grad, t.lr, hostTemp(e, "h")}, "mixed"); },
      {"step 3 'mixed' (kernel): arguments in DEVICE and HOST memory"});
  expectInvalid(
      [](ExeDir &e, Toy &) { e.b.program().mutable_buffers(hostTemp(e, "h"))->set_offset(64); },
      {"buffer 7 'h': its 4 bytes at offset 64 are outside the host arena of 64 bytes"});
}

/// Transfers run on the device's copy queue, at the link's bandwidth if it
/// has one, and what they move arrives by their waits.
TEST(RuntimeSession, TransfersMoveBytesOnTheCopyQueue) {
  ExeDir e;
  Toy t = buildToy(e);
  int32_t back = gradientThroughTheHost(e, t);
  std::unique_ptr<Device> cpu = createCpuDevice();
  Session s(e.load(), nullptr, cpu.get());
  EXPECT_EQ(cpu->usage(MemorySpace::Host).used, 64); // the host arena
  setToyInputs(s, 2.0f, 3.0f);
  s.step();
  EXPECT_NE(readF32(s, t.grad), 0.0f);
  EXPECT_EQ(readF32(s, back), readF32(s, t.grad));
  EXPECT_EQ(s.copyTime().bytesPerStep, 8);

  // 4 bytes per 50 ms: each transfer takes at least that.
  cpu->setLinkBandwidth(80);
  auto start = std::chrono::steady_clock::now();
  s.step();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(seconds, 0.1);
  EXPECT_EQ(readF32(s, back), readF32(s, t.grad));
  EXPECT_GE(s.copyTime().exposed, 0.09);
}

TEST(RuntimeValidation, ProgramFields) {
  expectInvalid([](ExeDir &e, Toy &t) { e.b.loss(t.step); },
                {"loss 1: buffer 1 'step' is not a float scalar (it is i64 [])"});
  expectInvalid([](ExeDir &e, Toy &) { e.b.loss(17); },
                {"loss 1: 17 is not a buffer id"});
  expectInvalid([](ExeDir &e, Toy &t) { e.b.stepCounter(t.w); },
                {"step_counter: buffer 0 'w' is not an i64 scalar STATE buffer"});
  expectInvalid(
      [](ExeDir &e, Toy &) { (*e.b.program().mutable_param_names())["nope"] = "a.b"; },
      {"param_names: 'nope' is not a buffer"});
  expectInvalid([](ExeDir &e, Toy &t) { e.b.parameter(t.step, "linear.weight"); },
                {"both map to 'linear.weight'"});
  expectInvalid([](ExeDir &e, Toy &t) { e.b.parameter(t.loss, "l"); },
                {"buffer 5 'loss' is TEMP, not STATE or CONSTANT"});
}

TEST(RuntimeValidation, KernelsAndState) {
  expectInvalid(
      [](ExeDir &e, Toy &t) { e.b.kernel("no_such_kernel", {t.w}, "fused_3"); },
      {"kernels.so: kernel 'no_such_kernel' used by step 3 'fused_3' (kernel) is "
       "not exported"});
  expectInvalid([](ExeDir &e, Toy &) { e.b.program().set_kernels_library("missing.so"); },
                {"the program calls kernels but", "missing.so' does not exist"});
  // dlopen would run another library's constructors: the program may name
  // only a file of its own directory, refused by its name before any file
  // is opened.
  for (const char *name : {"/usr/lib/x86_64-linux-gnu/libm.so.6", "../kernels.so", "sub/k.so",
                           "..", "."})
    expectInvalid([&](ExeDir &e, Toy &) { e.b.program().set_kernels_library(name); },
                  {"names the kernels library '" + std::string(name) +
                   "', which is not a plain file name inside the executable directory"});
  // state.safetensors: a missing tensor, a wrong shape, a wrong dtype, no file.
  expectInvalid(
      [](ExeDir &e, Toy &) { e.b.state("velocity", F32, {2}); },
      {"state.safetensors: no tensor 'velocity' for STATE buffer 7 'velocity'"});
  expectInvalid(
      [](ExeDir &e, Toy &) {
        e.state.emplace_back("v", F32, Shape{3}, std::string(12, '\0'));
        e.b.state("v", F32, {2, 2});
      },
      {"state.safetensors: tensor 'v' is f32 [3] but buffer 7 'v' is f32 [2, 2]"});
  expectInvalid(
      [](ExeDir &e, Toy &) {
        e.state.emplace_back("v", I32, Shape{2}, std::string(8, '\0'));
        e.b.state("v", F32, {2});
      },
      {"tensor 'v' is i32 [2] but buffer 7 'v' is f32 [2]"});
  ExeDir e;
  buildToy(e);
  e.write();
  std::filesystem::remove(e.dir / "state.safetensors");
  expectError([&] { Executable::load(e.dir.path); },
              {"buffer 0 'w' is STATE but", "state.safetensors' does not exist"});
}

TEST(RuntimeValidation, Files) {
  TempDir dir;
  expectError([&] { Executable::load(dir / "missing"); },
              {"cannot open executable directory", "missing"});
  expectError([&] { Executable::load(dir.path); },
              {"is not an executable", "program.pb"});
  std::ofstream(dir / "program.pb") << "\xff\xff\xff garbage";
  expectError([&] { Executable::load(dir.path); },
              {"program.pb: not a valid colo.runtime.Program"});
  expectError([&] { Executable::load(dir / "program.pb"); }, {"a file was given"});
}

} // namespace

namespace {

/// A program for CUDA: one kernel step on x and y, whose launches are in
/// kernels.cuda.pb (`kernels`, valid until a test breaks it).
struct CudaExeDir : ExeDir {
  CudaKernels kernels;
  int step = 0;

  CudaExeDir() {
    b.program().set_target("cuda");
    int32_t x = b.input("x", F32, {4});
    int32_t y = b.state("y", F32, {4});
    state.emplace_back("y", F32, Shape{4}, std::string(16, '\0'));
    b.kernel("colo_k_scale", {x, y}, "scale");
    kernels.add_chips("sm_80");
    CudaModule *m = kernels.add_modules();
    m->set_name("colo_k_scale_0");
    (*m->mutable_ptx())["sm_80"] = ".version 8.0\n.target sm_80\n";
    CudaKernel *k = kernels.add_kernels();
    k->set_name("colo_k_scale");
    k->add_temporary_bytes(64);
    CudaLaunch *l = k->add_launches();
    l->set_module("colo_k_scale_0");
    l->set_function("scale_kernel");
    l->set_grid(1);
    l->set_block(4);
    l->add_args()->set_argument(0);
    l->add_args()->set_argument(1);
    l->add_args()->set_temporary(0);
  }
  CudaLaunch &launch() { return *kernels.mutable_kernels(0)->mutable_launches(0); }
  std::shared_ptr<const Executable> loadCuda() {
    write();
    std::ofstream(dir / "kernels.cuda.pb", std::ios::binary) << kernels.SerializeAsString();
    return Executable::load(dir.path);
  }
};

TEST(RuntimeCudaExecutable, LoadsItsKernelsWithoutAGpu) {
  CudaExeDir e;
  auto exe = e.loadCuda();
  ASSERT_NE(exe->cudaKernels(), nullptr);
  ASSERT_NE(exe->cudaKernel(0), nullptr);
  EXPECT_EQ(exe->cudaKernel(0)->name(), "colo_k_scale");
  EXPECT_EQ(exe->kernel(0), nullptr);
}

TEST(RuntimeCudaExecutable, RejectsKernelsThatCannotLaunch) {
  {
    CudaExeDir e;
    e.write();
    expectError([&] { Executable::load(e.dir.path); }, {"kernels.cuda.pb", "does not exist"});
  }
  {
    CudaExeDir e;
    e.kernels.mutable_kernels(0)->set_name("colo_k_other");
    expectError([&] { e.loadCuda(); }, {"no kernel 'colo_k_scale'", "step 0 'scale'"});
  }
  {
    CudaExeDir e;
    e.launch().set_module("missing");
    expectError([&] { e.loadCuda(); }, {"module 'missing'", "not in the file"});
  }
  {
    CudaExeDir e;
    e.launch().set_block(2048);
    expectError([&] { e.loadCuda(); }, {"1 blocks of 2048 threads", "1 to 1024"});
  }
  {
    CudaExeDir e;
    e.launch().mutable_args(1)->set_argument(2);
    expectError([&] { e.loadCuda(); }, {"'scale_kernel'", "does not pass"});
  }
  {
    CudaExeDir e;
    e.launch().mutable_args(2)->set_temporary(1);
    expectError([&] { e.loadCuda(); }, {"does not pass"});
  }
  {
    CudaExeDir e;
    e.launch().add_args()->set_constant(0); // the file has no constants
    expectError([&] { e.loadCuda(); }, {"does not pass"});
  }
  {
    CudaExeDir e;
    e.kernels.add_constants()->set_name("mask");
    expectError([&] { e.loadCuda(); }, {"constant 'mask' has no bytes"});
  }
  {
    CudaExeDir e;
    e.kernels.mutable_modules(0)->clear_ptx();
    expectError([&] { e.loadCuda(); }, {"module 'colo_k_scale_0' has no PTX"});
  }
  {
    CudaExeDir e;
    KernelCall *call = e.b.program().mutable_steps(0)->mutable_kernel();
    call->set_pieces(2);
    call->add_piece_bytes(8);
    call->add_piece_bytes(8);
    expectError([&] { e.loadCuda(); }, {"pieces", "whole"});
  }
}

TEST(RuntimeCudaExecutable, ASessionWithoutAGpuSaysSoInOneLine) {
  if (cudaGpuProblem().empty())
    GTEST_SKIP() << "this machine has a CUDA GPU";
  CudaExeDir e;
  auto exe = e.loadCuda();
  try {
    Session session(exe);
    ADD_FAILURE() << "a session started without a GPU";
  } catch (const Error &error) {
    std::string message = error.what();
    EXPECT_NE(message.find("was compiled for CUDA (colo compile --target cuda) and this "
                           "machine has no CUDA"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("it runs on NVIDIA GPUs only"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  // The CPU device refuses a CUDA kernel by name.
  auto cpu = createCpuDevice();
  expectError([&] { cpu->prepareCudaKernel(*exe->cudaKernels(), *exe->cudaKernel(0), {}); },
              {"'colo_k_scale' is a CUDA kernel", "cpu device"});
}

} // namespace
