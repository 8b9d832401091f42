// Unit tests of the synthetic transformers (lib/Models). Every count is
// checked against a closed form worked out from the Hugging Face module that
// the family copies, and the presets against the parameter counts published
// for the real checkpoints, never against colo's own numbers.
//
// FLOPs: the model summary counts `colo.attention` as matmul-class, and the
// attention op's own cost is 2 FLOPs per multiply-add of q k^T and p v plus 5
// per score for scaling and softmax (7 when attention dropout is on). The
// expectations below therefore add l * heads * s^2 * (5 or 7) to the
// textbook matmul FLOPs and compare exactly.
#include "colo/Models/SyntheticModels.h"

#include "colo/Analysis/ModelSummary.h"
#include "colo/Dialect/Colo/ColoOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

using namespace colo;

namespace {

const RepeatedBlocks *findBlocks(const ModelSummary &s, llvm::StringRef prefix) {
  for (const RepeatedBlocks &b : s.blocks)
    if (b.prefix == prefix)
      return &b;
  return nullptr;
}

/// FLOPs per score the attention op adds to its two products.
int64_t perScore(const TransformerConfig &c) { return c.dropout > 0 ? 7 : 5; }

mlir::RankedTensorType globalType(mlir::ModuleOp m, llvm::StringRef name) {
  auto g = m.lookupSymbol<GlobalOp>(name);
  return g ? g.getTensorType() : mlir::RankedTensorType();
}

std::string shapeOf(mlir::RankedTensorType t) {
  if (!t)
    return "<missing>";
  std::string s;
  llvm::raw_string_ostream os(s);
  for (int64_t d : t.getShape())
    os << d << "x";
  os << t.getElementType();
  return s;
}

/// Checks what every synthetic model promises: it verifies (the builder ran
/// the verifier), no global stores data, every op is named
/// "<module path>/<op>" with a module path, and every float tensor has the
/// requested element type.
void checkStructure(mlir::ModuleOp m, const TransformerConfig &c) {
  mlir::Type et = c.dtype == "f32"   ? mlir::Type(mlir::Float32Type::get(m.getContext()))
                  : c.dtype == "f16" ? mlir::Type(mlir::Float16Type::get(m.getContext()))
                                     : mlir::Type(mlir::BFloat16Type::get(m.getContext()));
  for (auto g : m.getOps<GlobalOp>()) {
    EXPECT_TRUE(mlir::isa_and_nonnull<InitializerAttr>(g.getInitialValueAttr()))
        << g.getSymName().str() << " stores data";
    EXPECT_EQ(g.getTensorType().getElementType(), et) << g.getSymName().str();
  }
  auto func = m.lookupSymbol<mlir::func::FuncOp>("forward");
  ASSERT_TRUE(func);
  func.walk([&](mlir::Operation *op) {
    if (mlir::isa<mlir::func::FuncOp>(op))
      return;
    auto name = mlir::dyn_cast<mlir::NameLoc>(op->getLoc());
    ASSERT_TRUE(name) << op->getName().getStringRef().str() << " has no NameLoc";
    llvm::StringRef path = name.getName().strref().rsplit('/').first;
    EXPECT_NE(path, name.getName().strref()) << "no '/' in " << path.str();
    EXPECT_FALSE(modulePath(op->getLoc()).empty()) << name.getName().strref().str();
    for (mlir::Type t : op->getResultTypes()) {
      auto rt = mlir::dyn_cast<mlir::RankedTensorType>(t);
      if (rt && mlir::isa<mlir::FloatType>(rt.getElementType())) {
        EXPECT_EQ(rt.getElementType(), et) << op->getName().getStringRef().str();
      }
    }
  });
}

//===----------------------------------------------------------------------===//
// GPT-2
//===----------------------------------------------------------------------===//

TransformerConfig smallGpt() {
  TransformerConfig c;
  c.family = "gpt";
  c.layers = 3;
  c.hidden = 64;
  c.heads = 4;
  c.vocab = 100;
  c.seq = 16;
  c.batch = 2;
  c.dropout = 0.1;
  c.dtype = "f32";
  return c;
}

TEST(SyntheticModels, GptMatchesClosedForm) {
  mlir::MLIRContext ctx;
  TransformerConfig c = smallGpt();
  auto m = buildSyntheticModel(c, ctx);
  ASSERT_TRUE(m);
  checkStructure(*m, c);
  ModelSummary s = summarize(*m);
  int64_t l = c.layers, h = c.hidden, V = c.vocab, S = c.seq, a = c.heads;

  // Per layer ln_1 2h, c_attn 3h^2 + 3h, c_proj h^2 + h, ln_2 2h, c_fc 4h^2
  // + 4h, mlp.c_proj 4h^2 + h = 12h^2 + 13h; wte V h, wpe s h, ln_f 2h,
  // lm_head tied to wte.
  EXPECT_EQ(s.parameters, 12 * l * h * h + 13 * l * h + (V + S) * h + 2 * h);
  EXPECT_EQ(s.bufferTensors, 0);

  // Per layer: c_attn 6 s h^2, c_proj 2 s h^2, c_fc 8 s h^2, mlp.c_proj
  // 8 s h^2 (24 s h^2), q k^T and p v 4 s^2 h; logits 2 s h V.
  int64_t perSample = l * (24 * S * h * h + 4 * S * S * h) + 2 * S * h * V +
                      l * perScore(c) * a * S * S;
  EXPECT_EQ(s.matmulFlops, c.batch * perSample);

  const RepeatedBlocks *blocks = findBlocks(s, "transformer.h");
  ASSERT_TRUE(blocks);
  EXPECT_EQ(blocks->first, 0);
  EXPECT_EQ(blocks->count, l);
  EXPECT_EQ(blocks->parametersPerBlock, 12 * h * h + 13 * h);
  EXPECT_EQ(s.blocks.size(), 1u);

  EXPECT_EQ(s.opCounts["attention"], l);
  EXPECT_EQ(s.opCounts["layer_norm"], 2 * l + 1);
  EXPECT_EQ(s.opCounts["embedding"], 2);
  EXPECT_EQ(s.opCounts["gelu"], l);
  EXPECT_EQ(s.opCounts["dropout"], 1 + 2 * l); // embeddings, attn and mlp residuals
  EXPECT_EQ(s.opCounts["matmul"], 4 * l + 1);

  EXPECT_EQ(shapeOf(globalType(*m, "transformer.wte.weight")), "100x64xf32");
  EXPECT_EQ(shapeOf(globalType(*m, "transformer.wpe.weight")), "16x64xf32");
  EXPECT_EQ(shapeOf(globalType(*m, "transformer.h.2.attn.c_attn.weight")), "64x192xf32");
  EXPECT_EQ(shapeOf(globalType(*m, "transformer.h.0.mlp.c_proj.weight")), "256x64xf32");
  EXPECT_EQ(shapeOf(globalType(*m, "transformer.ln_f.bias")), "64xf32");
  EXPECT_FALSE(globalType(*m, "lm_head.weight"));
  ASSERT_EQ(s.inputs.size(), 1u);
  EXPECT_EQ(s.inputs[0], "2x16xi64");
  ASSERT_EQ(s.outputs.size(), 1u);
  EXPECT_EQ(s.outputs[0], "2x16x100xf32");

  m->walk([&](AttentionOp op) {
    EXPECT_TRUE(op.getCausal());
    EXPECT_DOUBLE_EQ(op.getDropout().convertToDouble(), 0.1);
    EXPECT_DOUBLE_EQ(op.getScale().convertToDouble(), 0.25); // 1/sqrt(16)
  });
}

TEST(SyntheticModels, GptUntiedAddsLmHead) {
  mlir::MLIRContext ctx;
  TransformerConfig c = smallGpt();
  c.tiedEmbeddings = false;
  c.dropout = 0;
  auto m = buildSyntheticModel(c, ctx);
  ASSERT_TRUE(m);
  checkStructure(*m, c);
  ModelSummary s = summarize(*m);
  int64_t l = c.layers, h = c.hidden, V = c.vocab, S = c.seq;
  EXPECT_EQ(s.parameters, 12 * l * h * h + 13 * l * h + (2 * V + S) * h + 2 * h);
  EXPECT_EQ(shapeOf(globalType(*m, "lm_head.weight")), "100x64xf32");
  EXPECT_EQ(s.opCounts.count("dropout"), 0u);
  EXPECT_EQ(s.matmulFlops, c.batch * (l * (24 * S * h * h + 4 * S * S * h) +
                                      2 * S * h * V + l * 5 * c.heads * S * S));
}

TEST(SyntheticModels, DtypeSetsEveryFloatType) {
  for (const char *dtype : {"bf16", "f16", "f32"}) {
    mlir::MLIRContext ctx;
    TransformerConfig c = smallGpt();
    c.dtype = dtype;
    auto m = buildSyntheticModel(c, ctx);
    ASSERT_TRUE(m) << dtype;
    checkStructure(*m, c);
  }
}

//===----------------------------------------------------------------------===//
// Llama
//===----------------------------------------------------------------------===//

TEST(SyntheticModels, LlamaMatchesClosedForm) {
  mlir::MLIRContext ctx;
  TransformerConfig c;
  c.family = "llama";
  c.layers = 2;
  c.hidden = 64;
  c.heads = 8;
  c.kvHeads = 2;
  c.vocab = 128;
  c.seq = 16;
  c.batch = 2;
  c.tiedEmbeddings = false;
  auto m = buildSyntheticModel(c, ctx);
  ASSERT_TRUE(m);
  checkStructure(*m, c);
  ModelSummary s = summarize(*m);
  int64_t l = c.layers, h = c.hidden, V = c.vocab, S = c.seq, a = c.heads;
  int64_t d = h / a, kvd = c.kvHeads * d;
  // Llama's default width: int(8h/3) = 170, rounded up to a multiple of 256.
  int64_t f = 256;
  EXPECT_EQ(shapeOf(globalType(*m, "model.layers.1.mlp.gate_proj.weight")), "256x64xbf16");

  // Per layer: input_layernorm h, q_proj and o_proj h^2 each, k_proj and
  // v_proj h * kv * d each, post_attention_layernorm h, gate/up/down h f
  // each: 2h^2 + 2h kv d + 3hf + 2h. embed_tokens V h, norm h, untied
  // lm_head V h. No biases.
  EXPECT_EQ(s.parameters,
            l * (2 * h * h + 2 * h * kvd + 3 * h * f + 2 * h) + 2 * V * h + h);
  // Rotary cos/sin buffers [s, d], not parameters.
  EXPECT_EQ(s.bufferTensors, 2);
  EXPECT_EQ(s.bufferElements, 2 * S * d);

  // Per layer: q and o 2 s h^2 each, k and v 2 s h kv d each, gate/up/down
  // 2 s h f each, q k^T and p v 4 s^2 h; logits 2 s h V.
  int64_t perSample =
      l * (4 * S * h * h + 4 * S * h * kvd + 6 * S * h * f + 4 * S * S * h +
           perScore(c) * a * S * S) +
      2 * S * h * V;
  EXPECT_EQ(s.matmulFlops, c.batch * perSample);

  const RepeatedBlocks *blocks = findBlocks(s, "model.layers");
  ASSERT_TRUE(blocks);
  EXPECT_EQ(blocks->count, l);
  EXPECT_EQ(blocks->parametersPerBlock, 2 * h * h + 2 * h * kvd + 3 * h * f + 2 * h);

  EXPECT_EQ(shapeOf(globalType(*m, "model.layers.0.self_attn.k_proj.weight")), "16x64xbf16");
  EXPECT_EQ(shapeOf(globalType(*m, "model.layers.0.self_attn.q_proj.weight")), "64x64xbf16");
  EXPECT_EQ(shapeOf(globalType(*m, "lm_head.weight")), "128x64xbf16");
  EXPECT_FALSE(globalType(*m, "model.layers.0.self_attn.q_proj.bias"));
  EXPECT_EQ(s.opCounts["rms_norm"], 2 * l + 1);
  EXPECT_EQ(s.opCounts["silu"], l);
  m->walk([&](AttentionOp op) {
    EXPECT_TRUE(op.getCausal());
    EXPECT_EQ(shapeOf(mlir::cast<mlir::RankedTensorType>(op.getKey().getType())),
              "2x2x16x8xbf16"); // grouped: 2 kv heads for 8 query heads
  });
}

//===----------------------------------------------------------------------===//
// BERT
//===----------------------------------------------------------------------===//

TEST(SyntheticModels, BertMatchesClosedForm) {
  mlir::MLIRContext ctx;
  TransformerConfig c;
  c.family = "bert";
  c.layers = 2;
  c.hidden = 64;
  c.heads = 4;
  c.vocab = 100;
  c.seq = 16;
  c.batch = 2;
  c.dropout = 0.1;
  auto m = buildSyntheticModel(c, ctx);
  ASSERT_TRUE(m);
  checkStructure(*m, c);
  ModelSummary s = summarize(*m);
  int64_t l = c.layers, h = c.hidden, V = c.vocab, S = c.seq, a = c.heads;

  // Embeddings: word V h, position s h, token type 2h, LayerNorm 2h. Per
  // layer: query/key/value/output dense 4(h^2 + h), intermediate 4h^2 + 4h,
  // output 4h^2 + h, two LayerNorms 4h = 12h^2 + 13h. MLM head: transform
  // dense h^2 + h, LayerNorm 2h, cls.predictions.bias V; decoder weight tied
  // to the word embeddings.
  EXPECT_EQ(s.parameters, l * (12 * h * h + 13 * h) + (V + S + 2) * h + 2 * h +
                              (h * h + h) + 2 * h + V);

  // Per layer as GPT's; the head adds the transform 2 s h^2 and the decoder
  // 2 s h V (HF's BertForMaskedLM predicts every position).
  int64_t perSample = l * (24 * S * h * h + 4 * S * S * h + perScore(c) * a * S * S) +
                      2 * S * h * h + 2 * S * h * V;
  EXPECT_EQ(s.matmulFlops, c.batch * perSample);

  const RepeatedBlocks *blocks = findBlocks(s, "bert.encoder.layer");
  ASSERT_TRUE(blocks);
  EXPECT_EQ(blocks->count, l);
  EXPECT_EQ(blocks->parametersPerBlock, 12 * h * h + 13 * h);
  EXPECT_EQ(s.opCounts["layer_norm"], 2 * l + 2);
  EXPECT_EQ(s.opCounts["embedding"], 3);
  EXPECT_EQ(shapeOf(globalType(*m, "bert.encoder.layer.1.attention.self.query.weight")),
            "64x64xbf16");
  EXPECT_EQ(shapeOf(globalType(*m, "bert.encoder.layer.1.output.LayerNorm.weight")),
            "64xbf16");
  EXPECT_EQ(shapeOf(globalType(*m, "cls.predictions.bias")), "100xbf16");
  EXPECT_FALSE(globalType(*m, "cls.predictions.decoder.weight"));
  EXPECT_FALSE(globalType(*m, "bert.pooler.dense.weight"));
  m->walk([&](AttentionOp op) { EXPECT_FALSE(op.getCausal()); });
}

//===----------------------------------------------------------------------===//
// ViT
//===----------------------------------------------------------------------===//

TEST(SyntheticModels, VitMatchesClosedForm) {
  mlir::MLIRContext ctx;
  TransformerConfig c;
  c.family = "vit";
  c.layers = 2;
  c.hidden = 64;
  c.heads = 4;
  c.imageSize = 32;
  c.patchSize = 8;
  c.channels = 3;
  c.numClasses = 10;
  c.batch = 2;
  c.dtype = "f32";
  auto m = buildSyntheticModel(c, ctx);
  ASSERT_TRUE(m);
  checkStructure(*m, c);
  ModelSummary s = summarize(*m);
  int64_t l = c.layers, h = c.hidden, a = c.heads, C = c.numClasses;
  int64_t p = c.patchSize, ch = c.channels, N = 16, S = N + 1;

  // Embeddings: cls_token h, position_embeddings (N + 1) h, patch
  // projection h c p^2 + h. Layers as BERT's, 12h^2 + 13h. Final layernorm
  // 2h, classifier h C + C.
  EXPECT_EQ(s.parameters, h + S * h + (h * ch * p * p + h) +
                              l * (12 * h * h + 13 * h) + 2 * h + (h * C + C));

  // The patch convolution 2 N h c p^2 plus its bias N h (the conv cost
  // counts the bias add), layers on N + 1 tokens, classifier 2 h C.
  int64_t perSample = 2 * N * h * ch * p * p + N * h +
                      l * (24 * S * h * h + 4 * S * S * h + perScore(c) * a * S * S) +
                      2 * h * C;
  EXPECT_EQ(s.matmulFlops, c.batch * perSample);

  const RepeatedBlocks *blocks = findBlocks(s, "vit.encoder.layer");
  ASSERT_TRUE(blocks);
  EXPECT_EQ(blocks->count, l);
  EXPECT_EQ(blocks->parametersPerBlock, 12 * h * h + 13 * h);
  ASSERT_EQ(s.inputs.size(), 1u);
  EXPECT_EQ(s.inputs[0], "2x3x32x32xf32");
  ASSERT_EQ(s.outputs.size(), 1u);
  EXPECT_EQ(s.outputs[0], "2x10xf32");
  EXPECT_EQ(shapeOf(globalType(*m, "vit.embeddings.patch_embeddings.projection.weight")),
            "64x3x8x8xf32");
  EXPECT_EQ(shapeOf(globalType(*m, "vit.embeddings.cls_token")), "1x1x64xf32");
  EXPECT_EQ(shapeOf(globalType(*m, "vit.embeddings.position_embeddings")), "1x17x64xf32");
  EXPECT_EQ(shapeOf(globalType(*m, "classifier.weight")), "10x64xf32");
  EXPECT_EQ(s.opCounts["conv2d"], 1);
}

//===----------------------------------------------------------------------===//
// Presets
//===----------------------------------------------------------------------===//

int64_t gptParameters(int64_t l, int64_t h, int64_t V, int64_t S) {
  return 12 * l * h * h + 13 * l * h + (V + S) * h + 2 * h;
}

TEST(SyntheticModels, PresetsMatchPublishedParameterCounts) {
  // Hugging Face num_parameters() of the checkpoints (GPT-2 family,
  // Llama-2-7b-hf, Llama-2-70b-hf); BERT-large is BertModel's published
  // 335,141,888 without the pooler (h^2 + h) plus the MLM head (h^2 + 3h + V);
  // ViT-H/14 is the paper's 632M, exactly for a 1000-class head.
  struct Expected {
    const char *name;
    int64_t parameters;
    const char *blocks;
    int64_t layers;
  };
  const Expected expected[] = {
      {"gpt2-small", 124439808, "transformer.h", 12},
      {"gpt2-medium", 354823168, "transformer.h", 24},
      {"gpt2-large", 774030080, "transformer.h", 36},
      {"gpt2-xl", 1557611200, "transformer.h", 48},
      {"gpt3-175b", gptParameters(96, 12288, 50257, 2048), "transformer.h", 96},
      {"llama2-7b", 6738415616, "model.layers", 32},
      {"llama2-70b", 68976648192, "model.layers", 80},
      {"bert-large", 335141888 - (1024 * 1024 + 1024) + (1024 * 1024 + 3 * 1024 + 30522),
       "bert.encoder.layer", 24},
      {"vit-huge", 632045800, "vit.encoder.layer", 32},
  };
  std::vector<std::string> names = modelPresetNames();
  ASSERT_EQ(names.size(), std::size(expected));
  for (const Expected &e : expected) {
    SCOPED_TRACE(e.name);
    EXPECT_NE(std::find(names.begin(), names.end(), e.name), names.end());
    llvm::Expected<TransformerConfig> c = modelPreset(e.name);
    ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
    EXPECT_FALSE(static_cast<bool>(validate(*c)));
    mlir::MLIRContext ctx;
    auto m = buildSyntheticModel(*c, ctx);
    ASSERT_TRUE(m);
    ModelSummary s = summarize(*m);
    EXPECT_EQ(s.parameters, e.parameters);
    const RepeatedBlocks *blocks = findBlocks(s, e.blocks);
    ASSERT_TRUE(blocks);
    EXPECT_EQ(blocks->count, e.layers);
  }
  EXPECT_EQ(gptParameters(12, 768, 50257, 1024), 124439808); // the formula itself
}

TEST(SyntheticModels, Gpt3BuildsQuicklyWithoutData) {
  llvm::Expected<TransformerConfig> c = modelPreset("gpt3-175b");
  ASSERT_TRUE(static_cast<bool>(c)) << llvm::toString(c.takeError());
  mlir::MLIRContext ctx;
  auto start = std::chrono::steady_clock::now();
  auto m = buildSyntheticModel(*c, ctx);
  ASSERT_TRUE(m);
  ModelSummary s = summarize(*m);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);

