#!/usr/bin/env python3
"""The pipeline bubble of 1F1B and zero-bubble H1, measured and predicted:
GPT-2 (the parallel bench's: hidden 256, 8 heads, seq 128, vocab 8192, global
batch 8) cut into pp stages over `micro` microbatches.

    python bench/pipeline_bubble_bench.py [--pp 4] [--micro 8] [--layers 8]
                                          [--steps 8] [--rounds 3]

Both schedules compile from the same export and run in alternating rounds
under `colo run --np pp --profile`, which prints each rank's time in
communication steps and waits per step after the first: a pipeline rank's
waits for its neighbours, the bubble it idles through (plus the messages'
own time). The script prints, per rank, the median over the rounds for each
schedule and their ratio, the median step times, and the cost model's
bubble for each plan (`colo plan --explain` on local-cpu:1xpp, the time a
rank idles per step) beside the ranks' mean wait. The cost model's bubble
assumes stages of equal time; the waits also hold what unequal stages add,
the same under both schedules, so the script also compares the wait zb-h1
removes with the bubble the model says it removes.

The measurement means what it says only where each rank has cores of its
own: with more ranks than cores, a rank that waits lends its core to the
others, and the waits measure the machine's sharing as much as the
schedule."""
import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import parallel_bench  # noqa: E402  (the batches and the export)
import train_bench  # noqa: E402  (the colo binary)

SCHEDULES = ("1f1b", "zb-h1")
TRAIN = "loss=lm,optimizer=adamw,lr=1e-4,weight-decay=0.01"


def seconds(text):
    value, unit = re.fullmatch(r"([\d.]+) (ms|s|us)", text).groups()
    return float(value) * {"s": 1, "ms": 1e-3, "us": 1e-6}[unit]


def run(exe, data, steps, ranks):
    """(median step time after two warm-up steps, each rank's waits per step)."""
    out = subprocess.run([str(train_bench.COLO), "run", str(exe), "--np", str(ranks),
                          "--steps", str(steps + 2), "--data", str(data),
                          "--profile", str(exe / "trace.json")],
                         check=True, capture_output=True, text=True).stdout
    steps_ms = [float(m) for m in re.findall(r"^step \d+/\d+.*\((\d+(?:\.\d+)?) ms\)", out,
                                             re.M)]
    waits = re.search(r"^waiting in communication per step after the first: (.*)$", out, re.M)
    if len(steps_ms) < steps + 2 or not waits:
        raise RuntimeError(f"colo run printed no step times or waits:\n{out}")
    per_rank = [seconds(m) for m in re.findall(r"rank \d+ ([\d.]+ (?:ms|s|us))",
                                               waits.group(1))]
    return statistics.median(steps_ms[2:]) / 1e3, per_rank


def predicted_bubble(onnx_path, plan, ranks):
    out = subprocess.run([str(train_bench.COLO), "plan", str(onnx_path), "--cluster",
                          f"local-cpu:1x{ranks}", "--explain", plan, "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["time_s"]["bubble"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pp", type=int, default=4)
    p.add_argument("--micro", type=int, default=8)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    if parallel_bench.GLOBAL_BATCH % args.micro:
        p.error(f"--micro must divide the global batch ({parallel_bench.GLOBAL_BATCH})")
    ids = parallel_bench.batches(args.steps)
    plans = {s: f"pp={args.pp},micro={args.micro},schedule={s}" for s in SCHEDULES}
    waits = {s: [] for s in SCHEDULES}
    steps = {s: [] for s in SCHEDULES}
    with tempfile.TemporaryDirectory() as d:
        work = pathlib.Path(d)
        onnx_path, data = parallel_bench.export(work, args.layers, ids)
        for s, plan in plans.items():
            subprocess.run([str(train_bench.COLO), "compile", str(onnx_path), "-o",
                            str(work / s), "--plan", plan, "--train", TRAIN],
                           check=True, stdout=subprocess.DEVNULL)
        bubble = {s: predicted_bubble(onnx_path, plan, args.pp) for s, plan in plans.items()}
        for r in range(args.rounds):
            for s in SCHEDULES:
                step, per_rank = run(work / s, data, args.steps, args.pp)
                steps[s].append(step)
                waits[s].append(per_rank)
                print(f"round {r + 1} {s}: {step * 1e3:.1f} ms per step, waits " +
                      ", ".join(f"{w * 1e3:.1f}" for w in per_rank) + " ms", flush=True)

    median = {s: [statistics.median(w[k] for w in waits[s]) for k in range(args.pp)]
              for s in SCHEDULES}
    print(f"\nGPT-2, {args.layers} layers, pp={args.pp}, {args.micro} microbatches, "
          f"{os.cpu_count()} cores ({args.rounds} rounds, medians)")
    print("| rank | 1f1b wait (ms/step) | zb-h1 wait (ms/step) | zb-h1 / 1f1b |")
    print("|---|---|---|---|")
    for k in range(args.pp):
        a, b = median["1f1b"][k], median["zb-h1"][k]
        print(f"| {k} | {a * 1e3:.1f} | {b * 1e3:.1f} | {b / a if a else float('nan'):.2f} |")
    for s in SCHEDULES:
        mean = statistics.mean(median[s])
        print(f"{s}: step {statistics.median(steps[s]) * 1e3:.1f} ms; mean wait "
              f"{mean * 1e3:.1f} ms, predicted bubble {bubble[s] * 1e3:.1f} ms "
              f"({(bubble[s] - mean) / mean * 100:+.1f}%)")
    mean = {s: statistics.mean(median[s]) for s in SCHEDULES}
    print(f"zb-h1's mean wait is {mean['zb-h1'] / mean['1f1b']:.2f} of 1f1b's (predicted "
          f"bubble {bubble['zb-h1'] / bubble['1f1b']:.2f})")
    # What the stages' imbalance adds to the waits is the same in both
    # schedules; their difference is the bubble zb-h1 removes.
    removed, predicted = mean["1f1b"] - mean["zb-h1"], bubble["1f1b"] - bubble["zb-h1"]
    print(f"wait removed by zb-h1: {removed * 1e3:.1f} ms per step, predicted "
          f"{predicted * 1e3:.1f} ms ({(predicted - removed) / removed * 100:+.1f}%)")


if __name__ == "__main__":
    main()
