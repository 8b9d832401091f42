//===- Checkpoint.cpp - Sharded checkpoints that resume under any plan ----===//

#include "colo/Runtime/Checkpoint.h"
#include "colo/Runtime/Communicator.h"
#include "colo/Runtime/Error.h"
#include "colo/Runtime/Files.h"
#include "colo/Runtime/Safetensors.h"
#include "colo/Runtime/Session.h"
#include "Shard.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fnmatch.h>
#include <limits>
#include <set>
#include <system_error>

namespace colo::runtime {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
constexpr const char *kIndex = "index.json";
constexpr const char *kFormat = "colo-checkpoint";
constexpr int kVersion = 1;
/// An index larger than this is not one colo wrote (a tensor entry takes
/// about 200 bytes).
constexpr int64_t kMaxIndexBytes = int64_t(1) << 30;

std::string stepName(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%08lld", static_cast<long long>(step));
  return name;
}

std::string rankFile(int rank) {
  char name[40];
  std::snprintf(name, sizeof name, "rank-%05d.safetensors", rank);
  return name;
}

/// The step of a checkpoint directory's entry "step-N", or -1.
int64_t stepOf(const std::string &entry) {
  if (entry.size() <= 5 || entry.compare(0, 5, "step-") != 0 || entry.size() > 5 + 18)
    return -1;
  int64_t step = 0;
  for (char c : entry.substr(5)) {
    if (c < '0' || c > '9')
      return -1;
    step = step * 10 + (c - '0');
  }
  return step;
}

/// Removes `path` after renaming it out of the way, so that a crash while
/// removing never leaves a half-removed directory under its old name.
void removeAside(const fs::path &path) {
  fs::path aside = path.parent_path() / ("." + path.filename().string() + ".old");
  std::error_code ec;
  fs::remove_all(aside, ec);
  fs::rename(path, aside);
  fs::remove_all(aside);
}

/// A buffer's name without the `.pp<r>` that the pipeline gives the copy of
/// a global in the stage of rank r (colo-pipeline).
std::string unstaged(const Executable &exe, const std::string &name) {
  size_t dot = name.rfind(".pp");
  if (exe.pipelineStages() <= 1 || dot == std::string::npos || dot + 3 == name.size() ||
      name.find_first_not_of("0123456789", dot + 3) != std::string::npos)
    return name;
  return name.substr(0, dot);
}

/// The names checkpoints give a program's buffers, the same under every
/// plan: a parameter's PyTorch name, "<its PyTorch name>#<state>" for a
/// parameter's optimizer state, any other buffer's name.
struct CheckpointNames {
  std::vector<std::string> name;

