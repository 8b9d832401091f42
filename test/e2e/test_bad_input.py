"""Every file of the broken-input corpus gives exit code 1 and one line naming
the problem; none crashes."""
import subprocess

import pytest

from bad_corpus import write_corpus
from conftest import BIN, run_colo


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    return d, write_corpus(d)


def check_one_line_error(proc, expect):
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("colo: error:"), lines[0]
    for word in expect:
        assert word in lines[0], (word, lines[0])


def test_corpus_is_complete(corpus):
    assert len(corpus[1]) >= 15


def test_each_bad_file_is_rejected(corpus):
    d, cases = corpus
    failures = []
    for name, expect in sorted(cases.items()):
        proc = run_colo("import", d / name, "--summary", check=False)
        try:
            check_one_line_error(proc, expect)
        except AssertionError as e:
            failures.append(f"{name}: {e}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("args,expect", [
    (["import", "/nonexistent/model.onnx"], ["cannot open", "/nonexistent/model.onnx"]),
    (["import", "/tmp"], ["directory"]),
    (["import", __file__], ["unknown model format", ".py"]),
])
def test_bad_paths(args, expect):
    check_one_line_error(run_colo(*args, check=False), expect)


def test_help_on_every_command():
    """colo --help lists the subcommands; each subcommand lists its own
    options, colo-eval none of the linked LLVM libraries'."""
    top = run_colo("--help").stdout
    assert "import" in top
    out = run_colo("import", "--help").stdout
    assert "--summary" in out and "-o" in out and "--supported-ops" in out
    evaluate = subprocess.run([str(BIN / "colo-eval"), "--help"], capture_output=True, text=True)
    assert "--input" in evaluate.stdout and "amdgpu" not in evaluate.stdout


def test_corrupted_models_never_crash(tmp_path):
    """Byte flips and truncations of a real export (fixed seed): every run ends
    with exit code 0 or 1 and, on failure, one line."""
    import random
    import pathlib
    rng = random.Random(1234)
    example = pathlib.Path(__file__).resolve().parents[2] / "examples" / "gpt2-tiny.onnx"
    src = example.read_bytes()
    failures = []
    for i in range(60):
        data = bytearray(src)
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.2:
            data = data[: rng.randrange(len(data))]
        path = tmp_path / f"m{i}.onnx"
        path.write_bytes(bytes(data))
        proc = run_colo("import", path, "--summary", check=False)
        lines = [l for l in proc.stderr.splitlines() if l.strip()]
        if proc.returncode not in (0, 1) or (proc.returncode == 1 and len(lines) != 1):
            failures.append(f"{i}: exit {proc.returncode}: {proc.stderr[-200:]}")
    assert not failures, "\n".join(failures)
