#!/usr/bin/env python3
"""Calibration of the planner against measured CPU runs (not a test: timings
on a shared machine are noisy, so nothing here asserts).

Runs the CPU plans colo can execute today (one rank, dp=2, dp=4, tp=2, tp=4,
dp=2,tp=2, dp=2 with ZeRO-1/2/3, a 1F1B pipeline pp=2 with 2 microbatches)
on one transformers GPT-2, and compares what
they measure with what `colo plan --explain PLAN --json` predicts for the
`local-cpu` cluster with as many devices as the plan has ranks
(`local-cpu:1xN`, docs/cluster-format.md: each device is one rank, with the
cores the rank's threads get). It then calibrates local-cpu's two
efficiencies on the one-rank plan's profile, and its workspace (what the
rank's resident memory holds beyond the program predicted) on the same
plan, and predicts again; the other
nine plans, and four models the calibration never sees (HELD_OUT: a wider
GPT-2, Llama, BERT and ResNet-18, each on one rank and under one plan of
two ranks), are the held-out check.

The model (defaults): GPT-2, 4 layers, hidden 256, 8 heads, vocabulary 4096,
sequence 128, batch 8 per step (global), AdamW. 4.2M parameters and about
28 GFLOP per step: a one-rank step takes ~0.7 s on a 2-core machine, so
kernel launches (~100 us in all) and process noise are small against compute,
while the 10 plans (compile ~25 s each, 8 steps) fit in about 9 minutes.
Vocabulary 4096 instead of GPT-2's 50257 keeps the LM head from dominating
(it would be 75% of the parameters); 8 heads let tp=4 split them.

What is measured, per plan:

- step time: the median of the per-step times `colo run` prints (rank 0,
  steps after --warmup), over --steps steps.
- peak memory: per rank, the largest anonymous plus shared-memory resident
  size (RssAnon + RssShmem in /proc/PID/status, polled every 20 ms while the
  ranks run) minus the same figure for a baseline run: a tiny GPT-2 (1 layer,
  hidden 32) compiled with the same plan and run on as many ranks. The
  difference is what the model's program adds (state, arena, inputs,
  communication and library buffers) over the process, the libraries, MPI
  and thread stacks. File-backed pages are left out: the runtime keeps
  state.safetensors mapped after loading it (page cache, reclaimable), which
  VmHWM would count. The runtime allocates the program's buffers when the
  session starts; the communicator's staging comes with the first
  collective, and the generated kernels malloc temporaries of their own
  (outside the arena, freed when they return: up to 12.6 MB in one call of
  the one-rank plan's attention transpose kernel, which 20 ms polling sees
  only sometimes). The largest rank counts, as the planner reports the device that needs most. Runs use --no-snapshot:
  the runtime's NaN-safety copy of the parameters is not part of training.
  The polling covers the whole run, saving the weights at the end included:
  the runtime writes whole tensors from their buffers and puts one sharded
  tensor together at a time, so saving adds at most a tensor and a block
  (it used to hold five copies of the weights on rank 0, which was most of
  the 50-110 MB by which the resident peak exceeded the program's buffers).
- runtime-reported peak: the `memory:` line of `colo run` (the largest rank's
  planned buffers, arena + state + inputs, plus the most the runtime held
  besides them at once: communication staging, saving, snapshot, scratch).
  The runtime's accounting from program.pb (arena + state + inputs) is
  printed too, as a cross-check.
- bytes: the `communication:` line of `colo run` (bytes sent per step by
  rank 0 and by all ranks, counted by the communicator).

Predicted: step time, per-device memory (total) and bytes sent per step by a
device and by all, from `colo plan MODEL.mlir --cluster local-cpu:1xN
--explain PLAN --json`. Errors are (predicted - measured) / measured.

    python bench/calibrate_plans.py [--colo build/bin/colo] [--json out.json]
    python bench/calibrate_plans.py --measured out.json   # re-predict only
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (label, plan for `colo compile --plan`, ranks)
PLANS = [
    ("single", "", 1),
    ("dp=2", "dp=2", 2),
    ("dp=4", "dp=4", 4),
    ("tp=2", "tp=2", 2),
    ("tp=4", "tp=4", 4),
    ("dp=2,tp=2", "dp=2,tp=2", 4),
    ("dp=2,zero=1", "dp=2,zero=1", 2),
    ("dp=2,zero=2", "dp=2,zero=2", 2),
    ("dp=2,zero=3", "dp=2,zero=3", 2),
    ("pp=2,micro=2", "pp=2,micro=2,schedule=1f1b", 2),
    ("ulysses=2", "ulysses=2", 2),
]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def logits_only(model):
    """`model` returning its logits: Hugging Face models return output
    objects, and the exporter wants tensors."""
    import torch

    class LogitsOnly(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, ids):
            return self.model(input_ids=ids).logits

    return LogitsOnly()


def export_training(model, example, path, input_name="input_ids"):
    """`model` exported to ONNX in training mode; returns its parameter count."""
    import contextlib
    import io
    import warnings

    import torch

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(model.train(), (example,), str(path), dynamo=False,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, opset_version=17,
                          input_names=[input_name])
    return sum(p.numel() for p in model.parameters())


def export_gpt2(path, layers, hidden, heads, vocab, seq, batch):
    """A transformers GPT-2 (dropout 0) exported to ONNX in training mode."""
    import torch
    import transformers as tf

    torch.manual_seed(0)
    cfg = tf.GPT2Config(n_layer=layers, n_embd=hidden, n_head=heads, vocab_size=vocab,
                        n_positions=seq, use_cache=False, resid_pdrop=0.0, embd_pdrop=0.0,
                        attn_pdrop=0.0)
    return export_training(logits_only(tf.GPT2LMHeadModel(cfg)),
                           torch.randint(0, vocab, (batch, seq)), path)


# Models the calibration does not fit on: (name, what `colo compile --train`
# gets, plans as in PLANS). Each is predicted with the efficiencies fitted
# on the GPT-2's one-rank profile. BERT trains with the LM loss: the loss
# changes nothing the cost model counts.
HELD_OUT = [
    ("gpt2-6x384", "loss=lm,optimizer=adamw,lr=1e-3", [("single", "", 1), ("dp=2", "dp=2", 2)]),
    ("llama", "loss=lm,optimizer=adamw,lr=1e-3", [("single", "", 1), ("tp=2", "tp=2", 2)]),
    ("bert", "loss=lm,optimizer=adamw,lr=1e-3", [("single", "", 1), ("dp=2", "dp=2", 2)]),
    ("resnet18", "loss=cross-entropy,optimizer=adamw,lr=1e-3",
     [("single", "", 1), ("dp=2", "dp=2", 2)]),
]


def export_held_out(name, path, batch):
    """A held-out model exported to ONNX in training mode (dropout 0):
    GPT-2 at a second size (6 layers, hidden 384, vocabulary 8192), Llama
    (4 layers, hidden 256, grouped-query attention, SwiGLU), BERT (4 layers,
    hidden 256), all at sequence 128, or torchvision's ResNet-18 on 64 x 64
    images; returns its parameter count."""
    import torch
    import torchvision
    import transformers as tf

    torch.manual_seed(0)
    seq, vocab = 128, 4096
    if name == "resnet18":
        return export_training(torchvision.models.resnet18(num_classes=10),
                               torch.randn(batch, 3, 64, 64), path, "images")
    if name == "gpt2-6x384":
        vocab = 8192
        model = tf.GPT2LMHeadModel(tf.GPT2Config(
            n_layer=6, n_embd=384, n_head=6, vocab_size=vocab, n_positions=seq,
            use_cache=False, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))
    elif name == "llama":
        model = tf.LlamaForCausalLM(tf.LlamaConfig(
            hidden_size=256, intermediate_size=688, num_hidden_layers=4, num_attention_heads=8,
            num_key_value_heads=4, vocab_size=vocab, max_position_embeddings=seq,
            use_cache=False))
    else:
        model = tf.BertForMaskedLM(tf.BertConfig(
            hidden_size=256, num_hidden_layers=4, num_attention_heads=8, intermediate_size=1024,
            vocab_size=vocab, max_position_embeddings=seq, hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0))
    return export_training(logits_only(model), torch.randint(0, vocab, (batch, seq)), path)


def colo_cmd(colo, *args, **kw):
    r = subprocess.run([str(colo), *map(str, args)], capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"colo {' '.join(map(str, args))} failed:\n{r.stdout}{r.stderr}")
    return r.stdout


def descendants(root):
    """Pids of `root` and everything below it."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def rank_memory(pid):
    """Anonymous plus shared-memory resident bytes (RssAnon + RssShmem) of a
    process that runs a rank (`colo run` without --np), or None."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        with open(f"/proc/{pid}/status") as f:
            status = f.read()
    except OSError:
        return None
    if len(argv) < 2 or not argv[0].endswith(b"colo") or argv[1] != b"run" or b"--np" in argv:
        return None
    fields = dict(re.findall(r"^(RssAnon|RssShmem):\s+(\d+) kB", status, re.M))
    return sum(int(v) for v in fields.values()) * 1024 if fields else None


def run_plan(colo, exe, ranks, steps, timeout=900, extra=()):
    """Runs `colo run` and polls the ranks' memory; (stdout, {pid: peak RssAnon + RssShmem})."""
    args = [str(colo), "run", str(exe), "--steps", str(steps), "--data", "synthetic",
            "--no-snapshot", "-o", str(exe / "w.safetensors")]
    if ranks > 1:
        args += ["--np", str(ranks)]
    args += list(extra)
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    hwm = {}
    out = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()))
    reader.start()
    start = time.time()
    while proc.poll() is None:
        for pid in descendants(proc.pid):
            v = rank_memory(pid)
            if v is not None:
                hwm[pid] = max(hwm.get(pid, 0), v)
        if time.time() - start > timeout:
            proc.kill()
            raise RuntimeError(f"{exe}: timed out")
        time.sleep(0.02)
    reader.join()
    text = out[0] if out else ""
    if proc.returncode != 0:
        raise RuntimeError(f"colo run {exe} failed:\n{text}")
    return text, hwm


