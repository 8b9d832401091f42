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


def test_frozen_parameters_do_not_count_or_train(tmp_path):
    """freeze= globs drop the blocks' parameters (sizes read from the ONNX
    file) from what trains; the embeddings still do."""
    import fnmatch

    import numpy as np
    import onnx

    frozen = sum(int(np.prod(t.dims)) for t in onnx.load(EXAMPLE).graph.initializer
                 if fnmatch.fnmatchcase(t.name, "model.transformer.h.*"))
    m = colo.import_model(EXAMPLE, freeze=["model.transformer.h.*"])
    assert frozen > 0 and m.summary()["parameters"] == 120576 - frozen
    assert "colo.global trainable @model.transformer.wte.weight" in m.mlir()
    assert "colo.global trainable @model.transformer.h." not in m.mlir()
    with pytest.raises(colo.ColoError, match="bad pattern"):
        colo.import_model(EXAMPLE, freeze=["[z-a]"])


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
    # Whichever tensor parallelism the best plan has: tp, a tp2d x tp2d grid
    # (2.5-D: depth copies) or a tp3d cube.
    mesh = plans[0]["plan_file"]["mesh"]
    assert mesh["dp"] * mesh["pp"] * mesh.get("tp", 1) * mesh.get("tp2d", 1) ** 2 * \
        mesh.get("depth", 1) * mesh.get("tp3d", 1) ** 3 == 8, mesh
    with pytest.raises(colo.ColoError, match="unknown"):
        colo.plan(m, cluster="no-such-gpu", global_batch=16)


def _files(d):
    return {f: (d / f).read_bytes() for f in ("program.pb", "kernels.so", "state.safetensors")}


