"""Imports every reference model from both PyTorch exporters and checks the
summary against PyTorch (parameter counts) and hand-derived formulas (FLOPs)."""
import json
import subprocess
import time

import onnx
import pytest
from onnx import TensorProto, helper

from conftest import BIN, run_colo
import models

CASES = [(m, e) for m in models.MODELS for e in models.EXPORTERS]


def summary(path):
    return json.loads(run_colo("import", path, "--summary", "--json").stdout)


@pytest.mark.parametrize("name,exporter", CASES)
def test_parameters_equal_pytorch(exported, name, exporter):
    path, model = exported(name, exporter)
    s = summary(path)
    assert s["parameters"] == models.parameter_count(model)


# Ops the raised, training-form graph must contain (count per model).
EXPECTED_OPS = {
    "mlp": {"matmul": 3, "relu": 1, "gelu": 1},
    "resnet18": {"conv2d": 20, "batch_norm": 20, "max_pool2d": 1},
    "mobilenet_v2": {"conv2d": 52, "batch_norm": 52, "clamp": 35},
    "vit": {"layer_norm": 5, "gelu": 2, "attention": 2, "softmax": 0, "conv2d": 1},
    "transformer_encoder": {"layer_norm": 4, "attention": 2, "softmax": 0, "relu": 2},
    "gpt2": {"layer_norm": 5, "gelu": 2, "attention": 2, "softmax": 0, "embedding": 2},
    "bert": {"layer_norm": 6, "gelu": 3, "attention": 2, "softmax": 0},
    "llama": {"rms_norm": 5, "attention": 2, "silu": 2, "sigmoid": 0, "embedding": 1},
}
TRAINING_OPS = {
    "transformer_encoder": "dropout", "gpt2": "dropout",
    "bert": "dropout", "mobilenet_v2": "dropout",
}


@pytest.mark.parametrize("name,exporter", CASES)
def test_op_mix(exported, name, exporter):
    path, _ = exported(name, exporter)
    ops = summary(path)["op_counts"]
    for op, count in EXPECTED_OPS[name].items():
        assert ops.get(op, 0) == count, (op, ops)
    # Decomposed norms and activations were raised (global pooling is a mean).
    if name not in ("resnet18", "mobilenet_v2"):
        assert not {"erf", "tanh", "reduce_mean"} & ops.keys(), ops
    training = not (exporter == "dynamo" and name in models.DYNAMO_EVAL_ONLY)
    if name in TRAINING_OPS and training:
        assert ops.get(TRAINING_OPS[name], 0) > 0, ops
    if "batch_norm" in EXPECTED_OPS[name] and training:
        ir = run_colo("import", path, "--elide-weights").stdout
        assert ir.count("training}") == EXPECTED_OPS[name]["batch_norm"]


BLOCKS = {
    "gpt2": "model.transformer.h", "bert": "model.bert.encoder.layer",
    "llama": "model.model.layers", "transformer_encoder": "layers",
    "vit": "encoder.layers.encoder_layer_", "resnet18": "layer1",
}


@pytest.mark.parametrize("name,exporter", [c for c in CASES if c[0] in BLOCKS])
def test_repeated_blocks(exported, name, exporter):
    path, model = exported(name, exporter)
    blocks = {b["prefix"]: b for b in summary(path)["blocks"]}
    assert BLOCKS[name] in blocks, blocks
    block = blocks[BLOCKS[name]]
    assert block["count"] == 2
    first = BLOCKS[name] + ("0." if BLOCKS[name].endswith("_") else ".0.")
    expected = sum(p.numel() for n, p in model.named_parameters() if n.startswith(first))
    assert expected > 0 and block["parameters"] == expected


@pytest.mark.parametrize("exporter", models.EXPORTERS)
def test_gpt2_flops_match_formula(exported, exporter):
    """Forward matmul FLOPs per sample: l(24 s h^2 + 4 s^2 h) + 2 s h V."""
    path, model = exported("gpt2", exporter)
    cfg = model.model.config
    l, h, v, s = cfg.n_layer, cfg.n_embd, cfg.vocab_size, 16
    formula = l * (24 * s * h * h + 4 * s * s * h) + 2 * s * h * v
    got = summary(path)["matmul_flops_per_sample"]
    assert abs(got - formula) / formula < 0.01, (got, formula)


