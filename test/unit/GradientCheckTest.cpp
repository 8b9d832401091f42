// Finite-difference checks of the gradient rules (passes/Autodiff.cpp).
//
// Each case is one op applied to function arguments. With a fixed random
// cotangent G per result, L(X) = sum(G * op(X)); the analytic gradient is
// what colo::buildOperandGradients builds from G (evaluated by the reference
// interpreter as `@forward(X)`), the numerical one is the central difference
// (L(X + h e_i) - L(X - h e_i)) / 2h in double precision. Adding an op is one
// table entry: its argument types and its MLIR text.
#include "colo/Interpreter/Interpreter.h"
#include "Training/Autodiff.h"

#include "colo/Dialect/Colo/ColoDialect.h"
#include "colo/Dialect/Colo/ColoOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

using colo::HostArray;
using namespace mlir;

namespace {

/// One op under test: `body` is the text of a function body whose arguments
/// are `%a0, %a1, ...` of the tensor types `args` (without `tensor<>`); its
/// last op is the one whose rule is checked (ops before it may build
/// constants). Float arguments get random values in [lo, hi), kept 0.05 away
/// from `kinks`; integer arguments need `fixed` values.
struct Case {
  Case(std::string name, std::vector<std::string> args, std::string body)
      : name(std::move(name)), args(std::move(args)), body(std::move(body)) {}

  Case &range(double l, double h) {
    lo = l;
    hi = h;
    return *this;
  }
  Case &fix(size_t arg, std::vector<double> values) {
    fixed.resize(std::max(fixed.size(), arg + 1));
    fixed[arg] = std::move(values);
    return *this;
  }
  Case &avoid(std::vector<double> points) {
    kinks = std::move(points);
    return *this;
  }
  /// Only the first `n` results get a cotangent (batch_norm's running
  /// statistics are not differentiated).
  Case &differentiate(int n) {
    gradResults = n;
    return *this;
  }
  Case &step(double s) {
    h = s;
    return *this;
  }

