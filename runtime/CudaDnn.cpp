//===- CudaDnn.cpp - cuDNN descriptors of convolutions and pooling --------===//

#include "CudaDnn.h"
#include "colo/Runtime/Error.h"

namespace colo::runtime {

void checkCudnn(cudnnStatus_t status, const char *call, const std::string &what) {
  if (status != CUDNN_STATUS_SUCCESS)
    throw Error(what + ": " + call + " failed: " + cudnn().cudnnGetErrorString(status));
}

namespace {
void requireSymmetricPadding(const WindowGeometry &g, const char *what) {
  if (g.padT != g.padB || g.padL != g.padR)
    throw Error(std::string(what) + " pads " + std::to_string(g.padT) + " above, " +
                std::to_string(g.padB) + " below, " + std::to_string(g.padL) + " left and " +
                std::to_string(g.padR) + " right, and cuDNN pads both sides alike");
}

cudnnTensorDescriptor_t tensor(int64_t n, int64_t c, int64_t h, int64_t w) {
  cudnnTensorDescriptor_t t = nullptr;
  const char *what = "a cuDNN tensor descriptor";
  checkCudnn(cudnn().cudnnCreateTensorDescriptor(&t), "cudnnCreateTensorDescriptor", what);
  cudnnStatus_t status = cudnn().cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                            int(n), int(c), int(h), int(w));
  if (status != CUDNN_STATUS_SUCCESS)
    cudnn().cudnnDestroyTensorDescriptor(t);
  checkCudnn(status, "cudnnSetTensor4dDescriptor", what);
  return t;
}
} // namespace

ConvDescriptors::ConvDescriptors(const WindowGeometry &g) {
  requireSymmetricPadding(g, "this convolution");
  const char *what = "a cuDNN convolution";
  try {
    x = tensor(g.n, g.c, g.h, g.w);
    y = tensor(g.n, g.k, g.oh, g.ow);
    bias = tensor(1, g.k, 1, 1);
    checkCudnn(cudnn().cudnnCreateFilterDescriptor(&weight), "cudnnCreateFilterDescriptor", what);
    checkCudnn(cudnn().cudnnSetFilter4dDescriptor(weight, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                                  int(g.k), int(g.c / g.groups), int(g.r),
                                                  int(g.s)),
               "cudnnSetFilter4dDescriptor", what);
    checkCudnn(cudnn().cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor",
               what);
    checkCudnn(cudnn().cudnnSetConvolution2dDescriptor(
                   conv, int(g.padT), int(g.padL), int(g.strideH), int(g.strideW), int(g.dilH),
                   int(g.dilW), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
               "cudnnSetConvolution2dDescriptor", what);
    checkCudnn(cudnn().cudnnSetConvolutionGroupCount(conv, int(g.groups)),
               "cudnnSetConvolutionGroupCount", what);
    checkCudnn(cudnn().cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH),
               "cudnnSetConvolutionMathType", what);
  } catch (...) {
    this->~ConvDescriptors();
    throw;
  }
}

ConvDescriptors::~ConvDescriptors() {
  for (cudnnTensorDescriptor_t t : {x, y, bias})
    if (t)
      cudnn().cudnnDestroyTensorDescriptor(t);
  if (weight)
    cudnn().cudnnDestroyFilterDescriptor(weight);
  if (conv)
    cudnn().cudnnDestroyConvolutionDescriptor(conv);
  x = y = bias = nullptr;
  weight = nullptr;
  conv = nullptr;
}

PoolDescriptors::PoolDescriptors(const WindowGeometry &g, bool max, bool countIncludePad) {
  requireSymmetricPadding(g, "this pooling");
  if (g.dilH != 1 || g.dilW != 1)
    throw Error("this pooling dilates its window, which cuDNN's pooling cannot");
  const char *what = "a cuDNN pooling";
  cudnnPoolingMode_t mode = max               ? CUDNN_POOLING_MAX_DETERMINISTIC
                            : countIncludePad ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                              : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  try {
    x = tensor(g.n, g.c, g.h, g.w);
    y = tensor(g.n, g.c, g.oh, g.ow);
    checkCudnn(cudnn().cudnnCreatePoolingDescriptor(&pool), "cudnnCreatePoolingDescriptor", what);
    checkCudnn(cudnn().cudnnSetPooling2dDescriptor(pool, mode, CUDNN_PROPAGATE_NAN, int(g.r),
                                                   int(g.s), int(g.padT), int(g.padL),
                                                   int(g.strideH), int(g.strideW)),
               "cudnnSetPooling2dDescriptor", what);
  } catch (...) {
    this->~PoolDescriptors();
    throw;
  }
}

PoolDescriptors::~PoolDescriptors() {
  for (cudnnTensorDescriptor_t t : {x, y})
    if (t)
      cudnn().cudnnDestroyTensorDescriptor(t);
  if (pool)
    cudnn().cudnnDestroyPoolingDescriptor(pool);
  x = y = nullptr;
  pool = nullptr;
}

} // namespace colo::runtime
