"""Recomputation and optimizer offload change no bits and save device memory:
GPT-2 (with dropout), Llama and ResNet-18 trained 5 steps under
recompute=full or selective, offload=optimizer, optimizer+params or
activations, end
with weights byte-identical to the plain run, alone and under dp=2 and pp=2
(ResNet-18 under pipelines with recompute only), tp=2 and ZeRO-3. For the
transformers, 4 layers of 8 x 32 tokens, whose activations dominate the
step's temporaries, recomputation shrinks the arena the program plans;
offload moves the optimizer's state, and the parameters, to the host, so
the device holds less at its peak and the host holds that state."""
import json
import re

import pytest
import torch

import models
from conftest import ROOT, run_colo

STEPS = 5
TRAIN = {"gpt2": "loss=lm,optimizer=adamw,lr=1e-3",
         "llama": "loss=lm,optimizer=adamw,lr=1e-3",
         "resnet18": "loss=cross-entropy,optimizer=adamw,lr=1e-4"}
RECOMPUTE = [(name, parallel, f"recompute={policy}")
             for name in ("gpt2", "llama")
             for parallel, policies in (("", ("full", "selective")), ("dp=2", ("full",)),
                                        ("pp=2,micro=2", ("full",)))
             for policy in policies] + \
            [("gpt2", "tp=2", "recompute=full"), ("llama", "dp=2,zero=3", "recompute=full"),
             ("resnet18", "", "recompute=full"), ("resnet18", "dp=2", "recompute=full"),
             # Batch norm's running statistics stay the forward's, carried
             # from microbatch to microbatch, not the recomputed ones.
             ("resnet18", "pp=2,micro=2", "recompute=full")]
OFFLOAD = [(name, parallel, "offload=optimizer")
           for name in ("gpt2", "llama", "resnet18")
           for parallel in ("", "dp=2", "pp=2,micro=2") if not (name == "resnet18" and "pp" in parallel)] + \
          [("gpt2", "dp=2,zero=3", "offload=optimizer"),
           ("llama", "", "recompute=full,offload=optimizer")]
PARAMS = [(name, parallel, "offload=optimizer+params")
          for name in ("gpt2", "llama", "resnet18")
          for parallel in ("", "dp=2", "pp=2,micro=2") if not (name == "resnet18" and "pp" in parallel)] + \
         [("llama", "", "recompute=full,offload=optimizer+params"),
          ("llama", "dp=2,zero=3", "offload=optimizer+params"),
          # ZeRO-1/2 slice the host's parameter for the update: a local copy
          # in host memory.
          ("gpt2", "dp=2,zero=1,micro=2", "offload=optimizer+params")]
ACTIVATIONS = [(name, parallel, "offload=activations")
               for name in ("gpt2", "llama", "resnet18")
               for parallel in ("", "dp=2", "pp=2,micro=2")
               if not (name == "resnet18" and "pp" in parallel)] + \
              [("llama", "", "recompute=full,offload=activations"),
               ("gpt2", "dp=2,zero=3", "offload=optimizer+params+activations")]
# Chunks of at most 16 KiB: several per layer, so that chunks are dropped
# between the forward and the backward and fetched again.
CHUNKS = ("--chunk-mb", "0.015625")


