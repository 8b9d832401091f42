// Unit tests of the reference interpreter (lib/Interpreter): small colo
// functions evaluated on values worked out by hand.
#include "colo/Interpreter/Interpreter.h"

#include "colo/Dialect/Colo/ColoDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using colo::HostArray;

namespace {

class InterpreterTest : public ::testing::Test {
protected:
  InterpreterTest() {
    mlir::DialectRegistry registry;
    registry.insert<colo::ColoDialect, mlir::func::FuncDialect>();
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }

  /// Parses `ir` and evaluates @forward; fails the test on errors.
  std::vector<HostArray> run(const std::string &ir, std::vector<HostArray> inputs) {
    auto module = mlir::parseSourceString<mlir::ModuleOp>(ir, &ctx);
    EXPECT_TRUE(module) << ir;
    if (!module)
      return {};
    auto results = colo::interpret(*module, inputs);
    EXPECT_TRUE(succeeded(results));
    return succeeded(results) ? *results : std::vector<HostArray>{};
  }

  /// The first error `ir` reports when evaluated.
  std::string error(const std::string &ir, std::vector<HostArray> inputs) {
    std::string message;
    mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
      if (message.empty())
        message = d.str();
      return mlir::success();
    });
    auto module = mlir::parseSourceString<mlir::ModuleOp>(ir, &ctx);
    EXPECT_TRUE(module) << ir;
    if (!module)
      return "parse failed";
    EXPECT_TRUE(failed(colo::interpret(*module, inputs)));
    return message;
  }

  mlir::MLIRContext ctx;
};

void expectArray(const HostArray &a, std::vector<int64_t> shape, std::vector<double> data,
                 double tol = 1e-12) {
  EXPECT_EQ(a.shape, shape);
  ASSERT_EQ(a.data.size(), data.size());
  for (size_t i = 0; i < data.size(); ++i)
    EXPECT_NEAR(a.data[i], data[i], tol) << "element " << i;
}

TEST_F(InterpreterTest, BroadcastingBinary) {
  auto r = run(R"(
    func.func @forward(%a: tensor<2x1xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
      %0 = colo.sub %a, %b : tensor<2x1xf32>, tensor<3xf32>
      return %0 : tensor<2x3xf32>
    })",
               {{{2, 1}, {1, 2}}, {{3}, {10, 20, 30}}});
  ASSERT_EQ(r.size(), 1u);
  expectArray(r[0], {2, 3}, {-9, -19, -29, -8, -18, -28});
}

TEST_F(InterpreterTest, CompareAndSelectBroadcast) {
  auto r = run(R"(
    func.func @forward(%a: tensor<2x2xf32>, %b: tensor<f32>) -> tensor<2x2xf32> {
      %m = colo.compare gt, %a, %b : tensor<2x2xf32>, tensor<f32>
      %z = colo.select %m, %a, %b : tensor<2x2xi1>, tensor<2x2xf32>, tensor<f32>
      return %z : tensor<2x2xf32>
    })",
               {{{2, 2}, {1, 5, -3, 2.5}}, {{}, {2}}});
  ASSERT_EQ(r.size(), 1u);
  expectArray(r[0], {2, 2}, {2, 5, 2, 2.5});
}

TEST_F(InterpreterTest, MatmulBroadcastsBatchDims) {
  // [2,1,2] x [2,1] (no batch dims) and [1,1,2] x [2,2,1] (batch 1 vs 2).
  auto r = run(R"(
    func.func @forward(%a: tensor<2x1x2xf32>, %b: tensor<2x1xf32>, %c: tensor<1x1x2xf32>,
                       %d: tensor<2x2x1xf32>) -> (tensor<2x1x1xf32>, tensor<2x1x1xf32>) {
      %0 = colo.matmul %a, %b : tensor<2x1x2xf32>, tensor<2x1xf32>
      %1 = colo.matmul %c, %d : tensor<1x1x2xf32>, tensor<2x2x1xf32>
      return %0, %1 : tensor<2x1x1xf32>, tensor<2x1x1xf32>
    })",
               {{{2, 1, 2}, {1, 2, 3, 4}},
                {{2, 1}, {5, 6}},
                {{1, 1, 2}, {1, 2}},
                {{2, 2, 1}, {1, 0, 0, 1}}});
  ASSERT_EQ(r.size(), 2u);
  expectArray(r[0], {2, 1, 1}, {17, 39});
  expectArray(r[1], {2, 1, 1}, {1, 2});
}