def program_bytes(exe):
    """The runtime's own accounting from program.pb: arena + STATE + CONSTANT +
    INPUT buffers that are not aliases (decoded with protoc)."""
    protoc = shutil.which("protoc")
    if not protoc:
        return None
    r = subprocess.run([protoc, "--decode", "colo.runtime.Program", "-I", str(ROOT / "runtime"),
                        str(ROOT / "runtime" / "Program.proto")],
                       stdin=open(exe / "program.pb", "rb"), capture_output=True, text=True)
    if r.returncode != 0:
        return None
    txt = r.stdout
    size = {"F32": 4, "F64": 8, "I64": 8, "I32": 4, "BF16": 2, "F16": 2, "I8": 1, "BOOL": 1}
    total = 0
    for b in re.findall(r"^buffers \{\n(.*?)^\}", txt, re.M | re.S):
        kind = re.search(r"^  kind: (\w+)", b, re.M)
        if not kind or kind[1] == "TEMP":  # TEMP lives in the arena
            continue
        alias = re.search(r"^  alias_of: (-?\d+)", b, re.M)
        if alias and int(alias[1]) >= 0:
            continue
        dt = re.search(r"^  dtype: (\w+)", b, re.M)
        n = 1
        for s in re.findall(r"^  shape: (\d+)", b, re.M):
            n *= int(s)
        total += n * size[dt[1] if dt else "F32"]
    arena = re.search(r"^arena_bytes: (\d+)", txt, re.M)
    return total + (int(arena[1]) if arena else 0)


