// The CPU kernel compiler end to end: small colo kernels are compiled into a
// shared object, loaded with dlopen, run through their `void(void **)` entry
// on random inputs and compared with the interpreter (double precision) at
// f32 tolerance: |kernel - reference| <= 1e-5 * max |reference|.
#include "colo/Codegen/KernelCompiler.h"
#include "colo/Dialect/Colo/ColoDialect.h"
#include "colo/Interpreter/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <random>

using namespace mlir;

namespace {

using Generator = std::function<double(std::mt19937 &, int64_t)>;

size_t bytesOf(Type t) { return t.isInteger(1) ? 1 : t.getIntOrFloatBitWidth() / 8; }

/// Writes `v` as an element of type `t`, as the kernel ABI stores it.
void store(Type t, double v, uint8_t *p) {
  if (t.isF32()) {
    float f = static_cast<float>(v);
    std::memcpy(p, &f, 4);
  } else if (t.isF64()) {
    std::memcpy(p, &v, 8);
  } else if (auto ft = dyn_cast<FloatType>(t)) {
    llvm::APFloat f(v);
    bool lost = false;
    f.convert(ft.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &lost);
    uint16_t bits = static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
    std::memcpy(p, &bits, 2);
  } else if (t.isInteger(1)) {
    *p = v != 0.0;
  } else {
    int64_t i = static_cast<int64_t>(v);
    std::memcpy(p, &i, bytesOf(t)); // little-endian
  }
}

double load(Type t, const uint8_t *p) {
  if (t.isF32()) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  if (t.isF64()) {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  if (auto ft = dyn_cast<FloatType>(t)) {
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    llvm::APFloat f(ft.getFloatSemantics(), llvm::APInt(16, bits));
    bool lost = false;
    f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lost);
    return f.convertToDouble();
  }
  if (t.isInteger(1))
    return *p ? 1.0 : 0.0;
  int64_t i = 0;
  std::memcpy(&i, p, bytesOf(t));
  unsigned w = t.getIntOrFloatBitWidth();
  if (w < 64) // sign-extend
    i = (i << (64 - w)) >> (64 - w);
  return static_cast<double>(i);
}

/// The value `v` rounded to type `t` and back.
double roundTrip(Type t, double v) {
  uint8_t buf[8] = {};
  store(t, v, buf);
  return load(t, buf);
}

/// Total compile time over all tests, printed at the end.
double totalCompileSeconds = 0;
int kernelsCompiled = 0;

class KernelCompilerTest : public ::testing::Test {
protected:
  void SetUp() override {
    ctx.loadDialect<colo::ColoDialect, func::FuncDialect>();
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("colo-codegen-test", dir));
  }
  void TearDown() override {
    for (void *h : handles)
      ::dlclose(h);
    llvm::sys::fs::remove_directories(dir);
  }

  OwningOpRef<ModuleOp> parse(StringRef source) {
    return parseSourceString<ModuleOp>(source, &ctx);
  }

  /// Compiles `source` into a shared object and returns the entry point of
  /// @forward; null (with the diagnostics in `errors`) if compiling failed.
  using Entry = void (*)(void **);
  Entry compile(ModuleOp module, const colo::KernelCompileOptions &opts = {}) {
    SmallString<128> so(dir);
    llvm::sys::path::append(so, "k" + std::to_string(handles.size()) + ".so");
    auto start = std::chrono::steady_clock::now();
    LogicalResult built = colo::compileKernels(module, so, opts);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (failed(built))
      return nullptr;
    totalCompileSeconds += seconds;
    ++kernelsCompiled;
    void *h = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(h, nullptr) << ::dlerror();
    if (!h)
      return nullptr;
    handles.push_back(h);
    return reinterpret_cast<Entry>(::dlsym(h, "forward"));
  }

  /// As compile, with the optimized LLVM IR written to `llvmIR`.
  Entry compileWithIR(ModuleOp module, std::string &llvmIR) {
    llvm::raw_string_ostream os(llvmIR);
    colo::KernelCompileOptions opts;
    opts.llvmIRDump = &os;
    return compile(module, opts);
  }

  /// n floats drawn uniformly from [-3, 3].
  static std::vector<float> uniformFloats(size_t n) {
    std::vector<float> x(n);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> uniform(-3, 3);
    for (float &v : x)
      v = uniform(rng);
    return x;
  }

  /// Compiles @forward of `source`, runs it on random inputs (from
  /// `generators` where given: input index -> value of element i) and
  /// compares every result with the interpreter.
  void check(StringRef source, std::map<unsigned, Generator> generators = {},
             const colo::KernelCompileOptions &opts = {}) {
    OwningOpRef<ModuleOp> module = parse(source);
    ASSERT_TRUE(module);
    auto forward = module->lookupSymbol<func::FuncOp>("forward");
    ASSERT_TRUE(forward);
    colo::KernelCompileOptions withNests = opts;
    withNests.gpuLoopNests |= gpuLoopNests;
    Entry entry = compile(*module, withNests);
    ASSERT_NE(entry, nullptr) << "compiling failed";

    std::mt19937 rng(1234);
    std::uniform_real_distribution<double> uniform(-2.0, 2.0);
    std::vector<colo::HostArray> inputs;
    std::vector<std::vector<uint8_t>> buffers;
    std::vector<void *> args;
    for (auto [i, t] : llvm::enumerate(forward.getArgumentTypes())) {
      auto type = cast<RankedTensorType>(t);
      Type elt = type.getElementType();
      colo::HostArray a;
      a.shape.assign(type.getShape().begin(), type.getShape().end());
      std::vector<uint8_t> bytes(type.getNumElements() * bytesOf(elt));
      for (int64_t j = 0; j < type.getNumElements(); ++j) {
        double v;
        if (auto g = generators.find(i); g != generators.end())
          v = g->second(rng, j);
        else if (isa<FloatType>(elt))
          v = uniform(rng);
        else
          v = static_cast<double>(rng() % (elt.isInteger(1) ? 2 : 4));
        store(elt, v, bytes.data() + j * bytesOf(elt));
        a.data.push_back(roundTrip(elt, v));
      }
      inputs.push_back(std::move(a));
      buffers.push_back(std::move(bytes));
    }
    for (Type t : forward.getResultTypes()) {
      auto type = cast<RankedTensorType>(t);
      // Filled with a pattern, so an element the kernel does not write shows.
      buffers.emplace_back(type.getNumElements() * bytesOf(type.getElementType()), 0xA5);
    }
    for (auto &b : buffers)
      args.push_back(b.data());

    FailureOr<std::vector<colo::HostArray>> expected = colo::interpret(*module, inputs);
    ASSERT_TRUE(succeeded(expected));
    entry(args.data());

    for (auto [r, t] : llvm::enumerate(forward.getResultTypes())) {
      auto type = cast<RankedTensorType>(t);
      Type elt = type.getElementType();
      const std::vector<double> &ref = (*expected)[r].data;
      const uint8_t *out = buffers[inputs.size() + r].data();
      double maxAbs = 0;
      for (double v : ref)
        if (std::isfinite(v))
          maxAbs = std::max(maxAbs, std::abs(v));
      // Integers and booleans are exact; floats within 1e-5 of the largest
      // magnitude (the interpreter computes in double).
      double tol = isa<FloatType>(elt) ? 1e-5 * maxAbs : 0.0;
      int bad = 0;
      for (size_t j = 0; j < ref.size(); ++j) {
        double got = load(elt, out + j * bytesOf(elt));
        bool ok = std::isnan(ref[j]) ? std::isnan(got)
                  : std::isinf(ref[j]) ? got == ref[j]
                                       : std::abs(got - ref[j]) <= tol;
        if (!ok && bad++ < 5)
          ADD_FAILURE() << "result " << r << " element " << j << ": kernel " << got
                        << ", interpreter " << ref[j] << " (tolerance " << tol << ")";
      }
      EXPECT_EQ(bad, 0) << "result " << r << ": " << bad << " of " << ref.size()
                        << " elements differ";
    }
  }