@pytest.mark.parametrize("plan", ["", "dp=2,zero=1", "pp=2,micro=2"])
def test_cli_colo_opt_and_python_build_the_same_step(tmp_path, plan):
    """One train-step pipeline behind the three front ends: colo-opt's
    colo-train-step-pipeline prints the IR `colo compile --dump-ir` wrote,
    colo-opt reads the dumped step programs back, and colo.compile writes
    the CLI's bytes."""
    import subprocess
    from conftest import BIN, run_colo

    train = "loss=lm,optimizer=adamw,lr=1e-3"
    cli = tmp_path / "cli"
    run_colo("compile", EXAMPLE, "-o", cli, "--train", train, "--dump-ir", tmp_path / "ir",
             *(["--plan", plan] if plan else []))
    option = f"train={{{train}}}" + (f" plan={{{plan}}}" if plan else "")
    opt = subprocess.run([str(BIN / "colo-opt"), str(tmp_path / "ir" / "0-forward.mlir"),
                          f"--colo-train-step-pipeline={option}"],
                         capture_output=True, text=True, timeout=600)
    assert opt.returncode == 0, opt.stderr
    assert opt.stdout == (tmp_path / "ir" / "1-train-step.mlir").read_text()
    # The step programs colo compile serialized read back, one per pipeline
    # stage, and are a fixed point of the passes that scheduled them.
    program = (tmp_path / "ir" / "2-program.mlir").read_text()
    assert program.count("exec.program @") == (2 if "pp=2" in plan else 1)
    again = subprocess.run([str(BIN / "colo-opt"), str(tmp_path / "ir" / "2-program.mlir"),
                            "--colo-step-program-pipeline"],
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert again.stdout == program

    exe = colo.compile(EXAMPLE, tmp_path / "py", train=train, plan=plan)
    assert isinstance(exe, colo.Executable)
    assert _files(tmp_path / "py") == _files(cli)


def test_run_trains_as_the_cli_does(tmp_path):
    """colo.run takes the steps `colo run` takes: the same losses and
    weights, from a module imported once and compiled twice."""
    import numpy as np
    from conftest import run_colo

    m = colo.import_model(EXAMPLE)
    exe = colo.compile(m, tmp_path / "exe", train="loss=lm,lr=1e-3")
    colo.compile(m, tmp_path / "again", train="loss=lm,lr=1e-3")  # m is left as imported
    assert _files(tmp_path / "exe") == _files(tmp_path / "again")
    ids = np.random.default_rng(0).integers(0, 256, size=(16, 64), dtype=np.int64)
    np.savez(tmp_path / "d.npz", input_ids=ids)
    losses = colo.run(exe, data=tmp_path / "d.npz", steps=3, threads=1,
                      output=tmp_path / "py.safetensors")
    out = run_colo("run", exe, "--data", tmp_path / "d.npz", "--steps", 3, "--threads", 1,
                   "-o", tmp_path / "cli.safetensors").stdout
    cli = [float(line.split()[3]) for line in out.splitlines() if line.startswith("step ")]
    assert len(losses) == 3 and losses[-1] < losses[0]
    assert [f"{x:.6f}" for x in losses] == [f"{x:.6f}" for x in cli]
    assert (tmp_path / "py.safetensors").read_bytes() == \
        (tmp_path / "cli.safetensors").read_bytes()


def test_compile_and_run_errors_raise(tmp_path):
    with pytest.raises(colo.ColoError, match="ZeRO stage 3 with pipeline parallelism is not "
                                             "implemented yet"):
        colo.compile(EXAMPLE, tmp_path / "a", plan="dp=2,pp=2,zero=3")
    with pytest.raises(colo.ColoError, match="invalid plan"):
        colo.compile(EXAMPLE, tmp_path / "a", plan="dp=two")
    with pytest.raises(colo.ColoError, match="unknown optimizer .newton."):
        colo.compile(EXAMPLE, tmp_path / "a", train="optimizer=newton")
    exe = colo.compile(EXAMPLE, tmp_path / "dp", train="loss=lm", plan="dp=2")
    with pytest.raises(colo.ColoError, match="--np 2"):
        colo.run(exe, data="synthetic", steps=1)
    with pytest.raises(colo.ColoError, match="give data="):
        colo.run(colo.compile(EXAMPLE, tmp_path / "one", train="loss=lm"), steps=1)
    with pytest.raises(colo.ColoError):
        colo.run(tmp_path / "nothing-here", data="synthetic")


def test_run_stops_at_a_broken_update_with_the_last_good_weights(tmp_path):
    """colo.run runs colo run's loop: a step whose update overflows the
    weights stops the run with an error, and the weights written are those
    from before it (here the initial ones), not the broken ones."""
    import numpy as np
    from safetensors.numpy import load_file

    model = tmp_path / "linear.mlir"
    model.write_text("""
colo.global trainable @fc.weight : tensor<4x3xf32> = #colo.init<distribution = "normal", a = 0.0 : f64, b = 1.0 : f64>
func.func @forward(%x: tensor<8x4xf32> loc("x")) -> tensor<8x3xf32> {
  %w = colo.global_load @fc.weight : tensor<4x3xf32>
  %y = colo.matmul %x, %w : tensor<8x4xf32>, tensor<4x3xf32>
  return %y : tensor<8x3xf32>
}
""")
    exe = colo.compile(model, tmp_path / "exe", train="optimizer=sgd,lr=1e38")
    np.savez(tmp_path / "d.npz", x=np.full((16, 4), 1e3, np.float32),
             labels=np.arange(16) % 3)
    colo.run(exe, data=tmp_path / "d.npz", steps=0, output=tmp_path / "initial.safetensors")
    with pytest.raises(colo.ColoError, match="update of step 1 made parameter .fc.weight. "
                       "not finite.*wrote the weights from before it"):
        colo.run(exe, data=tmp_path / "d.npz", steps=5, output=tmp_path / "w.safetensors")
    weights = load_file(tmp_path / "w.safetensors")["fc.weight"]
    assert np.isfinite(weights).all()
    assert (weights == load_file(tmp_path / "initial.safetensors")["fc.weight"]).all()