LM_TRAIN = "loss=lm,optimizer=adamw,lr=1e-3"


def measure(colo, work, model, tiny, label, plan, ranks, steps, warmup, train=LM_TRAIN):
    exe, base = work / f"exe-{model.stem}-{label}", work / f"base-{label}"
    extra = ["--plan", plan] if plan else []
    t0 = time.time()
    colo_cmd(colo, "compile", model, "-o", exe, "--train", train, *extra)
    if not base.exists():
        colo_cmd(colo, "compile", tiny, "-o", base, "--train", LM_TRAIN, *extra)
    t1 = time.time()
    text, hwm = run_plan(colo, exe, ranks, steps)
    # Enough steps that the polling sees the baseline run after its start:
    # a few steps of the tiny model end within one polling interval.
    _, base_hwm = run_plan(colo, base, ranks, 100)
    times = [float(m) for m in re.findall(r"^step \d+/\d+\s+loss \S+\s+\((\d+(?:\.\d+)?) ms\)",
                                          text, re.M)]
    if len(times) != steps:
        raise RuntimeError(f"{label}: expected {steps} step lines:\n{text}")
    comm = re.search(r"^communication: (\d+) bytes sent per step by rank 0, (\d+) by all",
                     text, re.M)
    mem = re.search(r"^memory: (\S+) MB planned per rank .*?runtime extra at most (\S+) MB "
                    r"\(communication (\S+) MB, saving weights (\S+) MB.*?; peak (\S+) MB",
                    text, re.M)
    if len(hwm) != ranks or len(base_hwm) != ranks:
        log(f"  warning: saw {len(hwm)} (model) and {len(base_hwm)} (baseline) ranks, "
            f"expected {ranks}")
    profile = None
    if ranks == 1:
        # Where one rank's step goes: BLAS GEMMs vs generated kernels (and copies).
        out, _ = run_plan(colo, exe, 1, 4, extra=["--profile", str(work / "trace.json")])
        m = re.search(r"^profile: .*?; (.*)$", out, re.M)
        if m:
            profile = {k: float(v) / 100 for k, v in re.findall(r"(\w+) (\d+(?:\.\d+)?)%", m[1])}
    log(f"  {label}: compiled in {t1 - t0:.0f} s, ran in {time.time() - t1:.0f} s")
    return {
        "profile_shares": profile,
        "plan": label, "ranks": ranks,
        "step_times_s": [t / 1000 for t in times],
        "step_time_s": statistics.median(times[warmup:]) / 1000,
        "rss_bytes": sorted(hwm.values()), "baseline_rss_bytes": sorted(base_hwm.values()),
        "memory_bytes": max(hwm.values()) - max(base_hwm.values()),
        "program_bytes": program_bytes(exe),
        "runtime_peak_bytes": float(mem[5]) * 1e6 if mem else None,
        "runtime_extra_bytes": {"all": float(mem[2]) * 1e6, "communication": float(mem[3]) * 1e6,
                                "saving": float(mem[4]) * 1e6} if mem else None,
        "bytes_rank0": int(comm[1]) if comm else 0,
        "bytes_all": int(comm[2]) if comm else 0,
    }


