#!/usr/bin/env python3
"""Data-parallel gradient all-reduces overlapped with the backward, and not:
GPT-2 (the parallel bench's model: 6 layers, hidden 256, 8 heads, seq 128,
vocab 8192, global batch 8) under dp=2 on this machine's cores; or, with
`--plan tp2d=2 --np 4`, SUMMA's broadcasts of the next step's blocks
overlapped with the current product, and not.

    python bench/overlap_bench.py [--steps 5] [--rounds 3] [--layers 6] [--plan dp=2 --np 2]

The same executable runs with overlap (the default) and with --no-overlap, in
alternating rounds, profiled. Each run prints, from `colo run --profile`, the
median step time and the communication the steps waited for (exposed: time in
collective and wait steps, and in advancing the all-reduces between steps)
against the time the all-reduces were in flight. The bits of the weights are
the same either way; the script checks it."""
import argparse
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import parallel_bench  # noqa: E402  (the batches and the export)
import train_bench  # noqa: E402  (the colo binary)


def colo_run(exe, data, steps, overlap, weights, ranks):
    args = [str(train_bench.COLO), "run", str(exe), "--steps", str(steps + 2),
            "--data", str(data), "--np", str(ranks), "-o", str(weights),
            "--profile", str(exe / "trace.json")]
    out = subprocess.run(args + ([] if overlap else ["--no-overlap"]), check=True,
                         capture_output=True, text=True).stdout
    ms = [float(m) for m in re.findall(r"\((\d+(?:\.\d+)?) ms\)", out)]
    comm = re.search(r"communication: ([\d.]+) ms exposed of ([\d.]+) ms in flight", out)
    if len(ms) < steps + 2 or not comm:
        raise RuntimeError(f"colo run printed no step times or communication line:\n{out}")
    iterations = steps + 2  # the profile's totals are over every step
    return (statistics.median(ms[2:]) / 1e3, float(comm.group(1)) / 1e3 / iterations,
            float(comm.group(2)) / 1e3 / iterations)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--plan", default="dp=2")
    p.add_argument("--np", type=int, default=2, help="the plan's ranks")
    p.add_argument("--bucket-mb", type=float, default=None,
                   help="gradient MiB per all-reduce (default: colo compile's)")
    args = p.parse_args()
    ids = parallel_bench.batches(args.steps)
    runs = {True: [], False: []}
    with tempfile.TemporaryDirectory() as d:
        work = pathlib.Path(d)
        onnx_path, data = parallel_bench.export(work, args.layers, ids)
        exe = work / "exe"
        subprocess.run([str(train_bench.COLO), "compile", str(onnx_path), "-o", str(exe),
                        "--plan", args.plan, "--train",
                        "loss=lm,optimizer=adamw,lr=1e-4,weight-decay=0.01"]
                       + ([] if args.bucket_mb is None else ["--bucket-mb", str(args.bucket_mb)]),
                       check=True, stdout=subprocess.DEVNULL)
        for _ in range(args.rounds):
            for overlap in (True, False):
                weights = work / f"w-{overlap}.safetensors"
                runs[overlap].append(colo_run(exe, data, args.steps, overlap, weights, args.np))
        same = (work / "w-True.safetensors").read_bytes() == (work / "w-False.safetensors").read_bytes()
    print(f"GPT-2 {args.layers} layers, hidden 256, 8 heads, seq 128, vocab 8192, global batch "
          f"{parallel_bench.GLOBAL_BATCH}; {args.plan}, buckets of "
          f"{'the default size' if args.bucket_mb is None else f'{args.bucket_mb:g} MiB'}; median of {args.steps} steps, {args.rounds} rounds; "
          f"per step")
    for overlap in (True, False):
        step, exposed, flight = (statistics.median(r[i] for r in runs[overlap]) for i in range(3))
        print(f"  {'overlap' if overlap else 'no overlap':10s}  step {step * 1e3:7.1f} ms   "
              f"communication exposed {exposed * 1e3:6.1f} ms of {flight * 1e3:6.1f} ms in flight"
              f"   rounds: {', '.join(f'{r[0] * 1e3:.0f}' for r in runs[overlap])}")
    on, off = (statistics.median(r[1] for r in runs[o]) for o in (True, False))
    print(f"  exposed with overlap / communication without = {on / off:.2f}; "
          f"weights {'bit-identical' if same else 'DIFFER'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
