#!/usr/bin/env python3
"""The cost model against published, measured training runs.

    python bench/published_bench.py [--runs ../shared/calibration/published_runs.json]
                                    [--colo build/bin/colo] [--json out.json]

For every row of the calibration file (MosaicML llm-foundry's FSDP table,
BLOOM's Megatron-DeepSpeed runs, and Megatron-LM's SC'21 Table 1) the model
is built synthetically (`colo model gpt` with the row's layers, hidden size,
heads, key/value heads, MLP size, vocabulary and sequence; bf16), and
`colo plan --explain` predicts the row's own configuration on the cluster
preset of its GPU (dp, tp, pp, virtual stages, ZeRO stage, microbatch size
and count, recomputation) with the row's GPUs per node. Printed per row: the
measured step time (the file's `step_time_s`; for Megatron's table, derived
from the reported per-GPU throughput with the paper's FLOP count, Eq. 3,
which includes the recomputed forward), the predicted one, the signed error,
and whether the prediction fits the device; then, per source and in all,
the mean absolute error, the mean signed error (the bias) and the largest
error, and how many runs that really ran are predicted not to fit. Rows in a
precision colo does not model (fp8) are predicted as bf16, marked, and left
out of the bf16/fp16 summary. Megatron-LM's and BLOOM's rows predate
FlashAttention: a row is predicted with fused attention only where its
description names a fused attention kernel (fused_attention_of).
`--search` also searches each Megatron-LM row's model, GPUs and batch and
prints the pick's predicted speedup over the row's own configuration.
Nothing is fitted here: this only measures (bench/fit_attention.py fits the
presets' attention efficiency on these rows)."""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def preset_of(gpu):
    """The cluster preset of a row's GPU ("H100-80GB-SXM", "A100-40GB"), or None."""
    name = str(gpu).upper()
    for part, preset in (("H200", "h200"), ("H100", "h100-sxm"), ("V100", "v100-32g"),
                         ("3090", "rtx3090"), ("2060", "rtx2060")):
        if part in name:
            return preset
    if "A100" in name:
        return "a100-40g" if "40G" in name else "a100-80g"
    return None


def source_of(row):
    """The row's stack: llm-foundry, BLOOM (Megatron-DeepSpeed, 2022), or its system."""
    system = str(row.get("system", ""))
    if "llm-foundry" in system:
        return "llm-foundry"
    if "BigScience" in system or str(row.get("model", "")).startswith("BLOOM"):
        return "BLOOM"
    return system.split(" (")[0] or "other"


def colo(binary, *args):
    proc = subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"colo {' '.join(map(str, args))}: {proc.stderr.strip()}")
    return proc.stdout


def recompute_of(text):
    text = (text or "none").lower()
    return "full" if text.startswith("full") else "selective" if "selective" in text else "none"


def partition_of(row, pp):
    """The row's pipeline stages as [begin, end) layer ranges where its notes
    name DeepSpeed's `type:transformer|embedding` partition (the embedding
    and the tied head each weigh one layer, and every stage gets as many of
    these units as it can: BLOOM's production run), else None (colo's own
    cut)."""
    if pp < 2 or "type:transformer|embedding" not in str(row.get("notes", "")):
        return None
    units = row["layers"] + 2
    bounds = [min(max(round(units * k / pp) - 1, 0), row["layers"]) for k in range(pp + 1)]
    bounds[0], bounds[-1] = 0, row["layers"]
    return [[bounds[k], bounds[k + 1]] for k in range(pp)]


