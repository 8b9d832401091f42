"""colo: compile and plan the training of neural networks.

    import colo, torch, torchvision
    m = colo.from_torch(torchvision.models.resnet18(), torch.randn(1, 3, 64, 64))
    print(m.summary())
    exe = colo.compile(m, "resnet.colo", train="loss=cross-entropy,lr=1e-3")
    losses = colo.run(exe, data="batches.npz", steps=10)  # writes the weights
"""
import json
import os
import tempfile

from ._colo import ColoError, _import_model, _run

__all__ = ["ColoError", "Executable", "Module", "PlanResult", "Summary", "compile",
           "from_torch", "import_model", "plan", "run"]


class Summary(dict):
    """The summary as a dict (the fields of `colo import --summary --json`);
    printing it gives the text form."""

    def __init__(self, fields, text):
        super().__init__(fields)
        self._text = text

    def __str__(self):
        return self._text


class Module:
    """An imported model: its IR in the colo dialect, its summary and plans."""

    def __init__(self, native):
        self._native = native
        fields, text = native.summary()
        self._summary = Summary(json.loads(fields), text)

    def mlir(self, locations=False):
        """The module's IR as text (with op locations if asked)."""
        return self._native.ir(locations)

    def summary(self):
        """Parameters, forward FLOPs, op counts and repeated blocks (a dict)."""
        return self._summary

    def save(self, path):
        """Writes the IR, with locations, to `path`."""
        with open(path, "w") as f:
            f.write(self.mlir(locations=True))

    def __repr__(self):
        s = self._summary
        return (f"<colo.Module: {s['parameters']:,} parameters, "
                f"{s['flops_per_sample']:.4g} forward FLOPs per sample>")


class PlanResult(list):
    """Ranked plans (dicts: plan, plan_file, step_time_s, tokens_per_s,
    tflops_per_device, mfu, memory_gib), fastest first; when none fits,
    `closest` and `suggestions` say why and what would."""

    def __init__(self, result):
        super().__init__(result["plans"])
        self.closest = result.get("closest")
        self.suggestions = result["suggestions"]


def plan(module, cluster, global_batch, top=10, offload=True, recompute=True):
    """Searches parallel plans for `module` on `cluster` (a preset such as
    "a100-80g:16x8" or a cluster JSON file) for `global_batch` samples per
    step; returns a PlanResult."""
    return PlanResult(json.loads(module._native.plan(cluster, int(global_batch), int(top),
                                                     bool(offload), bool(recompute))))


def _shape_spec(t):
    dtypes = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
              "int64": "i64", "int32": "i32", "int8": "i8", "bool": "i1"}
    dtype = dtypes.get(str(t.dtype).replace("torch.", ""))
    if dtype is None:
        raise ColoError(f"unsupported input dtype {t.dtype}")
    return "x".join(str(d) for d in t.shape) + "x" + dtype


def import_model(path, input_shapes=(), freeze=()):
    """Imports an ONNX model, a TorchScript archive (whose inputs need
    `input_shapes` such as ["2x16xi64"]) or a .mlir module; raises ColoError
    on failure. `freeze`: glob patterns of parameters that do not train (for
    fine-tuning, or buffers an ONNX export does not mark as such)."""
    return Module(_import_model(os.fspath(path), list(input_shapes), list(freeze)))


def from_torch(module, example_inputs):
    """Traces a torch.nn.Module with `example_inputs` (a tensor or a tuple of
    tensors) and imports it; the module keeps its training or eval mode."""
    import torch

    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "module.pt")
        traced = torch.jit.trace(module, example_inputs, check_trace=False)
        traced.save(path)
        return import_model(path, [_shape_spec(t) for t in example_inputs])


class Executable(os.PathLike):
    """A compiled training step: the directory `colo compile` writes
    (program.pb, kernels.so, state.safetensors), for colo.run or `colo run`."""

    def __init__(self, path):
        self.path = os.fspath(path)

    def __fspath__(self):
        return self.path

    @property
    def weights(self):
        """Where colo.run writes the trained weights by default."""
        return os.path.join(self.path, "weights.safetensors")

    def __str__(self):
        return self.path

    def __repr__(self):
        return f"<colo.Executable {self.path!r}>"


def compile(model, output, train="", plan=None, bucket_mb=25.0, kernel_pieces=8,
            input_shapes=()):
    """Compiles `model` (a colo.Module, or a path to import) into the
    executable directory `output`, as `colo compile` does with the same
    options: `train` as --train ("loss=lm,optimizer=adamw,lr=3e-4"; empty:
    colo's defaults), `plan` as --plan ("dp=2,tp=2" or a plan file).
    The same options give the same bytes as the CLI. Returns an Executable;
    raises ColoError on failure."""
    if not isinstance(model, Module):
        model = import_model(model, input_shapes)
    model._native.compile(os.fspath(output), str(train), str(plan or ""), float(bucket_mb),
                          int(kernel_pieces))
    return Executable(output)


def run(executable, data=None, steps=10, threads=0, seed=0, token_dtype="",
        shift_labels=False, weights=None, output=None):
    """Trains `steps` steps of a one-rank executable in this process, as
    `colo run` does: `data` a .npy/.npz file, a token file (with
    `token_dtype`) or "synthetic"; `weights` a safetensors file to start
    from. Writes the weights to `output` (default: the executable's
    weights.safetensors) and returns the steps' losses. Executables
    compiled for several ranks run under `colo run --np N`."""
    return _run(os.fspath(executable), os.fspath(data) if data else "", int(steps), int(threads),
                int(seed), str(token_dtype), bool(shift_labels),
                os.fspath(weights) if weights else "", os.fspath(output) if output else "")
