#!/usr/bin/env python3
"""Recomputation: what it saves and what it costs, against PyTorch's own.

    python bench/recompute_bench.py [--layers 8] [--hidden 128] [--batch 8] [--seq 128] [--steps 10]

A Hugging Face GPT-2 (dropout off, so that both sides run the same step) is
exported once; colo compiles it with recompute=none, selective and full and
runs --steps steps of AdamW on one rank. Printed per policy: the arena colo
plans for the step's temporaries (--dump-ir), the median step time, and
both relative to recompute=none. The peer is the same model in PyTorch,
without and with gradient checkpointing of every block
(`gradient_checkpointing_enable`, full recomputation), timed in the same
run on the same threads: its step-time ratio is the cost that recomputing
whole blocks has in a framework."""
import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "test" / "e2e"))
COLO = pathlib.Path(os.environ.get("COLO_BIN", ROOT / "build" / "bin")) / "colo"


def colo(*args):
    return subprocess.run([str(COLO), *map(str, args)], check=True, capture_output=True,
                          text=True).stdout


def gpt2(a):
    import torch
    import transformers as tf

    import models

    torch.manual_seed(0)
    cfg = tf.GPT2Config(n_layer=a.layers, n_embd=a.hidden, n_head=max(1, a.hidden // 32),
                        vocab_size=512, n_positions=a.seq, use_cache=False, resid_pdrop=0.0,
                        embd_pdrop=0.0, attn_pdrop=0.0)
    return tf.GPT2LMHeadModel(cfg), models


def torch_step_ms(model, a, checkpointing):
    import torch

    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.gradient_checkpointing_disable()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, 512, (a.batch, a.seq), generator=torch.Generator().manual_seed(1))
    times = []
    for _ in range(a.steps + 2):
        t0 = time.perf_counter()
        logits = model(input_ids=ids).logits
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                                                 ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times[2:])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--steps", type=int, default=10)
    a = p.parse_args()
    import torch

    threads = os.cpu_count() or 1
    torch.set_num_threads(threads)
    model, models = gpt2(a)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        path = tmp / "gpt2.onnx"
        ids = torch.randint(0, 512, (a.batch, a.seq))
        models.export(models.LogitsOnly(model).train(), (ids,), path, "torchscript")
        rows = {}
        for policy in ("none", "selective", "full"):
            exe = tmp / policy
            colo("compile", path, "-o", exe, "--train", "loss=lm,optimizer=adamw,lr=1e-4",
                 "--plan", f"recompute={policy}", "--dump-ir", exe / "ir")
            arena = int(re.search(r"arena_bytes = (\d+)",
                                  (exe / "ir" / "2-program.mlir").read_text())[1])
            out = colo("run", exe, "--steps", a.steps + 2, "--data", "synthetic",
                       "--threads", threads)
            ms = [float(m) for m in re.findall(r"^step \d+/\d+ .*\(([\d.]+) ms\)", out, re.M)]
            rows[policy] = (arena, statistics.median(ms[2:]))
        base_arena, base_ms = rows["none"]
        print(f"GPT-2, {a.layers} layers x {a.hidden}, batch {a.batch} x {a.seq} tokens, "
              f"{threads} threads")
        print(f"{'colo':12} {'arena MB':>9} {'x none':>7} {'ms/step':>8} {'x none':>7}")
        for policy, (arena, ms) in rows.items():
            print(f"{'recompute=' + policy:12} {arena / 1e6:9.2f} {arena / base_arena:7.2f} "
                  f"{ms:8.1f} {ms / base_ms:7.2f}")
    plain = torch_step_ms(model, a, False)
    checkpointed = torch_step_ms(model, a, True)
    print(f"PyTorch: {plain:.1f} ms/step, with gradient checkpointing {checkpointed:.1f} "
          f"({checkpointed / plain:.2f}x); colo full: {rows['full'][1] / base_ms:.2f}x")


if __name__ == "__main__":
    main()
