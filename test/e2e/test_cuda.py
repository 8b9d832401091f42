"""colo compile --target cuda without a GPU: every model of the suite (the
training models from ONNX and from TorchScript archives; the import suite's
from both ONNX exporters) compiles; every PTX it writes (--dump-ir) passes
the CUDA toolkit's ptxas for its chip where the toolkit is installed; GPT-2
compiles under dp, tp, pp and ZeRO plans; and `colo run` of the result
loads it (the runtime validates kernels.cuda.pb) and fails with one clear
line, that this machine has no GPU (docs/cuda.md)."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import models
import train_ref
from conftest import run_colo
from test_train import export, input_name, shape_spec

CASES = [(name, source) for name in train_ref.MODELS for source in ("onnx", "torchscript")]
PTXAS = next((p for p in (os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin",
                                       "ptxas"), shutil.which("ptxas"))
              if p and os.access(p, os.X_OK)), None)


def compile_cuda(tmp_path, name, source, plan=None):
    model, example, _, _ = train_ref.build(name)
    path = tmp_path / ("model.onnx" if source == "onnx" else "model.pt")
    export(model, example, path, source)
    loss = train_ref.MODELS[name][0]
    args = ["compile", path, "-o", tmp_path / "exe", "--train", f"loss={loss}",
            "--target", "cuda", "--dump-ir", tmp_path / "ir"]
    if source == "torchscript":
        args += ["--input-shape", shape_spec(example[0])]
    if plan:
        args += ["--plan", plan]
    run_colo(*args)
    return tmp_path / "exe"


def check_ptx(ir):
    ptx = sorted((ir / "ptx").glob("*.ptx"))
    assert ptx, "no PTX written"
    if PTXAS is None:
        return
    for f in ptx:
        chip = f.suffixes[-2].lstrip(".")
        out = subprocess.run([PTXAS, f"-arch={chip}", f, "-o", f.with_suffix(".cubin")],
                             capture_output=True, text=True)
        assert out.returncode == 0, f"{f.name}: {out.stderr}"


@pytest.mark.parametrize("name,source", CASES, ids=[f"{n}-{s}" for n, s in CASES])
def test_every_model_compiles_for_cuda(name, source, tmp_path):
    exe = compile_cuda(tmp_path, name, source)
    assert (exe / "kernels.cuda.pb").stat().st_size > 0
    assert not (exe / "kernels.so").exists()
    check_ptx(tmp_path / "ir")
    ran = run_colo("run", exe, "--steps", 1, check=False)
    assert ran.returncode != 0
    lines = ran.stderr.strip().splitlines()
    # The executable loaded (kernels.cuda.pb validated); the device refused.
    assert len(lines) == 1 and "compiled for CUDA" in lines[0], ran.stderr
    assert "it runs on NVIDIA GPUs only" in lines[0], ran.stderr


@pytest.mark.parametrize("exporter", models.EXPORTERS)
@pytest.mark.parametrize("name", models.MODELS)
def test_import_suite_compiles_for_cuda(exported, name, exporter, tmp_path):
    path, _ = exported(name, exporter)
    run_colo("compile", path, "-o", tmp_path / "exe", "--train", "loss=mse", "--target",
             "cuda", "--dump-ir", tmp_path / "ir")
    assert (tmp_path / "exe" / "kernels.cuda.pb").stat().st_size > 0
    check_ptx(tmp_path / "ir")


@pytest.mark.parametrize("plan", ["dp=2", "tp=2", "pp=2,micro=2,schedule=1f1b",
                                  "dp=2,zero=3"])
def test_gpt2_plans_compile_for_cuda(plan, tmp_path):
    exe = compile_cuda(tmp_path, "gpt2", "onnx", plan)
    assert (exe / "kernels.cuda.pb").stat().st_size > 0
    check_ptx(tmp_path / "ir")


def test_unknown_target_is_refused(tmp_path):
    out = run_colo("compile", Path(__file__), "--target", "tpu", "-o", tmp_path / "e",
                   check=False)
    assert out.returncode != 0 and "--target 'tpu' is not a target" in out.stderr


def test_host_computation_is_refused_for_cuda(tmp_path):
    """An offloaded optimizer updates on the host, which a GPU cannot run:
    --target cuda refuses it by kernel; offloaded activations only move."""
    model = tmp_path / "gpt.mlir"
    run_colo("model", "gpt", "--layers", 1, "--hidden", 16, "--heads", 2, "--vocab", 32,
             "--seq", 8, "--batch", 2, "--dtype", "f32", "-o", model)
    train = ["--train", "loss=lm,optimizer=adamw", "--target", "cuda"]
    out = run_colo("compile", model, "-o", tmp_path / "off", *train, "--plan",
                   "offload=optimizer", check=False)
    assert out.returncode != 0 and "this plan computes on the host: kernel" in out.stderr, \
        out.stderr
    run_colo("compile", model, "-o", tmp_path / "act", *train, "--plan", "offload=activations")
    assert (tmp_path / "act" / "kernels.cuda.pb").stat().st_size > 0
