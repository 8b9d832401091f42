"""ONNX's own conformance tests: the node tests shipped inside the onnx wheel
(onnx/backend/test/data/node/*/model.onnx with their inputs and expected
outputs as TensorProto files). For every test all of whose nodes are
operators colo imports (`colo import --supported-ops`), colo-eval (the
reference interpreter, in double precision) either reproduces the expected
output within the suite's own tolerances (rtol 1e-3, atol 1e-7, as
onnx.backend.test's runner) or refuses the model with one line naming what
it does not take (an attribute value, a dtype, a mode). Where colo asks for
an input to be a constant (shapes, axes, pads: colo's shapes are static),
the test's values of the inputs after the first are baked into the model
as initializers and it is asked again. A crash, a longer message or a
wrong value fails. Every output is compared (colo-eval writes the i-th
after the first to FILE.i.npy)."""
import re
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from conftest import BIN, ROOT

NODE_TESTS = Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"
RTOL, ATOL = 1e-3, 1e-7
# Training-mode dropout with a nonzero ratio: the expected output is one draw
# of the reference's random generator, which colo's masks need not match.
RANDOM = {"test_training_dropout", "test_training_dropout_default"}
# Outputs where colo follows PyTorch, whose training it reproduces, instead
# of ONNX's specification: batch norm in training mode updates its running
# variance with the unbiased batch variance (ONNX: the biased one), so output
# 2 differs by a factor n/(n-1) of the batch's part.
PYTORCH_SEMANTICS = {"test_batchnorm_epsilon_training_mode": {2},
                     "test_batchnorm_example_training_mode": {2}}


def supported_ops():
    out = subprocess.run([str(BIN / "colo"), "import", "--supported-ops"], capture_output=True,
                         text=True, check=True).stdout
    return set(out.split())


def cases():
    """(name, directory) of every node test colo's importer covers."""
    ops = supported_ops()
    found = []
    for d in sorted(NODE_TESTS.iterdir()):
        model = d / "model.onnx"
        if not model.exists() or d.name in RANDOM:
            continue
        graph = onnx.load(str(model), load_external_data=False).graph
        if not all(o.type.HasField("tensor_type") for o in graph.output) or \
                not (d / "test_data_set_0").is_dir():
            continue
        if all(n.domain in ("", "ai.onnx") and n.op_type in ops for n in graph.node):
            found.append((d.name, d))
    return found


CASES = cases()
RESULTS = {"passed": [], "refused": []}


def colo_eval(model, inputs, tmp_path):
    cmd = [str(BIN / "colo-eval"), str(model), "-o", str(tmp_path / "out.npy")]
    for p in inputs:
        cmd += ["--input", str(p)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def refused(proc):
    """colo-eval said in one line what it does not take."""
    return proc.returncode == 1 and proc.stderr.startswith("colo: error: ") and \
        proc.stderr.count("\n") == 1


def baked(model_path, inputs, tmp_path):
    """The model with the values of its inputs after the first as
    initializers, and the first input alone."""
    model = onnx.load(str(model_path))
    for value_info, path in zip(model.graph.input[1:], inputs[1:]):
        model.graph.initializer.append(numpy_helper.from_array(np.load(path), value_info.name))
    del model.graph.input[1:]
    out = tmp_path / "baked.onnx"
    onnx.save(model, str(out))
    return out, inputs[:1]


@pytest.mark.parametrize("name,directory", CASES, ids=[c[0] for c in CASES])
def test_node(name, directory, tmp_path):
    data = directory / "test_data_set_0"
    inputs = []
    for i, pb in enumerate(sorted(data.glob("input_*.pb"), key=lambda p: int(p.stem[6:]))):
        tensor = onnx.TensorProto()
        tensor.ParseFromString(pb.read_bytes())
        path = tmp_path / f"in{i}.npy"
        np.save(path, numpy_helper.to_array(tensor))
        inputs.append(path)

    model = directory / "model.onnx"
    proc = colo_eval(model, inputs, tmp_path)
    if refused(proc) and re.search(r"must be (a )?constant", proc.stderr) and len(inputs) > 1:
        # colo needs shapes, axes, pads and counts known at import time: the
        # test's values of every input but the first, baked into the model
        # as initializers, ask the same of the operator.
        model, inputs = baked(model, inputs, tmp_path)
        proc = colo_eval(model, inputs, tmp_path)
    if refused(proc):
        RESULTS["refused"].append(name)
        print(f"\n{name}: refused: {proc.stderr.strip()}")
        return
    assert proc.returncode == 0, f"{model}: exit {proc.returncode}\n{proc.stderr}"
    outputs = sorted(data.glob("output_*.pb"), key=lambda p: int(p.stem[7:]))
    for i, pb in enumerate(outputs):
        if i in PYTORCH_SEMANTICS.get(name, ()):
            continue
        tensor = onnx.TensorProto()
        tensor.ParseFromString(pb.read_bytes())
        expected = numpy_helper.to_array(tensor)
        actual = np.load(tmp_path / ("out.npy" if i == 0 else f"out.{i}.npy"))
        assert actual.shape == expected.shape, (i, actual.shape, expected.shape)
        if expected.dtype == bool or np.issubdtype(expected.dtype, np.integer):
            np.testing.assert_array_equal(actual.astype(expected.dtype), expected)
        else:
            np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                                       rtol=RTOL, atol=ATOL)
    RESULTS["passed"].append(name)


def test_the_documented_operators_are_the_importers():
    """docs/importer.md lists what `colo import --supported-ops` prints: the
    ONNX operators, then the TorchScript node kinds (aten::, prim::)."""
    text = (ROOT / "docs" / "importer.md").read_text()

    def listed(marker):
        return set(text.split(marker)[1].split("<!-- end -->")[0].replace("`", " ").split())

    ops = supported_ops()
    assert listed("<!-- colo import --supported-ops -->") == {o for o in ops if "::" not in o}
    torchscript = {o for o in ops if "::" in o}
    assert {"aten::avg_pool2d", "aten::max_pool2d", "prim::Constant"} <= torchscript
    assert listed("<!-- colo import --supported-ops: TorchScript -->") == torchscript


def test_zz_summary():
    """Prints how many of the covered node tests pass and how many colo
    refuses by name (runs last: pytest keeps the file's order)."""
    print(f"\nONNX node tests of supported operators: {len(CASES)} run, "
          f"{len(RESULTS['passed'])} passed, {len(RESULTS['refused'])} refused with one line")
    assert RESULTS["passed"]
