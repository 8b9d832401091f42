//===- DataSource.h - Filling a program's inputs step by step ----*- C++ -*-===//
//
// A DataSource writes the next batch into every INPUT buffer of a program
// (through an InputSink, which a Session is) before each step. Sources:
//   FILE.npy   one array for a program with one input
//   FILE.npz   one array per input, named like the INPUT buffer
//              (leading dimension = samples; each step takes the next
//              batch rows, wrapping around)
//   FILE (with tokenDType uint8|uint16|int32)   a flat binary of token ids; each
//              [batch, seq] integer input takes batch*seq consecutive tokens
//   "synthetic"   deterministic pseudo-random data
// docs/runtime.md has the details (dtype conversions, labels, masks).
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_DATASOURCE_H
#define COLO_RUNTIME_DATASOURCE_H

#include "colo/Runtime/Executable.h"

#include <cstdint>
#include <memory>
#include <string>

namespace colo::runtime {

struct DataOptions {
  /// "uint8", "uint16" or "int32": read the data file as a flat binary of token ids.
  std::string tokenDType;
  /// Token data: inputs named `labels` or `targets` take the window one token
  /// ahead of the others (next-token targets, nanoGPT style). Off: every token
  /// input takes the same window (Hugging Face style, the model shifts).
  bool shiftLabels = false;
  /// Synthetic data: the seed; the data of step k depends only on it and k.
  uint64_t seed = 0;
  /// Data parallelism: each step reads the batch of Executable::batchParts()
  /// ranks (the inputs' first dimension times that), and this rank takes the
  /// part numbered `part` (MeshPosition::batchPart), so every plan sees the
  /// same global batches as one rank would.
  int64_t part = 0;
};

/// Where a data source writes a step's inputs.
class InputSink {
public:
  virtual ~InputSink();
  /// The storage of INPUT buffer `id` (Executable::byteSize(id) bytes), which
  /// the caller fills completely for the next step.
  virtual void *inputStorage(int32_t id) = 0;
};

class DataSource {
public:
  virtual ~DataSource();
  /// Writes the next batch into every INPUT of `inputs`. Throws Error on bad
  /// data (a token out of range).
  virtual void next(InputSink &inputs) = 0;
  /// Positions the source as if `steps` batches had been taken since it was
  /// opened (resuming a run from a checkpoint): the next batch is that step's.
  virtual void seek(int64_t steps) = 0;
  /// One line for people: "data.npz: 60000 samples, 469 steps per epoch".
  virtual std::string description() const = 0;
};

/// Opens `spec` (a file or "synthetic") for the inputs of `exe`, checking
/// names, dtypes and shapes; throws Error naming the array and both shapes.
/// `exe` must outlive the source.
std::unique_ptr<DataSource> openDataSource(const std::string &spec, const Executable &exe,
                                           const DataOptions &options = {});

} // namespace colo::runtime

#endif