  /// Compiles `source`, expecting failure, and returns the diagnostics.
  std::string compileErrors(StringRef source) {
    OwningOpRef<ModuleOp> module = parse(source);
    EXPECT_TRUE(module);
    std::string messages;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      messages += d.str() + "\n";
      return success();
    });
    EXPECT_EQ(compile(*module), nullptr);
    return messages;
  }

  MLIRContext ctx;
  SmallString<128> dir;
  std::vector<void *> handles;
  /// check() compiles the CUDA kernels' loop nests, run sequentially.
  bool gpuLoopNests = false;
};

/// The kernels' numerics, each checked twice against the interpreter: as the
/// CPU loops them (CpuLoops) and as the CUDA kernels' block x thread nests
/// (colo-map-generics-to-gpu) compute them, run sequentially (GpuLoopNests).
class KernelNumericsTest : public KernelCompilerTest,
                           public ::testing::WithParamInterface<bool> {
protected:
  void SetUp() override {
    KernelCompilerTest::SetUp();
    gpuLoopNests = GetParam();
  }
};
INSTANTIATE_TEST_SUITE_P(, KernelNumericsTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &info) {
                           return info.param ? "GpuLoopNests" : "CpuLoops";
                         });

Generator labelsWithIgnored(int64_t classes, int64_t ignore) {
  return [=](std::mt19937 &rng, int64_t i) {
    return i % 4 == 1 ? static_cast<double>(ignore)
                      : static_cast<double>(rng() % classes);
  };
}

TEST_P(KernelNumericsTest, BroadcastBinaryOps) {
  check(R"mlir(
    func.func @forward(%a: tensor<2x3x8xf32>, %b: tensor<3x1xf32>, %c: tensor<8xf32>,
                       %d: tensor<f32>)
        -> (tensor<2x3x8xf32>, tensor<3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>,
            tensor<2x3x8xf32>) {
      %0 = colo.add %a, %b : tensor<2x3x8xf32>, tensor<3x1xf32>
      %1 = colo.mul %0, %c : tensor<2x3x8xf32>, tensor<8xf32>
      %2 = colo.sub %c, %b : tensor<8xf32>, tensor<3x1xf32>
      %3 = colo.div %a, %d : tensor<2x3x8xf32>, tensor<f32>
      %4 = colo.maximum %a, %c : tensor<2x3x8xf32>, tensor<8xf32>
      %5 = colo.minimum %4, %b : tensor<2x3x8xf32>, tensor<3x1xf32>
      %e = colo.exp %a : tensor<2x3x8xf32>
      %6 = colo.pow %e, %b : tensor<2x3x8xf32>, tensor<3x1xf32>
      return %1, %2, %3, %5, %6
          : tensor<2x3x8xf32>, tensor<3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>,
            tensor<2x3x8xf32>
    }
  )mlir");
}

TEST_P(KernelNumericsTest, CompareSelectAndIntegers) {
  check(R"mlir(
    func.func @forward(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %i: tensor<4x8xi64>,
                       %j: tensor<1x8xi64>)
        -> (tensor<4x8xf32>, tensor<4x8xi1>, tensor<4x8xi64>, tensor<4x8xi64>) {
      %m = colo.compare lt, %a, %b : tensor<4x8xf32>, tensor<8xf32>
      %s = colo.select %m, %a, %b : tensor<4x8xi1>, tensor<4x8xf32>, tensor<8xf32>
      %e = colo.compare ge, %i, %j : tensor<4x8xi64>, tensor<1x8xi64>
      %k = colo.add %i, %j : tensor<4x8xi64>, tensor<1x8xi64>
      %q = colo.div %k, %j : tensor<4x8xi64>, tensor<1x8xi64>
      return %s, %e, %k, %q : tensor<4x8xf32>, tensor<4x8xi1>, tensor<4x8xi64>, tensor<4x8xi64>
    }
  )mlir",
        {{2, [](std::mt19937 &rng, int64_t) { return double(int(rng() % 21) - 10); }},
         {3, [](std::mt19937 &rng, int64_t) { return double(int(rng() % 7) - 3); }}});
}

TEST_P(KernelNumericsTest, UnaryOpsAndGelu) {
  check(R"mlir(
    func.func @forward(%x: tensor<4x16xf32>)
        -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>,
            tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
      %n = colo.neg %x : tensor<4x16xf32>
      %e = colo.exp %n : tensor<4x16xf32>
      %l = colo.log %e : tensor<4x16xf32>
      %s = colo.sqrt %e : tensor<4x16xf32>
      %r = colo.rsqrt %e : tensor<4x16xf32>
      %q = colo.reciprocal %r : tensor<4x16xf32>
      %t = colo.tanh %x : tensor<4x16xf32>
      %f = colo.erf %x : tensor<4x16xf32>
      %g = colo.sigmoid %x : tensor<4x16xf32>
      %h = colo.relu %x : tensor<4x16xf32>
      %i = colo.silu %x : tensor<4x16xf32>
      %c = colo.cos %x : tensor<4x16xf32>
      %d = colo.sin %x : tensor<4x16xf32>
      %a1 = colo.add %l, %s : tensor<4x16xf32>, tensor<4x16xf32>
      %a2 = colo.add %q, %t : tensor<4x16xf32>, tensor<4x16xf32>
      %a3 = colo.add %f, %g : tensor<4x16xf32>, tensor<4x16xf32>
      %a4 = colo.add %h, %i : tensor<4x16xf32>, tensor<4x16xf32>
      %m = colo.abs %x : tensor<4x16xf32>
      %cd = colo.mul %c, %d : tensor<4x16xf32>, tensor<4x16xf32>
      %a5 = colo.add %cd, %m : tensor<4x16xf32>, tensor<4x16xf32>
      %g0 = colo.gelu %x : tensor<4x16xf32>
      %g1 = colo.gelu %x approximation = tanh : tensor<4x16xf32>
      %k = colo.clamp %x min = -1.0 max = 0.5 : tensor<4x16xf32>
      return %a1, %a2, %a3, %a4, %a5, %g0, %g1, %k
          : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>,
            tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
    }
  )mlir");
}