  std::string name;
  std::vector<std::string> args;
  std::string body;
  double lo = -1.0, hi = 1.0;
  std::vector<std::vector<double>> fixed;
  std::vector<double> kinks;
  int gradResults = -1;
  double h = 1e-6;
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

const double kTolerance = 1e-6;

std::vector<Case> cases() {
  const char *x34 = "3x4xf64";
  auto unary = [&](const char *name, const char *op) {
    return Case(name, {x34}, std::string("%r = colo.") + op + " %a0 : tensor<3x4xf64>");
  };
  std::vector<Case> c;
  // Elementwise, one operand.
  c.push_back(unary("neg", "neg"));
  c.push_back(unary("exp", "exp"));
  c.push_back(unary("log", "log").range(0.5, 2.0));
  c.push_back(unary("sqrt", "sqrt").range(0.5, 2.0));
  c.push_back(unary("rsqrt", "rsqrt").range(0.5, 2.0));
  c.push_back(unary("reciprocal", "reciprocal").range(0.5, 2.0));
  c.push_back(unary("tanh", "tanh").range(-2.0, 2.0));
  c.push_back(unary("erf", "erf").range(-2.0, 2.0));
  c.push_back(unary("sigmoid", "sigmoid").range(-3.0, 3.0));
  c.push_back(unary("relu", "relu").avoid({0.0}));
  c.push_back(unary("silu", "silu").range(-3.0, 3.0));
  c.push_back(unary("cos", "cos").range(-3.0, 3.0));
  c.push_back(unary("sin", "sin").range(-3.0, 3.0));
  c.push_back(unary("abs", "abs").avoid({0.0}));
  c.push_back(
      Case("gelu_erf", {x34}, "%r = colo.gelu %a0 : tensor<3x4xf64>").range(-3, 3));
  c.push_back(Case("gelu_tanh", {x34},
                   "%r = colo.gelu %a0 approximation = tanh : tensor<3x4xf64>")
                  .range(-3, 3));
  c.push_back(Case("clamp", {x34},
                   "%r = colo.clamp %a0 min = -5.0e-01 max = 5.0e-01 : tensor<3x4xf64>")
                  .avoid({-0.5, 0.5}));
  c.push_back(
      Case("dropout_zero", {x34}, "%r = colo.dropout %a0 ratio = 0.0 : tensor<3x4xf64>"));
  c.push_back(Case("dropout_keyed", {x34, "i64"},
                   "%r = colo.dropout %a0 key %a1 ratio = 3.0e-01 : tensor<3x4xf64>")
                  .fix(1, {7}));
  c.push_back(Case("convert_f32_f64", {"2x3xf32"},
                   "%r = colo.convert %a0 : tensor<2x3xf32> to tensor<2x3xf64>")
                  // f32 inputs: values and steps that f32 holds exactly.
                  .fix(0, {0.25, -0.5, 0.125, 1.0, -0.75, 0.0625})
                  .step(0x1.0p-10));

  // Elementwise, two operands, broadcasting.
  c.push_back(Case("add_broadcast", {"4x3xf64", "3xf64"},
                   "%r = colo.add %a0, %a1 : tensor<4x3xf64>, tensor<3xf64>"));
  c.push_back(Case("add_both_expand", {"4x1xf64", "1x3xf64"},
                   "%r = colo.add %a0, %a1 : tensor<4x1xf64>, tensor<1x3xf64>"));
  c.push_back(Case("sub_broadcast", {"2x1x3xf64", "4x3xf64"},
                   "%r = colo.sub %a0, %a1 : tensor<2x1x3xf64>, tensor<4x3xf64>"));
  c.push_back(Case("mul_scalar", {x34, "f64"},
                   "%r = colo.mul %a0, %a1 : tensor<3x4xf64>, tensor<f64>"));
  c.push_back(Case("mul_broadcast", {"2x3x1xf64", "3x4xf64"},
                   "%r = colo.mul %a0, %a1 : tensor<2x3x1xf64>, tensor<3x4xf64>"));
  c.push_back(Case("mul_same_operand", {x34},
                   "%r = colo.mul %a0, %a0 : tensor<3x4xf64>, tensor<3x4xf64>"));
  c.push_back(Case("div_broadcast", {x34, "3x1xf64"},
                   "%r = colo.div %a0, %a1 : tensor<3x4xf64>, tensor<3x1xf64>")
                  .range(0.5, 2.0));
  c.push_back(Case("pow_const_exponent", {x34},
                   "%e = colo.constant dense<3.0> : tensor<f64>\n"
                   "%r = colo.pow %a0, %e : tensor<3x4xf64>, tensor<f64>"));
  c.push_back(Case("pow_const_sqrt", {x34},
                   "%e = colo.constant dense<0.5> : tensor<f64>\n"
                   "%r = colo.pow %a0, %e : tensor<3x4xf64>, tensor<f64>")
                  .range(0.5, 2.0));
  c.push_back(Case("pow_both", {x34, "4xf64"},
                   "%r = colo.pow %a0, %a1 : tensor<3x4xf64>, tensor<4xf64>")
                  .range(0.5, 2.0));
  c.push_back(Case("maximum_broadcast", {x34, "4xf64"},
                   "%r = colo.maximum %a0, %a1 : tensor<3x4xf64>, tensor<4xf64>"));
  c.push_back(Case("minimum", {x34, x34},
                   "%r = colo.minimum %a0, %a1 : tensor<3x4xf64>, tensor<3x4xf64>"));
  c.push_back(Case("select_broadcast", {"3x1xi1", x34, "f64"},
                   "%r = colo.select %a0, %a1, %a2 : tensor<3x1xi1>, tensor<3x4xf64>, "
                   "tensor<f64>")
                  .fix(0, {1, 0, 1}));
  c.push_back(Case("select_cond_larger", {"2x3x4xi1", "4xf64", x34},
                   "%r = colo.select %a0, %a1, %a2 : tensor<2x3x4xi1>, tensor<4xf64>, "
                   "tensor<3x4xf64>")
                  .fix(0, {1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1,
                           0, 0, 1, 1, 1, 0, 1, 0, 0, 1, 1, 0}));

  // Contractions.
  c.push_back(Case("matmul", {x34, "4x2xf64"},
                   "%r = colo.matmul %a0, %a1 : tensor<3x4xf64>, tensor<4x2xf64>"));
  c.push_back(Case("matmul_rank2_rhs", {"2x3x4xf64", "4x5xf64"},
                   "%r = colo.matmul %a0, %a1 : tensor<2x3x4xf64>, tensor<4x5xf64>"));
  c.push_back(Case("matmul_batch_broadcast", {"2x1x3x4xf64", "3x4x2xf64"},
                   "%r = colo.matmul %a0, %a1 : tensor<2x1x3x4xf64>, tensor<3x4x2xf64>"));
  c.push_back(Case("matmul_rank2_lhs", {x34, "2x4x2xf64"},
                   "%r = colo.matmul %a0, %a1 : tensor<3x4xf64>, tensor<2x4x2xf64>"));
  c.push_back(
      Case("conv2d", {"1x2x5x5xf64", "3x2x3x3xf64"},
           "%r = colo.conv2d %a0, %a1 : tensor<1x2x5x5xf64>, tensor<3x2x3x3xf64>"));
  c.push_back(Case("conv2d_stride_pad_bias", {"2x2x6x5xf64", "3x2x3x2xf64", "3xf64"},
                   "%r = colo.conv2d %a0, %a1 bias %a2 {strides = array<i64: 2, 2>, "
                   "padding = array<i64: 1, 0, 2, 1>} : tensor<2x2x6x5xf64>, "
                   "tensor<3x2x3x2xf64>, tensor<3xf64>"));
  c.push_back(Case("conv2d_dilation", {"1x1x7x6xf64", "2x1x3x2xf64"},
                   "%r = colo.conv2d %a0, %a1 {dilations = array<i64: 2, 3>, "
                   "padding = array<i64: 1, 1, 1, 1>} : tensor<1x1x7x6xf64>, "
                   "tensor<2x1x3x2xf64>"));
  c.push_back(Case("conv2d_groups_bias", {"1x4x5x5xf64", "6x2x3x3xf64", "6xf64"},
                   "%r = colo.conv2d %a0, %a1 bias %a2 {groups = 2 : i64, "
                   "strides = array<i64: 2, 1>, padding = array<i64: 1, 1, 1, 1>} : "
                   "tensor<1x4x5x5xf64>, tensor<6x2x3x3xf64>, tensor<6xf64>"));

  // Normalization.
  c.push_back(Case("softmax_axis1", {"3x4x2xf64"},
                   "%r = colo.softmax %a0 axis = 1 : tensor<3x4x2xf64>"));
  c.push_back(Case("softmax_axis_neg1", {"3x4x2xf64"},
                   "%r = colo.softmax %a0 axis = -1 : tensor<3x4x2xf64>"));
  c.push_back(Case("log_softmax_axis0", {"3x4xf64"},
                   "%r = colo.log_softmax %a0 axis = 0 : tensor<3x4xf64>"));
  c.push_back(Case("log_softmax_axis_neg1", {"2x3x4xf64"},
                   "%r = colo.log_softmax %a0 axis = -1 : tensor<2x3x4xf64>"));
  c.push_back(Case("layer_norm_plain", {"2x3x4xf64"},
                   "%r = colo.layer_norm %a0 {axis = 2 : i64, epsilon = 1.0e-05 : f64} "
                   ": tensor<2x3x4xf64>"));
  c.push_back(Case("layer_norm_scale_bias", {"2x3x4xf64", "3x4xf64", "3x4xf64"},
                   "%r = colo.layer_norm %a0 scale %a1 : tensor<3x4xf64> bias %a2 : "
                   "tensor<3x4xf64> {axis = 1 : i64, epsilon = 1.0e-05 : f64} : "
                   "tensor<2x3x4xf64>"));
  c.push_back(Case("layer_norm_scale_axis_neg1", {"2x3x4xf64", "4xf64"},
                   "%r = colo.layer_norm %a0 scale %a1 : tensor<4xf64> "
                   "{axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x3x4xf64>"));
  c.push_back(Case("layer_norm_bias", {"2x3x4xf64", "3x4xf64"},
                   "%r = colo.layer_norm %a0 bias %a1 : tensor<3x4xf64> "
                   "{axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<2x3x4xf64>"));
  c.push_back(Case("rms_norm_plain", {"2x3x4xf64"},
                   "%r = colo.rms_norm %a0 {axis = 1 : i64, epsilon = 1.0e-06 : f64} : "
                   "tensor<2x3x4xf64>"));
  c.push_back(Case("rms_norm_scale", {"2x3x4xf64", "4xf64"},
                   "%r = colo.rms_norm %a0 scale %a1 : tensor<4xf64> "
                   "{axis = 2 : i64, epsilon = 1.0e-06 : f64} : tensor<2x3x4xf64>"));
  c.push_back(Case("rms_norm_scale_axis_neg1", {"2x3x4xf64", "4xf64"},
                   "%r = colo.rms_norm %a0 scale %a1 : tensor<4xf64> "
                   "{axis = -1 : i64, epsilon = 1.0e-06 : f64} : tensor<2x3x4xf64>"));
  c.push_back(Case("batch_norm_training",
                   {"3x2x2x2xf64", "2xf64", "2xf64", "2xf64", "2xf64"},
                   "%r:3 = colo.batch_norm %a0, %a1, %a2, %a3, %a4 "
                   "{epsilon = 1.0e-05 : f64, momentum = 0.1 : f64, training} : "
                   "tensor<3x2x2x2xf64>, tensor<2xf64>")
                  .differentiate(1));
  c.push_back(Case("batch_norm_training_rank2",
                   {"5x3xf64", "3xf64", "3xf64", "3xf64", "3xf64"},
                   "%r:3 = colo.batch_norm %a0, %a1, %a2, %a3, %a4 "
                   "{epsilon = 1.0e-05 : f64, momentum = 0.1 : f64, training} : "
                   "tensor<5x3xf64>, tensor<3xf64>")
                  .differentiate(1));

  // Reductions and pooling.
  c.push_back(
      Case("reduce_sum_keep", {"2x3x4xf64"},
           "%r = colo.reduce_sum %a0 dims = [1] {keep_dims} : tensor<2x3x4xf64>"));
  c.push_back(Case("reduce_sum", {"2x3x4xf64"},
                   "%r = colo.reduce_sum %a0 dims = [0, 2] : tensor<2x3x4xf64>"));
  c.push_back(Case("reduce_mean_keep", {"2x3x4xf64"},
                   "%r = colo.reduce_mean %a0 dims = [0, 2] {keep_dims} : "
                   "tensor<2x3x4xf64>"));
  c.push_back(Case("reduce_mean", {"2x3x4xf64"},
                   "%r = colo.reduce_mean %a0 dims = [1] : tensor<2x3x4xf64>"));
  c.push_back(
      Case("reduce_max_keep", {"2x3x4xf64"},
           "%r = colo.reduce_max %a0 dims = [1] {keep_dims} : tensor<2x3x4xf64>"));
  c.push_back(Case("reduce_max", {"2x3x4xf64"},
                   "%r = colo.reduce_max %a0 dims = [0, 2] : tensor<2x3x4xf64>"));
  c.push_back(Case("max_pool2d_pad", {"1x2x5x5xf64"},
                   "%r = colo.max_pool2d %a0 {kernel = array<i64: 3, 3>, "
                   "strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : "
                   "tensor<1x2x5x5xf64>"));
  c.push_back(Case("max_pool2d_overlap", {"2x1x4x4xf64"},
                   "%r = colo.max_pool2d %a0 {kernel = array<i64: 2, 2>} : "
                   "tensor<2x1x4x4xf64>"));
  c.push_back(Case("max_pool2d_asym_pad", {"1x1x4x5xf64"},
                   "%r = colo.max_pool2d %a0 {kernel = array<i64: 2, 3>, "
                   "strides = array<i64: 1, 2>, padding = array<i64: 1, 0, 0, 2>} : "
                   "tensor<1x1x4x5xf64>"));
  c.push_back(Case("avg_pool2d_asym_pad", {"1x1x4x5xf64"},
                   "%r = colo.avg_pool2d %a0 {kernel = array<i64: 2, 3>, "
                   "strides = array<i64: 1, 2>, padding = array<i64: 1, 0, 0, 2>} : "
                   "tensor<1x1x4x5xf64>"));
  c.push_back(Case("avg_pool2d_pad", {"1x2x5x5xf64"},
                   "%r = colo.avg_pool2d %a0 {kernel = array<i64: 3, 3>, "
                   "strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : "
                   "tensor<1x2x5x5xf64>"));
  c.push_back(Case("avg_pool2d_pad_counted", {"1x2x5x5xf64"},
                   "%r = colo.avg_pool2d %a0 {kernel = array<i64: 3, 3>, "
                   "strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, "
                   "count_include_pad} : tensor<1x2x5x5xf64>"));

  // Data movement.
  c.push_back(Case("reshape", {"2x3x4xf64"},
                   "%r = colo.reshape %a0 : tensor<2x3x4xf64> -> tensor<6x4xf64>"));
  c.push_back(
      Case("transpose", {"2x3x4xf64"},
           "%r = colo.transpose %a0 permutation = [2, 0, 1] : tensor<2x3x4xf64>"));
  c.push_back(Case("slice_strided", {"5x7xf64"},
                   "%r = colo.slice %a0 start = [1, 0] limit = [5, 7] stride = [2, 3] : "
                   "tensor<5x7xf64>"));
  c.push_back(Case("concat_axis1", {"2x1x3xf64", "2x2x3xf64", "2x3x3xf64"},
                   "%r = colo.concat %a0, %a1, %a2 axis = 1 : tensor<2x1x3xf64>, "
                   "tensor<2x2x3xf64>, tensor<2x3x3xf64>"));
  c.push_back(
      Case("concat_axis_neg1", {"2x2xf64", "2x3xf64"},
           "%r = colo.concat %a0, %a1 axis = -1 : tensor<2x2xf64>, tensor<2x3xf64>"));
  c.push_back(Case("broadcast_to", {"3x1xf64"},
                   "%r = colo.broadcast_to %a0 : tensor<3x1xf64> -> tensor<2x3x4xf64>"));
  c.push_back(Case("gather_negative_indices", {"3x5xf64", "4xi64"},
                   "%r = colo.gather %a0, %a1 axis = 1 : tensor<3x5xf64>, tensor<4xi64>")
                  .fix(1, {-1, 0, 3, -1}));
  c.push_back(
      Case("gather_axis_neg1_2d", {"3x4xf64", "2x2xi32"},
           "%r = colo.gather %a0, %a1 axis = -1 : tensor<3x4xf64>, tensor<2x2xi32>")
          .fix(1, {1, -4, 3, 1}));
  c.push_back(
      Case("gather_axis0", {"4x3xf64", "2x3xi64"},
           "%r = colo.gather %a0, %a1 axis = 0 : tensor<4x3xf64>, tensor<2x3xi64>")
          .fix(1, {0, 2, 2, -1, 0, 1}));
  // An imported scatter with reduction add (ONNX ScatterND, ScatterElements).
  c.push_back(
      Case("scatter_add_repeated_indices", {"2x3x2xf64", "3xi64"},
           "%r = colo.scatter_add %a0, %a1 axis = 1 : tensor<2x3x2xf64>, tensor<3xi64> -> "
           "tensor<2x4x2xf64>")
          .fix(1, {3, 0, 3}));
  c.push_back(Case("embedding_repeated_ids", {"5x3xf64", "2x3xi64"},
                   "%r = colo.embedding %a0, %a1 : tensor<5x3xf64>, tensor<2x3xi64>")
                  .fix(1, {4, 1, 4, 0, 1, 4}));

  // Losses.
  c.push_back(Case("cross_entropy", {"4x5xf64", "4xi64"},
                   "%r = colo.cross_entropy %a0, %a1 : tensor<4x5xf64>, tensor<4xi64>")
                  .range(-2, 2)
                  .fix(1, {3, 0, 4, 1}));
  c.push_back(
      Case("cross_entropy_ignore_smoothing", {"2x3x4xf64", "2x3xi64"},
           "%r = colo.cross_entropy %a0, %a1 {ignore_index = -1 : i64, "
           "label_smoothing = 1.5e-01 : f64} : tensor<2x3x4xf64>, tensor<2x3xi64>")
          .range(-2, 2)
          .fix(1, {2, -1, 0, 3, 3, -1}));
  c.push_back(Case("mse_loss", {x34, x34},
                   "%r = colo.mse_loss %a0, %a1 : tensor<3x4xf64>, tensor<3x4xf64>"));
  return c;
}

/// Makes `func` return the results of its last op (the op under test) and
/// returns that op.
Operation *returnLastOp(func::FuncOp func) {
  Operation *ret = func.getBody().front().getTerminator();
  Operation *op = ret->getPrevNode();
  OpBuilder b(ret);
  func::ReturnOp::create(b, ret->getLoc(), op->getResults());
  ret->erase();
  func.setType(FunctionType::get(func.getContext(), func.getArgumentTypes(),
                                 op->getResultTypes()));
  return op;
}

HostArray randomArray(RankedTensorType type, std::mt19937_64 &gen, double lo, double hi,
                      ArrayRef<double> kinks) {
  HostArray a;
  a.shape.assign(type.getShape().begin(), type.getShape().end());
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < type.getNumElements(); ++i) {
    double x = dist(gen);
    for (double k : kinks)
      if (std::abs(x - k) < 0.05)
        x = x < k ? k - 0.05 : k + 0.05;
    a.data.push_back(x);
  }
  return a;
}

double norm(const std::vector<double> &v) {
  double s = 0.0;
  for (double x : v)
    s += x * x;
  return std::sqrt(s);
}

class GradientRules : public ::testing::Test {
protected:
  GradientRules() {
    DialectRegistry registry;
    registry.insert<colo::ColoDialect, func::FuncDialect>();
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }
  MLIRContext ctx;
};

class GradientCheck : public GradientRules, public ::testing::WithParamInterface<Case> {};

TEST_P(GradientCheck, Rule) {
  const Case &c = GetParam();
  std::string text = "func.func @op(";
  for (size_t i = 0; i < c.args.size(); ++i)
    text += (i ? ", %a" : "%a") + std::to_string(i) + ": tensor<" + c.args[i] + ">";
  text += ") {\n" + c.body + "\nreturn\n}\n";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
  ASSERT_TRUE(module) << text;
  auto opFunc = module->lookupSymbol<func::FuncOp>("op");
  Operation *op = returnLastOp(opFunc);
  int numGrads =
      c.gradResults < 0 ? static_cast<int>(op->getNumResults()) : c.gradResults;

  // Inputs and cotangents, from a seed per case.
  std::mt19937_64 gen(std::hash<std::string>()(c.name) & 0xffffffff);
  std::vector<HostArray> x;
  std::vector<bool> isFloat;
  for (auto [i, type] : llvm::enumerate(opFunc.getArgumentTypes())) {
    auto t = cast<RankedTensorType>(type);
    isFloat.push_back(isa<FloatType>(t.getElementType()));
    if (i < c.fixed.size() && !c.fixed[i].empty()) {
      ASSERT_EQ(static_cast<int64_t>(c.fixed[i].size()), t.getNumElements()) << i;
      x.push_back(HostArray{{t.getShape().begin(), t.getShape().end()}, c.fixed[i]});
    } else {
      ASSERT_TRUE(isFloat.back()) << "integer argument " << i << " needs fixed values";
      x.push_back(randomArray(t, gen, c.lo, c.hi, c.kinks));
    }
  }
  std::vector<HostArray> cotangents;
  for (int r = 0; r < numGrads; ++r)
    cotangents.push_back(
        randomArray(cast<RankedTensorType>(op->getResult(r).getType()), gen, -1, 1, {}));

  // The analytic gradients: @forward(args) returns the gradient of every
  // float argument that gets one (summed over the operands it is).
  auto forward = cast<func::FuncOp>(opFunc->clone());
  forward.setSymName("forward");
  module->push_back(forward);
  Operation *fwdOp = forward.getBody().front().getTerminator()->getPrevNode();
  OpBuilder b(forward.getBody().front().getTerminator());
  Location loc = fwdOp->getLoc();
  SmallVector<Value> resultGrads(fwdOp->getNumResults());
  for (int r = 0; r < numGrads; ++r) {
    auto type = cast<RankedTensorType>(fwdOp->getResult(r).getType());
    SmallVector<Attribute> values;
    for (double v : cotangents[r].data)
      values.push_back(FloatAttr::get(type.getElementType(), v));
    resultGrads[r] =
        colo::ConstantOp::create(b, loc, DenseElementsAttr::get(type, values));
  }
  FailureOr<SmallVector<Value>> grads =
      colo::buildOperandGradients(b, fwdOp, resultGrads);
  ASSERT_TRUE(succeeded(grads));
  EXPECT_EQ(grads->size(), fwdOp->getNumOperands()) << "one gradient per operand";
  for (auto [operand, grad] : llvm::zip(fwdOp->getOperands(), *grads)) {
    if (!grad)
      continue;
    EXPECT_EQ(grad.getType(), operand.getType()) << "gradient of operand type mismatch";
    EXPECT_TRUE(isa<FloatType>(getElementTypeOrSelf(operand.getType())));
  }
  SmallVector<Value> returned;
  std::vector<int> returnedArg(x.size(), -1);
  for (BlockArgument arg : forward.getArguments()) {
    Value sum;
    for (auto [operand, grad] : llvm::zip(fwdOp->getOperands(), *grads))
      if (operand == arg && grad)
        sum = sum ? colo::AddOp::create(b, loc, sum, grad).getResult() : grad;
    if (sum) {
      returnedArg[arg.getArgNumber()] = returned.size();
      returned.push_back(sum);
    }
  }
  Operation *oldReturn = forward.getBody().front().getTerminator();
  func::ReturnOp::create(b, loc, returned);
  oldReturn->erase();
  forward.setType(FunctionType::get(&ctx, forward.getArgumentTypes(),
                                    ValueRange(returned).getTypes()));
  ASSERT_TRUE(succeeded(verify(*module)));

  colo::Interpreter interp(*module);
  FailureOr<std::vector<HostArray>> analytic = interp.call("forward", x);
  ASSERT_TRUE(succeeded(analytic));

  // The numerical gradients: central differences of L in every float input.
  auto loss = [&](const std::vector<HostArray> &in) {
    FailureOr<std::vector<HostArray>> y = interp.call("op", in);
    EXPECT_TRUE(succeeded(y));
    double l = 0.0;
    if (succeeded(y))
      for (int r = 0; r < numGrads; ++r)
        for (size_t i = 0; i < cotangents[r].data.size(); ++i)
          l += cotangents[r].data[i] * (*y)[r].data[i];
    return l;
  };
  double worst = 0.0;
  for (size_t k = 0; k < x.size(); ++k) {
    if (!isFloat[k])
      continue;
    std::vector<double> numeric(x[k].data.size());
    std::vector<HostArray> probe = x;
    for (size_t i = 0; i < numeric.size(); ++i) {
      probe[k].data[i] = x[k].data[i] + c.h;
      double up = loss(probe);
      probe[k].data[i] = x[k].data[i] - c.h;
      double down = loss(probe);
      probe[k].data[i] = x[k].data[i];
      numeric[i] = (up - down) / (2 * c.h);
    }
    if (returnedArg[k] < 0) {
      // No gradient is a zero gradient: the result must not depend on it.
      EXPECT_LT(norm(numeric), 1e-8) << "argument " << k << " gets no gradient";
      continue;
    }
    const std::vector<double> &a = (*analytic)[returnedArg[k]].data;
    ASSERT_EQ(a.size(), numeric.size());
    std::vector<double> diff(a.size());
    for (size_t i = 0; i < a.size(); ++i)
      diff[i] = a[i] - numeric[i];
    double scale = std::max(norm(a), norm(numeric));
    double rel = scale < 1e-12 ? norm(diff) : norm(diff) / scale;
    worst = std::max(worst, rel);
    std::string detail;
    for (size_t i = 0; i < std::min<size_t>(a.size(), 8); ++i)
      detail += "\n  [" + std::to_string(i) + "] analytic " + std::to_string(a[i]) +
                " numeric " + std::to_string(numeric[i]);
    EXPECT_LE(rel, kTolerance) << "argument " << k << " of " << c.name << detail;
  }
  std::printf("[ gradcheck ] %-32s max relative error %.2e\n", c.name.c_str(), worst);
  RecordProperty("max_relative_error", std::to_string(worst));
}

INSTANTIATE_TEST_SUITE_P(, GradientCheck, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return info.param.name;
                         });

