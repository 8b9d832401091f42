//===- SyntheticModels.cpp - Transformers built as colo IR without weights ===//
//
// Each family is written once, as the Hugging Face module that defines it:
// the module path of every op is the attribute path of the PyTorch submodule
// that runs it ("transformer.h.3.attn.c_attn"), and a parameter is the global
// "<module path>.<name>" with HF's shape (nn.Linear weights [out, in], read
// through a transpose as the importers do; GPT-2's Conv1D weights [in, out]).
//
//===----------------------------------------------------------------------===//
#include "colo/Models/SyntheticModels.h"

#include "colo/Dialect/Colo/ColoDialect.h"
#include "colo/Dialect/Colo/ColoOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <numeric>

using namespace mlir;

namespace colo {

namespace {

llvm::Error configError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

bool isTokenModel(const TransformerConfig &c) { return c.family != "vit"; }

int64_t kvHeadsOf(const TransformerConfig &c) { return c.kvHeads ? c.kvHeads : c.heads; }

/// Llama's default MLP width: int(2 * 4h / 3) rounded up to a multiple of 256
/// (4096 -> 11008).
int64_t ffnOf(const TransformerConfig &c) {
  if (c.ffn)
    return c.ffn;
  if (c.family == "llama") {
    int64_t f = 8 * c.hidden / 3;
    return (f + 255) / 256 * 256;
  }
  return 4 * c.hidden;
}

int64_t patchesOf(const TransformerConfig &c) {
  int64_t g = c.imageSize / c.patchSize;
  return g * g;
}

/// Tokens per sample the encoder sees: `seq`, or the patches plus the class
/// token for ViT.
int64_t seqOf(const TransformerConfig &c) {
  return isTokenModel(c) ? c.seq : patchesOf(c) + 1;
}

//===----------------------------------------------------------------------===//
// Builder
//===----------------------------------------------------------------------===//

class ModelBuilder {
public:
  ModelBuilder(const TransformerConfig &c, MLIRContext &ctx)
      : c(c), ctx(ctx), b(&ctx), globals(&ctx), h(c.hidden), heads(c.heads),
        kv(kvHeadsOf(c)), d(c.hidden / c.heads), f(ffnOf(c)), s(seqOf(c)),
        batch(c.batch) {
    et = llvm::StringSwitch<Type>(c.dtype)
             .Case("f16", b.getF16Type())
             .Case("f32", b.getF32Type())
             .Default(b.getBF16Type());
  }

  OwningOpRef<ModuleOp> build();

private:
  /// Sets the module path for the ops built while it lives.
  struct Scope {
    Scope(ModelBuilder &m, StringRef sub) : m(m), saved(m.path) { m.path = m.child(sub); }
    ~Scope() { m.path = saved; }
    ModelBuilder &m;
    std::string saved;
  };

  std::string child(StringRef name) const {
    return path.empty() ? name.str() : path + "." + name.str();
  }
  Location at(StringRef op) { return NameLoc::get(b.getStringAttr(path + "/" + op)); }
  RankedTensorType tensor(ArrayRef<int64_t> shape) { return RankedTensorType::get(shape, et); }

  // Initializers: values are described, never stored.
  Attribute init(StringRef distribution, double a, double bParam) {
    return InitializerAttr::get(&ctx, distribution, b.getF64FloatAttr(a),
                                b.getF64FloatAttr(bParam));
  }
  Attribute normal(double stddev = 0.02) { return init("normal", 0.0, stddev); }
  Attribute ones() { return init("ones", 0.0, 0.0); }
  Attribute zeros() { return init("zeros", 0.0, 0.0); }

  /// Declares the global `name` (a full state_dict name).
  void declare(StringRef name, ArrayRef<int64_t> shape, Attribute initial,
               bool trainable = true) {
    GlobalOp::create(globals, NameLoc::get(b.getStringAttr(name)), name,
                     tensor(shape), initial, trainable, /*shard=*/nullptr);
  }
  Value load(StringRef name, ArrayRef<int64_t> shape) {
    return GlobalLoadOp::create(b, at("global_load"), tensor(shape), name);
  }
  /// Declares "<module path>.<leaf>" and reads it here.
  Value param(StringRef leaf, ArrayRef<int64_t> shape, Attribute initial) {
    std::string name = child(leaf);
    declare(name, shape, initial);
    return load(name, shape);
  }

