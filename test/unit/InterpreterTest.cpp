// Unit tests of the reference interpreter (lib/Interpreter): small colo
// functions evaluated on values worked out by hand.
#include "colo/Interpreter/Interpreter.h"

#include "colo/Dialect/Colo/ColoDialect.h"
#include "colo/Dialect/Colo/ColoOps.h"
#include "Initializer.h"

#include "StateWriter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
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

/// Deterministic values in [-1, 1) (a linear congruential sequence).
std::vector<double> pseudoRandom(size_t n, uint64_t seed) {
  std::vector<double> v(n);
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (double &x : v) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<double>(state >> 11) * 0x1.0p-52 - 1.0;
  }
  return v;
}

double dot(const std::vector<double> &a, const std::vector<double> &b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i)
    s += a[i] * b[i];
  return s;
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

//===----------------------------------------------------------------------===//
// Model state across calls
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, GlobalStorePersistsAcrossCalls) {
  // A step counter and a running sum; the store rounds 1/3 to f32.
  auto module = mlir::parseSourceString<mlir::ModuleOp>(R"(
    colo.global @t : tensor<i64> = dense<0> : tensor<i64>
    colo.global @acc : tensor<2xf32> = #colo.init<distribution = "zeros", a = 0.0 : f64, b = 0.0 : f64>
    func.func @step(%x: tensor<2xf32>) -> (tensor<i64>, tensor<2xf32>) {
      %t0 = colo.global_load @t : tensor<i64>
      %one = colo.constant dense<1> : tensor<i64>
      %t = colo.add %t0, %one : tensor<i64>, tensor<i64>
      colo.global_store @t, %t : tensor<i64>
      %a0 = colo.global_load @acc : tensor<2xf32>
      %a = colo.add %a0, %x : tensor<2xf32>, tensor<2xf32>
      colo.global_store @acc, %a : tensor<2xf32>
      %a1 = colo.global_load @acc : tensor<2xf32>
      return %t, %a1 : tensor<i64>, tensor<2xf32>
    }
    func.func @third() -> tensor<f32> {
      %one = colo.constant dense<1.0> : tensor<f32>
      %three = colo.constant dense<3.0> : tensor<f32>
      %d = colo.div %one, %three : tensor<f32>, tensor<f32>
      return %d : tensor<f32>
    }
    func.func @store_third() {
      %one = colo.constant dense<1.0> : tensor<2xf32>
      %three = colo.constant dense<3.0> : tensor<f32>
      %d = colo.div %one, %three : tensor<2xf32>, tensor<f32>
      colo.global_store @acc, %d : tensor<2xf32>
      return
    })",
                                                        &ctx);
  ASSERT_TRUE(module);
  colo::Interpreter interp(*module);
  for (int i = 1; i <= 3; ++i) {
    auto r = interp.call("step", {HostArray{{2}, {1.0, 0.5 * i}}});
    ASSERT_TRUE(succeeded(r));
    expectArray((*r)[0], {}, {static_cast<double>(i)});
    // The load after the store in the same call sees the new value.
    expectArray((*r)[1], {2}, {static_cast<double>(i), 0.25 * i * (i + 1)});
  }
  HostArray *t = interp.global("t");
  ASSERT_TRUE(t);
  expectArray(*t, {}, {3});
  // Ops compute in double; only the store rounds to the global's f32.
  auto third = interp.call("third", {});
  ASSERT_TRUE(succeeded(third));
  EXPECT_EQ((*third)[0].data[0], 1.0 / 3.0);
  ASSERT_TRUE(succeeded(interp.call("store_third", {})));
  HostArray *acc = interp.global("acc");
  ASSERT_TRUE(acc);
  double f = static_cast<float>(1.0 / 3.0);
  EXPECT_NE(f, 1.0 / 3.0);
  expectArray(*acc, {2}, {f, f}, 0.0);
  // setGlobal rounds the same way and checks the shape.
  ASSERT_TRUE(succeeded(interp.setGlobal("acc", HostArray{{2}, {0.1, 2.0}})));
  expectArray(*interp.global("acc"), {2}, {static_cast<float>(0.1), 2.0}, 0.0);
  // A fresh interpreter starts from the initial values again.
  colo::Interpreter fresh(*module);
  expectArray(*fresh.global("t"), {}, {0});
}