  explicit CheckpointNames(const Executable &exe) : name(size_t(exe.numBuffers())) {
    std::map<std::string, std::string> params; // PyTorch names by unstaged name
    for (const auto &[id, torchName] : exe.parameters())
      params[unstaged(exe, exe.buffer(id).name())] = torchName;
    for (int32_t id = 0; id < exe.numBuffers(); ++id) {
      std::string base = unstaged(exe, exe.buffer(id).name());
      size_t hash = base.find('#');
      auto it = params.find(base.substr(0, hash));
      if (it == params.end()) {
        name[size_t(id)] = base;
      } else {
        name[size_t(id)] = it->second + (hash == std::string::npos ? "" : base.substr(hash));
      }
    }
  }
};

/// The buffers a checkpoint holds: STATE ones with storage of their own.
bool checkpointed(const Executable &exe, int32_t id) {
  return exe.buffer(id).kind() == Buffer::STATE && !exe.isAlias(id);
}

Checkpoint::Piece::Layout layoutOf(const Executable &exe, int32_t id) {
  return exe.buffer(id).has_shard() ? Checkpoint::Piece::Block : Checkpoint::Piece::Whole;
}

const char *layoutName(Checkpoint::Piece::Layout layout) {
  static const char *names[] = {"whole", "block"};
  return names[layout];
}

Shard shardOf(const Checkpoint::Tensor &t, const Checkpoint::Piece &p) {
  Shard s;
  for (int64_t d : t.shape)
    s.add_full_shape(d);
  s.set_dim(p.dim);
  s.set_groups(p.groups);
  s.set_flat(p.flat);
  s.set_flat_parts(p.flatParts);
  s.set_inner_dim(p.innerDim);
  s.set_inner_parts(p.innerParts);
  return s;
}

json shapeJson(const Shape &shape) { return json(shape); }

/// Reads the index's fields, each failure naming the file and the field.
struct IndexReader {
  std::string file;
  [[noreturn]] void fail(const std::string &what) const {
    throw Error(file + ": " + what);
  }
  const json &field(const json &object, const char *name, const std::string &where) const {
    if (!object.is_object() || !object.contains(name))
      fail(where + " has no '" + name + "'");
    return object.at(name);
  }
  int64_t integer(const json &object, const char *name, const std::string &where,
                  int64_t min = 0) const {
    const json &v = field(object, name, where);
    if (!v.is_number_integer() || v.get<int64_t>() < min)
      fail(where + ": '" + name + "' is not an integer >= " + std::to_string(min));
    return v.get<int64_t>();
  }
  std::string string(const json &object, const char *name, const std::string &where) const {
    const json &v = field(object, name, where);
    if (!v.is_string())
      fail(where + ": '" + name + "' is not a string");
    return v.get<std::string>();
  }
  Shape shape(const json &object, const char *name, const std::string &where) const {
    const json &v = field(object, name, where);
    Shape shape;
    if (v.is_array() && v.size() <= 64)
      for (const json &d : v) {
        if (!d.is_number_integer() || d.get<int64_t>() < 0)
          break;
        shape.push_back(d.get<int64_t>());
      }
    if (!v.is_array() || shape.size() != v.size() || numElements(shape) < 0 ||
        numElements(shape) > std::numeric_limits<int64_t>::max() / 8)
      fail(where + ": '" + name + "' is not a shape (at most 64 dimensions >= 0 whose "
                                  "product fits in memory)");
    return shape;
  }
};
} // namespace

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

