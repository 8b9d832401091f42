// Numerical check of colo-split-batch (passes/SplitBatch.cpp): the forward
// rewritten for half of the batch, evaluated by the reference interpreter on
// the first half of a random batch, equals the first half of every result
// of the original forward on the whole batch. The rewritten IR itself is
// tested in lit (test/Passes/colo-split-batch.mlir).
#include "colo/Interpreter/Interpreter.h"
#include "colo/Passes/Passes.h"

#include "colo/Dialect/Colo/ColoDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

using colo::HostArray;

namespace {

class SplitBatchTest : public ::testing::Test {
protected:
  SplitBatchTest() {
    mlir::DialectRegistry registry;
    registry.insert<colo::ColoDialect, mlir::func::FuncDialect>();
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }

  /// Runs @forward of `ir` on `inputs` (batch in dimension 0 of each) and
  /// the forward split into 2 on the first half of each input; every split
  /// result must be the first half of the whole one.
  void expectSplitMatches(const std::string &ir, const std::vector<HostArray> &inputs) {
    auto whole = mlir::parseSourceString<mlir::ModuleOp>(ir, &ctx);
    auto split = mlir::parseSourceString<mlir::ModuleOp>(ir, &ctx);
    ASSERT_TRUE(whole && split) << ir;
    mlir::PassManager pm(&ctx);
    colo::ColoSplitBatchOptions options;
    options.parts = 2;
    pm.addPass(colo::createColoSplitBatch(options));
    ASSERT_TRUE(succeeded(pm.run(*split)));
    auto f = split->lookupSymbol<mlir::func::FuncOp>("forward");
    ASSERT_TRUE(f);
    auto parts = f->getAttrOfType<mlir::IntegerAttr>("colo.batch_parts");
    ASSERT_TRUE(parts);
    EXPECT_EQ(parts.getInt(), 2);

    std::vector<HostArray> halves;
    for (const HostArray &in : inputs)
      halves.push_back(firstHalf(in));
    auto expected = colo::interpret(*whole, inputs);
    auto actual = colo::interpret(*split, halves);
    ASSERT_TRUE(succeeded(expected) && succeeded(actual));
    ASSERT_EQ(expected->size(), actual->size());
    for (size_t r = 0; r < actual->size(); ++r) {
      HostArray want = firstHalf((*expected)[r]);
      const HostArray &got = (*actual)[r];
      EXPECT_EQ(got.shape, want.shape) << "result " << r;
      ASSERT_EQ(got.data.size(), want.data.size()) << "result " << r;
      for (size_t i = 0; i < got.data.size(); ++i)
        EXPECT_NEAR(got.data[i], want.data[i], 1e-6) << "result " << r << " element " << i;
    }
  }

  /// Rows [0, n/2) of dimension 0.
  static HostArray firstHalf(const HostArray &a) {
    HostArray h{a.shape, {}};
    h.shape[0] /= 2;
    h.data.assign(a.data.begin(), a.data.begin() + a.data.size() / 2);
    return h;
  }

  HostArray random(std::vector<int64_t> shape, double lo, double hi, bool integer = false) {
    HostArray a{shape, {}};
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    std::uniform_real_distribution<double> dist(lo, hi);
    for (int64_t i = 0; i < n; ++i)
      a.data.push_back(integer ? std::floor(dist(gen)) : dist(gen));
    return a;
  }

