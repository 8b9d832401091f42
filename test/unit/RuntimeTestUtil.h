// Helpers shared by the runtime's unit tests.
#ifndef COLO_TEST_UNIT_RUNTIMETESTUTIL_H
#define COLO_TEST_UNIT_RUNTIMETESTUTIL_H

#include <cstdlib>
#include <filesystem>
#include <string>

/// A fresh directory under the system's temporary directory, removed with
/// everything in it when the object goes away.
struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "colo-rt-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string operator/(const std::string &name) const { return path + "/" + name; }
};

#endif
