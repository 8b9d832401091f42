//===- CudaDevice.h - An NVIDIA GPU behind the device interface ---*- C++ -*-===//
//
// The CUDA device (runtime/CudaDevice.cpp, built where the CUDA toolkit is):
// the device space is the GPU's own memory (cudaMalloc), which the host does
// not reach (hostReaches): the session copies what it reads and writes
// there (inputs, losses, weights, checkpoints); pinned host memory
// is cudaMallocHost's. The compute queue is the legacy default stream (NCCL's
// communicator orders its work after it), the copy queue a stream of its
// own; events are CUDA events. Kernels are kernels.cuda.pb's PTX, loaded
// through cudaLibraryLoadData for the GPU's architecture; GEMMs run through
// cuBLASLt (planLtMatmuls), convolutions and pooling through cuDNN. A machine without a CUDA driver
// or GPU gets one clear Error when a device is asked for.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_CUDADEVICE_H
#define COLO_RUNTIME_CUDADEVICE_H

#include "colo/Runtime/Device.h"

#include <memory>
#include <string>

namespace colo::runtime {

class Executable;

/// Empty where this process can run work on a CUDA GPU; else why not, as a
/// clause ("this machine has no CUDA GPU"). Needs no CUDA toolkit.
std::string cudaGpuProblem();

/// The GPU index of world rank `rank` among its node's GPUs: the launcher's
/// local rank (Open MPI, MPICH, Slurm), else `rank`.
int localRank(int rank);

/// GPU `ordinal` of those this process sees. Throws Error if there is no
/// such GPU or colo was built without the CUDA toolkit.
std::unique_ptr<Device> createCudaDevice(int ordinal);

/// The device `exe` was compiled for: the CPU (with `gemm`) for target cpu,
/// world rank `rank`'s GPU for cuda. Throws Error with one line saying why a
/// CUDA executable cannot run on this machine.
std::unique_ptr<Device> createDeviceFor(const Executable &exe, int rank = 0,
                                        GemmLibrary gemm = GemmLibrary::OneDnn);

} // namespace colo::runtime

#endif
