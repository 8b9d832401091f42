//===- Files.cpp - Whole-file reads and atomic writes ---------------------===//

#include "colo/Runtime/Files.h"
#include "colo/Runtime/Error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace colo::runtime {

namespace {
/// Writes through `write` into `file`; errors name `path`, the target.
void writeStream(const std::string &file, const std::string &path,
                 const std::function<void(std::ostream &)> &write) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out)
    throw Error("cannot write '" + path + "': " + std::strerror(errno));
  write(out);
  out.flush();
  if (!out)
    throw Error("cannot write '" + path + "': write failed (disk full?)");
}
} // namespace

void writeFileAtomically(const std::string &path,
                         const std::function<void(std::ostream &)> &write) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode))
      throw Error("cannot write '" + path + "': it is a directory");
    // A device or a pipe: nothing to replace atomically, and a rename over
    // it would replace the device.
    return writeStream(path, path, write);
  }
  // mkstemp makes a new file of a name no one else has (O_EXCL), in the
  // target's directory so that the rename stays on one file system.
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0)
    throw Error("cannot write '" + path + "': " + std::strerror(errno));
  // mkstemp's 0600, widened to what a plain create would give.
  mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  ::close(fd);
  try {
    writeStream(tmp, path, write);
    // Make the bytes durable before the rename makes them visible.
    fd = ::open(tmp.c_str(), O_RDONLY);
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw Error("cannot write '" + path + "': " + std::strerror(errno));
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
}

void syncDirectory(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0 || ::fsync(fd) != 0) {
    int error = errno;
    if (fd >= 0)
      ::close(fd);
    throw Error("cannot sync directory '" + path + "': " + std::strerror(error));
  }
  ::close(fd);
}

std::string readFile(const std::string &path) {
  if (isDirectory(path))
    throw Error("cannot read '" + path + "': it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error("cannot read '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad())
    throw Error("cannot read '" + path + "': read failed");
  return std::move(ss).str();
}

bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool isRegularFile(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string joinPath(const std::string &dir, const std::string &name) {
  if (dir.empty())
    return name;
  if (!name.empty() && name.front() == '/')
    return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

} // namespace colo::runtime
