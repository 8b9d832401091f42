//===- Executable.cpp - Loading and validating an executable --------------===//

#include "colo/Runtime/Executable.h"
#include "Initializer.h"
#include "Shard.h"
#include "colo/Runtime/CpuOps.h"
#include "colo/Runtime/Error.h"
#include "colo/Runtime/Files.h"

#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <dlfcn.h>
#include <malloc.h>
#include <mutex>

#include <set>

namespace colo::runtime {

namespace {
const char *kindName(Buffer::Kind kind) {
  switch (kind) {
  case Buffer::TEMP:
    return "TEMP";
  case Buffer::STATE:
    return "STATE";
  case Buffer::INPUT:
    return "INPUT";
  case Buffer::CONSTANT:
    return "CONSTANT";
  default:
    return "unknown";
  }
}

bool hasStorageOfItsOwn(const Buffer &b) {
  return !(b.has_alias_of() && b.alias_of() >= 0);
}
} // namespace

std::shared_ptr<const Executable> Executable::load(const std::string &dir, int rank) {
  if (!isDirectory(dir)) {
    if (isRegularFile(dir))
      throw Error("'" + dir + "' is not an executable directory (a file was given)");
    throw Error("cannot open executable directory '" + dir + "': no such directory");
  }
  std::string path = joinPath(dir, "program.pb");
  if (!isRegularFile(path))
    throw Error("'" + dir + "' is not an executable: " +
                (isDirectory(path) ? "its program.pb is a directory" : "it has no program.pb"));
  std::string bytes = readFile(path);
  if (bytes.empty())
    throw Error(path + ": the file is empty (not a colo.runtime.Program)");
  Program program;
  // A corrupt file gets colo's one line, not protobuf's log lines as well.
  google::protobuf::SetLogHandler(nullptr);
  if (!program.ParseFromString(bytes))
    throw Error(path + ": not a valid colo.runtime.Program (protobuf parse failed)");
  return create(std::move(program), dir, rank);
}

std::shared_ptr<const Executable> Executable::create(Program program,
                                                     const std::string &dir, int rank) {
  std::shared_ptr<Executable> exe(new Executable());
  if (!program.target().empty() && program.target() != "cpu" && program.target() != "cuda")
    throw Error(joinPath(dir, "program.pb") + ": unknown target '" + program.target() +
                "' (cpu or cuda)");
  if (program.device_memory() < 0)
    throw Error(joinPath(dir, "program.pb") + ": device_memory is negative (" +
                std::to_string(program.device_memory()) + ")");
  if (program.stages_size() > 0) {
    // A pipeline: this rank runs the stage of its coordinate on the axis.
    const Mesh &mesh = program.mesh();
    int axis = program.has_pipeline_axis() ? program.pipeline_axis() : -1;
    if (axis < 0 || axis >= mesh.shape_size() || mesh.shape(axis) != program.stages_size())
      throw Error(joinPath(dir, "program.pb") + ": " + std::to_string(program.stages_size()) +
                  " pipeline stages need a pipeline_axis of the mesh with that size");
    int64_t coord = rank;
    for (int i = mesh.shape_size() - 1; i > axis; --i)
      coord /= mesh.shape(i);
    coord %= mesh.shape(axis);
    Program stage = program.stages(int(coord));
    *stage.mutable_mesh() = mesh;
    stage.set_device_memory(program.device_memory());
    exe->pipelineStage_ = coord;
    exe->pipelineStages_ = program.stages_size();
    exe->pipelineAxis_ = axis;
    program = std::move(stage);
  }
  exe->program_ = std::move(program);
  exe->dir_ = dir;
  exe->programPath_ = joinPath(dir, "program.pb");
  exe->validate();
  exe->loadKernels();
  exe->loadState();
  return exe;
}

Executable::~Executable() {
  if (library_)
    ::dlclose(library_);
}

void Executable::fail(const std::string &message) const {
  throw Error(programPath_ + ": " + message);
}

int32_t Executable::bufferId(const std::string &name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? -1 : it->second;
}

int64_t Executable::byteSize(int32_t id) const {
  return elements_[id] * dtypeSize(buffer(id).dtype());
}

Shape Executable::shape(int32_t id) const {
  const Buffer &b = buffer(id);
  return Shape(b.shape().begin(), b.shape().end());
}

std::string Executable::describeStep(int index) const {
  const Step &step = program_.steps(index);
  std::string s = "step " + std::to_string(index);
  if (!step.name().empty())
    s += " '" + step.name() + "'";
  return s + " (" + stepKind(step) + ")";
}

std::string Executable::describeBuffer(int32_t id) const {
  return "buffer " + std::to_string(id) + " '" + buffer(id).name() + "'";
}

void Executable::validate() {
  validateMesh();
  validateBuffers();
  validateSteps();
}

void Executable::validateMesh() {
  const Mesh &mesh = program_.mesh();
  if (mesh.axes_size() != mesh.shape_size())
    fail("mesh: " + std::to_string(mesh.shape_size()) + " sizes but " +
         std::to_string(mesh.axes_size()) + " axis names");
  worldSize_ = 1;
  for (int i = 0; i < mesh.shape_size(); ++i) {
    if (mesh.shape(i) < 1 || mesh.shape(i) > (1 << 20))
      fail("mesh: axis '" + mesh.axes(i) + "' has size " + std::to_string(mesh.shape(i)));
    worldSize_ *= mesh.shape(i);
  }
  if (worldSize_ > (1 << 20))
    fail("mesh: " + std::to_string(worldSize_) + " ranks is too many");
  if (program_.has_batch_axis() && program_.batch_axis() >= 0) {
    if (program_.batch_axis() >= mesh.shape_size())
      fail("batch_axis " + std::to_string(program_.batch_axis()) +
           " is not an axis of the mesh");
    batchParts_ = mesh.shape(program_.batch_axis());
  }
}

MeshPosition Executable::position(int rank) const {
  const Mesh &mesh = program_.mesh();
  MeshPosition p;
  p.coords.assign(mesh.shape_size(), 0);
  for (int i = mesh.shape_size() - 1, r = rank; i >= 0; --i) {
    p.coords[i] = r % mesh.shape(i);
    r /= mesh.shape(i);
  }
  p.batchPart = batchParts_ > 1 ? p.coords[program_.batch_axis()] : 0;
  return p;
}

std::vector<int> Executable::group(int rank, const std::vector<int> &axes) const {
  const Mesh &mesh = program_.mesh();
  std::vector<int64_t> coords = position(rank).coords;
  std::vector<int> members{0};
  // Enumerate the coordinates along `axes` (the first slowest), the others
  // fixed at this rank's.
  for (int axis : axes) {
    std::vector<int> next;
    for (int base : members)
      for (int64_t c = 0; c < mesh.shape(axis); ++c)
        next.push_back(base * int(mesh.shape(axis)) + int(c));
    members = std::move(next);
  }
  std::vector<int> ranks;
  for (int m : members) {
    std::vector<int64_t> c = coords;
    for (int i = int(axes.size()) - 1, r = m; i >= 0; --i) {
      c[axes[i]] = r % mesh.shape(axes[i]);
      r /= int(mesh.shape(axes[i]));
    }
    int64_t rank = 0;
    for (int i = 0; i < mesh.shape_size(); ++i)
      rank = rank * mesh.shape(i) + c[i];
    ranks.push_back(int(rank));
  }
  return ranks;
}

std::pair<int64_t, int64_t> Executable::shardBlock(int32_t id, int rank) const {
  const Shard &shard = buffer(id).shard();
  std::vector<int> g = group(rank, {shard.mesh_axes().begin(), shard.mesh_axes().end()});
  return {std::find(g.begin(), g.end(), rank) - g.begin(), int64_t(g.size())};
}

void Executable::validateShard(int32_t id) {
  const Buffer &b = buffer(id);
  std::string what = describeBuffer(id) + ": shard";
  if (b.kind() != Buffer::STATE && b.kind() != Buffer::CONSTANT)
    fail(what + " on a " + kindName(b.kind()) + " buffer (only STATE or CONSTANT)");
  if (std::string problem = shardProblem(b, program_.mesh()); !problem.empty())
    fail(what + ": " + problem);
}

void Executable::validateBuffers() {
  int32_t count = numBuffers();
  storage_.assign(count, -1);
  elements_.assign(count, 0);
  const int64_t arena = program_.arena_bytes();
  if (arena < 0)
    fail("arena_bytes is negative (" + std::to_string(arena) + ")");
  if (program_.host_arena_bytes() < 0)
    fail("host_arena_bytes is negative (" + std::to_string(program_.host_arena_bytes()) + ")");

  for (int32_t id = 0; id < count; ++id) {
    const Buffer &b = buffer(id);
    std::string what = describeBuffer(id);
    if (b.name().empty())
      fail("buffer " + std::to_string(id) + " has no name");
    if (!byName_.emplace(b.name(), id).second)
      fail(what + ": the name is also buffer " + std::to_string(byName_[b.name()]));
    if (!DType_IsValid(b.dtype()) || dtypeSize(b.dtype()) == 0)
      fail(what + ": unknown dtype " + std::to_string(b.dtype()));
    if (!Buffer::Kind_IsValid(b.kind()))
      fail(what + ": unknown kind " + std::to_string(b.kind()));
    if (!Buffer::Space_IsValid(b.space()))
      fail(what + ": unknown memory space " + std::to_string(b.space()));
    if (b.space() != Buffer::DEVICE && !hasStorageOfItsOwn(b))
      fail(what + ": an alias lives in its target's memory space (leave its space unset), "
                  "not " + Buffer::Space_Name(b.space()));
    if (b.space() == Buffer::PINNED_HOST && b.kind() == Buffer::TEMP)
      fail(what + ": a TEMP buffer lives in the arena of device or host memory, not "
                  "PINNED_HOST");
    int64_t n = colo::runtime::numElements(shape(id));
    if (n < 0 || n > (int64_t(1) << 56) / dtypeSize(b.dtype()))
      fail(what + ": bad shape " + shapeString(shape(id)));
    elements_[id] = n;
    if (b.int_max() < 0)
      fail(what + ": int_max is negative");
    if (b.has_int_ignored() && b.int_max() == 0)
      fail(what + ": int_ignored without an int_max");
    if (!hasStorageOfItsOwn(b))
      continue;
    storage_[id] = id;
    if (b.kind() == Buffer::TEMP) {
      int64_t bytes = byteSize(id);
      int64_t in = b.space() == Buffer::HOST ? program_.host_arena_bytes() : arena;
      if (b.offset() < 0 || b.offset() > in || bytes > in - b.offset())
        fail(what + ": its " + std::to_string(bytes) + " bytes at offset " +
             std::to_string(b.offset()) + " are outside the " +
             (b.space() == Buffer::HOST ? "host " : "") + "arena of " + std::to_string(in) +
             " bytes");
      if (b.offset() % dtypeSize(b.dtype()))
        fail(what + ": arena offset " + std::to_string(b.offset()) +
             " is not a multiple of the " + dtypeName(b.dtype()) + " element size");
    }
    if (b.kind() == Buffer::INPUT)
      inputs_.push_back(id);
  }

  // Aliases: follow chains to a buffer with storage.
  for (int32_t id = 0; id < count; ++id) {
    if (storage_[id] >= 0)
      continue;
    std::set<int32_t> seen{id};
    int32_t target = buffer(id).alias_of();
    while (true) {
      if (target < 0 || target >= count)
        fail(describeBuffer(id) + ": alias_of " + std::to_string(target) +
             " is not a buffer id (the program has " + std::to_string(count) + ")");
      if (!seen.insert(target).second)
        fail(describeBuffer(id) + ": alias_of forms a cycle");
      if (hasStorageOfItsOwn(buffer(target)))
        break;
      target = buffer(target).alias_of();
    }
    const Buffer &b = buffer(id), &t = buffer(target);
    if (byteSize(id) > byteSize(target))
      fail(describeBuffer(id) + ": " + std::to_string(byteSize(id)) +
           " bytes do not fit in the " + std::to_string(byteSize(target)) +
           " bytes of the buffer it aliases, " + describeBuffer(target));
    if (b.kind() != Buffer::TEMP && b.kind() != t.kind())
      fail(describeBuffer(id) + ": a " + kindName(b.kind()) + " alias of a " +
           kindName(t.kind()) + " buffer (an alias is TEMP or of its target's kind)");
    storage_[id] = target;
  }

  for (int32_t id = 0; id < count; ++id)
    if (buffer(id).has_shard())
      validateShard(id);

  for (int i = 0; i < program_.loss_size(); ++i) {
    int32_t id = program_.loss(i);
    if (id < 0 || id >= count)
      fail("loss " + std::to_string(i) + ": " + std::to_string(id) +
           " is not a buffer id");
    if (elements_[id] != 1 || !isFloat(buffer(id).dtype()))
      fail("loss " + std::to_string(i) + ": " + describeBuffer(id) +
           " is not a float scalar (it is " + typeString(buffer(id).dtype(), shape(id)) +
           ")");
  }

  if (program_.has_step_counter() && program_.step_counter() >= 0) {
    int32_t id = program_.step_counter();
    if (id >= count)
      fail("step_counter " + std::to_string(id) + " is not a buffer id");
    const Buffer &b = buffer(id);
    if (b.kind() != Buffer::STATE || b.dtype() != I64 || elements_[id] != 1)
      fail("step_counter: " + describeBuffer(id) + " is not an i64 scalar STATE buffer");
    stepCounter_ = id;
  }

  std::map<std::string, std::string> torchNames; // PyTorch name -> buffer name
  for (const auto &[bufferName, torchName] : program_.param_names()) {
    int32_t id = bufferId(bufferName);
    if (id < 0)
      fail("param_names: '" + bufferName + "' is not a buffer");
    Buffer::Kind kind = buffer(id).kind();
    if (kind != Buffer::STATE && kind != Buffer::CONSTANT)
      fail("param_names: " + describeBuffer(id) + " is " + kindName(kind) +
           ", not STATE or CONSTANT");
    if (torchName.empty())
      fail("param_names: " + describeBuffer(id) + " has an empty PyTorch name");
    auto [it, fresh] = torchNames.emplace(torchName, bufferName);
    if (!fresh)
      fail("param_names: buffers '" + it->second + "' and '" + bufferName +
           "' both map to '" + torchName + "'");
  }
  for (int32_t id = 0; id < count; ++id) {
    auto it = program_.param_names().find(buffer(id).name());
    if (it != program_.param_names().end())
      params_.emplace_back(id, it->second);
  }
}

void Executable::validateSteps() {
  const int32_t count = numBuffers();
  for (int index = 0; index < program_.steps_size(); ++index) {
    const Step &step = program_.steps(index);
    std::string where = describeStep(index);
    auto operand = [&](const char *role, int32_t id) {
      if (id < 0 || id >= count)
        fail(where + ": " + role + " " + std::to_string(id) +
             " is not a buffer id (the program has " + std::to_string(count) + ")");
      return id;
    };
    auto needDType = [&](const char *role, int32_t id, DType dtype) {
      if (buffer(id).dtype() != dtype)
        fail(where + ": " + role + " " + describeBuffer(id) + " is " +
             dtypeName(buffer(id).dtype()) + ", expected " + dtypeName(dtype));
    };
    auto needElements = [&](const char *role, int32_t id, int64_t need, bool exact) {
      int64_t have = elements_[id];
      if (exact ? have != need : have < need)
        fail(where + ": " + role + " " + describeBuffer(id) + " has " +
             std::to_string(have) + " elements (" +
             typeString(buffer(id).dtype(), shape(id)) + "), the step needs " +
             (exact ? "" : "at least ") + std::to_string(need));
    };
    auto notConstant = [&](const char *role, int32_t id) {
      if (buffer(storage_[id]).kind() == Buffer::CONSTANT)
        fail(where + ": writes CONSTANT " + describeBuffer(id) + " (" + role + ")");
      if (buffer(storage_[id]).kind() == Buffer::INPUT)
        fail(where + ": writes INPUT " + describeBuffer(id) + " (" + role + ")");
    };

    auto space = [&](int32_t id) { return buffer(storage_[id]).space(); };
    // Library steps and collectives run on the device; kernels run where
    // their buffers are, and so does an all_slice, a local copy of the
    // rank's block (ZeRO's update of parameters offloaded to the host).
    bool localSlice = step.has_collective() &&
                      step.collective().kind() == Collective::ALL_SLICE &&
                      step.collective().input() >= 0 && step.collective().input() < count &&
                      step.collective().output() >= 0 && step.collective().output() < count &&
                      space(step.collective().input()) == space(step.collective().output());
    if (!step.has_kernel() && !step.has_copy() && !step.has_transfer() && !localSlice)
      forEachBuffer(step, [&](int32_t id) {
        if (id >= 0 && id < count && space(id) != Buffer::DEVICE)
          fail(where + ": " + describeBuffer(id) + " is in " + Buffer::Space_Name(space(id)) +
               " memory; only kernels, copies and transfers read or write other memory than "
               "the device's");
      });
    switch (step.kind_case()) {
    case Step::kKernel: {
      const KernelCall &k = step.kernel();
      if (k.symbol().empty())
        fail(where + ": the kernel call has no symbol");
      for (int i = 0; i < k.args_size(); ++i)
        if (space(operand("argument", k.args(i))) != space(k.args(0)))
          fail(where + ": arguments in " + Buffer::Space_Name(space(k.args(0))) + " and " +
               Buffer::Space_Name(space(k.args(i))) +
               " memory (a kernel runs on the device or on the host, with its buffers)");
      if (k.pieces() < 0)
        fail(where + ": " + std::to_string(k.pieces()) + " pieces");
      if (k.pieces() > 1 && k.piece_bytes_size() != k.args_size())
        fail(where + ": " + std::to_string(k.piece_bytes_size()) + " piece sizes for " +
             std::to_string(k.args_size()) + " arguments");
      for (int i = 0; k.pieces() > 1 && i < k.args_size(); ++i)
        if (k.piece_bytes(i) < 0 || k.piece_bytes(i) * k.pieces() > byteSize(k.args(i)))
          fail(where + ": " + std::to_string(k.pieces()) + " pieces of " +
               std::to_string(k.piece_bytes(i)) + " bytes do not fit argument " +
               describeBuffer(k.args(i)) + " (" + std::to_string(byteSize(k.args(i))) +
               " bytes)");
      break;
    }
    case Step::kGemm: {
      const Gemm &g = step.gemm();
      int32_t a = operand("operand a", g.a()), b = operand("operand b", g.b()),
              c = operand("operand c", g.c());
      GemmGeometry geo = geometryOf(g);
      std::string problem = checkGeometry(geo);
      if (!problem.empty())
        fail(where + ": " + problem);
      DType dtype = buffer(c).dtype();
      if (!isFloat(dtype))
        fail(where + ": gemm on " + dtypeName(dtype) +
             " is not supported (f32, f64, bf16, f16)");
      needDType("operand a", a, dtype);
      needDType("operand b", b, dtype);
      needElements("operand a", a, geo.elementsA(), false);
      needElements("operand b", b, geo.elementsB(), false);
      needElements("operand c", c, geo.elementsC(), false);
      notConstant("operand c", c);
      if (g.has_bias() || g.has_residual())
        if (std::string why = checkEpilogue(geo, dtype); !why.empty())
          fail(where + ": " + why);
      if (g.has_bias()) {
        int32_t bias = operand("bias", g.bias());
        needDType("bias", bias, F32);
        needElements("bias", bias, geo.n, true);
      }
      if (g.has_residual()) {
        int32_t residual = operand("residual", g.residual());
        needDType("residual", residual, F32);
        needElements("residual", residual, geo.elementsC(), false);
      }
      break;
    }
    case Step::kConv: {
      const Conv2d &cv = step.conv();
      if (!Conv2d::Mode_IsValid(cv.mode()))
        fail(where + ": unknown mode " + std::to_string(cv.mode()));
      WindowGeometry g = geometryOf(cv);
      std::string problem = checkGeometry(g, true);
      if (!problem.empty())
        fail(where + ": " + problem);
      int32_t x = operand("x", cv.x()), w = operand("weight", cv.weight()),
              y = operand("y", cv.y());
      needDType("x", x, F32);
      needDType("weight", w, F32);
      needDType("y", y, F32);
      needElements("x", x, g.n * g.c * g.h * g.w, true);
      needElements("weight", w, g.k * (g.c / g.groups) * g.r * g.s, true);
      needElements("y", y, g.n * g.k * g.oh * g.ow, true);
      bool bias = cv.has_bias() && cv.bias() >= 0 && cv.mode() != Conv2d::BACKWARD_DATA;
      if (bias) {
        int32_t id = operand("bias", cv.bias());
        needDType("bias", id, F32);
        needElements("bias", id, g.k, true);
        if (cv.mode() == Conv2d::BACKWARD_WEIGHTS)
          notConstant("bias", id);
      }
      notConstant(cv.mode() == Conv2d::FORWARD         ? "y"
                  : cv.mode() == Conv2d::BACKWARD_DATA ? "x"
                                                       : "weight",
                  cv.mode() == Conv2d::FORWARD         ? y
                  : cv.mode() == Conv2d::BACKWARD_DATA ? x
                                                       : w);
      break;
    }
    case Step::kPool: {
      const Pool2d &p = step.pool();
      if (!Pool2d::Mode_IsValid(p.mode()))
        fail(where + ": unknown mode " + std::to_string(p.mode()));
      WindowGeometry g = geometryOf(p);
      std::string problem = checkGeometry(g, false);
      if (!problem.empty())
        fail(where + ": " + problem);
      int64_t in = g.n * g.c * g.h * g.w, out = g.n * g.c * g.oh * g.ow;
      bool forward = p.mode() == Pool2d::MAX_FORWARD || p.mode() == Pool2d::AVG_FORWARD;
      if (forward || p.mode() == Pool2d::MAX_BACKWARD) {
        int32_t x = operand("x", p.x());
        needDType("x", x, F32);
        needElements("x", x, in, true);
      }
      if (forward) {
        int32_t y = operand("y", p.y());
        needDType("y", y, F32);
        needElements("y", y, out, true);
        notConstant("y", y);
      } else {
        int32_t dx = operand("dx", p.dx()), dy = operand("dy", p.dy());
        needDType("dx", dx, F32);
        needDType("dy", dy, F32);
        needElements("dx", dx, in, true);
        needElements("dy", dy, out, true);
        notConstant("dx", dx);
      }
      break;
    }
    case Step::kCopy:
    case Step::kTransfer: {
      bool transfer = step.has_transfer();
      int32_t src = operand("src", transfer ? step.transfer().src() : step.copy().src()),
              dst = operand("dst", transfer ? step.transfer().dst() : step.copy().dst());
      if (byteSize(src) != byteSize(dst))
        fail(where + ": src " + describeBuffer(src) + " has " +
             std::to_string(byteSize(src)) + " bytes, dst " + describeBuffer(dst) +
             " has " + std::to_string(byteSize(dst)));
      if (transfer && space(src) == space(dst))
        fail(where + ": src and dst are both in " + Buffer::Space_Name(space(src)) +
             " memory (a transfer moves bytes between two spaces; a copy within one)");
      notConstant("dst", dst);
      break;
    }
    case Step::kCollective: {
      const Collective &c = step.collective();
      // The members of a point-to-point step's group.
      auto members = [&] {
        int64_t n = 1;
        for (int axis : c.mesh_axes()) {
          if (axis < 0 || axis >= program_.mesh().shape_size())
            fail(where + ": mesh axis " + std::to_string(axis) + " is not an axis of the mesh");
          n *= program_.mesh().shape(axis);
        }
        return n;
      };
      if (c.kind() == Collective::SEND || c.kind() == Collective::RECV) {
        int64_t size = members();
        if (c.peer() < 0 || c.peer() >= size)
          fail(where + ": peer " + std::to_string(c.peer()) + " is not a member of a group of " +
               std::to_string(size));
        if (c.tag() < 0 || c.tag() >= (1 << 15))
          fail(where + ": tag " + std::to_string(c.tag()) + " is outside [0, 32768)");
        if (c.kind() == Collective::SEND)
          operand("input", c.input());
        else
          notConstant("output", operand("output", c.output()));
        break;
      }
      if (c.kind() == Collective::SHIFT) {
        int64_t size = members();
        if (c.offset() <= 0 || c.offset() >= std::max<int64_t>(size, 2))
          fail(where + ": shift offset " + std::to_string(c.offset()) +
               " is not in (0, group size " + std::to_string(size) + ")");
        if (c.tag() < 0 || c.tag() >= (1 << 15))
          fail(where + ": tag " + std::to_string(c.tag()) + " is outside [0, 32768)");
        int32_t in = operand("input", c.input());
        int32_t out = operand("output", c.output());
        notConstant("output", out);
        needDType("output", out, buffer(in).dtype());
        needElements("output", out, elements_[in], true);
        break;
      }
      int32_t in = operand("input", c.input()), out = operand("output", c.output());
      int64_t parts = 1;
      std::set<int> axes;
      for (int axis : c.mesh_axes()) {
        if (axis < 0 || axis >= program_.mesh().shape_size())
          fail(where + ": mesh axis " + std::to_string(axis) + " is not an axis of the mesh");
        if (!axes.insert(axis).second)
          fail(where + ": mesh axis " + std::to_string(axis) + " is named twice");
        parts *= program_.mesh().shape(axis);
      }
      DType dtype = buffer(in).dtype();
      needDType("output", out, dtype);
      bool intSum = dtype == I64 && c.kind() == Collective::ALL_REDUCE &&
                    c.reduction() != Collective::AVERAGE;
      bool moves = c.kind() == Collective::ALL_SLICE || c.kind() == Collective::BROADCAST;
      if (dtype != F32 && dtype != F64 && !intSum && !moves)
        fail(where + ": " + dtypeName(dtype) + " is not supported by this collective");
      int64_t n = elements_[in];
      switch (c.kind()) {
      case Collective::ALL_REDUCE:
      case Collective::ALL_TO_ALL:
        needElements("output", out, n, true);
        break;
      case Collective::ALL_GATHER:
        needElements("output", out, n * parts, true);
        break;
      case Collective::REDUCE_SCATTER:
      case Collective::ALL_SLICE:
        if (n % parts)
          fail(where + ": input " + describeBuffer(in) + " has " + std::to_string(n) +
               " elements, not a multiple of the group size " + std::to_string(parts));
        needElements("output", out, n / parts, true);
        break;
      case Collective::BROADCAST:
      case Collective::REDUCE:
        if (c.root() < 0 || c.root() >= parts)
          fail(where + ": root " + std::to_string(c.root()) + " is not a member of a group of " +
               std::to_string(parts));
        if (c.kind() == Collective::REDUCE && c.reduction() != Collective::SUM)
          fail(where + ": a reduce to a root sums");
        needElements("output", out, n, true);
        break;
      default:
        fail(where + ": unknown collective kind " + std::to_string(int(c.kind())));
      }
      if (c.kind() == Collective::ALL_TO_ALL && n % parts)
        fail(where + ": input " + describeBuffer(in) + " has " + std::to_string(n) +
             " elements, not a multiple of the group size " + std::to_string(parts));
      if (in == out && c.kind() != Collective::ALL_REDUCE)
        fail(where + ": input and output are the same buffer");
      if (c.overlap() && c.kind() != Collective::ALL_REDUCE && c.kind() != Collective::BROADCAST &&
          c.kind() != Collective::ALL_GATHER)
        fail(where + ": only an all-reduce, an all-gather or a broadcast overlaps the steps "
                     "after it");
      notConstant("output", out);
      break;
    }
    case Step::kWait:
      break; // validateWaits
    default:
      fail(where + ": the step has no kind (kernel, gemm, conv, pool, copy, transfer, "
                   "collective or wait)");
    }
  }
  validateWaits();
}

void Executable::validateWaits() {
  // The overlapped collectives and the transfers started and not yet waited
  // for, by step.
  std::map<int, std::set<int32_t>> inFlight;
  auto storage = [&](int32_t id) { return storageOf(id); };
  for (int index = 0; index < program_.steps_size(); ++index) {
    const Step &step = program_.steps(index);
    std::string where = describeStep(index);
    if (step.has_wait()) {
      int started = step.wait().collective_step();
      if (!inFlight.count(started)) {
        bool overlapped = started >= 0 && started < index &&
                          ((program_.steps(started).has_collective() &&
                            program_.steps(started).collective().overlap()) ||
                           program_.steps(started).has_transfer());
        fail(where + ": waits for step " + std::to_string(started) + ", " +
             (overlapped ? "which an earlier step already waited for"
                         : "which is not an earlier overlapped collective or transfer"));
      }
      inFlight.erase(started);
      continue;
    }
    forEachBuffer(step, [&](int32_t id) {
      for (const auto &[started, buffers] : inFlight)
        if (buffers.count(storage(id)))
          fail(where + ": uses " + describeBuffer(id) + " while " +
               describeStep(started) + " still works on it (before its wait)");
    });
    // A shift sends a copy of its input at once: only its output is in
    // flight.
    if (step.has_collective() && step.collective().overlap() &&
        step.collective().kind() == Collective::SHIFT)
      inFlight[index].insert(storage(step.collective().output()));
    else if ((step.has_collective() && step.collective().overlap()) || step.has_transfer())
      forEachBuffer(step, [&](int32_t id) { inFlight[index].insert(storage(id)); });
  }
  if (!inFlight.empty())
    fail(describeStep(inFlight.begin()->first) + ": an overlapped collective or a transfer "
                                                  "that no step waits for");
}

void Executable::loadKernels() {
  kernels_.assign(program_.steps_size(), nullptr);
  bool any = false;
  for (const Step &step : program_.steps())
    any |= step.has_kernel();
  if (!any)
    return;
  if (program_.target() == "cuda") {
    loadCudaKernels();
    return;
  }
  std::string name =
      program_.kernels_library().empty() ? "kernels.so" : program_.kernels_library();
  // dlopen runs the library's constructors: a program may name only a file
  // of its own directory, never a path to another library.
  if (name.find('/') != std::string::npos || name == "." || name == ".." ||
      name.find('\0') != std::string::npos)
    throw Error("'" + dir_ + "' is not a valid executable: its program names the kernels "
                "library '" + name +
                "', which is not a plain file name inside the executable directory");
  std::string path = joinPath(dir_, name);
  if (!isRegularFile(path))
    throw Error("'" + dir_ +
                "' is not a complete executable: the program calls kernels "
                "but '" +
                path + "' does not exist");
  // Kernels malloc and free their temporaries (a few MB) on every call.
  // glibc serves such sizes by mmap and returns them at free, so each call
  // would fault its pages in again; keep them in the heap for reuse instead.
  static std::once_flag keepLargeBlocks;
  std::call_once(keepLargeBlocks, [] {
    ::mallopt(M_MMAP_THRESHOLD, 256 << 20);
    ::mallopt(M_TRIM_THRESHOLD, 512 << 20);
  });
  // RTLD_NOW: an unresolved symbol inside the library is reported here, not
  // in the middle of a step.
  library_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library_) {
    const char *err = ::dlerror();
    throw Error("cannot load '" + path + "': " + (err ? err : "unknown error"));
  }
  for (int index = 0; index < program_.steps_size(); ++index) {
    const Step &step = program_.steps(index);
    if (!step.has_kernel())
      continue;
    ::dlerror();
    void *fn = ::dlsym(library_, step.kernel().symbol().c_str());
    if (!fn)
      throw Error(path + ": kernel '" + step.kernel().symbol() + "' used by " +
                  describeStep(index) + " is not exported");
    kernels_[index] = reinterpret_cast<KernelFn>(fn);
  }
}