  // Layers and ops, named as HF names them.
  Value transpose(Value x, ArrayRef<int64_t> perm) {
    return TransposeOp::create(b, at("transpose"), x, perm);
  }
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    return ReshapeOp::create(b, at("reshape"), tensor(shape), x);
  }
  Value add(Value x, Value y) { return AddOp::create(b, at("add"), x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, at("mul"), x, y); }
  Value slice(Value x, ArrayRef<int64_t> start, ArrayRef<int64_t> limit) {
    SmallVector<int64_t> stride(start.size(), 1);
    return SliceOp::create(b, at("slice"), x, start, limit, stride);
  }
  Value dropout(Value x, StringRef name) {
    if (c.dropout <= 0)
      return x;
    Scope scope(*this, name);
    return DropoutOp::create(b, at("dropout"), x, b.getF64FloatAttr(c.dropout));
  }
  /// nn.Linear (weight [out, in], read transposed) or, with `conv1d`, GPT-2's
  /// Conv1D (weight [in, out]).
  Value linear(Value x, StringRef name, int64_t in, int64_t out, bool bias,
               double stddev = 0.02, bool conv1d = false) {
    Scope scope(*this, name);
    Value w;
    if (conv1d) {
      w = param("weight", {in, out}, normal(stddev));
    } else {
      w = param("weight", {out, in}, normal(stddev));
      w = transpose(w, {1, 0});
    }
    Value y = MatmulOp::create(b, at("matmul"), x, w);
    if (bias)
      y = add(y, param("bias", {out}, zeros()));
    return y;
  }
  Value layerNorm(Value x, StringRef name, double eps) {
    Scope scope(*this, name);
    Value g = param("weight", {h}, ones()), beta = param("bias", {h}, zeros());
    int64_t axis = cast<RankedTensorType>(x.getType()).getRank() - 1;
    return LayerNormOp::create(b, at("layer_norm"), x, g, beta,
                               b.getI64IntegerAttr(axis), b.getF64FloatAttr(eps));
  }
  Value rmsNorm(Value x, StringRef name, double eps) {
    Scope scope(*this, name);
    Value g = param("weight", {h}, ones());
    int64_t axis = cast<RankedTensorType>(x.getType()).getRank() - 1;
    return RmsNormOp::create(b, at("rms_norm"), x, g, b.getI64IntegerAttr(axis),
                             b.getF64FloatAttr(eps));
  }
  Value gelu(Value x, StringRef name, GeluApproximation approximation) {
    Scope scope(*this, name);
    return GeluOp::create(b, at("gelu"), x,
                          GeluApproximationAttr::get(&ctx, approximation));
  }
  Value embedding(Value ids, StringRef name, int64_t rows) {
    Scope scope(*this, name);
    Value table = param("weight", {rows, h}, normal());
    return EmbeddingOp::create(b, at("embedding"), table, ids, IntegerAttr());
  }
  /// i64 constant [1, n] holding `0, 1, ..., n-1`, or all zeros.
  Value indices(int64_t n, bool arange) {
    auto type = RankedTensorType::get({1, n}, b.getI64Type());
    DenseElementsAttr value;
    if (arange) {
      SmallVector<int64_t> v(n);
      std::iota(v.begin(), v.end(), 0);
      value = DenseElementsAttr::get(type, ArrayRef<int64_t>(v));
    } else {
      value = DenseElementsAttr::get(type, ArrayRef<int64_t>{0}); // splat
    }
    return ConstantOp::create(b, at("constant"), value);
  }