TEST_F(InterpreterTest, GlobalAccessErrors) {
  auto module = mlir::parseSourceString<mlir::ModuleOp>(R"(
    colo.global @w : tensor<2xf32> = dense<[1.0, 2.0]> : tensor<2xf32>
    func.func @forward() -> tensor<2xf32> {
      %w = colo.global_load @w : tensor<2xf32>
      return %w : tensor<2xf32>
    })",
                                                        &ctx);
  ASSERT_TRUE(module);
  std::vector<std::string> messages;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    messages.push_back(d.str());
    return mlir::success();
  });
  colo::Interpreter interp(*module);
  EXPECT_EQ(interp.global("nope"), nullptr);
  EXPECT_TRUE(failed(interp.setGlobal("w", HostArray{{3}, {1, 2, 3}})));
  EXPECT_TRUE(failed(interp.call("missing", {})));
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_NE(messages[0].find("no colo.global named 'nope'"), std::string::npos);
  EXPECT_NE(messages[1].find("cannot be stored in global 'w'"), std::string::npos);
  EXPECT_NE(messages[2].find("no func.func @missing"), std::string::npos);
  expectArray(*interp.global("w"), {2}, {1, 2});
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

TEST_F(InterpreterTest, ScatterAddAccumulatesRepeatedAndNegativeIndices) {
  auto r = run(R"(
    func.func @forward(%u: tensor<2x3xf32>, %i: tensor<3xi64>, %e: tensor<2x2xf32>,
                       %ids: tensor<2xi32>) -> (tensor<2x4xf32>, tensor<3x2xf32>) {
      %0 = colo.scatter_add %u, %i axis = 1 : tensor<2x3xf32>, tensor<3xi64> -> tensor<2x4xf32>
      %1 = colo.scatter_add %e, %ids axis = -2 : tensor<2x2xf32>, tensor<2xi32> -> tensor<3x2xf32>
      return %0, %1 : tensor<2x4xf32>, tensor<3x2xf32>
    })",
               {{{2, 3}, {1, 2, 3, 4, 5, 6}},
                {{3}, {3, -1, 0}},
                {{2, 2}, {1, 2, 10, 20}},
                {{2}, {2, 2}}});
  ASSERT_EQ(r.size(), 2u);
  // Indices 3 and -1 both name column 3.
  expectArray(r[0], {2, 4}, {3, 0, 0, 3, 6, 0, 0, 9});
  expectArray(r[1], {3, 2}, {0, 0, 0, 0, 11, 22});
}

TEST_F(InterpreterTest, SliceBackwardPlacesTheGradient) {
  auto r = run(R"(
    func.func @forward(%d: tensor<2x2xf32>) -> tensor<5x4xf32> {
      %0 = colo.slice_backward %d start = [1, 0] limit = [5, 4] stride = [2, 3]
           : tensor<2x2xf32> -> tensor<5x4xf32>
      return %0 : tensor<5x4xf32>
    })",
               {{{2, 2}, {1, 2, 3, 4}}});
  ASSERT_EQ(r.size(), 1u);
  expectArray(r[0], {5, 4}, {0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 4, 0, 0, 0, 0});
}

TEST_F(InterpreterTest, Conv2dBackwardByHand) {
  // x = [[1, 2], [3, 4]], w = [[1, 10]] (1x2 kernel), no padding: y = [21, 43].
  // dx[h, w'] = sum of dy[h] * w[w' - ow]; dw[k] = sum of dy[h] * x[h, k].
  auto r = run(R"(
    func.func @forward(%x: tensor<1x1x2x2xf32>, %w: tensor<1x1x1x2xf32>,
                       %dy: tensor<1x1x2x1xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x1x2xf32>) {
      %dx = colo.conv2d_backward_input %dy, %w
            : tensor<1x1x2x1xf32>, tensor<1x1x1x2xf32> -> tensor<1x1x2x2xf32>
      %dw = colo.conv2d_backward_filter %x, %dy
            : tensor<1x1x2x2xf32>, tensor<1x1x2x1xf32> -> tensor<1x1x1x2xf32>
      return %dx, %dw : tensor<1x1x2x2xf32>, tensor<1x1x1x2xf32>
    })",
               {{{1, 1, 2, 2}, {1, 2, 3, 4}}, {{1, 1, 1, 2}, {1, 10}}, {{1, 1, 2, 1}, {1, -1}}});
  ASSERT_EQ(r.size(), 2u);
  expectArray(r[0], {1, 1, 2, 2}, {1, 10, -1, -10});
  expectArray(r[1], {1, 1, 1, 2}, {1 - 3, 2 - 4});
}

