//===- CudaProbe.cpp - is there a CUDA GPU here? ---------------------------===//
//
// Asks the CUDA driver (libcuda.so.1, loaded at run time: colo links no CUDA
// library) how many GPUs this machine has, so that `colo run` of an
// executable compiled for CUDA says in one line why it cannot run.
//
//===----------------------------------------------------------------------===//
#include "CudaProbe.h"

#include <dlfcn.h>

#include <string>

std::string colo::runtime::cudaGpuProblem() {
  void *driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!driver)
    return "this machine has no CUDA driver (libcuda.so.1 cannot be loaded)";
  using Init = int (*)(unsigned);
  using Count = int (*)(int *);
  auto init = reinterpret_cast<Init>(::dlsym(driver, "cuInit"));
  auto count = reinterpret_cast<Count>(::dlsym(driver, "cuDeviceGetCount"));
  int devices = 0;
  std::string problem;
  if (!init || !count)
    problem = "libcuda.so.1 lacks cuInit or cuDeviceGetCount";
  else if (int rc = init(0); rc != 0)
    problem = "the CUDA driver does not start (cuInit returned " + std::to_string(rc) + ")";
  else if (count(&devices) != 0 || devices == 0)
    problem = "this machine has no CUDA GPU";
  ::dlclose(driver);
  return problem;
}