void Executable::loadCudaKernels() {
  std::string path = joinPath(dir_, "kernels.cuda.pb");
  if (!isRegularFile(path))
    throw Error("'" + dir_ +
                "' is not a complete executable: the program calls CUDA kernels "
                "but '" +
                path + "' does not exist");
  cudaKernels_ = std::make_unique<CudaKernels>();
  if (!cudaKernels_->ParseFromString(readFile(path)))
    throw Error(path + ": not a valid colo.runtime.CudaKernels (protobuf parse failed)");
  auto bad = [&](const std::string &message) { throw Error(path + ": " + message); };
  for (const CudaConstant &c : cudaKernels_->constants())
    if (c.bytes().empty())
      bad("constant '" + c.name() + "' has no bytes");
  std::map<std::string, const CudaModule *> modules;
  for (const CudaModule &m : cudaKernels_->modules()) {
    if (m.ptx().empty())
      bad("module '" + m.name() + "' has no PTX");
    modules[m.name()] = &m;
  }
  std::map<std::string, int> byName;
  for (int i = 0; i < cudaKernels_->kernels_size(); ++i)
    byName[cudaKernels_->kernels(i).name()] = i;
  cudaKernelOf_.assign(program_.steps_size(), -1);
  for (int index = 0; index < program_.steps_size(); ++index) {
    const Step &step = program_.steps(index);
    if (!step.has_kernel())
      continue;
    auto it = byName.find(step.kernel().symbol());
    if (it == byName.end())
      bad("no kernel '" + step.kernel().symbol() + "', which " + describeStep(index) + " calls");
    if (step.kernel().pieces() > 1)
      bad(describeStep(index) + " splits its kernel into pieces, which a GPU runs whole");
    const CudaKernel &kernel = cudaKernels_->kernels(it->second);
    std::string what = "kernel '" + kernel.name() + "'";
    for (int64_t bytes : kernel.temporary_bytes())
      if (bytes < 0)
        bad(what + " has a temporary of negative size");
    for (const CudaLaunch &l : kernel.launches()) {
      if (!modules.count(l.module()))
        bad(what + " launches from module '" + l.module() + "', which is not in the file");
      if (l.function().empty())
        bad(what + " launches a function without a name");
      // CUDA's limits: 1024 threads per block, 2^31 - 1 blocks in x.
      if (l.grid() < 1 || l.grid() > (int64_t(1) << 31) - 1 || l.block() < 1 || l.block() > 1024)
        bad(what + " launches " + std::to_string(l.grid()) + " blocks of " +
            std::to_string(l.block()) + " threads (1 to 2^31 - 1 blocks of 1 to 1024)");
      for (const CudaArg &a : l.args()) {
        bool ok =
            a.has_temporary() ? a.temporary() >= 0 && a.temporary() < kernel.temporary_bytes_size()
            : a.has_constant()
                ? a.constant() >= 0 && a.constant() < cudaKernels_->constants_size()
                : a.has_argument() && a.argument() >= 0 && a.argument() < step.kernel().args_size();
        if (!ok)
          bad(what + " launches '" + l.function() + "' on a buffer that " + describeStep(index) +
              " does not pass");
      }
    }
    cudaKernelOf_[index] = it->second;
  }
}

