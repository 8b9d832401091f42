#!/usr/bin/env python3
"""How many float32 draws the suite's AdamW bounds need (not a test).

test_parallel holds each weight tensor of a plan's run, compared with one
rank's, within twice PyTorch's own float32 spread: the furthest of the
float32 runs of train_ref.float32_variants (the model and n copies one ulp
away) from float64. This trains the suite's GPT-2 or Llama (4 layers, 5
AdamW steps) in PyTorch from 1 + n + 16 float32 starting points and counts,
for n = 4, 8 and 16, how often one of the 16 further draws compared with
the unperturbed one (as test_parallel compares colo's two runs) exceeds
that bound: PyTorch against itself, which no implementation can beat.

    python bench/float32_spread.py [gpt2|llama]
"""
import copy
import pathlib
import sys
import time

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "test" / "e2e"))
import train_ref  # noqa: E402

STEPS, BATCH, SEQ, LR, LAYERS, FURTHER = 5, 4, 16, 1e-3, 4, 16


def main(name):
    torch.manual_seed(0)
    model = (train_ref._hf(name, LAYERS, heads=8, kv_heads=4) if name == "llama"
             else train_ref._hf(name, LAYERS)).train()
    data = torch.randint(0, 256, (STEPS * BATCH, SEQ), generator=torch.Generator().manual_seed(2))

    def run(m, dtype):
        m = m.to(dtype)
        opt = torch.optim.AdamW(m.parameters(), lr=LR, weight_decay=0.01)
        for i in range(STEPS):
            ids = data[i * BATCH:(i + 1) * BATCH]
            logits = m(ids).to(dtype)
            loss = torch.nn.functional.cross_entropy(
                logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
        return {k: v.detach().double().numpy() for k, v in m.state_dict().items()}

    start = time.time()
    f64 = run(copy.deepcopy(model), torch.float64)
    runs = [run(m, torch.float32)
            for m in train_ref.float32_variants(model, perturbed=16 + FURTHER)]
    print(f"{name}: {len(runs)} float32 trainings in {time.time() - start:.0f} s")
    scale = {k: max(float(np.abs(v).max()), 1e-12) for k, v in f64.items()}
    for n in (4, 8, 16):
        spread = {k: max(float(np.abs(r[k] - f64[k]).max()) for r in runs[:n + 1]) / scale[k]
                  for k in f64}
        over, worst = 0, (0.0, "")
        for r in runs[17:17 + FURTHER]:
            for k in f64:
                err = float(np.abs(r[k] - runs[0][k]).max()) / scale[k]
                if err > max(1e-5, 2 * spread[k]):
                    over += 1
                    worst = max(worst, (err / (2 * spread[k]), k))
        print(f"  n={n:2d}: {over} of {FURTHER} x {len(f64)} tensor draws exceed twice the spread"
              + (f" (worst {worst[0]:.2f}x, {worst[1]})" if over else ""))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "gpt2")