class Run:
    """One compiled and trained plan: its final weights, the largest rank's
    planned arena, how many ops it recomputes, and the device and host
    memory its ranks held at most."""

    def __init__(self, exe, out):
        self.weights = (exe / "w.safetensors").read_bytes()
        ir = exe / "ir"
        self.arena = max(int(b) for b in re.findall(r"\barena_bytes = (\d+)",
                                                    (ir / "2-program.mlir").read_text()))
        step = (ir / "1-train-step.mlir").read_text()
        self.clones = step.count("colo.recomputed")
        self.fetches = step.count("colo.chunk")
        self.stashes = step.count("colo.stash")
        # Bytes: the MB printed beside them round plans apart by less than
        # 0.05 MB to the same figure.
        self.device = int(re.search(r"device memory: [\d.]+ MB at most per rank \((\d+) bytes\)",
                                    out)[1]) / 1e6
        host = re.search(r"host memory: ([\d.]+) MB at most", out)
        self.host = float(host[1]) if host else 0.0


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A Run per model, plan and memory option, each run once."""
    tmp = tmp_path_factory.mktemp("memory")
    paths, cache = {}, {}

    def get(name, parallel, option, *flags):
        if name not in paths:
            model, args = transformer(name) if name in ("gpt2", "llama") else models.build(name)
            paths[name] = tmp / f"{name}.onnx"
            models.export(model.train(), args, paths[name], "torchscript")
        key = (name, parallel, option, flags)
        if key not in cache:
            plan = ",".join(p for p in (parallel, option) if p) or "recompute=none"
            exe = tmp / f"{name}-{len(cache)}"
            run_colo("compile", paths[name], "-o", exe, "--train", TRAIN[name], "--plan", plan,
                     "--dump-ir", exe / "ir", *flags)
            out = run_colo("run", exe, "--steps", STEPS, "--data", "synthetic", "--threads", 1,
                           "--device-memory", "4G", "-o", exe / "w.safetensors").stdout
            cache[key] = Run(exe, out)
        return cache[key]

    get.paths = paths
    return get


def transformer(name):
    import transformers as tf

    torch.manual_seed(models.SEED)
    if name == "gpt2":
        model = tf.GPT2LMHeadModel(tf.GPT2Config(n_layer=4, n_embd=64, n_head=4, vocab_size=256,
                                                 n_positions=32, use_cache=False))
    else:
        model = tf.LlamaForCausalLM(tf.LlamaConfig(
            hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=256, max_position_embeddings=32,
            use_cache=False))
    return models.LogitsOnly(model), (torch.randint(0, 256, (8, 32)),)


@pytest.mark.parametrize("name,parallel,option", RECOMPUTE)
def test_recomputation_changes_no_bits(name, parallel, option, trained):
    plain, run = trained(name, parallel, ""), trained(name, parallel, option)
    print(f"\n{name} {parallel or 'one rank'} {option}: arena {run.arena} bytes "
          f"(plain {plain.arena}, {run.arena / plain.arena:.2f}x)")
    assert run.clones > 0
    assert run.weights == plain.weights
    if name != "resnet18":  # its peak is in the stem, before the repeated blocks
        assert run.arena < plain.arena


@pytest.mark.parametrize("name,parallel,option", OFFLOAD)
def test_optimizer_offload_changes_no_bits(name, parallel, option, trained):
    """The moments live on the host and the update runs there: the same
    weights; the device's peak falls, and the host holds the state."""
    plain = trained(name, parallel, "")
    run = trained(name, parallel, option)
    print(f"\n{name} {parallel or 'one rank'} {option}: device {run.device} MB "
          f"(plain {plain.device}), host {run.host} MB")
    assert run.weights == plain.weights
    assert plain.host == 0 and run.host > 0
    assert run.device < plain.device


@pytest.mark.parametrize("name,parallel,option", PARAMS)
def test_parameter_offload_changes_no_bits(name, parallel, option, trained):
    """The parameters live on the host too, fetched chunk by chunk: the
    same weights; the device holds less than with the optimizer alone
    offloaded, and some chunks are fetched twice (forward and backward)."""
    plain = trained(name, parallel, "")
    alone = trained(name, parallel, option.replace("+params", ""))
    run = trained(name, parallel, option, *CHUNKS)
    print(f"\n{name} {parallel or 'one rank'} {option}: device {run.device} MB "
          f"(plain {plain.device}, optimizer offloaded {alone.device}), host {run.host} MB, "
          f"{run.fetches} fetches")
    assert run.weights == plain.weights
    assert run.device < alone.device and run.host > 0
    assert run.fetches > 0