TEST_F(InterpreterTest, Conv2dBackwardIsTheAdjoint) {
  // <dy, conv(x, w)> = <conv_backward_input(dy, w), x>
  //                  = <conv_backward_filter(x, dy), w>
  // for strides, asymmetric padding, dilation and groups together.
  auto r = run(R"(
    func.func @forward(%x: tensor<2x4x7x6xf64>, %w: tensor<6x2x3x2xf64>,
                       %dy: tensor<2x6x3x2xf64>)
        -> (tensor<2x6x3x2xf64>, tensor<2x4x7x6xf64>, tensor<6x2x3x2xf64>) {
      %y = colo.conv2d %x, %w {strides = array<i64: 2, 3>, padding = array<i64: 2, 1, 1, 0>,
             dilations = array<i64: 2, 2>, groups = 2 : i64}
           : tensor<2x4x7x6xf64>, tensor<6x2x3x2xf64>
      %dx = colo.conv2d_backward_input %dy, %w {strides = array<i64: 2, 3>,
              padding = array<i64: 2, 1, 1, 0>, dilations = array<i64: 2, 2>, groups = 2 : i64}
            : tensor<2x6x3x2xf64>, tensor<6x2x3x2xf64> -> tensor<2x4x7x6xf64>
      %dw = colo.conv2d_backward_filter %x, %dy {strides = array<i64: 2, 3>,
              padding = array<i64: 2, 1, 1, 0>, dilations = array<i64: 2, 2>, groups = 2 : i64}
            : tensor<2x4x7x6xf64>, tensor<2x6x3x2xf64> -> tensor<6x2x3x2xf64>
      return %y, %dx, %dw : tensor<2x6x3x2xf64>, tensor<2x4x7x6xf64>, tensor<6x2x3x2xf64>
    })",
               {HostArray{{2, 4, 7, 6}, pseudoRandom(2 * 4 * 7 * 6, 1)},
                HostArray{{6, 2, 3, 2}, pseudoRandom(6 * 2 * 3 * 2, 2)},
                HostArray{{2, 6, 3, 2}, pseudoRandom(2 * 6 * 3 * 2, 3)}});
  ASSERT_EQ(r.size(), 3u);
  double dyY = dot(pseudoRandom(2 * 6 * 3 * 2, 3), r[0].data);
  double tol = 1e-12 * std::abs(dyY) + 1e-12;
  EXPECT_NEAR(dot(r[1].data, pseudoRandom(2 * 4 * 7 * 6, 1)), dyY, tol);
  EXPECT_NEAR(dot(r[2].data, pseudoRandom(6 * 2 * 3 * 2, 2)), dyY, tol);
  EXPECT_GT(std::abs(dyY), 1e-3);
}

TEST_F(InterpreterTest, MaxPoolBackwardRoutesToFirstMaximum) {
  // Ties go to the first maximal element of the window in row-major order;
  // padding is skipped, not a zero that beats negative inputs.
  auto r = run(R"(
    func.func @forward(%x: tensor<1x1x3x3xf32>, %dy: tensor<1x1x2x2xf32>,
                       %n: tensor<1x1x3x3xf32>) -> (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) {
      %0 = colo.max_pool2d_backward %x, %dy {kernel = array<i64: 2, 2>}
           : tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32>
      %1 = colo.max_pool2d_backward %n, %dy {kernel = array<i64: 3, 3>,
             strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>}
           : tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32>
      return %0, %1 : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>
    })",
               {{{1, 1, 3, 3}, {1, 5, 5, 5, 2, 0, 0, 0, 5}},
                {{1, 1, 2, 2}, {1, 2, 3, 4}},
                {{1, 1, 3, 3}, {-1, -2, -3, -4, -5, -6, -7, -8, -9}}});
  ASSERT_EQ(r.size(), 2u);
  // Windows: [1 5; 5 2] -> (0,1); [5 5; 2 0] -> (0,1); [5 2; 0 0] -> (1,0);
  // [2 0; 0 5] -> (2,2).
  expectArray(r[0], {1, 1, 3, 3}, {0, 3, 0, 3, 0, 0, 0, 0, 4});
  // Each padded window's maximum is its top-left valid element.
  expectArray(r[1], {1, 1, 3, 3}, {1, 2, 0, 3, 4, 0, 0, 0, 0});
}

