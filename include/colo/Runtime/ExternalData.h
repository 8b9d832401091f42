#ifndef COLO_RUNTIME_EXTERNALDATA_H
#define COLO_RUNTIME_EXTERNALDATA_H

#include <cstdint>
#include <string>

namespace colo::runtime {

/// A read-only view of bytes [offset, offset + length) of a file, memory
/// mapped so that a weight is paged in only when it is touched. This is how
/// the runtime reads `#colo.external` weights.
class MappedRegion {
public:
  /// Maps the region; on failure `ok()` is false and `error()` says why.
  MappedRegion(const std::string &path, int64_t offset, int64_t length);
  ~MappedRegion();
  MappedRegion(const MappedRegion &) = delete;
  MappedRegion &operator=(const MappedRegion &) = delete;

  bool ok() const { return data_ != nullptr || length_ == 0; }
  const std::string &error() const { return error_; }
  const void *data() const { return data_; }
  int64_t size() const { return length_; }
  /// Drops the pages of bytes [begin, end) of the region from this process's
  /// memory (they are read again from the file if touched): a reader that
  /// goes through a large file once keeps only what it uses now.
  void release(int64_t begin, int64_t end) const;

private:
  void *base_ = nullptr;
  const void *data_ = nullptr;
  int64_t mappedLength_ = 0, length_ = 0;
  std::string error_;
};

} // namespace colo::runtime

#endif