  /// [b, s, n*d] -> [b, n, s, d]
  Value splitHeads(Value x, int64_t n) {
    return transpose(reshape(x, {batch, s, n, d}), {0, 2, 1, 3});
  }
  /// [b, n, s, d] -> [b, s, n*d]
  Value mergeHeads(Value x, int64_t n) {
    return reshape(transpose(x, {0, 2, 1, 3}), {batch, s, n * d});
  }
  Value attention(Value q, Value k, Value v, bool causal) {
    return AttentionOp::create(b, at("attention"), q, k, v, Value(),
                               b.getF64FloatAttr(1.0 / std::sqrt(double(d))),
                               causal ? b.getUnitAttr() : UnitAttr(),
                               b.getF64FloatAttr(c.dropout));
  }

  // Families.
  Value gpt(Value ids);
  Value gptBlock(Value x);
  Value llama(Value ids);
  Value llamaBlock(Value x);
  Value rotary(Value x, int64_t n, Value cos, Value sin);
  Value bert(Value ids);
  Value bertBlock(Value x);
  Value vit(Value pixels);
  Value vitBlock(Value x);
  /// The output projection onto the vocabulary: the transposed token
  /// embedding `tied` if given, else a new [V, h] weight "<name>.weight".
  Value vocabProjection(Value x, StringRef name, StringRef tied);

