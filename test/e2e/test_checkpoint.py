"""Sharded checkpoints (colo run --checkpoint-dir / --resume, colo checkpoint).

A run resumed under the plan that wrote its checkpoint must end bit-identical
to the run that was never interrupted, also after SIGKILL at a random instant
of a run that checkpoints every step (no checkpoint left behind may be torn).
Resumed under another plan, the checkpoint is resharded: the state the new plan
holds, written back as a checkpoint, must equal the original bit for bit, and
the following steps must match the uninterrupted run within 1e-6 (SGD with
momentum: Adam turns the rounding differences of two plans' sums into
differences of up to its learning rate, see test_parallel.py). An exported
checkpoint must load with transformers' from_pretrained and give colo's
logits. Bad checkpoints and mismatched programs are refused naming the
tensor."""
import json
import os
import random
import re
import shutil
import signal
import subprocess
import time

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file

import models
import train_ref
from conftest import BIN, run_colo
from test_faults import rank_pids

PLANS = ["one", "dp=2,zero=3", "tp=2", "pp=2,micro=2"]
TRAIN = {"adamw": "loss=lm,optimizer=adamw,lr=1e-2",
         "sgd": "loss=lm,optimizer=sgd,lr=0.1,momentum=0.9"}
STEPS, HALF = 6, 3


@pytest.fixture(scope="module")
def exes(tmp_path_factory):
    """Per (plan, optimizer): a tiny float32 GPT compiled under the plan."""
    tmp = tmp_path_factory.mktemp("checkpoint")
    model = tmp / "gpt.mlir"
    run_colo("model", "gpt", "--layers", 2, "--hidden", 32, "--heads", 4, "--vocab", 64,
             "--seq", 16, "--batch", 8, "--dtype", "f32", "-o", model)
    cache = {}

    def get(plan, opt="adamw"):
        if (plan, opt) not in cache:
            exe = tmp / f"{plan}-{opt}"
            extra = [] if plan == "one" else ["--plan", plan]
            run_colo("compile", model, "--train", TRAIN[opt], "-o", exe, *extra)
            cache[plan, opt] = exe
        return cache[plan, opt]

    return get


def run(exe, out, steps, *extra, check=True):
    """colo run on synthetic data; (losses by step, the process)."""
    proc = run_colo("run", exe, "--steps", steps, "--data", "synthetic", "--threads", 1,
                    "-o", out, *extra, check=check)
    losses = {int(k): float(v) for k, v in
              re.findall(r"^step (\d+)/\d+\s+loss (\S+)", proc.stdout, re.M)}
    return losses, proc


@pytest.fixture(scope="module")
def uninterrupted(exes, tmp_path_factory):
    """Per (plan, optimizer, steps): the weights and losses of a run never stopped."""
    tmp = tmp_path_factory.mktemp("uninterrupted")
    cache = {}

    def get(plan, opt="adamw", steps=STEPS):
        if (plan, opt, steps) not in cache:
            out = tmp / f"{plan}-{opt}-{steps}.safetensors"
            losses, _ = run(exes(plan, opt), out, steps)
            cache[plan, opt, steps] = load_file(out), losses
        return cache[plan, opt, steps]

    return get


def exported(checkpoint, out):
    """Every tensor of a checkpoint, whole (colo checkpoint export --with-state)."""
    run_colo("checkpoint", "export", checkpoint, "-o", out, "--with-state")
    return load_file(out / "model.safetensors")


