//===- Error.h - The runtime's error type ------------------------*- C++ -*-===//
//
// Every problem the runtime finds (a bad executable, a corrupt file, data of
// the wrong shape, a failed library call) is thrown as colo::runtime::Error
// with a one-line message that names the file and the step or buffer, so a
// tool prints it as is: "colo: error: <what()>".
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_ERROR_H
#define COLO_RUNTIME_ERROR_H

#include <stdexcept>
#include <string>

namespace colo::runtime {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string &message) : std::runtime_error(message) {}
};

} // namespace colo::runtime

#endif
