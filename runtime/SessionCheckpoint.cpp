//===- SessionCheckpoint.cpp - A session's weights, state and snapshots ---===//
//
// Saving (rank 0 puts sharded weights together from every rank's blocks),
// loading and the in-memory snapshots of the last good weights.

#include "colo/Runtime/Session.h"
#include "colo/Runtime/Error.h"
#include "colo/Runtime/Files.h"
#include "colo/Runtime/Safetensors.h"
#include "Shard.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

namespace colo::runtime {

namespace {
/// saveWeights' point-to-point tag. It runs after the steps, when no message
/// of the program is in flight (MPI's tag bound is at least 32767).
constexpr int kSaveTag = 16383;

/// Bytes of the data of `block` (the block of a sharded tensor).
int64_t blockBytes(const WeightBlock &block) {
  Shape shape = block.has_shard()
                    ? shardShape(block.shard(), block.parts())
                    : Shape(block.full_shape().begin(), block.full_shape().end());
  return numElements(shape) * dtypeSize(block.dtype());
}

/// A buffer that grows to the largest request, uninitialized.
struct Staging {
  std::unique_ptr<char[]> data;
  int64_t size = 0;
  char *get(int64_t bytes) {
    if (bytes > size) {
      data.reset(); // the old one goes first: the peak is the new size
      data.reset(new char[size_t(bytes)]);
      size = bytes;
    }
    return data.get();
  }
};
} // namespace

void Session::saveWeights(const std::string &path) const {
  // Every rank describes the blocks it holds of sharded weights, and the
  // first replica of each pipeline stage its whole ones, in name order; rank
  // 0 gathers the descriptions, then takes the tensors in name order: one it
  // holds whole is written from its buffer, any other is put together from
  // its blocks, which the other ranks send in the same order straight from
  // their buffers. No copy of all the weights is ever made.
  MeshPosition at = exe_->position(rank());
  bool firstReplica = true;
  for (size_t axis = 0; axis < at.coords.size(); ++axis)
    if (int(axis) != exe_->pipelineAxis() && at.coords[axis] != 0)
      firstReplica = false;
  std::vector<std::pair<std::string, int32_t>> held; // PyTorch name, buffer
  for (const auto &[id, torchName] : exe_->parameters())
    if (exe_->buffer(id).has_shard() || firstReplica)
      held.emplace_back(torchName, id);
  std::sort(held.begin(), held.end());
  std::vector<WeightBlocks> blocks(1); // per rank, without the data
  for (const auto &[torchName, id] : held) {
    const Buffer &b = exe_->buffer(id);
    WeightBlock *block = blocks[0].add_blocks();
    block->set_name(torchName);
    block->set_dtype(b.dtype());
    for (int64_t d : exe_->fullShape(id))
      block->add_full_shape(d);
    auto [index, parts] =
        b.has_shard() ? exe_->shardBlock(id, rank()) : std::pair<int64_t, int64_t>(0, 1);
    if (b.has_shard())
      *block->mutable_shard() = b.shard();
    block->set_index(index);
    block->set_parts(parts);
  }
  if (comm_ && comm_->size() > 1) {
    std::string mine = blocks[0].SerializeAsString();
    std::vector<std::vector<char>> all =
        comm_->gatherBytes(std::vector<char>(mine.begin(), mine.end()));
    if (rank() != 0) {
      // From host memory, as rank 0 receives it (a GPU's go through MPI).
      std::vector<char> staging;
      for (const auto &[torchName, id] : held)
        comm_->send(hostBytes(id, staging), exe_->byteSize(id), 0, kSaveTag);
      return;
    }
    blocks.resize(all.size());
    for (size_t r = 1; r < all.size(); ++r)
      if (!blocks[r].ParseFromArray(all[r].data(), int(all[r].size())))
        throw Error("saveWeights: rank " + std::to_string(r) + " sent unreadable weights");
  }

  // Each tensor, in name order, with its blocks: (rank, position in its list).
  std::map<std::string, std::vector<std::pair<size_t, int>>> parts;
  for (size_t r = 0; r < blocks.size(); ++r)
    for (int i = 0; i < blocks[r].blocks_size(); ++i)
      parts[blocks[r].blocks(i).name()].emplace_back(r, i);
  std::vector<TensorView> tensors;
  std::vector<const std::vector<std::pair<size_t, int>> *> partsOf;
  for (const auto &[name, list] : parts) {
    const WeightBlock &first = blocks[list[0].first].blocks(list[0].second);
    tensors.push_back({name, first.dtype(),
                       Shape(first.full_shape().begin(), first.full_shape().end()),
                       nullptr});
    partsOf.push_back(&list);
  }
  Staging whole, received;
  auto staged = [&] {
    peakSaving_ = std::max(peakSaving_, whole.size + received.size);
    noteExtra(comm_ ? comm_->stagingBytes() : 0, whole.size + received.size);
  };
  // Rank 0's own blocks where the host cannot reach them: one at a time.
  std::vector<char> mine;
  writeSafetensors(path, tensors, {{"format", "pt"}}, [&](size_t t, std::ostream &out) {
    int64_t bytes = numElements(tensors[t].shape) * dtypeSize(tensors[t].dtype);
    const char *source = nullptr;
    for (auto [r, i] : *partsOf[t])
      if (r == 0 && !blocks[0].blocks(i).has_shard())
        source = static_cast<const char *>(hostBytes(held[size_t(i)].second, mine));
    char *full = source ? nullptr : whole.get(bytes);
    for (auto [r, i] : *partsOf[t]) {
      const WeightBlock &block = blocks[r].blocks(i);
      int64_t size = blockBytes(block);
      const void *data;
      if (r == 0) {
        data = source ? source : hostBytes(held[size_t(i)].second, mine);
      } else if (full && !block.has_shard() && size == bytes) {
        comm_->recv(full, size, int(r), kSaveTag); // a whole one, in place
        staged();
        continue;
      } else {
        char *in = received.get(size);
        comm_->recv(in, size, int(r), kSaveTag);
        data = in;
      }
      staged();
      if (!full) // another copy of a tensor rank 0 holds whole (tied weights)
        continue;
      if (block.has_shard())
        copyBlockIn(block.shard(), block.index(), block.parts(), dtypeSize(block.dtype()),
                    data, full);
      else
        std::memcpy(full, data, size_t(bytes));
    }
    out.write(source ? source : full, std::streamsize(bytes));
  });
}

void Session::saveState(const std::string &path) const {
  std::vector<TensorView> tensors;
  std::vector<std::vector<char>> staging; // where the host cannot reach a buffer
  for (int32_t id = 0; id < exe_->numBuffers(); ++id)
    if (!exe_->isAlias(id) && exe_->buffer(id).kind() == Buffer::STATE) {
      staging.emplace_back();
      tensors.push_back({exe_->buffer(id).name(), exe_->buffer(id).dtype(), exe_->shape(id),
                         hostBytes(id, staging.back())});
    }
  writeSafetensors(path, tensors,
                   {{"format", "colo-state"}, {"steps_run", std::to_string(steps_)}});
}

LoadReport Session::loadWeights(const std::string &path) {
  std::unique_ptr<SafetensorsFile> file = SafetensorsFile::open(path);
  std::map<std::string, int32_t> byTorchName;
  for (const auto &[id, torchName] : exe_->parameters())
    byTorchName[torchName] = id;
  LoadReport report;
  std::vector<char> covered(exe_->numBuffers(), 0);
  // Check everything before writing anything.
  std::vector<std::pair<const SafetensorsFile::Entry *, int32_t>> plan;
  for (const SafetensorsFile::Entry &e : file->entries()) {
    int32_t id = -1;
    auto it = byTorchName.find(e.name);
    if (it != byTorchName.end()) {
      id = it->second;
    } else {
      int32_t b = exe_->bufferId(e.name);
      Buffer::Kind kind = b >= 0 ? exe_->buffer(b).kind() : Buffer::TEMP;
      if (kind == Buffer::STATE || kind == Buffer::CONSTANT)
        id = b;
    }
    if (id < 0) {
      report.unused.push_back(e.name);
      continue;
    }
    DType dtype = exe_->buffer(id).dtype();
    if (e.dtype != dtype || e.shape != exe_->fullShape(id))
      throw Error(path + ": tensor '" + e.name + "' is " + typeString(e.dtype, e.shape) +
                  " but " + exe_->describeBuffer(id) + " is " +
                  typeString(dtype, exe_->fullShape(id)));
    plan.emplace_back(&e, id);
  }
  if (plan.empty() && !file->entries().empty())
    throw Error(
        path + ": none of its " + std::to_string(file->entries().size()) +
        " tensors names a parameter or state buffer of the program (the first is '" +
        file->entries().front().name + "')");
  for (auto [e, id] : plan) {
    fill(id, file->data(*e));
    covered[id] = 1;
    report.loaded.push_back(e->name);
  }
  for (const auto &[id, torchName] : exe_->parameters())
    if (!covered[id])
      report.missing.push_back(torchName);
  return report;
}

void Session::setSnapshots(bool on) {
  snapshots_ = on;
  haveSnapshot_ = false;
  snapshot_.clear();
  if (!on)
    return;
  for (const auto &[id, torchName] : exe_->parameters())
    if (exe_->buffer(id).kind() == Buffer::STATE)
      snapshot_.emplace_back(id, std::vector<char>(size_t(exe_->byteSize(id))));
}

bool Session::restoreSnapshot() {
  if (!haveSnapshot_)
    return false;
  for (auto &[id, copy] : snapshot_)
    writeBuffer(id, copy.data());
  return true;
}

int64_t Session::snapshotBytes() const {
  int64_t total = 0;
  for (const auto &[id, torchName] : exe_->parameters())
    if (exe_->buffer(id).kind() == Buffer::STATE)
      total += exe_->byteSize(id);
  return total;
}

} // namespace colo::runtime
