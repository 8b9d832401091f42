// Unit tests of the ONNX importer's host-side evaluator (lib/Import/HostTensor).
// Expected values are worked out by hand from the ONNX operator specification
// (and NumPy semantics where the spec defers to them).
#include "HostTensor.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <limits>
#include <map>
#include <string>
#include <vector>

using namespace colo::onnx_import;

namespace {

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

HostTensor tensor(int32_t dtype, std::vector<int64_t> shape, std::vector<double> values) {
  HostTensor t;
  t.dtype = dtype;
  t.shape.assign(shape.begin(), shape.end());
  t.values = std::move(values);
  return t;
}
HostTensor i64(std::vector<int64_t> shape, std::vector<double> values) {
  return tensor(kInt64, std::move(shape), std::move(values));
}
HostTensor f32(std::vector<int64_t> shape, std::vector<double> values) {
  return tensor(kFloat, std::move(shape), std::move(values));
}
HostTensor boolT(std::vector<int64_t> shape, std::vector<double> values) {
  return tensor(kBool, std::move(shape), std::move(values));
}
/// A 1-D int64 tensor (what ONNX passes for shapes, axes, starts, ...).
HostTensor ints(std::vector<int64_t> v) {
  HostTensor t;
  t.dtype = kInt64;
  t.shape = {static_cast<int64_t>(v.size())};
  for (int64_t x : v)
    t.values.push_back(static_cast<double>(x));
  return t;
}
HostTensor iota(int32_t dtype, std::vector<int64_t> shape) {
  HostTensor t = tensor(dtype, std::move(shape), {});
  for (int64_t i = 0, n = t.numel(); i < n; ++i)
    t.values.push_back(static_cast<double>(i));
  return t;
}

/// Builds NodeAttrs: every getter answers std::nullopt unless set here.
struct Attrs {
  std::map<std::string, int64_t> intAttrs;
  std::map<std::string, double> floatAttrs;
  std::map<std::string, std::vector<int64_t>> intsAttrs;
  std::map<std::string, HostTensor> tensorAttrs;
  std::map<std::string, std::string> stringAttrs;
  int64_t opsetVersion = 17;

  Attrs &i(const std::string &name, int64_t v) { intAttrs[name] = v; return *this; }
  Attrs &f(const std::string &name, double v) { floatAttrs[name] = v; return *this; }
  Attrs &is(const std::string &name, std::vector<int64_t> v) {
    intsAttrs[name] = std::move(v);
    return *this;
  }
  Attrs &t(const std::string &name, HostTensor v) {
    tensorAttrs[name] = std::move(v);
    return *this;
  }
  Attrs &s(const std::string &name, std::string v) {
    stringAttrs[name] = std::move(v);
    return *this;
  }
  Attrs &opset(int64_t v) { opsetVersion = v; return *this; }