def assert_identical(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert np.array_equal(a[k], b[k]), f"{k} differs"


@pytest.mark.parametrize("plan", PLANS + ["dp=2,tp=2,zero=3"])
def test_resume_under_the_same_plan_is_bit_identical(plan, exes, uninterrupted, tmp_path):
    exe = exes(plan)
    ckpt = tmp_path / "ckpt"
    run(exe, tmp_path / "half.safetensors", HALF, "--checkpoint-dir", ckpt,
        "--checkpoint-every", 1)
    assert sorted(os.listdir(ckpt)) == ["step-00000002", "step-00000003"]  # keeps 2
    losses, proc = run(exe, tmp_path / "w.safetensors", STEPS, "--checkpoint-dir", ckpt,
                       "--resume", ckpt)
    assert f"resumed from {ckpt}/step-00000003 at step 3" in proc.stdout
    assert "0 resharded" in proc.stdout
    weights, full = uninterrupted(plan)
    assert losses == {k: v for k, v in full.items() if k > HALF}
    assert_identical(load_file(tmp_path / "w.safetensors"), weights)


# ZeRO over tensor parallelism keeps flat blocks of the rank's tp block.
RESHARD = [(w, r) for w in PLANS[1:] for r in PLANS if r != w] + \
    [("dp=2,tp=2,zero=3", "tp=2"), ("one", "dp=2,tp=2,zero=3"), ("dp=2,tp=2,zero=1", "one")]


@pytest.mark.parametrize("writer,reader", RESHARD)
def test_resume_under_another_plan_reshards(writer, reader, exes, uninterrupted, tmp_path):
    ckpt = tmp_path / "ckpt"
    run(exes(writer, "sgd"), tmp_path / "half.safetensors", HALF, "--checkpoint-dir", ckpt)
    # The reader's state, written back, is the writer's bit for bit.
    again = tmp_path / "again"
    _, proc = run(exes(reader, "sgd"), tmp_path / "w0.safetensors", HALF, "--resume", ckpt,
                  "--checkpoint-dir", again)
    assert re.search(r"[1-9]\d* resharded", proc.stdout), proc.stdout
    assert_identical(exported(again, tmp_path / "e1"), exported(ckpt, tmp_path / "e0"))
    # The next steps follow the uninterrupted run of the writer's plan.
    losses, _ = run(exes(reader, "sgd"), tmp_path / "w.safetensors", STEPS, "--resume", ckpt)
    weights, full = uninterrupted(writer, "sgd")
    mine = load_file(tmp_path / "w.safetensors")
    worst = max(float(np.abs(mine[k] - weights[k]).max() / np.abs(weights[k]).max())
                for k in weights)
    print(f"\n{writer} -> {reader}: weights after {STEPS} steps {worst:.1e} from "
          f"the uninterrupted {writer} run")
    assert worst < 1e-6
    for k in range(HALF + 1, STEPS + 1):
        assert abs(losses[k] - full[k]) <= 1e-6 * abs(full[k]) + 1e-6  # 6 decimals printed


def kill_tree(proc):
    """SIGKILL to the ranks and then mpirun (a lost node, a preempted job)."""
    for pid in rank_pids(proc.pid) + [proc.pid]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def kill_trial(exe, steps, duration, ckpt, out, rng):
    """Runs with a checkpoint every step, SIGKILLed at a random instant of
    its expected duration, then resumed to the end; every checkpoint left must
    be whole. Returns (the kill instant, the step resumed from)."""
    args = [str(BIN / "colo"), "run", str(exe), "--steps", str(steps), "--data", "synthetic",
            "--threads", "1", "-o", str(out), "--checkpoint-dir", str(ckpt),
            "--checkpoint-every", "1"]
    instant = rng.uniform(0.05, duration)
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    time.sleep(instant)
    kill_tree(proc)
    left = sorted(p for p in os.listdir(ckpt) if p.startswith("step-")) \
        if ckpt.exists() else []
    for i, name in enumerate(left):  # none is torn
        exported(ckpt / name, out.parent / f"check-{name}")
    resume = ["--resume", str(ckpt)] if left else []
    proc = subprocess.run(args + resume, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return instant, int(left[-1][5:]) if left else 0


@pytest.mark.parametrize("plan", ["one", "dp=2,zero=3", "pp=2,micro=2"])
def test_killed_runs_resume_from_a_whole_checkpoint(plan, exes, uninterrupted, tmp_path):
    """Two kills per plan here; bench/checkpoint_kill_trials.py runs 20."""
    steps = 60
    weights, _ = uninterrupted(plan, "adamw", steps)
    start = time.time()  # a run with its checkpoints: the span of the instants
    run(exes(plan), tmp_path / "timed.safetensors", steps, "--checkpoint-dir",
        tmp_path / "timed", "--checkpoint-every", 1)
    duration = time.time() - start
    rng = random.Random(f"kill {plan}")
    for trial in range(2):
        ckpt, out = tmp_path / f"ckpt{trial}", tmp_path / f"w{trial}.safetensors"
        instant, step = kill_trial(exes(plan), steps, duration, ckpt, out, rng)
        print(f"\n{plan}: killed at {instant:.2f} s of {duration:.2f}, resumed from step {step}")
        assert_identical(load_file(out), weights)


def test_export_loads_in_transformers(tmp_path):
    import transformers as tf

    for name in ["gpt2", "llama"]:
        torch.manual_seed(models.SEED)
        model = train_ref._hf(name, 2).train()
        ids = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(1))
        onnx = tmp_path / f"{name}.onnx"
        models.export(model, (ids,), onnx, "torchscript", input_names=["input_ids"])
        exe, ckpt, hf = tmp_path / f"{name}-exe", tmp_path / f"{name}-ckpt", tmp_path / name
        run_colo("compile", onnx, "--train", "loss=lm,optimizer=adamw,lr=1e-3", "-o", exe)
        run(exe, exe / "w.safetensors", 2, "--checkpoint-dir", ckpt)
        run_colo("checkpoint", "export", ckpt, "-o", hf, "--strip-prefix", "model.")
        model.model.config.save_pretrained(hf)
        loaded = tf.AutoModelForCausalLM.from_pretrained(hf).eval()
        colo = {k: torch.from_numpy(v) for k, v in load_file(exe / "w.safetensors").items()}
        missing = model.load_state_dict(colo, strict=False).missing_keys
        assert set(missing) <= {"model.lm_head.weight"}  # tied to the embedding in GPT-2
        with torch.no_grad():
            want = model.eval()(ids)
            got = loaded(input_ids=ids).logits
        assert torch.equal(got, want), f"{name}: {float((got - want).abs().max())}"


def test_bad_checkpoints_and_mismatches_are_refused(exes, tmp_path):
    exe = exes("one")
    ckpt = tmp_path / "ckpt"
    run(exe, tmp_path / "w.safetensors", 2, "--checkpoint-dir", ckpt)

    def refused(*args, words):
        proc = run_colo(*args, check=False)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert any(all(w in line for w in words) for line in lines), proc.stderr

    out = tmp_path / "x.safetensors"
    base = ["run", exe, "--steps", 3, "--data", "synthetic", "-o", out]
    # Starting over into a directory that holds checkpoints would lose them.
    refused(*base, "--checkpoint-dir", ckpt, words=["already holds checkpoints", "--resume"])
    refused(*base, "--resume", tmp_path / "nothing", words=["no such directory"])
    os.mkdir(tmp_path / "empty")
    refused(*base, "--resume", tmp_path / "empty", words=["holds no checkpoint"])
    # Another program: an SGD step has no Adam moments, and the checkpoint no momentum.
    sgd = ["run", exes("one", "sgd"), "--steps", 3, "--data", "synthetic", "-o", out]
    refused(*sgd, "--resume", ckpt, words=["momentum_buffer", "--resume-ignore"])
    refused(*sgd, "--resume", ckpt, "--resume-ignore", "*#momentum_buffer",
            words=["exp_avg", "matches no state buffer"])
    _, proc = run(exes("one", "sgd"), out, 3, "--resume", ckpt,
                  "--resume-ignore", "*#momentum_buffer,*#exp_avg*")
    assert "keep their initial values" in proc.stderr

    # Tampered indexes: a file outside the checkpoint, a wrong shape, a block
    # that does not exist, and a rank file that is not what the index says.
    step = ckpt / "step-00000002"
    index = json.loads((step / "index.json").read_text())
    name = "transformer.h.0.mlp.c_fc.weight"
    tampered = [
        (lambda i: i["tensors"][name]["pieces"][0].update(file="../w.safetensors"),
         ["not a plain file name"]),
        (lambda i: i["tensors"][name].update(shape=[33, 128]),
         [name, "whole piece of shape"]),
        (lambda i: i["tensors"][name]["pieces"][0].update(
            layout="block", dim=0, groups=1, index=3, parts=2), ["block 3 of 2"]),
        (lambda i: i["tensors"][name]["pieces"][0].update(stored=[32, 129]), [name]),
        (lambda i: i.update(version=7), ["version 7"]),
    ]
    for change, words in tampered:
        bad = tmp_path / "bad"
        shutil.rmtree(bad, ignore_errors=True)
        shutil.copytree(step, bad)
        broken = json.loads(json.dumps(index))
        change(broken)
        (bad / "index.json").write_text(json.dumps(broken))
        refused(*base, "--resume", bad, words=words)
    (bad / "index.json").write_text("{not json")
    refused(*base, "--resume", bad, words=["not valid JSON"])
    bad_file = bad / "rank-00000.safetensors"
    shutil.copy(step / "index.json", bad / "index.json")
    bad_file.write_bytes(bad_file.read_bytes()[:100])
    refused(*base, "--resume", bad, words=["rank-00000.safetensors"])
