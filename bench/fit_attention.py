#!/usr/bin/env python3
"""Fits the GPU presets' fused-attention efficiency to published runs.

    python bench/fit_attention.py [--runs ../shared/calibration/published_runs.json]
                                  [--colo build/bin/colo]

`device.attention_efficiency` is the share of the peak a fused attention
kernel reaches on the FLOPs it computes. No paper gives it for the kernels
the published runs used (MPT's Triton attention and flash-attn builds of
2023), so it is fitted, one value per GPU architecture (A100 and H100), on
the calibration file's llm-foundry rows in bf16: those whose attention is a
fused kernel (MPT's), and the only ones long enough (up to 64K tokens) for
attention to dominate. The fit minimizes the mean absolute error of the
predicted step time over a grid of 0.01.

To show what the fit does on runs it did not see, the rows are first split
in two folds (alternate rows per architecture, in the file's order): each
fold's value is fitted on it and checked on the other. Printed: each fold's
fit and its held-out error, then the value fitted on all rows, which is what
the presets carry (lib/Planner/Cluster.cpp)."""
import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import published_bench as pb  # noqa: E402

GRID = [round(0.10 + 0.01 * i, 2) for i in range(71)]  # 0.10 .. 0.80


def arch_of(gpu):
    """A100 or H100 (the presets' fitted values), or None."""
    return {"a100-40g": "A100", "a100-80g": "A100", "h100-sxm": "H100"}.get(pb.preset_of(gpu))


def errors_by_value(binary, rows, values):
    """{arch: {value: {row id: signed error}}} with every architecture set
    to each of `values` in turn."""
    out = {}
    for value in values:
        results = pb.predict(binary, rows, device=lambda gpu, source: {
            "attention_efficiency": value}, log=lambda line: None)
        for r in results:
            out.setdefault(arch_of(r["gpu"]), {}).setdefault(value, {})[r["id"]] = r["error"]
    return out


def best(errors, ids):
    """The value with the least mean absolute error over `ids`."""
    return min(errors, key=lambda v: (statistics.mean(abs(errors[v][i]) for i in ids), v))


def mae(errors, value, ids):
    return statistics.mean(abs(errors[value][i]) for i in ids)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", default=str(pb.ROOT.parent / "shared" / "calibration" /
                                          "published_runs.json"))
    ap.add_argument("--colo", default=str(pb.ROOT / "build" / "bin" / "colo"))
    a = ap.parse_args()
    rows = [r for r in pb.all_rows(a.runs) if r[1] == "llm-foundry" and not r[8] and arch_of(r[3])]
    print(f"{len(rows)} llm-foundry rows in bf16; grid {GRID[0]}..{GRID[-1]} by 0.01",
          flush=True)
    errors = errors_by_value(a.colo, rows, GRID)
    for arch, by_value in sorted(errors.items()):
        ids = [r[0] for r in rows if arch_of(r[3]) == arch and r[0] in by_value[GRID[0]]]
        folds = [ids[0::2], ids[1::2]]
        held_out = []
        for k, fold in enumerate(folds):
            other = folds[1 - k]
            value = best(by_value, fold)
            held_out += [by_value[value][i] for i in other]
            print(f"{arch} fold {k + 1}: fitted {value:.2f} on {len(fold)} rows "
                  f"(|error| {mae(by_value, value, fold):.1f}%), "
                  f"on the other {len(other)}: |error| {mae(by_value, value, other):.1f}%")
        print(f"{arch} held out, both folds: mean |error| "
              f"{statistics.mean(map(abs, held_out)):.1f}%, "
              f"bias {statistics.mean(held_out):+.1f}%, largest {max(held_out, key=abs):+.1f}%")
        value = best(by_value, ids)
        print(f"{arch} all {len(ids)} rows: attention_efficiency {value:.2f} "
              f"(|error| {mae(by_value, value, ids):.1f}%)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