TEST_F(InterpreterTest, Conv2dPaddingStrideGroupsBias) {
  // Channel 0 is 1..9 under a 2x2 box filter, channel 1 all ones under
  // [[1, 0], [0, -1]]; padding one row on top and one column on the left.
  auto r = run(R"(
    func.func @forward(%x: tensor<1x2x3x3xf32>, %w: tensor<2x1x2x2xf32>,
                       %b: tensor<2xf32>) -> tensor<1x2x2x2xf32> {
      %0 = colo.conv2d %x, %w bias %b {strides = array<i64: 2, 2>,
             padding = array<i64: 1, 1, 0, 0>, groups = 2 : i64}
           : tensor<1x2x3x3xf32>, tensor<2x1x2x2xf32>, tensor<2xf32>
      return %0 : tensor<1x2x2x2xf32>
    })",
               {{{1, 2, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
                {{2, 1, 2, 2}, {1, 1, 1, 1, 1, 0, 0, -1}},
                {{2}, {10, 0}}});
  ASSERT_EQ(r.size(), 1u);
  expectArray(r[0], {1, 2, 2, 2}, {11, 15, 21, 38, -1, -1, -1, 0});
}

TEST_F(InterpreterTest, Conv2dDilation) {
  // A 2x2 filter dilated by 2 reads the corners of the 3x3 input.
  auto r = run(R"(
    func.func @forward(%x: tensor<1x1x3x3xf32>, %w: tensor<1x1x2x2xf32>) -> tensor<1x1x1x1xf32> {
      %0 = colo.conv2d %x, %w {dilations = array<i64: 2, 2>}
           : tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32>
      return %0 : tensor<1x1x1x1xf32>
    })",
               {{{1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}}, {{1, 1, 2, 2}, {1, 10, 100, 1000}}});
  ASSERT_EQ(r.size(), 1u);
  expectArray(r[0], {1, 1, 1, 1}, {1 + 30 + 700 + 9000});
}

TEST_F(InterpreterTest, AttentionCausalGroupedQuery) {
  // Zero queries: uniform weights over the visible keys. Heads 0 and 1 read
  // kv head 0 (values 1, 3), heads 2 and 3 kv head 1 (values 5, 7).
  auto r = run(R"(
    func.func @forward(%q: tensor<1x4x2x1xf32>, %k: tensor<1x2x2x1xf32>,
                       %v: tensor<1x2x2x1xf32>) -> tensor<1x4x2x1xf32> {
      %0 = colo.attention %q, %k, %v {scale = 1.0 : f64, causal}
           : tensor<1x4x2x1xf32>, tensor<1x2x2x1xf32>, tensor<1x2x2x1xf32>
      return %0 : tensor<1x4x2x1xf32>
    })",
               {{{1, 4, 2, 1}, std::vector<double>(8, 0.0)},
                {{1, 2, 2, 1}, {0, 0, 0, 0}},
                {{1, 2, 2, 1}, {1, 3, 5, 7}}});
  ASSERT_EQ(r.size(), 1u);
  expectArray(r[0], {1, 4, 2, 1}, {1, 2, 1, 2, 5, 6, 5, 6});
}

TEST_F(InterpreterTest, AttentionScaleAndMask) {
  // Logits 0 and ln 2 weigh values 3 and 6 by 1/3 and 2/3: 5. The mask adds
  // ln 2 to the first key: equal weights, 4.5.
  auto r = run(R"(
    func.func @forward(%q: tensor<1x1x1x1xf32>, %k: tensor<1x1x2x1xf32>,
                       %v: tensor<1x1x2x1xf32>, %m: tensor<2xf32>)
        -> (tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>) {
      %0 = colo.attention %q, %k, %v {scale = 0.69314718055994531 : f64}
           : tensor<1x1x1x1xf32>, tensor<1x1x2x1xf32>, tensor<1x1x2x1xf32>
      %1 = colo.attention %q, %k, %v mask %m {scale = 0.69314718055994531 : f64}
           : tensor<1x1x1x1xf32>, tensor<1x1x2x1xf32>, tensor<1x1x2x1xf32>, tensor<2xf32>
      return %0, %1 : tensor<1x1x1x1xf32>, tensor<1x1x1x1xf32>
    })",
               {{{1, 1, 1, 1}, {1}},
                {{1, 1, 2, 1}, {0, 1}},
                {{1, 1, 2, 1}, {3, 6}},
                {{2}, {0.69314718055994531, 0}}});
  ASSERT_EQ(r.size(), 2u);
  // The inputs are rounded to f32, so ln 2 in the mask is off by ~1e-8.
  expectArray(r[0], {1, 1, 1, 1}, {5}, 1e-12);
  expectArray(r[1], {1, 1, 1, 1}, {4.5}, 1e-7);
}

