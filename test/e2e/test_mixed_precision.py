"""Mixed-precision parity: colo compiles a model's training step with
`precision=bf16` (matrix products and attention in bf16, float32 master
weights, norms, softmax, loss and optimizer in float32) and must train like
PyTorch's own mixed precision, torch.autocast("cpu", torch.bfloat16) around
the forward and loss of a float32 model, on the same batches from the same
weights.

bf16 keeps 8 bits of mantissa, so two correct bf16 runs differ by rounding
(colo and PyTorch round different intermediate values: PyTorch's CPU autocast
runs GELU and the bias adds on bf16 results, colo in float). The per-step
losses must agree within torch.testing's tolerance for bfloat16 (rtol 1.6e-2);
the final parameters must be as close to the exact (float64) training as
PyTorch's bf16 run is: their RMS distance from it (each element relative to
its tensor's largest magnitude) within twice PyTorch's, or 1e-4. Not the
worst element, as the float32 tests use: under bf16, Adam turns the rounding
of near-zero gradients into +-lr steps of single elements, so in either
implementation a tensor's worst element is 0.1-1 of its largest magnitude
away, in whichever tensors rounding happens to hit (GPT-2: colo's layer-0
c_fc.bias and PyTorch's layer-1 c_fc.bias, 0.41 each). Each case prints its
figures."""
import copy
import re

import numpy as np
import pytest
import torch

import train_ref
from conftest import run_colo
from test_train import LINEAR, colo_train, export, input_name, one_line_error

BF16_RTOL = 1.6e-2  # torch.testing.assert_close's default rtol for bfloat16
WEIGHT_FLOOR = 1e-4