def published_rows(runs, log=print):
    """The `runs` rows as (id, source, dims, gpu, gpus, per_node, plan, measured s,
    note, device fields over the GPU's preset, pipeline stages or None); a row whose configuration is
    incomplete, or whose GPU has no preset, is skipped with a line that says
    why."""
    for r in runs:
        try:
            if preset_of(r["gpu"]) is None:
                raise ValueError(f"no cluster preset for GPU {r['gpu']!r}")
            tp, pp, gpus = r.get("tp") or 1, r.get("pp") or 1, r["gpu_count"]
            dp, mbs = r.get("dp") or gpus // (tp * pp), r["micro_batch_size"]
            micro = r["global_batch_seqs"] // (dp * mbs)
            if dp * tp * pp != gpus or micro * dp * mbs != r["global_batch_seqs"]:
                raise ValueError("dp x tp x pp or the batch does not add up")
            plan = f"dp={dp},tp={tp},pp={pp},zero={r['zero_stage']},mbs={mbs},micro={micro}"
            if pp > 1 and r.get("vpp"):
                plan += f",schedule=interleaved,v={r['vpp']}"
            plan += f",recompute={recompute_of(r.get('recompute'))}"
            # Megatron-based stacks split the embedding and the LM head over
            # the vocabulary (VocabParallelEmbedding) wherever tp > 1.
            if tp > 1 and "megatron" in str(r.get("system", "")).lower():
                plan += ",vocab"
            dims = dict(layers=r["layers"], hidden=r["hidden"], heads=r["heads"],
                        kv_heads=r.get("kv_heads") or r["heads"],
                        ffn=r.get("ffn") or 4 * r["hidden"], vocab=r["vocab"], seq=r["seq_len"])
            measured = r.get("step_time_s") or (r["global_batch_seqs"] * r["seq_len"] /
                                                (r["tokens_per_sec_per_gpu"] * gpus))
        except KeyError as e:
            log(f"{r.get('id', '?'):<16} skipped: the configuration has no {e}")
            continue
        except (TypeError, ValueError, ZeroDivisionError) as e:
            log(f"{r.get('id', '?'):<16} skipped: {e}")
            continue
        precision = str(r.get("precision", "bf16")).lower()
        half = ("bf16" in precision or "fp16" in precision) and "fp8" not in precision
        note = "" if half else f"{precision.split()[0]} as bf16"
        yield (r["id"], source_of(r), dims, r["gpu"], gpus, r.get("gpus_per_node") or 8, plan,
               measured, note, {"fused_attention": fused_attention_of(r)},
               partition_of(r, pp))


def megatron(table):
    """Megatron-LM SC'21 Table 1: A100 80GB, 8 per node, V=51200, s=2048, full
    recomputation; the step from the reported throughput and Eq. 3."""
    V, s = 51200, 2048
    for i, r in enumerate(table["rows"]):
        B, l, h, gpus, tp, pp = r["batch"], r["layers"], r["hidden"], r["gpus"], r["tp"], r["pp"]
        flops = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))
        measured = flops / (r["tflops_per_gpu"] * 1e12 * gpus)
        dp = gpus // (tp * pp)
        plan = f"dp={dp},tp={tp},pp={pp},zero=0,mbs=1,micro={B // dp},recompute=full"
        if tp > 1:
            plan += ",vocab"
        dims = dict(layers=l, hidden=h, heads=r["heads"], kv_heads=r["heads"], ffn=4 * h,
                    vocab=V, seq=s)
        yield (f"megatron-{i + 1:02d}", "Megatron-LM", dims, "A100-80GB", gpus, 8, plan,
               measured, "", {"fused_attention": 0}, None)


# Words by which a row's description names a fused attention kernel.
FUSED_ATTENTION = ("flash", "sdpa", "scaled_dot_product", "xformers", "memory-efficient attention",
                   "fused attention", "cudnn attention")


def fused_attention_of(row):
    """1 where the row's system, model, architecture or notes name a fused
    attention kernel (llm-foundry's MPT rows: "FlashAttention"), else 0:
    Megatron-LM's SC'21 and BLOOM's Megatron-DeepSpeed runs predate
    FlashAttention, and computed attention as two batched GEMMs around a
    fused softmax that keeps the probabilities for the backward."""
    text = " ".join(str(row.get(k, "")) for k in ("system", "model", "arch", "notes")).lower()
    return int(any(word in text for word in FUSED_ATTENTION))


def synthetic_model(binary, dims, path):
    """The synthetic GPT of a row's dimensions, in bf16, at `path`."""
    colo(binary, "model", "gpt", "--layers", dims["layers"], "--hidden", dims["hidden"],
         "--heads", dims["heads"], "--kv-heads", dims["kv_heads"], "--ffn", dims["ffn"],
         "--vocab", dims["vocab"], "--seq", dims["seq"], "-o", path)
    return path