@pytest.mark.parametrize("name,parallel,option", ACTIVATIONS)
def test_activation_offload_changes_no_bits(name, parallel, option, trained):
    """The activations the backward reads wait on the host between the
    forward and the backward: the same weights, and the device holds less
    than without (than the same plan without activations, with the rest
    offloaded)."""
    base = option.replace("+activations", "").replace("offload=activations", "").strip(",")
    without = trained(name, parallel, base)
    run = trained(name, parallel, option, *CHUNKS)
    print(f"\n{name} {parallel or 'one rank'} {option}: device {run.device} MB "
          f"(without {without.device}), host {run.host} MB, {run.stashes} fetches of activations")
    assert run.weights == without.weights == trained(name, parallel, "").weights
    assert run.host > without.host and run.stashes > 0
    # ResNet-18's small images, and checkpoints alone under recompute=full,
    # keep little between the passes: the peak is then the gradients at the
    # end of the backward, which no activation offload moves.
    if name == "resnet18" or "recompute" in option:
        assert run.device <= without.device
    else:
        assert run.device < without.device


@pytest.mark.parametrize("name,parallel,option", [
    ("gpt2", "", "recompute=full"), ("llama", "dp=2", "offload=optimizer+params"),
    ("gpt2", "pp=2,micro=2", "offload=optimizer"), ("resnet18", "", "recompute=full"),
    ("llama", "", "offload=activations")])
def test_plan_explain_compiles_the_memory_the_run_holds(name, parallel, option, trained):
    """colo plan --explain --train compiles the plan's step: what it says the
    rank that plans most holds is the device pool's measured peak, within
    5%, and it names the host's share and the link's bytes of offload."""
    run = trained(name, parallel, option)
    ranks = 2 if parallel else 1
    explained = json.loads(run_colo(
        "plan", trained.paths[name], "--cluster", f"local-cpu:1x{ranks}", "--explain",
        ",".join((parallel, option)).strip(","), "--train", TRAIN[name], "--json").stdout)
    compiled = explained["compiled"]
    device = compiled["memory_gib"]["total"] * 2**30 / 1e6
    print(f"\n{name} {parallel or 'one rank'} {option}: compiled {device:.2f} MB, "
          f"measured {run.device} MB")
    assert abs(device - run.device) <= 0.05 * run.device
    assert (compiled["host_memory_gib"] > 0) == ("offload" in option)
    assert (compiled["link_bytes_per_step"] > 0) == ("offload" in option)
    assert (compiled["recomputed_ops"] > 0) == ("recompute" in option)


