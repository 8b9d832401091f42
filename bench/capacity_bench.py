#!/usr/bin/env python3
"""Capacity: the largest GPT that trains in a capped device, without and with
colo's memory techniques.

    python bench/capacity_bench.py [--device-memory 1G] [--layers 8] [--seq 128] [--batch 4]

The device pool is capped at --device-memory (colo compile --device-memory
checks the step's planned memory against it, colo run holds each rank to
it) while host memory is otherwise free. For each configuration, plain
(nothing recomputed or offloaded), `recompute=full,offload=optimizer`
(ZeRO-Offload) and `recompute=full,offload=optimizer+params` (the parameters
in host memory too, fetched in chunks: Gemini, ZeRO-Infinity), a binary
search over the hidden size (multiples of 64; `colo model gpt`, float32,
AdamW) finds the largest synthetic GPT that compiles within the cap and
completes --steps training steps under it. Sizes whose offloaded state
(16 bytes per parameter: weights, moments, gradients) would not fit in the
host's available memory are not tried. Printed: each largest model's
parameters, the ratios to plain, and each one's step time under the cap
relative to the same model compiled plain and run on an uncapped device
(what the techniques cost where memory is not short).

Colossal-AI's Gemini reports 18B parameters on a 24 GB RTX 3090 where PyTorch
stops at 1.0B (18x), ZeRO-Offload about 10x."""
import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
COLO = pathlib.Path(os.environ.get("COLO_BIN", ROOT / "build" / "bin")) / "colo"
CONFIGS = {"plain": "recompute=none",
           "recompute+offload": "recompute=full,offload=optimizer",
           "recompute+offload all": "recompute=full,offload=optimizer+params"}
HOST_BYTES_PER_PARAMETER = 16


def available_host_memory():
    with open("/proc/meminfo") as f:
        return int(re.search(r"MemAvailable:\s+(\d+) kB", f.read())[1]) * 1024


def colo(*args, check=True):
    return subprocess.run([str(COLO), *map(str, args)], check=check, capture_output=True,
                          text=True)


def parameters(a, hidden):
    vocab = a.vocab
    return a.layers * 12 * hidden * hidden + (vocab + a.seq) * hidden


class Model:
    """One size, compiled for one configuration under the cap."""

    def __init__(self, a, tmp, config, hidden, capped=True):
        self.hidden = hidden
        self.dir = tmp / f"{config}-{hidden}{'' if capped else '-uncapped'}"
        mlir = self.dir.with_suffix(".mlir")
        colo("model", "gpt", "--layers", a.layers, "--hidden", hidden, "--heads", hidden // 64,
             "--seq", a.seq, "--batch", a.batch, "--vocab", a.vocab, "--dtype", "f32", "-o", mlir)
        cap = ["--device-memory", a.device_memory] if capped else []
        self.compiled = colo("compile", mlir, "-o", self.dir, "--train", "loss=lm,optimizer=adamw",
                             "--plan", CONFIGS[config], *cap, check=False).returncode == 0

    def step_ms(self, a):
        proc = colo("run", self.dir, "--steps", a.steps, "--data", "synthetic", "--no-snapshot",
                    "-o", self.dir / "w.safetensors", check=False)
        if proc.returncode:
            return None
        times = [float(t) for t in re.findall(r"^step \d+/\d+ .*\((\d+(?:\.\d+)?) ms\)",
                                              proc.stdout, re.M)]
        return statistics.median(times[1:] or times)


def largest(a, tmp, config):
    """The largest hidden size that compiles and trains under the cap."""
    lo, hi, best = 1, a.max_hidden // 64, None  # in units of 64
    host = 0.9 * available_host_memory()
    while hi > 1 and parameters(a, 64 * hi) * HOST_BYTES_PER_PARAMETER > host:
        hi -= 1
    while lo <= hi:
        mid = (lo + hi) // 2
        m = Model(a, tmp, config, 64 * mid)
        ok = m.compiled and m.step_ms(a) is not None
        print(f"  {config}: hidden {64 * mid}: "
              f"{parameters(a, 64 * mid) / 1e6:.1f}M parameters "
              f"{'fits' if ok else 'does not fit'}", flush=True)
        if ok:
            best, lo = m, mid + 1
        else:
            hi = mid - 1
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device-memory", default="1G")
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--max-hidden", type=int, default=4096)
    p.add_argument("--steps", type=int, default=3)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as t:
        tmp = pathlib.Path(t)
        found = {c: largest(a, tmp, c) for c in CONFIGS}
        print(f"\ndevice memory {a.device_memory}, GPT with {a.layers} layers, "
              f"{a.batch} x {a.seq} tokens, float32 AdamW")
        print(f"{'configuration':<22} {'hidden':>6} {'parameters':>11} "
              f"{'capped ms':>10} {'plain, uncapped ms':>19} {'ratio':>6}")
        for config, m in found.items():
            if m is None:
                print(f"{config:<22} nothing fits")
                continue
            capped = m.step_ms(a)
            free = Model(a, tmp, "plain", m.hidden, capped=False).step_ms(a)
            print(f"{config:<22} {m.hidden:>6} {parameters(a, m.hidden) / 1e6:>10.1f}M "
                  f"{capped:>10.0f} {free:>19.0f} {capped / free:>6.2f}")
        if found["plain"]:
            for config, m in found.items():
                if config != "plain" and m:
                    ratio = parameters(a, m.hidden) / parameters(a, found["plain"].hidden)
                    print(f"largest model with {config} / plain: {ratio:.2f}x")
            print("(Gemini: 18x, ZeRO-Offload: about 10x)")


if __name__ == "__main__":
    main()
