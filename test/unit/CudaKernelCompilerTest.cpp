// The CUDA kernel compiler without a GPU: launch geometry of the mapped
// loop nests, and every PTX it emits for the suite's transformer families
// (GPT, Llama; one rank and tensor-parallel) accepted by the CUDA toolkit's
// ptxas for sm_80 and sm_90 (skipped where no toolkit is installed).
#include "colo/Codegen/CudaKernelCompiler.h"
#include "colo/Compiler/Compiler.h"
#include "colo/Dialect/Colo/ColoDialect.h"
#include "colo/Models/SyntheticModels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include "llvm/ADT/StringExtras.h"

#include <gtest/gtest.h>

#include <cstring>

#include <cstdlib>

using namespace mlir;

namespace {

/// The CUDA toolkit's ptxas: $CUDA_HOME/bin, /usr/local/cuda/bin, then PATH.
std::string findPtxas() {
  for (const char *root : {static_cast<const char *>(std::getenv("CUDA_HOME")),
                           "/usr/local/cuda"}) {
    if (!root)
      continue;
    SmallString<128> path(root);
    llvm::sys::path::append(path, "bin", "ptxas");
    if (llvm::sys::fs::can_execute(path))
      return path.str().str();
  }
  llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName("ptxas");
  return found ? *found : "";
}

/// ptxas's messages for `ptx` on `chip`, empty when it accepts it.
std::string ptxasErrors(const std::string &ptxas, StringRef ptx, StringRef chip) {
  SmallString<128> in, out, log;
  llvm::sys::fs::createTemporaryFile("colo-kernel", "ptx", in);
  llvm::sys::fs::createTemporaryFile("colo-kernel", "cubin", out);
  llvm::sys::fs::createTemporaryFile("colo-ptxas", "log", log);
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(in, ec);
    os << ptx;
  }
  std::string arch = ("-arch=" + chip).str();
  SmallVector<StringRef> args = {ptxas, arch, in, "-o", out};
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log), StringRef(log)};
  int rc = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects);
  std::string messages;
  if (rc != 0) {
    auto buf = llvm::MemoryBuffer::getFile(log);
    messages = "exit " + std::to_string(rc) + ": " + (buf ? (*buf)->getBuffer().str() : "");
  }
  for (StringRef f : {StringRef(in), StringRef(out), StringRef(log)})
    llvm::sys::fs::remove(f);
  return messages;
}

TEST(CudaKernels, LaunchGeometryAndPtxPerChip) {
  MLIRContext ctx;
  ctx.loadDialect<colo::ColoDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(R"mlir(
    func.func @gelu(%x: tensor<1000xf32>) -> tensor<1000xf32> {
      %y = colo.tanh %x : tensor<1000xf32>
      return %y : tensor<1000xf32>
    }
    func.func @row_sums(%x: tensor<6x300xf32>) -> tensor<6xf32> {
      %s = colo.reduce_sum %x dims = [1] : tensor<6x300xf32>
      return %s : tensor<6xf32>
    }
    func.func @short_sums(%x: tensor<6x20xf32>) -> tensor<6xf32> {
      %s = colo.reduce_sum %x dims = [1] : tensor<6x20xf32>
      return %s : tensor<6xf32>
    }
  )mlir", &ctx);
  ASSERT_TRUE(module);
  FailureOr<colo::CudaKernels> cuda = colo::compileCudaKernels(*module);
  ASSERT_TRUE(succeeded(cuda));
  ASSERT_EQ(cuda->kernels.size(), 3u);
  // 1000 points: 4 blocks of 256 threads.
  EXPECT_EQ(cuda->kernels[0].name, "gelu");
  ASSERT_EQ(cuda->kernels[0].launches.size(), 1u);
  EXPECT_EQ(cuda->kernels[0].launches[0].grid, 4);
  EXPECT_EQ(cuda->kernels[0].launches[0].block, 256);
  // The accumulators' fill, then the sums: 300 elements a row are shared by
  // a block of 256 threads per row; 20 are summed by one thread per row.
  EXPECT_EQ(cuda->kernels[1].name, "row_sums");
  ASSERT_FALSE(cuda->kernels[1].launches.empty());
  EXPECT_EQ(cuda->kernels[1].launches.back().grid, 6);
  EXPECT_EQ(cuda->kernels[1].launches.back().block, 256);
  EXPECT_EQ(cuda->kernels[2].name, "short_sums");
  ASSERT_FALSE(cuda->kernels[2].launches.empty());
  EXPECT_EQ(cuda->kernels[2].launches.back().grid, 1);
  EXPECT_EQ(cuda->kernels[2].launches.back().block, 6);
  for (const colo::CudaModule &m : cuda->modules) {
    ASSERT_EQ(m.ptx.size(), 2u) << m.name;
    EXPECT_EQ(m.ptx[0].first, "sm_80");
    EXPECT_NE(m.ptx[0].second.find(".target sm_80"), std::string::npos);
    EXPECT_EQ(m.ptx[1].first, "sm_90");
    EXPECT_NE(m.ptx[1].second.find(".target sm_90"), std::string::npos);
  }
}