def train_autocast(model, data, batch, loss, lr, eps):
    """train_ref.train with the forward and loss under bf16 autocast."""
    opt = train_ref.optimizer("adamw", model.parameters(), lr, eps)
    losses = []
    for b in train_ref.batches(data, batch):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            value = train_ref.loss_of(model, b, loss)
        value.backward()
        opt.step()
        losses.append(value.item())
    return losses, {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("name", ["mlp", "gpt2", "llama"])
def test_bf16_training_matches_pytorch_autocast(name, tmp_path):
    model, example, data, batch = train_ref.build(name)
    loss, lr, eps = train_ref.MODELS[name]
    path = tmp_path / "model.onnx"
    export(model, example, path, "onnx")
    ours, weights = colo_train(path, "onnx", loss, "adamw", lr, eps, data, batch, example,
                               input_name(model), tmp_path, extra=",precision=bf16")

    bf16, bf16_state = train_autocast(copy.deepcopy(model), data, batch, loss, lr, eps)
    data64 = {k: v.double() if v.is_floating_point() else v for k, v in data.items()}
    _, f64_state = train_ref.train(copy.deepcopy(model).double(), data64, batch, loss,
                                   "adamw", lr, eps)

    assert len(ours) == train_ref.STEPS
    loss_err = float(np.max(np.abs(np.array(ours) - bf16) / np.abs(bf16)))
    print(f"\n{name} bf16: losses vs PyTorch autocast {loss_err:.1e} "
          f"(colo {ours}, PyTorch {bf16})")
    assert loss_err <= BF16_RTOL

    def distances(state):
        """Per parameter, |state - float64 training| over the float64 tensor's
        largest magnitude."""
        return {k: np.abs(state[k] - f64_state[k]) / max(np.abs(f64_state[k]).max(), 1e-12)
                for k, _ in model.named_parameters()}

    ours_d, torch_d = distances(weights), distances(bf16_state)
    for key in ours_d:
        assert weights[key].dtype == np.float32, f"{key} is not a float32 master weight"

    def rms(d):
        return float(np.sqrt(np.mean(np.concatenate([v.ravel() ** 2 for v in d.values()]))))

    worst = max(ours_d, key=lambda k: ours_d[k].max())
    print(f"  parameters from float64 training (RMS): colo {rms(ours_d):.1e}, PyTorch bf16 "
          f"{rms(torch_d):.1e}; worst tensor {worst}: colo {ours_d[worst].max():.1e}, "
          f"PyTorch bf16 {torch_d[worst].max():.1e}")
    assert rms(ours_d) <= max(WEIGHT_FLOOR, 2 * rms(torch_d))


FP16_RTOL = 1e-3  # torch.testing.assert_close's default rtol for float16


def test_fp16_dynamic_loss_scaling_matches_grad_scaler(tmp_path):
    """GPT-2 in fp16 from a loss scale so large that the first steps overflow,
    every step on the same batch (a skipped step repeats the loss). colo must
    follow GradScaler's algorithm: skip and halve until the gradients are
    finite, then double after `window` good steps (which overflows again).
    Where the scale stops overflowing depends on which values are fp16: PyTorch's
    CPU autocast also keeps the elementwise ops between products in fp16, colo
    only the products, so the number of initial skips may differ by one halving.
    The losses after the same number of optimizer steps (skipped steps are not
    optimizer steps on either side) must agree within float16 tolerance."""
    steps, init, window = 8, 2.0 ** 22, 2
    model, example, data, batch = train_ref.build("gpt2")
    _, lr, eps = train_ref.MODELS["gpt2"]
    ids = data["input_ids"][:batch]
    path = tmp_path / "model.onnx"
    export(model, example, path, "onnx")
    exe = tmp_path / "exe"
    run_colo("compile", path, "-o", exe, "--train",
             f"loss=lm,optimizer=adamw,lr={lr},eps={eps},precision=fp16,"
             f"init-scale={init},scale-window={window}")
    np.savez(tmp_path / "data.npz", **{input_name(model): ids.repeat(steps, 1).numpy()})
    out = run_colo("run", exe, "--steps", steps, "--data", tmp_path / "data.npz",
                   "--threads", 1).stdout
    ours = [float(x) for x in re.findall(r"^step \d+/\d+\s+loss (\S+)", out, re.M)]

    model = copy.deepcopy(model)
    opt = train_ref.optimizer("adamw", model.parameters(), lr, eps)
    scaler = torch.amp.GradScaler("cpu", init_scale=init, growth_interval=window)
    losses, skipped = [], []
    for _ in range(steps):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16):
            value = train_ref.loss_of(model, {"input_ids": ids}, "lm")
        scaler.scale(value).backward()
        before = scaler.get_scale()
        scaler.step(opt)
        scaler.update()
        skipped.append(scaler.get_scale() < before)
        losses.append(value.item())

    assert len(ours) == steps
    skipped_ours = [ours[i + 1] == ours[i] for i in range(steps - 1)]
    print(f"\nfp16: colo losses {ours}, skipped {skipped_ours}\n"
          f"  PyTorch {losses}, skipped {skipped}")
    k = skipped_ours.index(False)
    assert k >= 1, "the initial scale must overflow"
    expected = [True] * k + [False] * window + [True]
    assert skipped_ours[:len(expected)] == expected[:steps - 1]
    assert abs(k - skipped.index(False)) <= 1

    def distinct(xs):
        return [x for i, x in enumerate(xs) if i == 0 or x != xs[i - 1]]

    ours_d, torch_d = distinct(ours), distinct(losses)
    n = min(len(ours_d), len(torch_d))
    assert n >= 3
    err = float(np.max(np.abs(np.array(ours_d[:n]) - torch_d[:n]) / np.abs(torch_d[:n])))
    print(f"  losses after 0..{n - 1} optimizer steps vs PyTorch autocast + GradScaler "
          f"{err:.1e}")
    assert err <= FP16_RTOL


def test_bad_precision_options(tmp_path):
    model = tmp_path / "linear.mlir"
    model.write_text(LINEAR)
    one_line_error(run_colo("compile", model, "-o", tmp_path / "e", "--train",
                            "loss=mse,precision=fp8", check=False),
                   "unknown precision 'fp8'")
    one_line_error(run_colo("compile", model, "-o", tmp_path / "e", "--train",
                            "loss=mse,precision=fp16,loss-scale=lots", check=False),
                   "loss-scale must be none, dynamic or a positive number, got 'lots'")