TEST_P(KernelNumericsTest, Converts) {
  check(R"mlir(
    func.func @forward(%x: tensor<32xf32>, %i: tensor<32xi64>)
        -> (tensor<32xbf16>, tensor<32xf16>, tensor<32xi32>, tensor<32xf64>,
            tensor<32xf32>, tensor<32xi1>, tensor<32xf32>) {
      %scaled = colo.mul %x, %x : tensor<32xf32>, tensor<32xf32>
      %b = colo.convert %scaled : tensor<32xf32> to tensor<32xbf16>
      %h = colo.convert %x : tensor<32xf32> to tensor<32xf16>
      %t = colo.convert %scaled : tensor<32xf32> to tensor<32xi32>
      %d = colo.convert %x : tensor<32xf32> to tensor<32xf64>
      %f = colo.convert %i : tensor<32xi64> to tensor<32xf32>
      %m = colo.convert %i : tensor<32xi64> to tensor<32xi1>
      %back = colo.convert %b : tensor<32xbf16> to tensor<32xf32>
      return %b, %h, %t, %d, %f, %m, %back
          : tensor<32xbf16>, tensor<32xf16>, tensor<32xi32>, tensor<32xf64>,
            tensor<32xf32>, tensor<32xi1>, tensor<32xf32>
    }
  )mlir");
}

TEST_P(KernelNumericsTest, Reductions) {
  check(R"mlir(
    func.func @forward(%x: tensor<3x5x8xf32>, %i: tensor<4x6xi64>)
        -> (tensor<3x1x8xf32>, tensor<5xf32>, tensor<3x5xf32>, tensor<f32>,
            tensor<1x1x1xf32>, tensor<6xi64>, tensor<4xi64>) {
      %s = colo.reduce_sum %x dims = [1] {keep_dims} : tensor<3x5x8xf32>
      %m = colo.reduce_mean %x dims = [0, 2] : tensor<3x5x8xf32>
      %x2 = colo.reduce_max %x dims = [2] : tensor<3x5x8xf32>
      %all = colo.reduce_sum %x dims = [0, 1, 2] : tensor<3x5x8xf32>
      %allk = colo.reduce_mean %x dims = [0, 1, 2] {keep_dims} : tensor<3x5x8xf32>
      %is = colo.reduce_sum %i dims = [0] : tensor<4x6xi64>
      %im = colo.reduce_max %i dims = [1] : tensor<4x6xi64>
      return %s, %m, %x2, %all, %allk, %is, %im
          : tensor<3x1x8xf32>, tensor<5xf32>, tensor<3x5xf32>, tensor<f32>,
            tensor<1x1x1xf32>, tensor<6xi64>, tensor<4xi64>
    }
  )mlir",
        {// Positive, so that a whole-tensor sum does not cancel: f32 accumulation
         // is accurate relative to sum |x|, which cancellation would hide.
         {0, [](std::mt19937 &rng, int64_t) {
            return std::uniform_real_distribution<double>(0.0, 2.0)(rng);
          }},
         {1, [](std::mt19937 &rng, int64_t) { return double(int(rng() % 201) - 100); }}});
}

TEST_P(KernelNumericsTest, SoftmaxAndLogSoftmax) {
  check(R"mlir(
    func.func @forward(%x: tensor<2x7x12xf32>)
        -> (tensor<2x7x12xf32>, tensor<2x7x12xf32>, tensor<2x7x12xf32>) {
      %big = colo.mul %x, %x : tensor<2x7x12xf32>, tensor<2x7x12xf32>
      %p = colo.softmax %x axis = 1 : tensor<2x7x12xf32>
      %q = colo.log_softmax %big axis = -1 : tensor<2x7x12xf32>
      %r = colo.softmax %big axis = 2 : tensor<2x7x12xf32>
      return %p, %q, %r : tensor<2x7x12xf32>, tensor<2x7x12xf32>, tensor<2x7x12xf32>
    }
  )mlir",
        {{0, [](std::mt19937 &rng, int64_t) {
            // Large logits: a softmax that did not subtract the max overflows.
            return std::uniform_real_distribution<double>(-10.0, 10.0)(rng);
          }}});
}

TEST_P(KernelNumericsTest, LayerNormAndRmsNorm) {
  check(R"mlir(
    func.func @forward(%x: tensor<4x3x16xf32>, %g: tensor<3x16xf32>, %b: tensor<3x16xf32>,
                       %h: tensor<16xf32>)
        -> (tensor<4x3x16xf32>, tensor<4x3x16xf32>, tensor<4x3x16xf32>) {
      %y = colo.layer_norm %x scale %g : tensor<3x16xf32> bias %b : tensor<3x16xf32>
           {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<4x3x16xf32>
      %z = colo.layer_norm %x {axis = -1 : i64, epsilon = 1.0e-05 : f64} : tensor<4x3x16xf32>
      %r = colo.rms_norm %x scale %h : tensor<16xf32>
           {axis = 2 : i64, epsilon = 1.0e-06 : f64} : tensor<4x3x16xf32>
      return %y, %z, %r : tensor<4x3x16xf32>, tensor<4x3x16xf32>, tensor<4x3x16xf32>
    }
  )mlir",
        {{0, [](std::mt19937 &rng, int64_t) {
            // An offset, so that a one-pass variance would lose digits.
            return 3.0 + std::uniform_real_distribution<double>(-1.0, 1.0)(rng);
          }}});
}