void writeCheckpoint(const Session &session, Communicator *comm, const std::string &dir,
                     const CheckpointRun &run, int keep) {
  const Executable &exe = session.executable();
  int rank = comm ? comm->rank() : 0, world = comm ? comm->size() : 1;
  std::string name = stepName(run.step);
  fs::path tmp = fs::path(dir) / ("." + name + ".tmp");
  auto filesystemError = [&](const fs::filesystem_error &e) {
    return Error("cannot write checkpoint " + name + " in '" + dir + "': " +
                 e.code().message() + " (" + e.path1().string() + ")");
  };
  if (rank == 0) {
    try {
      fs::create_directories(dir);
      fs::remove_all(tmp); // what a crash left of an earlier attempt
      fs::create_directory(tmp);
    } catch (const fs::filesystem_error &e) {
      throw filesystemError(e);
    }
  }
  if (world > 1)
    comm->barrier();

  // This rank's tensors, as it holds them, and their description.
  CheckpointNames names(exe);
  std::set<std::string> parameters;
  for (const auto &[id, torchName] : exe.parameters())
    parameters.insert(torchName);
  std::vector<TensorView> views;
  std::vector<std::vector<char>> staging; // buffers the host cannot reach
  json pieces = json::array();
  for (int32_t id = 0; id < exe.numBuffers(); ++id) {
    if (!checkpointed(exe, id))
      continue;
    const Buffer &b = exe.buffer(id);
    const std::string &name = names.name[size_t(id)];
    Checkpoint::Piece::Layout layout = layoutOf(exe, id);
    staging.emplace_back();
    views.push_back({name, b.dtype(), exe.shape(id), session.hostBytes(id, staging.back())});
    json piece = {{"name", name},
                  {"dtype", safetensorsName(b.dtype())},
                  {"shape", shapeJson(exe.fullShape(id))},
                  {"parameter", parameters.count(name) > 0},
                  {"rank", rank},
                  {"file", rankFile(rank)},
                  {"stored", shapeJson(exe.shape(id))},
                  {"layout", layoutName(layout)}};
    if (layout == Checkpoint::Piece::Block) {
      auto [index, parts] = exe.shardBlock(id, rank);
      piece["dim"] = b.shard().dim();
      piece["groups"] = std::max<int64_t>(b.shard().groups(), 1);
      piece["flat"] = b.shard().flat();
      if (b.shard().flat_parts() > 0)
        piece["flat_parts"] = b.shard().flat_parts();
      if (b.shard().inner_parts() > 0) {
        piece["inner_dim"] = b.shard().inner_dim();
        piece["inner_parts"] = b.shard().inner_parts();
      }
      piece["index"] = index;
      piece["parts"] = parts;
    }
    pieces.push_back(std::move(piece));
  }
  writeSafetensors((tmp / rankFile(rank)).string(), views,
                   {{"format", kFormat}, {"rank", std::to_string(rank)},
                    {"step", std::to_string(run.step)}});

  std::vector<std::string> descriptions{pieces.dump()};
  if (world > 1) {
    std::string mine = descriptions[0];
    std::vector<std::vector<char>> all =
        comm->gatherBytes(std::vector<char>(mine.begin(), mine.end()));
    if (rank != 0)
      return;
    descriptions.clear();
    for (const std::vector<char> &d : all)
      descriptions.emplace_back(d.begin(), d.end());
  }

  // Rank 0: the index, once every rank's file is in place.
  json tensors = json::object();
  for (const std::string &d : descriptions)
    for (json &piece : json::parse(d)) {
      std::string key = piece["name"];
      json &tensor = tensors[key];
      if (tensor.is_null())
        tensor = {{"dtype", piece["dtype"]},
                  {"shape", piece["shape"]},
                  {"parameter", piece["parameter"]},
                  {"pieces", json::array()}};
      else if (tensor["dtype"] != piece["dtype"] || tensor["shape"] != piece["shape"])
        throw Error("cannot write checkpoint " + name + ": the ranks hold '" + key +
                    "' with different types");
      for (const char *field : {"name", "dtype", "shape", "parameter"})
        piece.erase(field);
      tensor["pieces"].push_back(std::move(piece));
    }
  const Mesh &mesh = exe.program().mesh();
  json index = {{"format", kFormat},
                {"version", kVersion},
                {"step", run.step},
                {"world_size", world},
                {"mesh",
                 {{"shape", json(std::vector<int64_t>(mesh.shape().begin(), mesh.shape().end()))},
                  {"axes", json(std::vector<std::string>(mesh.axes().begin(), mesh.axes().end()))}}},
                {"run", run.fields},
                {"tensors", std::move(tensors)}};
  std::string text = index.dump(1);
  writeFileAtomically((tmp / kIndex).string(), [&](std::ostream &out) { out << text << "\n"; });
  try {
    syncDirectory(tmp.string());
    fs::path final = fs::path(dir) / name;
    if (fs::exists(final)) // a checkpoint of this step from a run resumed earlier
      removeAside(final);
    fs::rename(tmp, final);
    syncDirectory(dir);
    if (keep <= 0)
      return;
    std::vector<std::pair<int64_t, fs::path>> steps;
    for (const fs::directory_entry &e : fs::directory_iterator(dir))
      if (int64_t step = stepOf(e.path().filename().string()); step >= 0 && e.is_directory())
        steps.emplace_back(step, e.path());
    std::sort(steps.rbegin(), steps.rend());
    for (size_t i = size_t(keep); i < steps.size(); ++i)
      if (steps[i].first < run.step)
        removeAside(steps[i].second);
  } catch (const fs::filesystem_error &e) {
    throw filesystemError(e);
  }
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

Checkpoint::~Checkpoint() = default;

std::string Checkpoint::latest(const std::string &dir) {
  std::error_code ec;
  int64_t best = -1;
  std::string path;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    int64_t step = stepOf(it->path().filename().string());
    if (step > best && isRegularFile((it->path() / kIndex).string())) {
      best = step;
      path = it->path().string();
    }
  }
  return path;
}