const CudaKernel *Executable::cudaKernel(int index) const {
  return cudaKernels_ && cudaKernelOf_[index] >= 0 ? &cudaKernels_->kernels(cudaKernelOf_[index])
                                                   : nullptr;
}

void Executable::loadState() {
  std::vector<int32_t> needed;
  for (int32_t id = 0; id < numBuffers(); ++id) {
    Buffer::Kind kind = buffer(id).kind();
    if (buffer(id).has_init()) {
      const Initializer &init = buffer(id).init();
      DType dtype = buffer(id).dtype();
      if ((kind != Buffer::STATE && kind != Buffer::CONSTANT) || isAlias(id))
        throw Error(joinPath(dir_, "program.pb") + ": " + describeBuffer(id) +
                    " has an initial value but is not STATE or CONSTANT storage");
      if (!Initializer::Distribution_IsValid(init.distribution()) ||
          (init.distribution() != Initializer::FILL && !drawsIn(dtype)))
        throw Error(joinPath(dir_, "program.pb") + ": " + describeBuffer(id) +
                    " has an initial value of distribution " +
                    std::to_string(init.distribution()) + " for " + dtypeName(dtype) +
                    " (random values are f32, f64 or bf16)");
    }
    if (!isAlias(id) && (kind == Buffer::STATE || kind == Buffer::CONSTANT) &&
        !buffer(id).has_init())
      needed.push_back(id);
  }
  if (needed.empty())
    return;
  std::string path = joinPath(dir_, "state.safetensors");
  if (!isRegularFile(path))
    throw Error("'" + dir_ + "' is not a complete executable: " +
                describeBuffer(needed[0]) + " is " + kindName(buffer(needed[0]).kind()) +
                " but '" + path + "' does not exist");
  state_ = SafetensorsFile::open(path);
  for (int32_t id : needed) {
    const Buffer &b = buffer(id);
    const SafetensorsFile::Entry *e = state_->find(b.name());
    if (!e)
      throw Error(path + ": no tensor '" + b.name() + "' for " + kindName(b.kind()) +
                  " " + describeBuffer(id));
    if (e->dtype != b.dtype() || e->shape != fullShape(id))
      throw Error(path + ": tensor '" + b.name() + "' is " +
                  typeString(e->dtype, e->shape) + " but " + describeBuffer(id) + " is " +
                  typeString(b.dtype(), fullShape(id)) +
                  (b.has_shard() ? " (the whole tensor)" : ""));
  }
}