// Reductions long enough that the CUDA nests share each output among a
// block's threads (partials in shared memory, then a tree): sums, maxima,
// softmax and layer norm over rows of 300 and 1000.
TEST_P(KernelNumericsTest, LongReductions) {
  check(R"mlir(
    func.func @forward(%x: tensor<4x1000xf32>, %y: tensor<6x300xf32>, %g: tensor<300xf32>,
                       %b: tensor<300xf32>)
        -> (tensor<4xf32>, tensor<1000xf32>, tensor<f32>, tensor<6x300xf32>,
            tensor<6x300xf32>) {
      %s = colo.reduce_sum %x dims = [1] : tensor<4x1000xf32>
      %m = colo.reduce_max %x dims = [0] : tensor<4x1000xf32>
      %a = colo.reduce_mean %y dims = [0, 1] : tensor<6x300xf32>
      %p = colo.softmax %y axis = 1 : tensor<6x300xf32>
      %n = colo.layer_norm %y scale %g : tensor<300xf32> bias %b : tensor<300xf32>
           {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<6x300xf32>
      return %s, %m, %a, %p, %n : tensor<4xf32>, tensor<1000xf32>, tensor<f32>,
                                  tensor<6x300xf32>, tensor<6x300xf32>
    }
  )mlir");
}

TEST_P(KernelNumericsTest, BatchNormTrainingAndInference) {
  Generator positive = [](std::mt19937 &rng, int64_t) {
    return std::uniform_real_distribution<double>(0.5, 2.0)(rng);
  };
  check(R"mlir(
    func.func @forward(%x: tensor<2x4x3x5xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>,
                       %rm: tensor<4xf32>, %rv: tensor<4xf32>)
        -> (tensor<2x4x3x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x3x5xf32>,
            tensor<4xf32>, tensor<4xf32>) {
      %y, %m, %v = colo.batch_norm %x, %g, %b, %rm, %rv
          {epsilon = 1.0e-05 : f64, momentum = 0.1 : f64, training}
          : tensor<2x4x3x5xf32>, tensor<4xf32>
      %yi, %mi, %vi = colo.batch_norm %x, %g, %b, %rm, %rv
          {epsilon = 1.0e-05 : f64, momentum = 0.1 : f64}
          : tensor<2x4x3x5xf32>, tensor<4xf32>
      return %y, %m, %v, %yi, %mi, %vi
          : tensor<2x4x3x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4x3x5xf32>,
            tensor<4xf32>, tensor<4xf32>
    }
  )mlir",
        {{4, positive}});
}

TEST_P(KernelNumericsTest, TransposeSliceConcatReshape) {
  check(R"mlir(
    func.func @forward(%x: tensor<2x6x4xf32>, %y: tensor<2x3x4xf32>)
        -> (tensor<4x2x6xf32>, tensor<2x2x2xf32>, tensor<2x9x4xf32>, tensor<3x16xf32>,
            tensor<12x4xf32>, tensor<2x6x4xf32>) {
      %t = colo.transpose %x permutation = [2, 0, 1] : tensor<2x6x4xf32>
      %s = colo.slice %x start = [0, 1, 0] limit = [2, 6, 4] stride = [1, 3, 2]
           : tensor<2x6x4xf32>
      %c = colo.concat %x, %y axis = 1 : tensor<2x6x4xf32>, tensor<2x3x4xf32>
      %r = colo.reshape %x : tensor<2x6x4xf32> -> tensor<3x16xf32>
      %f = colo.reshape %x : tensor<2x6x4xf32> -> tensor<12x4xf32>
      %b = colo.broadcast_to %y : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
      %d = colo.dropout %x ratio = 0.0 : tensor<2x6x4xf32>
      return %t, %s, %c, %r, %f, %d
          : tensor<4x2x6xf32>, tensor<2x2x2xf32>, tensor<2x9x4xf32>, tensor<3x16xf32>,
            tensor<12x4xf32>, tensor<2x6x4xf32>
    }
  )mlir");
}

TEST_P(KernelNumericsTest, BroadcastToAndConstant) {
  check(R"mlir(
    func.func @forward(%x: tensor<1x8xf32>) -> (tensor<3x4x8xf32>, tensor<2x2xf32>) {
      %b = colo.broadcast_to %x : tensor<1x8xf32> -> tensor<3x4x8xf32>
      %c = colo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
      %d = colo.constant dense<0.5> : tensor<2x2xf32>
      %e = colo.add %c, %d : tensor<2x2xf32>, tensor<2x2xf32>
      return %b, %e : tensor<3x4x8xf32>, tensor<2x2xf32>
    }
  )mlir");
}

// Results that are not computed into a fresh buffer: an input, a strided
// view of one, a constant, and one value returned twice. Each is copied into
// its own output.
TEST_P(KernelNumericsTest, ResultsThatAreInputsViewsConstantsOrRepeated) {
  check(R"mlir(
    func.func @forward(%x: tensor<4x6xf32>)
        -> (tensor<4x6xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<4x6xf32>,
            tensor<4x6xf32>, tensor<24xf32>) {
      %s = colo.slice %x start = [0, 1] limit = [4, 6] stride = [2, 3] : tensor<4x6xf32>
      %c = colo.constant dense<[1.0, 2.0]> : tensor<2xf32>
      %e = colo.exp %x : tensor<4x6xf32>
      %r = colo.reshape %e : tensor<4x6xf32> -> tensor<24xf32>
      return %x, %s, %c, %e, %e, %r
          : tensor<4x6xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<4x6xf32>,
            tensor<4x6xf32>, tensor<24xf32>
    }
  )mlir");
}

// f64 kernels compute and accumulate in f64.
TEST_P(KernelNumericsTest, DoublePrecision) {
  check(R"mlir(
    func.func @forward(%x: tensor<4x32xf64>, %g: tensor<32xf64>)
        -> (tensor<4x32xf64>, tensor<4x32xf64>, tensor<4xf64>) {
      %y = colo.layer_norm %x scale %g : tensor<32xf64>
           {axis = 1 : i64, epsilon = 1.0e-05 : f64} : tensor<4x32xf64>
      %p = colo.softmax %x axis = 1 : tensor<4x32xf64>
      %s = colo.reduce_sum %x dims = [1] : tensor<4x32xf64>
      return %y, %p, %s : tensor<4x32xf64>, tensor<4x32xf64>, tensor<4xf64>
    }
  )mlir",
        {{0, [](std::mt19937 &rng, int64_t) {
            return std::uniform_real_distribution<double>(0.0, 2.0)(rng);
          }}});
}

TEST_P(KernelNumericsTest, GatherAndEmbedding) {
  check(R"mlir(
    func.func @forward(%x: tensor<4x10x3xf32>, %i: tensor<2x3xi64>, %table: tensor<50x8xf32>,
                       %ids: tensor<2x5xi64>)
        -> (tensor<4x2x3x3xf32>, tensor<2x5x8xf32>) {
      %g = colo.gather %x, %i axis = 1 : tensor<4x10x3xf32>, tensor<2x3xi64>
      %e = colo.embedding %table, %ids : tensor<50x8xf32>, tensor<2x5xi64>
      return %g, %e : tensor<4x2x3x3xf32>, tensor<2x5x8xf32>
    }
  )mlir",
        {{1, [](std::mt19937 &rng, int64_t) { return double(int(rng() % 20) - 10); }},
         {3, [](std::mt19937 &rng, int64_t) { return double(rng() % 50); }}});
}

