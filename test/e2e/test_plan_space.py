"""A sample of the plans the search emits, run against one rank.

bench/plan_space_bench.py asks `colo plan --top` for every plan on 4 devices
of one node, keeps one per shape and runs them; all of them take hours on 2
cores, so the suite runs a deterministic sample per family (PlanSpaceTest
compiles every shape). Each must train 2 steps within 1e-5 of one rank's
losses: the sample once held pp=2 x ulysses=2, whose first stage drew other
synthetic ids than its last."""
import re
import subprocess
import sys

import pytest

from conftest import BIN, ROOT

SAMPLE = 6


@pytest.mark.parametrize("family", ["gpt", "llama"])
def test_sampled_plans_match_one_rank(family):
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "plan_space_bench.py"),
                           "--family", family, "--sample", str(SAMPLE), "--colo",
                           str(BIN / "colo")], capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr
    summary = re.search(r"^(\d+) of (\d+) plans within 1e-5", proc.stdout, re.M)
    assert summary and summary[1] == summary[2] == str(SAMPLE), proc.stdout
