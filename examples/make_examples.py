"""Regenerates the bundled example: a tiny GPT-2 (transformers GPT2LMHeadModel,
2 layers, hidden 64) exported in training mode by PyTorch's TorchScript-based
ONNX exporter. Run with the project's environment:
    ~/.local/share/colo/venv/bin/python examples/make_examples.py
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "e2e"))
import models  # noqa: E402

model, args = models.build("gpt2")
out = os.path.join(os.path.dirname(__file__), "gpt2-tiny.onnx")
models.export(model, args, out, "torchscript")
print("wrote", out)