  // REFERENCES.md's 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)) leaves out
  // the final LayerNorm's 2h: 174,604,234,752 + 24,576 = 174,604,259,328.
  const int64_t l = 96, h = 12288, V = 50257, S = 2048;
  EXPECT_EQ(s.parameters, 174604259328);
  EXPECT_NEAR(static_cast<double>(s.parameters - 2 * h),
              12.0 * l * h * h * (1 + 13.0 / (12 * h) + double(V + S) / (12 * l * h)),
              1.0);
  EXPECT_EQ(s.batch, 1);
  EXPECT_EQ(s.matmulFlops, l * (24 * S * h * h + 4 * S * S * h) + 2 * S * h * V +
                               l * perScore(*c) * c->heads * S * S);
  const RepeatedBlocks *blocks = findBlocks(s, "transformer.h");
  ASSERT_TRUE(blocks);
  EXPECT_EQ(blocks->count, 96);
  checkStructure(*m, *c);

  // No data anywhere: the only dense values are the position ids (s i64s),
  // and the whole module prints small.
  int64_t constantElements = 0;
  m->walk([&](ConstantOp op) {
    constantElements += mlir::cast<mlir::ElementsAttr>(op.getValue()).getNumElements();
  });
  EXPECT_LE(constantElements, S);
  std::string text;
  llvm::raw_string_ostream os(text);
  m->print(os);
  EXPECT_LT(text.size(), 2u << 20);
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

std::string errorOf(const TransformerConfig &c) {
  llvm::Error e = validate(c);
  return e ? llvm::toString(std::move(e)) : std::string("<valid>");
}

TEST(SyntheticModels, ValidateRejectsBadConfigs) {
  auto expectError = [](TransformerConfig c, const char *substring) {
    std::string message = errorOf(c);
    EXPECT_NE(message.find(substring), std::string::npos)
        << "expected '" << substring << "' in: " << message;
  };
  TransformerConfig gpt = smallGpt();
  EXPECT_EQ(errorOf(gpt), "<valid>");

  TransformerConfig c = gpt;
  c.family = "t5";
  expectError(c, "unknown model family 't5': expected gpt, llama, bert or vit");
  c = gpt;
  c.dtype = "f64";
  expectError(c, "unknown dtype 'f64': expected bf16, f16 or f32");
  c = gpt;
  c.hidden = 100;
  c.heads = 3;
  expectError(c, "hidden size 100 is not divisible by 3 heads");
  c = gpt;
  c.layers = 0;
  expectError(c, "layers must be positive, got 0");
  c = gpt;
  c.vocab = 0;
  expectError(c, "vocab size must be positive, got 0");
  c = gpt;
  c.seq = -4;
  expectError(c, "sequence length must be positive, got -4");
  c = gpt;
  c.kvHeads = 2;
  expectError(c, "only built for llama");
  c = gpt;
  c.dropout = 1.0;
  expectError(c, "dropout must be in [0, 1), got 1");
  c = gpt;
  c.hidden = 1 << 20;
  c.heads = 1 << 10;
  c.seq = 1 << 20;
  expectError(c, "model too large for 64-bit cost counters");

  TransformerConfig llama = gpt;
  llama.family = "llama";
  llama.heads = 8;
  llama.kvHeads = 3;
  expectError(llama, "8 heads are not divisible by 3 kv heads");
  llama.kvHeads = 2;
  EXPECT_EQ(errorOf(llama), "<valid>");
  llama.hidden = 24; // head size 3
  expectError(llama, "head size 3 (hidden 24 / 8 heads) must be even");

  TransformerConfig vit;
  vit.family = "vit";
  vit.layers = 1;
  vit.hidden = 64;
  vit.heads = 4;
  vit.imageSize = 30;
  vit.patchSize = 8;
  expectError(vit, "image size 30 is not divisible by patch size 8");
  vit.imageSize = 32;
  EXPECT_EQ(errorOf(vit), "<valid>");
  vit.seq = 17; // 16 patches + class token
  EXPECT_EQ(errorOf(vit), "<valid>");
  vit.seq = 16;
  expectError(vit, "sequence length 16 does not match the 16 patches");

  llvm::Expected<TransformerConfig> unknown = modelPreset("gpt5");
  ASSERT_FALSE(static_cast<bool>(unknown));
  std::string message = llvm::toString(unknown.takeError());
  EXPECT_NE(message.find("unknown model preset 'gpt5'"), std::string::npos) << message;
  EXPECT_NE(message.find("gpt2-small"), std::string::npos) << message;
}

TEST(SyntheticModels, BuildReportsInvalidConfig) {
  mlir::MLIRContext ctx;
  std::string diagnostic;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    diagnostic = d.str();
    return mlir::success();
  });
  TransformerConfig c = smallGpt();
  c.heads = 5;
  EXPECT_FALSE(buildSyntheticModel(c, ctx));
  EXPECT_EQ(diagnostic, "invalid model config: hidden size 64 is not divisible by 5 heads");
}

} // namespace