@pytest.mark.parametrize("name,exporter", CASES)
def test_ir_round_trips_through_colo_opt(exported, name, exporter, tmp_path):
    path, _ = exported(name, exporter)
    out = tmp_path / "m.mlir"
    run_colo("import", path, "-o", out)
    proc = subprocess.run([str(BIN / "colo-opt"), str(out), "--verify-diagnostics"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_decomposed_layer_norm_is_raised(tmp_path):
    """Opset 14 has no LayerNormalization: the exporter decomposes it."""
    import torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.LayerNorm(32),
                                torch.nn.GELU(), torch.nn.Linear(32, 4))
    path = models.export(model, (torch.randn(3, 16),), tmp_path / "ln.onnx",
                         "torchscript", opset=14)
    assert "LayerNormalization" not in {n.op_type for n in onnx.load(path).graph.node}
    ops = summary(path)["op_counts"]
    assert ops.get("layer_norm") == 1 and ops.get("gelu") == 1, ops
    assert "reduce_mean" not in ops and "erf" not in ops, ops


def test_external_weights_stay_lazy(tmp_path):
    """A 1 GiB weight in an external file is referenced, never read."""
    n = 1 << 28  # float32 elements: 1 GiB
    data = tmp_path / "big.onnx.data"
    with open(data, "wb") as f:
        f.truncate(n * 4)  # sparse: the importer must not need the bytes
    w = helper.make_tensor("w", TensorProto.FLOAT, [1 << 14, 1 << 14], vals=[])
    w.ClearField("float_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", data.name), ("offset", "0"), ("length", str(n * 4))):
        w.external_data.add(key=k, value=v)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="/fc/MatMul")], "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 1 << 14])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 1 << 14])], [w])
    path = tmp_path / "big.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
              path)
    # /usr/bin/time measures the process itself; rusage of a child forked
    # from this process would count the PyTorch pages it inherited.
    start = time.monotonic()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", str(BIN / "colo"), "import",
                           str(path), "--summary", "--json"],
                          capture_output=True, text=True)
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    peak_mib = int(proc.stderr.strip().splitlines()[-1]) / 1024
    assert s["parameters"] == n
    assert elapsed < 10, elapsed
    assert peak_mib < 256, peak_mib
    ir = run_colo("import", path).stdout
    assert "#colo.external<path = " in ir and f"length = {n * 4}" in ir


@pytest.mark.parametrize("name,opset", [
    (n, o) for n in ("gpt2", "llama", "resnet18") for o in (13, 14, 15, 16, 18, 20)
    # PyTorch exports scaled_dot_product_attention from opset 14 on.
    if o > 13 or n == "resnet18"])
def test_torchscript_exporter_opsets(name, opset, tmp_path):
    """Opsets 13 to 20: reductions' axes move from attribute to input, Split
    gains num_outputs, LayerNormalization appears at 17 and Gelu at 20."""
    model, args = models.build(name)
    path = models.export(model, args, tmp_path / "m.onnx", "torchscript", opset=opset)
    s = summary(path)
    assert s["parameters"] == models.parameter_count(model)
    ops = s["op_counts"]
    for op, count in EXPECTED_OPS[name].items():
        assert ops.get(op, 0) == count, (op, ops)


def test_dynamic_axes_fixed_by_input_shape(tmp_path):
    """Exports with dynamic batch and sequence axes import once the shapes are
    given; without them the error says how."""
    model, args = models.build("gpt2")
    path = models.export(model, args, tmp_path / "dyn.onnx", "torchscript",
                         input_names=["ids"], dynamic_axes={"ids": {0: "batch", 1: "seq"}})
    proc = run_colo("import", path, "--summary", check=False)
    assert proc.returncode == 1 and "--input-shape" in proc.stderr
    s = json.loads(run_colo("import", path, "--input-shape", "4x8xi64", "--summary",
                            "--json").stdout)
    assert s["inputs"] == ["4x8xi64"] and s["batch"] == 4
    assert s["parameters"] == models.parameter_count(model)
    bad = run_colo("import", path, "--input-shape", "4x8x2", check=False)
    assert bad.returncode == 1 and "rank" in bad.stderr


def test_dynamo_constants_do_not_train_and_the_tied_head_stays_tied(tmp_path):
    """The dynamo exporter's optimizer folds constants (a causal mask, the
    attention's scale) into initializers and pre-transposes the LM head's
    weight, tied to the token embedding, into one more; its graph signature,
    kept in the values' metadata, says which initializers are parameters.
    Only those train, and the folded transpose of one is imported as its
    transpose: one global for the tie."""
    import re
    import torch
    import transformers as tf

    torch.manual_seed(models.SEED)
    gpt2 = tf.GPT2LMHeadModel(tf.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=64,
                                            n_positions=16, use_cache=False))
    path = models.export(models.LogitsOnly(gpt2).train(), (torch.randint(0, 64, (2, 16)),),
                         tmp_path / "gpt2.onnx", "dynamo")
    graph = onnx.load(str(path), load_external_data=False).graph
    parameters = {v.name for v in list(graph.value_info) + list(graph.input)
                  for p in v.metadata_props
                  if p.key.endswith("InputSpec.kind") and p.value == "PARAMETER"}
    folded = [v.name for v in graph.value_info for p in v.metadata_props
              if p.key.endswith("folded_from") and p.value == "['model.lm_head.weight']"]
    assert "model.lm_head.weight" in parameters and folded, "the export changed shape"
    proc = run_colo("import", path, "--elide-weights")
    ir = proc.stdout
    # The optimizer also merged the equal initial norm scales and biases:
    # colo says so, and how to export them all.
    assert "colo: warning:" in proc.stderr and "optimize=False" in proc.stderr, proc.stderr
    trainable = set(re.findall(r'colo\.global trainable @"?([^" :]+)"?', ir))
    assert trainable and trainable <= parameters, trainable - parameters
    assert not any(f"@{name}" in ir for name in folded)
    load = re.search(r"(%\S+) = colo\.global_load @model\.lm_head\.weight", ir)[1]
    assert re.search(rf"colo\.transpose {re.escape(load)} permutation = \[1, 0\]", ir)


def test_an_unoptimized_dynamo_export_imports_without_a_warning(exported):
    path, _ = exported("gpt2", "dynamo")
    proc = run_colo("import", path, "--summary")
    assert "warning" not in proc.stderr, proc.stderr
