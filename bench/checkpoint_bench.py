#!/usr/bin/env python3
"""Checkpoints: kill trials, and the speed and memory of an export.

    python bench/checkpoint_bench.py [--trials 20] [--export-gb 1] [--skip-kills]

Kill trials: a tiny float32 GPT trains 60 steps with a checkpoint every step
under one rank, dp=2 ZeRO-3 and pp=2; each trial SIGKILLs the run (ranks and
mpirun) at a uniformly random instant of the uninterrupted run's duration,
checks that every checkpoint left is whole (colo checkpoint export reads and
checks every piece), resumes, and compares the final weights with the
uninterrupted run's bit for bit.

Export (first, see peak_rss): a GPT whose float32 parameters take about --export-gb GB writes its
initial checkpoint (0 steps) under one rank and under dp=2 ZeRO-3 (every
tensor then put together from two flat blocks); `colo checkpoint export`
writes Hugging Face safetensors from each. Printed: the seconds, the
throughput, and the export's peak resident memory against its largest
tensor (the measure the issue sets: extra memory below 2x that tensor)."""
import argparse
import os
import pathlib
import random
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "test" / "e2e"))
COLO = pathlib.Path(os.environ.get("COLO_BIN", ROOT / "build" / "bin")) / "colo"

from safetensors.numpy import load_file  # noqa: E402


def colo(*args):
    subprocess.run([str(COLO), *map(str, args)], check=True, capture_output=True, text=True)


def kill_trials(tmp, trials):
    import test_checkpoint  # kill_trial; it imports torch, so only now (see peak_rss)

    model = tmp / "gpt.mlir"
    colo("model", "gpt", "--layers", 2, "--hidden", 32, "--heads", 4, "--vocab", 64, "--seq",
         16, "--batch", 8, "--dtype", "f32", "-o", model)
    steps = 60
    for plan in ["one", "dp=2,zero=3", "pp=2,micro=2"]:
        exe = tmp / plan
        colo("compile", model, "--train", test_checkpoint.TRAIN["adamw"], "-o", exe,
             *([] if plan == "one" else ["--plan", plan]))
        colo("run", exe, "--steps", steps, "--data", "synthetic", "--threads", 1, "-o",
             tmp / "ref.safetensors")
        start = time.time()  # a run with its checkpoints: the span of the instants
        colo("run", exe, "--steps", steps, "--data", "synthetic", "--threads", 1, "-o",
             tmp / "timed.safetensors", "--checkpoint-dir", tmp / f"{plan}-timed",
             "--checkpoint-every", 1)
        duration = time.time() - start
        ref = load_file(tmp / "ref.safetensors")
        rng = random.Random(f"bench {plan}")
        resumed, identical = [], 0
        for trial in range(trials):
            ckpt, out = tmp / f"{plan}-ckpt{trial}", tmp / f"{plan}-w{trial}.safetensors"
            _, step = test_checkpoint.kill_trial(exe, steps, duration, ckpt, out, rng)
            resumed.append(step)
            mine = load_file(out)
            identical += all((mine[k] == ref[k]).all() for k in ref)
        print(f"{plan:14s} {trials} kills in a {duration:.2f} s run of {steps} steps: none torn, resumed "
              f"from steps {sorted(resumed)}; {identical}/{trials} end bit-identical")


def peak_rss(*args):
    """(peak resident bytes, seconds) of `colo args`. A child's peak starts
    from this process's size when forked, so run it before importing torch."""
    start = time.time()
    proc = subprocess.Popen([str(COLO), *map(str, args)], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise RuntimeError(f"colo {' '.join(map(str, args))} failed")
    return usage.ru_maxrss * 1024, time.time() - start


def export(tmp, gigabytes):
    # 12 h^2 parameters per layer plus the (tied) embedding: h = 1024, vocab 32768.
    hidden, vocab = 1024, 32768
    layers = max(1, round((gigabytes * 1e9 / 4 - vocab * hidden) / (12 * hidden**2)))
    model = tmp / "big.mlir"
    colo("model", "gpt", "--layers", layers, "--hidden", hidden, "--heads", 16, "--vocab",
         vocab, "--seq", 16, "--batch", 2, "--dtype", "f32", "-o", model)
    largest = vocab * hidden * 4
    for plan in ["one", "dp=2,zero=3"]:
        exe, ckpt, out = tmp / f"big-{plan}", tmp / f"big-{plan}-ckpt", tmp / f"big-{plan}-hf"
        colo("compile", model, "--train", "loss=lm,optimizer=adamw", "-o", exe,
             *([] if plan == "one" else ["--plan", plan]))
        colo("run", exe, "--steps", 0, "--data", "synthetic", "-o", tmp / "w.safetensors",
             "--checkpoint-dir", ckpt)
        base, _ = peak_rss("checkpoint", "show", ckpt)
        peak, seconds = peak_rss("checkpoint", "export", ckpt, "-o", out)
        size = sum(f.stat().st_size for f in out.iterdir())
        print(f"export {plan:12s} {layers} layers, {size / 1e9:.2f} GB in {seconds:.2f} s "
              f"({size / 1e9 / seconds:.2f} GB/s); peak resident {peak / 1e6:.0f} MB, "
              f"{(peak - base) / 1e6:.0f} MB more than 'colo checkpoint show' = "
              f"{(peak - base) / largest:.2f}x the largest tensor ({largest / 1e6:.0f} MB)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--export-gb", type=float, default=1.0)
    parser.add_argument("--skip-kills", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        export(tmp, args.export_gb)
        if not args.skip_kills:
            kill_trials(tmp, args.trials)


if __name__ == "__main__":
    main()
