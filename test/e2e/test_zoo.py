"""More architectures (zoo.py: Hugging Face decoders, encoders and
encoder-decoders, torchvision classifiers, all tiny) through the three ways
into colo: ONNX from the TorchScript-based exporter, ONNX from the dynamo
exporter and torch.jit.trace archives. Only the (model, path) pairs colo
handles today are here (zoo.GAPS says why the others are not), each exported
once, in training mode where PyTorch can (zoo.EVAL_ONLY):

- the parameter count of `colo import --summary` equals PyTorch's (of what trains);
- colo-eval (the reference interpreter, double precision) of the export equals
  PyTorch in float64 on the same float32 weights and inputs, in the export's
  mode, within 1e-4 of the largest output magnitude (test_interpreter.py's
  bound, there against float32);
- `colo compile --train` + `colo run` for zoo.STEPS steps (one for the vision
  nets with batch norm, zoo.ONE_STEP) equals PyTorch training the same model
  from the same weights on the same batches, against float64 within
  max(1e-4, twice PyTorch's own float32 spread), as test_train.py checks
  (zoo.compare);
- the decoders train the same way under dp=2, tp=2 and pp=2 (two
  microbatches) on two ranks, from every path.

An ONNX file does not say which parameters are frozen (requires_grad=False),
and one from the TorchScript-based exporter not which initializers are
buffers; they are named with `--freeze`, as a user would (BART's
final_logits_bias meets the logits and would train). Parameter counts are
of what trains.
Each case prints its figures."""
import copy
import json
import re
import subprocess

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file

from conftest import BIN, run_colo
import zoo

T, D, J = "torchscript", "dynamo", "jit"

ALL = [(m, p) for m in zoo.MODELS for p in (T, D, J) if (m, p) not in zoo.GAPS]
# The large vision nets' interpreter runs and PyTorch references (17 float32
# trainings and a float64 one) would take most of the file's time: they check
# the parameter count on every path and the rest on fewer. The pairs left out
# passed when run (all 56 x 3 checks: 5 minutes on 2 cores, wide_resnet50_2's
# training 15-20 s a path, densenet121's 10 s).
IMPORT = ALL
FORWARD = [c for c in ALL if c[0] not in {"wide_resnet50_2", "densenet121", "resnet50"}] + [
    ("densenet121", T), ("resnet50", T), ("resnet50", D)]
TRAIN = [c for c in ALL if c[0] not in zoo.VISION] + [
    ("squeezenet1_0", T), ("squeezenet1_0", D), ("squeezenet1_0", J),
    ("mobilenet_v3_small", T), ("mobilenet_v3_small", J),
    ("efficientnet_b0", T), ("resnet50", T), ("swin", T), ("swin", D), ("swin", J),
    ("mobilevit", T), ("mobilevit", J), ("beit", T), ("beit", D), ("beit", J)]


@pytest.fixture(scope="session")
def zoo_cases(tmp_path_factory):
    """(zoo.Case, exported file, exported in training mode) per model and path,
    once per session. Everything is exported in training mode except where
    PyTorch cannot (zoo.EVAL_ONLY): with every dropout at 0 that is the same
    function but for batch norm, which colo's training step puts in training
    mode anyway."""
    out = tmp_path_factory.mktemp("zoo")
    cases, files = {}, {}

    def get(name, via):
        if name not in cases:
            cases[name] = zoo.Case(name)
        case = cases[name]
        training = (name, via) not in zoo.EVAL_ONLY
        if (name, via) not in files:
            suffix = "pt" if via == J else "onnx"
            files[name, via] = zoo.export(case.model, case.example, out / f"{name}.{via}.{suffix}",
                                          via, case.inputs, training=training)
        return case, files[name, via], training

    return get


def ids(cases):
    return [f"{m}-{p}" for m, p in cases]


def shapes(case, via):
    return case.shape_specs() if via == J else []


def import_args(case, via):
    """What colo import and compile need beyond the file: input shapes for a
    TorchScript archive; for ONNX, what does not train (zoo.Case.frozen: the
    dynamo exporter's graph signature tells buffers, not frozen
    parameters)."""
    if via == J:
        return shapes(case, via)
    frozen = case.frozen(buffers=via == T)
    return ["--freeze", ",".join(frozen)] if frozen else []


@pytest.mark.parametrize("name,via", IMPORT, ids=ids(IMPORT))
def test_parameter_count_equals_pytorch(zoo_cases, name, via):
    case, path, _ = zoo_cases(name, via)
    s = json.loads(run_colo("import", path, *import_args(case, via), "--summary",
                            "--json").stdout)
    assert s["parameters"] == case.trainable_parameters()