std::unique_ptr<Checkpoint> Checkpoint::open(const std::string &path) {
  std::string dir = path;
  if (!isRegularFile(joinPath(path, kIndex))) {
    if (!isDirectory(path))
      throw Error("cannot open checkpoint '" + path + "': no such directory");
    dir = latest(path);
    if (dir.empty())
      throw Error("'" + path + "' holds no checkpoint (no step-N directory with an " +
                  kIndex + ")");
  }
  std::unique_ptr<Checkpoint> c(new Checkpoint);
  c->path_ = dir;
  IndexReader r{joinPath(dir, kIndex)};
  if (std::error_code ec; fs::file_size(r.file, ec) > uint64_t(kMaxIndexBytes) && !ec)
    r.fail("larger than " + std::to_string(kMaxIndexBytes >> 20) + " MiB: not a colo index");
  json index;
  try {
    index = json::parse(readFile(r.file));
  } catch (const json::exception &e) {
    r.fail(std::string("not valid JSON (") + e.what() + ")");
  }
  if (!index.is_object() || !index.contains("format") || index["format"] != kFormat)
    r.fail(std::string("not a colo checkpoint index (no \"format\": \"") + kFormat + "\")");
  try {
    c->readIndex(&index, r.file);
  } catch (const json::exception &e) { // a field of the wrong type
    r.fail(std::string("malformed index: ") + e.what());
  }
  return c;
}

void Checkpoint::readIndex(const void *parsed, const std::string &file) {
  const json &index = *static_cast<const json *>(parsed);
  IndexReader r{file};
  Checkpoint *c = this;
  if (r.integer(index, "version", "the index") != kVersion)
    r.fail("version " + index["version"].dump() + ", but this colo reads version " +
           std::to_string(kVersion));
  c->run_.step = r.integer(index, "step", "the index");
  c->world_ = r.integer(index, "world_size", "the index", 1);
  const json &mesh = r.field(index, "mesh", "the index");
  c->meshShape_ = r.shape(mesh, "shape", "the mesh");
  if (int64_t ranks = numElements(c->meshShape_); ranks != c->world_)
    r.fail("world_size " + std::to_string(c->world_) + " is not the " + std::to_string(ranks) +
           " ranks of the mesh " + shapeString(c->meshShape_));
  const json &axes = r.field(mesh, "axes", "the mesh");
  if (!axes.is_array() || axes.size() != c->meshShape_.size())
    r.fail("the mesh's axes do not match its shape");
  for (const json &a : axes) {
    if (!a.is_string())
      r.fail("the mesh's axes are not strings");
    c->meshAxes_.push_back(a.get<std::string>());
  }
  if (const json &fields = r.field(index, "run", "the index"); fields.is_object())
    for (const auto &[k, v] : fields.items())
      if (v.is_string())
        c->run_.fields[k] = v.get<std::string>();

  const json &tensors = r.field(index, "tensors", "the index");
  if (!tensors.is_object())
    r.fail("'tensors' is not an object");
  for (const auto &[name, t] : tensors.items()) {
    std::string where = "tensor '" + name + "'";
    Tensor tensor;
    tensor.name = name;
    std::optional<DType> dtype = parseSafetensorsName(r.string(t, "dtype", where));
    if (!dtype)
      r.fail(where + ": unknown dtype " + t["dtype"].dump());
    tensor.dtype = *dtype;
    tensor.shape = r.shape(t, "shape", where);
    tensor.parameter = t.value("parameter", false);
    const json &pieces = r.field(t, "pieces", where);
    if (!pieces.is_array() || pieces.empty())
      r.fail(where + ": 'pieces' is not a non-empty list");
    for (const json &p : pieces) {
      std::string at = where + ", piece " + std::to_string(tensor.pieces.size());
      Piece piece;
      piece.rank = int(r.integer(p, "rank", at));
      if (piece.rank >= c->world_)
        r.fail(at + ": rank " + std::to_string(piece.rank) + " of a world of " +
               std::to_string(c->world_));
      piece.file = r.string(p, "file", at);
      if (piece.file.empty() || piece.file.find('/') != std::string::npos ||
          piece.file == "." || piece.file == "..")
        r.fail(at + ": file '" + piece.file + "' is not a plain file name");
      piece.shape = r.shape(p, "stored", at);
      std::string layout = r.string(p, "layout", at);
      if (layout == "whole") {
        if (piece.shape != tensor.shape)
          r.fail(at + ": a whole piece of shape " + shapeString(piece.shape));
      } else if (layout == "block") {
        piece.layout = Piece::Block;
        piece.dim = int(r.integer(p, "dim", at));
        piece.groups = r.integer(p, "groups", at, 1);
        piece.flat = p.value("flat", false);
        piece.flatParts = p.contains("flat_parts") ? r.integer(p, "flat_parts", at, 1) : 0;
        piece.innerParts = p.contains("inner_parts") ? r.integer(p, "inner_parts", at, 1) : 0;
        piece.innerDim = piece.innerParts ? int(r.integer(p, "inner_dim", at)) : 0;
        piece.parts = r.integer(p, "parts", at, 1);
        piece.index = r.integer(p, "index", at);
        Shard shard = shardOf(tensor, piece);
        if (piece.index >= piece.parts)
          r.fail(at + ": block " + std::to_string(piece.index) + " of " +
                 std::to_string(piece.parts));
        if (std::string problem = splitProblem(shard, piece.parts); !problem.empty())
          r.fail(at + ": " + problem);
        if (shardShape(shard, piece.parts) != piece.shape)
          r.fail(at + ": stored as " + shapeString(piece.shape) + ", not its block's " +
                 shapeString(shardShape(shard, piece.parts)));
      } else {
        r.fail(at + ": unknown layout '" + layout + "'");
      }
      tensor.pieces.push_back(std::move(piece));
    }
    c->byName_[name] = c->tensors_.size();
    c->tensors_.push_back(std::move(tensor));
  }
}

