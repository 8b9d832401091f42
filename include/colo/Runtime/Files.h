//===- Files.h - Whole-file reads and atomic writes --------------*- C++ -*-===//
//
// Every file the runtime writes (weights, state, traces) is written to a
// temporary file next to the target (mkstemp) and renamed over it, so a crash or a full
// disk never leaves a half-written file under the final name.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_FILES_H
#define COLO_RUNTIME_FILES_H

#include <functional>
#include <ostream>
#include <string>

namespace colo::runtime {

/// Calls `write` on a stream to a temporary file in the directory of `path`,
/// then flushes, syncs and renames it to `path`. Throws Error (and removes the
/// temporary file) if anything fails. A `path` that is a device or a pipe
/// (/dev/null) is written in place.
void writeFileAtomically(const std::string &path,
                         const std::function<void(std::ostream &)> &write);

/// Makes the entries of directory `path` (files created, renamed or removed
/// in it) durable; throws Error if it cannot.
void syncDirectory(const std::string &path);

/// The bytes of a file; throws Error naming the file if it cannot be read.
std::string readFile(const std::string &path);

/// True if `path` names an existing directory / regular file.
bool isDirectory(const std::string &path);
bool isRegularFile(const std::string &path);

/// `dir` + "/" + `name`, without doubling the slash.
std::string joinPath(const std::string &dir, const std::string &name);

} // namespace colo::runtime

#endif