// Repeated indices accumulate and negative ones count from the end; axis 1
// has dimensions before and after it, axis -2 (0) is the embedding gradient.
// The last scatter reads a computed tensor and feeds another op. The bf16
// updates are small integers, so that their sums are exact in bf16 (the
// interpreter does not round its sums to bf16).
TEST_P(KernelNumericsTest, ScatterAddAndSliceBackward) {
  check(R"mlir(
    func.func @forward(%u: tensor<3x2x4x5xf32>, %i: tensor<2x4xi64>, %d: tensor<2x5x8xf32>,
                       %ids: tensor<2x5xi32>, %g: tensor<2x2x2xf32>, %h: tensor<2x5x8xbf16>)
        -> (tensor<3x6x5xf32>, tensor<7x8xf32>, tensor<2x6x4xf32>, tensor<7x8xbf16>,
            tensor<7x8xf32>) {
      %a = colo.scatter_add %u, %i axis = 1
           : tensor<3x2x4x5xf32>, tensor<2x4xi64> -> tensor<3x6x5xf32>
      %e = colo.scatter_add %d, %ids axis = -2
           : tensor<2x5x8xf32>, tensor<2x5xi32> -> tensor<7x8xf32>
      %s = colo.slice_backward %g start = [0, 1, 0] limit = [2, 6, 4] stride = [1, 3, 2]
           : tensor<2x2x2xf32> -> tensor<2x6x4xf32>
      %b = colo.scatter_add %h, %ids axis = 0
           : tensor<2x5x8xbf16>, tensor<2x5xi32> -> tensor<7x8xbf16>
      %sq = colo.mul %d, %d : tensor<2x5x8xf32>, tensor<2x5x8xf32>
      %f = colo.scatter_add %sq, %ids axis = 0
           : tensor<2x5x8xf32>, tensor<2x5xi32> -> tensor<7x8xf32>
      %n = colo.neg %f : tensor<7x8xf32>
      return %a, %e, %s, %b, %n
          : tensor<3x6x5xf32>, tensor<7x8xf32>, tensor<2x6x4xf32>, tensor<7x8xbf16>,
            tensor<7x8xf32>
    }
  )mlir",
        {{1, [](std::mt19937 &rng, int64_t) { return double(int(rng() % 12) - 6); }},
         {3, [](std::mt19937 &rng, int64_t) { return double(int(rng() % 7) - 3); }},
         {5, [](std::mt19937 &rng, int64_t) { return double(int(rng() % 9) - 4); }}});
}

TEST_P(KernelNumericsTest, CrossEntropyWithIgnoreIndexAndSmoothing) {
  check(R"mlir(
    func.func @forward(%x: tensor<2x6x10xf32>, %l: tensor<2x6xi64>, %y: tensor<8x10xf32>,
                       %t: tensor<8xi64>)
        -> (tensor<f32>, tensor<f32>) {
      %a = colo.cross_entropy %x, %l {ignore_index = -100 : i64, label_smoothing = 0.1 : f64}
           : tensor<2x6x10xf32>, tensor<2x6xi64>
      %b = colo.cross_entropy %y, %t {ignore_index = 3 : i64}
           : tensor<8x10xf32>, tensor<8xi64>
      return %a, %b : tensor<f32>, tensor<f32>
    }
  )mlir",
        {{1, labelsWithIgnored(10, -100)}, {3, labelsWithIgnored(10, 3)}});
}

TEST_P(KernelNumericsTest, CrossEntropyAllIgnoredIsNaN) {
  check(R"mlir(
    func.func @forward(%x: tensor<4x5xf32>, %l: tensor<4xi64>) -> tensor<f32> {
      %a = colo.cross_entropy %x, %l : tensor<4x5xf32>, tensor<4xi64>
      return %a : tensor<f32>
    }
  )mlir",
        {{1, [](std::mt19937 &, int64_t) { return -100.0; }}});
}

TEST_P(KernelNumericsTest, CrossEntropyBackwardWithIgnoreIndexAndSmoothing) {
  check(R"mlir(
    func.func @forward(%x: tensor<2x6x10xf32>, %l: tensor<2x6xi64>, %g: tensor<f32>,
                       %y: tensor<8x10xf32>, %t: tensor<8xi32>)
        -> (tensor<2x6x10xf32>, tensor<8x10xf32>) {
      %a = colo.cross_entropy_backward %x, %l, %g
           {ignore_index = -100 : i64, label_smoothing = 0.1 : f64}
           : tensor<2x6x10xf32>, tensor<2x6xi64>, tensor<f32>
      %b = colo.cross_entropy_backward %y, %t, %g {ignore_index = 3 : i64}
           : tensor<8x10xf32>, tensor<8xi32>, tensor<f32>
      return %a, %b : tensor<2x6x10xf32>, tensor<8x10xf32>
    }
  )mlir",
        {{0, [](std::mt19937 &rng, int64_t) {
            return std::uniform_real_distribution<double>(-10.0, 10.0)(rng);
          }},
         {1, labelsWithIgnored(10, -100)},
         {4, labelsWithIgnored(10, 3)}});
}

// colo-decompose-loss's per-position forms, with ignored labels and label
// smoothing, against the interpreter.
TEST_P(KernelNumericsTest, CrossEntropyRowsAndTheirGradient) {
  check(R"mlir(
    func.func @forward(%x: tensor<2x6x10xf32>, %l: tensor<2x6xi64>, %s: tensor<f32>,
                       %y: tensor<8x10xf32>, %t: tensor<8xi32>)
        -> (tensor<2x6xf32>, tensor<2x6x10xf32>, tensor<8xf32>, tensor<8x10xf32>) {
      %a = colo.cross_entropy_rows %x, %l {ignore_index = -100 : i64, label_smoothing = 0.1 : f64}
           : tensor<2x6x10xf32>, tensor<2x6xi64>
      %da = colo.cross_entropy_rows_backward %x, %l, %s
            {ignore_index = -100 : i64, label_smoothing = 0.1 : f64}
            : tensor<2x6x10xf32>, tensor<2x6xi64>, tensor<f32>
      %b = colo.cross_entropy_rows %y, %t {ignore_index = 3 : i64}
           : tensor<8x10xf32>, tensor<8xi32>
      %db = colo.cross_entropy_rows_backward %y, %t, %s {ignore_index = 3 : i64}
            : tensor<8x10xf32>, tensor<8xi32>, tensor<f32>
      return %a, %da, %b, %db
          : tensor<2x6xf32>, tensor<2x6x10xf32>, tensor<8xf32>, tensor<8x10xf32>
    }
  )mlir",
        {{0, [](std::mt19937 &rng, int64_t) {
            return std::uniform_real_distribution<double>(-10.0, 10.0)(rng);
          }},
         {1, labelsWithIgnored(10, -100)},
         {4, labelsWithIgnored(10, 3)}});
}