def measure_held_out(colo, work, tiny, args):
    """Each HELD_OUT model exported, imported (for the planner) and measured
    under its plans, as `measure` measures the GPT-2."""
    out = []
    for name, train, plans in HELD_OUT:
        onnx = work / f"{name}.onnx"
        log(f"exporting {name}: {export_held_out(name, onnx, args.batch)} parameters")
        colo_cmd(colo, "import", onnx, "-o", work / f"{name}.mlir")
        for label, plan, ranks in plans:
            log(f"measuring {name} {label} ({ranks} rank{'s' if ranks > 1 else ''})")
            m = measure(colo, work, onnx, tiny, label, plan, ranks, args.steps, args.warmup,
                        train)
            out.append({"model": name, **m})
    return out


def planner_plan(label, ranks, batch):
    """The planner's spelling of a runnable plan (mbs = per-rank batch)."""
    fields = dict(f.split("=") for f in label.split(",")) if label != "single" else {}
    dp, tp, zero = int(fields.get("dp", 1)), int(fields.get("tp", 1)), int(fields.get("zero", 0))
    pp, micro = int(fields.get("pp", 1)), int(fields.get("micro", 1))
    ulysses = int(fields.get("ulysses", 1))
    assert dp * tp * pp * ulysses == ranks
    schedule = ",schedule=1f1b" if pp > 1 else ""
    return (f"dp={dp},tp={tp},pp={pp},ulysses={ulysses},zero={zero},"
            f"mbs={batch // dp // micro},micro={micro}{schedule}")