# A source's network where it is not the preset's (a DGX's 200 Gb/s per GPU):
# BLOOM trained on Jean Zay, whose nodes have four Omni-Path 100 Gb/s links
# for eight A100s (BigScience, arXiv 2211.05100, section 3.4.1): 6.25 GB/s
# per GPU.
NETWORK = {"BLOOM": {"inter_node_gbs": 4 * 100 / 8 / 8}}


def cluster_file(directory, preset, nodes, per_node, device, source=None):
    """A cluster file: `preset` as `nodes` x `per_node` with `device` fields
    set, on `source`'s network."""
    count = len(list(Path(directory).glob("*.json")))
    path = Path(directory) / f"{preset}-{nodes}x{per_node}-{count}.json"
    path.write_text(json.dumps(dict(preset=preset, nodes=nodes, devices_per_node=per_node,
                                    device=device, links=NETWORK.get(source, {}))))
    return path


def predict(binary, rows, device=lambda gpu, source: {}, log=print):
    """Predicts `rows`; `device(gpu, source)` gives device fields to set over
    the GPU's preset. Returns one dict per predicted row."""
    results = []
    with tempfile.TemporaryDirectory() as t:
        models, clusters = {}, {}
        for rid, source, dims, gpu, gpus, per_node, plan, measured, note, given, stages in rows:
            key = tuple(sorted(dims.items()))
            if key not in models:
                models[key] = synthetic_model(binary, dims, Path(t) / f"m{len(models)}.mlir")
            fields = {**given, **device(gpu, source)}
            ckey = (gpu, gpus, per_node, source, tuple(sorted(fields.items())))
            if ckey not in clusters:
                clusters[ckey] = cluster_file(t, preset_of(gpu), gpus // per_node, per_node,
                                              fields, source)
            vocab = plan.endswith(",vocab")
            args = ["plan", models[key], "--cluster", clusters[ckey], "--explain",
                    plan.removesuffix(",vocab"), "--json"] + (["--vocab-parallel"] if vocab else [])
            try:
                p = json.loads(colo(binary, *args))
                if stages:
                    # The row's own partition: its plan, as a plan file, with stages.
                    path = Path(t) / f"{rid}.plan.json"
                    path.write_text(json.dumps({**p["plan_file"], "stages": stages}))
                    args[args.index("--explain") + 1] = path
                    p = json.loads(colo(binary, *args))
            except RuntimeError as e:
                log(f"{rid:<16} {gpus:5d} {plan:<62} not predicted: {e}")
                continue
            error = 100 * (p["step_time_s"] - measured) / measured
            results.append(dict(id=rid, source=source, gpu=gpu, gpus=gpus, plan=plan,
                                cluster=f"{preset_of(gpu)}:{gpus // per_node}x{per_node}",
                                device=fields, measured_s=measured,
                                predicted_s=p["step_time_s"], error=error, fits=p["fits"],
                                memory_gib=p["memory_gib"]["total"], note=note))
            log(f"{rid:<16} {gpus:5d} {plan:<62} {measured:8.3f} {p['step_time_s']:8.3f} "
                f"{error:+6.1f}%  {'yes' if p['fits'] else 'NO'} {note}"
                f"{' its own stages' if stages else ''}")
    return results


TERMS = ("compute", "recompute", "tensor_parallel", "pipeline_comm", "bubble", "data_parallel",
         "optimizer", "offload", "ulysses")


def modernized(plan):
    """The row's configuration as Megatron-LM has run it since Korthikanti et
    al. 2022: selective recomputation, and sequence parallelism under tp."""
    plan = plan.replace("recompute=full", "recompute=selective")
    return plan.replace(",zero=", ",sp,zero=") if "tp=1," not in plan else plan