TEST_P(KernelNumericsTest, BatchNormBackward) {
  check(R"mlir(
    func.func @forward(%x: tensor<2x4x3x5xf32>, %g: tensor<4xf32>, %dy: tensor<2x4x3x5xf32>,
                       %x2: tensor<6x3xf32>, %g2: tensor<3xf32>, %dy2: tensor<6x3xf32>)
        -> (tensor<2x4x3x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<6x3xf32>,
            tensor<3xf32>, tensor<3xf32>) {
      %dx, %dg, %db = colo.batch_norm_backward %x, %g, %dy {epsilon = 1.0e-05 : f64}
          : tensor<2x4x3x5xf32>, tensor<4xf32>
      %dx2, %dg2, %db2 = colo.batch_norm_backward %x2, %g2, %dy2 {epsilon = 1.0e-03 : f64}
          : tensor<6x3xf32>, tensor<3xf32>
      return %dx, %dg, %db, %dx2, %dg2, %db2
          : tensor<2x4x3x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<6x3xf32>,
            tensor<3xf32>, tensor<3xf32>
    }
  )mlir",
        {{0, [](std::mt19937 &rng, int64_t) {
            // An offset, so that a one-pass variance would lose digits.
            return 3.0 + std::uniform_real_distribution<double>(-1.0, 1.0)(rng);
          }}});
}

/// The generators of an update's learning rate (0.1) and step.
std::map<unsigned, Generator> updateScalars(unsigned lr, unsigned step, double stepValue) {
  return {{lr, [](std::mt19937 &, int64_t) { return 0.1; }},
          {step, [stepValue](std::mt19937 &, int64_t) { return stepValue; }}};
}

/// Runs `source` at step 1 (where SGD's momentum buffer starts as the
/// gradient) and at step 5 (where the bias corrections are not trivial).
/// `nonNegative` is the index of the second moment's input, if any.
void checkAtSteps(std::function<void(std::map<unsigned, Generator>)> run, unsigned lr,
                  unsigned step, std::optional<unsigned> nonNegative = std::nullopt) {
  for (double s : {1.0, 5.0}) {
    SCOPED_TRACE("step " + std::to_string(static_cast<int>(s)));
    std::map<unsigned, Generator> gens = updateScalars(lr, step, s);
    if (nonNegative)
      gens[*nonNegative] = [](std::mt19937 &rng, int64_t) {
        return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
      };
    run(gens);
  }
}

TEST_P(KernelNumericsTest, SgdUpdate) {
  checkAtSteps(
      [&](std::map<unsigned, Generator> gens) {
        check(R"mlir(
    func.func @forward(%p: tensor<4x8xf32>, %g: tensor<4x8xf32>, %b: tensor<4x8xf32>,
                       %lr: tensor<f32>, %step: tensor<i64>)
        -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
            tensor<4x8xf32>, tensor<4x8xf32>) {
      %p1, %b1 = colo.sgd_update %p, %g, %b, %lr, %step
          {momentum = 0.9 : f64, dampening = 0.1 : f64, weight_decay = 0.01 : f64}
          : tensor<4x8xf32>
      %p2, %b2 = colo.sgd_update %p, %g, %b, %lr, %step
          {momentum = 0.8 : f64, dampening = 0.0 : f64, weight_decay = 0.0 : f64, nesterov}
          : tensor<4x8xf32>
      %p3, %b3 = colo.sgd_update %p, %g, %b, %lr, %step
          {momentum = 0.0 : f64, dampening = 0.0 : f64, weight_decay = 0.1 : f64}
          : tensor<4x8xf32>
      return %p1, %b1, %p2, %b2, %p3, %b3
          : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
            tensor<4x8xf32>, tensor<4x8xf32>
    }
  )mlir",
              gens);
      },
      3, 4);
}

TEST_P(KernelNumericsTest, AdamAndAdamWUpdate) {
  checkAtSteps(
      [&](std::map<unsigned, Generator> gens) {
        check(R"mlir(
    func.func @forward(%p: tensor<4x8xf32>, %g: tensor<4x8xf32>, %m: tensor<4x8xf32>,
                       %v: tensor<4x8xf32>, %lr: tensor<f32>, %step: tensor<i64>)
        -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
            tensor<4x8xf32>, tensor<4x8xf32>) {
      %p1, %m1, %v1 = colo.adam_update %p, %g, %m, %v, %lr, %step
          {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-08 : f64,
           weight_decay = 0.01 : f64} : tensor<4x8xf32>
      %p2, %m2, %v2 = colo.adam_update %p, %g, %m, %v, %lr, %step
          {beta1 = 0.8 : f64, beta2 = 0.99 : f64, epsilon = 1.0e-06 : f64,
           weight_decay = 0.1 : f64, decoupled} : tensor<4x8xf32>
      return %p1, %m1, %v1, %p2, %m2, %v2
          : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
            tensor<4x8xf32>, tensor<4x8xf32>
    }
  )mlir",
              gens);
      },
      4, 5, 3);
}

TEST_P(KernelNumericsTest, LambUpdate) {
  checkAtSteps(
      [&](std::map<unsigned, Generator> gens) {
        check(R"mlir(
    func.func @forward(%p: tensor<6x5xf32>, %g: tensor<6x5xf32>, %m: tensor<6x5xf32>,
                       %v: tensor<6x5xf32>, %lr: tensor<f32>, %step: tensor<i64>)
        -> (tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>) {
      %p1, %m1, %v1 = colo.lamb_update %p, %g, %m, %v, %lr, %step
          {beta1 = 0.9 : f64, beta2 = 0.999 : f64, epsilon = 1.0e-06 : f64,
           weight_decay = 0.01 : f64} : tensor<6x5xf32>
      return %p1, %m1, %v1 : tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>
    }
  )mlir",
              gens);
      },
      4, 5, 3);
}

TEST_P(KernelNumericsTest, LarsUpdate) {
  checkAtSteps(
      [&](std::map<unsigned, Generator> gens) {
        check(R"mlir(
    func.func @forward(%p: tensor<6x5xf32>, %g: tensor<6x5xf32>, %b: tensor<6x5xf32>,
                       %lr: tensor<f32>, %step: tensor<i64>)
        -> (tensor<6x5xf32>, tensor<6x5xf32>) {
      %p1, %b1 = colo.lars_update %p, %g, %b, %lr, %step
          {momentum = 0.9 : f64, weight_decay = 0.0001 : f64,
           trust_coefficient = 0.001 : f64, epsilon = 1.0e-08 : f64} : tensor<6x5xf32>
      return %p1, %b1 : tensor<6x5xf32>, tensor<6x5xf32>
    }
  )mlir",
              gens);
      },
      3, 4);
}