TEST_F(InterpreterTest, LayerNormAndRmsNorm) {
  auto r = run(R"(
    func.func @forward(%x: tensor<1x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>)
        -> (tensor<1x4xf32>, tensor<1x4xf32>) {
      %0 = colo.layer_norm %x scale %g : tensor<4xf32> bias %b : tensor<4xf32>
           {axis = 1 : i64, epsilon = 0.0 : f64} : tensor<1x4xf32>
      %1 = colo.rms_norm %x {axis = 1 : i64, epsilon = 0.0 : f64} : tensor<1x4xf32>
      return %0, %1 : tensor<1x4xf32>, tensor<1x4xf32>
    })",
               {{{1, 4}, {1, 2, 3, 4}}, {{4}, {1, 1, 1, 2}}, {{4}, {0, 0, 0, 1}}});
  ASSERT_EQ(r.size(), 2u);
  // Mean 2.5, biased variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25.
  double s = std::sqrt(1.25);
  expectArray(r[0], {1, 4}, {-1.5 / s, -0.5 / s, 0.5 / s, 2 * 1.5 / s + 1});
  // Mean square (1 + 4 + 9 + 16) / 4 = 7.5.
  double rms = std::sqrt(7.5);
  expectArray(r[1], {1, 4}, {1 / rms, 2 / rms, 3 / rms, 4 / rms});
}

TEST_F(InterpreterTest, BatchNormTrainingUsesBatchStatistics) {
  // Channel values 1, 3, 5, 7: mean 4, biased variance 5 (normalization),
  // unbiased 20/3 (running update with momentum 0.1 from mean 0, var 1).
  auto r = run(R"(
    func.func @forward(%x: tensor<2x1x1x2xf32>, %g: tensor<1xf32>, %b: tensor<1xf32>,
                       %rm: tensor<1xf32>, %rv: tensor<1xf32>)
        -> (tensor<2x1x1x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<2x1x1x2xf32>) {
      %y, %m, %v = colo.batch_norm %x, %g, %b, %rm, %rv
          {epsilon = 0.0 : f64, momentum = 0.1 : f64, training}
          : tensor<2x1x1x2xf32>, tensor<1xf32>
      %e, %m2, %v2 = colo.batch_norm %x, %g, %b, %rm, %rv
          {epsilon = 0.0 : f64, momentum = 0.1 : f64}
          : tensor<2x1x1x2xf32>, tensor<1xf32>
      return %y, %m, %v, %e : tensor<2x1x1x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<2x1x1x2xf32>
    })",
               {{{2, 1, 1, 2}, {1, 3, 5, 7}}, {{1}, {2}}, {{1}, {1}}, {{1}, {0}}, {{1}, {1}}});
  ASSERT_EQ(r.size(), 4u);
  double s = std::sqrt(5.0);
  expectArray(r[0], {2, 1, 1, 2}, {-6 / s + 1, -2 / s + 1, 2 / s + 1, 6 / s + 1});
  expectArray(r[1], {1}, {0.4});
  expectArray(r[2], {1}, {0.9 + 0.1 * 20.0 / 3.0});
  // Evaluation mode: running mean 0, variance 1.
  expectArray(r[3], {2, 1, 1, 2}, {3, 7, 11, 15});
}

