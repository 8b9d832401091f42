#!/usr/bin/env python3
"""Writes examples/gpt2-tiny.onnx, the model the README trains: a 2-layer GPT-2
(Hugging Face transformers) over bytes (vocabulary 256), batch 8 x 64 tokens,
random initial weights (seed 0), dropout 0, exported by PyTorch's
TorchScript-based ONNX exporter in training mode.

    ~/.local/share/colo/venv/bin/python examples/make_examples.py"""
import argparse
import pathlib

import torch
import transformers as tf


class Logits(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids).logits


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", default=pathlib.Path(__file__).with_name("gpt2-tiny.onnx"))
    args = p.parse_args()
    torch.manual_seed(0)
    cfg = tf.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=256, n_positions=64,
                        use_cache=False, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = Logits(tf.GPT2LMHeadModel(cfg)).train()
    ids = torch.randint(0, 256, (8, 64))
    torch.onnx.export(model, (ids,), args.o, dynamo=False, input_names=["input_ids"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=17)
    print(f"wrote {args.o}")


if __name__ == "__main__":
    main()