TEST_F(InterpreterTest, AvgPoolBackwardWithAndWithoutPadCount) {
  auto r = run(R"(
    func.func @forward(%dy: tensor<1x1x2x2xf32>) -> (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) {
      %0 = colo.avg_pool2d_backward %dy {kernel = array<i64: 2, 2>,
             strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>}
           : tensor<1x1x2x2xf32> -> tensor<1x1x3x3xf32>
      %1 = colo.avg_pool2d_backward %dy {kernel = array<i64: 2, 2>,
             strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, count_include_pad}
           : tensor<1x1x2x2xf32> -> tensor<1x1x3x3xf32>
      return %0, %1 : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>
    })",
               {{{1, 1, 2, 2}, {4, 8, 12, 16}}});
  ASSERT_EQ(r.size(), 2u);
  // The windows hold 1, 2, 2 and 4 valid elements.
  expectArray(r[0], {1, 1, 3, 3}, {4, 4, 4, 6, 4, 4, 6, 4, 4});
  expectArray(r[1], {1, 1, 3, 3}, {1, 2, 2, 3, 4, 4, 3, 4, 4});
}

TEST_F(InterpreterTest, BatchNormBackwardMatchesTheJacobian) {
  // dx_i = sum_j dy_j dy_j/dx_i with, per channel of M elements,
  // d y_j / d x_i = g rstd (delta_ij - 1/M - xhat_i xhat_j / M).
  std::vector<double> x = pseudoRandom(2 * 3 * 4, 7), dy = pseudoRandom(2 * 3 * 4, 8);
  std::vector<double> g = {1.5, -0.5, 2.0};
  auto r = run(R"(
    func.func @forward(%x: tensor<2x3x4xf64>, %g: tensor<3xf64>, %dy: tensor<2x3x4xf64>)
        -> (tensor<2x3x4xf64>, tensor<3xf64>, tensor<3xf64>) {
      %dx, %dg, %db = colo.batch_norm_backward %x, %g, %dy {epsilon = 1.0e-03 : f64}
          : tensor<2x3x4xf64>, tensor<3xf64>
      return %dx, %dg, %db : tensor<2x3x4xf64>, tensor<3xf64>, tensor<3xf64>
    })",
               {{{2, 3, 4}, x}, {{3}, g}, {{2, 3, 4}, dy}});
  ASSERT_EQ(r.size(), 3u);
  std::vector<double> dx(24), dg(3), db(3);
  for (int c = 0; c < 3; ++c) {
    std::vector<int> at;
    for (int n = 0; n < 2; ++n)
      for (int i = 0; i < 4; ++i)
        at.push_back((n * 3 + c) * 4 + i);
    double mean = 0, var = 0, M = at.size();
    for (int i : at)
      mean += x[i] / M;
    for (int i : at)
      var += (x[i] - mean) * (x[i] - mean) / M;
    double rstd = 1 / std::sqrt(var + 1e-3);
    for (int i : at) {
      double xi = (x[i] - mean) * rstd;
      dg[c] += dy[i] * xi;
      db[c] += dy[i];
      for (int j : at) {
        double xj = (x[j] - mean) * rstd;
        dx[i] += dy[j] * g[c] * rstd * ((i == j) - 1 / M - xi * xj / M);
      }
    }
  }
  expectArray(r[0], {2, 3, 4}, dx);
  expectArray(r[1], {3}, dg);
  expectArray(r[2], {3}, db);
}

TEST_F(InterpreterTest, CrossEntropyBackwardIgnoreAndSmoothing) {
  std::vector<double> x = pseudoRandom(2 * 3 * 4, 9);
  std::vector<double> labels = {2, -1, 0, 3, 3, -1};
  auto r = run(R"(
    func.func @forward(%x: tensor<2x3x4xf64>, %y: tensor<2x3xi64>, %d: tensor<f64>)
        -> tensor<2x3x4xf64> {
      %0 = colo.cross_entropy_backward %x, %y, %d
           {ignore_index = -1 : i64, label_smoothing = 2.0e-01 : f64}
           : tensor<2x3x4xf64>, tensor<2x3xi64>, tensor<f64>
      return %0 : tensor<2x3x4xf64>
    })",
               {{{2, 3, 4}, x}, {{2, 3}, labels}, {{}, {3.0}}});
  ASSERT_EQ(r.size(), 1u);
  // Four positions count; the target mixes one-hot with 0.2 / 4 everywhere.
  std::vector<double> expected(24, 0.0);
  for (int n = 0; n < 6; ++n) {
    if (labels[n] == -1)
      continue;
    double z = 0;
    for (int c = 0; c < 4; ++c)
      z += std::exp(x[n * 4 + c]);
    for (int c = 0; c < 4; ++c)
      expected[n * 4 + c] =
          3.0 / 4 * (std::exp(x[n * 4 + c]) / z - (0.8 * (c == labels[n]) + 0.05));
  }
  expectArray(r[0], {2, 3, 4}, expected);
}