TEST_F(InterpreterTest, SliceGatherNegativeIndexEmbedding) {
  auto r = run(R"(
    func.func @forward(%x: tensor<2x3xf32>, %i: tensor<2xi64>, %s: tensor<1x5xf32>)
        -> (tensor<2x2xf32>, tensor<1x2xf32>, tensor<2x3xf32>) {
      %0 = colo.gather %x, %i axis = 1 : tensor<2x3xf32>, tensor<2xi64>
      %1 = colo.slice %s start = [0, 1] limit = [1, 5] stride = [1, 2] : tensor<1x5xf32>
      %ids = colo.constant dense<[1, 0]> : tensor<2xi64>
      %2 = colo.embedding %x, %ids : tensor<2x3xf32>, tensor<2xi64>
      return %0, %1, %2 : tensor<2x2xf32>, tensor<1x2xf32>, tensor<2x3xf32>
    })",
               {{{2, 3}, {1, 2, 3, 4, 5, 6}}, {{2}, {-1, 0}}, {{1, 5}, {0, 1, 2, 3, 4}}});
  ASSERT_EQ(r.size(), 3u);
  expectArray(r[0], {2, 2}, {3, 1, 6, 4});
  expectArray(r[1], {1, 2}, {1, 3});
  expectArray(r[2], {2, 3}, {4, 5, 6, 1, 2, 3});
}

TEST_F(InterpreterTest, PoolsWithPadding) {
  // Padding one row on top and one column on the left of [[1, 2], [3, 4]].
  auto r = run(R"(
    func.func @forward(%x: tensor<1x1x2x2xf32>)
        -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) {
      %0 = colo.avg_pool2d %x {kernel = array<i64: 2, 2>, padding = array<i64: 1, 1, 0, 0>}
           : tensor<1x1x2x2xf32>
      %1 = colo.avg_pool2d %x {kernel = array<i64: 2, 2>, padding = array<i64: 1, 1, 0, 0>,
           count_include_pad} : tensor<1x1x2x2xf32>
      %2 = colo.max_pool2d %x {kernel = array<i64: 2, 2>, padding = array<i64: 1, 1, 0, 0>}
           : tensor<1x1x2x2xf32>
      return %0, %1, %2 : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>
    })",
               {{{1, 1, 2, 2}, {1, 2, 3, 4}}});
  ASSERT_EQ(r.size(), 3u);
  expectArray(r[0], {1, 1, 2, 2}, {1, 1.5, 2, 2.5});
  expectArray(r[1], {1, 1, 2, 2}, {0.25, 0.75, 1, 2.5});
  expectArray(r[2], {1, 1, 2, 2}, {1, 2, 3, 4});
}

TEST_F(InterpreterTest, ReductionsTransposeConcat) {
  auto r = run(R"(
    func.func @forward(%x: tensor<2x3xf32>)
        -> (tensor<2x1xf32>, tensor<3xf32>, tensor<3x2xf32>, tensor<2x4xf32>) {
      %0 = colo.reduce_sum %x dims = [1] {keep_dims} : tensor<2x3xf32>
      %1 = colo.reduce_max %x dims = [0] : tensor<2x3xf32>
      %2 = colo.transpose %x permutation = [1, 0] : tensor<2x3xf32>
      %3 = colo.reduce_mean %x dims = [1] {keep_dims} : tensor<2x3xf32>
      %4 = colo.concat %x, %3 axis = 1 : tensor<2x3xf32>, tensor<2x1xf32>
      return %0, %1, %2, %4 : tensor<2x1xf32>, tensor<3xf32>, tensor<3x2xf32>, tensor<2x4xf32>
    })",
               {{{2, 3}, {1, 2, 3, 4, 5, 6}}});
  ASSERT_EQ(r.size(), 4u);
  expectArray(r[0], {2, 1}, {6, 15});
  expectArray(r[1], {3}, {4, 5, 6});
  expectArray(r[2], {3, 2}, {1, 4, 2, 5, 3, 6});
  expectArray(r[3], {2, 4}, {1, 2, 3, 2, 4, 5, 6, 5});
}

TEST_F(InterpreterTest, ConvertRoundsToTheTargetType) {
  // 1 + 2^-8 ties to even (1.0) in bf16; 1 + 3 * 2^-8 ties up to 1 + 2^-6.
  // Float to integer truncates toward zero.
  auto r = run(R"(
    func.func @forward(%x: tensor<3xf32>) -> (tensor<3xbf16>, tensor<3xi32>, tensor<3xf16>) {
      %0 = colo.convert %x : tensor<3xf32> to tensor<3xbf16>
      %1 = colo.convert %x : tensor<3xf32> to tensor<3xi32>
      %2 = colo.convert %x : tensor<3xf32> to tensor<3xf16>
      return %0, %1, %2 : tensor<3xbf16>, tensor<3xi32>, tensor<3xf16>
    })",
               {{{3}, {1.00390625, 1.01171875, -2.7}}});
  ASSERT_EQ(r.size(), 3u);
  expectArray(r[0], {3}, {1.0, 1.015625, -2.703125});
  expectArray(r[1], {3}, {1, 1, -2});
  // f16 keeps both (10 mantissa bits); -2.7 rounds to -2.69921875.
  expectArray(r[2], {3}, {1.00390625, 1.01171875, -2.69921875});
}