def predict(colo, mlir, label, ranks, batch, spec):
    out = colo_cmd(colo, "plan", mlir, "--cluster", spec, "--explain",
                   planner_plan(label, ranks, batch), "--json")
    p = json.loads(out)
    comm = p.get("communication_bytes", {})
    return {"step_time_s": p["step_time_s"], "memory_bytes": p["memory_gib"]["total"] * 2**30,
            "bytes_device": comm.get("per_device"), "bytes_all": comm.get("all_devices"),
            "time_s": p["time_s"], "compute_s": p["compute_s"], "memory_gib": p["memory_gib"]}


def calibrate(single_measured, single_predicted):
    """local-cpu's two efficiencies from the one-rank profile: the share of the
    measured step in BLAS GEMMs against the predicted matmul time, and the
    share in generated kernels and copies against the predicted memory-bound
    time (both predicted at efficiency 1)."""
    shares = single_measured.get("profile_shares") or {}
    step = single_measured["step_time_s"]
    gemm = shares.get("gemm", 0) * step
    kernels = (shares.get("kernel", 0) + shares.get("copy", 0)) * step
    c = single_predicted["compute_s"]
    clamp = lambda x: min(1.0, max(1e-3, x))
    return (clamp(c["matmul"] / gemm) if gemm else 1.0,
            clamp(c["memory_bound"] / kernels) if kernels else 1.0)


def fit_workspace(single_measured, single_predicted):
    """local-cpu's workspace per device from the one-rank plan: what the
    rank's resident memory holds beyond the program the planner predicts
    (the generated kernels' temporaries, the libraries' buffers, huge-page
    rounding; the tiny baseline run has taken out the process itself)."""
    return max(0.0, single_measured["memory_bytes"] - single_predicted["memory_bytes"])


def pct(pred, meas):
    return 100 * (pred - meas) / meas if meas else float("nan")


def report(rows, title):
    print(title)
    mb = 1e6
    print(f"{'plan':<22} {'time meas':>9} {'pred':>7} {'err':>7}   {'mem meas':>8} {'pred':>7} "
          f"{'err':>7} {'runtime':>8} {'err':>7} {'(prog)':>8}   {'bytes meas r0/all':>21} "
          f"{'pred dev/all':>21}")
    terr, merr, rerr = [], [], []
    for m, p in rows:
        te, me = pct(p["step_time_s"], m["step_time_s"]), pct(p["memory_bytes"], m["memory_bytes"])
        terr.append(abs(te))
        merr.append(abs(me))
        prog = f"{m['program_bytes'] / mb:7.1f}M" if m.get("program_bytes") else "       -"
        if m.get("runtime_peak_bytes"):
            # The runtime counts the program's memory, not the workspace.
            re_ = pct(p["memory_bytes"] - p.get("workspace_bytes", 0), m["runtime_peak_bytes"])
            rerr.append(abs(re_))
            rt = f"{m['runtime_peak_bytes'] / mb:7.1f}M {re_:+6.1f}%"
        else:
            rt = f"{'-':>8} {'':>7}"
        bm = f"{m['bytes_rank0'] / mb:.2f}/{m['bytes_all'] / mb:.2f}M"
        bp = (f"{p['bytes_device'] / mb:.2f}/{p['bytes_all'] / mb:.2f}M"
              if p["bytes_device"] is not None else "-")
        label = m.get("model", "gpt2") + " " + m["plan"]
        print(f"{label:<22} {m['step_time_s']:8.3f}s {p['step_time_s']:6.3f}s {te:+6.1f}%   "
              f"{m['memory_bytes'] / mb:7.1f}M {p['memory_bytes'] / mb:6.1f}M {me:+6.1f}% {rt} "
              f"{prog}   {bm:>21} {bp:>21}")
    print(f"mean absolute error: step time {statistics.mean(terr):.1f}%, "
          f"peak memory {statistics.mean(merr):.1f}% against the resident memory"
          + (f", {statistics.mean(rerr):.1f}% against the runtime's reported peak"
             if rerr else "") + f"  ({len(rows)} plans)")
    berr = [abs(pct(p["bytes_all"], m["bytes_all"])) for m, p in rows
            if m["bytes_all"] and p["bytes_all"] is not None]
    if berr:
        print(f"bytes sent (all ranks): mean absolute error {statistics.mean(berr):.1f}% "
              f"over {len(berr)} plans that communicate")


