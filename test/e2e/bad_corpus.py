"""The broken-input corpus: ONNX files (and not-ONNX files) that colo must
reject with one clear line and exit code 1. `write_corpus(dir)` creates them
and returns {file name: words the error must contain}."""
import os

import onnx
from onnx import TensorProto, helper


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def _raw_tensor(name, dims, data):
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=dims)
    t.raw_data = data
    return t


def _good():
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3], [0.5] * 12)
    return _model([helper.make_node("MatMul", ["x", "w"], ["y"], name="/fc/MatMul")],
                  [_vi("x", [2, 4])], [_vi("y", [2, 3])], [w])


def write_corpus(d):
    d = str(d)
    cases = {}

    def save(name, model, expect):
        onnx.save(model, os.path.join(d, name), save_as_external_data=False)
        cases[name] = expect

    def raw(name, data, expect):
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        cases[name] = expect

    good = _good().SerializeToString()
    raw("truncated.onnx", good[: len(good) // 2], ["truncated or corrupt"])
    raw("empty.onnx", b"", ["no graph"])
    raw("text.onnx", b"this is a text file, not a model\n", ["not"])
    raw("random.onnx", bytes((i * 7919 + 13) % 256 for i in range(4096)),
        ["not"])
    save("unsupported_op.onnx",
         _model([helper.make_node("Hardmax", ["x"], ["y"], name="/head/Hardmax")],
                [_vi("x", [2, 4])], [_vi("y", [2, 4])]),
         ["/head/Hardmax", "Hardmax", "unsupported op"])
    save("custom_domain.onnx",
         _model([helper.make_node("Foo", ["x"], ["y"], name="foo", domain="com.acme")],
                [_vi("x", [2, 4])], [_vi("y", [2, 4])]),
         ["foo", "com.acme"])
    save("old_opset.onnx",
         _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2])],
                [_vi("y", [2])], opset=9),
         ["opset 9"])
    save("unsupported_dtype.onnx",
         _model([helper.make_node("Identity", ["x"], ["y"])],
                [_vi("x", [2], TensorProto.COMPLEX64)],
                [_vi("y", [2], TensorProto.COMPLEX64)]),
         ["complex64"])
    save("string_initializer.onnx",
         _model([helper.make_node("Identity", ["s"], ["y"], name="id")], [],
                [_vi("y", [1], TensorProto.STRING)],
                [helper.make_tensor("s", TensorProto.STRING, [1], [b"hi"])]),
         ["id", "string"])
    save("inconsistent_shapes.onnx",
         _model([helper.make_node("Add", ["a", "b"], ["y"], name="/blk/Add")],
                [_vi("a", [2, 3]), _vi("b", [2, 4])], [_vi("y", [2, 3])]),
         ["/blk/Add", "Add", "broadcast"])
    save("matmul_mismatch.onnx",
         _model([helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")],
                [_vi("a", [2, 3]), _vi("b", [4, 5])], [_vi("y", [2, 5])]),
         ["mm", "MatMul", "3 vs 4"])
    save("bad_reshape.onnx",
         _model([helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")],
                [_vi("x", [2, 3])], [_vi("y", [4, 2])],
                [helper.make_tensor("s", TensorProto.INT64, [2], [4, 2])]),
         ["rs", "Reshape", "6"])
    save("dynamic_input.onnx",
         _model([helper.make_node("Relu", ["x"], ["y"])],
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                [_vi("y", [2, 4])]),
         ["dynamic", "batch"])
    save("undefined_input.onnx",
         _model([helper.make_node("Relu", ["nowhere"], ["y"], name="r")],
                [_vi("x", [2])], [_vi("y", [2])]),
         ["r", "nowhere"])
    save("missing_input_arity.onnx",
         _model([helper.make_node("Where", ["c", "x"], ["y"], name="w")],
                [_vi("c", [2], TensorProto.BOOL), _vi("x", [2])], [_vi("y", [2])]),
         ["w", "Where", "inputs"])
    save("bad_attribute.onnx",
         _model([helper.make_node("Gelu", ["x"], ["y"], name="g", approximate="cubic")],
                [_vi("x", [2])], [_vi("y", [2])], opset=20),
         ["g", "Gelu", "cubic"])
    save("raw_data_size.onnx",
         _model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                [_vi("x", [2, 4])], [_vi("y", [2, 3])],
                [_raw_tensor("w", [4, 3], b"\0" * 20)]),
         ["w", "bytes"])

    def external(name, location, expect):
        ext = helper.make_tensor("w", TensorProto.FLOAT, [4, 3], vals=[])
        ext.data_location = TensorProto.EXTERNAL
        for k, v in (("location", location), ("offset", "0"), ("length", "48")):
            ext.external_data.add(key=k, value=v)
        save(name, _model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                          [_vi("x", [2, 4])], [_vi("y", [2, 3])], [ext]), expect)

    external("missing_external_data.onnx", "does_not_exist.bin",
             ["does_not_exist.bin", "missing"])
    # External data may not leave the model's directory (onnx's checker's
    # rule): a real file of the right size lies just outside it, so only the
    # location can be refused.
    outside = os.path.join(os.path.dirname(d), "outside.bin")
    with open(outside, "wb") as f:
        f.write(b"\0" * 48)
    os.symlink(outside, os.path.join(d, "link.bin"))
    leaves = "leaves the model's directory"
    external("absolute_external_data.onnx", outside, [outside, leaves, "absolute"])
    external("dotdot_external_data.onnx", "../outside.bin", ["../outside.bin", leaves, "'..'"])
    external("symlink_external_data.onnx", "link.bin", ["link.bin", leaves, "symbolic link"])
    return cases