TEST_F(InterpreterTest, ActivationsAndSoftmax) {
  auto r = run(R"(
    func.func @forward(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>,
                                              tensor<2xf32>, tensor<2xf32>) {
      %0 = colo.gelu %x : tensor<2xf32>
      %1 = colo.gelu %x approximation = tanh : tensor<2xf32>
      %2 = colo.silu %x : tensor<2xf32>
      %3 = colo.softmax %x axis = 0 : tensor<2xf32>
      %4 = colo.clamp %x min = 0.0 max = 0.5 : tensor<2xf32>
      return %0, %1, %2, %3, %4 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>,
                                  tensor<2xf32>, tensor<2xf32>
    })",
               {{{2}, {0, 1}}});
  ASSERT_EQ(r.size(), 5u);
  expectArray(r[0], {2}, {0, 0.5 * (1 + std::erf(1 / std::sqrt(2.0)))});
  expectArray(r[1], {2}, {0, 0.5 * (1 + std::tanh(std::sqrt(2 / M_PI) * 1.044715))});
  expectArray(r[2], {2}, {0, 1 / (1 + std::exp(-1.0))});
  expectArray(r[3], {2}, {1 / (1 + M_E), M_E / (1 + M_E)});
  expectArray(r[4], {2}, {0, 0.5});
}

TEST_F(InterpreterTest, Globals) {
  // dense_resource blob: alignment 4, then f32 1.0 and 2.0 little-endian.
  auto r = run(R"(
    colo.global @w : tensor<2xf32> = dense_resource<w> : tensor<2xf32>
    colo.global @o : tensor<2xf32> = #colo.init<distribution = "ones", a = 0.0 : f64, b = 0.0 : f64>
    colo.global @d : tensor<2xi64> = dense<[3, -4]> : tensor<2xi64>
    func.func @forward() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xi64>) {
      %w = colo.global_load @w : tensor<2xf32>
      %o = colo.global_load @o : tensor<2xf32>
      %d = colo.global_load @d : tensor<2xi64>
      %s = colo.add %w, %o : tensor<2xf32>, tensor<2xf32>
      return %s, %w, %d : tensor<2xf32>, tensor<2xf32>, tensor<2xi64>
    }
    {-#
      dialect_resources: { builtin: { w: "0x040000000000803F00000040" } }
    #-})",
               {});
  ASSERT_EQ(r.size(), 3u);
  expectArray(r[0], {2}, {2, 3});
  expectArray(r[1], {2}, {1, 2});
  expectArray(r[2], {2}, {3, -4});
}

TEST_F(InterpreterTest, NormalInitIsReproducible) {
  const char *ir = R"(
    colo.global @w : tensor<4096xf32> = #colo.init<distribution = "normal", a = 1.0 : f64, b = 2.0 : f64>
    func.func @forward() -> tensor<4096xf32> {
      %w = colo.global_load @w : tensor<4096xf32>
      return %w : tensor<4096xf32>
    })";
  auto a = run(ir, {}), b = run(ir, {});
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].data, b[0].data);
  double mean = 0;
  for (double x : a[0].data)
    mean += x / 4096;
  EXPECT_NEAR(mean, 1.0, 0.15); // 4 standard errors of the mean
}

TEST_F(InterpreterTest, WrongInputShapeIsAnError) {
  std::string msg = error(R"(
    func.func @forward(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
      return %x : tensor<2x3xf32>
    })",
                          {{{3, 2}, {1, 2, 3, 4, 5, 6}}});
  EXPECT_NE(msg.find("input 0 has shape [3x2]"), std::string::npos) << msg;
}

