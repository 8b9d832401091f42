"""colo: compile and plan the training of neural networks.

    import colo
    m = colo.import_model("model.onnx")
    print(m.summary())
"""
import json

from ._colo import ColoError, _import_model

__all__ = ["ColoError", "Module", "import_model"]


class Module:
    """An imported model: its IR in the colo dialect and its summary."""

    def __init__(self, ir, summary):
        self._ir = ir
        self._summary = summary

    def mlir(self):
        """The module's IR as text."""
        return self._ir

    def summary(self):
        """Parameters, forward FLOPs, op counts and repeated blocks."""
        return json.loads(self._summary)

    def save(self, path):
        with open(path, "w") as f:
            f.write(self._ir)


def import_model(path):
    """Imports an ONNX model; raises ColoError with the diagnostic on failure."""
    return Module(*_import_model(str(path)))