@pytest.mark.parametrize("name,via", FORWARD, ids=ids(FORWARD))
def test_forward_matches_pytorch(zoo_cases, tmp_path, name, via):
    """colo-eval computes in double: the reference is PyTorch in float64 (the
    same float32 weights and inputs, widened), in the export's mode (batch
    norm over the batch for training-mode exports). Hugging Face's RMS norms
    (Mistral, Qwen2, Gemma, T5) compute in float32 whatever the model's
    dtype, so those references, and colo's errors against them, are ~1e-7."""
    case, path, training = zoo_cases(name, via)
    model = copy.deepcopy(case.model).double().train(training)
    with torch.no_grad():
        expected = model(*(t.double() if t.is_floating_point() else t
                           for t in case.example)).numpy()
    cmd = [str(BIN / "colo-eval"), str(path), "-o", str(tmp_path / "y.npy"), *shapes(case, via)]
    for i, a in enumerate(case.example):
        np.save(tmp_path / f"in{i}.npy", a.numpy())
        cmd += ["--input", str(tmp_path / f"in{i}.npy")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    actual = np.load(tmp_path / "y.npy")
    assert actual.shape == expected.shape
    err = float(np.abs(actual - expected).max() / np.abs(expected).max())
    print(f"\n{name}-{via}: max relative error {err:.2e}")
    assert err < 1e-4


def train_and_compare(case, path, via, tmp_path, plan=None):
    """colo compile --train (under `plan`) and colo run against PyTorch
    (zoo.compare), printing the figures; returns the run's output."""
    exe = tmp_path / "exe"
    run_colo("compile", path, "-o", exe, "--train", case.train_options(), *import_args(case, via),
             *(["--plan", plan] if plan else []))
    case.npz(tmp_path / "data.npz")
    out = run_colo("run", exe, "--steps", case.steps, "--data", tmp_path / "data.npz",
                   "--threads", 1, "-o", tmp_path / "w.safetensors").stdout
    losses = [float(x) for x in re.findall(r"^step \d+/\d+\s+loss (\S+)", out, re.M)]
    result = zoo.compare(case, losses, load_file(tmp_path / "w.safetensors"))
    if "loss_err" in result:
        err, floor, key = result["worst"]
        print(f"\n{case.name}-{via}{' ' + plan if plan else ''} ({case.steps} steps): losses "
              f"vs PyTorch f64: colo {result['loss_err']:.1e}, PyTorch f32 "
              f"{result['loss_floor']:.1e}; worst parameter {key}: colo {err:.1e}, PyTorch "
              f"f32 {floor:.1e}")
    if result["renamed"]:
        print(f"  tied parameters under another name: {result['renamed']}")
    assert not result["problems"], "; ".join(result["problems"])
    return out


@pytest.mark.parametrize("name,via", TRAIN, ids=ids(TRAIN))
def test_training_matches_pytorch(zoo_cases, tmp_path, name, via):
    case, path, _ = zoo_cases(name, via)
    train_and_compare(case, path, via, tmp_path)


# Models whose token embeddings have a padding_idx, by the paths that keep it.
PADDED = [(m, p) for m in ["opt", "gemma", "roberta", "bart"] for p in (D, J)]


@pytest.mark.parametrize("name,via", PADDED, ids=ids(PADDED))
def test_padding_rows_do_not_train(zoo_cases, tmp_path, name, via):
    """Batches with padding tokens in every row: PyTorch leaves the padding
    rows as they were, and so must colo (from aten::embedding's padding_idx,
    which the dynamo exporter records in its Gather's metadata)."""
    _, path, _ = zoo_cases(name, via)
    case = zoo.Case(name, pads=True)
    assert zoo.padding_ids(case.model)
    train_and_compare(case, path, via, tmp_path)


PLANS = ["dp=2", "tp=2", "pp=2,micro=2"]
PLANNED = [(m, p, plan) for m, p in ALL if m in zoo.DECODERS for plan in PLANS]


@pytest.mark.parametrize("name,via,plan", PLANNED,
                         ids=[f"{m}-{p}-{plan}" for m, p, plan in PLANNED])
def test_decoders_train_under_plans(zoo_cases, tmp_path, name, via, plan):
    """Two ranks that really exchange data (the run's communication line),
    computing what PyTorch computes on one."""
    case, path, _ = zoo_cases(name, via)
    out = train_and_compare(case, path, via, tmp_path, plan)
    comm = re.search(r"^communication: (\d+) bytes sent per step by rank 0", out, re.M)
    assert comm and int(comm[1]) > 0, out