TEST_P(KernelNumericsTest, MseLoss) {
  check(R"mlir(
    func.func @forward(%p: tensor<8x4xf32>, %t: tensor<8x4xf32>) -> tensor<f32> {
      %l = colo.mse_loss %p, %t : tensor<8x4xf32>, tensor<8x4xf32>
      return %l : tensor<f32>
    }
  )mlir");
}

// A chain of elementwise ops becomes one loop nest: after fusion a single
// linalg.generic remains.
TEST_P(KernelNumericsTest, FusedElementwiseChain) {
  StringRef source = R"mlir(
    func.func @forward(%x: tensor<16x64xf32>, %w: tensor<64xf32>, %b: tensor<64xf32>,
                       %res: tensor<16x64xf32>) -> tensor<16x64xf32> {
      %0 = colo.mul %x, %w : tensor<16x64xf32>, tensor<64xf32>
      %1 = colo.add %0, %b : tensor<16x64xf32>, tensor<64xf32>
      %2 = colo.gelu %1 approximation = tanh : tensor<16x64xf32>
      %c = colo.constant dense<0.5> : tensor<f32>
      %3 = colo.mul %2, %c : tensor<16x64xf32>, tensor<f32>
      %4 = colo.add %3, %res : tensor<16x64xf32>, tensor<16x64xf32>
      %5 = colo.sigmoid %4 : tensor<16x64xf32>
      return %5 : tensor<16x64xf32>
    }
  )mlir";
  std::string dump;
  llvm::raw_string_ostream os(dump);
  colo::KernelCompileOptions opts;
  opts.irDump = &os;
  check(source, {}, opts);

  StringRef text(dump);
  size_t at = text.find("(colo-fuse-elementwise)");
  ASSERT_NE(at, StringRef::npos) << "no IR dump after the fusion pass";
  StringRef fused = text.drop_front(at);
  fused = fused.take_front(fused.find("IR Dump After", 10));
  EXPECT_EQ(fused.count("linalg.generic"), 1u) << fused.str();
}

// tanh, erf, exp and log become polynomials that vectorize: the optimized
// LLVM IR calls no libm function for them.
TEST_F(KernelCompilerTest, TranscendentalsCallNoLibm) {
  StringRef source = R"mlir(
    func.func @forward(%x: tensor<64xf32>) -> tensor<64xf32> {
      %t = colo.tanh %x : tensor<64xf32>
      %f = colo.erf %t : tensor<64xf32>
      %e = colo.exp %f : tensor<64xf32>
      %l = colo.log %e : tensor<64xf32>
      return %l : tensor<64xf32>
    }
  )mlir";
  std::string llvmIR;
  llvm::raw_string_ostream os(llvmIR);
  colo::KernelCompileOptions opts;
  opts.llvmIRDump = &os;
  check(source, {}, opts);
  for (StringRef f : {"@tanhf(", "@erff(", "@expf(", "@logf(", "@llvm.exp.", "@llvm.log."})
    EXPECT_FALSE(StringRef(llvmIR).contains(f)) << f.str() << " is called:\n" << llvmIR;
}

// A sum over computed values (softmax's exponentials) whose length is no
// multiple of 16 vectorizes as an ordered reduction: the exponentials in
// vector lanes, the additions in their sequential order, so the result is bit
// for bit the scalar loop's.
TEST_F(KernelCompilerTest, StrictSumsVectorizeInOrder) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    func.func @forward(%x: tensor<4x1000xf32>) -> tensor<4xf32> {
      %e = colo.exp %x : tensor<4x1000xf32>
      %s = colo.reduce_sum %e dims = [1] : tensor<4x1000xf32>
      return %s : tensor<4xf32>
    }
  )mlir");
  ASSERT_TRUE(module);
  std::string llvmIR;
  Entry forward = compileWithIR(*module, llvmIR);
  ASSERT_NE(forward, nullptr);
  EXPECT_TRUE(StringRef(llvmIR).contains("@llvm.vector.reduce.fadd.v")) << llvmIR;
  EXPECT_FALSE(StringRef(llvmIR).contains("reassoc")) << llvmIR;

  std::vector<float> x = uniformFloats(4000), sums(4);
  void *args[] = {x.data(), sums.data()};
  forward(args);
  // The same exponentials, summed one after the other.
  std::vector<float> e(4000);
  void *expArgs[] = {x.data(), e.data()};
  OwningOpRef<ModuleOp> expOnly = parse(R"mlir(
    func.func @forward(%x: tensor<4x1000xf32>) -> tensor<4x1000xf32> {
      %e = colo.exp %x : tensor<4x1000xf32>
      return %e : tensor<4x1000xf32>
    }
  )mlir");
  ASSERT_TRUE(expOnly);
  Entry exp = compile(*expOnly);
  ASSERT_NE(exp, nullptr);
  exp(expArgs);
  for (int r = 0; r < 4; ++r) {
    float sequential = 0;
    for (int i = 0; i < 1000; ++i)
      sequential += e[r * 1000 + i];
    EXPECT_EQ(sums[r], sequential) << "row " << r;
  }
}

// A sum over a multiple of 16 elements runs in 16 lanes (element k in lane
// k % 16, each lane in order) added in lane order: the order is the IR's, so
// it is exact to restate here, and the lanes are 16 independent chains that
// need no reassociation. A maximum is the same in any order.
TEST_F(KernelCompilerTest, SumsRunInSixteenLanesAddedInOrder) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    func.func @forward(%x: tensor<4x1024xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
      %s = colo.reduce_sum %x dims = [1] : tensor<4x1024xf32>
      %m = colo.reduce_max %x dims = [1] : tensor<4x1024xf32>
      return %s, %m : tensor<4xf32>, tensor<4xf32>
    }
  )mlir");
  ASSERT_TRUE(module);
  std::string llvmIR;
  Entry forward = compileWithIR(*module, llvmIR);
  ASSERT_NE(forward, nullptr);
  EXPECT_FALSE(StringRef(llvmIR).contains("reassoc")) << llvmIR;

  std::vector<float> x = uniformFloats(4096), sums(4), maxima(4);
  void *args[] = {x.data(), sums.data(), maxima.data()};
  forward(args);
  for (int r = 0; r < 4; ++r) {
    float lanes[16] = {};
    for (int i = 0; i < 1024; ++i)
      lanes[i % 16] += x[r * 1024 + i];
    float sum = 0;
    for (float lane : lanes)
      sum += lane;
    EXPECT_EQ(sums[r], sum) << "row " << r;
    EXPECT_EQ(maxima[r], *std::max_element(&x[r * 1024], &x[(r + 1) * 1024])) << "row " << r;
  }
}

