import os
import pathlib
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import models  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("COLO_BIN", ROOT / "build" / "bin"))


def run_colo(*args, check=True):
    """Runs the colo CLI; returns the CompletedProcess."""
    proc = subprocess.run([str(BIN / "colo"), *map(str, args)], capture_output=True,
                          text=True, errors="replace", timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"colo {' '.join(map(str, args))} failed:\n{proc.stderr}")
    return proc


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    """Exports every reference model with both exporters, once per session."""
    out = tmp_path_factory.mktemp("exports")
    cache = {}

    def get(name, exporter):
        key = (name, exporter)
        if key not in cache:
            model, args = models.build(name)
            path = out / f"{name}.{exporter}.onnx"
            kwargs = {}
            if exporter == "dynamo":
                # Keep parameters as initializers (the optimizer folds some).
                kwargs["optimize"] = False
                if name in models.DYNAMO_EVAL_ONLY:
                    model.eval()
            models.export(model, args, path, exporter, **kwargs)
            cache[key] = (path, model)
        return cache[key]

    return get
