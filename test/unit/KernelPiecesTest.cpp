// splitKernelIntoPieces (lib/Compiler/KernelPieces.cpp): which kernels split,
// the pieces' types and byte offsets, and, through the reference
// interpreter, that the pieces run on their chunks of the inputs give
// exactly the chunks of the whole kernel's outputs.
#include "KernelPieces.h"

#include "colo/Dialect/Colo/ColoDialect.h"
#include "colo/Interpreter/Interpreter.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

using colo::HostArray;

namespace {

class KernelPiecesTest : public ::testing::Test {
protected:
  KernelPiecesTest() {
    mlir::DialectRegistry registry;
    registry.insert<colo::ColoDialect, mlir::func::FuncDialect>();
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();
  }

  mlir::OwningOpRef<mlir::ModuleOp> parse(const std::string &ir) {
    return mlir::parseSourceString<mlir::ModuleOp>(ir, &ctx);
  }

  static mlir::func::FuncOp forward(mlir::ModuleOp m) {
    return m.lookupSymbol<mlir::func::FuncOp>("forward");
  }

  std::optional<colo::KernelPieces> split(mlir::ModuleOp m, int64_t parts = 4) {
    return colo::splitKernelIntoPieces(forward(m), {parts}, /*minElements=*/1);
  }

  HostArray random(std::vector<int64_t> shape) {
    HostArray a{shape, {}};
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    std::uniform_real_distribution<double> dist(-2, 2);
    for (int64_t i = 0; i < n; ++i)
      a.data.push_back(static_cast<float>(dist(gen)));
    return a;
  }

  /// Runs the whole kernel on `inputs`, then every piece on its chunks
  /// (byte offsets / 4: f32), and expects the pieces' outputs to be the
  /// whole outputs' chunks exactly.
  void expectPiecesMatch(const std::string &ir, const std::vector<HostArray> &inputs,
                         int64_t parts) {
    auto whole = parse(ir), pieced = parse(ir);
    ASSERT_TRUE(whole && pieced);
    std::optional<colo::KernelPieces> pieces = split(*pieced, parts);
    ASSERT_TRUE(pieces);
    ASSERT_EQ(pieces->pieces, parts);
    auto expected = colo::interpret(*whole, inputs);
    ASSERT_TRUE(succeeded(expected));
    mlir::FunctionType type = forward(*pieced).getFunctionType();
    for (int64_t p = 0; p < parts; ++p) {
      std::vector<HostArray> chunk;
      for (auto [i, in] : llvm::enumerate(inputs)) {
        int64_t n = pieces->pieceBytes[i] / 4;
        if (n == 0) {
          chunk.push_back(in);
          continue;
        }
        auto t = llvm::cast<mlir::RankedTensorType>(type.getInput(i));
        HostArray c{std::vector<int64_t>(t.getShape()), {}};
        c.data.assign(in.data.begin() + p * n, in.data.begin() + (p + 1) * n);
        chunk.push_back(c);
      }
      auto got = colo::interpret(*pieced, chunk);
      ASSERT_TRUE(succeeded(got));
      for (size_t r = 0; r < got->size(); ++r) {
        int64_t n = pieces->pieceBytes[inputs.size() + r] / 4;
        ASSERT_EQ(static_cast<int64_t>((*got)[r].data.size()), n) << "output " << r;
        for (int64_t e = 0; e < n; ++e)
          ASSERT_EQ((*got)[r].data[e], (*expected)[r].data[p * n + e])
              << "piece " << p << " output " << r << " element " << e;
      }
    }
  }

