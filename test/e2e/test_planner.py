"""colo model / cluster / plan from the command line: the search result, the
plan file round trip, infeasible requests and bad cluster files."""
import json

import pytest

from conftest import ROOT, run_colo


def plan_json(*args):
    return json.loads(run_colo("plan", *args, "--json").stdout)


def test_gpt3_175b_on_1024_a100():
    """The best plan's MFU lies in the range published runs reach (35-60%)."""
    r = plan_json("gpt3-175b", "--cluster", "a100-80g:128x8", "--global-batch", "1536")
    best = r["plans"][0]
    assert 0.35 <= best["mfu"] <= 0.60, best
    assert best["fits"] and best["memory_gib"]["total"] <= 80
    assert r["plans"] == plan_json("gpt3-175b", "--cluster", "a100-80g:128x8",
                                   "--global-batch", "1536")["plans"]


def test_the_search_says_why_its_best_beats_the_runner_up():
    """The runner-up's step-time terms minus the best's, the ones that
    differ, add up to the difference of their step times, in the JSON and
    in the table's footer."""
    args = ("gpt3-175b", "--cluster", "a100-80g:128x8", "--global-batch", "1536", "--top", "3")
    r = plan_json(*args)
    versus = r["versus_runner_up"]
    assert versus["plan"] == r["plans"][1]["plan"]
    delta = r["plans"][1]["step_time_s"] - r["plans"][0]["step_time_s"]
    assert versus["step_time_s"] == pytest.approx(delta) and delta >= 0
    assert sum(versus["time_s"].values()) == pytest.approx(delta, abs=1e-9)
    assert all(v != 0 for v in versus["time_s"].values())
    text = run_colo("plan", *args).stdout
    assert f"faster than #2 ({r['plans'][1]['plan']}):" in text


def test_plan_file_round_trip(tmp_path):
    out = tmp_path / "best.json"
    r = plan_json("gpt2-small", "--cluster", "a100-80g", "--global-batch", "64",
                  "-o", out)
    explained = plan_json("gpt2-small", "--cluster", "a100-80g", "--explain", out)
    assert explained["plan"] == r["plans"][0]["plan"]
    assert explained["step_time_s"] == pytest.approx(r["plans"][0]["step_time_s"])


def test_plan_of_an_imported_model(exported, tmp_path):
    """Imported models are planned from their IR, as synthetic ones."""
    path, _ = exported("gpt2", "torchscript")
    r = plan_json(path, "--cluster", "a100-80g:1x8", "--global-batch", "16")
    assert r["plans"] and r["parameters"] == 118528
    mlir = tmp_path / "gpt2.mlir"
    run_colo("import", path, "-o", mlir)
    assert plan_json(mlir, "--cluster", "a100-80g:1x8", "--global-batch", "16")[
        "plans"] == r["plans"]


def test_infeasible_request_is_explained():
    proc = run_colo("plan", "gpt3-175b", "--cluster", "rtx3090:1x8", "--global-batch",
                    "1536", "--no-offload", check=False)
    assert proc.returncode == 1
    assert "no plan fits" in proc.stdout
    assert "binding constraint is optimizer state" in proc.stdout
    assert "would fit with" in proc.stdout


@pytest.mark.parametrize("content,words", [
    ("{not json", ["invalid JSON"]),
    ('{"preset": "a100-80g", "bogus": 1}', ["unknown key 'bogus'"]),
    ('{"preset": "a100-80g", "device": {"memory_gb": -1}}', ["memory_gb"]),
    ('{"preset": "nope"}', ["unknown", "nope"]),
    ('{"nodes": 2}', ["required"]),
])
def test_malformed_cluster_files(tmp_path, content, words):
    f = tmp_path / "c.json"
    f.write_text(content)
    proc = run_colo("plan", "gpt2-small", "--cluster", f, "--global-batch", "8",
                    check=False)
    assert proc.returncode == 1
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("colo: error:"), proc.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


@pytest.mark.parametrize("args,words", [
    (["gpt2-small", "--cluster", "a100-80g", "--explain", "dp=1,tp=8"], ["12"]),
    (["gpt2-small", "--cluster", "a100-80g", "--explain", "dp=8,zero=9"], ["ZeRO"]),
    (["gpt2-small", "--cluster", "a100-80g"], ["--global-batch"]),
    (["nosuchmodel", "--cluster", "a100-80g", "--global-batch", "8"], ["preset"]),
    (["gpt2-small", "--cluster", "a100-80g:0x8", "--global-batch", "8"], ["0x8"]),
])
def test_impossible_requests(args, words):
    proc = run_colo("plan", *args, check=False)
    assert proc.returncode == 1, proc.stdout
    for w in words:
        assert w in proc.stderr, (w, proc.stderr)


def test_cluster_show_and_model_presets(tmp_path):
    shown = json.loads(run_colo("cluster", "show", "h200", "--json").stdout)
    # nvidia-smi's 143771 MiB, in the file format's decimal GB.
    assert shown["device"]["memory_gb"] == pytest.approx(140.4 * 2**30 / 1e9)
    out = run_colo("model", "--preset", "gpt2-small", "--summary").stdout
    assert "parameters   124,439,808" in out
    run_colo("model", "gpt", "--layers", "2", "--hidden", "64", "--heads", "4",
             "--vocab", "128", "--seq", "16", "-o", tmp_path / "m.mlir")
    s = json.loads(run_colo("import", tmp_path / "m.mlir", "--summary", "--json").stdout)
    assert s["blocks"][0]["count"] == 2
