#!/usr/bin/env python3
"""Compile time and peak memory of `colo compile` on models of real size.

    python bench/compile_bench.py [--only gpt2-small,densenet121,gpt3-175b,scaling] [--timeout 600]

For each model and plan it prints the wall time and the peak resident memory
of the `colo compile` process, with the targets of issue 18 beside them:
GPT-2 small (the `colo model` preset, 124M parameters) at most 5 s and 1 GB;
DenseNet-121 (torchvision, exported to ONNX) under dp=2 at most 1.5x its
one-rank compile; GPT-3 175B (`colo model gpt --preset gpt3-175b`) under
dp=16,tp=8,pp=8 at most 60 s and 4 GB. A compile that fails or passes the
timeout is reported as such, with the last line it printed.

`scaling` checks that every pass is linear in the number of ops: it compiles
a small GPT with L and 2L layers under a plan that runs every splitting pass
(`colo compile --timing`) and prints each pass's time at both sizes and their
ratio: about 2 for a pass linear in the ops, about 1 for one that sees each
distinct block once, about 4 for a quadratic one."""
import re
import argparse
import pathlib
import subprocess
import sys
import tempfile
import time
import warnings

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import train_bench  # noqa: E402  (the colo binary)

COLO = str(train_bench.COLO)


def measured(args, timeout):
    """Runs `args` under /usr/bin/time (the peak of the process itself: a
    child forked from this Python would count its pages too); returns
    (seconds, peak resident bytes, error or None)."""
    with tempfile.NamedTemporaryFile("r") as stats:
        start = time.perf_counter()
        try:
            proc = subprocess.run(["/usr/bin/time", "-o", stats.name, "-f", "%M", *map(str, args)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return time.perf_counter() - start, 0, f"timed out after {timeout:g} s"
        seconds = time.perf_counter() - start
        lines = stats.read().split()
        peak = int(lines[-1]) * 1024 if lines and lines[-1].isdigit() else 0
    err = [line for line in proc.stderr.splitlines() if "Command exited" not in line]
    return seconds, peak, (err[-1] if err else "failed") if proc.returncode else None


def report(name, plan, result, target=""):
    seconds, peak, error = result
    what = f"{name:14s} {plan or 'one rank':18s} {seconds:7.1f} s  {peak / 2**30:6.2f} GiB"
    print(what + (f"  {target}" if target else "") + (f"  FAILED: {error}" if error else ""),
          flush=True)


def compile_args(model, out, plan):
    return [COLO, "compile", str(model), "-o", str(out), "--train", "loss=lm,optimizer=adamw"] + \
        (["--plan", plan] if plan else [])


TIMING_LINE = re.compile(r"^\s*([0-9.]+) \(\s*[0-9.]+%\)\s+(\S.*)$")


def pass_times(args, timeout):
    """Wall seconds per timer name (summed where a name repeats) of a
    `colo compile --timing` run."""
    proc = subprocess.run([*map(str, args), "--timing"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, timeout=timeout, check=True)
    times = {}
    for line in proc.stderr.splitlines():
        m = TIMING_LINE.match(line)
        if m and not m.group(2).startswith("(A)"):
            times[m.group(2)] = times.get(m.group(2), 0.0) + float(m.group(1))
    return times


def scaling(d, timeout, layers=24, plan="dp=2,tp=2,sp,micro=2"):
    runs = []
    for n in (layers, 2 * layers):
        m = d / f"gpt{n}.mlir"
        subprocess.run([COLO, "model", "gpt", "--layers", str(n), "--hidden", "64", "--heads", "4",
                        "--vocab", "256", "--seq", "32", "--batch", "8", "--dtype", "f32",
                        "-o", m], check=True)
        runs.append(pass_times(compile_args(m, d / f"s{n}", plan), timeout))
    print(f"scaling: {plan}, {layers} vs {2 * layers} layers (time per pass, ratio; "
          "2 = linear in the ops)")
    worst = (0.0, "")
    for name, t1 in runs[0].items():
        t2 = runs[1].get(name)
        if t2 is None or t2 < 0.002:  # below the timer's noise
            continue
        ratio = t2 / max(t1, 1e-6)
        if name != "Total Execution Time":
            worst = max(worst, (ratio, name))
        print(f"  {name[:44]:44s} {t1 * 1e3:8.1f} ms {t2 * 1e3:8.1f} ms  {ratio:5.2f}x")
    print(f"scaling: largest ratio {worst[0]:.2f}x ({worst[1]}); "
          "above 3 would be superlinear", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="gpt2-small,densenet121,gpt3-175b,scaling")
    p.add_argument("--timeout", type=float, default=600)
    a = p.parse_args()
    only = a.only.split(",")
    with tempfile.TemporaryDirectory() as d:
        d = pathlib.Path(d)
        if "gpt2-small" in only:
            m = d / "gpt2-small.mlir"
            subprocess.run([COLO, "model", "gpt", "--preset", "gpt2-small", "-o", m], check=True)
            for plan in ("", "tp=2"):
                report("gpt2-small", plan, measured(compile_args(m, d / "g", plan), a.timeout),
                       "target: <= 5 s, <= 1 GiB")
        if "densenet121" in only:
            import torch
            import torchvision
            m = d / "densenet121.onnx"
            net = torchvision.models.densenet121().train()
            warnings.filterwarnings("ignore")  # the exporter's notes on every batch norm
            torch.onnx.export(net, (torch.randn(2, 3, 64, 64),), m, dynamo=False,
                              training=torch.onnx.TrainingMode.TRAINING,
                              do_constant_folding=False, input_names=["x"], opset_version=17)
            args = lambda plan: [COLO, "compile", str(m), "-o", str(d / "dn"), "--train",
                                 "loss=cross-entropy"] + (["--plan", plan] if plan else [])
            one = measured(args(""), a.timeout)
            report("densenet121", "", one)
            dp = measured(args("dp=2"), a.timeout)
            report("densenet121", "dp=2", dp,
                   f"{dp[0] / one[0]:.2f}x one rank (target: <= 1.5x)")
        if "gpt3-175b" in only:
            m = d / "gpt3.mlir"
            # The global batch of the plan: dp x microbatches, one sample each.
            subprocess.run([COLO, "model", "gpt", "--preset", "gpt3-175b", "--batch", "128",
                            "-o", m], check=True)
            report("gpt3-175b", "dp=16,tp=8,pp=8",
                   measured(compile_args(m, d / "g3", "dp=16,tp=8,pp=8,micro=8"), a.timeout),
                   "target: <= 60 s, <= 4 GiB")
        if "scaling" in only:
            scaling(d, a.timeout)


if __name__ == "__main__":
    main()