// colo.stop_gradient is differentiable with a zero gradient: its rule gives
// its operand none (a finite difference would see the identity instead).
TEST_F(GradientRules, StopGradientGivesNoGradient) {
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(R"(
    func.func @f(%x: tensor<2xf64>) -> tensor<2xf64> {
      %y = colo.stop_gradient %x : tensor<2xf64>
      return %y : tensor<2xf64>
    })",
                                                             &ctx);
  ASSERT_TRUE(module);
  auto func = module->lookupSymbol<func::FuncOp>("f");
  Operation *ret = func.getBody().front().getTerminator();
  Operation *op = ret->getPrevNode();
  OpBuilder b(ret);
  FailureOr<SmallVector<Value>> grads =
      colo::buildOperandGradients(b, op, {op->getResult(0)});
  ASSERT_TRUE(succeeded(grads));
  ASSERT_EQ(grads->size(), 1u);
  EXPECT_FALSE((*grads)[0]);
}

// Ops outside the differentiable set say so instead of building nothing.
using GradientRuleErrors = GradientRules;

std::string ruleError(MLIRContext &ctx, const std::string &text) {
  std::string message;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    if (message.empty())
      message = d.str();
    return success();
  });
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
  if (!module)
    return "parse failed";
  auto func = module->lookupSymbol<func::FuncOp>("f");
  Operation *ret = func.getBody().front().getTerminator();
  Operation *op = ret->getPrevNode();
  OpBuilder b(ret);
  SmallVector<Value> grads(op->getResults().begin(), op->getResults().end());
  EXPECT_TRUE(failed(colo::buildOperandGradients(b, op, grads)));
  return message;
}