const char *stepKind(const Step &step) {
  switch (step.kind_case()) {
  case Step::kKernel:
    return "kernel";
  case Step::kGemm:
    return "gemm";
  case Step::kConv:
    return "conv";
  case Step::kPool:
    return "pool";
  case Step::kCopy:
    return "copy";
  case Step::kCollective:
    return "collective";
  case Step::kWait:
    return "wait";
  case Step::kTransfer:
    return "transfer";
  default:
    return "empty";
  }
}

void forEachBuffer(const Step &s, const std::function<void(int32_t)> &f) {
  switch (s.kind_case()) {
  case Step::kKernel:
    for (int32_t id : s.kernel().args())
      f(id);
    break;
  case Step::kGemm:
    f(s.gemm().a()), f(s.gemm().b()), f(s.gemm().c());
    if (s.gemm().has_bias())
      f(s.gemm().bias());
    if (s.gemm().has_residual())
      f(s.gemm().residual());
    break;
  case Step::kConv:
    f(s.conv().x()), f(s.conv().weight()), f(s.conv().y());
    if (s.conv().has_bias() && s.conv().bias() >= 0)
      f(s.conv().bias());
    break;
  case Step::kPool: {
    const Pool2d &p = s.pool();
    if (p.mode() == Pool2d::MAX_FORWARD || p.mode() == Pool2d::AVG_FORWARD) {
      f(p.x()), f(p.y());
    } else {
      if (p.mode() == Pool2d::MAX_BACKWARD)
        f(p.x());
      f(p.dx()), f(p.dy());
    }
    break;
  }
  case Step::kCopy:
    f(s.copy().src()), f(s.copy().dst());
    break;
  case Step::kTransfer:
    f(s.transfer().src()), f(s.transfer().dst());
    break;
  case Step::kCollective:
    // A send has no output, a receive no input.
    if (s.collective().kind() != Collective::RECV)
      f(s.collective().input());
    if (s.collective().kind() != Collective::SEND)
      f(s.collective().output());
    break;
  default:
    break;
  }
}

} // namespace colo::runtime