//===----------------------------------------------------------------------===//
// Optimizer updates: three steps of a @step function that keeps the state in
// globals, against PyTorch's formulas written out here.
//===----------------------------------------------------------------------===//

/// Runs @step(grad, lr) `grads.size()` times and returns the parameter after
/// each step. `update` is the update op's text over %w, %g, %s1 (and %s2),
/// %lr and %t, defining %p and the new states %n1 (and %n2).
std::vector<std::vector<double>> runSteps(mlir::MLIRContext &ctx, const std::string &update,
                                          bool twoStates, std::vector<double> param,
                                          const std::vector<std::vector<double>> &grads,
                                          double lr) {
  std::string n = std::to_string(param.size());
  std::string t = "tensor<" + n + "xf64>";
  std::string init;
  for (double p : param)
    init += (init.empty() ? "" : ", ") + std::to_string(p);
  std::string ir = "colo.global @w : " + t + " = dense<[" + init + "]> : " + t + "\n" +
                   "colo.global @s1 : " + t + " = dense<0.0> : " + t + "\n" +
                   "colo.global @s2 : " + t + " = dense<0.0> : " + t + "\n" +
                   "colo.global @t : tensor<i64> = dense<0> : tensor<i64>\n" +
                   "func.func @step(%g: " + t + ", %lr: tensor<f32>) -> " + t + " {\n" +
                   "  %w = colo.global_load @w : " + t + "\n" +
                   "  %s1 = colo.global_load @s1 : " + t + "\n" +
                   "  %s2 = colo.global_load @s2 : " + t + "\n" +
                   "  %t0 = colo.global_load @t : tensor<i64>\n" +
                   "  %one = colo.constant dense<1> : tensor<i64>\n" +
                   "  %t = colo.add %t0, %one : tensor<i64>, tensor<i64>\n" + update +
                   "\n" +
                   "  colo.global_store @w, %p : " + t + "\n" +
                   "  colo.global_store @s1, %n1 : " + t + "\n" +
                   (twoStates ? "  colo.global_store @s2, %n2 : " + t + "\n" : "") +
                   "  colo.global_store @t, %t : tensor<i64>\n" + "  return %p : " + t +
                   "\n}\n";
  auto module = mlir::parseSourceString<mlir::ModuleOp>(ir, &ctx);
  EXPECT_TRUE(module) << ir;
  if (!module)
    return {};
  colo::Interpreter interp(*module);
  std::vector<std::vector<double>> params;
  for (const std::vector<double> &g : grads) {
    auto r = interp.call("step", {HostArray{{static_cast<int64_t>(g.size())}, g},
                                  HostArray{{}, {lr}}});
    EXPECT_TRUE(succeeded(r));
    if (failed(r))
      return {};
    params.push_back((*r)[0].data);
  }
  return params;
}

const std::vector<std::vector<double>> kGrads = {
    {0.5, -1.0, 2.0}, {0.25, 0.5, -1.5}, {-0.75, 1.0, 0.125}};
const std::vector<double> kParam = {1.0, -2.0, 0.5};

void expectSteps(const std::vector<std::vector<double>> &got,
                 const std::vector<std::vector<double>> &want, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t s = 0; s < got.size(); ++s) {
    ASSERT_EQ(got[s].size(), want[s].size());
    for (size_t i = 0; i < got[s].size(); ++i)
      EXPECT_NEAR(got[s][i], want[s][i], tol) << "step " << s + 1 << " element " << i;
  }
}

struct SgdConfig {
  double momentum, dampening, weightDecay;
  bool nesterov;
};