TEST_F(InterpreterTest, UnsupportedOpIsAnError) {
  std::string msg = error(R"(
    func.func private @other(tensor<2xf32>) -> tensor<2xf32>
    func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
      %0 = func.call @other(%x) : (tensor<2xf32>) -> tensor<2xf32>
      return %0 : tensor<2xf32>
    })",
                          {{{2}, {1, 2}}});
  EXPECT_NE(msg.find("does not support 'func.call'"), std::string::npos) << msg;
}

TEST_F(InterpreterTest, GatherIndexOutOfRangeIsAnError) {
  std::string msg = error(R"(
    func.func @forward(%x: tensor<3xf32>, %i: tensor<1xi64>) -> tensor<1xf32> {
      %0 = colo.gather %x, %i axis = 0 : tensor<3xf32>, tensor<1xi64>
      return %0 : tensor<1xf32>
    })",
                          {{{3}, {1, 2, 3}}, {{1}, {-4}}});
  EXPECT_NE(msg.find("index -4 is out of range"), std::string::npos) << msg;
}

TEST_F(InterpreterTest, CrossEntropySkipsIgnoredLabels) {
  // Row 2 is ignored (label -100), so the mean is over rows 0 and 1 only.
  auto r = run(R"(
    func.func @forward(%x: tensor<3x3xf32>, %y: tensor<3xi64>) -> tensor<f32> {
      %0 = colo.cross_entropy %x, %y : tensor<3x3xf32>, tensor<3xi64>
      return %0 : tensor<f32>
    })",
               {{{3, 3}, {1, 2, 3, 0, 0, 0, 100, 0, 0}}, {{3}, {2, 1, -100}}});
  ASSERT_EQ(r.size(), 1u);
  // -log_softmax([1, 2, 3])[2] = lse - 3; -log_softmax([0, 0, 0])[1] = log 3.
  double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  expectArray(r[0], {}, {((lse - 3) + std::log(3.0)) / 2});
}

TEST_F(InterpreterTest, CrossEntropyLabelSmoothingRank3) {
  // [B, S, C] = [1, 2, 3]. With smoothing e, PyTorch's loss per position is
  // (1 - e) * -log_softmax(x)[label] + e * mean_c(-log_softmax(x)[c]).
  auto r = run(R"(
    func.func @forward(%x: tensor<1x2x3xf32>, %y: tensor<1x2xi32>) -> tensor<f32> {
      %0 = colo.cross_entropy %x, %y {ignore_index = -1 : i64, label_smoothing = 0.2 : f64}
           : tensor<1x2x3xf32>, tensor<1x2xi32>
      return %0 : tensor<f32>
    })",
               {{{1, 2, 3}, {1, 2, 3, 0, 0, 0}}, {{1, 2}, {0, 2}}});
  ASSERT_EQ(r.size(), 1u);
  double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  // Position 0: nll = lse - 1, mean over classes = lse - 2.
  double loss0 = 0.8 * (lse - 1) + 0.2 * (lse - 2);
  // Position 1: uniform logits, both terms are log 3.
  double loss1 = std::log(3.0);
  expectArray(r[0], {}, {(loss0 + loss1) / 2});
}

TEST_F(InterpreterTest, CrossEntropyLabelOutOfRangeIsAnError) {
  std::string msg = error(R"(
    func.func @forward(%x: tensor<1x3xf32>, %y: tensor<1xi64>) -> tensor<f32> {
      %0 = colo.cross_entropy %x, %y : tensor<1x3xf32>, tensor<1xi64>
      return %0 : tensor<f32>
    })",
                          {{{1, 3}, {0, 0, 0}}, {{1}, {3}}});
  EXPECT_NE(msg.find("label 3 is out of range for 3 classes"), std::string::npos)
      << msg;
}

TEST_F(InterpreterTest, MseLoss) {
  auto r = run(R"(
    func.func @forward(%p: tensor<2x2xf32>, %t: tensor<2x2xf32>) -> tensor<f32> {
      %0 = colo.mse_loss %p, %t : tensor<2x2xf32>, tensor<2x2xf32>
      return %0 : tensor<f32>
    })",
               {{{2, 2}, {1, 2, 3, 4}}, {{2, 2}, {0, 2, 5, 4}}});
  ASSERT_EQ(r.size(), 1u);
  // Differences 1, 0, -2, 0: (1 + 0 + 4 + 0) / 4.
  expectArray(r[0], {}, {1.25});
}

} // namespace
