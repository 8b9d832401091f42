//===- Session.cpp - Runs a compiled step: memory, steps, collectives -----===//

#include "colo/Runtime/Session.h"
#include "Initializer.h"
#include "Shard.h"
#include "Workers.h"
#include "colo/Runtime/CudaDevice.h"
#include "colo/Runtime/Error.h"
#include "colo/Runtime/Safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

namespace colo::runtime {

namespace {
constexpr int64_t kAlign = 64;
constexpr size_t kMaxEvents = 1'000'000;

int64_t roundUp(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

double micros(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

} // namespace

struct Session::Prepared {
  PreparedOp run;
  /// Device work, launched on the compute queue; the rest (communication
  /// and its waits) runs on the host once the queue has run.
  bool onDevice = false;
};

Session::Session(std::shared_ptr<const Executable> executable, Communicator *comm, Device *device)
    : exe_(std::move(executable)), comm_(comm),
      ownedDevice_(device ? nullptr : createDeviceFor(*exe_, comm ? comm->rank() : 0)),
      device_(device ? device : ownedDevice_.get()), start_(std::chrono::steady_clock::now()) {
  int64_t world = exe_->worldSize();
  if (world > 1 && !comm_)
    throw Error("'" + exe_->directory() + "' is compiled for " + std::to_string(world) +
                " ranks: run it with 'colo run --np " + std::to_string(world) +
                "' or under mpirun -np " + std::to_string(world));
  if (comm_ && comm_->size() != world)
    throw Error("'" + exe_->directory() + "' is compiled for " + std::to_string(world) +
                " ranks, but the run has " + std::to_string(comm_->size()));
  try {
    allocate();
    prepare();
    if (comm_ && comm_->size() > 1) {
      // The finiteness agreement's group too.
      groups_.insert(comm_->world());
      comm_->createGroups({groups_.begin(), groups_.end()});
    }
  } catch (...) {
    for (void *p : blocks_)
      device_->free(p);
    throw;
  }
}

Session::~Session() {
  // A step that failed may have left transfers in flight into these blocks.
  device_->synchronize(Device::Queue::Copy);
  for (void *p : blocks_)
    device_->free(p);
}

void Session::allocate() {
  const Executable &exe = *exe_;
  int32_t count = exe.numBuffers();
  pointers_.assign(count, nullptr);
  inputSet_.assign(count, 0);

  // The STATE, CONSTANT and INPUT buffers of each memory space share one
  // block of it, each 64-byte aligned; the device's block is made even when
  // empty.
  constexpr MemorySpace spaces[] = {MemorySpace::Device, MemorySpace::Host,
                                    MemorySpace::PinnedHost};
  std::vector<int64_t> offsets(count, -1);
  char *block[3] = {};
  for (int s = 0; s < 3; ++s) {
    int64_t total = 0;
    for (int32_t id = 0; id < count; ++id)
      if (!exe.isAlias(id) && exe.buffer(id).kind() != Buffer::TEMP &&
          exe.buffer(id).space() == s) {
        offsets[id] = total;
        total += roundUp(std::max<int64_t>(exe.byteSize(id), 1));
      }
    if (total == 0 && s != Buffer::DEVICE)
      continue;
    block[s] = static_cast<char *>(device_->allocate(
        spaces[s], total,
        std::string("the state and inputs") + (s == Buffer::DEVICE ? "" : " kept in host memory")));
    blocks_.push_back(block[s]);
    if (s == Buffer::DEVICE)
      plannedBlock_ = roundUp(std::max<int64_t>(total, 1));
  }
  // The arena's error names its largest buffer.
  int32_t largest = -1;
  for (int32_t id = 0; id < count; ++id)
    if (!exe.isAlias(id) && exe.buffer(id).kind() == Buffer::TEMP &&
        (largest < 0 || exe.byteSize(id) > exe.byteSize(largest)))
      largest = id;
  char *arena = static_cast<char *>(device_->allocate(
      MemorySpace::Device, exe.program().arena_bytes(),
      "the arena of TEMP buffers" +
          (largest < 0 ? std::string()
                       : " (the largest, " + exe.describeBuffer(largest) + ", has " +
                             std::to_string(exe.byteSize(largest)) + " bytes)")));
  blocks_.push_back(arena);
  char *hostArena = nullptr;
  if (int64_t bytes = exe.program().host_arena_bytes()) {
    hostArena = static_cast<char *>(
        device_->allocate(MemorySpace::Host, bytes, "the arena of TEMP buffers in host memory"));
    blocks_.push_back(hostArena);
  }
  for (int32_t id = 0; id < count; ++id) {
    if (exe.isAlias(id))
      continue;
    const Buffer &b = exe.buffer(id);
    pointers_[id] = b.kind() != Buffer::TEMP ? block[b.space()] + offsets[id]
                    : b.space() == Buffer::HOST ? hostArena + b.offset()
                                                : arena + b.offset();
  }
  for (int32_t id = 0; id < count; ++id)
    if (exe.isAlias(id))
      pointers_[id] = pointers_[exe.storageOf(id)];

  // Each buffer's initial value is drawn from its own seed, so the buffers
  // are filled side by side with the same bits (a billion parameters' draws
  // take minutes on one thread). Errors leave the workers as text.
  const SafetensorsFile *state = exe.initialState();
  std::vector<std::string> errors(static_cast<size_t>(count));
  parallelFor(threadCount(), count, [&](int64_t i) {
    int32_t id = int32_t(i);
    const Buffer &b = exe.buffer(id);
    if (exe.isAlias(id) || (b.kind() != Buffer::STATE && b.kind() != Buffer::CONSTANT))
      return;
    try {
      if (!b.has_init()) {
        fill(id, state->data(*state->find(b.name())));
        return;
      }
      if (!b.has_shard() && hostReaches(id)) {
        makeInitialValue(b.init(), b.dtype(), exe.numElements(id), pointers_[id]);
        return;
      }
      int64_t n = numElements(Shape(b.shard().full_shape().begin(), b.shard().full_shape().end()));
      std::vector<char> whole(static_cast<size_t>(n * dtypeSize(b.dtype())));
      makeInitialValue(b.init(), b.dtype(), n, whole.data());
      fill(id, whole.data());
    } catch (const std::exception &e) {
      errors[size_t(id)] =
          (b.has_init() ? "the initial value of " + exe.describeBuffer(id) + ": " : "") +
          e.what();
    }
  });
  for (const std::string &error : errors)
    if (!error.empty())
      throw Error(error);
}

void Session::fill(int32_t id, const void *whole) {
  if (!exe_->buffer(id).has_shard()) {
    writeBuffer(id, whole);
    return;
  }
  auto [index, parts] = exe_->shardBlock(id, rank());
  std::vector<char> staging;
  void *block = pointers_[id];
  if (!hostReaches(id)) {
    staging.resize(size_t(exe_->byteSize(id)));
    block = staging.data();
  }
  copyBlockOut(exe_->buffer(id).shard(), index, parts, dtypeSize(exe_->buffer(id).dtype()), whole,
               block);
  if (!staging.empty())
    writeBuffer(id, staging.data());
}

bool Session::hostReaches(int32_t id) const {
  static constexpr MemorySpace spaces[] = {MemorySpace::Device, MemorySpace::Host,
                                           MemorySpace::PinnedHost};
  return device_->hostReaches(spaces[exe_->buffer(exe_->storageOf(id)).space()]);
}

const void *Session::hostBytes(int32_t id, std::vector<char> &staging) const {
  if (hostReaches(id))
    return pointers_[id];
  staging.resize(size_t(exe_->byteSize(id)));
  device_->copy(staging.data(), pointers_[id], exe_->byteSize(id));
  return staging.data();
}

void Session::readBuffer(int32_t id, void *dst) const {
  std::vector<char> staging;
  const void *bytes = hostBytes(id, staging);
  if (bytes != dst)
    std::memcpy(dst, bytes, size_t(exe_->byteSize(id)));
}

void Session::writeBuffer(int32_t id, const void *src) {
  if (hostReaches(id))
    std::memcpy(pointers_[id], src, size_t(exe_->byteSize(id)));
  else
    device_->copy(pointers_[id], src, exe_->byteSize(id));
}

void Session::prepare() {
  const Program &program = exe_->program();
  int count = program.steps_size();
  prepared_.resize(count);
  works_.resize(count);
  workStart_.resize(count);
  overlapped_.assign(count, 0);
  stepSeconds_.assign(count, 0);
  stepCalls_.assign(count, 0);
  transfers_.resize(count);
  auto f32 = [&](int32_t id) { return static_cast<float *>(pointers_[id]); };
  scratch_ = std::make_shared<Scratch>();
  for (int i = 0; i < count; ++i) {
    const Step &step = program.steps(i);
    try {
      switch (step.kind_case()) {
      case Step::kKernel: {
        std::vector<void *> args;
        for (int32_t id : step.kernel().args())
          args.push_back(pointers_[id]);
        if (const CudaKernel *cuda = exe_->cudaKernel(i))
          prepared_[i].run =
              device_->prepareCudaKernel(*exe_->cudaKernels(), *cuda, std::move(args));
        else
          prepared_[i].run = device_->prepareKernel(
              exe_->kernel(i), std::move(args), step.kernel().pieces(),
              {step.kernel().piece_bytes().begin(), step.kernel().piece_bytes().end()});
        break;
      }
      case Step::kGemm: {
        const Gemm &g = step.gemm();
        DType dtype = exe_->buffer(g.c()).dtype();
        GemmEpilogue epilogue{g.has_bias() ? f32(g.bias()) : nullptr,
                              g.has_residual() ? f32(g.residual()) : nullptr};
        PreparedGemm gemm = device_->prepareGemm(g, dtype, pointers_[g.a()], pointers_[g.b()],
                                                 pointers_[g.c()], epilogue, scratch_);
        prepared_[i].run = std::move(gemm.run);
        ++gemmPaths_[{dtype, gemm.path}];
        break;
      }
      case Step::kConv: {
        const Conv2d &c = step.conv();
        float *bias = c.has_bias() && c.bias() >= 0 ? f32(c.bias()) : nullptr;
        prepared_[i].run =
            device_->prepareConv(c, f32(c.x()), f32(c.weight()), bias, f32(c.y()), scratch_);
        break;
      }
      case Step::kPool: {
        const Pool2d &p = step.pool();
        bool forward = p.mode() == Pool2d::MAX_FORWARD || p.mode() == Pool2d::AVG_FORWARD;
        bool readsX = forward || p.mode() == Pool2d::MAX_BACKWARD;
        prepared_[i].run = device_->preparePool(
            p, readsX ? f32(p.x()) : nullptr, forward ? f32(p.y()) : nullptr,
            forward ? nullptr : f32(p.dx()), forward ? nullptr : f32(p.dy()));
        break;
      }
      case Step::kCopy: {
        const void *src = pointers_[step.copy().src()];
        void *dst = pointers_[step.copy().dst()];
        prepared_[i].run = device_->prepareCopy(dst, src, exe_->byteSize(step.copy().src()));
        break;
      }
      case Step::kCollective:
        prepared_[i].run = prepareCollective(step.collective(), i);
        break;
      case Step::kTransfer: {
        const void *src = pointers_[step.transfer().src()];
        void *dst = pointers_[step.transfer().dst()];
        int64_t bytes = exe_->byteSize(step.transfer().src());
        prepared_[i].run = [this, i, dst, src, bytes] {
          device_->copyAsync(Device::Queue::Copy, dst, src, bytes);
          transfers_[i] = device_->record(Device::Queue::Copy);
        };
        break;
      }
      case Step::kWait: {
        int started = step.wait().collective_step();
        if (program.steps(started).has_transfer()) {
          prepared_[i].run = [this, started] {
            auto t0 = std::chrono::steady_clock::now();
            device_->synchronize(*transfers_[started]);
            transfers_[started].reset();
            copyWaitSeconds_ +=
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          };
          break;
        }
        prepared_[i].run = [this, started] { finish(started); };
        break;
      }
      default:
        break; // rejected by the validator
      }
      prepared_[i].onDevice = !step.has_collective() && !step.has_wait() && !step.has_transfer();
    } catch (const Error &e) {
      throw Error(exe_->directory() + ": " + exe_->describeStep(i) + ": " + e.what());
    }
  }
  // What the steps reserved, in the device's memory with the rest.
  if (int64_t bytes = scratch_->size()) {
    char *scratch = static_cast<char *>(device_->allocate(
        MemorySpace::Device, bytes, "the operand scratch (convolutions, 16-bit products)"));
    blocks_.push_back(scratch);
    scratch_->provide(scratch, bytes);
  }
}

std::vector<std::string> Session::gemmPaths() const {
  std::vector<std::string> lines;
  std::optional<DType> last;
  for (const auto &[key, steps] : gemmPaths_) {
    std::string entry = key.second + " (" + std::to_string(steps) + ")";
    if (last == key.first)
      lines.back() += ", " + entry;
    else
      lines.push_back(std::string(dtypeName(key.first)) + ": " + entry);
    last = key.first;
  }
  return lines;
}

std::function<void()> Session::prepareCollective(const Collective &c, int stepIndex) {
  std::vector<int> axes(c.mesh_axes().begin(), c.mesh_axes().end());
  Group group = exe_->group(rank(), axes);
  Communicator *comm = comm_;
  // A collective the step starts (`start` returns its work) and a later
  // wait finishes, timed from the step's start.
  auto overlapped = [this, stepIndex](std::function<std::unique_ptr<Work>()> start) {
    overlapped_[stepIndex] = 1;
    return std::function<void()>([this, stepIndex, start] {
      workStart_[stepIndex] = std::chrono::steady_clock::now();
      started(stepIndex, start());
    });
  };
  if (c.kind() == Collective::SEND || c.kind() == Collective::RECV) {
    if (!comm)
      throw Error("a point-to-point step needs a communicator (run with its ranks)");
    int peer = group[size_t(c.peer())], tag = c.tag();
    if (c.kind() == Collective::SEND) {
      sends_ = true;
      const void *in = pointers_[c.input()];
      int64_t bytes = exe_->byteSize(c.input());
      return [=] { comm->sendAsync(in, bytes, peer, tag); };
    }
    void *out = pointers_[c.output()];
    int64_t bytes = exe_->byteSize(c.output());
    return [=] { comm->recv(out, bytes, peer, tag); };
  }
  if (c.kind() == Collective::SHIFT) {
    void *in = pointers_[c.input()], *out = pointers_[c.output()];
    int64_t bytes = exe_->byteSize(c.input()), size = int64_t(group.size());
    int64_t index = std::find(group.begin(), group.end(), rank()) - group.begin();
    int to = group[size_t((index + c.offset()) % size)];
    int from = group[size_t(((index - c.offset()) % size + size) % size)];
    int tag = c.tag();
    if (size == 1)
      return [=] { std::memmove(out, in, size_t(bytes)); };
    if (!comm)
      throw Error("a shift step needs a communicator (run with its ranks)");
    sends_ = true;
    if (c.overlap())
      return overlapped([=] { return comm->startShift(in, out, bytes, to, from, tag); });
    return [=] {
      comm->sendAsync(in, bytes, to, tag);
      comm->recv(out, bytes, from, tag);
    };
  }
  void *in = pointers_[c.input()], *out = pointers_[c.output()];
  DType dtype = exe_->buffer(c.input()).dtype();
  int64_t n = exe_->numElements(c.input()), size = int64_t(group.size());
  int64_t bytes = exe_->byteSize(c.input());
  ReduceOp op = c.reduction() == Collective::SUM       ? ReduceOp::Sum
                : c.reduction() == Collective::AVERAGE ? ReduceOp::Average
                                                       : ReduceOp::Max;
  int64_t index = std::find(group.begin(), group.end(), rank()) - group.begin();
  if (size > 1)
    groups_.insert(group);
  switch (c.kind()) {
  case Collective::ALL_REDUCE:
    if (c.overlap() && size > 1)
      return overlapped([=] {
        if (in != out)
          std::memmove(out, in, size_t(bytes));
        return comm->startAllReduce(out, n, dtype, op, group);
      });
    return [=] {
      if (in != out)
        std::memmove(out, in, size_t(bytes));
      if (size > 1)
        comm->allReduce(out, n, dtype, op, group);
    };
  case Collective::ALL_GATHER:
    if (c.overlap() && size > 1)
      return overlapped([=] { return comm->startAllGather(in, out, n, dtype, group); });
    return [=] {
      if (size > 1)
        comm->allGather(in, out, n, dtype, group);
      else
        std::memmove(out, in, size_t(bytes));
    };
  case Collective::REDUCE_SCATTER:
    return [=] {
      if (size > 1)
        comm->reduceScatter(in, out, n / size, dtype, op, group);
      else
        std::memmove(out, in, size_t(bytes));
    };
  case Collective::ALL_TO_ALL:
    return [=] {
      if (size > 1)
        comm->allToAll(in, out, n / size, dtype, group);
      else
        std::memmove(out, in, size_t(bytes));
    };
  case Collective::ALL_SLICE:
    return [=] {
      std::memmove(out, static_cast<char *>(in) + index * (bytes / size),
                   size_t(bytes / size));
    };
  case Collective::BROADCAST: {
    int root = int(c.root());
    // The root's block is what every member receives.
    auto copyRoot = [=] {
      if (index == root && in != out)
        std::memmove(out, in, size_t(bytes));
    };
    if (c.overlap() && size > 1)
      return overlapped([=] {
        copyRoot();
        return comm->startBroadcast(out, n, dtype, root, group);
      });
    return [=] {
      copyRoot();
      if (size > 1)
        comm->broadcast(out, n, dtype, root, group);
    };
  }
  case Collective::REDUCE: {
    int root = int(c.root());
    return [=] {
      if (size > 1)
        comm->reduce(in, out, n, dtype, root, group);
      else
        std::memmove(out, in, size_t(bytes));
      if (index != root)
        std::memset(out, 0, size_t(bytes));
    };
  }
  default:
    return [] {};
  }
}

void *Session::data(int32_t id) {
  if (id < 0 || id >= exe_->numBuffers())
    throw Error("buffer id " + std::to_string(id) + " is out of range");
  return pointers_[id];
}

const void *Session::data(int32_t id) const {
  return const_cast<Session *>(this)->data(id);
}

void Session::setInput(const std::string &name, const void *src, int64_t bytes) {
  int32_t id = exe_->bufferId(name);
  if (id < 0 || exe_->buffer(exe_->storageOf(id)).kind() != Buffer::INPUT) {
    std::string list;
    for (int32_t in : exe_->inputs())
      list += (list.empty() ? "" : ", ") + exe_->buffer(in).name();
    throw Error("the program has no input '" + name +
                "' (its inputs: " + (list.empty() ? "none" : list) + ")");
  }
  if (bytes != exe_->byteSize(id))
    throw Error("input '" + name + "' takes " + std::to_string(exe_->byteSize(id)) +
                " bytes (" + typeString(exe_->buffer(id).dtype(), exe_->shape(id)) +
                "), got " + std::to_string(bytes));
  std::memcpy(inputStorage(id), src, size_t(bytes));
}

void Session::setInput(const std::string &name, DType dtype, const Shape &shape,
                       const void *src) {
  int32_t id = exe_->bufferId(name);
  if (id >= 0 && (dtype != exe_->buffer(id).dtype() || shape != exe_->shape(id)))
    throw Error("input '" + name + "' is " +
                typeString(exe_->buffer(id).dtype(), exe_->shape(id)) + ", got " +
                typeString(dtype, shape));
  setInput(name, src, numElements(shape) * dtypeSize(dtype));
}

void *Session::inputStorage(int32_t id) {
  int32_t storage = exe_->storageOf(id);
  inputSet_[storage] = 1;
  if (hostReaches(storage))
    return data(id);
  // Written by the host now, copied in when the step starts.
  std::vector<char> &staging = inputStaging_[storage];
  staging.resize(size_t(exe_->byteSize(storage)));
  inputsToCopy_.insert(storage);
  return staging.data();
}

void Session::checkInputs() const {
  for (int32_t id : exe_->inputs())
    if (!inputSet_[id])
      throw Error("input '" + exe_->buffer(id).name() + "' was never set");
}

void Session::step() {
  checkInputs();
  for (int32_t id : inputsToCopy_)
    writeBuffer(id, inputStaging_[id].data());
  inputsToCopy_.clear();
  if (snapshots_) {
    parallelFor(threadCount(), int64_t(snapshot_.size()), [&](int64_t i) {
      auto &[id, copy] = snapshot_[i];
      readBuffer(id, copy.data());
    });
    haveSnapshot_ = true;
  }
  if (!profiling_) {
    for (Prepared &p : prepared_) {
      run(p);
      if (!inFlight_.empty())
        progressCommunication();
    }
    if (sends_)
      comm_->waitSends();
    ++steps_;
    noteExtra(comm_ ? comm_->peakStagingBytes() : 0);
    return;
  }
  using clock = std::chrono::steady_clock;
  clock::time_point iterationStart = clock::now();
  for (size_t i = 0; i < prepared_.size(); ++i) {
    clock::time_point t0 = clock::now();
    run(prepared_[i]);
    clock::time_point t1 = clock::now();
    if (!inFlight_.empty())
      progressCommunication();
    stepSeconds_[i] += std::chrono::duration<double>(t1 - t0).count();
    ++stepCalls_[i];
    if (events_.size() < kMaxEvents)
      events_.push_back({int32_t(i), steps_, micros(t0 - start_), micros(t1 - t0)});
  }
  if (sends_)
    comm_->waitSends();
  events_.push_back({-1, steps_, micros(iterationStart - start_),
                     micros(clock::now() - iterationStart)});
  ++steps_;
  noteExtra(comm_ ? comm_->peakStagingBytes() : 0);
}

void Session::run(const Prepared &p) {
  if (p.onDevice) {
    device_->launch(Device::Queue::Compute, p.run);
    return;
  }
  // Communication reads and writes what the device computed.
  device_->synchronize(Device::Queue::Compute);
  p.run();
}

void Session::started(int index, std::unique_ptr<Work> work) {
  works_[index] = std::move(work);
  inFlight_.push_back(index);
  if (!overlap_)
    finish(index);
}

void Session::progressCommunication() {
  auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < inFlight_.size();) {
    if (works_[inFlight_[i]]->progress())
      finished(i);
    else
      ++i;
  }
  // The reductions run on this thread, between the steps: exposed.
  progressSeconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void Session::finish(int index) {
  auto it = std::find(inFlight_.begin(), inFlight_.end(), index);
  if (it == inFlight_.end())
    return;
  works_[index]->wait();
  finished(size_t(it - inFlight_.begin()));
}

void Session::finished(size_t position) {
  int index = inFlight_[position];
  auto now = std::chrono::steady_clock::now();
  inFlightSeconds_ += std::chrono::duration<double>(now - workStart_[index]).count();
  if (profiling_ && commEvents_.size() < kMaxEvents)
    commEvents_.push_back({index, steps_, micros(workStart_[index] - start_),
                           micros(now - workStart_[index])});
  works_[index].reset();
  inFlight_.erase(inFlight_.begin() + long(position));
}

double Session::scalar(int32_t id) const {
  if (id < 0 || id >= exe_->numBuffers())
    throw Error("buffer id " + std::to_string(id) + " is out of range");
  if (exe_->numElements(id) != 1)
    throw Error(exe_->describeBuffer(id) + " is not a scalar (" +
                typeString(exe_->buffer(id).dtype(), exe_->shape(id)) + ")");
  char bytes[8];
  readBuffer(id, bytes);
  return readAsDouble(bytes, exe_->buffer(id).dtype());
}

double Session::loss() const {
  if (exe_->program().loss_size() == 0)
    throw Error("the program has no loss");
  return scalar(exe_->program().loss(0));
}

int64_t Session::stepCounter() const {
  int32_t id = exe_->stepCounter();
  if (id < 0)
    return -1;
  int64_t v;
  readBuffer(id, &v);
  return v;
}

void Session::noteExtra(int64_t communication, int64_t saving) const {
  int64_t held = scratch_ ? scratch_->size() : 0;
  for (const auto &[id, copy] : snapshot_)
    held += int64_t(copy.size());
  peakExtra_ = std::max(peakExtra_, held + communication + saving);
}

MemoryReport Session::memory() const {
  MemoryReport m;
  m.arena = roundUp(std::max<int64_t>(exe_->program().arena_bytes(), 1));
  m.stateAndInputs = plannedBlock_;
  for (const auto &[id, copy] : snapshot_)
    m.snapshot += int64_t(copy.size());
  m.scratch = scratch_ ? scratch_->size() : 0;
  m.communication = comm_ ? comm_->peakStagingBytes() : 0;
  m.saving = peakSaving_;
  noteExtra(comm_ ? comm_->stagingBytes() : 0);
  m.peakExtra = peakExtra_;
  return m;
}

bool Session::parametersFinite(std::string *firstBad) const {
  bool finite = localParametersFinite(firstBad);
  if (!comm_ || comm_->size() <= 1)
    return finite;
  // Every rank must take the same branch after a bad step.
  int64_t bad = finite ? 0 : 1;
  comm_->allReduce(&bad, 1, I64, ReduceOp::Max, comm_->world());
  if (bad && finite && firstBad)
    *firstBad = "(a parameter block on another rank)";
  return bad == 0;
}

namespace {
/// Whether the `n` floats at `p` are all finite (no exponent of all ones),
/// in blocks whose loops vectorize.
bool allFinite(const float *p, int64_t n) {
  constexpr int64_t kBlock = 4096;
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    uint32_t bad = 0;
    for (int64_t i = begin, end = std::min(n, begin + kBlock); i < end; ++i) {
      uint32_t bits;
      std::memcpy(&bits, p + i, sizeof bits);
      bad |= uint32_t((bits & 0x7f800000u) == 0x7f800000u);
    }
    if (bad)
      return false;
  }
  return true;
}
} // namespace

bool Session::localParametersFinite(std::string *firstBad) const {
  const auto &parameters = exe_->parameters();
  std::vector<char> finite(parameters.size(), 1);
  parallelFor(threadCount(), int64_t(parameters.size()), [&](int64_t i) {
    int32_t id = parameters[i].first;
    DType dtype = exe_->buffer(id).dtype();
    int64_t n = exe_->numElements(id);
    std::vector<char> staging;
    const void *values = isFloat(dtype) ? hostBytes(id, staging) : nullptr;
    if (dtype == F32)
      finite[i] = allFinite(static_cast<const float *>(values), n);
    else if (isFloat(dtype))
      for (int64_t e = 0; e < n && finite[i]; ++e)
        finite[i] = std::isfinite(readAsDouble(values, dtype, e));
  });
  // The first bad parameter in the program's order, whatever the threads.
  for (size_t i = 0; i < parameters.size(); ++i)
    if (!finite[i]) {
      if (firstBad)
        *firstBad = parameters[i].second;
      return false;
    }
  return true;
}

} // namespace colo::runtime
