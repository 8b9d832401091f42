#!/usr/bin/env python3
"""Offload over a throttled link: measured against predicted.

    python bench/offload_bench.py [--link-bandwidth 16] [--steps 8] [--layers 4] [--hidden 256]

The GPT-2 of bench/calibrate_plans.py (4 layers, hidden 256, vocabulary
4096, 8 x 128 tokens, AdamW) is compiled for one rank and for dp=2, each
plain, with offload=optimizer, with offload=optimizer+params (chunks of
--chunk-mb MiB, 4 by default: several chunks, each fetched for the forward
and again for the backward) and with offload=activations (in chunks of the
same size), and run with `colo run --link-bandwidth
GB/s --profile` (the CPU device's copy queue throttled to a PCIe-like
speed). Printed per plan: the median step time; the copies' exposed and busy
time and bytes per step (`--profile`); what `colo plan --explain PLAN
--json` predicts for the same plan on `local-cpu:1xN` with that link
(`links.pcie_gbs`), in all and for the offload term; what the cost model
gives the compiled program's own steps (`colo run --timeline`'s
"predicted on local-cpu", with the run's link); and the errors. The
offload term is also compared with what offloading measurably added to the
plain plan's step. Nothing asserts: timings on a shared machine are noisy."""
import argparse
import json
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibrate_plans import add_gpt2_args, colo_cmd, gpt2_model, planner_plan  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PLANS = [("single", "", 1), ("dp=2", "dp=2", 2)]


def colo(*args):
    return colo_cmd(ROOT / "build" / "bin" / "colo", *args)


def measure(work, model, label, plan, offload, a):
    exe = work / f"{label}-{offload}"
    full = ",".join(p for p in (plan, f"offload={offload}") if p)
    colo("compile", model, "-o", exe, "--train", "loss=lm,optimizer=adamw", "--plan", full,
         "--chunk-mb", a.chunk_mb)
    out = colo("run", exe, "--steps", a.steps, "--data", "synthetic", "--no-snapshot",
               "--link-bandwidth", a.link_bandwidth, "--profile", exe / "trace.json",
               "--timeline", exe / "memory.svg", "-o", exe / "w.safetensors")
    times = [float(t) / 1e3 for t in re.findall(r"^step \d+/\d+ .*\((\d+(?:\.\d+)?) ms\)", out,
                                                re.M)]
    m = {"step_s": statistics.median(times[1:]), "exposed_s": 0.0, "busy_s": 0.0, "bytes": 0,
         "compiled_s": float(re.search(r"predicted on local-cpu: ([\d.]+) ms", out)[1]) / 1e3}
    copies = re.search(r"copies between device and host: ([\d.]+) (m?s) exposed of ([\d.]+) "
                       r"(m?s) copying .* ([\d.]+) MB per step", out)
    if copies:
        unit = lambda v, u: float(v) / (1e3 if u == "ms" else 1)
        m["exposed_s"] = unit(copies[1], copies[2]) / a.steps
        m["busy_s"] = unit(copies[3], copies[4]) / a.steps
        m["bytes"] = float(copies[5]) * 1e6
    return m


def predict(work, mlir, label, ranks, offload, a):
    # One measurement of the machine per rank count (each colo process
    # would measure local-cpu again), with the link's bandwidth.
    spec = work / f"cluster-{ranks}.json"
    if not spec.exists():
        cluster = json.loads(colo("cluster", "show", f"local-cpu:1x{ranks}", "--json"))
        cluster["links"]["pcie_gbs"] = a.link_bandwidth
        spec.write_text(json.dumps(cluster))
    plan = planner_plan(label, ranks, a.batch) + f",offload={offload}"
    p = json.loads(colo("plan", mlir, "--cluster", spec, "--explain", plan, "--json"))
    return {"step_s": p["step_time_s"], "offload_s": p["time_s"].get("offload", 0.0)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--link-bandwidth", type=float, default=16.0, help="GB/s")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--chunk-mb", type=float, default=4.0)
    add_gpt2_args(ap)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as t:
        work = Path(t)
        model, mlir, params = gpt2_model(ROOT / "build" / "bin" / "colo", work, a)
        print(f"GPT-2, {params / 1e6:.1f}M parameters, link {a.link_bandwidth:g} GB/s, "
              f"{a.steps} steps")
        print(f"{'plan':<8} {'offload':<16} {'meas ms':>8} {'pred ms':>8} {'err':>7}   "
              f"{'program ms':>10} {'err':>7}   "
              f"{'copies MB':>9} {'busy ms':>8} {'exposed ms':>10}   "
              f"{'offload added':>13} {'pred term':>9}")
        for label, plan, ranks in PLANS:
            base = None
            for offload in ("none", "optimizer", "optimizer+params", "activations"):
                m = measure(work, model, label, plan, offload, a)
                p = predict(work, mlir, label, ranks, offload, a)
                err = 100 * (p["step_s"] - m["step_s"]) / m["step_s"]
                err_program = 100 * (m["compiled_s"] - m["step_s"]) / m["step_s"]
                added = "" if base is None else f"{(m['step_s'] - base) * 1e3:12.1f}"
                term = "" if offload == "none" else f"{p['offload_s'] * 1e3:8.1f}"
                print(f"{label:<8} {offload:<16} {m['step_s'] * 1e3:8.1f} {p['step_s'] * 1e3:8.1f} "
                      f"{err:+6.1f}%   {m['compiled_s'] * 1e3:10.1f} {err_program:+6.1f}%   "
                      f"{m['bytes'] / 1e6:9.2f} {m['busy_s'] * 1e3:8.1f} "
                      f"{m['exposed_s'] * 1e3:10.1f}   {added:>13} {term:>9}", flush=True)
                base = m["step_s"] if base is None else base


if __name__ == "__main__":
    main()
