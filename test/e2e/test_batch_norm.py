"""Batch norm under plans: torchvision's ResNet-18 trained 3 steps (SGD, batch
16) under dp=2, micro=2, pp=2 and their compositions against PyTorch training
the same model with the same statistics.

Data parallelism synchronizes the statistics over the data-parallel group by
default (PyTorch's SyncBatchNorm): dp=2 computes what one rank computes.
`bn=local` keeps them per rank (DistributedDataParallel without SyncBatchNorm,
whose default broadcast_buffers makes rank 0's running statistics everyone's).
Microbatches, with or without pipelines, compute statistics per microbatch, as
PyTorch does for each forward call under gradient accumulation, and update the
running statistics once per microbatch in order.

The reference is PyTorch in float64 computing each forward call on the rows
that call sees; colo must be within 1e-4 of it (losses relative, parameters and
running statistics relative to each tensor's largest magnitude) or within twice
the distance of PyTorch's own float32 runs (train_ref.float32_variants), as in
test_train.py. Plans that compute what one rank computes must also match the
one-rank colo run within 1e-5 (SGD: summation order only)."""
import copy
import re

import numpy as np
import onnx
import pytest
import torch
import torch.nn.functional as F
from onnx import numpy_helper
from safetensors.numpy import load_file

import train_ref
from conftest import run_colo
from test_train import export

STEPS, BATCH, LR = 3, 16, 1e-3
TRAIN = f"loss=cross-entropy,optimizer=sgd,lr={LR},momentum=0.9"
HALF = BATCH // 2


def rows(*ranges):
    return [i for a, b in ranges for i in range(a, b)]


# Per plan: the forward calls of one step, each the rows (of the step's batch)
# whose statistics it shares, and whether its running statistics count
# (bn=local: only rank 0's are kept).
WHOLE = [(rows((0, BATCH)), True)]
HALVES = [(rows((0, HALF)), True), (rows((HALF, BATCH)), True)]
PLANS = {
    "": WHOLE,
    "dp=2": WHOLE,
    "pp=2": WHOLE,
    "dp=2,bn=local": [(rows((0, HALF)), True), (rows((HALF, BATCH)), False)],
    "micro=2": HALVES,
    "pp=2,micro=2": HALVES,
    # Rank r holds rows [8r, 8r + 8); microbatch k is its rows [4k, 4k + 4),
    # and the statistics of microbatch k span both ranks' rows.
    "dp=2,micro=2": [(rows((0, 4), (8, 12)), True), (rows((4, 8), (12, 16)), True)],
}
SAME_AS_ONE_RANK = ("dp=2", "pp=2")


def pytorch_train(model, data, calls):
    """SGD steps where each step's loss is the mean of its forward calls'
    losses (equal sizes), each call normalizing over its own rows; the final
    parameters and running statistics."""
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
    losses = []
    for s in range(STEPS):
        x = data["x"][s * BATCH:(s + 1) * BATCH]
        y = data["labels"][s * BATCH:(s + 1) * BATCH]
        opt.zero_grad()
        total = 0.0
        for idx, keeps_statistics in calls:
            saved = copy.deepcopy({k: v for k, v in model.state_dict().items()
                                   if "running" in k})
            loss = F.cross_entropy(model(x[idx]), y[idx]) / len(calls)
            loss.backward()
            total += loss.item()
            if not keeps_statistics:
                model.load_state_dict(saved, strict=False)
        opt.step()
        losses.append(total)
    state = {k: v.detach().double().numpy().copy() for k, v in model.state_dict().items()
             if "num_batches" not in k}
    return losses, state


