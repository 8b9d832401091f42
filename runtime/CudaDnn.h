//===- CudaDnn.h - cuDNN descriptors of convolutions and pooling --*- C++ -*-===//
//
// Built only with the CUDA toolkit and cuDNN. Conv2d and Pool2d steps
// (Program.proto: NCHW float, PyTorch's semantics) as cuDNN's tensor, filter,
// convolution and pooling descriptors. The descriptors need no GPU: their
// construction, and cuDNN's own output shape for them, are unit-tested on
// machines without one; choosing algorithms and running them need the GPU.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_RUNTIME_CUDADNN_H
#define COLO_RUNTIME_CUDADNN_H

#include "LazyLibrary.h"
#include "colo/Runtime/CpuOps.h"

#include <cudnn.h>

#include <string>

namespace colo::runtime {

// clang-format off
#define COLO_CUDNN_FUNCTIONS(X)                                                              \
  X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream) X(cudnnGetErrorString) X(cudnnGetVersion) \
  X(cudnnCreateTensorDescriptor) X(cudnnDestroyTensorDescriptor)                             \
  X(cudnnSetTensor4dDescriptor) X(cudnnGetTensor4dDescriptor)                                \
  X(cudnnCreateFilterDescriptor) X(cudnnDestroyFilterDescriptor)                             \
  X(cudnnSetFilter4dDescriptor) X(cudnnGetFilter4dDescriptor)                                \
  X(cudnnCreateConvolutionDescriptor) X(cudnnDestroyConvolutionDescriptor)                   \
  X(cudnnSetConvolution2dDescriptor) X(cudnnGetConvolution2dDescriptor)                      \
  X(cudnnSetConvolutionGroupCount) X(cudnnSetConvolutionMathType)                            \
  X(cudnnGetConvolution2dForwardOutputDim) X(cudnnCreatePoolingDescriptor)                   \
  X(cudnnDestroyPoolingDescriptor) X(cudnnSetPooling2dDescriptor)                            \
  X(cudnnGetPooling2dForwardOutputDim) X(cudnnGetConvolutionForwardAlgorithm_v7)             \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)                                             \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7) X(cudnnConvolutionForward)                \
  X(cudnnConvolutionBackwardData) X(cudnnConvolutionBackwardFilter)                          \
  X(cudnnConvolutionBackwardBias) X(cudnnAddTensor) X(cudnnPoolingForward)                   \
  X(cudnnPoolingBackward)
// clang-format on
/// cuDNN, loaded when first used (LazyLibrary.h).
COLO_LAZY_LIBRARY(CuDnn, cudnn, "libcudnn.so." + std::to_string(CUDNN_MAJOR), COLO_CUDNN_FUNCTIONS)

/// Throws Error naming `call` and `what` unless `status` is success.
void checkCudnn(cudnnStatus_t status, const char *call, const std::string &what);

/// A convolution's descriptors: x [n, c, h, w], y [n, k, oh, ow], the
/// weight [k, c / groups, r, s], the bias [1, k, 1, 1]. Float math only
/// (CUDNN_FMA_MATH: no TF32, the CPU's numerics). Throws Error for padding
/// that differs between top and bottom or left and right, which cuDNN's
/// convolutions cannot express.
struct ConvDescriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t weight = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

  explicit ConvDescriptors(const WindowGeometry &g);
  ~ConvDescriptors();
  ConvDescriptors(const ConvDescriptors &) = delete;
  ConvDescriptors &operator=(const ConvDescriptors &) = delete;
};

/// A pooling step's descriptors: x [n, c, h, w], y [n, c, oh, ow]; max
/// pooling propagates NaN (PyTorch's: a NaN wins). Throws Error for
/// asymmetric padding or dilation, which cuDNN's pooling cannot express.
struct PoolDescriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnPoolingDescriptor_t pool = nullptr;

  PoolDescriptors(const WindowGeometry &g, bool max, bool countIncludePad);
  ~PoolDescriptors();
  PoolDescriptors(const PoolDescriptors &) = delete;
  PoolDescriptors &operator=(const PoolDescriptors &) = delete;
};

} // namespace colo::runtime

#endif
