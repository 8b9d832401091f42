"""Writes the small ONNX graphs the importer's lit tests read:
    make_onnx.py CASE OUT.onnx"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def shape_folding():
    # y = reshape(x, concat(shape(x)[0:1], [-1])) as the TorchScript exporter
    # writes x.view(x.size(0), -1).
    n = helper.make_node
    return model([
        n("Shape", ["x"], ["s"], name="/Shape"),
        n("Gather", ["s", "zero"], ["b"], name="/Gather", axis=0),
        n("Unsqueeze", ["b", "axes"], ["b1"], name="/Unsqueeze"),
        n("Concat", ["b1", "minus1"], ["shape"], name="/Concat", axis=0),
        n("Reshape", ["x", "shape"], ["y"], name="/flatten/Reshape"),
    ], [vi("x", [2, 3, 4])], [vi("y", [2, 12])],
        [const("zero", np.int64(0)), const("axes", np.array([0], np.int64)),
         const("minus1", np.array([-1], np.int64))])


def state():
    # A linear layer (parameters) and batch norm in training mode (running
    # statistics are state but not parameters).
    n = helper.make_node
    rng = np.random.default_rng(0)
    return model([
        n("Gemm", ["x", "w", "b"], ["h"], name="/fc/Gemm", transB=1),
        n("Unsqueeze", ["h", "axes"], ["h4"], name="/Unsqueeze"),
        n("BatchNormalization", ["h4", "g", "beta", "rm", "rv"], ["y", "nm", "nv"],
          name="/bn/BatchNormalization", training_mode=1, momentum=0.9),
    ], [vi("x", [2, 4])], [vi("y", [2, 3, 1, 1])],
        [const("w", rng.standard_normal((3, 4)).astype(np.float32)),
         const("b", np.zeros(3, np.float32)), const("axes", np.array([2, 3], np.int64)),
         const("g", np.ones(3, np.float32)), const("beta", np.zeros(3, np.float32)),
         const("rm", np.zeros(3, np.float32)), const("rv", np.ones(3, np.float32))])


def external(path):
    w = const("w", np.arange(12, dtype=np.float32).reshape(4, 3))
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="/fc/MatMul")],
              [vi("x", [2, 4])], [vi("y", [2, 3])], [w])
    onnx.save(m, path, save_as_external_data=True, all_tensors_to_one_file=True,
              location="weights.bin", size_threshold=0)
    return None


def decomposed_gelu():
    n = helper.make_node
    return model([
        n("Div", ["x", "sqrt2"], ["d"], name="/act/Div"),
        n("Erf", ["d"], ["e"], name="/act/Erf"),
        n("Add", ["e", "one"], ["a"], name="/act/Add"),
        n("Mul", ["x", "a"], ["m"], name="/act/Mul"),
        n("Mul", ["m", "half"], ["y"], name="/act/Mul_1"),
    ], [vi("x", [2, 8])], [vi("y", [2, 8])],
        [const("sqrt2", np.float32(1.4142135)), const("one", np.float32(1.0)),
         const("half", np.float32(0.5))])


CASES = {"shape_folding": shape_folding, "state": state, "decomposed_gelu": decomposed_gelu}

if __name__ == "__main__":
    case, out = sys.argv[1], sys.argv[2]
    if case == "external":
        external(out)
    else:
        onnx.save(CASES[case](), out)