@pytest.fixture(scope="module")
def resnet(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("resnet18")
    model, example, data, _ = train_ref.build("resnet18")
    data = {k: v[:STEPS * BATCH] for k, v in data.items()}
    export(model, example, tmp / "model.onnx", "onnx")
    # The exporter traces in training mode and writes the running statistics
    # that forward left: PyTorch starts from what the file holds.
    held = {i.name: numpy_helper.to_array(i)
            for i in onnx.load(tmp / "model.onnx").graph.initializer}
    model.load_state_dict({k: torch.from_numpy(held[k].copy()) for k in model.state_dict()
                           if "running" in k}, strict=False)
    np.savez(tmp / "data.npz", x=data["x"].numpy(), labels=data["labels"].numpy())
    return tmp, model, data


_runs = {}


def colo_train(tmp, plan):
    """(losses, weights) of colo training under `plan`, once per plan."""
    if (tmp, plan) in _runs:
        return _runs[tmp, plan]
    exe = tmp / (plan.replace(",", "_").replace("=", "") or "one")
    args = ["compile", tmp / "model.onnx", "-o", exe, "--train", TRAIN]
    if plan:
        args += ["--plan", plan]
    run_colo(*args)
    out = run_colo("run", exe, "--steps", STEPS, "--data", tmp / "data.npz", "--threads", 1,
                   "-o", exe / "w.safetensors").stdout
    losses = [float(x) for x in re.findall(r"^step \d+/\d+\s+loss (\S+)", out, re.M)]
    _runs[tmp, plan] = losses, load_file(exe / "w.safetensors")
    return _runs[tmp, plan]


def relative(a, b):
    return float(np.abs(np.asarray(a, np.float64) - b).max() / max(np.abs(b).max(), 1e-12))


@pytest.mark.parametrize("plan", [p for p in PLANS if p], ids=[p for p in PLANS if p])
def test_batch_norm_under_a_plan_matches_pytorch(plan, resnet):
    tmp, model, data = resnet
    ours, weights = colo_train(tmp, plan)
    data64 = {k: v.double() if v.is_floating_point() else v for k, v in data.items()}
    f64, want = pytorch_train(copy.deepcopy(model).double(), data64, PLANS[plan])
    f32_runs = [pytorch_train(m, data, PLANS[plan]) for m in train_ref.float32_variants(model)]

    assert len(ours) == STEPS
    loss_err = max(abs(a - b) / abs(b) for a, b in zip(ours, f64))
    floor = max(max(abs(a - b) / abs(b) for a, b in zip(run, f64)) for run, _ in f32_runs)
    print(f"\nResNet-18 {plan}: losses vs PyTorch f64 {loss_err:.1e} "
          f"(PyTorch f32 {floor:.1e})")
    assert loss_err <= max(1e-4, 2 * floor), (ours, f64)
    statistics = [k for k in want if "running" in k]
    assert statistics and all(k in weights for k in statistics), sorted(weights)[:5]
    worst = {"parameter": (0.0, 0.0, ""), "running statistic": (0.0, 0.0, "")}
    for key in want:
        if key not in weights and "running" not in key:
            continue
        err = relative(weights[key], want[key])
        floor = max(relative(state[key], want[key]) for _, state in f32_runs)
        assert err <= max(1e-4, 2 * floor), f"{key}: {err:.2e} (PyTorch f32 {floor:.2e})"
        kind = "running statistic" if "running" in key else "parameter"
        worst[kind] = max(worst[kind], (err, floor, key))
    for kind, (err, floor, key) in worst.items():
        print(f"  worst {kind} {key}: colo {err:.1e}, PyTorch f32 {floor:.1e}")

    if plan in SAME_AS_ONE_RANK:
        one, one_w = colo_train(tmp, "")
        assert max(abs(a - b) / abs(b) for a, b in zip(ours, one)) <= 1e-5, (ours, one)
        for key, w in one_w.items():
            assert relative(weights[key], w.astype(np.float64)) <= 1e-5, key


def test_per_rank_statistics_differ_from_synchronized_ones(resnet):
    """The plan option is real: per-rank statistics train another model."""
    tmp, _, _ = resnet
    sync, _ = colo_train(tmp, "dp=2")
    local, _ = colo_train(tmp, "dp=2,bn=local")
    assert max(abs(a - b) / abs(b) for a, b in zip(sync, local)) > 1e-2, (sync, local)