def search_megatron(binary, rows, predicted):
    """colo's pick for each Megatron-LM row (its model, GPUs and global batch)
    against the prediction of the row's own configuration: the speedup colo
    claims over Megatron's tuning, in two rungs. First the row's layout with
    selective recomputation and sequence parallelism (Korthikanti et al.
    2022 measured that rung at 1.29x on a 530B model on 2240 A100s: 42.1% to
    54.2% MFU), then colo's layout; per row, the step-time terms of both
    rungs (seconds, the second's minus the first's). The search covers what
    colo compiles, vocabulary parallelism included, as Megatron's own
    configurations ran."""
    print(f"{'run':<12} {'GPUs':>5} {'colo picks':<72} {'pick s':>8} {'MFU':>6} {'row s':>8} "
          f"{'sel+sp s':>8} {'rung 1':>6} {'rung 2':>6} speedup")
    with tempfile.TemporaryDirectory() as t:
        for rid, source, dims, gpu, gpus, per_node, plan, measured, note, given, _ in rows:
            if source != "Megatron-LM" or rid not in predicted:
                continue
            model = synthetic_model(binary, dims, Path(t) / f"{rid}.mlir")
            cluster = cluster_file(t, preset_of(gpu), gpus // per_node, per_node, given,
                                   source)
            dp = int(plan.split("dp=")[1].split(",")[0])
            batch = dp * int(plan.split("micro=")[1].split(",")[0])
            best = json.loads(colo(binary, "plan", model, "--cluster", cluster, "--global-batch",
                                   batch, "--vocab-parallel", "--json"))["plans"][0]
            modern = json.loads(colo(binary, "plan", model, "--cluster", cluster, "--explain",
                                     modernized(plan).removesuffix(",vocab"), "--json",
                                     "--vocab-parallel"))
            picked = json.loads(colo(binary, "plan", model, "--cluster", cluster, "--explain",
                                     best["plan"], "--json", "--vocab-parallel"))
            row, mid, pick = (predicted[rid]["predicted_s"], modern["step_time_s"],
                              best["step_time_s"])
            print(f"{rid:<12} {gpus:5d} {best['plan']:<72} {pick:8.3f} "
                  f"{100 * best['mfu']:5.1f}% {row:8.3f} {mid:8.3f} {row / mid:5.2f}x "
                  f"{mid / pick:5.2f}x {row / pick:6.2f}x", flush=True)
            terms = [(k, picked["time_s"][k] - modern["time_s"][k]) for k in TERMS]
            print(" " * 18 + "rung 2 by term: " + ", ".join(
                f"{k} {d:+.3f}" for k, d in terms if abs(d) >= 0.0005) +
                f"; MFU {100 * modern['mfu']:.1f}% -> {100 * picked['mfu']:.1f}%", flush=True)


def all_rows(path, log=print):
    data = json.loads(Path(path).read_text())
    return (list(published_rows(data.get("runs", []), log)) +
            (list(megatron(data["megatron_sc21_table1"])) if "megatron_sc21_table1" in data
             else []))


def summarize(label, rows):
    errors = [r["error"] for r in rows]
    if not errors:
        return
    unfit = sum(1 for r in rows if not r["fits"])
    print(f"{label:<12} {len(rows):3d} runs: mean |error| {statistics.mean(map(abs, errors)):5.1f}%"
          f", bias {statistics.mean(errors):+5.1f}%, largest {max(errors, key=abs):+6.1f}%"
          f", {unfit} predicted not to fit")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", default=str(ROOT.parent / "shared" / "calibration" /
                                          "published_runs.json"))
    ap.add_argument("--colo", default=str(ROOT / "build" / "bin" / "colo"))
    ap.add_argument("--json", help="write every row's prediction here")
    ap.add_argument("--search", action="store_true",
                    help="also search the best plan for each Megatron-LM row's model, GPUs and "
                         "batch, and compare it with the row's own configuration")
    a = ap.parse_args()
    print(f"{'run':<16} {'GPUs':>5} {'plan':<62} {'meas s':>8} {'pred s':>8} {'error':>7}  fits")
    results = predict(a.colo, all_rows(a.runs), log=lambda line: print(line, flush=True))
    print()
    for source in dict.fromkeys(r["source"] for r in results):
        summarize(source, [r for r in results if r["source"] == source])
    summarize("all", results)
    summarize("bf16/fp16", [r for r in results if not r["note"]])
    if a.search:
        print()
        search_megatron(a.colo, all_rows(a.runs), {r["id"]: r for r in results})
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    sys.exit(main())
