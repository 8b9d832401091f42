//===- LazyLibrary.cpp - Vendor libraries loaded when first used ----------===//

#include "LazyLibrary.h"
#include "colo/Runtime/Error.h"

#include <dlfcn.h>

namespace colo::runtime {

void *openLibrary(const std::string &soname) {
  // Never closed: the library's functions are kept in tables for the
  // process's lifetime.
  void *library = ::dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *why = ::dlerror();
    throw Error("cannot load " + soname + " (" + (why ? why : "unknown error") +
                "): is the CUDA toolkit's lib directory on LD_LIBRARY_PATH?");
  }
  return library;
}

void *librarySymbol(void *library, const std::string &soname, const char *name) {
  if (void *f = ::dlsym(library, name))
    return f;
  throw Error(soname + " has no function " + name + ": an older version than colo was built for?");
}

} // namespace colo::runtime