def test_a_device_memory_budget_is_checked_when_compiling_and_running(tmp_path):
    """colo compile --device-memory refuses a step that plans more, and records
    the budget, which colo run then holds each rank to."""
    model = ROOT / "examples" / "gpt2-tiny.onnx"

    def planned(policy):
        exe = tmp_path / f"free-{policy}"
        run_colo("compile", model, "-o", exe, "--train", "loss=lm", "--plan", f"recompute={policy}")
        out = run_colo("run", exe, "--steps", 1, "--data", "synthetic",
                       "-o", exe / "w.safetensors").stdout
        return float(re.search(r"memory: ([\d.]+) MB planned per rank", out)[1]) * 1e6

    plain, full = planned("none"), planned("full")
    budget = int((plain + full) / 2)
    proc = run_colo("compile", model, "-o", tmp_path / "plain", "--train", "loss=lm",
                    "--device-memory", budget, check=False)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("colo: error:")]
    assert proc.returncode == 1 and len(errors) == 1, proc.stderr
    assert "of device memory per rank" in errors[0] and "the largest buffer" in errors[0]
    assert f"more than the {budget / 1e6:.1f} MB of --device-memory" in errors[0]
    assert not (tmp_path / "plain" / "program.pb").exists()

    exe = tmp_path / "full"
    run_colo("compile", model, "-o", exe, "--train", "loss=lm", "--plan", "recompute=full",
             "--device-memory", budget)
    proc = run_colo("run", exe, "--steps", 1, "--data", "synthetic", "--device-memory",
                    int(full) // 2, "-o", exe / "w.safetensors", check=False)
    assert proc.returncode == 1 and "was compiled to fit" in proc.stderr, proc.stderr
    assert "step 1" not in proc.stdout
    out = run_colo("run", exe, "--steps", 1, "--data", "synthetic",
                   "-o", exe / "w.safetensors").stdout
    assert f"of the {budget / 1e6:.1f} MB of --device-memory" in out, out


def test_recompute_budget_recomputes_as_little_as_fits_the_device(tmp_path):
    """recompute=budget with --device-memory: given what selective
    recomputation plans (between the plain step's memory and full
    recomputation's), it recomputes some of the layers' values, not all,
    fits, and trains the plain run's bits; below full's it is refused, and
    without a budget it says what it needs."""
    model = ROOT / "examples" / "gpt2-tiny.onnx"

    def compiled(plan, *extra, check=True):
        exe = tmp_path / f"{plan}-{len(list(tmp_path.iterdir()))}"
        proc = run_colo("compile", model, "-o", exe, "--train", "loss=lm", "--plan", plan,
                        "--dump-ir", exe / "ir", *extra, check=check)
        return exe, proc

    def peak(exe):
        """The device memory the run held at most (the arena, the state and
        inputs, the operand scratch)."""
        out = run_colo("run", exe, "--steps", 2, "--data", "synthetic", "--device-memory", "4G",
                       "-o", exe / "w.safetensors").stdout
        return float(re.search(r"device memory: ([\d.]+) MB at most", out)[1]) * 1e6

    def clones(exe):
        return (exe / "ir" / "1-train-step.mlir").read_text().count("colo.recomputed")

    plain, _ = compiled("recompute=none")
    full, _ = compiled("recompute=full")
    selective, _ = compiled("recompute=selective")
    budget = int(peak(selective) + 1e5)  # colo run prints 0.1 MB
    assert peak(full) < budget < peak(plain)
    exe, _ = compiled("recompute=budget", "--device-memory", budget)
    assert 0 < clones(exe) < clones(full)
    assert peak(exe) <= budget
    assert (exe / "w.safetensors").read_bytes() == (plain / "w.safetensors").read_bytes()

    _, proc = compiled("recompute=budget", "--device-memory", int(peak(full) * 0.9),
                       check=False)
    assert proc.returncode == 1 and "of device memory per rank" in proc.stderr, proc.stderr
    _, proc = compiled("recompute=budget", check=False)
    assert proc.returncode == 1 and "give the device's memory with colo compile " \
        "--device-memory" in proc.stderr, proc.stderr


def test_checkpoints_resume_across_offload(tmp_path):
    """The optimizer's state keeps its names on the host: a checkpoint of an
    offloaded run resumes in a plain one, and the other way round, with the
    bits of an uninterrupted plain run."""
    model = ROOT / "examples" / "gpt2-tiny.onnx"
    exes = {}
    for offload in ("none", "optimizer"):
        exes[offload] = tmp_path / offload
        run_colo("compile", model, "-o", exes[offload], "--train", "loss=lm",
                 "--plan", f"offload={offload}")
    run = ("--data", "synthetic", "--threads", 1)
    run_colo("run", exes["none"], "--steps", 3, *run, "-o", tmp_path / "straight.safetensors")
    for first, then in (("optimizer", "none"), ("none", "optimizer")):
        ckpt = tmp_path / f"ckpt-{first}"
        run_colo("run", exes[first], "--steps", 2, *run, "--checkpoint-dir", ckpt,
                 "-o", tmp_path / "w.safetensors")
        out = tmp_path / f"resumed-{then}.safetensors"
        run_colo("run", exes[then], "--steps", 3, *run, "--resume", ckpt, "-o", out)
        assert out.read_bytes() == (tmp_path / "straight.safetensors").read_bytes(), (first, then)


def timeline(path):
    """An SVG timeline's texts, its marks by kind and whether it draws the
    predicted times beside the measured ones."""
    import xml.etree.ElementTree as ET

    ns = "{http://www.w3.org/2000/svg}"
    svg = ET.parse(path).getroot()
    texts = " ".join(t.text or "" for t in svg.iter(ns + "text"))
    marks = [sum(1 for l in svg.iter(ns + "line") if l.get("class") == f"mark{k}")
             for k in range(3)]
    predicted = any(p.get("class") == "predicted" for p in svg.iter(ns + "polyline"))
    return texts, dict(zip(("to_host", "to_device", "recomputed"), marks)), predicted


def test_the_memory_timeline_draws_both_spaces_and_the_transfers(tmp_path):
    """colo run --timeline: an SVG of device memory over one step, and of
    host memory where the program keeps some there (the offloaded state),
    over the measured step times with the cost model's beside them, a tick
    where each transfer starts and one per recomputed step; its device peak
    is what the program's live buffers need, no more than the run held."""
    model = ROOT / "examples" / "gpt2-tiny.onnx"
    for plan in ("recompute=none", "offload=optimizer,recompute=full"):
        exe = tmp_path / plan.replace(",", "-")
        run_colo("compile", model, "-o", exe, "--train", "loss=lm", "--plan", plan)
        out = run_colo("run", exe, "--steps", 2, "--data", "synthetic", "--device-memory", "1G",
                       "--timeline", exe / "memory.svg", "-o", exe / "w.safetensors").stdout
        texts, marks, predicted = timeline(exe / "memory.svg")
        device = float(re.search(r"device memory, peak ([\d.]+) MB", texts)[1])
        held = float(re.search(r"device memory: ([\d.]+) MB at most", out)[1])
        assert 0 < device <= held
        assert re.search(r"measured [\d.]+ ms, predicted [\d.]+ ms", texts) and predicted
        assert re.search(r"predicted on local-cpu: [\d.]+ ms per step", out)
        offloaded = "offload" in plan
        assert ("host memory, peak" in texts) == offloaded
        assert (marks["to_host"] > 0) == offloaded and (marks["to_device"] > 0) == offloaded
        assert (marks["recomputed"] > 0) == ("recompute=full" in plan)


def test_plan_explain_draws_the_compiled_plans_memory(tmp_path):
    """colo plan --explain --train --timeline: the same picture before any
    run, over the cost model's step times; its device peak is within what
    the compiled program plans (the liveness, without the arena's
    fragmentation), and it marks the plan's offload and recompute."""
    model = ROOT / "examples" / "gpt2-tiny.onnx"
    svg = tmp_path / "plan.svg"
    explained = json.loads(run_colo(
        "plan", model, "--cluster", "local-cpu:1x1", "--explain", "offload=optimizer,recompute=full",
        "--train", "loss=lm", "--json", "--timeline", svg).stdout)
    compiled = explained["compiled"]
    assert compiled["step_time_s"] > 0
    texts, marks, predicted = timeline(svg)
    device = float(re.search(r"device memory, peak ([\d.]+) MB", texts)[1])
    assert 0 < device <= compiled["memory_gib"]["total"] * 2**30 / 1e6
    assert re.search(r"predicted [\d.]+ ms", texts) and not predicted
    assert marks["to_host"] > 0 and marks["recomputed"] > 0
    failed = run_colo("plan", model, "--cluster", "local-cpu:1x1", "--explain", "dp=1",
                      "--timeline", svg, check=False)
    assert failed.returncode != 0 and "--timeline draws a compiled plan" in failed.stderr