TEST_F(InterpreterTest, SgdUpdateMatchesTorchOptimSgd) {
  // lr as f32: 0.1 is not exact, and the op reads the rounded value.
  double lr = static_cast<float>(0.1);
  for (SgdConfig cfg : {SgdConfig{0.0, 0.0, 0.0, false}, SgdConfig{0.0, 0.0, 0.01, false},
                        SgdConfig{0.9, 0.0, 0.0, false}, SgdConfig{0.9, 0.1, 0.01, false},
                        SgdConfig{0.9, 0.0, 0.01, true}}) {
    std::string update =
        "  %p, %n1 = colo.sgd_update %w, %g, %s1, %lr, %t {momentum = " +
        std::to_string(cfg.momentum) +
        " : f64, dampening = " + std::to_string(cfg.dampening) + " : f64, weight_decay = " + std::to_string(cfg.weightDecay) + " : f64" +
        (cfg.nesterov ? ", nesterov" : "") + "} : tensor<3xf64>";
    // torch.optim.SGD.step, one parameter.
    std::vector<double> p = kParam, buf(3);
    std::vector<std::vector<double>> want;
    for (size_t step = 0; step < kGrads.size(); ++step) {
      for (int i = 0; i < 3; ++i) {
        double d = kGrads[step][i];
        if (cfg.weightDecay != 0)
          d += cfg.weightDecay * p[i];
        if (cfg.momentum != 0) {
          buf[i] = step == 0 ? d : cfg.momentum * buf[i] + (1 - cfg.dampening) * d;
          d = cfg.nesterov ? d + cfg.momentum * buf[i] : buf[i];
        }
        p[i] -= lr * d;
      }
      want.push_back(p);
    }
    SCOPED_TRACE(update);
    expectSteps(runSteps(ctx, update, false, kParam, kGrads, lr), want);
  }
  // By hand: momentum 0.9, dampening 0.5, lr 0.5, gradient 1 twice: the
  // buffer is 1, then 0.9 * 1 + 0.5 * 1 (no dampening on the first step).
  auto byHand = runSteps(ctx,
                         "  %p, %n1 = colo.sgd_update %w, %g, %s1, %lr, %t {momentum = 0.9 : "
                         "f64, dampening = 0.5 : f64, weight_decay = 0.0 : f64} : tensor<1xf64>",
                         false, {1.0}, {{1.0}, {1.0}}, 0.5);
  // 1 - 0.5 * 1, then 0.5 - 0.5 * 1.4.
  expectSteps(byHand, {{0.5}, {-0.2}});
}

struct AdamConfig {
  double weightDecay;
  bool decoupled;
};

TEST_F(InterpreterTest, AdamUpdateMatchesTorchOptimAdamAndAdamW) {
  double lr = static_cast<float>(0.01), b1 = 0.9, b2 = 0.999, eps = 1e-8;
  for (AdamConfig cfg : {AdamConfig{0.0, false}, AdamConfig{0.1, false},
                         AdamConfig{0.1, true}}) {
    std::string update =
        "  %p, %n1, %n2 = colo.adam_update %w, %g, %s1, %s2, %lr, %t {beta1 = 0.9 : f64, "
        "beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64, weight_decay = " +
        std::to_string(cfg.weightDecay) + " : f64" + (cfg.decoupled ? ", decoupled" : "") +
        "} : tensor<3xf64>";
    // torch.optim.Adam / AdamW (_single_tensor_adam), one parameter.
    std::vector<double> p = kParam, m(3), v(3);
    std::vector<std::vector<double>> want;
    for (size_t step = 1; step <= kGrads.size(); ++step) {
      for (int i = 0; i < 3; ++i) {
        double g = kGrads[step - 1][i];
        if (cfg.decoupled)
          p[i] *= 1 - lr * cfg.weightDecay;
        else
          g += cfg.weightDecay * p[i];
        m[i] = b1 * m[i] + (1 - b1) * g;
        v[i] = b2 * v[i] + (1 - b2) * g * g;
        double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
        double denom = std::sqrt(v[i]) / std::sqrt(bc2) + eps;
        p[i] -= lr / bc1 * m[i] / denom;
      }
      want.push_back(p);
    }
    SCOPED_TRACE(update);
    expectSteps(runSteps(ctx, update, true, kParam, kGrads, lr), want);
  }
  // By hand: the bias-corrected first step moves each weight by lr * sign(g)
  // (up to eps).
  auto first = runSteps(ctx,
                        "  %p, %n1, %n2 = colo.adam_update %w, %g, %s1, %s2, %lr, %t "
                        "{beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 0.0 : f64, "
                        "weight_decay = 0.0 : f64} : tensor<3xf64>",
                        true, kParam, {kGrads[0]}, 0.5);
  expectSteps(first, {{0.5, -1.5, 0.0}});
}

