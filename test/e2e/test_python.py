"""The colo Python module (built into build/python) over the same C++ API."""
import pathlib

import pytest

colo = pytest.importorskip("colo", reason="the Python module was not built")

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "gpt2-tiny.onnx"


def test_import_model_summary_and_ir(tmp_path):
    m = colo.import_model(EXAMPLE)
    s = m.summary()
    assert s["parameters"] == 120576  # transformers GPT2LMHeadModel(n_layer=2, n_embd=64, n_positions=64, vocab 256)
    assert s["op_counts"]["layer_norm"] == 5
    assert "colo.matmul" in m.mlir()
    m.save(tmp_path / "m.mlir")
    assert (tmp_path / "m.mlir").read_text() == m.mlir(locations=True)


def test_errors_raise_with_the_diagnostic(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(colo.ColoError, match="not"):
        colo.import_model(bad)


def test_from_torch_traces_in_process():
    import torch
    import torchvision

    model = torchvision.models.resnet18()
    m = colo.from_torch(model, torch.randn(1, 3, 64, 64))
    s = m.summary()
    assert s["parameters"] == sum(p.numel() for p in model.parameters())
    assert "parameters   11,689,512" in str(s)


def test_from_torch_unsupported_op_raises():
    import torch

    class Sorts(torch.nn.Module):
        def forward(self, x):
            return torch.sort(x).values

    with pytest.raises(colo.ColoError, match="aten::sort"):
        colo.from_torch(Sorts(), torch.randn(2, 3))
    with pytest.raises(colo.ColoError, match="not a readable TorchScript archive"):
        colo.import_model(_truncated_archive(), ["2x3"])


def _truncated_archive():
    import tempfile
    f = tempfile.NamedTemporaryFile(suffix=".pt", delete=False)
    f.write(b"PK\x03\x04 truncated")
    f.close()
    return f.name


def test_plan_returns_ranked_plans():
    m = colo.import_model(EXAMPLE)
    plans = colo.plan(m, cluster="a100-80g:1x8", global_batch=16, top=5)
    assert 0 < len(plans) <= 5
    times = [p["step_time_s"] for p in plans]
    assert times == sorted(times)
    assert plans[0]["plan_file"]["mesh"]["dp"] * plans[0]["plan_file"]["mesh"]["tp"] * \
        plans[0]["plan_file"]["mesh"]["pp"] == 8
    with pytest.raises(colo.ColoError, match="unknown"):
        colo.plan(m, cluster="no-such-gpu", global_batch=16)
