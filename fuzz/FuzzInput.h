//===- FuzzInput.h - A fuzzer's input as the file a reader opens -*- C++ -*-===//
//
// colo's readers take paths (they map files rather than copy them), so each
// target writes the input to a file in a directory of its own first.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_FUZZ_FUZZINPUT_H
#define COLO_FUZZ_FUZZINPUT_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace colo::fuzz {

/// The directory this process writes its inputs into (made once).
inline const std::string &scratchDirectory() {
  static const std::string dir = [] {
    std::string pattern = "/tmp/colo-fuzz-XXXXXX";
    if (!::mkdtemp(pattern.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    return pattern;
  }();
  return dir;
}

/// Writes `data` to `name` in the scratch directory; returns the path.
inline std::string writeInput(const std::string &name, const uint8_t *data, size_t size) {
  std::string path = scratchDirectory() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(data), std::streamsize(size));
  if (!out) {
    std::perror(path.c_str());
    std::abort();
  }
  return path;
}

} // namespace colo::fuzz

#endif
