"""TorchScript import: the models traced by the pinned PyTorch, checked against
PyTorch (parameters and their names) and against the ONNX import of the same
model (parameters, op mix, FLOPs)."""
import json
import re
import subprocess

import pytest
import torch

from conftest import BIN, run_colo
import models

# Element types of the example inputs, as --input-shape spells them.
DTYPES = {torch.float32: "f32", torch.int64: "i64"}


def shape_spec(t):
    return "x".join(map(str, t.shape)) + "x" + DTYPES[t.dtype]


@pytest.fixture(scope="session")
def traced(tmp_path_factory):
    out = tmp_path_factory.mktemp("torchscript")
    cache = {}

    def get(name):
        if name not in cache:
            model, args = models.build(name)
            path = out / f"{name}.pt"
            torch.jit.trace(model, args, check_trace=False).save(str(path))
            shapes = [a for t in args for a in ("--input-shape", shape_spec(t))]
            cache[name] = (path, model, shapes)
        return cache[name]

    return get


def summary(path, *extra):
    return json.loads(run_colo("import", path, *extra, "--summary", "--json").stdout)


def globals_in(path, *extra, trainable=True):
    ir = run_colo("import", path, *extra, "--elide-weights").stdout
    pattern = r'colo\.global trainable @"?([^" :]+)"?' if trainable else \
        r'colo\.global @"?([^" :]+)"?'
    return set(re.findall(pattern, ir))


@pytest.mark.parametrize("name", models.MODELS)
def test_parameters_and_names_equal_pytorch(traced, name):
    path, model, shapes = traced(name)
    s = summary(path, *shapes)
    assert s["parameters"] == models.parameter_count(model)
    assert globals_in(path, *shapes) == {n for n, _ in model.named_parameters()}


COMPUTE_OPS = {"matmul", "conv2d", "attention", "layer_norm", "rms_norm", "batch_norm",
               "gelu", "silu", "sigmoid", "softmax", "relu", "clamp", "embedding",
               "dropout", "max_pool2d"}


@pytest.mark.parametrize("name", models.MODELS)
def test_same_graph_as_onnx(traced, exported, name):
    """Same parameters (names where the exporter kept them), the same compute
    ops after canonicalization, and the same FLOPs as the ONNX import."""
    path, model, shapes = traced(name)
    onnx_path, _ = exported(name, "torchscript")
    ts, ox = summary(path, *shapes), summary(onnx_path)
    assert ts["parameters"] == ox["parameters"]
    ts_names, ox_names = globals_in(path, *shapes), globals_in(onnx_path)
    renamed = {n for n in ox_names - ts_names if n.startswith("onnx::")}
    assert ox_names - renamed <= ts_names
    assert len(ox_names) == len(ts_names)

    def compute(ops):
        return {k: v for k, v in ops.items() if k in COMPUTE_OPS}

    assert compute(ts["op_counts"]) == compute(ox["op_counts"])
    assert ts["matmul_flops"] == pytest.approx(ox["matmul_flops"], rel=0.01)
    assert ts["flops"] == pytest.approx(ox["flops"], rel=0.02)


def check_one_line_error(proc, *words):
    assert proc.returncode == 1, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("colo: error:"), proc.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


class Inner(torch.nn.Module):
    def forward(self, x):
        return torch.cummax(x, dim=-1).values


class Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
        self.block = Inner()

    def forward(self, x):
        return self.block(self.proj(x))


def test_unsupported_op_names_op_and_scope(tmp_path):
    path = tmp_path / "m.pt"
    torch.jit.trace(Outer(), (torch.randn(2, 8),)).save(str(path))
    check_one_line_error(run_colo("import", path, "--input-shape", "2x8", check=False),
                         "aten::cummax", "block", "unsupported op")