TEST_F(InterpreterTest, LambUpdateFollowsItsDefinition) {
  double lr = static_cast<float>(0.01), b1 = 0.9, b2 = 0.999, eps = 1e-6;
  for (double wd : {0.0, 0.01}) {
    std::string update =
        "  %p, %n1, %n2 = colo.lamb_update %w, %g, %s1, %s2, %lr, %t {beta1 = 0.9 : f64, "
        "beta2 = 0.999 : f64, epsilon = 1.0e-06 : f64, weight_decay = " +
        std::to_string(wd) + " : f64} : tensor<3xf64>";
    std::vector<double> p = kParam, m(3), v(3);
    std::vector<std::vector<double>> want;
    for (size_t step = 1; step <= kGrads.size(); ++step) {
      std::vector<double> r(3);
      double pn = 0, rn = 0;
      for (int i = 0; i < 3; ++i) {
        double g = kGrads[step - 1][i];
        m[i] = b1 * m[i] + (1 - b1) * g;
        v[i] = b2 * v[i] + (1 - b2) * g * g;
        double mHat = m[i] / (1 - std::pow(b1, step));
        double vHat = v[i] / (1 - std::pow(b2, step));
        r[i] = mHat / (std::sqrt(vHat) + eps) + wd * p[i];
        pn += p[i] * p[i];
        rn += r[i] * r[i];
      }
      double trust = std::sqrt(pn) / std::sqrt(rn);
      for (int i = 0; i < 3; ++i)
        p[i] -= lr * trust * r[i];
      want.push_back(p);
    }
    SCOPED_TRACE(update);
    expectSteps(runSteps(ctx, update, true, kParam, kGrads, lr), want);
  }
  // A zero parameter has trust ratio 1: the step is lr * m_hat / (sqrt(v_hat) + eps).
  auto zero = runSteps(ctx,
                       "  %p, %n1, %n2 = colo.lamb_update %w, %g, %s1, %s2, %lr, %t "
                       "{beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 0.0 : f64, "
                       "weight_decay = 0.0 : f64} : tensor<2xf64>",
                       true, {0.0, 0.0}, {{2.0, -0.5}}, 0.25);
  expectSteps(zero, {{-0.25, 0.25}});
}

TEST_F(InterpreterTest, LarsUpdateFollowsItsDefinition) {
  double lr = static_cast<float>(0.1), momentum = 0.9, tc = 0.001, eps = 1e-8;
  for (double wd : {0.0, 1e-4}) {
    std::string update =
        "  %p, %n1 = colo.lars_update %w, %g, %s1, %lr, %t {momentum = 0.9 : f64, "
        "weight_decay = " +
        std::to_string(wd) +
        " : f64, trust_coefficient = 1.0e-03 : f64, epsilon = 1.0e-08 : f64} : tensor<3xf64>";
    std::vector<double> p = kParam, buf(3);
    std::vector<std::vector<double>> want;
    for (const std::vector<double> &g : kGrads) {
      double pn = 0, gn = 0;
      for (int i = 0; i < 3; ++i) {
        pn += p[i] * p[i];
        gn += g[i] * g[i];
      }
      pn = std::sqrt(pn);
      gn = std::sqrt(gn);
      double local = tc * pn / (gn + wd * pn + eps);
      for (int i = 0; i < 3; ++i) {
        buf[i] = momentum * buf[i] + lr * local * (g[i] + wd * p[i]);
        p[i] -= buf[i];
      }
      want.push_back(p);
    }
    SCOPED_TRACE(update);
    expectSteps(runSteps(ctx, update, false, kParam, kGrads, lr), want);
  }
  // A zero gradient norm makes the local rate 1 (and the step zero here).
  auto zero = runSteps(ctx,
                       "  %p, %n1 = colo.lars_update %w, %g, %s1, %lr, %t {momentum = 0.5 : "
                       "f64, weight_decay = 0.5 : f64, trust_coefficient = 1.0e-03 : f64, "
                       "epsilon = 0.0 : f64} : tensor<2xf64>",
                       false, {2.0, -4.0}, {{0.0, 0.0}, {0.0, 0.0}}, 0.25);
  // buf = 0.25 * 1 * 0.5 * p: step 1 p = 0.875 p0; step 2 buf = 0.5 buf +
  // 0.125 * p1.
  double b1 = 0.125, p1 = 1 - b1, b2 = 0.5 * b1 + 0.125 * p1;
  expectSteps(zero, {{2.0 * p1, -4.0 * p1}, {2.0 * (p1 - b2), -4.0 * (p1 - b2)}});
}

} // namespace