  mlir::MLIRContext ctx;
  std::mt19937_64 gen{7};
};

// A transformer's bias + residual + layer norm: rows cut, vectors whole.
TEST_F(KernelPiecesTest, LayerNormRowsSplitAndVectorsStayWhole) {
  std::string ir = R"mlir(
func.func @forward(%x: tensor<64x32xf32>, %b: tensor<32xf32>, %r: tensor<8x8x32xf32>,
                   %g: tensor<32xf32>, %beta: tensor<32xf32>) -> (tensor<8x8x32xf32>, tensor<64x32xf32>) {
  %0 = colo.add %x, %b : tensor<64x32xf32>, tensor<32xf32>
  %1 = colo.reshape %0 : tensor<64x32xf32> -> tensor<8x8x32xf32>
  %2 = colo.add %1, %r : tensor<8x8x32xf32>, tensor<8x8x32xf32>
  %3 = colo.layer_norm %2 scale %g : tensor<32xf32> bias %beta : tensor<32xf32> {axis = 2 : i64, epsilon = 1.0e-05 : f64} : tensor<8x8x32xf32>
  %4 = colo.reshape %3 : tensor<8x8x32xf32> -> tensor<64x32xf32>
  return %2, %4 : tensor<8x8x32xf32>, tensor<64x32xf32>
}
)mlir";
  auto m = parse(ir);
  std::optional<colo::KernelPieces> pieces = split(*m);
  ASSERT_TRUE(pieces);
  EXPECT_EQ(pieces->pieces, 4);
  // Inputs x, b, r, g, beta, then the two outputs: a quarter of the rows.
  EXPECT_EQ(pieces->pieceBytes,
            (llvm::SmallVector<int64_t>{16 * 32 * 4, 0, 2 * 8 * 32 * 4, 0, 0, 2 * 8 * 32 * 4,
                                        16 * 32 * 4}));
  std::string text;
  llvm::raw_string_ostream os(text);
  forward(*m).getFunctionType().print(os);
  EXPECT_EQ(text, "(tensor<16x32xf32>, tensor<32xf32>, tensor<2x8x32xf32>, tensor<32xf32>, "
                  "tensor<32xf32>) -> (tensor<2x8x32xf32>, tensor<16x32xf32>)");
  expectPiecesMatch(ir, {random({64, 32}), random({32}), random({8, 8, 32}), random({32}),
                         random({32})},
                    4);
}

// Attention's masked softmax: the mask broadcasts over batch and heads.
TEST_F(KernelPiecesTest, SoftmaxWithBroadcastMask) {
  std::string ir = R"mlir(
func.func @forward(%s: tensor<4x2x8x8xf32>, %mask: tensor<8x8xf32>) -> tensor<4x2x8x8xf32> {
  %c = colo.constant dense<0.5> : tensor<f32>
  %0 = colo.mul %s, %c : tensor<4x2x8x8xf32>, tensor<f32>
  %1 = colo.add %0, %mask : tensor<4x2x8x8xf32>, tensor<8x8xf32>
  %2 = colo.softmax %1 axis = 3 : tensor<4x2x8x8xf32>
  return %2 : tensor<4x2x8x8xf32>
}
)mlir";
  expectPiecesMatch(ir, {random({4, 2, 8, 8}), random({8, 8})}, 2);
}

// A sum over the rows, dropout's position-counted random numbers and a
// transpose that cuts an input across its rows do not split.
TEST_F(KernelPiecesTest, RowSumsDropoutAndStridedCutsStayWhole) {
  const char *rowSum = R"mlir(
func.func @forward(%x: tensor<64x32xf32>) -> tensor<32xf32> {
  %0 = colo.reduce_sum %x dims = [0] : tensor<64x32xf32>
  return %0 : tensor<32xf32>
}
)mlir";
  const char *dropout = R"mlir(
func.func @forward(%x: tensor<64x32xf32>, %seed: tensor<i64>) -> tensor<64x32xf32> {
  %0 = colo.dropout %x key %seed ratio = 5.0e-01 : tensor<64x32xf32>
  return %0 : tensor<64x32xf32>
}
)mlir";
  const char *transpose = R"mlir(
func.func @forward(%x: tensor<32x64xf32>) -> tensor<64x32xf32> {
  %0 = colo.transpose %x permutation = [1, 0] : tensor<32x64xf32>
  return %0 : tensor<64x32xf32>
}
)mlir";
  for (const char *ir : {rowSum, dropout, transpose}) {
    auto m = parse(ir);
    ASSERT_TRUE(m) << ir;
    std::string before;
    llvm::raw_string_ostream(before) << *m;
    EXPECT_FALSE(split(*m)) << ir;
    std::string after;
    llvm::raw_string_ostream(after) << *m;
    EXPECT_EQ(before, after) << "a kernel that does not split is left as it was";
  }
}

// Below the size threshold a kernel stays whole; a piece count that does
// not divide the rows is skipped for the next candidate.
TEST_F(KernelPiecesTest, ThresholdAndCandidates) {
  std::string ir = R"mlir(
func.func @forward(%x: tensor<12x32xf32>) -> tensor<12x32xf32> {
  %0 = colo.exp %x : tensor<12x32xf32>
  return %0 : tensor<12x32xf32>
}
)mlir";
  auto m = parse(ir);
  EXPECT_FALSE(colo::splitKernelIntoPieces(forward(*m), {4}, 12 * 32 + 1));
  std::optional<colo::KernelPieces> pieces =
      colo::splitKernelIntoPieces(forward(*m), {8, 4, 2}, 12 * 32);
  ASSERT_TRUE(pieces);
  EXPECT_EQ(pieces->pieces, 4);
}

} // namespace
