//===- Safetensors.h - Reading and writing .safetensors files ----*- C++ -*-===//
//
// The format (https://github.com/huggingface/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]},
//    "__metadata__": {"key": "value"}}
// then the tensors' raw little-endian bytes, offsets relative to the end of
// the header. Reading maps the file and checks every entry (dtype known,
// offsets inside the data and consistent with dtype and shape, no overlaps)
// before anything is used; writing is atomic.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_SAFETENSORS_H
#define COLO_RUNTIME_SAFETENSORS_H

#include "colo/Runtime/DType.h"
#include "colo/Runtime/ExternalData.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace colo::runtime {

/// An open, validated safetensors file. The data stays memory mapped.
class SafetensorsFile {
public:
  struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    int64_t begin = 0, end = 0; ///< byte range in the data section
  };

  /// Opens and validates `path`; throws Error naming the file and the entry.
  static std::unique_ptr<SafetensorsFile> open(const std::string &path);

  const std::string &path() const { return path_; }
  /// Entries in file order (by data offset).
  const std::vector<Entry> &entries() const { return entries_; }
  /// nullptr if there is no tensor `name`.
  const Entry *find(const std::string &name) const;
  /// The bytes of an entry (end - begin of them).
  const void *data(const Entry &entry) const;
  /// Drops the mapped pages of an entry from memory (MappedRegion::release).
  void release(const Entry &entry) const;
  const std::map<std::string, std::string> &metadata() const { return metadata_; }

private:
  SafetensorsFile() = default;
  std::string path_;
  std::vector<Entry> entries_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
  std::unique_ptr<MappedRegion> region_;
  int64_t dataStart_ = 0;
};

/// One tensor to write.
struct TensorView {
  std::string name;
  DType dtype;
  Shape shape;
  const void *data; ///< numElements(shape) * dtypeSize(dtype) bytes
};

/// Writes `tensors` (names unique) and `metadata` to `path` atomically. The
/// header is padded with spaces to a multiple of 8 bytes so the data is
/// aligned, as the reference implementation does.
void writeSafetensors(const std::string &path, const std::vector<TensorView> &tensors,
                      const std::map<std::string, std::string> &metadata = {});
/// The same file with the data streamed: `writeData(i, out)` writes tensor
/// i's bytes (numElements(shape) * dtypeSize(dtype), exactly) when its turn
/// comes, so a writer that puts tensors together one at a time holds one at a
/// time; the views' `data` is not read.
void writeSafetensors(const std::string &path, const std::vector<TensorView> &tensors,
                      const std::map<std::string, std::string> &metadata,
                      const std::function<void(size_t, std::ostream &)> &writeData);

} // namespace colo::runtime

#endif
