"""Training parity: colo compiles the training step of a model exported from
PyTorch (ONNX through the TorchScript-based exporter, and a TorchScript trace),
runs it on the CPU, and must match PyTorch training the same model from the
same weights on the same batches: per-step losses within 1e-4 relative, final
parameters within 1e-4 of their largest magnitude (fp32)."""
import copy
import inspect
import re

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file

import train_ref
from conftest import run_colo

RTOL = 1e-4

CASES = [(name, source, "adamw") for name in train_ref.MODELS
         for source in ("onnx", "torchscript")] + [("resnet18", "onnx", "sgd")]


def input_name(model):
    return next(iter(inspect.signature(model.forward).parameters))


def export(model, example, path, source):
    model = copy.deepcopy(model)  # tracing in training mode moves batch-norm statistics
    with torch.no_grad():
        if source == "onnx":
            torch.onnx.export(model, example, path, dynamo=False,
                              training=torch.onnx.TrainingMode.TRAINING,
                              do_constant_folding=False, opset_version=17,
                              input_names=[input_name(model)])
        else:
            torch.jit.trace(model, example, check_trace=False).save(str(path))


def shape_spec(t):
    return "x".join(map(str, t.shape)) + ("xi64" if t.dtype == torch.int64 else "xf32")


def colo_train(path, source, loss, opt, lr, data, batch, example, name, tmp):
    exe = tmp / "exe"
    train = f"loss={loss},optimizer={opt},lr={lr}"
    if opt == "sgd":
        train += ",momentum=0.9"
    args = ["compile", path, "-o", exe, "--train", train]
    if source == "torchscript":
        args += ["--input-shape", shape_spec(example[0])]
    run_colo(*args)
    arrays = {name: data["input_ids" if "input_ids" in data else "x"].numpy()}
    if "labels" in data:
        arrays["labels"] = data["labels"].numpy()
    np.savez(tmp / "data.npz", **arrays)
    out = run_colo("run", exe, "--steps", train_ref.STEPS, "--data", tmp / "data.npz",
                   "--threads", 1, "-o", tmp / "w.safetensors").stdout
    losses = [float(x) for x in re.findall(r"^step \d+/\d+\s+loss (\S+)", out, re.M)]
    return losses, load_file(tmp / "w.safetensors")


@pytest.mark.parametrize("name,source,opt", CASES,
                         ids=[f"{n}-{s}-{o}" for n, s, o in CASES])
def test_training_matches_pytorch(name, source, opt, tmp_path):
    model, example, data, batch = train_ref.build(name)
    loss = train_ref.MODELS[name]
    lr = 1e-2 if opt == "sgd" else 1e-3
    path = tmp_path / ("model.onnx" if source == "onnx" else "model.pt")
    export(model, example, path, source)
    ours, weights = colo_train(path, source, loss, opt, lr, data, batch, example,
                               input_name(model), tmp_path)
    theirs, state = train_ref.train(model, data, batch, loss, opt, lr)

    assert len(ours) == train_ref.STEPS
    np.testing.assert_allclose(ours, theirs, rtol=RTOL, err_msg="per-step losses")
    params = dict(model.named_parameters())
    missing = [k for k in params if k not in weights]
    assert not missing, f"parameters missing from colo's weights: {missing}"
    for key in params:
        want = state[key]
        err = np.abs(weights[key] - want).max() / max(np.abs(want).max(), 1e-12)
        assert err <= RTOL, f"{key}: max error {err:.2e} of its largest magnitude"