// The runtime makes the initial values of fills and #colo.init specs
// (runtime/Initializer.cpp) that the compiler used to take from the
// interpreter: it must make the interpreter's bits, in every rounding case
// (bf16 directly from double, its subnormals, overflow to infinity).
// @midpoint is 1 + 2^-8 + 2^-30: to bf16 it rounds up, through float
// (to 1 + 2^-8, a tie) down to 1.
TEST(RuntimeInitializer, MakesTheInterpretersValues) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<colo::ColoDialect, mlir::func::FuncDialect>();
  const char *src = R"mlir(
    colo.global @normal : tensor<1000x7xf32> = #colo.init<distribution = "normal", a = 0.5 : f64, b = 2.0e-02 : f64>
    colo.global @uniform : tensor<3001xf32> = #colo.init<distribution = "uniform", a = -0.1 : f64, b = 0.3 : f64>
    colo.global @wide : tensor<4001xf64> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 1.0e+03 : f64>
    colo.global @half : tensor<5003xbf16> = #colo.init<distribution = "normal", a = 1.0 : f64, b = 0.3 : f64>
    colo.global @tiny : tensor<5003xbf16> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 3.0e-39 : f64>
    colo.global @huge : tensor<5003xbf16> = #colo.init<distribution = "uniform", a = 3.0e+38 : f64, b = 3.5e+38 : f64>
    colo.global @midpoint : tensor<3xbf16> = #colo.init<distribution = "uniform", a = 1.0039062509313226 : f64, b = 1.0039062509313226 : f64>
    colo.global @ones : tensor<17xbf16> = #colo.init<distribution = "ones", a = 0.0 : f64, b = 0.0 : f64>
    colo.global @step : tensor<i64> = dense<3> : tensor<i64>
    colo.global @mask : tensor<4x4xi1> = dense<true> : tensor<4x4xi1>
    colo.global @fill : tensor<9xf32> = dense<-2.5> : tensor<9xf32>
  )mlir";
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(src, &ctx);
  ASSERT_TRUE(module);
  colo::Interpreter interp(*module);
  namespace rt = colo::runtime;
  struct Case {
    const char *name;
    rt::DType dtype;
  } cases[] = {{"normal", rt::F32}, {"uniform", rt::F32}, {"wide", rt::F64},
               {"half", rt::BF16},  {"tiny", rt::BF16},   {"huge", rt::BF16},
               {"midpoint", rt::BF16}, {"ones", rt::BF16}, {"step", rt::I64},    {"mask", rt::BOOL},
               {"fill", rt::F32}};
  for (auto [name, dtype] : cases) {
    auto global = mlir::SymbolTable::lookupNearestSymbolFrom<colo::GlobalOp>(
        *module, mlir::StringAttr::get(&ctx, name));
    std::optional<rt::Initializer> init = colo::initializerOf(global, dtype);
    ASSERT_TRUE(init) << name;
    colo::HostArray *want = interp.global(name);
    ASSERT_NE(want, nullptr) << name;
    int64_t n = int64_t(want->data.size());
    std::vector<char> made(size_t(n * rt::dtypeSize(dtype)));
    rt::makeInitialValue(*init, dtype, n, made.data());
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) {
      double v = want->data[size_t(i)], got;
      if (dtype == rt::F32) {
        float f = reinterpret_cast<const float *>(made.data())[i], w = float(v);
        wrong += std::memcmp(&f, &w, 4) != 0;
        continue;
      }
      if (dtype == rt::BF16) {
        uint16_t b = reinterpret_cast<const uint16_t *>(made.data())[i];
        wrong += b != rt::floatToBf16(float(v));
        continue;
      }
      if (dtype == rt::F64)
        got = reinterpret_cast<const double *>(made.data())[i];
      else if (dtype == rt::I64)
        got = double(reinterpret_cast<const int64_t *>(made.data())[i]);
      else
        got = double(reinterpret_cast<const uint8_t *>(made.data())[i]);
      wrong += got != v;
    }
    EXPECT_EQ(wrong, 0) << name;
  }
}