  operator NodeAttrs() const {
    NodeAttrs a;
    auto ia = intAttrs;
    auto fa = floatAttrs;
    auto isa = intsAttrs;
    auto ta = tensorAttrs;
    a.getInt = [ia](llvm::StringRef n) -> std::optional<int64_t> {
      auto it = ia.find(n.str());
      if (it == ia.end()) return std::nullopt;
      return it->second;
    };
    a.getFloat = [fa](llvm::StringRef n) -> std::optional<double> {
      auto it = fa.find(n.str());
      if (it == fa.end()) return std::nullopt;
      return it->second;
    };
    a.getInts = [isa](llvm::StringRef n) -> std::optional<std::vector<int64_t>> {
      auto it = isa.find(n.str());
      if (it == isa.end()) return std::nullopt;
      return it->second;
    };
    a.getTensor = [ta](llvm::StringRef n) -> std::optional<HostTensor> {
      auto it = ta.find(n.str());
      if (it == ta.end()) return std::nullopt;
      return it->second;
    };
    auto sa = stringAttrs;
    a.getString = [sa](llvm::StringRef n) -> std::optional<std::string> {
      auto it = sa.find(n.str());
      if (it == sa.end()) return std::nullopt;
      return it->second;
    };
    a.opset = opsetVersion;
    return a;
  }
};

EvalResult eval(llvm::StringRef op, std::initializer_list<const HostTensor *> ins,
                const Attrs &attrs = Attrs()) {
  std::vector<const HostTensor *> v(ins);
  NodeAttrs a = attrs;
  return evaluate(op, v, a);
}

std::vector<int64_t> shapeOf(const HostTensor &t) {
  return std::vector<int64_t>(t.shape.begin(), t.shape.end());
}

std::string kindName(EvalResult::Kind k) {
  switch (k) {
  case EvalResult::NotFoldable: return "NotFoldable";
  case EvalResult::Folded: return "Folded";
  case EvalResult::Error: return "Error";
  }
  return "?";
}

/// Checks a single folded output.
void expectFolded(const EvalResult &r, int32_t dtype, std::vector<int64_t> shape,
                  std::vector<double> values) {
  ASSERT_EQ(kindName(r.kind), "Folded") << r.error;
  ASSERT_EQ(r.outputs.size(), 1u);
  const HostTensor &t = r.outputs[0];
  EXPECT_EQ(t.dtype, dtype);
  EXPECT_EQ(shapeOf(t), shape);
  EXPECT_EQ(t.values, values);
}

void expectError(const EvalResult &r, const std::string &substring = "") {
  ASSERT_EQ(kindName(r.kind), "Error");
  EXPECT_FALSE(r.error.empty());
  if (!substring.empty()) {
    EXPECT_NE(r.error.find(substring), std::string::npos)
        << "error '" << r.error << "' does not mention '" << substring << "'";
  }
}

std::vector<int64_t> reshape(std::vector<int64_t> in, std::vector<int64_t> target,
                             bool allowZero = false) {
  llvm::SmallVector<int64_t> out;
  auto err = resolveReshape(in, target, allowZero, out);
  EXPECT_FALSE(err.has_value()) << *err;
  return std::vector<int64_t>(out.begin(), out.end());
}

std::optional<std::string> reshapeError(std::vector<int64_t> in,
                                        std::vector<int64_t> target,
                                        bool allowZero = false) {
  llvm::SmallVector<int64_t> out;
  return resolveReshape(in, target, allowZero, out);
}

//===----------------------------------------------------------------------===//
// Data type helpers
//===----------------------------------------------------------------------===//

TEST(HostTensorDType, SupportedTypes) {
  for (int32_t t : {kFloat, kUInt8, kInt8, kInt16, kInt32, kInt64, kBool, kFloat16,
                    kDouble, kBFloat16})
    EXPECT_TRUE(isSupportedDType(t)) << t;
  // undefined, uint16, string, uint32, uint64, complex64, float8e4m3fn
  for (int32_t t : {0, 4, 8, 12, 13, 14, 17, -1, 1000})
    EXPECT_FALSE(isSupportedDType(t)) << t;
}

TEST(HostTensorDType, FloatTypes) {
  for (int32_t t : {kFloat, kFloat16, kDouble, kBFloat16})
    EXPECT_TRUE(isFloatDType(t)) << t;
  for (int32_t t : {kUInt8, kInt8, kInt16, kInt32, kInt64, kBool})
    EXPECT_FALSE(isFloatDType(t)) << t;
}

TEST(HostTensorDType, Names) {
  EXPECT_EQ(dtypeName(kFloat).str(), "float");
  EXPECT_EQ(dtypeName(kUInt8).str(), "uint8");
  EXPECT_EQ(dtypeName(kInt64).str(), "int64");
  EXPECT_EQ(dtypeName(8).str(), "string");
  EXPECT_EQ(dtypeName(kBool).str(), "bool");
  EXPECT_EQ(dtypeName(kFloat16).str(), "float16");
  EXPECT_EQ(dtypeName(kDouble).str(), "double");
  EXPECT_EQ(dtypeName(kBFloat16).str(), "bfloat16");
  EXPECT_EQ(dtypeName(-1).str(), "unknown");
  EXPECT_EQ(dtypeName(1000).str(), "unknown");
}

TEST(HostTensorDType, MlirElementTypes) {
  mlir::MLIRContext ctx;
  EXPECT_TRUE(elementTypeOf(&ctx, kFloat).isF32());
  EXPECT_TRUE(elementTypeOf(&ctx, kDouble).isF64());
  EXPECT_TRUE(elementTypeOf(&ctx, kFloat16).isF16());
  EXPECT_TRUE(elementTypeOf(&ctx, kBFloat16).isBF16());
  EXPECT_TRUE(elementTypeOf(&ctx, kInt64).isSignlessInteger(64));
  EXPECT_TRUE(elementTypeOf(&ctx, kInt32).isSignlessInteger(32));
  EXPECT_TRUE(elementTypeOf(&ctx, kBool).isSignlessInteger(1));
  EXPECT_TRUE(elementTypeOf(&ctx, kUInt8).isUnsignedInteger(8));
  EXPECT_FALSE(elementTypeOf(&ctx, 8));
  for (int32_t t : {kFloat, kUInt8, kInt8, kInt16, kInt32, kInt64, kBool, kFloat16,
                    kDouble, kBFloat16})
    EXPECT_EQ(dtypeOf(elementTypeOf(&ctx, t)), t) << t;
  EXPECT_EQ(dtypeOf(mlir::IndexType::get(&ctx)), 0);
}

//===----------------------------------------------------------------------===//
// HostTensor
//===----------------------------------------------------------------------===//

TEST(HostTensor, Numel) {
  EXPECT_EQ(i64({}, {5}).numel(), 1);
  EXPECT_EQ(i64({2, 3}, std::vector<double>(6)).numel(), 6);
  EXPECT_EQ(i64({2, 0, 3}, {}).numel(), 0);
}

TEST(HostTensor, AsIntSaturates) {
  HostTensor t = f32({5}, {3, -4, 1e30, -1e30, static_cast<double>(kI64Max)});
  EXPECT_EQ(t.asInt(0), 3);
  EXPECT_EQ(t.asInt(1), -4);
  EXPECT_EQ(t.asInt(2), kI64Max);
  EXPECT_EQ(t.asInt(3), kI64Min);
  EXPECT_EQ(t.asInt(4), kI64Max);
  EXPECT_EQ(t.asInts(), (std::vector<int64_t>{3, -4, kI64Max, kI64Min, kI64Max}));
}

TEST(HostTensor, ConvertIntegersTruncate) {
  EXPECT_EQ(HostTensor::convert(2.7, kInt64), 2);
  EXPECT_EQ(HostTensor::convert(-2.7, kInt64), -2);
  EXPECT_EQ(HostTensor::convert(-0.5, kInt32), 0);
  EXPECT_EQ(HostTensor::convert(9.99, kInt8), 9);
}

TEST(HostTensor, ConvertBool) {
  EXPECT_EQ(HostTensor::convert(0, kBool), 0);
  EXPECT_EQ(HostTensor::convert(-0.5, kBool), 1);
  EXPECT_EQ(HostTensor::convert(7, kBool), 1);
}

TEST(HostTensor, ConvertFloatRoundsToPrecision) {
  EXPECT_EQ(HostTensor::convert(0.1, kFloat), static_cast<double>(0.1f));
  EXPECT_NE(HostTensor::convert(0.1, kFloat), 0.1);
  EXPECT_EQ(HostTensor::convert(0.1, kDouble), 0.1);
  // float: 24-bit significand, 2^24 + 1 rounds to even (2^24).
  EXPECT_EQ(HostTensor::convert(16777217.0, kFloat), 16777216.0);
}

TEST(HostTensor, ConvertHalfRoundsToPrecision) {
  // float16: 11-bit significand; in [2048, 4096) the spacing is 2.
  EXPECT_EQ(HostTensor::convert(2049.0, kFloat16), 2048.0);  // tie -> even
  EXPECT_EQ(HostTensor::convert(2051.0, kFloat16), 2052.0);  // tie -> even
  EXPECT_EQ(HostTensor::convert(2050.5, kFloat16), 2050.0);
  // Near 1 the spacing is 2^-10.
  EXPECT_EQ(HostTensor::convert(1.0001, kFloat16), 1.0);
  EXPECT_EQ(HostTensor::convert(0.1, kFloat16), 0.0999755859375);
  EXPECT_EQ(HostTensor::convert(0.5, kFloat16), 0.5);
}

TEST(HostTensor, ConvertBFloat16RoundsToPrecision) {
  // bfloat16: 8-bit significand; in [256, 512) the spacing is 2.
  EXPECT_EQ(HostTensor::convert(257.0, kBFloat16), 256.0);  // tie -> even
  EXPECT_EQ(HostTensor::convert(259.0, kBFloat16), 260.0);  // tie -> even
  EXPECT_EQ(HostTensor::convert(1.001, kBFloat16), 1.0);
  EXPECT_EQ(HostTensor::convert(3.0, kBFloat16), 3.0);
}

TEST(HostTensor, ScalarAndVector) {
  HostTensor s = HostTensor::scalar(3.7, kInt64);
  EXPECT_EQ(s.dtype, kInt64);
  EXPECT_TRUE(s.shape.empty());
  EXPECT_EQ(s.values, std::vector<double>{3});
  EXPECT_EQ(s.numel(), 1);

  HostTensor f = HostTensor::scalar(0.5, kFloat);
  EXPECT_EQ(f.values, std::vector<double>{0.5});

  HostTensor v = HostTensor::vector({4, -1, 0});
  EXPECT_EQ(v.dtype, kInt64);
  EXPECT_EQ(shapeOf(v), std::vector<int64_t>{3});
  EXPECT_EQ(v.values, (std::vector<double>{4, -1, 0}));

  HostTensor e = HostTensor::vector({});
  EXPECT_EQ(shapeOf(e), std::vector<int64_t>{0});
  EXPECT_TRUE(e.values.empty());
}

TEST(HostTensor, ToAttrInt64) {
  mlir::MLIRContext ctx;
  mlir::DenseElementsAttr a = i64({2, 2}, {1, -2, 3, static_cast<double>(kI64Max)}).toAttr(&ctx);
  ASSERT_TRUE(a);
  auto type = llvm::cast<mlir::RankedTensorType>(a.getType());
  EXPECT_EQ(std::vector<int64_t>(type.getShape().begin(), type.getShape().end()),
            (std::vector<int64_t>{2, 2}));
  EXPECT_TRUE(type.getElementType().isSignlessInteger(64));
  std::vector<int64_t> got(a.getValues<int64_t>().begin(), a.getValues<int64_t>().end());
  EXPECT_EQ(got, (std::vector<int64_t>{1, -2, 3, kI64Max}));
}

TEST(HostTensor, ToAttrFloatAndBool) {
  mlir::MLIRContext ctx;
  mlir::DenseElementsAttr f = f32({3}, {0.5, -2, 3.25}).toAttr(&ctx);
  ASSERT_TRUE(f);
  EXPECT_TRUE(llvm::cast<mlir::RankedTensorType>(f.getType()).getElementType().isF32());
  std::vector<float> fv(f.getValues<float>().begin(), f.getValues<float>().end());
  EXPECT_EQ(fv, (std::vector<float>{0.5f, -2.0f, 3.25f}));

  mlir::DenseElementsAttr b = boolT({3}, {1, 0, 1}).toAttr(&ctx);
  ASSERT_TRUE(b);
  EXPECT_TRUE(llvm::cast<mlir::RankedTensorType>(b.getType())
                  .getElementType()
                  .isSignlessInteger(1));
  std::vector<bool> bv(b.getValues<bool>().begin(), b.getValues<bool>().end());
  EXPECT_EQ(bv, (std::vector<bool>{true, false, true}));

  mlir::DenseElementsAttr s = HostTensor::scalar(7, kInt32).toAttr(&ctx);
  ASSERT_TRUE(s);
  EXPECT_EQ(llvm::cast<mlir::RankedTensorType>(s.getType()).getRank(), 0);
  EXPECT_EQ(*s.getValues<int32_t>().begin(), 7);
}

//===----------------------------------------------------------------------===//
// broadcastShapes, resolveReshape, resolveSlice
//===----------------------------------------------------------------------===//

std::optional<std::vector<int64_t>> broadcast(std::vector<int64_t> a,
                                              std::vector<int64_t> b) {
  llvm::SmallVector<int64_t> out;
  if (!broadcastShapes(a, b, out))
    return std::nullopt;
  return std::vector<int64_t>(out.begin(), out.end());
}

TEST(BroadcastShapes, Compatible) {
  EXPECT_EQ(broadcast({2, 1, 3}, {4, 1}), (std::vector<int64_t>{2, 4, 3}));
  EXPECT_EQ(broadcast({}, {3}), (std::vector<int64_t>{3}));
  EXPECT_EQ(broadcast({3}, {}), (std::vector<int64_t>{3}));
  EXPECT_EQ(broadcast({}, {}), (std::vector<int64_t>{}));
  EXPECT_EQ(broadcast({5, 4}, {1}), (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(broadcast({1}, {5, 4}), (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(broadcast({8, 1, 6, 1}, {7, 1, 5}), (std::vector<int64_t>{8, 7, 6, 5}));
  EXPECT_EQ(broadcast({0}, {1}), (std::vector<int64_t>{0}));
  EXPECT_EQ(broadcast({2, 1}, {1, 0}), (std::vector<int64_t>{2, 0}));
}

TEST(BroadcastShapes, Incompatible) {
  EXPECT_FALSE(broadcast({3}, {4}));
  EXPECT_FALSE(broadcast({2, 1}, {8, 4, 3}));
  EXPECT_FALSE(broadcast({0}, {3}));
}

TEST(ResolveReshape, ZeroCopiesAndMinusOneInfers) {
  EXPECT_EQ(reshape({2, 3, 4}, {0, -1}), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(reshape({2, 3, 4}, {-1}), (std::vector<int64_t>{24}));
  EXPECT_EQ(reshape({2, 3, 4}, {4, 0, -1}), (std::vector<int64_t>{4, 3, 2}));
  EXPECT_EQ(reshape({2, 3, 4}, {0, 0, 0}), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(reshape({2, 3, 4}, {-1, 2}), (std::vector<int64_t>{12, 2}));
  EXPECT_EQ(reshape({2, 3, 4}, {6, 4}), (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(reshape({}, {1, 1}), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(reshape({1, 1}, {}), (std::vector<int64_t>{}));
  EXPECT_EQ(reshape({0, 3}, {-1, 3}), (std::vector<int64_t>{0, 3}));
}

TEST(ResolveReshape, AllowZeroKeepsZero) {
  EXPECT_EQ(reshape({0, 3}, {3, 0}, /*allowZero=*/true), (std::vector<int64_t>{3, 0}));
  EXPECT_TRUE(reshapeError({2, 3}, {6, 0}, /*allowZero=*/true).has_value());
}

TEST(ResolveReshape, Errors) {
  EXPECT_TRUE(reshapeError({2, 3, 4}, {5, -1}).has_value());
  EXPECT_TRUE(reshapeError({2, 3, 4}, {-1, -1}).has_value());
  EXPECT_TRUE(reshapeError({2, 3, 4}, {2, 2}).has_value());
  EXPECT_TRUE(reshapeError({2, 3, 4}, {25}).has_value());
  EXPECT_TRUE(reshapeError({2, 3, 4}, {-2, -12}).has_value());
  // A 0 past the input's rank has nothing to copy.
  EXPECT_TRUE(reshapeError({24}, {1, 0}).has_value());
}

void expectSlice(int64_t dim, int64_t start, int64_t end, int64_t step,
                 int64_t wantStart, int64_t wantSize) {
  SliceBounds b = resolveSlice(dim, start, end, step);
  EXPECT_EQ(b.size, wantSize) << "dim " << dim << " [" << start << ":" << end << ":"
                              << step << "]";
  EXPECT_EQ(b.step, step);
  if (wantSize > 0) {
    EXPECT_EQ(b.start, wantStart) << "dim " << dim << " [" << start << ":" << end
                                  << ":" << step << "]";
  }
}

TEST(ResolveSlice, PositiveStep) {
  expectSlice(5, 1, 3, 1, 1, 2);
  expectSlice(5, 0, kI64Max, 1, 0, 5);
  expectSlice(5, -2, kI64Max, 1, 3, 2);      // [3, 4]
  expectSlice(5, 0, -1, 1, 0, 4);            // end -1 -> 4
  expectSlice(5, 0, 10, 2, 0, 3);            // 0, 2, 4
  expectSlice(5, 1, 5, 2, 1, 2);             // 1, 3
  expectSlice(5, -100, 100, 1, 0, 5);        // clamped to [0, 5]
  expectSlice(5, kI64Min, kI64Max, 3, 0, 2); // 0, 3
  expectSlice(5, 3, 3, 1, 3, 0);
  expectSlice(5, 4, 1, 1, 4, 0);
  expectSlice(5, 7, 9, 1, 5, 0);
  expectSlice(0, 0, kI64Max, 1, 0, 0);
}

TEST(ResolveSlice, NegativeStep) {
  expectSlice(5, -1, kI64Min, -1, 4, 5);     // 4, 3, 2, 1, 0
  expectSlice(5, kI64Max, kI64Min, -1, 4, 5);
  expectSlice(5, 4, 1, -2, 4, 2);            // 4, 2
  expectSlice(5, 4, 0, -2, 4, 2);            // 4, 2
  expectSlice(5, 10, -10, -1, 4, 5);         // start clamped to 4, end to -1
  expectSlice(5, 3, -1, -1, 3, 0);           // end -1 means index 4
  expectSlice(5, 1, 3, -1, 1, 0);
  expectSlice(5, 2, -6, -1, 2, 3);           // 2, 1, 0
  // ONNX: for negative steps the adjusted start is clamped to [0, dim-1].
  expectSlice(5, -10, kI64Min, -1, 0, 1);
  expectSlice(0, -1, kI64Min, -1, 0, 0);
}

TEST(ResolveSlice, HugeSteps) {
  expectSlice(5, 0, kI64Max, kI64Max, 0, 1);
  expectSlice(5, 2, kI64Max, kI64Max, 2, 1);
  expectSlice(5, -1, kI64Min, -kI64Max, 4, 1);
}

//===----------------------------------------------------------------------===//
// evaluate(): folding decisions
//===----------------------------------------------------------------------===//

TEST(Evaluate, OpsOutsideTheSetAreNotFoldable) {
  HostTensor x = f32({2}, {1, 2});
  for (const char *op : {"Softmax", "Conv", "Relu", "LayerNormalization", "Foo"}) {
    EvalResult r = eval(op, {&x});
    EXPECT_EQ(kindName(r.kind), "NotFoldable") << op;
    EXPECT_TRUE(r.outputs.empty()) << op;
  }
}

TEST(Evaluate, VariadicMaxMinAreNotFoldable) {
  HostTensor a = i64({}, {1}), b = i64({}, {2}), c = i64({}, {3});
  EXPECT_EQ(kindName(eval("Max", {&a, &b, &c}).kind), "NotFoldable");
  EXPECT_EQ(kindName(eval("Min", {&a}).kind), "NotFoldable");
}

TEST(Evaluate, Identity) {
  HostTensor x = i64({2}, {4, 5});
  expectFolded(eval("Identity", {&x}), kInt64, {2}, {4, 5});
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

TEST(Cast, FloatToIntTruncates) {
  HostTensor x = f32({5}, {1.7, -1.7, 2.5, -2.5, 0.4});
  expectFolded(eval("Cast", {&x}, Attrs().i("to", kInt64)), kInt64, {5},
               {1, -1, 2, -2, 0});
  expectFolded(eval("Cast", {&x}, Attrs().i("to", kInt32)), kInt32, {5},
               {1, -1, 2, -2, 0});
}

TEST(Cast, ToBool) {
  HostTensor x = f32({4}, {0, 0.5, -2, 0});
  expectFolded(eval("Cast", {&x}, Attrs().i("to", kBool)), kBool, {4}, {0, 1, 1, 0});
}

TEST(Cast, IntToFloatRoundsToFloat) {
  HostTensor x = i64({2}, {16777217, 3});
  expectFolded(eval("Cast", {&x}, Attrs().i("to", kFloat)), kFloat, {2},
               {16777216, 3});
}

TEST(Cast, ToFloat16Rounds) {
  HostTensor x = f32({3}, {2049, 1.0001, 0.5});
  expectFolded(eval("Cast", {&x}, Attrs().i("to", kFloat16)), kFloat16, {3},
               {2048, 1, 0.5});
}

TEST(Cast, ThroughFloat16ToInt) {
  // Cast(Cast(2049, float16), int64) == 2048.
  HostTensor x = i64({1}, {2049});
  EvalResult h = eval("Cast", {&x}, Attrs().i("to", kFloat16));
  ASSERT_EQ(kindName(h.kind), "Folded");
  expectFolded(eval("Cast", {&h.outputs[0]}, Attrs().i("to", kInt64)), kInt64, {1},
               {2048});
}

TEST(Cast, UnsupportedTypeIsError) {
  HostTensor x = f32({1}, {1});
  expectError(eval("Cast", {&x}, Attrs().i("to", 8)), "string");
}

TEST(Cast, CastLikeTakesTheSecondInputsType) {
  HostTensor x = f32({2}, {3.9, -3.9});
  HostTensor like = tensor(kInt32, {0}, {});
  expectFolded(eval("CastLike", {&x, &like}), kInt32, {2}, {3, -3});
}

//===----------------------------------------------------------------------===//
// Element-wise ops
//===----------------------------------------------------------------------===//

TEST(Elementwise, AddBroadcasts) {
  HostTensor a = i64({2, 1}, {10, 20});
  HostTensor b = i64({3}, {1, 2, 3});
  expectFolded(eval("Add", {&a, &b}), kInt64, {2, 3}, {11, 12, 13, 21, 22, 23});
}

TEST(Elementwise, SubMulWithScalar) {
  HostTensor a = i64({3}, {5, 6, 7});
  HostTensor s = i64({}, {2});
  expectFolded(eval("Sub", {&a, &s}), kInt64, {3}, {3, 4, 5});
  expectFolded(eval("Sub", {&s, &a}), kInt64, {3}, {-3, -4, -5});
  expectFolded(eval("Mul", {&a, &s}), kInt64, {3}, {10, 12, 14});
}

TEST(Elementwise, IncompatibleBroadcastIsError) {
  HostTensor a = i64({3}, {1, 2, 3});
  HostTensor b = i64({2}, {1, 2});
  expectError(eval("Add", {&a, &b}));
}

TEST(Elementwise, IntegerDivTruncates) {
  HostTensor a = i64({4}, {7, -7, 7, -7});
  HostTensor b = i64({4}, {2, 2, -2, -2});
  expectFolded(eval("Div", {&a, &b}), kInt64, {4}, {3, -3, -3, 3});
}

TEST(Elementwise, FloatDiv) {
  HostTensor a = f32({2}, {7, -1});
  HostTensor b = f32({2}, {2, 4});
  expectFolded(eval("Div", {&a, &b}), kFloat, {2}, {3.5, -0.25});
}

TEST(Elementwise, ModTakesTheSignOfTheDivisor) {
  HostTensor a = i64({6}, {-7, 7, -7, 7, 6, -4});
  HostTensor b = i64({6}, {2, -2, -2, 3, 3, 3});
  expectFolded(eval("Mod", {&a, &b}), kInt64, {6}, {1, -1, -1, 1, 0, 2});
  expectFolded(eval("Mod", {&a, &b}, Attrs().i("fmod", 0)), kInt64, {6},
               {1, -1, -1, 1, 0, 2});
}

TEST(Elementwise, ModWithFmodTakesTheSignOfTheDividend) {
  HostTensor a = i64({5}, {-7, 7, -7, 7, -4});
  HostTensor b = i64({5}, {2, -2, -2, 3, 3});
  expectFolded(eval("Mod", {&a, &b}, Attrs().i("fmod", 1)), kInt64, {5},
               {-1, 1, -1, 1, -1});
  HostTensor x = f32({2}, {5.5, -5.5});
  HostTensor y = f32({}, {2});
  expectFolded(eval("Mod", {&x, &y}, Attrs().i("fmod", 1)), kFloat, {2}, {1.5, -1.5});
}

TEST(Elementwise, Pow) {
  HostTensor a = i64({3}, {2, 3, 10});
  HostTensor b = i64({3}, {3, 2, 0});
  expectFolded(eval("Pow", {&a, &b}), kInt64, {3}, {8, 9, 1});
  HostTensor x = f32({1}, {4});
  HostTensor h = f32({}, {0.5});
  expectFolded(eval("Pow", {&x, &h}), kFloat, {1}, {2});
}

TEST(Elementwise, MaxMin) {
  HostTensor a = i64({3}, {1, 5, -3});
  HostTensor b = i64({}, {2});
  expectFolded(eval("Max", {&a, &b}), kInt64, {3}, {2, 5, 2});
  expectFolded(eval("Min", {&a, &b}), kInt64, {3}, {1, 2, -3});
}

TEST(Elementwise, ComparisonsProduceBool) {
  HostTensor a = i64({3}, {1, 2, 3});
  HostTensor b = i64({}, {2});
  expectFolded(eval("Equal", {&a, &b}), kBool, {3}, {0, 1, 0});
  expectFolded(eval("Less", {&a, &b}), kBool, {3}, {1, 0, 0});
  expectFolded(eval("LessOrEqual", {&a, &b}), kBool, {3}, {1, 1, 0});
  expectFolded(eval("Greater", {&a, &b}), kBool, {3}, {0, 0, 1});
  expectFolded(eval("GreaterOrEqual", {&a, &b}), kBool, {3}, {0, 1, 1});
}

TEST(Elementwise, Logical) {
  HostTensor a = boolT({4}, {0, 0, 1, 1});
  HostTensor b = boolT({4}, {0, 1, 0, 1});
  expectFolded(eval("And", {&a, &b}), kBool, {4}, {0, 0, 0, 1});
  expectFolded(eval("Or", {&a, &b}), kBool, {4}, {0, 1, 1, 1});
  expectFolded(eval("Xor", {&a, &b}), kBool, {4}, {0, 1, 1, 0});
  expectFolded(eval("Not", {&a}), kBool, {4}, {1, 1, 0, 0});
}

TEST(Elementwise, Unary) {
  HostTensor i = i64({3}, {-2, 0, 3});
  expectFolded(eval("Neg", {&i}), kInt64, {3}, {2, 0, -3});
  expectFolded(eval("Abs", {&i}), kInt64, {3}, {2, 0, 3});
  HostTensor f = f32({4}, {-1.5, -0.5, 0.5, 2});
  expectFolded(eval("Floor", {&f}), kFloat, {4}, {-2, -1, 0, 2});
  expectFolded(eval("Ceil", {&f}), kFloat, {4}, {-1, -0.0, 1, 2});
  HostTensor q = f32({2}, {4, 0.25});
  expectFolded(eval("Sqrt", {&q}), kFloat, {2}, {2, 0.5});
  expectFolded(eval("Reciprocal", {&q}), kFloat, {2}, {0.25, 4});
  HostTensor z = f32({1}, {0});
  expectFolded(eval("Exp", {&z}), kFloat, {1}, {1});
  expectFolded(eval("Cos", {&z}), kFloat, {1}, {1});
  expectFolded(eval("Sin", {&z}), kFloat, {1}, {0});
  HostTensor one = f32({1}, {1});
  expectFolded(eval("Log", {&one}), kFloat, {1}, {0});
}

TEST(Elementwise, IsNaN) {
  HostTensor f = f32({3}, {1, std::nan(""), -INFINITY});
  expectFolded(eval("IsNaN", {&f}), kBool, {3}, {0, 1, 0});
}

TEST(Where, SelectsWithBroadcast) {
  HostTensor c = boolT({3}, {1, 0, 1});
  HostTensor x = i64({3}, {1, 2, 3});
  HostTensor y = i64({}, {-1});
  expectFolded(eval("Where", {&c, &x, &y}), kInt64, {3}, {1, -1, 3});

  HostTensor c2 = boolT({2, 1}, {1, 0});
  HostTensor x2 = f32({1, 2}, {1, 2});
  HostTensor y2 = f32({2, 2}, {10, 20, 30, 40});
  expectFolded(eval("Where", {&c2, &x2, &y2}), kFloat, {2, 2}, {1, 2, 30, 40});
}

TEST(Where, IncompatibleShapesAreError) {
  HostTensor c = boolT({3}, {1, 0, 1});
  HostTensor x = i64({2}, {1, 2});
  HostTensor y = i64({}, {0});
  expectError(eval("Where", {&c, &x, &y}));
}

//===----------------------------------------------------------------------===//
// ConstantOfShape, Range
//===----------------------------------------------------------------------===//

TEST(ConstantOfShape, DefaultIsFloatZero) {
  HostTensor s = ints({2, 3});
  expectFolded(eval("ConstantOfShape", {&s}), kFloat, {2, 3}, {0, 0, 0, 0, 0, 0});
}

TEST(ConstantOfShape, ValueAttribute) {
  HostTensor s = ints({3, 1});
  expectFolded(eval("ConstantOfShape", {&s}, Attrs().t("value", i64({1}, {7}))), kInt64,
               {3, 1}, {7, 7, 7});
  expectFolded(eval("ConstantOfShape", {&s}, Attrs().t("value", f32({1}, {0.5}))),
               kFloat, {3, 1}, {0.5, 0.5, 0.5});
}

TEST(ConstantOfShape, EmptyShapeIsScalar) {
  HostTensor s = ints({});
  expectFolded(eval("ConstantOfShape", {&s}, Attrs().t("value", i64({1}, {4}))), kInt64,
               {}, {4});
}

TEST(ConstantOfShape, ZeroDimension) {
  HostTensor s = ints({2, 0});
  expectFolded(eval("ConstantOfShape", {&s}), kFloat, {2, 0}, {});
  HostTensor big = ints({int64_t{1} << 40, 0});
  expectFolded(eval("ConstantOfShape", {&big}), kFloat, {int64_t{1} << 40, 0}, {});
}

TEST(ConstantOfShape, TooLargeIsError) {
  HostTensor s = ints({int64_t{1} << 20, int64_t{1} << 20});
  expectError(eval("ConstantOfShape", {&s}), "too large");
  HostTensor one = ints({kMaxHostElements + 1});
  expectError(eval("ConstantOfShape", {&one}), "too large");
}

TEST(ConstantOfShape, TooLargeDoesNotOverflow) {
  // (2^26 + 1) * 2^37 overflows int64 unless the count saturates.
  HostTensor s = ints({int64_t{1} << 27, int64_t{1} << 37});
  expectError(eval("ConstantOfShape", {&s}), "too large");
  HostTensor t = ints({int64_t{1} << 40, int64_t{1} << 40, int64_t{1} << 40});
  expectError(eval("ConstantOfShape", {&t}), "too large");
}

TEST(ConstantOfShape, NegativeDimensionIsError) {
  HostTensor s = ints({2, -1});
  expectError(eval("ConstantOfShape", {&s}));
}

TEST(Range, Integers) {
  HostTensor a = i64({}, {0}), b = i64({}, {10}), d = i64({}, {3});
  expectFolded(eval("Range", {&a, &b, &d}), kInt64, {4}, {0, 3, 6, 9});
  HostTensor a2 = i64({}, {10}), b2 = i64({}, {4}), d2 = i64({}, {-3});
  expectFolded(eval("Range", {&a2, &b2, &d2}), kInt64, {2}, {10, 7});
  HostTensor a3 = i64({}, {1}), b3 = i64({}, {5}), d3 = i64({}, {2});
  expectFolded(eval("Range", {&a3, &b3, &d3}), kInt64, {2}, {1, 3});
}

TEST(Range, Floats) {
  HostTensor a = f32({}, {0}), b = f32({}, {1}), d = f32({}, {0.25});
  expectFolded(eval("Range", {&a, &b, &d}), kFloat, {4}, {0, 0.25, 0.5, 0.75});
}

TEST(Range, Empty) {
  HostTensor a = i64({}, {5}), b = i64({}, {0}), d = i64({}, {1});
  expectFolded(eval("Range", {&a, &b, &d}), kInt64, {0}, {});
}

TEST(Range, ZeroDeltaIsError) {
  HostTensor a = i64({}, {0}), b = i64({}, {5}), d = i64({}, {0});
  expectError(eval("Range", {&a, &b, &d}));
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

TEST(Unsqueeze, AxesInputFromOpset13) {
  HostTensor x = iota(kInt64, {3, 4});
  HostTensor axes = ints({0, 3});
  EvalResult r = eval("Unsqueeze", {&x, &axes}, Attrs().opset(13));
  expectFolded(r, kInt64, {1, 3, 4, 1}, x.values);
  HostTensor last = ints({-1});
  expectFolded(eval("Unsqueeze", {&x, &last}, Attrs().opset(13)), kInt64, {3, 4, 1},
               x.values);
  HostTensor mixed = ints({1, -1});
  HostTensor v = ints({7, 8});
  expectFolded(eval("Unsqueeze", {&v, &mixed}, Attrs().opset(13)), kInt64, {2, 1, 1},
               {7, 8});
}

TEST(Unsqueeze, ScalarToVector) {
  HostTensor s = i64({}, {5});
  HostTensor axes = ints({0});
  expectFolded(eval("Unsqueeze", {&s, &axes}, Attrs().opset(13)), kInt64, {1}, {5});
}

TEST(Unsqueeze, AxesAttributeBeforeOpset13) {
  HostTensor x = iota(kFloat, {3, 4});
  expectFolded(eval("Unsqueeze", {&x}, Attrs().opset(11).is("axes", {1})), kFloat,
               {3, 1, 4}, x.values);
}

TEST(Unsqueeze, Errors) {
  HostTensor x = iota(kInt64, {3, 4});
  // From opset 13 the axes are an input, not an attribute.
  expectError(eval("Unsqueeze", {&x}, Attrs().opset(13).is("axes", {0})));
  HostTensor bad = ints({3});
  expectError(eval("Unsqueeze", {&x, &bad}, Attrs().opset(13)), "out of range");
  HostTensor badNeg = ints({-4});
  expectError(eval("Unsqueeze", {&x, &badNeg}, Attrs().opset(13)), "out of range");
}

TEST(Squeeze, AxesInputFromOpset13) {
  HostTensor x = iota(kInt64, {1, 3, 1, 2});
  HostTensor axes = ints({0, -2});
  expectFolded(eval("Squeeze", {&x, &axes}, Attrs().opset(13)), kInt64, {3, 2},
               x.values);
  HostTensor first = ints({0});
  expectFolded(eval("Squeeze", {&x, &first}, Attrs().opset(13)), kInt64, {3, 1, 2},
               x.values);
}

TEST(Squeeze, AllOnesWithoutAxes) {
  HostTensor x = iota(kInt64, {1, 3, 1, 2});
  expectFolded(eval("Squeeze", {&x}, Attrs().opset(13)), kInt64, {3, 2}, x.values);
  HostTensor one = i64({1, 1}, {9});
  expectFolded(eval("Squeeze", {&one}, Attrs().opset(13)), kInt64, {}, {9});
}

TEST(Squeeze, AxesAttributeBeforeOpset13) {
  HostTensor x = iota(kInt64, {1, 3, 1, 2});
  expectFolded(eval("Squeeze", {&x}, Attrs().opset(11).is("axes", {2})), kInt64,
               {1, 3, 2}, x.values);
}

TEST(Squeeze, NonOneDimensionIsError) {
  HostTensor x = iota(kInt64, {1, 3});
  HostTensor axes = ints({1});
  expectError(eval("Squeeze", {&x, &axes}, Attrs().opset(13)), "squeeze");
}

TEST(Reshape, Basic) {
  HostTensor x = iota(kInt64, {2, 3});
  HostTensor shape = ints({3, -1});
  expectFolded(eval("Reshape", {&x, &shape}), kInt64, {3, 2}, x.values);
  HostTensor copy = ints({0, -1, 1});
  expectFolded(eval("Reshape", {&x, &copy}), kInt64, {2, 3, 1}, x.values);
  HostTensor flat = ints({-1});
  expectFolded(eval("Reshape", {&x, &flat}), kInt64, {6}, x.values);
}

TEST(Reshape, AllowZero) {
  HostTensor x = iota(kInt64, {0, 3});
  HostTensor shape = ints({3, 0});
  expectFolded(eval("Reshape", {&x, &shape}, Attrs().i("allowzero", 1)), kInt64, {3, 0},
               {});
}

TEST(Reshape, BadShapeIsError) {
  HostTensor x = iota(kInt64, {2, 3});
  HostTensor shape = ints({4, -1});
  expectError(eval("Reshape", {&x, &shape}));
  HostTensor two = ints({-1, -1});
  expectError(eval("Reshape", {&x, &two}));
  HostTensor wrong = ints({7});
  expectError(eval("Reshape", {&x, &wrong}));
}

TEST(Flatten, Axes) {
  HostTensor x = iota(kInt64, {2, 3, 4});
  expectFolded(eval("Flatten", {&x}), kInt64, {2, 12}, x.values);
  expectFolded(eval("Flatten", {&x}, Attrs().i("axis", 0)), kInt64, {1, 24}, x.values);
  expectFolded(eval("Flatten", {&x}, Attrs().i("axis", 2)), kInt64, {6, 4}, x.values);
  expectFolded(eval("Flatten", {&x}, Attrs().i("axis", 3)), kInt64, {24, 1}, x.values);
}

TEST(Flatten, NegativeAxisCountsFromTheBack) {
  HostTensor x = iota(kInt64, {2, 3, 4});
  expectFolded(eval("Flatten", {&x}, Attrs().i("axis", -1)), kInt64, {6, 4}, x.values);
  expectFolded(eval("Flatten", {&x}, Attrs().i("axis", -2)), kInt64, {2, 12}, x.values);
  expectFolded(eval("Flatten", {&x}, Attrs().i("axis", -3)), kInt64, {1, 24}, x.values);
}

TEST(Flatten, AxisOutOfRangeIsError) {
  HostTensor x = iota(kInt64, {2, 3, 4});
  expectError(eval("Flatten", {&x}, Attrs().i("axis", 4)));
  expectError(eval("Flatten", {&x}, Attrs().i("axis", -4)));
}

TEST(Expand, BidirectionalBroadcast) {
  HostTensor x = i64({3, 1}, {1, 2, 3});
  HostTensor shape = ints({2, 1, 2});
  expectFolded(eval("Expand", {&x, &shape}), kInt64, {2, 3, 2},
               {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
  // The target may be smaller than the input: dims of 1 keep the input's.
  HostTensor small = ints({1});
  expectFolded(eval("Expand", {&x, &small}), kInt64, {3, 1}, {1, 2, 3});
  HostTensor row = i64({1, 3}, {4, 5, 6});
  HostTensor two = ints({2, 1});
  expectFolded(eval("Expand", {&row, &two}), kInt64, {2, 3}, {4, 5, 6, 4, 5, 6});
}

TEST(Expand, Scalar) {
  HostTensor s = f32({}, {1.5});
  HostTensor shape = ints({2, 2});
  expectFolded(eval("Expand", {&s, &shape}), kFloat, {2, 2}, {1.5, 1.5, 1.5, 1.5});
}

TEST(Expand, IncompatibleIsError) {
  HostTensor x = i64({3}, {1, 2, 3});
  HostTensor shape = ints({4});
  expectError(eval("Expand", {&x, &shape}));
}

TEST(Expand, TooLargeIsNotFolded) {
  HostTensor s = i64({}, {1});
  HostTensor big = ints({int64_t{1} << 14, int64_t{1} << 14});
  EXPECT_EQ(kindName(eval("Expand", {&s, &big}).kind), "NotFoldable");
  // 2^40 * 2^30 elements: must not wrap around to a small count.
  HostTensor huge = ints({int64_t{1} << 40, int64_t{1} << 30});
  EXPECT_EQ(kindName(eval("Expand", {&s, &huge}).kind), "NotFoldable");
}

TEST(Transpose, DefaultPermReverses) {
  HostTensor x = iota(kInt64, {2, 3});
  expectFolded(eval("Transpose", {&x}), kInt64, {3, 2}, {0, 3, 1, 4, 2, 5});

  HostTensor y = iota(kInt64, {2, 3, 4});
  std::vector<double> want;
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i)
        want.push_back(i * 12 + j * 4 + k);
  expectFolded(eval("Transpose", {&y}), kInt64, {4, 3, 2}, want);
}

TEST(Transpose, ExplicitPerm) {
  HostTensor y = iota(kInt64, {2, 3, 4});
  std::vector<double> want;
  // perm [1, 0, 2]: out[j][i][k] = y[i][j][k]
  for (int j = 0; j < 3; ++j)
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k)
        want.push_back(i * 12 + j * 4 + k);
  expectFolded(eval("Transpose", {&y}, Attrs().is("perm", {1, 0, 2})), kInt64,
               {3, 2, 4}, want);
}

TEST(Transpose, PermRankMismatchIsError) {
  HostTensor x = iota(kInt64, {2, 3});
  expectError(eval("Transpose", {&x}, Attrs().is("perm", {0, 1, 2})));
}

TEST(Concat, Vectors) {
  HostTensor a = ints({1, 2}), b = ints({3}), e = ints({});
  expectFolded(eval("Concat", {&a, &e, &b}, Attrs().i("axis", 0)), kInt64, {3},
               {1, 2, 3});
}

TEST(Concat, InnerAxis) {
  HostTensor a = i64({2, 1}, {1, 2});
  HostTensor b = i64({2, 2}, {10, 11, 20, 21});
  expectFolded(eval("Concat", {&a, &b}, Attrs().i("axis", 1)), kInt64, {2, 3},
               {1, 10, 11, 2, 20, 21});
  expectFolded(eval("Concat", {&a, &b}, Attrs().i("axis", -1)), kInt64, {2, 3},
               {1, 10, 11, 2, 20, 21});
}

TEST(Concat, OuterAxis) {
  HostTensor a = i64({1, 2}, {1, 2});
  HostTensor b = i64({2, 2}, {3, 4, 5, 6});
  expectFolded(eval("Concat", {&a, &b}, Attrs().i("axis", 0)), kInt64, {3, 2},
               {1, 2, 3, 4, 5, 6});
}

TEST(Concat, RankMismatchIsError) {
  HostTensor a = i64({2}, {1, 2});
  HostTensor b = i64({1, 2}, {3, 4});
  expectError(eval("Concat", {&a, &b}, Attrs().i("axis", 0)), "rank");
}

TEST(Concat, DimensionMismatchIsError) {
  HostTensor a = i64({2, 2}, {1, 2, 3, 4});
  HostTensor b = i64({2, 3}, {1, 2, 3, 4, 5, 6});
  expectError(eval("Concat", {&a, &b}, Attrs().i("axis", 0)), "dimension");
}

TEST(Concat, AxisOutOfRangeIsError) {
  HostTensor a = ints({1}), b = ints({2});
  expectError(eval("Concat", {&a, &b}, Attrs().i("axis", 1)));
  expectError(eval("Concat", {&a, &b}, Attrs().i("axis", -2)));
}

TEST(Concat, ScalarsAreError) {
  // Concat needs inputs of rank >= 1.
  HostTensor a = i64({}, {1}), b = i64({}, {2});
  expectError(eval("Concat", {&a, &b}, Attrs().i("axis", 0)));
}

TEST(Gather, NegativeIndices) {
  HostTensor x = i64({5}, {10, 20, 30, 40, 50});
  HostTensor idx = ints({-1, 0, -5});
  expectFolded(eval("Gather", {&x, &idx}), kInt64, {3}, {50, 10, 10});
}

TEST(Gather, ScalarIndexDropsTheAxis) {
  HostTensor x = i64({4}, {2, 3, 5, 7});
  HostTensor idx = i64({}, {2});
  expectFolded(eval("Gather", {&x, &idx}), kInt64, {}, {5});
  HostTensor last = i64({}, {-1});
  expectFolded(eval("Gather", {&x, &last}), kInt64, {}, {7});
}

TEST(Gather, InnerAxis) {
  HostTensor x = iota(kInt64, {2, 3});  // [[0,1,2],[3,4,5]]
  HostTensor idx = ints({2, 0});
  expectFolded(eval("Gather", {&x, &idx}, Attrs().i("axis", 1)), kInt64, {2, 2},
               {2, 0, 5, 3});
  expectFolded(eval("Gather", {&x, &idx}, Attrs().i("axis", -1)), kInt64, {2, 2},
               {2, 0, 5, 3});
}

TEST(Gather, MatrixIndices) {
  HostTensor x = iota(kFloat, {3, 2});  // [[0,1],[2,3],[4,5]]
  HostTensor idx = i64({2, 2}, {0, 1, 1, 2});
  expectFolded(eval("Gather", {&x, &idx}), kFloat, {2, 2, 2},
               {0, 1, 2, 3, 2, 3, 4, 5});
}

TEST(Gather, IndexOutOfRangeIsError) {
  HostTensor x = i64({5}, {10, 20, 30, 40, 50});
  HostTensor idx = ints({5});
  expectError(eval("Gather", {&x, &idx}), "out of range");
  HostTensor neg = ints({-6});
  expectError(eval("Gather", {&x, &neg}), "out of range");
}

TEST(Gather, AxisOutOfRangeIsError) {
  HostTensor x = iota(kInt64, {2, 3});
  HostTensor idx = ints({0});
  expectError(eval("Gather", {&x, &idx}, Attrs().i("axis", 2)));
  HostTensor s = i64({}, {1});
  expectError(eval("Gather", {&s, &idx}));
}

TEST(Slice, Basic) {
  HostTensor x = iota(kInt64, {5});
  HostTensor st = ints({1}), en = ints({kI64Max});
  expectFolded(eval("Slice", {&x, &st, &en}), kInt64, {4}, {1, 2, 3, 4});
  HostTensor st2 = ints({-2});
  expectFolded(eval("Slice", {&x, &st2, &en}), kInt64, {2}, {3, 4});
  HostTensor st3 = ints({0}), en3 = ints({-1});
  expectFolded(eval("Slice", {&x, &st3, &en3}), kInt64, {4}, {0, 1, 2, 3});
}

TEST(Slice, Clamped) {
  HostTensor x = iota(kInt64, {5});
  HostTensor st = ints({-100}), en = ints({100});
  expectFolded(eval("Slice", {&x, &st, &en}), kInt64, {5}, {0, 1, 2, 3, 4});
  HostTensor st2 = ints({7}), en2 = ints({9});
  expectFolded(eval("Slice", {&x, &st2, &en2}), kInt64, {0}, {});
}

TEST(Slice, NegativeSteps) {
  HostTensor x = iota(kInt64, {5});
  HostTensor st = ints({-1}), en = ints({kI64Min}), ax = ints({0}), step = ints({-1});
  expectFolded(eval("Slice", {&x, &st, &en, &ax, &step}), kInt64, {5},
               {4, 3, 2, 1, 0});
  HostTensor st2 = ints({4}), en2 = ints({0}), step2 = ints({-2});
  expectFolded(eval("Slice", {&x, &st2, &en2, &ax, &step2}), kInt64, {2}, {4, 2});
  HostTensor st3 = ints({10}), en3 = ints({-10}), step3 = ints({-3});
  expectFolded(eval("Slice", {&x, &st3, &en3, &ax, &step3}), kInt64, {2}, {4, 1});
}

TEST(Slice, AxesAndSteps) {
  HostTensor x = iota(kInt64, {2, 3});  // [[0,1,2],[3,4,5]]
  HostTensor st = ints({1}), en = ints({3}), ax = ints({-1});
  expectFolded(eval("Slice", {&x, &st, &en, &ax}), kInt64, {2, 2}, {1, 2, 4, 5});
  HostTensor st2 = ints({0, 0}), en2 = ints({kI64Max, kI64Max}), ax2 = ints({1, 0}),
             step2 = ints({2, 1});
  expectFolded(eval("Slice", {&x, &st2, &en2, &ax2, &step2}), kInt64, {2, 2},
               {0, 2, 3, 5});
  // A missing optional axes input (null) means 0, 1, ...
  HostTensor st3 = ints({1}), en3 = ints({2}), step3 = ints({1});
  expectFolded(eval("Slice", {&x, &st3, &en3, nullptr, &step3}), kInt64, {1, 3},
               {3, 4, 5});
}

TEST(Slice, Errors) {
  HostTensor x = iota(kInt64, {5});
  HostTensor st = ints({0, 1}), en = ints({3});
  expectError(eval("Slice", {&x, &st, &en}));
  HostTensor st1 = ints({0}), ax = ints({0}), zero = ints({0});
  expectError(eval("Slice", {&x, &st1, &en, &ax, &zero}));
  HostTensor badAxis = ints({1});
  expectError(eval("Slice", {&x, &st1, &en, &badAxis}));
}

TEST(Slice, BeforeOpset10IsNotFoldable) {
  HostTensor x = iota(kInt64, {5});
  HostTensor st = ints({1}), en = ints({3});
  EXPECT_EQ(kindName(eval("Slice", {&x, &st, &en}, Attrs().opset(9)).kind),
            "NotFoldable");
}

//===----------------------------------------------------------------------===//
// Trilu, MatMul, CumSum
//===----------------------------------------------------------------------===//

TEST(Trilu, UpperAndLower) {
  HostTensor x = f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  expectFolded(eval("Trilu", {&x}), kFloat, {3, 3}, {1, 2, 3, 0, 5, 6, 0, 0, 9});
  expectFolded(eval("Trilu", {&x}, Attrs().i("upper", 0)), kFloat, {3, 3},
               {1, 0, 0, 4, 5, 0, 7, 8, 9});
}

TEST(Trilu, DiagonalOffset) {
  HostTensor x = f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  HostTensor one = i64({}, {1}), minusOne = i64({}, {-1});
  expectFolded(eval("Trilu", {&x, &one}), kFloat, {3, 3}, {0, 2, 3, 0, 0, 6, 0, 0, 0});
  expectFolded(eval("Trilu", {&x, &minusOne}, Attrs().i("upper", 0)), kFloat, {3, 3},
               {0, 0, 0, 4, 0, 0, 7, 8, 0});
  expectFolded(eval("Trilu", {&x, &minusOne}), kFloat, {3, 3},
               {1, 2, 3, 4, 5, 6, 0, 8, 9});
}

TEST(Trilu, NonSquareAndBatched) {
  HostTensor x = i64({2, 3}, {1, 2, 3, 4, 5, 6});
  expectFolded(eval("Trilu", {&x}, Attrs().i("upper", 0)), kInt64, {2, 3},
               {1, 0, 0, 4, 5, 0});
  HostTensor b = i64({2, 2, 2}, {1, 1, 1, 1, 2, 2, 2, 2});
  expectFolded(eval("Trilu", {&b}), kInt64, {2, 2, 2}, {1, 1, 0, 1, 2, 2, 0, 2});
}

TEST(Trilu, RankOneIsError) {
  HostTensor x = i64({3}, {1, 2, 3});
  expectError(eval("Trilu", {&x}));
}

TEST(MatMul, Plain) {
  HostTensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor b = f32({3, 2}, {7, 8, 9, 10, 11, 12});
  expectFolded(eval("MatMul", {&a, &b}), kFloat, {2, 2}, {58, 64, 139, 154});
}

TEST(MatMul, BroadcastBatch) {
  // a: two 1x2 rows, b: one 2x2 matrix shared by both.
  HostTensor a = i64({2, 1, 2}, {1, 2, 3, 4});
  HostTensor b = i64({2, 2}, {1, 2, 3, 4});
  expectFolded(eval("MatMul", {&a, &b}), kInt64, {2, 1, 2}, {7, 10, 15, 22});
  // a: [1, 2, 2] identity broadcast against three batches of b.
  HostTensor eye = i64({1, 2, 2}, {1, 0, 0, 1});
  HostTensor bs = iota(kInt64, {3, 2, 2});
  expectFolded(eval("MatMul", {&eye, &bs}), kInt64, {3, 2, 2}, bs.values);
  // [3,1] x [2] batch dims broadcast to [3,2].
  HostTensor rows = i64({3, 1, 1, 2}, {1, 2, 3, 4, 5, 6});
  HostTensor cols = i64({2, 2, 1}, {1, 0, 0, 1});
  expectFolded(eval("MatMul", {&rows, &cols}), kInt64, {3, 2, 1, 1},
               {1, 2, 3, 4, 5, 6});
}

TEST(MatMul, Errors) {
  HostTensor a = f32({2, 3}, std::vector<double>(6, 1));
  HostTensor b = f32({2, 2}, std::vector<double>(4, 1));
  expectError(eval("MatMul", {&a, &b}), "contraction");
  HostTensor c = f32({2, 2, 2}, std::vector<double>(8, 1));
  HostTensor d = f32({3, 2, 2}, std::vector<double>(12, 1));
  expectError(eval("MatMul", {&c, &d}), "batch");
}

// ONNX's specification examples.
TEST(ScatterND, Elements) {
  HostTensor data = f32({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  HostTensor idx = i64({4, 1}, {4, 3, 1, 7}), updates = f32({4}, {9, 10, 11, 12});
  expectFolded(eval("ScatterND", {&data, &idx, &updates}), kFloat, {8},
               {1, 11, 3, 10, 9, 6, 7, 12});
  expectFolded(eval("ScatterND", {&data, &idx, &updates}, Attrs().s("reduction", "add")),
               kFloat, {8}, {1, 13, 3, 14, 14, 6, 7, 20});
}

TEST(ScatterND, SlicesAndNegativeIndices) {
  // Rows 0 and 2 (as -2) of a 4x2 matrix replaced.
  HostTensor data = i64({4, 2}, {0, 0, 1, 1, 2, 2, 3, 3});
  HostTensor idx = i64({2, 1}, {0, -2}), updates = i64({2, 2}, {7, 8, 9, 10});
  expectFolded(eval("ScatterND", {&data, &idx, &updates}), kInt64, {4, 2},
               {7, 8, 1, 1, 9, 10, 3, 3});
}

TEST(ScatterND, Errors) {
  HostTensor data = f32({4}, {1, 2, 3, 4});
  HostTensor idx = i64({1, 1}, {4}), updates = f32({1}, {0});
  expectError(eval("ScatterND", {&data, &idx, &updates}), "out of range");
  HostTensor two = f32({2}, {0, 0});
  HostTensor ok = i64({1, 1}, {0});
  expectError(eval("ScatterND", {&data, &ok, &two}), "updates");
  expectError(eval("ScatterND", {&data, &ok, &updates}, Attrs().s("reduction", "mean")),
              "reduction");
}

TEST(CumSum, Vector) {
  HostTensor x = i64({4}, {1, 2, 3, 4});
  HostTensor axis = i64({}, {0});
  expectFolded(eval("CumSum", {&x, &axis}), kInt64, {4}, {1, 3, 6, 10});
  expectFolded(eval("CumSum", {&x, &axis}, Attrs().i("exclusive", 1)), kInt64, {4},
               {0, 1, 3, 6});
  expectFolded(eval("CumSum", {&x, &axis}, Attrs().i("reverse", 1)), kInt64, {4},
               {10, 9, 7, 4});
  expectFolded(eval("CumSum", {&x, &axis}, Attrs().i("exclusive", 1).i("reverse", 1)),
               kInt64, {4}, {9, 7, 4, 0});
}

TEST(CumSum, Matrix) {
  HostTensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor ax0 = i64({}, {0}), ax1 = i64({}, {1}), axm1 = i64({}, {-1});
  expectFolded(eval("CumSum", {&x, &ax0}), kFloat, {2, 3}, {1, 2, 3, 5, 7, 9});
  expectFolded(eval("CumSum", {&x, &ax1}), kFloat, {2, 3}, {1, 3, 6, 4, 9, 15});
  expectFolded(eval("CumSum", {&x, &axm1}), kFloat, {2, 3}, {1, 3, 6, 4, 9, 15});
}

TEST(CumSum, AxisOutOfRangeIsError) {
  HostTensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor ax = i64({}, {2});
  expectError(eval("CumSum", {&x, &ax}));
}

} // namespace

TEST(Clip, BoundsEitherOrBoth) {
  HostTensor x = i64({5}, {-3, -1, 0, 2, 9});
  HostTensor lo = i64({}, {-1}), hi = i64({}, {4});
  expectFolded(eval("Clip", {&x, &lo, &hi}), kInt64, {5}, {-1, -1, 0, 2, 4});
  expectFolded(eval("Clip", {&x, nullptr, &hi}), kInt64, {5}, {-3, -1, 0, 2, 4});
  expectFolded(eval("Clip", {&x, &lo}), kInt64, {5}, {-1, -1, 0, 2, 9});
}

TEST(Sign, OfFloatsAndIntegers) {
  HostTensor x = f32({4}, {-2.5, 0, 0.5, -0});
  expectFolded(eval("Sign", {&x}), kFloat, {4}, {-1, 0, 1, 0});
}

TEST(Tile, RepeatsEachDimension) {
  HostTensor x = i64({2, 2}, {1, 2, 3, 4});
  HostTensor r = i64({2}, {2, 3});
  expectFolded(eval("Tile", {&x, &r}), kInt64, {4, 6},
               {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
  HostTensor bad = i64({1}, {2});
  expectError(eval("Tile", {&x, &bad}), "one repeat count per dimension");
}

TEST(GatherElements, AlongAnAxisWithNegativeIndices) {
  // ONNX's example: data [[1, 2], [3, 4]], indices [[0, 0], [1, 0]], axis 1.
  HostTensor x = i64({2, 2}, {1, 2, 3, 4});
  HostTensor idx = i64({2, 2}, {0, 0, -1, 0});
  expectFolded(eval("GatherElements", {&x, &idx}, Attrs().i("axis", 1)), kInt64, {2, 2},
               {1, 1, 4, 3});
  HostTensor rows = i64({1, 2}, {1, 0});
  expectFolded(eval("GatherElements", {&x, &rows}), kInt64, {1, 2}, {3, 2});
  HostTensor far = i64({1, 2}, {2, 0});
  expectError(eval("GatherElements", {&x, &far}), "out of range");
}

TEST(GatherND, SlicesElementsAndBatches) {
  HostTensor x = i64({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  HostTensor rows = i64({2, 1}, {1, 0});
  expectFolded(eval("GatherND", {&x, &rows}), kInt64, {2, 2, 2}, {4, 5, 6, 7, 0, 1, 2, 3});
  HostTensor points = i64({2, 3}, {0, 1, 1, 1, 0, -2});
  expectFolded(eval("GatherND", {&x, &points}), kInt64, {2}, {3, 4});
  // batch_dims 1: batch b picks row idx[b] of x[b].
  HostTensor perBatch = i64({2, 1}, {1, 0});
  expectFolded(eval("GatherND", {&x, &perBatch}, Attrs().i("batch_dims", 1)), kInt64, {2, 2},
               {2, 3, 4, 5});
  HostTensor deep = i64({1, 4}, {0, 0, 0, 0});
  expectError(eval("GatherND", {&x, &deep}), "do not fit");
}
