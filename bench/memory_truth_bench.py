#!/usr/bin/env python3
"""Memory truth: the device memory a run holds against what the planner predicts.

    python bench/memory_truth_bench.py [--steps 2] [--layers 4] [--hidden 256]

The GPT-2 of bench/calibrate_plans.py (4 layers, hidden 256, vocabulary
4096, 8 x 128 tokens, AdamW) is compiled for plans mixing the memory
policies (one rank, dp=2, tp=2 and a 1F1B pipeline pp=2 with 2
microbatches; plain, recompute=selective, recompute=full,
offload=optimizer, offload=optimizer+params and offload=activations) and run --steps steps with
`--device-memory 64G` (so that `colo run` reports the device pool's peak
per rank: the arena, the state and inputs, the operand scratch). Printed
per plan: that measured peak, what the compiled program plans (`colo run`'s
`memory:` line: arena plus state and inputs), and the two figures of `colo
plan --explain PLAN --train ... --json` on `local-cpu:1xN`: the cost
model's analytic prediction per device (`memory_gib.total`) and the step
it compiles for the plan (`compiled.memory_gib.total`: the passes'
decisions and the memory plan, with the operand scratch), each with its
error against the measured peak. Nothing asserts; the issue's target is
within 5% for at least 10 plans."""
import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibrate_plans import add_gpt2_args, colo_cmd, gpt2_model, planner_plan  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PLANS = [("single", "", 1), ("dp=2", "dp=2", 2), ("tp=2", "tp=2", 2),
         ("pp=2,micro=2", "pp=2,micro=2", 2)]
POLICIES = ["", "recompute=selective", "recompute=full", "offload=optimizer",
            "offload=optimizer+params", "offload=activations"]
TRAIN = "loss=lm,optimizer=adamw"


def colo(*args):
    return colo_cmd(ROOT / "build" / "bin" / "colo", *args)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=2)
    add_gpt2_args(ap)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as t:
        work = Path(t)
        model, mlir, params = gpt2_model(ROOT / "build" / "bin" / "colo", work, a)
        clusters = {}
        print(f"GPT-2, {params / 1e6:.1f}M parameters; MB of 10^6 bytes per rank (the largest)")
        print(f"{'plan':<14} {'policy':<24} {'measured':>9} {'program':>8} {'err':>7} "
              f"{'analytic':>8} {'err':>7} {'compiled':>8} {'err':>7}")
        errors, compiled_errors = [], []
        for label, plan, ranks in PLANS:
            if ranks not in clusters:
                clusters[ranks] = work / f"cluster-{ranks}.json"
                clusters[ranks].write_text(colo("cluster", "show", f"local-cpu:1x{ranks}",
                                                "--json"))
            for policy in POLICIES:
                full = ",".join(p for p in (plan, policy) if p) or "recompute=none"
                exe = work / f"{label}-{policy or 'plain'}"
                colo("compile", model, "-o", exe, "--train", TRAIN, "--plan", full)
                out = colo("run", exe, "--steps", a.steps, "--data", "synthetic",
                           "--no-snapshot", "--device-memory", "64G",
                           "-o", exe / "w.safetensors")
                measured = float(re.search(r"device memory: ([\d.]+) MB at most", out)[1])
                program = float(re.search(r"memory: ([\d.]+) MB planned", out)[1])
                extra = "," + policy if policy else ""
                p = json.loads(colo("plan", mlir, "--cluster", clusters[ranks], "--explain",
                                    planner_plan(label, ranks, a.batch) + extra, "--train",
                                    TRAIN, "--json"))
                predicted = p["memory_gib"]["total"] * 2**30 / 1e6
                compiled = p["compiled"]["memory_gib"]["total"] * 2**30 / 1e6

                def err(x):
                    return 100 * (x - measured) / measured
                errors.append(abs(err(predicted)))
                compiled_errors.append(abs(err(compiled)))
                print(f"{label:<14} {policy or 'plain':<24} {measured:9.1f} {program:8.1f} "
                      f"{err(program):+6.1f}% {predicted:8.1f} {err(predicted):+6.1f}% "
                      f"{compiled:8.1f} {err(compiled):+6.1f}%", flush=True)
        for what, e in (("analytic prediction", errors), ("compiled step", compiled_errors)):
            print(f"{what} within 5% of the measured peak: {sum(x <= 5 for x in e)} of "
                  f"{len(e)} plans; mean absolute error {sum(e) / len(e):.1f}%")


if __name__ == "__main__":
    main()