  const TransformerConfig &c;
  MLIRContext &ctx;
  OpBuilder b;       // ops of @forward
  OpBuilder globals; // globals, before @forward
  Type et;
  std::string path;
  int64_t h, heads, kv, d, f, s, batch;
};

OwningOpRef<ModuleOp> ModelBuilder::build() {
  ctx.loadDialect<ColoDialect, func::FuncDialect>();
  Location moduleLoc = NameLoc::get(b.getStringAttr("synthetic-" + c.family));
  OwningOpRef<ModuleOp> module = ModuleOp::create(moduleLoc);
  ColoDialect::SourceAttrHelper(&ctx).setAttr(*module, b.getStringAttr("synthetic"));
  ColoDialect::FamilyAttrHelper(&ctx).setAttr(*module, b.getStringAttr(c.family));

  bool tokens = isTokenModel(c);
  Type input = tokens ? Type(RankedTensorType::get({batch, c.seq}, b.getI64Type()))
                      : Type(tensor({batch, c.channels, c.imageSize, c.imageSize}));
  StringRef inputName = tokens ? "input_ids" : "pixel_values";

  b.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(b, NameLoc::get(b.getStringAttr("forward")),
                                   "forward", b.getFunctionType({input}, {}));
  Block *body = func.addEntryBlock();
  body->getArgument(0).setLoc(NameLoc::get(b.getStringAttr(inputName)));
  globals.setInsertionPoint(func);
  b.setInsertionPointToStart(body);

  Value x = body->getArgument(0), out;
  if (c.family == "gpt")
    out = gpt(x);
  else if (c.family == "llama")
    out = llama(x);
  else if (c.family == "bert")
    out = bert(x);
  else
    out = vit(x);
  // The module of the last op owns the return: "lm_head/return".
  StringRef last = "forward/return";
  if (auto name = dyn_cast<NameLoc>(out.getDefiningOp()->getLoc()))
    last = name.getName().strref();
  std::string owner = last.rsplit('/').first.str();
  func::ReturnOp::create(b, NameLoc::get(b.getStringAttr(owner + "/return")), out);
  func.setFunctionType(b.getFunctionType({input}, {out.getType()}));
  return module;
}

//===----------------------------------------------------------------------===//
// GPT-2 / GPT-3 (GPT2LMHeadModel)
//===----------------------------------------------------------------------===//
//
// Parameters: per layer ln_1 2h, c_attn h*3h + 3h, c_proj h*h + h, ln_2 2h,
// c_fc h*f + f, mlp.c_proj f*h + h, so 4h^2 + 2hf + 9h + f (12h^2 + 13h for
// f = 4h); wte V*h, wpe s*h, ln_f 2h; lm_head shares wte.

Value ModelBuilder::gpt(Value ids) {
  Value x;
  {
    Scope model(*this, "transformer");
    Value tok = embedding(ids, "wte", c.vocab), pos;
    {
      Scope wpe(*this, "wpe");
      Value table = param("weight", {c.seq, h}, normal());
      pos = EmbeddingOp::create(b, at("embedding"), table, indices(c.seq, true), IntegerAttr());
    }
    x = dropout(add(tok, pos), "drop");
    for (int64_t i = 0; i < c.layers; ++i) {
      Scope layer(*this, "h." + std::to_string(i));
      x = gptBlock(x);
    }
    x = layerNorm(x, "ln_f", 1e-5);
  }
  return vocabProjection(x, "lm_head", c.tiedEmbeddings ? "transformer.wte.weight" : "");
}

Value ModelBuilder::gptBlock(Value x) {
  // GPT-2 scales the residual projections' init by 1/sqrt(2 * layers).
  double projStd = 0.02 / std::sqrt(2.0 * c.layers);
  Value residual = x;
  Value y = layerNorm(x, "ln_1", 1e-5);
  {
    Scope attn(*this, "attn");
    Value qkv = linear(y, "c_attn", h, 3 * h, /*bias=*/true, 0.02, /*conv1d=*/true);
    Value q = slice(qkv, {0, 0, 0}, {batch, s, h});
    Value k = slice(qkv, {0, 0, h}, {batch, s, 2 * h});
    Value v = slice(qkv, {0, 0, 2 * h}, {batch, s, 3 * h});
    // One statement each: argument order is unspecified, op order must not be.
    q = splitHeads(q, heads);
    k = splitHeads(k, heads);
    v = splitHeads(v, heads);
    Value o = attention(q, k, v, /*causal=*/true);
    o = linear(mergeHeads(o, heads), "c_proj", h, h, true, projStd, true);
    y = dropout(o, "resid_dropout");
  }
  x = add(residual, y);
  residual = x;
  y = layerNorm(x, "ln_2", 1e-5);
  {
    Scope mlp(*this, "mlp");
    y = linear(y, "c_fc", h, f, true, 0.02, true);
    y = gelu(y, "act", GeluApproximation::tanh);
    y = linear(y, "c_proj", f, h, true, projStd, true);
    y = dropout(y, "dropout");
  }
  return add(residual, y);
}

Value ModelBuilder::vocabProjection(Value x, StringRef name, StringRef tied) {
  if (tied.empty())
    return linear(x, name, h, c.vocab, /*bias=*/false);
  Scope scope(*this, name);
  Value w = transpose(load(tied, {c.vocab, h}), {1, 0});
  return MatmulOp::create(b, at("matmul"), x, w);
}

//===----------------------------------------------------------------------===//
// Llama (LlamaForCausalLM)
//===----------------------------------------------------------------------===//
//
// Parameters: per layer input_layernorm h, q_proj h*h, k_proj and v_proj
// h*(kv*d) each, o_proj h*h, post_attention_layernorm h, gate_proj and
// up_proj h*f each, down_proj f*h: 2h^2 + 2h*kv*d + 3hf + 2h; embed_tokens
// V*h, norm h, lm_head V*h unless tied.
//
// Rotary embeddings are modelled, as HF's apply_rotary_pos_emb computes them,
// by the elementwise ops on q and k: x * cos + rotate_half(x) * sin, with
// rotate_half(x) = concat(-x[..., d/2:], x[..., :d/2]). cos and sin are the
// non-trainable buffers model.rotary_emb.cos / .sin [s, d]; they hold no data
// either (#colo.init ones and zeros, so the rotation is the identity if the
// model is ever run), and are not parameters.

Value ModelBuilder::llama(Value ids) {
  Value x;
  {
    Scope model(*this, "model");
    x = embedding(ids, "embed_tokens", c.vocab);
    declare("model.rotary_emb.cos", {s, d}, ones(), /*trainable=*/false);
    declare("model.rotary_emb.sin", {s, d}, zeros(), /*trainable=*/false);
    for (int64_t i = 0; i < c.layers; ++i) {
      Scope layer(*this, "layers." + std::to_string(i));
      x = llamaBlock(x);
    }
    x = rmsNorm(x, "norm", 1e-5);
  }
  return vocabProjection(x, "lm_head", c.tiedEmbeddings ? "model.embed_tokens.weight" : "");
}

Value ModelBuilder::rotary(Value x, int64_t n, Value cos, Value sin) {
  Value x1 = slice(x, {0, 0, 0, 0}, {batch, n, s, d / 2});
  Value x2 = slice(x, {0, 0, 0, d / 2}, {batch, n, s, d});
  Value neg = NegOp::create(b, at("neg"), x2);
  Value rotated = ConcatOp::create(b, at("concat"), ValueRange{neg, x1}, uint64_t(3));
  Value real = mul(x, cos);
  return add(real, mul(rotated, sin));
}

Value ModelBuilder::llamaBlock(Value x) {
  Value residual = x;
  Value y = rmsNorm(x, "input_layernorm", 1e-5);
  {
    Scope attn(*this, "self_attn");
    Value q = splitHeads(linear(y, "q_proj", h, heads * d, false), heads);
    Value k = splitHeads(linear(y, "k_proj", h, kv * d, false), kv);
    Value v = splitHeads(linear(y, "v_proj", h, kv * d, false), kv);
    Value cos, sin;
    {
      Scope rope(*this, "rotary_emb");
      cos = load("model.rotary_emb.cos", {s, d});
      sin = load("model.rotary_emb.sin", {s, d});
    }
    q = rotary(q, heads, cos, sin);
    k = rotary(k, kv, cos, sin);
    Value o = attention(q, k, v, /*causal=*/true);
    y = linear(mergeHeads(o, heads), "o_proj", heads * d, h, false);
  }
  x = add(residual, y);
  residual = x;
  y = rmsNorm(x, "post_attention_layernorm", 1e-5);
  {
    Scope mlp(*this, "mlp");
    Value gate = linear(y, "gate_proj", h, f, false);
    {
      Scope act(*this, "act_fn");
      gate = SiluOp::create(b, at("silu"), gate);
    }
    Value up = linear(y, "up_proj", h, f, false);
    y = linear(mul(gate, up), "down_proj", f, h, false);
  }
  return add(residual, y);
}

//===----------------------------------------------------------------------===//
// BERT (BertForMaskedLM)
//===----------------------------------------------------------------------===//
//
// Parameters: embeddings V*h + s*h + 2h (two token types) + LayerNorm 2h; per
// layer query/key/value/attention.output.dense 4(h^2 + h), two LayerNorms 4h,
// intermediate h*f + f, output f*h + h: 4h^2 + 2hf + 9h + f (12h^2 + 13h for
// f = 4h); MLM head transform.dense h^2 + h, transform.LayerNorm 2h,
// cls.predictions.bias V (HF's decoder.bias is that same tensor), decoder
// weight tied to the word embeddings (V*h more if untied). No pooler:
// BertForMaskedLM builds BertModel without one.

Value ModelBuilder::bert(Value ids) {
  Value x;
  {
    Scope model(*this, "bert");
    {
      Scope emb(*this, "embeddings");
      Value word = embedding(ids, "word_embeddings", c.vocab);
      // No token_type_ids given: HF uses its all-zero buffer.
      Value type;
      {
        Scope tt(*this, "token_type_embeddings");
        Value table = param("weight", {2, h}, normal());
        type = EmbeddingOp::create(b, at("embedding"), table, indices(c.seq, false), IntegerAttr());
      }
      Value pos;
      {
        Scope pe(*this, "position_embeddings");
        Value table = param("weight", {c.seq, h}, normal());
        pos = EmbeddingOp::create(b, at("embedding"), table, indices(c.seq, true), IntegerAttr());
      }
      x = add(add(word, type), pos);
      x = layerNorm(x, "LayerNorm", 1e-12);
      x = dropout(x, "dropout");
    }
    for (int64_t i = 0; i < c.layers; ++i) {
      Scope layer(*this, "encoder.layer." + std::to_string(i));
      x = bertBlock(x);
    }
  }
  Scope head(*this, "cls.predictions");
  {
    Scope transform(*this, "transform");
    x = linear(x, "dense", h, h, true);
    x = gelu(x, "transform_act_fn", GeluApproximation::none);
    x = layerNorm(x, "LayerNorm", 1e-12);
  }
  Value bias = param("bias", {c.vocab}, zeros());
  Scope decoder(*this, "decoder");
  Value w;
  if (c.tiedEmbeddings) {
    w = load("bert.embeddings.word_embeddings.weight", {c.vocab, h});
  } else {
    w = param("weight", {c.vocab, h}, normal());
  }
  x = MatmulOp::create(b, at("matmul"), x, transpose(w, {1, 0}));
  return add(x, bias);
}

Value ModelBuilder::bertBlock(Value x) {
  {
    Scope attn(*this, "attention");
    Value o;
    {
      Scope self(*this, "self");
      Value q = splitHeads(linear(x, "query", h, h, true), heads);
      Value k = splitHeads(linear(x, "key", h, h, true), heads);
      Value v = splitHeads(linear(x, "value", h, h, true), heads);
      o = mergeHeads(attention(q, k, v, /*causal=*/false), heads);
    }
    Scope out(*this, "output");
    o = dropout(linear(o, "dense", h, h, true), "dropout");
    x = layerNorm(add(o, x), "LayerNorm", 1e-12);
  }
  Value y;
  {
    Scope inter(*this, "intermediate");
    y = gelu(linear(x, "dense", h, f, true), "intermediate_act_fn",
             GeluApproximation::none);
  }
  Scope out(*this, "output");
  y = dropout(linear(y, "dense", f, h, true), "dropout");
  return layerNorm(add(y, x), "LayerNorm", 1e-12);
}

//===----------------------------------------------------------------------===//
// ViT (ViTForImageClassification)
//===----------------------------------------------------------------------===//
//
// Parameters: cls_token h, position_embeddings (N + 1) h for N patches,
// patch projection h*c*p^2 + h; per layer as BERT's, 4h^2 + 2hf + 9h + f;
// final layernorm 2h; classifier h*C + C.

Value ModelBuilder::vit(Value pixels) {
  int64_t grid = c.imageSize / c.patchSize, n = grid * grid;
  Value x;
  {
    Scope model(*this, "vit");
    {
      Scope emb(*this, "embeddings");
      {
        Scope patches(*this, "patch_embeddings");
        {
          Scope proj(*this, "projection");
          Value w = param("weight", {h, c.channels, c.patchSize, c.patchSize}, normal());
          Value bias = param("bias", {h}, zeros());
          SmallVector<int64_t> strides = {c.patchSize, c.patchSize};
          x = Conv2dOp::create(b, at("conv2d"), pixels, w, bias, strides);
        }
        // flatten(2).transpose(1, 2): [b, h, g, g] -> [b, N, h]
        x = transpose(reshape(x, {batch, h, n}), {0, 2, 1});
      }
      Value cls = param("cls_token", {1, 1, h}, normal());
      cls = BroadcastToOp::create(b, at("broadcast_to"), tensor({batch, 1, h}), cls);
      x = ConcatOp::create(b, at("concat"), ValueRange{cls, x}, uint64_t(1));
      x = add(x, param("position_embeddings", {1, n + 1, h}, normal()));
      x = dropout(x, "dropout");
    }
    for (int64_t i = 0; i < c.layers; ++i) {
      Scope layer(*this, "encoder.layer." + std::to_string(i));
      x = vitBlock(x);
    }
    x = layerNorm(x, "layernorm", 1e-12);
  }
  // sequence_output[:, 0, :] in ViTForImageClassification.forward, placed
  // with the classifier that consumes it.
  {
    Scope head(*this, "classifier");
    x = reshape(slice(x, {0, 0, 0}, {batch, 1, h}), {batch, h});
  }
  return linear(x, "classifier", h, c.numClasses, true);
}

Value ModelBuilder::vitBlock(Value x) {
  Value y = layerNorm(x, "layernorm_before", 1e-12);
  {
    Scope attn(*this, "attention");
    {
      Scope self(*this, "attention");
      Value q = splitHeads(linear(y, "query", h, h, true), heads);
      Value k = splitHeads(linear(y, "key", h, h, true), heads);
      Value v = splitHeads(linear(y, "value", h, h, true), heads);
      y = mergeHeads(attention(q, k, v, /*causal=*/false), heads);
    }
    Scope out(*this, "output");
    y = dropout(linear(y, "dense", h, h, true), "dropout");
  }
  x = add(y, x);
  y = layerNorm(x, "layernorm_after", 1e-12);
  {
    Scope inter(*this, "intermediate");
    y = gelu(linear(y, "dense", h, f, true), "intermediate_act_fn",
             GeluApproximation::none);
  }
  Scope out(*this, "output");
  y = dropout(linear(y, "dense", f, h, true), "dropout");
  return add(y, x);
}

} // namespace