std::string Checkpoint::planDescription() const {
  std::string s;
  for (size_t i = 0; i < meshShape_.size(); ++i)
    s += (i ? " x " : "") + meshAxes_[i] + "=" + std::to_string(meshShape_[i]);
  return s.empty() ? "one rank" : s;
}

const Checkpoint::Tensor *Checkpoint::find(const std::string &name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : &tensors_[it->second];
}

const void *Checkpoint::pieceData(const Tensor &tensor, const Piece &piece) const {
  std::unique_ptr<SafetensorsFile> &file = files_[piece.file];
  if (!file)
    file = SafetensorsFile::open(joinPath(path_, piece.file));
  const SafetensorsFile::Entry *e = file->find(tensor.name);
  if (!e)
    throw Error(file->path() + ": no tensor '" + tensor.name + "', which the index puts there");
  if (e->dtype != tensor.dtype || e->shape != piece.shape)
    throw Error(file->path() + ": tensor '" + tensor.name + "' is " +
                typeString(e->dtype, e->shape) + " but the index says " +
                typeString(tensor.dtype, piece.shape));
  return file->data(*e);
}

void Checkpoint::release(const Tensor &tensor, const Piece &piece) const {
  if (auto it = files_.find(piece.file); it != files_.end())
    if (const SafetensorsFile::Entry *e = it->second->find(tensor.name))
      it->second->release(*e);
}

void Checkpoint::release(const Tensor &tensor) const {
  for (const Piece &p : tensor.pieces)
    release(tensor, p);
}

void Checkpoint::readWhole(const Tensor &tensor, void *out) const {
  int64_t size = dtypeSize(tensor.dtype);
  for (const Piece &p : tensor.pieces)
    if (p.layout == Piece::Whole) {
      std::memcpy(out, pieceData(tensor, p), size_t(numElements(tensor.shape) * size));
      return;
    }
  // One complete set of blocks of one layout.
  std::string missing;
  for (const Piece &first : tensor.pieces) {
    if (first.layout != Piece::Block)
      continue;
    std::vector<const Piece *> blocks(size_t(first.parts));
    for (const Piece &p : tensor.pieces)
      if (p.layout == Piece::Block && p.sameSplit(first))
        blocks[size_t(p.index)] = &p;
    auto gap = std::find(blocks.begin(), blocks.end(), nullptr);
    if (gap != blocks.end()) {
      missing = "block " + std::to_string(gap - blocks.begin()) + " of " +
                std::to_string(first.parts) + " is missing";
      continue;
    }
    Shard shard = shardOf(tensor, first);
    for (const Piece *p : blocks) {
      copyBlockIn(shard, p->index, p->parts, size, pieceData(tensor, *p), out);
      release(tensor, *p); // the whole tensor is in `out` already: one copy of it
    }
    return;
  }
  if (missing.empty())
    throw Error(path_ + ": tensor '" + tensor.name +
                "' is held in a layout that only the plan that wrote it (" +
                planDescription() +
                ") reads: the optimizer state of ZeRO over a tensor-parallel block. "
                "Resume under that plan");
  throw Error(path_ + ": the pieces of tensor '" + tensor.name + "' do not cover it (" +
              missing + ")");
}

