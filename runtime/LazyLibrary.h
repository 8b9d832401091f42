//===- LazyLibrary.h - Vendor libraries loaded when first used ----*- C++ -*-===//
//
// cuBLASLt and NCCL are hundreds of megabytes: linked, the dynamic loader
// maps and relocates them at every start of colo (0.1 s), though only runs
// on GPUs use them. They are opened with dlopen when first called instead,
// through a table of the functions colo calls, declared from the library's
// own header so that the types are the header's.
//
//   #define FUNCTIONS(X) X(ncclGetUniqueId) X(ncclAllReduce)
//   COLO_LAZY_LIBRARY(Nccl, nccl, "libnccl.so.2", FUNCTIONS)
//   ... nccl().ncclAllReduce(...)
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_LAZYLIBRARY_H
#define COLO_RUNTIME_LAZYLIBRARY_H

#include <string>

namespace colo::runtime {

/// dlopen(soname), or Error saying that `soname` cannot be loaded and why.
void *openLibrary(const std::string &soname);
/// The address of `name` in `library`, or Error naming both.
void *librarySymbol(void *library, const std::string &soname, const char *name);

} // namespace colo::runtime

#define COLO_LAZY_DECLARE(f) decltype(&::f) f = nullptr;
#define COLO_LAZY_LOAD(f)                                                                          \
  api.f = reinterpret_cast<decltype(&::f)>(librarySymbol(library, soname, #f));

/// Declares struct Type with a member per function of FUNCTIONS and
/// `const Type &accessor()`, which loads the library on its first call.
#define COLO_LAZY_LIBRARY(Type, accessor, sonameExpr, FUNCTIONS)                                   \
  struct Type {                                                                                    \
    FUNCTIONS(COLO_LAZY_DECLARE)                                                                   \
  };                                                                                               \
  inline const Type &accessor() {                                                                  \
    static const Type loaded = [] {                                                                \
      std::string soname = sonameExpr;                                                             \
      void *library = openLibrary(soname);                                                         \
      Type api;                                                                                    \
      FUNCTIONS(COLO_LAZY_LOAD)                                                                    \
      return api;                                                                                  \
    }();                                                                                           \
    return loaded;                                                                                 \
  }

#endif
