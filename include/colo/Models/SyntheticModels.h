//===- SyntheticModels.h - Transformers built as colo IR without weights --===//
//
// Builds GPT-2/GPT-3, Llama, BERT and ViT models directly as colo IR: every
// parameter is a `colo.global` whose initial value is a `#colo.init` spec, so
// no tensor data is stored and a 175B-parameter model can be planned on a
// laptop. Global names are the Hugging Face state_dict names and every op has
// a `NameLoc` "<module path>/<op>", so the model summary finds the layers as
// repeated blocks (`transformer.h.{0..95}`, `model.layers.{0..31}`, ...).
//
//===----------------------------------------------------------------------===//
#ifndef COLO_MODELS_SYNTHETICMODELS_H
#define COLO_MODELS_SYNTHETICMODELS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace colo {

/// The shape of a synthetic transformer. Families and their architectures:
/// - "gpt": GPT-2 (GPT2LMHeadModel): learned position embeddings, pre-LN with
///   bias, fused qkv `c_attn` stored [h, 3h] like HF's Conv1D, causal
///   attention, tanh-GELU MLP, final `ln_f`, `lm_head` tied to `wte` unless
///   `tiedEmbeddings` is false.
/// - "llama": LlamaForCausalLM: RMSNorm, q/k/v/o projections without bias,
///   grouped-query attention (`kvHeads`), rotary embeddings, SwiGLU MLP,
///   final norm and `lm_head` (tied to `embed_tokens` when `tiedEmbeddings`;
///   the Llama 2 presets untie it).
/// - "bert": BertForMaskedLM: post-LN, word + position + token-type
///   embeddings, bidirectional attention, GELU, MLM head (transform, decoder
///   tied to the word embeddings unless `tiedEmbeddings` is false).
/// - "vit": ViTForImageClassification: conv2d patch embedding, class token,
///   position embeddings, pre-LN blocks, classifier on the class token.
struct TransformerConfig {
  std::string family; // "gpt", "llama", "bert", "vit"
  /// kvHeads 0 means `heads` (no grouping); ffn 0 means 4 * hidden for
  /// gpt/bert/vit and Llama's 8/3 * hidden rounded up to a multiple of 256.
  int64_t layers = 0, hidden = 0, heads = 0, kvHeads = 0, ffn = 0;
  /// Token models: ids are i64 [batch, seq]; the position table has `seq`
  /// rows. ViT derives its sequence (patches + class token) from the image:
  /// `seq` is 0 or must equal it.
  int64_t vocab = 0, seq = 0, batch = 1;
  int64_t imageSize = 224, patchSize = 14, channels = 3, numClasses = 1000; // vit
  bool tiedEmbeddings = true; // gpt/llama/bert: the output projection shares the token embedding
  std::string dtype = "bf16"; // element type of activations and weights: bf16 | f16 | f32
  /// Training-mode dropout probability on the embeddings, the attention
  /// probabilities (`colo.attention`'s `dropout`) and the residual branches;
  /// 0 builds no dropout ops. The presets use the Hugging Face defaults
  /// (0.1 for GPT-2/3 and BERT, 0 for Llama and ViT).
  double dropout = 0.0;
};

/// Names accepted by `modelPreset`, in a stable order.
std::vector<std::string> modelPresetNames();

/// The published shape of a named model (gpt2-small ... gpt3-175b,
/// llama2-7b, llama2-70b, bert-large, vit-huge); an error names the known
/// presets.
llvm::Expected<TransformerConfig> modelPreset(llvm::StringRef name);

/// Checks the config (known family and dtype, positive sizes, heads divide
/// hidden, kvHeads divide heads, patches tile the image, ...) and returns an
/// error whose message names the offending values.
llvm::Error validate(const TransformerConfig &config);

/// Builds the model as a module with one `colo.global` per parameter and a
/// `func.func @forward`. An invalid config is reported as an error diagnostic
/// on `ctx` and gives a null module.
mlir::OwningOpRef<mlir::ModuleOp> buildSyntheticModel(const TransformerConfig &config,
                                                      mlir::MLIRContext &ctx);

} // namespace colo

#endif // COLO_MODELS_SYNTHETICMODELS_H
