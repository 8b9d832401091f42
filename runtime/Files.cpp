//===- Files.cpp - Whole-file reads and atomic writes ---------------------===//

#include "colo/Runtime/Files.h"
#include "colo/Runtime/Error.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace colo::runtime {

void writeFileAtomically(const std::string &path,
                         const std::function<void(std::ostream &)> &write) {
  static std::atomic<int> counter{0};
  std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  try {
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out)
        throw Error("cannot write '" + path + "': " + std::strerror(errno));
      write(out);
      out.flush();
      if (!out)
        throw Error("cannot write '" + path + "': write failed (disk full?)");
    }
    // Make the bytes durable before the rename makes them visible.
    int fd = ::open(tmp.c_str(), O_RDONLY);
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