def test_a_path_that_begins_with_a_dash_stays_a_path(traced, tmp_path):
    """`--` ends colo's options, and colo passes the path on to its
    TorchScript helper the same way: the helper does not read it as one."""
    path, _, shapes = traced("mlp")
    (tmp_path / "-m.pt").write_bytes(path.read_bytes())
    proc = subprocess.run([str(BIN / "colo"), "import", *shapes, "--summary", "--json", "--",
                           "-m.pt"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == summary(path, *shapes)


def test_truncated_and_foreign_archives(traced, tmp_path):
    path, _, shapes = traced("mlp")
    data = path.read_bytes()
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(data[: len(data) // 2])
    text = tmp_path / "text.pt"
    text.write_text("not a TorchScript archive\n")
    for bad in (truncated, text):
        check_one_line_error(run_colo("import", bad, *shapes, check=False),
                             "not a readable TorchScript archive")


def test_missing_or_bad_input_shapes(traced):
    path, _, _ = traced("gpt2")
    check_one_line_error(run_colo("import", path, check=False), "--input-shape", "ids")
    check_one_line_error(run_colo("import", path, "--input-shape", "2xbanana",
                                  check=False), "bad input shape")


SCRIPTABLE = ["mlp", "resnet18", "mobilenet_v2"]


@pytest.mark.parametrize("name", SCRIPTABLE)
def test_scripted_modules(traced, name, tmp_path):
    """torch.jit.script keeps control flow (batch norm's training checks, size
    loops); what depends only on import-time values is followed or unrolled,
    and the result is the traced model's graph."""
    model, args = models.build(name)
    path = tmp_path / f"{name}.scripted.pt"
    torch.jit.script(model).save(str(path))
    shapes = [a for t in args for a in ("--input-shape", shape_spec(t))]
    s = summary(path, *shapes)
    assert s["parameters"] == models.parameter_count(model)
    assert globals_in(path, *shapes) == {n for n, _ in model.named_parameters()}
    traced_path, _, traced_shapes = traced(name)
    assert s["op_counts"] == summary(traced_path, *traced_shapes)["op_counts"]


class RepeatPad(torch.nn.Module):
    """torch.Tensor.repeat with a count for a new leading dimension, a
    constant F.pad and a negative one (a crop): ONNX Tile and Pad from the
    exporter, aten::repeat and aten::pad traced."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.proj(x).repeat(3, 2, 1)
        y = torch.nn.functional.pad(y, (1, 2, 0, 1), value=0.5) * 2
        return torch.nn.functional.pad(y, (0, 0, -1, 0))  # a crop


def ceil_pools():
    """Pooling with ceil_mode (SqueezeNet's max pools): windows past the
    input's end count only what they cover, and none starts in the trailing
    padding; averages with and without the given padding counted."""
    return torch.nn.Sequential(
        torch.nn.AvgPool2d(3, 2, ceil_mode=True),
        torch.nn.MaxPool2d(3, 2, padding=1, ceil_mode=True),
        torch.nn.AvgPool2d(2, 2, padding=1, ceil_mode=True, count_include_pad=False),
        torch.nn.AvgPool2d(3, 1, padding=1))


def hard_activations():
    """MobileNetV3's activations: HardSwish and HardSigmoid (aten::hardswish,
    aten::hardsigmoid), over inputs that cross both bends."""
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Hardswish(),
                               torch.nn.Linear(8, 8), torch.nn.Hardsigmoid())


class Gathers(torch.nn.Module):
    """Elements picked from an activation at constant indices (GPT-J's
    rotary table, Swin's relative position bias): torch.gather (ONNX
    GatherElements), advanced indexing with two index tensors (GatherND),
    index_select; with stack, repeat_interleave, clamp (one bound each, and
    of integers), square, reciprocal and a tensor from a list."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 6)

    def forward(self, x):
        h = self.proj(x)
        g = torch.gather(h, 1, torch.tensor([[5, 0, 2], [1, 1, 4]]))
        nd = h[torch.tensor([0, 1, 1]), torch.tensor([2, 3, 5])]
        s = torch.stack([g, g * 2, nd.expand(2, 3)], dim=1).repeat_interleave(2, dim=2)
        i = torch.index_select(s, 2, torch.tensor([0, 3, 5]))
        k = torch.clamp(torch.tensor([[-3, 1, 7]]), min=0, max=4).to(i.dtype)
        return (torch.clamp(i, min=-0.5) + torch.clamp(i, max=0.25) + i.square() * k
                + (i.abs() + 1).reciprocal())


class Resampling(torch.nn.Module):
    """Resizing (MobileViT's and BEiT's bilinear interpolation, ONNX Resize):
    F.interpolate bilinear with and without align_corners, by size and by
    scale factor, and nearest."""

    def forward(self, x):
        F = torch.nn.functional
        a = F.interpolate(x, size=(7, 5), mode="bilinear", align_corners=False)
        b = F.interpolate(x, size=(7, 5), mode="bilinear", align_corners=True)
        c = F.interpolate(x, scale_factor=2.0, mode="nearest")[:, :, :7, :5]
        d = F.interpolate(x, scale_factor=2.0, mode="bilinear")[:, :, :7, :5]
        return a + 2 * b + 3 * c + 4 * d


class AdaptivePools(torch.nn.Module):
    """Adaptive average pooling to sizes other than 1 (VGG's 7x7, Swin's
    1-d pooler), in 2-d and 1-d, to sizes that do not divide the input."""

    def forward(self, x):
        F = torch.nn.functional
        return F.adaptive_avg_pool2d(x, (3, 2)) + F.adaptive_avg_pool1d(
            x.flatten(2), 6).reshape(2, 3, 3, 2)


class ShiftedWindows(torch.nn.Module):
    """torchvision Swin's shifted windows: torch.roll of an activation and
    a mask built in place in a new_zeros tensor (slice fill_, masked_fill
    with a Python float)."""

    def forward(self, x):
        shifted = torch.roll(x, shifts=(-1, 2), dims=(1, 2))
        mask = x.new_zeros((4, 5))
        for count, (h, w) in enumerate([(slice(0, 2), slice(0, 3)), (slice(2, 4), slice(3, 5))]):
            mask[h, w] = count + 1
        mask = mask.masked_fill(mask != 0, float(-100.0))
        return shifted + mask + torch.roll(x, 3, dims=2)


class Einsums(torch.nn.Module):
    """torch.einsum as models write it: matrix and batched products, an
    outer product (rotary tables), a contraction with a summed-away index,
    the ellipsis, the implicit output, three operands and diagonals (a
    letter repeated within one operand, with an explicit and the implicit
    output)."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(5, 3))

    def forward(self, x):  # x [2, 4, 5]
        a = torch.einsum("bij,jk->bik", x, self.w)                       # [2, 4, 3]
        b = torch.einsum("bik,bjk->bij", a, a)                           # [2, 4, 4]
        c = torch.einsum("i,j->ij", x[0, 0], x[1, 1])                    # [5, 5]
        d = torch.einsum("bij,bij->b", x, x)                             # [2]
        e = torch.einsum("...ij->...ji", b)                              # [2, 4, 4]
        f = torch.einsum("bik,kj", a, self.w.t())                        # implicit: [2, 4, 5]
        g = torch.einsum("bij,jk,kl->bil", x, self.w, self.w.t())        # [2, 4, 5]
        h = torch.einsum("bii->bi", b) + torch.einsum("bii", b)[:, None]  # diagonals: [2, 4]
        k = torch.einsum("iji->j", b.permute(1, 0, 2)[:, :2, :])        # [2]
        return ((b + e).sum(-1, keepdim=True) * d[:, None, None] + f + g + c[:4]
                + h[:, :, None] + k[:, None, None])


class InPlaceWrites(torch.nn.Module):
    """Writes into slices and selections: of an activation (aten::copy_ at
    the view's offsets; ONNX ScatterND from the exporter), also by in-place
    arithmetic (mul_ of a slice changes the tensor it was sliced from,
    relu_ the tensor itself); and of an index built in place from a sum of coordinate
    grids (BEiT's relative position index, aten::sum and fill_ of tensors
    known now), which then gathers from the activation."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 6)

    def forward(self, x):  # x [2, 4]
        h = self.proj(x)
        h[:, 1] = h[:, 0] * 3
        h[1, 2:5] = torch.tanh(h[0, :3])
        h[:, -1] += 1
        h[:, 3:5].mul_(2)
        g = h + 2
        g.relu_()
        grid = torch.stack(torch.meshgrid(torch.arange(2), torch.arange(2), indexing="ij"))
        index = torch.zeros(3, 3, dtype=torch.long)
        index[1:, 1:] = grid.sum(0) * 2 + 1
        index[0, :] = 7
        index[:, 0] = 9
        index[0, 0] = 11
        return g[:, 2:5, None] * h.flatten()[index.view(-1)].view(3, 3)


# (module, input, output shape): traced as aten ops, exported as ONNX ops.
OP_CASES = {"repeat_pad": (RepeatPad, (2, 4), (3, 4, 7)),
            "gathers": (Gathers, (2, 4), (2, 3, 3)),
            "resampling": (Resampling, (2, 3, 4, 5), (2, 3, 7, 5)),
            "adaptive_pools": (AdaptivePools, (2, 3, 4, 5), (2, 3, 3, 2)),
            "shifted_windows": (ShiftedWindows, (2, 4, 5), (2, 4, 5)),
            "einsums": (Einsums, (2, 4, 5), (2, 4, 5)),
            "in_place_writes": (InPlaceWrites, (2, 4), (2, 3, 3)),
            "hard_activations": (hard_activations, (16, 4), (16, 8)),
            "ceil_pool": (ceil_pools, (2, 3, 13, 13), (2, 3, 3, 3))}


@pytest.mark.parametrize("form", ["jit", "onnx"])
@pytest.mark.parametrize("case", OP_CASES)
def test_ops_match_pytorch(case, form, tmp_path):
    """Traced aten ops and their exported ONNX forms evaluate as PyTorch does
    (colo-eval, the reference interpreter)."""
    import numpy as np

    if form == "onnx" and case == "adaptive_pools":
        pytest.skip("the TorchScript-based exporter: 'Unsupported: ONNX export of operator "
                    "adaptive_avg_pool2d, output size that are not factor of input size'")
    torch.manual_seed(0)
    build, shape, out_shape = OP_CASES[case]
    model, x = build().eval(), torch.randn(*shape)
    path = tmp_path / ("m.pt" if form == "jit" else "m.onnx")
    if form == "jit":
        torch.jit.trace(model, (x,)).save(str(path))
    else:
        torch.onnx.export(model, (x,), str(path), dynamo=False, opset_version=17)
    np.save(tmp_path / "x.npy", x.numpy())
    proc = subprocess.run([str(BIN / "colo-eval"), str(path), "--input", str(tmp_path / "x.npy"),
                           "-o", str(tmp_path / "y.npy")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    with torch.no_grad():
        expected = model(x).numpy()
    actual = np.load(tmp_path / "y.npy")
    assert actual.shape == expected.shape == out_shape
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)


class Detached(torch.nn.Module):
    """A loss through a detached copy (a target that does not train, as in
    a target-network setup): its gradient is half that of the same function
    without detach()."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.proj(x)
        return (h * h.detach()).mean()


def test_detach_stops_the_gradient(tmp_path):
    """aten::detach imports as colo.stop_gradient, which the import pipeline
    keeps: three SGD steps match PyTorch in float64 (and differ from the
    same model without detach(), so the check can fail)."""
    import copy

    import numpy as np
    from safetensors.numpy import load_file

    torch.manual_seed(0)
    model, x = Detached(), torch.randn(3 * 8, 4)
    path = tmp_path / "m.pt"
    torch.jit.trace(model, (x[:8],)).save(str(path))
    np.savez(tmp_path / "data.npz", x=x.numpy())
    exe = tmp_path / "exe"
    run_colo("compile", path, "--input-shape", "8x4", "-o", exe,
             "--train", "loss=output,optimizer=sgd,lr=0.1")
    out = run_colo("run", exe, "--steps", 3, "--data", tmp_path / "data.npz",
                   "-o", tmp_path / "w.safetensors").stdout
    losses = [float(v) for v in re.findall(r"^step \d+/\d+\s+loss (\S+)", out, re.M)]

    def train(detach):
        m = copy.deepcopy(model).double()
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        got = []
        for i in range(3):
            h = m.proj(x[i * 8:(i + 1) * 8].double())
            loss = (h * (h.detach() if detach else h)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            got.append(loss.item())
        return got, m.proj.weight.detach().numpy()

    (want, w), (_, w_without) = train(True), train(False)
    colo_w = load_file(tmp_path / "w.safetensors")["proj.weight"]
    assert np.allclose(losses, want, rtol=1e-5), (losses, want)
    assert np.abs(colo_w - w).max() < 1e-5 < np.abs(w_without - w).max()