//===----------------------------------------------------------------------===//
// Presets and validation
//===----------------------------------------------------------------------===//

namespace {
struct Preset {
  const char *name;
  TransformerConfig config;
};

TransformerConfig gpt2(int64_t layers, int64_t hidden, int64_t heads) {
  TransformerConfig c;
  c.family = "gpt";
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.vocab = 50257;
  c.seq = 1024;
  c.dropout = 0.1;
  return c;
}

std::vector<Preset> presets() {
  std::vector<Preset> p;
  p.push_back({"gpt2-small", gpt2(12, 768, 12)});
  p.push_back({"gpt2-medium", gpt2(24, 1024, 16)});
  p.push_back({"gpt2-large", gpt2(36, 1280, 20)});
  p.push_back({"gpt2-xl", gpt2(48, 1600, 25)});
  TransformerConfig gpt3 = gpt2(96, 12288, 96);
  gpt3.seq = 2048;
  p.push_back({"gpt3-175b", gpt3});

  TransformerConfig llama;
  llama.family = "llama";
  llama.layers = 32;
  llama.hidden = 4096;
  llama.heads = 32;
  llama.ffn = 11008;
  llama.vocab = 32000;
  llama.seq = 4096;
  llama.tiedEmbeddings = false;
  p.push_back({"llama2-7b", llama});
  llama.layers = 80;
  llama.hidden = 8192;
  llama.heads = 64;
  llama.kvHeads = 8;
  llama.ffn = 28672;
  p.push_back({"llama2-70b", llama});

  TransformerConfig bert;
  bert.family = "bert";
  bert.layers = 24;
  bert.hidden = 1024;
  bert.heads = 16;
  bert.vocab = 30522;
  bert.seq = 512;
  bert.dropout = 0.1;
  p.push_back({"bert-large", bert});

  TransformerConfig vit;
  vit.family = "vit";
  vit.layers = 32;
  vit.hidden = 1280;
  vit.heads = 16;
  vit.ffn = 5120;
  vit.patchSize = 14;
  vit.imageSize = 224;
  p.push_back({"vit-huge", vit});
  return p;
}
} // namespace

