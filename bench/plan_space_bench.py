#!/usr/bin/env python3
"""Every plan the search can emit, run: each against one rank.

    python bench/plan_space_bench.py [--devices 4] [--family gpt] [--sample N] [--steps 2]

Builds a synthetic 2-layer model (`colo model`, float32, 8 sequences of 16
tokens), asks the search for every plan it would emit on `--devices` GPUs of
one node (`colo plan --top` all of them, on an A100 preset without fused
attention: the widest plan space), keeps one plan per shape (the microbatch
size aside, one or more microbatches), and for each (or a deterministic
sample of `--sample` of them) compiles the step and runs `--steps` steps on
CPU ranks from the same initial weights and synthetic data, comparing the
losses with one rank's. Printed per plan: the largest relative loss
difference, or the error that stopped it; then how many ran within 1e-5.
PlanSpaceTest (test/unit) compiles every shape in the suite; running all of
them takes about an hour on 2 cores, hence a benchmark. Nothing asserts."""
import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAIN = "loss=lm,optimizer=adamw,lr=1e-3"
COLO = str(ROOT / "build" / "bin" / "colo")


def colo(*args, check=True):
    r = subprocess.run([COLO, *map(str, args)],
                       capture_output=True, text=True, timeout=900)
    if check and r.returncode != 0:
        raise RuntimeError((r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1])
    return r.stdout


def losses(out):
    return [float(v) for v in re.findall(r"^step \d+/\d+\s+loss ([-\d.e+]+)", out, re.M)]


def shape(plan):
    """The plan without its microbatch size, microbatches as one or several."""
    plan = re.sub(r",mbs=\d+", "", plan)
    return re.sub(r"micro=(\d+)", lambda m: "micro=" + ("1" if m[1] == "1" else "n"), plan)


def main():
    global COLO
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--devices", type=int, default=4)
    ap.add_argument("--family", default="gpt", choices=["gpt", "llama"])
    ap.add_argument("--sample", type=int, default=0, help="run this many plans (0: all)")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--plan", action="append", help="run this plan (repeatable) instead")
    ap.add_argument("--colo", default=COLO,
                    help="the colo binary (a copy lets the build go on meanwhile)")
    a = ap.parse_args()
    COLO = a.colo
    with tempfile.TemporaryDirectory() as t:
        work = Path(t)
        model = work / "model.mlir"
        colo("model", a.family, "--layers", 2, "--hidden", 32, "--heads", 4, "--vocab", 256,
             "--seq", 16, "--batch", 8, "--dtype", "f32", "-o", model)
        cluster = json.loads(colo("cluster", "show", f"a100-80g:1x{a.devices}", "--json"))
        cluster["device"]["fused_attention"] = 0
        (work / "cluster.json").write_text(json.dumps(cluster))
        found = json.loads(colo("plan", model, "--cluster", work / "cluster.json",
                                "--global-batch", 8, "--top", 1000000, "--offload-activations",
                                "--json"))
        shapes = {}
        for p in found["plans"]:
            shapes.setdefault(shape(p["plan"]), p["plan"])
        plans = sorted(shapes.values())
        if a.sample:
            plans = sorted(random.Random(0).sample(plans, min(a.sample, len(plans))))
        if a.plan:
            plans = a.plan
        print(f"{a.family}: {len(found['plans'])} plans searched, {len(shapes)} shapes, "
              f"running {len(plans)}", flush=True)
        run = ("--steps", a.steps, "--data", "synthetic", "--threads", 1, "--no-snapshot")
        colo("compile", model, "--train", TRAIN, "-o", work / "one")
        want = losses(colo("run", work / "one", *run, "-o", work / "one.safetensors"))
        within = 0
        for i, plan in enumerate(plans):
            exe = work / f"p{i}"
            try:
                colo("compile", model, "--train", TRAIN, "--plan", plan, "-o", exe)
                got = losses(colo("run", exe, *run, "-o", exe / "w.safetensors"))
                err = max(abs(g - w) / abs(w) for g, w in zip(got, want))
                ok = len(got) == len(want) and err <= 1e-5
                within += ok
                print(f"{plan:<90} losses {err:.1e}{'' if ok else '  OVER'}", flush=True)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(f"{plan:<90} FAILED: {e}", flush=True)
        print(f"\n{within} of {len(plans)} plans within 1e-5 of one rank's losses")


if __name__ == "__main__":
    sys.exit(main())
