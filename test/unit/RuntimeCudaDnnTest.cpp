// The cuDNN descriptors of Conv2d and Pool2d steps (runtime/CudaDnn.cpp),
// checked through cuDNN's own queries, which need the library and no GPU:
// the output shape cuDNN computes for them is the step's, and the
// convolution's parameters read back as set. What cuDNN cannot express
// (asymmetric padding, dilated pooling) is refused by name.
#include "CudaDnn.h"
#include "colo/Runtime/Error.h"
#include "colo/Runtime/Program.pb.h"

#include <gtest/gtest.h>

using namespace colo::runtime;

namespace {

bool haveCudnn() {
  try {
    cudnn();
    return true;
  } catch (const Error &) {
    return false;
  }
}

Conv2d convOf(int64_t stride, int64_t pad, int64_t dilation, int64_t groups) {
  Conv2d c;
  c.set_n(2);
  c.set_c(4);
  c.set_h(9);
  c.set_w(7);
  c.set_k(6);
  c.set_r(3);
  c.set_s(3);
  c.set_stride_h(stride);
  c.set_stride_w(stride);
  c.set_pad_t(pad);
  c.set_pad_b(pad);
  c.set_pad_l(pad);
  c.set_pad_r(pad);
  c.set_dil_h(dilation);
  c.set_dil_w(dilation);
  c.set_groups(groups);
  int64_t eff = dilation * 2 + 1;
  c.set_oh((9 + 2 * pad - eff) / stride + 1);
  c.set_ow((7 + 2 * pad - eff) / stride + 1);
  return c;
}

TEST(CudaDnnDescriptors, ConvolutionsHaveTheStepsOutputShape) {
  if (!haveCudnn())
    GTEST_SKIP() << "libcudnn cannot be loaded";
  for (auto [stride, pad, dilation, groups] :
       {std::array<int64_t, 4>{1, 1, 1, 1}, {2, 1, 1, 2}, {1, 2, 2, 1}, {2, 0, 1, 2}}) {
    Conv2d conv = convOf(stride, pad, dilation, groups);
    WindowGeometry g = geometryOf(conv);
    ASSERT_EQ(checkGeometry(g, true), "");
    ConvDescriptors d(g);
    int n = 0, k = 0, oh = 0, ow = 0;
    ASSERT_EQ(
        cudnn().cudnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.weight, &n, &k, &oh, &ow),
        CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(std::vector<int64_t>({n, k, oh, ow}), std::vector<int64_t>({g.n, g.k, g.oh, g.ow}))
        << "stride " << stride << " pad " << pad << " dilation " << dilation;
    int padH, padW, strideH, strideW, dilH, dilW;
    cudnnConvolutionMode_t mode;
    cudnnDataType_t type;
    ASSERT_EQ(cudnn().cudnnGetConvolution2dDescriptor(d.conv, &padH, &padW, &strideH, &strideW,
                                                      &dilH, &dilW, &mode, &type),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(mode, CUDNN_CROSS_CORRELATION); // PyTorch's conv2d
    EXPECT_EQ(type, CUDNN_DATA_FLOAT);
    EXPECT_EQ(padH, pad);
    EXPECT_EQ(strideW, stride);
    EXPECT_EQ(dilH, dilation);
  }
}

TEST(CudaDnnDescriptors, PoolingHasTheStepsOutputShape) {
  if (!haveCudnn())
    GTEST_SKIP() << "libcudnn cannot be loaded";
  Pool2d p;
  p.set_n(2);
  p.set_c(3);
  p.set_h(8);
  p.set_w(8);
  p.set_r(3);
  p.set_s(3);
  p.set_stride_h(2);
  p.set_stride_w(2);
  p.set_pad_t(1);
  p.set_pad_b(1);
  p.set_pad_l(1);
  p.set_pad_r(1);
  p.set_oh(4);
  p.set_ow(4);
  WindowGeometry g = geometryOf(p);
  ASSERT_EQ(checkGeometry(g, false), "");
  for (bool max : {true, false}) {
    PoolDescriptors d(g, max, true);
    int n = 0, c = 0, oh = 0, ow = 0;
    ASSERT_EQ(cudnn().cudnnGetPooling2dForwardOutputDim(d.pool, d.x, &n, &c, &oh, &ow),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(std::vector<int64_t>({n, c, oh, ow}), std::vector<int64_t>({2, 3, 4, 4}));
  }
}

TEST(CudaDnnDescriptors, RefusesWhatCudnnCannotExpress) {
  if (!haveCudnn())
    GTEST_SKIP() << "libcudnn cannot be loaded";
  Conv2d conv = convOf(1, 1, 1, 1);
  conv.set_pad_b(2);
  conv.set_oh(conv.oh() + 1);
  try {
    ConvDescriptors d(geometryOf(conv));
    ADD_FAILURE() << "asymmetric padding accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("1 above, 2 below"), std::string::npos) << e.what();
  }
  Pool2d p;
  p.set_n(1);
  p.set_c(1);
  p.set_h(8);
  p.set_w(8);
  p.set_r(2);
  p.set_s(2);
  p.set_dil_h(2);
  p.set_dil_w(2);
  p.set_oh(6);
  p.set_ow(6);
  EXPECT_THROW(PoolDescriptors(geometryOf(p), true, false), Error);
}

} // namespace