def add_gpt2_args(ap):
    """The benchmark GPT-2's size (the defaults above); the offload and
    memory benchmarks run the same model."""
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8)


def gpt2_model(colo, work, a):
    """The GPT-2 of `a` exported to work/model.onnx and imported to
    work/model.mlir (for the planner); returns both and its parameters."""
    model, mlir = work / "model.onnx", work / "model.mlir"
    params = export_gpt2(model, a.layers, a.hidden, a.heads, a.vocab, a.seq, a.batch)
    colo_cmd(colo, "import", model, "-o", mlir)
    return model, mlir, params


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--colo", default=str(ROOT / "build" / "bin" / "colo"))
    add_gpt2_args(ap)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--plans", help="comma-free labels separated by ';' (default: all)")
    ap.add_argument("--cluster", default="local-cpu:1x{n}",
                    help="cluster spec for the predictions; {n} is the plan's ranks")
    ap.add_argument("--json", help="write the measurements and predictions here")
    ap.add_argument("--measured", help="skip measuring: read the measurements from a "
                    "--json file of an earlier run and predict again")
    ap.add_argument("--workdir", help="keep the models and executables here")
    ap.add_argument("--no-held-out", action="store_true",
                    help="skip the held-out models (BERT, ResNet-18, Llama, a wider GPT-2)")
    args = ap.parse_args()
    colo = Path(args.colo).resolve()
    plans = [p for p in PLANS if not args.plans or p[0] in args.plans.split(";")]

    held_out = []
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="colo-cal-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        model, mlir, tiny = work / "model.onnx", work / "model.mlir", work / "tiny.onnx"
        if args.measured:
            measured = json.load(open(args.measured))["measured"]
            cfg = json.load(open(args.measured))["config"]
            args.__dict__.update({k: cfg[k] for k in ("layers", "hidden", "heads", "vocab",
                                                      "seq", "batch")})
            measured = [m for m in measured if any(m["plan"] == p[0] for p in plans)]
            held_out = json.load(open(args.measured)).get("held_out", [])
            for m in held_out:
                if not (work / f"{m['model']}.mlir").exists():
                    export_held_out(m["model"], work / f"{m['model']}.onnx", args.batch)
                    colo_cmd(colo, "import", work / f"{m['model']}.onnx", "-o",
                             work / f"{m['model']}.mlir")
        if not mlir.exists():
            log(f"exporting GPT-2 ({args.layers} layers, hidden {args.hidden}) to {model}")
            params = export_gpt2(model, args.layers, args.hidden, args.heads, args.vocab,
                                 args.seq, args.batch)
            log(f"  {params} parameters")
            export_gpt2(tiny, 1, 32, 4, 64, 16, args.batch)
            colo_cmd(colo, "import", model, "-o", mlir)
        if not args.measured:
            measured = []
            for label, plan, ranks in plans:
                log(f"measuring {label} ({ranks} rank{'s' if ranks > 1 else ''})")
                measured.append(measure(colo, work, model, tiny, label, plan, ranks,
                                        args.steps, args.warmup))
        # One measurement of the machine per device count, kept in files so
        # that every prediction of a plan sees the same figures (each colo
        # process would measure local-cpu again).
        if args.measured:
            clusters = json.load(open(args.measured))["clusters"]
        else:
            clusters = {str(n): json.loads(colo_cmd(colo, "cluster", "show",
                                                    args.cluster.format(n=n), "--json"))
                        for n in sorted({m["ranks"] for m in measured})}

        def spec_file(n, eff=None, workspace=0.0):
            c = json.loads(json.dumps(clusters[str(n)]))
            if eff:
                c["name"] += "-calibrated"
                c["device"]["matmul_efficiency"], c["device"]["memory_efficiency"] = eff
                c["device"]["workspace_gb"] = workspace / 1e9
            path = work / f"cluster-{n}{'-cal' if eff else ''}.json"
            path.write_text(json.dumps(c, indent=1))
            return str(path)

        rows = [(m, predict(colo, mlir, m["plan"], m["ranks"], args.batch, spec_file(m["ranks"])))
                for m in measured]
        d1 = clusters[min(clusters, key=int)]["device"]
        print(f"GPT-2 {args.layers} layers, hidden {args.hidden}, {args.heads} heads, vocab "
              f"{args.vocab}, seq {args.seq}, global batch {args.batch}, AdamW; "
              f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
        print(f"local-cpu:1x{min(clusters, key=int)}: {d1['peak_tflops_32'] * 1e3:.1f} GFLOP/s GEMM, "
              f"{d1['memory_bandwidth_gbs']:.2f} GB/s per device")
        report(rows, f"\n== predicted with {args.cluster} (the micro-benchmark only)")
        single = [(m, p) for m, p in rows if m["ranks"] == 1 and m.get("profile_shares")]
        calibrated = None
        if single:
            eff, workspace = calibrate(*single[0]), fit_workspace(*single[0])

            def calibrated_prediction(mlir_path, m):
                p = predict(colo, mlir_path, m["plan"], m["ranks"], args.batch,
                            spec_file(m["ranks"], eff, workspace))
                return {**p, "workspace_bytes": workspace}
            calibrated = [(m, calibrated_prediction(mlir, m)) for m in measured]
            report(calibrated,
                   f"\n== calibrated on the one-rank profile: matmul_efficiency {eff[0]:.3f}, "
                   f"memory_efficiency {eff[1]:.3f}, workspace {workspace / 1e6:.1f} MB")
            held = [r for r in calibrated if r[0]["ranks"] > 1]
            terr = [abs(pct(p["step_time_s"], m["step_time_s"])) for m, p in held]
            print(f"held-out plans (all but the one-rank plan): step time mean absolute error "
                  f"{statistics.mean(terr):.1f}%")
            if not args.no_held_out:
                if not args.measured:
                    held_out = measure_held_out(colo, work, tiny, args)
                held_rows = [(m, calibrated_prediction(work / f"{m['model']}.mlir", m))
                             for m in held_out]
                report(held_rows, "\n== held-out models, with the efficiencies and workspace "
                       "calibrated on the GPT-2's one-rank plan")
                both = held + held_rows
                mae = lambda key: statistics.mean(abs(pct(p[key], m[key])) for m, p in both)
                print(f"held out, plans and models ({len(both)}): step time mean absolute error "
                      f"{mae('step_time_s'):.1f}%, peak memory {mae('memory_bytes'):.1f}% "
                      f"against the resident memory")
        if args.json:
            cfg = {k: getattr(args, k) for k in ("layers", "hidden", "heads", "vocab", "seq",
                                                  "batch", "steps", "warmup", "cluster")}
            json.dump({"config": cfg, "clusters": clusters, "measured": measured,
                       "held_out": held_out,
                       "predicted": [p for _, p in rows],
                       "calibrated": [p for _, p in calibrated] if calibrated else None},
                      open(args.json, "w"), indent=1)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