// Split reductions that read a broadcast operand (a mean kept as a size-1
// dimension) and recompute a cheap producer for two users: layer norm's
// variance and a softmax over scaled scores, 64 wide so that both reduce in
// 16 lanes.
TEST_F(KernelCompilerTest, SplitReductionsReadBroadcastOperands) {
  check(R"mlir(
    func.func @forward(%x: tensor<3x5x64xf32>, %m: tensor<64xf32>)
        -> (tensor<3x5x1xf32>, tensor<3x5x64xf32>) {
      %mean = colo.reduce_mean %x dims = [2] {keep_dims} : tensor<3x5x64xf32>
      %d = colo.sub %x, %mean : tensor<3x5x64xf32>, tensor<3x5x1xf32>
      %sq = colo.mul %d, %d : tensor<3x5x64xf32>, tensor<3x5x64xf32>
      %var = colo.reduce_mean %sq dims = [2] {keep_dims} : tensor<3x5x64xf32>
      %c = colo.constant dense<0.125> : tensor<f32>
      %s = colo.mul %x, %c : tensor<3x5x64xf32>, tensor<f32>
      %t = colo.add %s, %m : tensor<3x5x64xf32>, tensor<64xf32>
      %p = colo.softmax %t axis = 2 : tensor<3x5x64xf32>
      return %var, %p : tensor<3x5x1xf32>, tensor<3x5x64xf32>
    }
  )mlir",
        {{0, [](std::mt19937 &rng, int64_t) {
            return 3.0 + std::uniform_real_distribution<double>(-4.0, 4.0)(rng);
          }}});
}

TEST_F(KernelCompilerTest, SeveralKernelsInOneObject) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
      %y = colo.neg %x : tensor<4xf32>
      return %y : tensor<4xf32>
    }
    func.func @twice(%x: tensor<4xf32>) -> tensor<4xf32> {
      %y = colo.add %x, %x : tensor<4xf32>, tensor<4xf32>
      return %y : tensor<4xf32>
    }
  )mlir");
  ASSERT_TRUE(module);
  Entry forward = compile(*module);
  ASSERT_NE(forward, nullptr);
  auto twice = reinterpret_cast<Entry>(::dlsym(handles.back(), "twice"));
  ASSERT_NE(twice, nullptr);
  // The implementations are internal: only the entry points are exported.
  EXPECT_EQ(::dlsym(handles.back(), "forward_impl"), nullptr);
  float x[4] = {1, -2, 3, -4}, y[4] = {}, z[4] = {};
  void *a[] = {x, y}, *b[] = {x, z};
  forward(a);
  twice(b);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(y[i], -x[i]);
    EXPECT_EQ(z[i], 2 * x[i]);
  }
}

TEST_F(KernelCompilerTest, LibraryOpIsAnError) {
  std::string errors = compileErrors(R"mlir(
    func.func @forward(%x: tensor<4x8xf32>, %w: tensor<8x2xf32>) -> tensor<4x2xf32> {
      %y = colo.matmul %x, %w : tensor<4x8xf32>, tensor<8x2xf32>
      return %y : tensor<4x2xf32>
    }
  )mlir");
  EXPECT_NE(errors.find("'colo.matmul' has no CPU kernel lowering"), std::string::npos)
      << errors;
}

// The mask is the interpreter's, element for element (a dropped element is 0,
// a kept one x / (1 - ratio)); without a key dropout is the identity.
TEST_P(KernelNumericsTest, KeyedDropoutMatchesTheInterpreter) {
  check(R"mlir(
    func.func @forward(%x: tensor<8x64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
      %k = colo.constant dense<123457> : tensor<i64>
      %y = colo.dropout %x key %k ratio = 0.25 : tensor<8x64xf32>
      %z = colo.dropout %x ratio = 0.25 : tensor<8x64xf32>
      return %y, %z : tensor<8x64xf32>, tensor<8x64xf32>
    }
  )mlir");
}

TEST_F(KernelCompilerTest, MissingLinkerIsAnError) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
    func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
      %y = colo.neg %x : tensor<4xf32>
      return %y : tensor<4xf32>
    }
  )mlir");
  std::string messages;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    messages += d.str();
    return success();
  });
  colo::KernelCompileOptions opts;
  opts.linker = "colo-no-such-compiler";
  EXPECT_EQ(compile(*module, opts), nullptr);
  EXPECT_NE(messages.find("no C compiler driver 'colo-no-such-compiler'"),
            std::string::npos)
      << messages;
}

/// The objects in the cache directory `cache`.
int cachedObjects(StringRef cache) {
  int n = 0;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(cache, ec), end; it != end && !ec;
       it.increment(ec))
    n += llvm::sys::path::extension(it->path()) == ".o";
  return n;
}

// A kernel compiled once is read from the cache under any name: module B's
// @forward has module A's @aux body, and B adds nothing to the cache while
// its @forward computes exp (checked against the interpreter), not A's neg.
// Other options are other objects.
TEST_F(KernelCompilerTest, CacheReusesAKernelUnderAnotherName) {
  SmallString<128> cache(dir);
  llvm::sys::path::append(cache, "cache");
  colo::KernelCompileOptions opts;
  opts.cacheDir = cache.str().str();
  StringRef a = R"mlir(
    func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
      %y = colo.neg %x : tensor<4xf32>
      return %y : tensor<4xf32>
    }
    func.func @aux(%x: tensor<4xf32>) -> tensor<4xf32> {
      %y = colo.exp %x : tensor<4xf32>
      return %y : tensor<4xf32>
    }
  )mlir";
  StringRef b = R"mlir(
    func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
      %y = colo.exp %x : tensor<4xf32>
      return %y : tensor<4xf32>
    }
    func.func @other(%x: tensor<4xf32>) -> tensor<4xf32> {
      %y = colo.neg %x : tensor<4xf32>
      return %y : tensor<4xf32>
    }
  )mlir";
  check(a, {}, opts);
  EXPECT_EQ(cachedObjects(cache), 2);
  check(b, {}, opts);
  EXPECT_EQ(cachedObjects(cache), 2);
  opts.optLevel = 2;
  check(a, {}, opts);
  EXPECT_EQ(cachedObjects(cache), 4);
}

struct CompileTimeReport : ::testing::Environment {
  void TearDown() override {
    if (kernelsCompiled)
      std::printf("[ colo ] %d kernel modules compiled in %.2f s (%.0f ms each)\n",
                  kernelsCompiled, totalCompileSeconds,
                  1000 * totalCompileSeconds / kernelsCompiled);
  }
};
const auto *const report = ::testing::AddGlobalTestEnvironment(new CompileTimeReport);

} // namespace
