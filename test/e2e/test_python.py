"""The colo Python module (built into build/python) over the same C++ API."""
import pathlib

import pytest

colo = pytest.importorskip("colo", reason="the Python module was not built")

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "gpt2-tiny.onnx"


def test_import_model_summary_and_ir(tmp_path):
    m = colo.import_model(EXAMPLE)
    s = m.summary()
    assert s["parameters"] == 118528
    assert s["op_counts"]["layer_norm"] == 5
    assert "colo.matmul" in m.mlir()
    m.save(tmp_path / "m.mlir")
    assert (tmp_path / "m.mlir").read_text() == m.mlir()


def test_errors_raise_with_the_diagnostic(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(colo.ColoError, match="not"):
        colo.import_model(bad)
