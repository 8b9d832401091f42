//===- Checkpoint.h - Sharded checkpoints that resume under any plan -*- C++ -*-===//
//
// A checkpoint directory holds one subdirectory per checkpoint:
//   DIR/step-00000012/rank-00000.safetensors   rank 0's STATE buffers as held
//   DIR/step-00000012/rank-00001.safetensors   ...
//   DIR/step-00000012/index.json               every tensor -> its pieces
// Each rank writes its own file (no gather); rank 0 writes the index once
// every file is durable, into a temporary directory that it then renames to
// step-N, so a crash at any instant leaves every step-N directory whole.
// Reading puts each tensor the new plan holds together from the pieces that
// the old plan wrote (resharding), or copies a rank's own piece back when
// the layout is the same. docs/checkpoints.md describes the format.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_CHECKPOINT_H
#define COLO_RUNTIME_CHECKPOINT_H

#include "colo/Runtime/DType.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace colo::runtime {

class Communicator;
class SafetensorsFile;
class Session;

/// What a run records with its tensors to continue where it stopped.
struct CheckpointRun {
  int64_t step = 0; ///< training steps completed
  /// Free-form strings (the data source, its seed), shown and compared on
  /// resume.
  std::map<std::string, std::string> fields;
};

/// Writes checkpoint `run.step` of `session` into `dir` (created if needed):
/// every rank calls it (`comm` may be null for one rank). Keeps the newest
/// `keep` checkpoints of `dir` (0: all), removing older ones only once the
/// new one is whole. Throws Error on any failure, leaving the previous
/// checkpoints as they were.
void writeCheckpoint(const Session &session, Communicator *comm, const std::string &dir,
                     const CheckpointRun &run, int keep);

/// A checkpoint, its index read and checked (names, dtypes, shapes, the
/// pieces' layouts and files); the rank files are opened on first use.
class Checkpoint {
public:
  /// One rank's part of a tensor, as that rank held it.
  struct Piece {
    int rank = 0;
    std::string file;          ///< in the checkpoint directory
    Shape shape;               ///< as stored
    enum Layout { Whole, Block } layout = Whole;
    /// Block: Program.proto's Shard fields, and which block of how many.
    int dim = 0, innerDim = 0;
    int64_t groups = 1, index = 0, parts = 1, flatParts = 0, innerParts = 0;
    bool flat = false;
    /// Whether `other` cuts the tensor the same way (any block of it).
    bool sameSplit(const Piece &other) const {
      return dim == other.dim && groups == other.groups && flat == other.flat &&
             flatParts == other.flatParts && innerDim == other.innerDim &&
             innerParts == other.innerParts && parts == other.parts;
    }
  };
  struct Tensor {
    std::string name; ///< PyTorch name for parameters
    DType dtype;
    Shape shape; ///< the whole tensor's
    bool parameter = false;
    std::vector<Piece> pieces;
  };

  ~Checkpoint();
  /// `path` is a checkpoint (holding index.json) or a checkpoint directory,
  /// whose newest whole checkpoint is opened. Throws Error naming the file
  /// and the entry on anything malformed.
  static std::unique_ptr<Checkpoint> open(const std::string &path);
  /// The newest whole checkpoint in checkpoint directory `dir` ("" if none).
  static std::string latest(const std::string &dir);

  const std::string &path() const { return path_; }
  const CheckpointRun &run() const { return run_; }
  int64_t worldSize() const { return world_; }
  /// The mesh of the plan that wrote it: "dp=2", "pp=2 x tp=2", "one rank".
  std::string planDescription() const;
  const Shape &meshShape() const { return meshShape_; }
  /// In name order.
  const std::vector<Tensor> &tensors() const { return tensors_; }
  const Tensor *find(const std::string &name) const;

  /// The bytes of `piece` of `tensor` (mapped, not copied).
  const void *pieceData(const Tensor &tensor, const Piece &piece) const;
  /// Writes the whole of `tensor` (numElements(shape) * dtypeSize bytes) to
  /// `out`, dropping each block's mapped pages once copied. Throws Error if
  /// its pieces are rank-local or do not cover it.
  void readWhole(const Tensor &tensor, void *out) const;
  /// Drops the mapped pages of the pieces of `tensor` from memory, once
  /// read (an export goes through every tensor once).
  void release(const Tensor &tensor) const;

private:
  Checkpoint() = default;
  /// The fields of the parsed index (a nlohmann::json) of file `file`.
  void readIndex(const void *index, const std::string &file);
  void release(const Tensor &tensor, const Piece &piece) const;
  std::string path_;
  CheckpointRun run_;
  int64_t world_ = 1;
  Shape meshShape_;
  std::vector<std::string> meshAxes_;
  std::vector<Tensor> tensors_;
  std::map<std::string, size_t> byName_;
  mutable std::map<std::string, std::unique_ptr<SafetensorsFile>> files_;
};

/// What resumeFrom did.
struct ResumeReport {
  int64_t step = 0;
  int64_t copied = 0;    ///< tensors copied back as this rank wrote them
  int64_t resharded = 0; ///< tensors put together from another layout
  std::vector<std::string> ignored; ///< names matched by an ignore pattern
};

/// Loads every STATE buffer of `session` from `checkpoint`, each named as
/// in the checkpoint: a parameter by its PyTorch name, its optimizer state
/// "<PyTorch name>#<state>" ("h.0.w#exp_avg"), any other by its buffer name: its own piece
/// when this rank wrote it in the same layout (bit for bit), otherwise its
/// block of the whole tensor put together from the pieces. Every rank calls
/// it (`comm` may be null). Refuses, naming the tensor, a dtype or shape that
/// differs, a state buffer the checkpoint lacks and a checkpoint tensor no
/// rank takes, unless its name matches one of `ignore` (shell patterns,
/// fnmatch); an ignored buffer keeps its initial value.
ResumeReport resumeFrom(Session &session, Communicator *comm, const Checkpoint &checkpoint,
                        const std::vector<std::string> &ignore = {});

} // namespace colo::runtime

#endif
