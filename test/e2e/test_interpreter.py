"""Forward parity of imported models with PyTorch: every reference model,
exported in eval mode (dropout off, batch norm with running statistics) by
both ONNX exporters and traced to TorchScript, is imported and evaluated by
colo's reference interpreter (colo-eval, double precision) and compared with
the PyTorch output of the same module on the same input (float32)."""
import contextlib
import io
import subprocess
import warnings

import numpy as np
import onnx
import pytest
import torch

from conftest import BIN
import models

# Relative to the largest output magnitude; PyTorch computes in float32.
TOLERANCE = 1e-4
DTYPES = {torch.float32: "f32", torch.int64: "i64"}
def prepare(name):
    """The model in eval mode with its example inputs. Parameters initialized to zeros (ViT's head) are drawn
    at random so that the output is not identically zero."""
    model, args = models.build(name)
    gen = torch.Generator().manual_seed(models.SEED)
    with torch.no_grad():
        for p in model.parameters():
            if not p.any():
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
    model.eval()
    return model, args


def export_eval(model, args, path, exporter):
    """Like models.export, but for inference (models.export exports training)."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        if exporter == "torchscript":
            torch.onnx.export(model, args, path, dynamo=False,
                              training=torch.onnx.TrainingMode.EVAL,
                              do_constant_folding=False, opset_version=17)
        elif exporter == "dynamo":
            # Keep parameters as initializers (the optimizer folds some).
            torch.onnx.export(model, args, path, dynamo=True, optimize=False)
        else:
            torch.jit.trace(model, args, check_trace=False).save(str(path))
    return path


@pytest.fixture(scope="session")
def eval_models(tmp_path_factory):
    """(model path, input .npy paths, --input-shape args, PyTorch output),
    once per model and exporter."""
    out = tmp_path_factory.mktemp("eval_exports")
    cache = {}

    def get(name, exporter):
        key = (name, exporter)
        if key not in cache:
            model, args = prepare(name)
            suffix = "pt" if exporter == "jit" else "onnx"
            path = export_eval(model, args, out / f"{name}.{exporter}.{suffix}", exporter)
            inputs = []
            for i, a in enumerate(args):
                p = out / f"{name}.in{i}.npy"
                np.save(p, a.numpy())
                inputs.append(p)
            shapes = [s for a in args for s in
                      ("--input-shape", "x".join(map(str, a.shape)) + "x" + DTYPES[a.dtype])]
            with torch.no_grad():
                expected = model(*args).numpy().astype(np.float64)
            cache[key] = (path, inputs, shapes, expected)
        return cache[key]

    return get


def colo_eval(model_path, inputs, out, *extra):
    cmd = [str(BIN / "colo-eval"), str(model_path), "-o", str(out), *map(str, extra)]
    for p in inputs:
        cmd += ["--input", str(p)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stderr}"
    return np.load(out)


def relative_error(actual, expected):
    assert actual.shape == expected.shape
    return float(np.abs(actual - expected).max() / np.abs(expected).max())


@pytest.mark.parametrize("exporter", models.EXPORTERS + ["jit"])
@pytest.mark.parametrize("name", models.MODELS)
def test_forward_matches_pytorch(eval_models, tmp_path, name, exporter):
    path, inputs, shapes, expected = eval_models(name, exporter)
    extra = shapes if exporter == "jit" else []
    actual = colo_eval(path, inputs, tmp_path / "out.npy", *extra)
    err = relative_error(actual, expected)
    print(f"{name} {exporter}: max relative error {err:.3g}")
    assert err < TOLERANCE


def test_bad_npy_is_one_line_error(eval_models, tmp_path):
    path, _, _, _ = eval_models("mlp", "torchscript")
    bad = tmp_path / "x.npy"
    np.save(bad, np.zeros((4, 32), dtype=np.float16))
    proc = subprocess.run([str(BIN / "colo-eval"), str(path), "--input", str(bad),
                           "-o", str(tmp_path / "y.npy")], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.startswith("colo: error: ") and proc.stderr.count("\n") == 1
    assert "unsupported dtype '<f2'" in proc.stderr


def test_wrong_input_shape_is_one_line_error(eval_models, tmp_path):
    path, _, _, _ = eval_models("mlp", "torchscript")
    bad = tmp_path / "x.npy"
    np.save(bad, np.zeros((3, 32), dtype=np.float32))
    proc = subprocess.run([str(BIN / "colo-eval"), str(path), "--input", str(bad),
                           "-o", str(tmp_path / "y.npy")], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.startswith("colo: error: ") and proc.stderr.count("\n") == 1
    assert "input 0 has shape [3x32]" in proc.stderr


class Strided(torch.nn.Module):
    """aten::as_strided of an activation (torchvision's ConvNeXt and Swin
    meet it): the dynamo exporter computes the view's indices in an ONNX
    Loop (with an If and sequences in its body) that colo runs at import
    time, leaving one gather."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(6, 6)

    def forward(self, x):
        return self.proj(x).as_strided((3, 4), (5, 1), 2) * 2


def test_dynamo_loops_run_at_import(tmp_path):
    torch.manual_seed(0)
    model, x = Strided(), torch.randn(4, 6)
    path = tmp_path / "strided.onnx"
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), str(path), dynamo=True, optimize=False)
    assert "Loop" in {n.op_type for n in onnx.load(str(path)).graph.node}
    np.save(tmp_path / "x.npy", x.numpy())
    proc = subprocess.run([str(BIN / "colo-eval"), str(path), "--input", str(tmp_path / "x.npy"),
                           "-o", str(tmp_path / "y.npy")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    with torch.no_grad():
        want = model.double()(x.double()).numpy()
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), want, rtol=1e-6, atol=1e-9)