TEST(CudaKernels, LargeConstantsAreUploadedNotInlined) {
  // A mask of 128 x 128 floats (64 KiB, i % 7 each): a launch argument whose
  // bytes kernels.cuda.pb carries once; a 4-element table stays in the PTX.
  std::string hex = "0x";
  for (int i = 0; i < 128 * 128; ++i) {
    float v = float(i % 7);
    const auto *b = reinterpret_cast<const unsigned char *>(&v);
    for (int j = 0; j < 4; ++j)
      hex += llvm::utohexstr(b[j] >> 4) + llvm::utohexstr(b[j] & 15);
  }
  MLIRContext ctx;
  ctx.loadDialect<colo::ColoDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(R"mlir(
    func.func @masked(%x: tensor<128x128xf32>) -> tensor<128x128xf32> {
      %m = colo.constant dense<")mlir" + hex + R"mlir("> : tensor<128x128xf32>
      %y = colo.add %x, %m : tensor<128x128xf32>, tensor<128x128xf32>
      return %y : tensor<128x128xf32>
    }
    func.func @scaled(%x: tensor<4xf32>) -> tensor<4xf32> {
      %t = colo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
      %y = colo.mul %x, %t : tensor<4xf32>, tensor<4xf32>
      return %y : tensor<4xf32>
    }
  )mlir",
                                                             &ctx);
  ASSERT_TRUE(module);
  FailureOr<colo::CudaKernels> cuda = colo::compileCudaKernels(*module);
  ASSERT_TRUE(succeeded(cuda));
  ASSERT_EQ(cuda->constants.size(), 1u);
  const std::string &bytes = cuda->constants[0].bytes;
  ASSERT_EQ(bytes.size(), 128u * 128u * 4u);
  float last;
  std::memcpy(&last, bytes.data() + bytes.size() - 4, 4);
  EXPECT_EQ(last, float((128 * 128 - 1) % 7));
  ASSERT_EQ(cuda->kernels.size(), 2u);
  int constantArgs = 0;
  for (const colo::CudaLaunch &l : cuda->kernels[0].launches)
    for (const colo::CudaArg &a : l.args)
      constantArgs += a.kind == colo::CudaArg::Constant;
  EXPECT_EQ(constantArgs, 1);
  for (const colo::CudaLaunch &l : cuda->kernels[1].launches)
    for (const colo::CudaArg &a : l.args)
      EXPECT_NE(a.kind, colo::CudaArg::Constant);
  for (const colo::CudaModule &m : cuda->modules)
    for (const auto &[chip, ptx] : m.ptx)
      EXPECT_LT(ptx.size(), 64u * 1024u) << m.name << " " << chip;
}

/// Every kernel of a tiny `family` training step under `plan`, through
/// the CUDA pipeline and ptxas.
void checkModelKernels(const char *family, const char *plan) {
  std::string ptxas = findPtxas();
  if (ptxas.empty())
    GTEST_SKIP() << "no CUDA toolkit (ptxas) here";
  MLIRContext ctx;
  colo::TransformerConfig config;
  config.family = family;
  config.layers = 2, config.hidden = 64, config.heads = 4, config.vocab = 128;
  config.seq = 16, config.batch = 4, config.dtype = "f32";
  OwningOpRef<ModuleOp> model = colo::buildSyntheticModel(config, ctx);
  ASSERT_TRUE(model);
  colo::CompileOptions options;
  std::string errors;
  llvm::raw_string_ostream es(errors);
  FailureOr<colo::TrainStepOptions> train =
      colo::parseTrainStepOptions("loss=lm,optimizer=adamw", es);
  ASSERT_TRUE(succeeded(train)) << errors;
  options.train = *train;
  options.plan = llvm::cantFail(colo::planner::parsePlan(plan));
  options.kernelPieces = 1; // a GPU runs a kernel whole
  FailureOr<colo::CompiledStep> step = colo::compileStepFootprint(*model, options);
  ASSERT_TRUE(succeeded(step));
  FailureOr<colo::CudaKernels> cuda = colo::compileCudaKernels(*step->kernels);
  ASSERT_TRUE(succeeded(cuda));
  EXPECT_GT(cuda->kernels.size(), 10u);
  int checked = 0;
  for (const colo::CudaModule &m : cuda->modules)
    for (const auto &[chip, ptx] : m.ptx) {
      EXPECT_EQ(ptxasErrors(ptxas, ptx, chip), "") << m.name << " on " << chip;
      ++checked;
    }
  EXPECT_EQ(checked, int(2 * cuda->modules.size()));
}

TEST(CudaKernels, GptStepPassesPtxas) { checkModelKernels("gpt", "dp=1"); }
TEST(CudaKernels, LlamaTensorParallelStepPassesPtxas) { checkModelKernels("llama", "tp=2"); }

} // namespace
