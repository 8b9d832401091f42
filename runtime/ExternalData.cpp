#include "colo/Runtime/ExternalData.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace colo::runtime {

MappedRegion::MappedRegion(const std::string &path, int64_t offset, int64_t length)
    : length_(length) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    error_ = "cannot open '" + path + "': " + std::strerror(errno);
    return;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || offset < 0 || length < 0 ||
      offset + length > static_cast<int64_t>(st.st_size)) {
    error_ = "'" + path + "' is too short: needs " + std::to_string(offset + length) +
             " bytes";
    ::close(fd);
    return;
  }
  if (length > 0) {
    // mmap offsets must be page aligned; map from the page holding `offset`.
    int64_t page = ::sysconf(_SC_PAGESIZE);
    int64_t aligned = offset / page * page;
    mappedLength_ = length + (offset - aligned);
    base_ = ::mmap(nullptr, mappedLength_, PROT_READ, MAP_PRIVATE, fd, aligned);
    if (base_ == MAP_FAILED) {
      base_ = nullptr;
      error_ = "cannot map '" + path + "': " + std::strerror(errno);
    } else {
      data_ = static_cast<const char *>(base_) + (offset - aligned);
    }
  }
  ::close(fd);
}

MappedRegion::~MappedRegion() {
  if (base_)
    ::munmap(base_, mappedLength_);
}

void MappedRegion::release(int64_t begin, int64_t end) const {
  // Whole pages inside the range only: a neighbour may still be in use.
  int64_t page = ::sysconf(_SC_PAGESIZE);
  int64_t offset = static_cast<const char *>(data_) - static_cast<const char *>(base_);
  int64_t first = (offset + begin + page - 1) / page * page, last = (offset + end) / page * page;
  if (base_ && last > first)
    ::madvise(static_cast<char *>(base_) + first, size_t(last - first), MADV_DONTNEED);
}

} // namespace colo::runtime