TEST_F(GradientRuleErrors, InferenceBatchNorm) {
  std::string msg = ruleError(ctx, R"(
    func.func @f(%x: tensor<2x2xf64>, %p: tensor<2xf64>) -> tensor<2x2xf64> {
      %y:3 = colo.batch_norm %x, %p, %p, %p, %p {epsilon = 1.0e-05 : f64, momentum = 0.1 : f64}
           : tensor<2x2xf64>, tensor<2xf64>
      return %y#0 : tensor<2x2xf64>
    })");
  EXPECT_NE(msg.find("inference-mode batch norm"), std::string::npos) << msg;
}

TEST_F(GradientRuleErrors, DropoutWithRatio) {
  std::string msg = ruleError(ctx, R"(
    func.func @f(%x: tensor<2xf64>) -> tensor<2xf64> {
      %y = colo.dropout %x ratio = 1.0e-01 : tensor<2xf64>
      return %y : tensor<2xf64>
    })");
  EXPECT_NE(msg.find("with a non-zero ratio needs a key"), std::string::npos) << msg;
}

TEST_F(GradientRuleErrors, OpWithoutRule) {
  std::string msg = ruleError(ctx, R"(
    func.func @f(%q: tensor<1x1x2x2xf64>) -> tensor<1x1x2x2xf64> {
      %o = colo.attention %q, %q, %q {scale = 1.0 : f64}
           : tensor<1x1x2x2xf64>, tensor<1x1x2x2xf64>, tensor<1x1x2x2xf64>
      return %o : tensor<1x1x2x2xf64>
    })");
  EXPECT_NE(msg.find("has no gradient rule"), std::string::npos) << msg;
}

} // namespace