  mlir::MLIRContext ctx;
  std::mt19937_64 gen{42};
};

TEST_F(SplitBatchTest, MlpWithLayerNorm) {
  std::string ir = R"mlir(
colo.global trainable @fc1.weight : tensor<16x32xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.3 : f64>
colo.global trainable @fc1.bias : tensor<32xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.1 : f64>
colo.global trainable @ln.weight : tensor<32xf32> = #colo.init<distribution = "normal", a = 1.0 : f64, b = 0.1 : f64>
colo.global trainable @ln.bias : tensor<32xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.1 : f64>
colo.global trainable @fc2.weight : tensor<32x4xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.3 : f64>
func.func @forward(%x: tensor<8x16xf32>) -> (tensor<8x4xf32>, tensor<8x1xf32>) {
  %w1 = colo.global_load @fc1.weight : tensor<16x32xf32>
  %b1 = colo.global_load @fc1.bias : tensor<32xf32>
  %g = colo.global_load @ln.weight : tensor<32xf32>
  %be = colo.global_load @ln.bias : tensor<32xf32>
  %w2 = colo.global_load @fc2.weight : tensor<32x4xf32>
  %h = colo.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32>
  %hb = colo.add %h, %b1 : tensor<8x32xf32>, tensor<32xf32>
  %n = colo.layer_norm %hb scale %g : tensor<32xf32> bias %be : tensor<32xf32> {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<8x32xf32>
  %a = colo.gelu %n approximation = tanh : tensor<8x32xf32>
  %y = colo.matmul %a, %w2 : tensor<8x32xf32>, tensor<32x4xf32>
  %p = colo.softmax %y axis = 1 : tensor<8x4xf32>
  %s = colo.reduce_sum %a dims = [1] {keep_dims} : tensor<8x32xf32>
  return %p, %s : tensor<8x4xf32>, tensor<8x1xf32>
}
)mlir";
  expectSplitMatches(ir, {random({8, 16}, -1, 1)});
}

TEST_F(SplitBatchTest, GptBlock) {
  // An additive attention bias that is the same for every sample, expanded
  // to the batch as exporters write it: the split keeps its first half.
  std::string bias = "dense<[";
  for (int b = 0; b < 4; ++b) {
    bias += b ? ", [[" : "[[";
    for (int i = 0; i < 8; ++i) {
      bias += i ? ", [" : "[";
      for (int j = 0; j < 8; ++j)
        bias += (j ? ", " : "") + std::to_string(-0.25 * ((i + 2 * j) % 5));
      bias += "]";
    }
    bias += "]]";
  }
  bias += "]> : tensor<4x1x8x8xf32>";
  std::string ir = R"mlir(
colo.global trainable @wte : tensor<32x16xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.5 : f64>
colo.global trainable @wpe : tensor<8x16xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.5 : f64>
colo.global trainable @ln_1.weight : tensor<16xf32> = #colo.init<distribution = "normal", a = 1.0 : f64, b = 0.1 : f64>
colo.global trainable @c_attn.weight : tensor<16x48xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.3 : f64>
colo.global trainable @c_proj.weight : tensor<16x16xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.3 : f64>
func.func @forward(%ids: tensor<4x8xi64>) -> tensor<4x8x32xf32> {
  %pos = colo.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>
  %bias = colo.constant )mlir" + bias + R"mlir(
  %wte = colo.global_load @wte : tensor<32x16xf32>
  %wpe = colo.global_load @wpe : tensor<8x16xf32>
  %g = colo.global_load @ln_1.weight : tensor<16xf32>
  %wa = colo.global_load @c_attn.weight : tensor<16x48xf32>
  %wp = colo.global_load @c_proj.weight : tensor<16x16xf32>
  %te = colo.embedding %wte, %ids : tensor<32x16xf32>, tensor<4x8xi64>
  %pe = colo.embedding %wpe, %pos : tensor<8x16xf32>, tensor<1x8xi64>
  %h = colo.add %te, %pe : tensor<4x8x16xf32>, tensor<1x8x16xf32>
  %ln = colo.layer_norm %h scale %g : tensor<16xf32> {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<4x8x16xf32>
  %flat = colo.reshape %ln : tensor<4x8x16xf32> -> tensor<32x16xf32>
  %qkv = colo.matmul %flat, %wa : tensor<32x16xf32>, tensor<16x48xf32>
  %qkv3 = colo.reshape %qkv : tensor<32x48xf32> -> tensor<4x8x48xf32>
  %q = colo.slice %qkv3 start = [0, 0, 0] limit = [4, 8, 16] stride = [1, 1, 1] : tensor<4x8x48xf32>
  %k = colo.slice %qkv3 start = [0, 0, 16] limit = [4, 8, 32] stride = [1, 1, 1] : tensor<4x8x48xf32>
  %v = colo.slice %qkv3 start = [0, 0, 32] limit = [4, 8, 48] stride = [1, 1, 1] : tensor<4x8x48xf32>
  %q4 = colo.reshape %q : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
  %k4 = colo.reshape %k : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
  %v4 = colo.reshape %v : tensor<4x8x16xf32> -> tensor<4x8x2x8xf32>
  %qh = colo.transpose %q4 permutation = [0, 2, 1, 3] : tensor<4x8x2x8xf32>
  %kh = colo.transpose %k4 permutation = [0, 2, 1, 3] : tensor<4x8x2x8xf32>
  %vh = colo.transpose %v4 permutation = [0, 2, 1, 3] : tensor<4x8x2x8xf32>
  %o = colo.attention %qh, %kh, %vh mask %bias {causal, scale = 0.35355339059327379 : f64} : tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32>, tensor<4x2x8x8xf32>, tensor<4x1x8x8xf32>
  %ot = colo.transpose %o permutation = [0, 2, 1, 3] : tensor<4x2x8x8xf32>
  %of = colo.reshape %ot : tensor<4x8x2x8xf32> -> tensor<32x16xf32>
  %pr = colo.matmul %of, %wp : tensor<32x16xf32>, tensor<16x16xf32>
  %p3 = colo.reshape %pr : tensor<32x16xf32> -> tensor<4x8x16xf32>
  %res = colo.add %p3, %h : tensor<4x8x16xf32>, tensor<4x8x16xf32>
  %wt = colo.transpose %wte permutation = [1, 0] : tensor<32x16xf32>
  %logits = colo.matmul %res, %wt : tensor<4x8x16xf32>, tensor<16x32xf32>
  return %logits : tensor<4x8x32xf32>
}
)mlir";
  expectSplitMatches(ir, {random({4, 8}, 0, 32, /*integer=*/true)});
}

TEST_F(SplitBatchTest, ConvBatchNormInferencePool) {
  // Inference-mode batch norm uses the running statistics: the split is
  // exact (training mode would use per-slice statistics instead).
  std::string ir = R"mlir(
colo.global trainable @conv.weight : tensor<4x3x3x3xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.3 : f64>
colo.global trainable @bn.weight : tensor<4xf32> = #colo.init<distribution = "normal", a = 1.0 : f64, b = 0.1 : f64>
colo.global trainable @bn.bias : tensor<4xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 0.1 : f64>
colo.global @bn.running_mean : tensor<4xf32> = dense<[0.1, -0.2, 0.0, 0.3]> : tensor<4xf32>
colo.global @bn.running_var : tensor<4xf32> = dense<[1.0, 0.5, 2.0, 1.5]> : tensor<4xf32>
func.func @forward(%x: tensor<4x3x8x8xf32>) -> tensor<4x64xf32> {
  %w = colo.global_load @conv.weight : tensor<4x3x3x3xf32>
  %g = colo.global_load @bn.weight : tensor<4xf32>
  %b = colo.global_load @bn.bias : tensor<4xf32>
  %rm = colo.global_load @bn.running_mean : tensor<4xf32>
  %rv = colo.global_load @bn.running_var : tensor<4xf32>
  %c = colo.conv2d %x, %w {padding = array<i64: 1, 1, 1, 1>} : tensor<4x3x8x8xf32>, tensor<4x3x3x3xf32>
  %y, %m, %v = colo.batch_norm %c, %g, %b, %rm, %rv {epsilon = 1.0e-05 : f64, momentum = 0.1 : f64} : tensor<4x4x8x8xf32>, tensor<4xf32>
  %r = colo.relu %y : tensor<4x4x8x8xf32>
  %p = colo.max_pool2d %r {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<4x4x8x8xf32>
  %f = colo.reshape %p : tensor<4x4x4x4xf32> -> tensor<4x64xf32>
  return %f : tensor<4x64xf32>
}
)mlir";
  expectSplitMatches(ir, {random({4, 3, 8, 8}, -1, 1)});
}

} // namespace
