"""A sample of the plans the search emits, run against one rank.

bench/plan_space_bench.py asks `colo plan --top` for every plan on 4 devices
of one node, keeps one per shape and runs them; all of them take hours on 2
cores, so the suite runs a deterministic sample per family (PlanSpaceTest
compiles every shape). Each must train 2 steps within 1e-5 of one rank's
losses: the sample once held pp=2 x ulysses=2, whose first stage drew other
synthetic ids than its last."""
import json
import re
import subprocess
import sys

import pytest

from conftest import BIN, ROOT, run_colo

SAMPLE = 6


@pytest.mark.parametrize("family", ["gpt", "llama"])
def test_sampled_plans_match_one_rank(family):
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "plan_space_bench.py"),
                           "--family", family, "--sample", str(SAMPLE), "--colo",
                           str(BIN / "colo")], capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr
    summary = re.search(r"^(\d+) of (\d+) plans within 1e-5", proc.stdout, re.M)
    assert summary and summary[1] == summary[2] == str(SAMPLE), proc.stdout


def test_a_budget_plan_from_the_search_compiles_from_its_file(tmp_path):
    """On a device where keeping every activation does not fit and
    recomputing every layer does, the search picks recompute=budget; its plan
    file records the device memory it was fitted to, so `colo compile --plan`
    builds it without --device-memory, and it trains as the plain step."""
    model, cluster = tmp_path / "m.mlir", tmp_path / "c.json"
    run_colo("model", "gpt", "--layers", 4, "--hidden", 64, "--heads", 4, "--vocab", 256,
             "--seq", 64, "--batch", 16, "--dtype", "f32", "-o", model)
    spec = json.loads(run_colo("cluster", "show", "a100-80g:1x1", "--json").stdout)
    spec["device"]["fused_attention"] = 0
    cluster.write_text(json.dumps(spec))

    def total(recompute):
        out = run_colo("plan", model, "--cluster", cluster, "--global-batch", 16, "--explain",
                       f"dp=1,mbs=16,micro=1,recompute={recompute}", "--json").stdout
        return json.loads(out)["memory_gib"]["total"] * 2**30

    spec["device"]["memory_gb"] = (total("none") + total("full")) / 2 / 0.92 / 1e9
    cluster.write_text(json.dumps(spec))
    run_colo("plan", model, "--cluster", cluster, "--global-batch", 16, "-o", tmp_path / "p.json")
    plan = json.loads((tmp_path / "p.json").read_text())
    assert plan["recompute"] == "budget" and plan["device_memory"] > 0, plan

    steps = ("--steps", 2, "--data", "synthetic", "--threads", 1, "--no-snapshot")
    train = ("--train", "loss=lm,optimizer=adamw,lr=1e-3")
    run_colo("compile", model, *train, "--plan", tmp_path / "p.json", "-o", tmp_path / "b")
    run_colo("compile", model, *train, "-o", tmp_path / "one")
    got = re.findall(r"loss ([-\d.e+]+)", run_colo("run", tmp_path / "b", *steps).stdout)
    want = re.findall(r"loss ([-\d.e+]+)", run_colo("run", tmp_path / "one", *steps).stdout)
    assert len(got) == 2 and got == want
