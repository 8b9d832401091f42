//===- Executable.h - A compiled training step, loaded and checked -*- C++ -*-===//
//
// An executable directory holds program.pb (a colo.runtime.Program),
// kernels.so (generated kernels; kernels.cuda.pb for target cuda) and
// state.safetensors (initial STATE and CONSTANT values). Executable::load
// reads and validates all three before anything runs: buffer ids in range,
// step operands large enough for their geometry and of the right dtype, arena
// offsets inside the arena, aliases acyclic and no larger than their targets,
// every kernel exported by the library (or, for CUDA, present with launches
// of valid geometry on the step's buffers and modules that are in the file),
// and every STATE/CONSTANT buffer present in state.safetensors with
// its dtype and shape. Problems are thrown as Error naming the file and the
// step or buffer. A Session (Session.h) runs it.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_EXECUTABLE_H
#define COLO_RUNTIME_EXECUTABLE_H

#include "colo/Runtime/DType.h"
#include "colo/Runtime/Safetensors.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace colo::runtime {

/// Where one rank sits in the program's mesh.
struct MeshPosition {
  std::vector<int64_t> coords; ///< one per mesh axis
  int64_t batchPart = 0;       ///< its part of the batch (Program.batch_axis)
};

class Executable {
public:
  using KernelFn = void (*)(void **args);

  /// Loads and validates the executable in directory `dir`; of a pipeline,
  /// the stage that world rank `rank` runs.
  static std::shared_ptr<const Executable> load(const std::string &dir, int rank = 0);
  /// Validates an in-memory program whose kernels library and
  /// state.safetensors are in `dir` (files that the program does not need may
  /// be absent).
  static std::shared_ptr<const Executable> create(Program program,
                                                  const std::string &dir, int rank = 0);

  ~Executable();
  Executable(const Executable &) = delete;
  Executable &operator=(const Executable &) = delete;

  const Program &program() const { return program_; }
  const std::string &directory() const { return dir_; }
  const Buffer &buffer(int32_t id) const { return program_.buffers(id); }
  int32_t numBuffers() const { return program_.buffers_size(); }
  /// -1 if there is no buffer `name`.
  int32_t bufferId(const std::string &name) const;
  /// The buffer whose storage `id` uses (itself unless it is an alias).
  int32_t storageOf(int32_t id) const { return storage_[id]; }
  bool isAlias(int32_t id) const { return storage_[id] != id; }
  int64_t numElements(int32_t id) const { return elements_[id]; }
  int64_t byteSize(int32_t id) const;
  Shape shape(int32_t id) const;
  /// The whole tensor's shape: the shard's full_shape, else shape(id).
  Shape fullShape(int32_t id) const {
    const Buffer &b = buffer(id);
    return b.has_shard() ? Shape(b.shard().full_shape().begin(), b.shard().full_shape().end())
                         : shape(id);
  }
  /// A sharded buffer's block on `rank`: (its index, the number of blocks).
  std::pair<int64_t, int64_t> shardBlock(int32_t id, int rank) const;
  /// INPUT buffers (not aliases), in buffer order.
  const std::vector<int32_t> &inputs() const { return inputs_; }
  /// The kernel of step `index` (a KernelCall), resolved at load; null in
  /// a program for CUDA.
  KernelFn kernel(int index) const { return kernels_[index]; }
  /// A program for CUDA: its kernels.cuda.pb, and the kernel step `index`
  /// calls; null otherwise.
  const CudaKernels *cudaKernels() const { return cudaKernels_.get(); }
  const CudaKernel *cudaKernel(int index) const;
  /// The initial state, or null if the program has no STATE/CONSTANT buffers.
  const SafetensorsFile *initialState() const { return state_.get(); }
  /// Parameter buffer id -> PyTorch name, in buffer order.
  const std::vector<std::pair<int32_t, std::string>> &parameters() const {
    return params_;
  }
  /// -1 if none.
  int32_t stepCounter() const { return stepCounter_; }
  /// Ranks the program runs on: the product of the mesh's sizes (1 without).
  int64_t worldSize() const { return worldSize_; }
  /// Pipeline stages of the executable (1 without) and the one loaded.
  int64_t pipelineStages() const { return pipelineStages_; }
  int64_t pipelineStage() const { return pipelineStage_; }
  /// The mesh axis of the pipeline stages, -1 without.
  int pipelineAxis() const { return pipelineAxis_; }
  /// Parts of the batch the data source produces per step (1: no split).
  int64_t batchParts() const { return batchParts_; }
  MeshPosition position(int rank) const;
  /// The world ranks of `rank`'s group along mesh `axes`, in group order.
  std::vector<int> group(int rank, const std::vector<int> &axes) const;
  /// "step 3 'blocks.0.attn' (gemm)" for messages.
  std::string describeStep(int index) const;
  /// "buffer 5 'fc1.weight'".
  std::string describeBuffer(int32_t id) const;

private:
  Executable() = default;
  void validate();
  void validateMesh();
  void validateShard(int32_t id);
  void validateBuffers();
  void validateSteps();
  /// Each overlapped collective waited for once, later, and its buffers
  /// untouched in between.
  void validateWaits();
  void loadKernels();
  void loadCudaKernels();
  void loadState();
  [[noreturn]] void fail(const std::string &message) const;

  Program program_;
  std::string dir_, programPath_;
  std::map<std::string, int32_t> byName_;
  std::vector<int32_t> storage_;
  std::vector<int64_t> elements_;
  std::vector<int32_t> inputs_;
  std::vector<KernelFn> kernels_;
  std::unique_ptr<CudaKernels> cudaKernels_;
  std::vector<int> cudaKernelOf_;
  std::vector<std::pair<int32_t, std::string>> params_;
  std::unique_ptr<SafetensorsFile> state_;
  int32_t stepCounter_ = -1;
  int64_t worldSize_ = 1, batchParts_ = 1;
  int64_t pipelineStages_ = 1, pipelineStage_ = 0;
  int pipelineAxis_ = -1;
  void *library_ = nullptr;
};

/// "kernel", "gemm", "conv", "pool", "copy", "collective", "wait" or
/// "empty": what a step does.
const char *stepKind(const Step &step);

/// Calls `f` with each buffer id that `step` reads or writes (a wait: none;
/// its collective's buffers are the collective step's).
void forEachBuffer(const Step &step, const std::function<void(int32_t)> &f);

} // namespace colo::runtime

#endif
