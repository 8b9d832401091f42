"""bench/gpu_check.py's path on the CPU (--tiny): GPT-2 and Llama built as
synthetic colo models (`colo model`, no weights) and compiled, then trained
by colo-run from the initial weights of the same models built in
transformers, on the same batches as PyTorch: the losses agree within 1e-5
relative. This checks the GPU check's script, colo-run, `--weights` with
Hugging Face names, and that the synthetic models are the Hugging Face ones."""
import re
import subprocess
import sys
from pathlib import Path

from conftest import BIN

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "gpu_check.py"


def test_synthetic_models_train_as_transformers_does(tmp_path):
    subprocess.run([sys.executable, SCRIPT, "prepare", "--colo", BIN / "colo", "--out",
                    tmp_path, "--tiny", "--target", "cpu"], check=True, capture_output=True)
    out = subprocess.run([sys.executable, SCRIPT, "check", "--colo-run", BIN / "colo-run",
                          "--exes", tmp_path, "--tiny", "--device", "cpu"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    diffs = [float(d) for d in re.findall(r"^  largest relative loss difference (\S+)",
                                          out.stdout, re.M)]
    assert len(diffs) == 2 and max(diffs) <= 1e-5, out.stdout