ResumeReport resumeFrom(Session &session, Communicator *comm, const Checkpoint &checkpoint,
                        const std::vector<std::string> &ignore) {
  const Executable &exe = session.executable();
  int rank = comm ? comm->rank() : 0, world = comm ? comm->size() : 1;
  auto ignored = [&](const std::string &name) {
    for (const std::string &pattern : ignore)
      if (::fnmatch(pattern.c_str(), name.c_str(), 0) == 0)
        return true;
    return false;
  };
  ResumeReport report;
  report.step = checkpoint.run().step;
  CheckpointNames names(exe);
  const std::vector<Checkpoint::Tensor> &tensors = checkpoint.tensors();
  std::vector<int64_t> taken(tensors.size(), 0);
  for (int32_t id = 0; id < exe.numBuffers(); ++id) {
    if (!checkpointed(exe, id))
      continue;
    const std::string &name = names.name[size_t(id)];
    const Checkpoint::Tensor *t = checkpoint.find(name);
    if (t)
      taken[size_t(t - tensors.data())] = 1;
    if (ignored(name)) {
      report.ignored.push_back(name);
      continue;
    }
    if (!t)
      throw Error(checkpoint.path() + ": holds no tensor '" + name + "' (" +
                  exe.describeBuffer(id) +
                  " of this program); add it to --resume-ignore to keep its initial value");
    const Buffer &b = exe.buffer(id);
    Checkpoint::Piece::Layout layout = layoutOf(exe, id);
    Shape shape = exe.fullShape(id);
    if (t->dtype != b.dtype() || t->shape != shape)
      throw Error(checkpoint.path() + ": tensor '" + name + "' is " +
                  typeString(t->dtype, t->shape) + " in the checkpoint but " +
                  typeString(b.dtype(), shape) + " in this program (" +
                  exe.describeBuffer(id) + ")");
    int64_t bytes = exe.byteSize(id);
    std::pair<int64_t, int64_t> block = b.has_shard() ? exe.shardBlock(id, rank)
                                                      : std::pair<int64_t, int64_t>(0, 1);
    // This rank's own piece, in the same layout: copied back as it was.
    auto own = std::find_if(t->pieces.begin(), t->pieces.end(), [&](const auto &p) {
      if (p.rank != rank || p.layout != layout || p.shape != exe.shape(id))
        return false;
      return layout == Checkpoint::Piece::Whole ||
             (p.dim == b.shard().dim() && p.groups == std::max<int64_t>(b.shard().groups(), 1) &&
              p.flat == b.shard().flat() && p.flatParts == b.shard().flat_parts() &&
              p.innerDim == b.shard().inner_dim() && p.innerParts == b.shard().inner_parts() &&
              p.index == block.first && p.parts == block.second);
    });
    if (own != t->pieces.end()) {
      session.writeBuffer(id, checkpoint.pieceData(*t, *own));
      ++report.copied;
      continue;
    }
    std::vector<char> whole(size_t(numElements(t->shape) * dtypeSize(t->dtype)));
    checkpoint.readWhole(*t, whole.data());
    if (b.has_shard()) {
      std::vector<char> mine(static_cast<size_t>(bytes));
      copyBlockOut(b.shard(), block.first, block.second, dtypeSize(b.dtype()), whole.data(),
                   mine.data());
      whole = std::move(mine);
    }
    session.writeBuffer(id, whole.data());
    ++report.resharded;
  }
  // Every tensor of the checkpoint must go somewhere on some rank.
  if (world > 1 && !taken.empty())
    comm->allReduce(taken.data(), int64_t(taken.size()), I64, ReduceOp::Max, comm->world());
  for (size_t i = 0; i < tensors.size(); ++i)
    if (!taken[i] && !ignored(tensors[i].name))
      throw Error(checkpoint.path() + ": tensor '" + tensors[i].name +
                  "' matches no state buffer of this program on any rank; add it to "
                  "--resume-ignore to leave it out");
  session.setStepsRun(report.step);
  return report;
}

} // namespace colo::runtime
