"""The tiny reference models of the test suite, built with the pinned PyTorch,
torchvision and transformers, and their ONNX exports with both exporters."""
import contextlib
import io
import os
import warnings

import torch

SEED = 0


class LogitsOnly(torch.nn.Module):
    """Hugging Face models return output objects; exporters want tensors."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids).logits


def _hf(name):
    import transformers as tf

    if name == "gpt2":
        cfg = tf.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=256,
                            n_positions=32, use_cache=False)
        model = tf.GPT2LMHeadModel(cfg)
    elif name == "bert":
        cfg = tf.BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=128, vocab_size=256,
                            max_position_embeddings=32)
        model = tf.BertForMaskedLM(cfg)
    elif name == "llama":
        cfg = tf.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2,
                             vocab_size=256, max_position_embeddings=32, use_cache=False)
        model = tf.LlamaForCausalLM(cfg)
    return LogitsOnly(model), (torch.randint(0, 256, (2, 16)),)


def build(name):
    """Returns (module in training mode, example inputs)."""
    torch.manual_seed(SEED)
    import torchvision

    if name == "mlp":
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                    torch.nn.Linear(64, 64), torch.nn.GELU(),
                                    torch.nn.Linear(64, 10))
        args = (torch.randn(4, 32),)
    elif name == "resnet18":
        model = torchvision.models.resnet18(num_classes=10)
        args = (torch.randn(2, 3, 32, 32),)
    elif name == "mobilenet_v2":
        model = torchvision.models.mobilenet_v2(num_classes=10)
        args = (torch.randn(2, 3, 32, 32),)
    elif name == "vit":
        model = torchvision.models.VisionTransformer(
            image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
            mlp_dim=64, num_classes=10)
        args = (torch.randn(2, 3, 32, 32),)
    elif name == "transformer_encoder":
        layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                                 batch_first=True)
        model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        args = (torch.randn(2, 8, 32),)
    else:
        model, args = _hf(name)
    return model.train(), args


MODELS = ["mlp", "resnet18", "mobilenet_v2", "vit", "transformer_encoder",
          "gpt2", "bert", "llama"]
EXPORTERS = ["torchscript", "dynamo"]
# torch 2.9's dynamo exporter cannot export batch norm in training mode (the
# running-statistics update fails in the ONNX translation); these models are
# exported for inference by it.
DYNAMO_EVAL_ONLY = {"resnet18", "mobilenet_v2"}


def parameter_count(model):
    """PyTorch's count: parameters() already yields tied weights once."""
    return sum(p.numel() for p in model.parameters())


def export(model, args, path, exporter, opset=None, **kwargs):
    """Exports in training mode (batch norm with batch statistics, dropout kept)."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        if exporter == "torchscript":
            torch.onnx.export(model, args, path, dynamo=False,
                              training=torch.onnx.TrainingMode.TRAINING,
                              do_constant_folding=False,
                              opset_version=opset or 17, **kwargs)
        else:
            torch.onnx.export(model, args, path, dynamo=True,
                              **({"opset_version": opset} if opset else {}), **kwargs)
    return path