std::vector<std::string> modelPresetNames() {
  std::vector<std::string> names;
  for (const Preset &p : presets())
    names.push_back(p.name);
  return names;
}

llvm::Expected<TransformerConfig> modelPreset(llvm::StringRef name) {
  for (const Preset &p : presets())
    if (name == p.name)
      return p.config;
  return configError("unknown model preset '" + name +
                     "': expected one of " + llvm::join(modelPresetNames(), ", "));
}

llvm::Error validate(const TransformerConfig &c) {
  if (!llvm::is_contained({"gpt", "llama", "bert", "vit"}, c.family))
    return configError("unknown model family '" + c.family +
                       "': expected gpt, llama, bert or vit");
  if (!llvm::is_contained({"bf16", "f16", "f32"}, c.dtype))
    return configError("unknown dtype '" + c.dtype + "': expected bf16, f16 or f32");
  auto positive = [](int64_t v, const char *what) -> llvm::Error {
    if (v <= 0)
      return configError(llvm::formatv("{0} must be positive, got {1}", what, v));
    return llvm::Error::success();
  };
  using Sizes = std::initializer_list<std::pair<int64_t, const char *>>;
  for (auto [v, what] : Sizes{{c.layers, "layers"}, {c.hidden, "hidden size"},
                              {c.heads, "heads"}, {c.batch, "batch"}})
    if (llvm::Error e = positive(v, what))
      return e;
  if (c.kvHeads < 0)
    return configError(llvm::formatv("kv heads must not be negative, got {0}", c.kvHeads));
  if (c.ffn < 0)
    return configError(llvm::formatv("ffn size must not be negative, got {0}", c.ffn));
  if (c.hidden % c.heads)
    return configError(llvm::formatv("hidden size {0} is not divisible by {1} heads",
                                     c.hidden, c.heads));
  int64_t kv = kvHeadsOf(c);
  if (kv != c.heads && c.family != "llama")
    return configError(llvm::formatv(
        "grouped-query attention ({0} kv heads for {1} heads) is only built for "
        "llama; {2} uses kv heads = heads",
        kv, c.heads, c.family));
  if (c.heads % kv)
    return configError(
        llvm::formatv("{0} heads are not divisible by {1} kv heads", c.heads, kv));
  if (c.family == "llama" && (c.hidden / c.heads) % 2)
    return configError(llvm::formatv(
        "head size {0} (hidden {1} / {2} heads) must be even for rotary embeddings",
        c.hidden / c.heads, c.hidden, c.heads));
  if (!(c.dropout >= 0 && c.dropout < 1))
    return configError(llvm::formatv("dropout must be in [0, 1), got {0}", c.dropout));

  if (isTokenModel(c)) {
    if (llvm::Error e = positive(c.vocab, "vocab size"))
      return e;
    if (llvm::Error e = positive(c.seq, "sequence length"))
      return e;
  } else {
    for (auto [v, what] : Sizes{{c.imageSize, "image size"}, {c.patchSize, "patch size"},
                                {c.channels, "channels"}, {c.numClasses, "classes"}})
      if (llvm::Error e = positive(v, what))
        return e;
    if (c.imageSize % c.patchSize)
      return configError(llvm::formatv("image size {0} is not divisible by patch size {1}",
                                       c.imageSize, c.patchSize));
    if (c.seq && c.seq != seqOf(c))
      return configError(llvm::formatv(
          "sequence length {0} does not match the {1} patches plus the class "
          "token of a {2}x{2} image with {3}x{3} patches; leave it 0",
          c.seq, patchesOf(c), c.imageSize, c.patchSize));
  }

  // Every element count and FLOP count must fit the int64 counters of the
  // cost model; estimate them in floating point first.
  double b = c.batch, s = seqOf(c), h = c.hidden, f = ffnOf(c), l = c.layers;
  double v = isTokenModel(c) ? c.vocab : c.numClasses;
  double widest = std::max({3 * h, f, v});
  double flops = 2 * b * s * (l * (4 * h * h + 2 * h * kv * (h / c.heads) + 3 * h * f) +
                              h * v) +
                 l * b * c.heads * s * s * (4 * h / c.heads + 7);
  double elements = std::max({b * s * widest, v * h, b * c.heads * s * s});
  if (!isTokenModel(c))
    elements = std::max(elements, b * c.channels * double(c.imageSize) * c.imageSize);
  constexpr double kLimit = 4.0e18; // below 2^63 with room for sums
  if (flops > kLimit || elements > kLimit)
    return configError(llvm::formatv(
        "model too large for 64-bit cost counters: ~{0:e} forward FLOPs, "
        "largest tensor ~{1:e} elements",
        flops, elements));
  return llvm::Error::success();
}

OwningOpRef<ModuleOp> buildSyntheticModel(const TransformerConfig &config,
                                          MLIRContext &ctx) {
  if (llvm::Error e = validate(config)) {
    emitError(UnknownLoc::get(&ctx)) << "invalid model config: "
                                     << llvm::toString(std::move(e));
    return nullptr;
  }
  OwningOpRef<ModuleOp> module = ModelBuilder(config, ctx).build();
  if (failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace colo
