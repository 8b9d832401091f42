"""The hostile-file corpus: files of every format colo reads, each built to be
wrong in one way, which colo must refuse with exit code 1 and one
`colo: error:` line naming the file and the problem (never a crash, a hang,
an allocation the file does not justify or a traceback).

`write_corpus(dir, colo_run)` writes the corpus into `dir` and returns a list
of `Case(name, fmt, args, expect, forbid)`: `fmt` is one of FORMATS, `args`
colo's argv with paths relative to `dir` (run it with `dir` as the working
directory), `expect` the words the error line must contain (a tuple: any one
of them) and `forbid` strings it must not (a wrapped-around number).
`problem(case, returncode, stderr, dir)` says what is wrong with a run, or
None. `colo_run(*args)` runs colo (and fails on an error); the corpus uses it
to build a tiny model (`m.mlir`), compile it (`exe`: input_ids i64 [2, 8]
below 32, SGD) and write a real one-step checkpoint (`ckpt`), whose files the
cases then break. Files that a reference reader (onnx.checker, numpy,
safetensors, zipfile) accepts are not in the corpus.

Formats: onnx, npy, npz, tokens, safetensors, program, checkpoint, plan,
cluster, torchscript (FORMATS).
"""
import io
import json
import os
import re
import shutil
import struct
import subprocess
import zipfile
import zlib
from collections import namedtuple

import numpy as np

import bad_corpus

# forbid: strings the line must not hold (a wrapped-around number).
Case = namedtuple("Case", "name fmt args expect forbid", defaults=((),))

# Words a duplicate-definition error would use (any one of them).
ONCE = ("more than once", "twice", "duplicate", "already")

FORMATS = ["onnx", "npy", "npz", "tokens", "safetensors", "program", "checkpoint",
           "plan", "cluster", "torchscript"]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROTO_DIR = os.path.join(ROOT, "runtime")

# The tiny executable: one GPT-2 layer, input_ids i64 [2, 8] below 32.
BATCH, SEQ, VOCAB = 2, 8, 32
WTE = "transformer.wte.weight"  # f32 [32, 16]
RUN = ["--steps", "1", "--threads", "1"]


class Corpus:
    def __init__(self, d, colo_run):
        self.d = str(d)
        self.colo = colo_run
        self.cases = []
        self.names = set()
        os.makedirs(self.path("out"), exist_ok=True)

    def path(self, *parts):
        return os.path.join(self.d, *parts)

    def add(self, name, fmt, args, expect, forbid=()):
        assert name not in self.names, name
        assert fmt in FORMATS, fmt
        self.names.add(name)
        self.cases.append(Case(name, fmt, [str(a) for a in args],
                               [w if isinstance(w, tuple) else str(w) for w in expect],
                               tuple(forbid)))
        return self.cases[-1]

    def forbid(self, *words):
        """The last case's line must not hold these."""
        self.cases[-1] = self.cases[-1]._replace(forbid=tuple(words))

    def write(self, name, data):
        p = self.path(name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        return p

    def out(self, name):
        return "out/" + name.replace("/", "_") + ".safetensors"

    def run_args(self, name, *extra):
        """colo run of the tiny executable, writing the weights under out/."""
        return ["run", "exe", *RUN, "-o", self.out(name), *extra]


# --------------------------------------------------------------------- ONNX

def _onnx_cases(c):
    from onnx import TensorProto, helper

    sub = c.path("onnx")
    os.makedirs(sub)
    for name, expect in sorted(bad_corpus.write_corpus(sub).items()):
        c.add("onnx/" + name, "onnx", ["import", "onnx/" + name, "--summary"], expect)

    def vi(name, shape, dtype=TensorProto.FLOAT):
        return helper.make_tensor_value_info(name, dtype, shape)

    def model(nodes, inputs, outputs, inits=(), opset=17):
        g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])

    def save(name, m, expect):
        rel = "onnx2/" + name
        c.write(rel, m.SerializeToString())
        c.add(rel, "onnx", ["import", rel, "--summary"], [name] + expect)

    def raw_init(name, dims, data, dtype=TensorProto.FLOAT):
        t = TensorProto(name=name, data_type=dtype, dims=dims)
        t.raw_data = data
        return t

    def mm(w, x_shape=(2, 4), y_shape=(2, 3)):
        return model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
                     [vi("x", list(x_shape))], [vi("y", list(y_shape))], [w])

    big = 2 ** 40
    save("input_dims_overflow.onnx",
         model([helper.make_node("Relu", ["x"], ["y"], name="r")],
               [vi("x", [big, big, big])], [vi("y", [big, big, big])]),
         ["'x'", ("overflow", "too large")])
    save("input_negative_dim.onnx",
         model([helper.make_node("Relu", ["x"], ["y"], name="r")],
               [vi("x", [-3, 4])], [vi("y", [-3, 4])]),
         ["'x'", "-3"])
    save("init_negative_dim.onnx", mm(raw_init("w", [-4, 3], b"\0" * 48)), ["'w'", "invalid dimension"])
    save("init_huge_dims_tiny_data.onnx",
         mm(raw_init("w", [1 << 20, 1 << 20], b"\0" * 48)), ["'w'", "48 bytes"])
    save("init_dims_overflow.onnx",
         mm(raw_init("w", [2 ** 62, 2 ** 62, 4], b"\0" * 48)), ["'w'", "invalid dimension"])
    save("init_bad_data_type.onnx",
         mm(raw_init("w", [4, 3], b"\0" * 48, dtype=99)), ["'w'", "unsupported data type"])
    save("init_undefined_data_type.onnx",
         mm(raw_init("w", [4, 3], b"\0" * 48, dtype=0)), ["'w'", "unsupported data type"])
    save("input_bad_elem_type.onnx",
         model([helper.make_node("Relu", ["x"], ["y"], name="r")],
               [vi("x", [2, 4], 77)], [vi("y", [2, 4])]),
         ["'x'", "unsupported data type"])
    short = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 3])
    short.float_data.extend([1.0] * 5)
    save("init_float_data_count.onnx", mm(short), ["'w'", "5 values"])

    def external(name, offset, length, expect, size=48):
        with open(c.path("onnx2", name + ".bin"), "wb") as f:
            f.write(b"\0" * size)
        t = helper.make_tensor("w", TensorProto.FLOAT, [4, 3], vals=[])
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", name + ".bin"), ("offset", offset), ("length", length)):
            if v is not None:
                t.external_data.add(key=k, value=v)
        save(name, mm(t), expect)

    os.makedirs(c.path("onnx2"), exist_ok=True)
    external("ext_huge_offset.onnx", str(2 ** 63 - 1), "48", ["'w'", "offset"])
    c.forbid("needs -")
    external("ext_offset_past_end.onnx", "4096", "48", ["'w'", "too short"])
    external("ext_huge_length.onnx", "0", str(2 ** 63 - 1), ["'w'", "9223372036854775807"])
    external("ext_offset_length_wrap.onnx", str(2 ** 64 - 16), "48", ["'w'", "offset"])
    c.forbid("needs -")
    external("ext_negative_offset.onnx", "-8", "48", ["'w'", "offset"])
    external("ext_garbage_offset.onnx", "12abc", "48", ["'w'", "offset", "12abc"])
    external("ext_length_mismatch.onnx", "0", "40", ["'w'", "40 bytes"])
    external("ext_short_file.onnx", "0", None, ["'w'", "too short"], size=20)

    save("cycle.onnx",
         model([helper.make_node("Relu", ["b"], ["a"], name="r1"),
                helper.make_node("Relu", ["a"], ["b"], name="r2")],
               [vi("x", [2])], [vi("b", [2])]),
         ["'b'", "not defined"])
    save("duplicate_output.onnx",
         model([helper.make_node("Relu", ["x"], ["y"], name="r1"),
                helper.make_node("Sigmoid", ["x"], ["y"], name="r2")],
               [vi("x", [2])], [vi("y", [2])]),
         ["'y'", ONCE])
    save("output_shadows_input.onnx",
         model([helper.make_node("Relu", ["x"], ["x"], name="r")],
               [vi("x", [2])], [vi("x", [2])]),
         ["'x'", ONCE])
    save("empty_op_type.onnx",
         model([helper.make_node("", ["x"], ["y"], name="nameless")],
               [vi("x", [2])], [vi("y", [2])]),
         ["'nameless'", "unsupported op"])
    save("undefined_graph_output.onnx",
         model([helper.make_node("Relu", ["x"], ["y"], name="r")],
               [vi("x", [2])], [vi("z", [2])]),
         ["'z'"])
    save("duplicate_initializer.onnx",
         model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
               [vi("x", [2, 4])], [vi("y", [2, 3])],
               [raw_init("w", [4, 3], b"\0" * 48), raw_init("w", [4, 5], b"\0" * 80)]),
         ["'w'", ONCE])
    no_opset = helper.make_model(
        helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                          [vi("x", [2])], [vi("y", [2])]))
    del no_opset.opset_import[:]
    save("no_opset.onnx", no_opset, ["opset"])
    save("transpose_bad_perm.onnx",
         model([helper.make_node("Transpose", ["x"], ["y"], name="tp", perm=[0, 0])],
               [vi("x", [2, 3])], [vi("y", [3, 2])]),
         ["'tp'", "Transpose", "permutation"])
    save("softmax_bad_axis.onnx",
         model([helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=100)],
               [vi("x", [2, 3])], [vi("y", [2, 3])]),
         ["'sm'", "Softmax", "axis"])
    save("concat_bad_axis.onnx",
         model([helper.make_node("Concat", ["x", "x"], ["y"], name="cat", axis=-7)],
               [vi("x", [2, 3])], [vi("y", [4, 3])]),
         ["'cat'", "Concat", "axis -7"])
    save("reshape_huge_shape.onnx",
         model([helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")],
               [vi("x", [2, 3])], [vi("y", [2, 3])],
               [helper.make_tensor("s", TensorProto.INT64, [3],
                                   [2 ** 62, 2 ** 62, 2 ** 62])]),
         ["'rs'", "Reshape", "4611686018427387904"])
    save("attr_wrong_type.onnx",
         model([helper.make_node("Transpose", ["x"], ["y"], name="tp", perm=1.5)],
               [vi("x", [2, 3])], [vi("y", [3, 2])]),
         ["'tp'", "perm"])
    save("empty_required_input.onnx",
         model([helper.make_node("MatMul", ["x", ""], ["y"], name="mm")],
               [vi("x", [2, 4])], [vi("y", [2, 3])]),
         ["'mm'", "MatMul", ("missing", "empty")])
    save("conv_negative_pads.onnx",
         model([helper.make_node("Conv", ["x", "w"], ["y"], name="cv", pads=[-5, -5, -5, -5])],
               [vi("x", [1, 1, 4, 4])], [vi("y", [1, 1, 2, 2])],
               [raw_init("w", [1, 1, 3, 3], b"\0" * 36)]),
         ["'cv'", "Conv", "padding"])
    save("gather_index_out_of_range.onnx",
         model([helper.make_node("Gather", ["x", "i"], ["y"], name="ga", axis=0)],
               [], [vi("y", [1, 3])],
               [raw_init("x", [2, 3], b"\0" * 24),
                helper.make_tensor("i", TensorProto.INT64, [1], [7])]),
         ["'ga'", "Gather", "index 7"])
    save("int64_data_count.onnx",
         model([helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")],
               [vi("x", [2, 3])], [vi("y", [3, 2])],
               [TensorProto(name="s", data_type=TensorProto.INT64, dims=[2],
                            int64_data=[3, 2, 1, 1, 1])]),
         ["'s'", "5 values"])


# ---------------------------------------------------------------------- npy

def _npy_header(header, version=(1, 0), pad=True):
    h = header.encode("latin1") if isinstance(header, str) else header
    if pad:
        hl = 4 if version[0] >= 2 else 2
        total = 6 + 2 + hl + len(h) + 1
        h = h + b" " * ((64 - total % 64) % 64) + b"\n"
    fmt = "<I" if version[0] >= 2 else "<H"
    return b"\x93NUMPY" + bytes(version) + struct.pack(fmt, len(h)) + h


def _npy(descr, shape, data, fortran=False, **kw):
    hdr = "{'descr': %r, 'fortran_order': %s, 'shape': %s, }" % (
        descr, fortran, repr(tuple(shape)))
    return _npy_header(hdr, **kw) + data


def _npy_of(a):
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def _good_tokens(n=4):
    return (np.arange(n * SEQ, dtype=np.int64) % VOCAB).reshape(n, SEQ)


def _npy_cases(c):
    good = _npy_of(_good_tokens())
    body = _good_tokens().tobytes()

    def case(name, data, expect):
        rel = "npy/" + name
        c.write(rel, data)
        c.add(rel, "npy", c.run_args(rel, "--data", rel), [name] + expect)

    case("empty.npy", b"", ["not a .npy file"])
    case("magic_only.npy", b"\x93NUMPY", ["not a .npy file"])
    case("bad_magic.npy", b"\x93NUMPZ" + good[6:], ["not a .npy file"])
    case("text.npy", b"input_ids = [[1, 2, 3]]\n" * 8, ["not a .npy file"])
    case("bad_version.npy", good[:6] + b"\x09\x00" + good[8:], ["version"])
    case("header_past_end.npy", good[:8] + struct.pack("<H", 60000) + good[10:], ["header"])
    case("header_v2_huge.npy", good[:6] + b"\x02\x00" + struct.pack("<I", 0xFFFFFFF0) + good[10:],
         ["header"])
    case("header_len_zero.npy", good[:8] + b"\0\0" + good[10:], ["header"])
    case("header_not_dict.npy", _npy_header("[1, 2, 3]") + body, ["header"])
    case("header_code.npy", _npy_header("__import__('os').system('false')") + body, ["header"])
    case("header_unterminated.npy", _npy_header("{'descr': '<i8', 'fortran_order': False, ")
         + body, ["header"])
    case("header_nul.npy", _npy_header(
        "{'descr': '<i8\0', 'fortran_order': False, 'shape': (4, 8), }") + body, ["header"])
    case("no_descr.npy", _npy_header("{'fortran_order': False, 'shape': (4, 8), }") + body,
         ["descr"])
    case("no_shape.npy", _npy_header("{'descr': '<i8', 'fortran_order': False, }") + body,
         ["shape"])
    case("no_fortran_order.npy", _npy_header("{'descr': '<i8', 'shape': (4, 8), }") + body,
         ["fortran_order"])
    case("fortran_order_string.npy", _npy_header(
        "{'descr': '<i8', 'fortran_order': 'no', 'shape': (4, 8), }") + body,
        ["True or False"])
    case("unknown_descr.npy", _npy("<x9", (4, 8), body), ["<x9"])
    case("big_endian.npy", _npy(">i8", (4, 8), _good_tokens().astype(">i8").tobytes()),
         ["big-endian"])
    case("complex.npy", _npy("<c16", (4, 4), body), ["c16"])
    case("object.npy", _npy("|O", (4, 8), body), ["|O"])
    case("unicode.npy", _npy("<U8", (4, 1), body), ["<U8"])
    case("datetime.npy", _npy("<M8[s]", (4, 8), body), ["<M8"])
    case("structured.npy", _npy_header(
        "{'descr': [('a', '<i8')], 'fortran_order': False, 'shape': (4, 8), }") + body,
        ["header"])
    case("shape_overflow.npy", _npy("<i8", (2 ** 40, 2 ** 40), body), ["shape"])
    case("shape_overflow_3d.npy", _npy("<i8", (2 ** 31, 2 ** 31, 2 ** 31), body), ["shape"])
    case("shape_huge_dim.npy", _npy("<i8", (10 ** 30, 8), body), ["dimension too large"])
    case("negative_shape.npy", _npy("<i8", (-1, 8), body), ["shape"])
    case("shape_not_int.npy", _npy_header(
        "{'descr': '<i8', 'fortran_order': False, 'shape': ('a', 8), }") + body, ["shape"])
    case("shape_scalar.npy", _npy("<i8", (), body[:8]), ["input_ids"])
    case("shape_mismatch.npy", _npy("<i8", (4, 5), body[:160]), ["input_ids", "[4, 5]"])
    case("shape_mismatch_3d.npy", _npy("<i8", (3, 3, 8), b"\0" * 576),
         ["input_ids", "[3, 3, 8]"])
    case("zero_samples.npy", _npy("<i8", (0, 8), b""), ["0"])
    case("truncated.npy", good[:-40], ["truncated"])
    case("truncated_header.npy", good[:30], ["header"])
    case("tokens_out_of_range.npy", _npy_of(_good_tokens() + 40), ["40", "32"])
    case("tokens_negative.npy", _npy_of(_good_tokens() - 5), ["-5"])
    case("uint64_huge.npy", _npy_of(np.full((4, 8), 2 ** 64 - 1, dtype=np.uint64)),
         ["i64"])
    case("fortran_order.npy", _npy("<i8", (4, 8), body, fortran=True), ["Fortran"])
    case("float_for_int.npy", _npy_of(_good_tokens().astype(np.float32)),
         ["float32", "input_ids"])
    case("bool_for_int.npy", _npy_of(np.ones((4, 8), dtype=bool)), ["bool", "input_ids"])


# ---------------------------------------------------------------------- npz

def _zip_stored(members, method=0, flags=0, crc=None, usize=None, csize=None,
                cd_usize=None, cd_csize=None, extra=b"", cd_extra=b"", local_off=None,
                cd_name=None, comment=b"", entries=None, cd_offset=None, cd_size=None,
                disk=0, cd_sig=b"PK\x01\x02", lf_sig=b"PK\x03\x04"):
    """A zip archive written field by field so that any field can lie.
    members: [(name, compressed bytes, uncompressed bytes)]."""
    out = bytearray()
    cds = bytearray()
    for name, cdata, udata in members:
        nb = name.encode()
        off = len(out)
        cr = zlib.crc32(udata) if crc is None else crc
        us = len(udata) if usize is None else usize
        cs = len(cdata) if csize is None else csize
        out += lf_sig + struct.pack("<HHHHHIIIHH", 20, flags, method, 0, 0, cr, cs, us,
                                    len(nb), len(extra)) + nb + extra + cdata
        cn = nb if cd_name is None else cd_name
        cds += cd_sig + struct.pack(
            "<HHHHHHIIIHHHHHII", 20, 20, flags, method, 0, 0, cr,
            cs if cd_csize is None else cd_csize, us if cd_usize is None else cd_usize,
            len(cn), len(cd_extra), 0, 0, 0, 0,
            off if local_off is None else local_off) + cn + cd_extra
    cdo = len(out)
    out += cds
    n = len(members) if entries is None else entries
    out += b"PK\x05\x06" + struct.pack(
        "<HHHHIIH", disk, disk, n, n, len(cds) if cd_size is None else cd_size,
        cdo if cd_offset is None else cd_offset, len(comment)) + comment
    return bytes(out)


def _deflate(data):
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    return co.compress(data) + co.flush()


def _npz_cases(c):
    arr = _npy_of(_good_tokens())
    good_member = [("input_ids.npy", arr, arr)]

    def case(name, data, expect, extra=()):
        rel = "npz/" + name
        c.write(rel, data)
        c.add(rel, "npz", c.run_args(rel, "--data", rel, *extra), [name] + expect)

    good = _zip_stored(good_member)
    eocd = good.rindex(b"PK\x05\x06")
    cd = good.index(b"PK\x01\x02")
    case("empty.npz", b"", ["not a valid .npz"])
    case("not_zip.npz", b"this is not a zip archive\n" * 20, ["not a valid .npz"])
    case("pk_no_end_record.npz", good[:eocd] + b"\0" * 22, ["end"])
    case("truncated_in_end_record.npz", good[:-10], ["not a valid .npz"])
    case("truncated_in_central_dir.npz", good[:cd + 20], ["not a valid .npz"])
    case("truncated_in_member.npz", good[:200], ["not a valid .npz"])
    case("truncated_in_local_header.npz", good[:12], ["not a valid .npz"])
    case("cd_outside_file.npz", _zip_stored(good_member, cd_offset=0x7FFFFFF0), ["central directory"])
    case("cd_size_outside_file.npz", _zip_stored(good_member, cd_size=0xFFFFFF00),
         ["central directory"])
    case("huge_entry_count.npz", _zip_stored(good_member, entries=65000), ["central directory"])
    case("entry_count_past_cd.npz", _zip_stored(good_member, entries=2), ["central directory"])
    case("cd_points_at_member.npz", _zip_stored(good_member, cd_offset=0), ["central directory"])
    case("local_offset_outside.npz", _zip_stored(good_member, local_off=0x7FFFFFFF),
         ["input_ids.npy"])
    z64 = struct.pack("<HH", 1, 8) + struct.pack("<Q", 2 ** 63)
    case("zip64_local_offset_overflow.npz",
         _zip_stored(good_member, local_off=0xFFFFFFFF, cd_extra=z64), ["input_ids.npy"])
    z64s = struct.pack("<HH", 1, 16) + struct.pack("<QQ", 2 ** 63 + 5, 2 ** 64 - 1)
    case("zip64_sizes_overflow.npz",
         _zip_stored(good_member, cd_usize=0xFFFFFFFF, cd_csize=0xFFFFFFFF, cd_extra=z64s),
         ["input_ids.npy"])
    case("zip64_extra_truncated.npz",
         _zip_stored(good_member, local_off=0xFFFFFFFF, cd_extra=struct.pack("<HH", 1, 2) + b"\0\0"),
         ["input_ids.npy"])
    case("extra_len_past_cd.npz",
         _zip_stored(good_member, cd_extra=struct.pack("<HH", 0x5455, 60000)),
         ["central directory"])
    case("name_len_past_cd.npz", good[:cd + 28] + struct.pack("<H", 65000) + good[cd + 30:],
         ["not a valid .npz"])
    # A zip64 end-of-central-directory locator that points outside the file.
    loc = b"PK\x06\x07" + struct.pack("<IQI", 0, 2 ** 62, 1)
    case("zip64_locator_outside.npz", good[:eocd] + loc + good[eocd:].replace(
        struct.pack("<HH", 1, 1), struct.pack("<HH", 0xFFFF, 0xFFFF), 1), ["zip64"])
    # 3.75 GiB claimed from a 1 KiB deflate stream.
    deflated = _deflate(arr)
    case("deflate_claims_3_75_gib.npz",
         _zip_stored([("input_ids.npy", deflated, arr)], method=8,
                     usize=0xF0000000, cd_usize=0xF0000000), ["input_ids.npy"])
    case("deflate_size_mismatch.npz",
         _zip_stored([("input_ids.npy", deflated, arr)], method=8, usize=len(arr) + 64,
                     cd_usize=len(arr) + 64), ["input_ids.npy"])
    case("deflate_corrupt.npz",
         _zip_stored([("input_ids.npy", bytes(range(256)) * 4, arr)], method=8),
         ["input_ids.npy"])
    case("deflate_truncated_stream.npz",
         _zip_stored([("input_ids.npy", deflated[:len(deflated) // 2], arr)], method=8,
                     csize=len(deflated) // 2), ["input_ids.npy"])
    case("crc_mismatch.npz", _zip_stored(good_member, crc=0xDEADBEEF), ["CRC"])
    case("crc_mismatch_deflated.npz",
         _zip_stored([("input_ids.npy", deflated, arr)], method=8, crc=0x12345678), ["CRC"])
    case("bzip2_method.npz", _zip_stored(good_member, method=12), ["compression"])
    case("unknown_method.npz", _zip_stored(good_member, method=99), ["compression"])
    case("encrypted.npz", _zip_stored(good_member, flags=1), ["encrypt"])
    case("bad_local_signature.npz", _zip_stored(good_member, lf_sig=b"PK\x07\x08"),
         ["input_ids.npy"])
    case("bad_cd_signature.npz", _zip_stored(good_member, cd_sig=b"PK\x09\x09"),
         ["central directory"])
    case("stored_size_past_end.npz",
         _zip_stored(good_member, csize=10 ** 9, usize=10 ** 9, cd_csize=10 ** 9,
                     cd_usize=10 ** 9), ["input_ids.npy"])
    case("stored_sizes_differ.npz", _zip_stored(good_member, cd_usize=len(arr) - 8),
         ["input_ids.npy"])
    case("member_not_npy.npz",
         _zip_stored([("input_ids.npy", b"hello, world" * 10, b"hello, world" * 10)]),
         ["input_ids"])
    case("member_bad_npy_header.npz",
         _zip_stored([("input_ids.npy", arr[:8] + struct.pack("<H", 9000) + arr[10:],
                       arr[:8] + struct.pack("<H", 9000) + arr[10:])]), ["input_ids"])
    case("no_matching_array.npz", _zip_stored([("x.npy", arr, arr)]), ["input_ids"])
    case("dotdot_member_name.npz", _zip_stored([("../input_ids.npy", arr, arr)]),
         ["input_ids"])
    case("no_members.npz", _zip_stored([]), ["input_ids"])
    bad_shape = _npy_of(np.zeros((4, 5), dtype=np.int64))
    case("member_wrong_shape.npz", _zip_stored([("input_ids.npy", bad_shape, bad_shape)]),
         ["input_ids", "[4, 5]"])
    oor = _npy_of(_good_tokens() + 100)
    case("member_out_of_range.npz", _zip_stored([("input_ids.npy", oor, oor)]),
         ["input_ids", "32"])
    flt = _npy_of(np.zeros((4, 8), dtype=np.float64))
    case("member_float.npz", _zip_stored([("input_ids.npy", flt, flt)]),
         ["input_ids", "float64"])
    # numpy's own writer, compressed, with no samples.
    buf = io.BytesIO()
    np.savez_compressed(buf, input_ids=np.zeros((0, SEQ), np.int64), x=_good_tokens())
    case("member_zero_samples.npz", buf.getvalue(), ["input_ids", "no samples"])


# ------------------------------------------------------------------- tokens

def _token_cases(c):
    def case(name, data, dtype, expect):
        rel = "tokens/" + name
        c.write(rel, data)
        c.add(rel, "tokens", c.run_args(rel, "--data", rel, "--token-dtype", dtype),
              [name] + expect)

    n = BATCH * SEQ
    case("empty.bin", b"", "uint16", ["empty"])
    case("too_short.bin", np.arange(n - 6, dtype=np.uint16).tobytes(), "uint16", ["16"])
    case("odd_bytes.bin", np.arange(n * 2, dtype=np.uint16).tobytes()[:-1] + b"", "uint16",
         ["uint16", "bytes"])
    case("too_large_u16.bin", np.full(n * 2, 40, dtype=np.uint16).tobytes(), "uint16",
         ["40", "32"])
    case("too_large_u8.bin", bytes(range(40, 104)), "uint8", ["40", "32"])
    case("int32_negative.bin", np.full(n * 2, -7, dtype=np.int32).tobytes(), "int32", ["-7"])
    case("int32_max.bin", np.full(n * 2, 2 ** 31 - 1, dtype=np.int32).tobytes(), "int32",
         ["2147483647"])
    case("int32_ragged.bin", np.arange(n * 2, dtype=np.int32).tobytes()[:-3], "int32",
         ["int32", "bytes"])
    case("last_token_bad.bin", np.array([1] * (n - 1) + [999] + [1] * n, dtype=np.uint16)
         .tobytes(), "uint16", ["999", "position 15"])
    os.makedirs(c.path("tokens", "a_directory.bin"))
    c.add("tokens/a_directory.bin", "tokens",
          c.run_args("tokens/a_directory.bin", "--data", "tokens/a_directory.bin",
                     "--token-dtype", "uint16"), ["a_directory.bin", "directory"])
    c.add("tokens/missing.bin", "tokens",
          c.run_args("tokens/missing.bin", "--data", "tokens/missing.bin",
                     "--token-dtype", "uint16"), ["missing.bin"])
    c.write("tokens/unknown_format.dat", np.arange(64, dtype=np.uint16).tobytes())
    c.add("tokens/unknown_format.dat", "tokens",
          c.run_args("tokens/unknown_format.dat", "--data", "tokens/unknown_format.dat"),
          ["unknown_format.dat", "--token-dtype"])


# -------------------------------------------------------------- safetensors

def _st(header, data=b"", length=None, raw=False):
    h = header if raw else json.dumps(header).encode()
    if not raw:
        h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h) if length is None else length) + h + data


def _st_good():
    return {WTE: {"dtype": "F32", "shape": [32, 16], "data_offsets": [0, 2048]}}


def _safetensors_cases(c, params):
    data = b"\0" * 2048

    def case(name, blob, expect):
        rel = "st/" + name
        c.write(rel, blob)
        c.add(rel, "safetensors",
              c.run_args(rel, "--data", "synthetic", "--weights", rel), [name] + expect)

    def entry(**kw):
        e = dict(_st_good()[WTE])
        e.update(kw)
        return {WTE: e}

    good = _st(_st_good(), data)
    case("empty.safetensors", b"", ["header"])
    case("short.safetensors", b"\x10\0\0", ["header"])
    case("header_past_end.safetensors", _st(_st_good(), data, length=10 ** 6), ["header"])
    case("header_2_63.safetensors", _st(_st_good(), data, length=2 ** 63), ["header"])
    case("header_2_64_minus_1.safetensors", _st(_st_good(), data, length=2 ** 64 - 1),
         ["header"])
    case("header_zero.safetensors", _st(_st_good(), data, length=0), ["header"])
    case("header_not_json.safetensors", _st(b"{this is not json}      ", data, raw=True),
         ["JSON"])
    case("header_not_utf8.safetensors", _st(b'{"\xff\xfe": 1}  ', data, raw=True), ["header"])
    case("header_array.safetensors", _st([1, 2, 3], data), ["object"])
    case("header_trailing.safetensors", _st(json.dumps(_st_good()).encode() + b" }]garbage",
                                            data, raw=True), ["JSON"])
    case("header_deep.safetensors", _st(b"[" * 200000 + b"]" * 200000, data, raw=True),
         ["header"])
    case("entry_not_object.safetensors", _st({WTE: [0, 1]}, data), [WTE])
    case("unknown_dtype.safetensors", _st(entry(dtype="F7"), data), [WTE, "F7"])
    case("dtype_not_string.safetensors", _st(entry(dtype=4), data), [WTE, "dtype"])
    case("no_dtype.safetensors", _st({WTE: {"shape": [32, 16], "data_offsets": [0, 2048]}},
                                     data), [WTE, "dtype"])
    case("no_shape.safetensors", _st({WTE: {"dtype": "F32", "data_offsets": [0, 2048]}},
                                     data), [WTE, "shape"])
    case("no_offsets.safetensors", _st({WTE: {"dtype": "F32", "shape": [32, 16]}}, data),
         [WTE, "data_offsets"])
    case("negative_shape.safetensors", _st(entry(shape=[-32, -16]), data), [WTE, "shape"])
    case("overflow_shape.safetensors", _st(entry(shape=[2 ** 40, 2 ** 40, 2 ** 40]), data),
         [WTE, "1099511627776"])
    case("float_shape.safetensors", _st(entry(shape=[32.5, 16]), data), [WTE, "shape"])
    case("shape_not_list.safetensors", _st(entry(shape="32x16"), data), [WTE, "shape"])
    case("offsets_reversed.safetensors", _st(entry(data_offsets=[2048, 0]), data),
         [WTE, "data_offsets"])
    case("offsets_past_end.safetensors", _st(entry(data_offsets=[0, 10 ** 9]), data),
         [WTE, "data_offsets"])
    case("offsets_huge.safetensors", _st(entry(data_offsets=[2 ** 64 - 8, 2 ** 64 - 8 + 2048]),
                                         data), [WTE, "data_offsets"])
    case("offsets_negative.safetensors", _st(entry(data_offsets=[-2048, 0]), data),
         [WTE, "data_offsets"])
    case("offsets_one_number.safetensors", _st(entry(data_offsets=[0]), data),
         [WTE, "data_offsets"])
    case("offsets_strings.safetensors", _st(entry(data_offsets=["0", "2048"]), data),
         [WTE, "data_offsets"])
    case("offsets_size_mismatch.safetensors", _st(entry(data_offsets=[0, 2044]), data),
         [WTE, "2044"])
    two = {WTE: _st_good()[WTE],
           "transformer.wpe.weight": {"dtype": "F32", "shape": [8, 16],
                                      "data_offsets": [1024, 1536]}}
    case("offsets_overlap.safetensors", _st(two, data), ["overlap"])
    case("offsets_hole.safetensors", _st(entry(data_offsets=[64, 2112]), data + b"\0" * 64),
         ["[0, 64)", "belong to no tensor"])
    case("metadata_not_string.safetensors", _st(dict(_st_good(), __metadata__={"format": 1}),
                                                data), ["__metadata__"])
    case("metadata_not_object.safetensors", _st(dict(_st_good(), __metadata__=[1]), data),
         ["__metadata__"])
    case("truncated_data.safetensors", good[:-1000], ["truncated"])
    case("wrong_shape.safetensors", _st(entry(shape=[16, 32]), data), [WTE, "[16, 32]"])
    case("wrong_dtype.safetensors", _st(entry(dtype="F64", data_offsets=[0, 4096]),
                                        data * 2), [WTE, "f64"])
    case("wrong_dtype_int.safetensors", _st(entry(dtype="I32"), data), [WTE, "i32"])
    case("matches_nothing.safetensors",
         _st({"foo.weight": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}},
             b"\0" * 16), ["foo.weight"])
    # A parameter of another shape among otherwise right ones.
    ok = {}
    off = 0
    blob = b""
    for name, (dt, shape) in sorted(params.items()):
        shape = list(shape)
        if name == "transformer.ln_f.bias":
            shape = [17]
        n = int(np.prod(shape)) * 4
        ok[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + n]}
        off += n
        blob += b"\0" * n
    case("one_wrong_among_many.safetensors", _st(ok, blob), ["transformer.ln_f.bias", "[17]"])
    os.makedirs(c.path("st", "dir.safetensors"))
    c.add("st/dir.safetensors", "safetensors",
          c.run_args("st/dir.safetensors", "--data", "synthetic", "--weights",
                     "st/dir.safetensors"), ["dir.safetensors", "not a regular file"])
    c.add("st/missing.safetensors", "safetensors",
          c.run_args("st/missing.safetensors", "--data", "synthetic", "--weights",
                     "st/missing.safetensors"), ["missing.safetensors"])


# ------------------------------------------------------------------ program

def _protoc(mode, data):
    proc = subprocess.run(["protoc", "-I" + PROTO_DIR, f"--{mode}=colo.runtime.Program",
                           "Program.proto"], input=data, capture_output=True, check=True)
    return proc.stdout


def _blocks(text, head):
    """Spans of the top-level `head {...}` blocks of a text-format message."""
    spans, pos = [], 0
    pat = re.compile(r"^" + head + r" \{\n.*?^\}\n", re.M | re.S)
    for m in pat.finditer(text):
        spans.append((m.start(), m.end()))
    return spans


def _buffer_index(text, name):
    for i, (a, b) in enumerate(_blocks(text, "buffers")):
        if f'  name: "{name}"\n' in text[a:b]:
            return i
    raise KeyError(name)


def _edit_buffer(text, i, fn):
    a, b = _blocks(text, "buffers")[i]
    return text[:a] + fn(text[a:b]) + text[b:]


def _edit_step(text, i, fn):
    a, b = _blocks(text, "steps")[i]
    return text[:a] + fn(text[a:b]) + text[b:]


def _sub1(pattern, repl, s):
    out, n = re.subn(pattern, repl, s, count=1, flags=re.M)
    assert n == 1, pattern
    return out


def _program_cases(c):
    exe = c.path("exe")
    text = _protoc("decode", open(os.path.join(exe, "program.pb"), "rb").read()).decode()
    nbuf = len(_blocks(text, "buffers"))
    steps = _blocks(text, "steps")
    gemm_step = next(i for i, (a, b) in enumerate(steps) if "  gemm {" in text[a:b])
    kernel_step = next(i for i, (a, b) in enumerate(steps) if "  kernel {" in text[a:b])
    temp = next(i for i, (a, b) in enumerate(_blocks(text, "buffers"))
                if "  offset: " in text[a:b] and "kind:" not in text[a:b] and
                "alias_of" not in text[a:b] and "dtype" not in text[a:b] and
                text[a:b].count("  shape:") == 3)
    temp_name = re.search(r'name: "([^"]*)"', text[slice(*_blocks(text, "buffers")[temp])])[1]
    wte = _buffer_index(text, WTE)
    step_name = lambda i: re.search(r'^  name: "([^"]*)"', text[slice(*steps[i])], re.M)[1]

    def exe_dir(name):
        d = c.path("prog", name)
        os.makedirs(d)
        for f in os.listdir(exe):
            if f in ("kernels.so", "state.safetensors"):
                shutil.copy(os.path.join(exe, f), d)
        return d

    def add(name, expect):
        rel = "prog/" + name
        c.add(rel, "program", ["run", rel, *RUN, "--data", "synthetic", "-o", c.out(rel)],
              expect)

    def case(name, new_text, expect, where="/program.pb"):
        d = exe_dir(name)
        with open(os.path.join(d, "program.pb"), "wb") as f:
            f.write(_protoc("encode", new_text.encode()))
        add(name, ([] if where is None else [name + where]) + expect)
        return d

    def raw(name, data, expect):
        d = exe_dir(name)
        with open(os.path.join(d, "program.pb"), "wb") as f:
            f.write(data)
        add(name, [name + "/program.pb"] + expect)

    pb = open(os.path.join(exe, "program.pb"), "rb").read()
    raw("random_bytes", bytes((i * 7919 + 13) % 256 for i in range(4096)), ["parse"])
    raw("truncated", pb[: len(pb) // 2], ["parse"])
    raw("truncated_last_byte", pb[:-1], ["parse"])
    raw("text_format", text.encode(), ["parse"])
    raw("empty", b"", [("no steps", "no loss", "empty")])

    buf = lambda i, fn: _edit_buffer(text, i, fn)
    case("negative_dim", buf(wte, lambda s: _sub1(r"^  shape: 32$", "  shape: -32", s)),
         [WTE, "-32"])
    case("dims_overflow", buf(wte, lambda s: _sub1(
        r"^  shape: 32\n  shape: 16$", "  shape: 4294967296\n  shape: 4294967296\n"
        "  shape: 4294967296", s)), [WTE, "bad shape"])
    case("dims_huge_bytes", buf(wte, lambda s: _sub1(
        r"^  shape: 32$", "  shape: 72057594037927936", s)), [WTE, "bad shape"])
    case("input_huge", buf(0, lambda s: _sub1(r"^  shape: 2$", "  shape: 1099511627776", s)),
         ["out of memory", "70368744193536"], where=None)
    case("temp_dims_overflow", buf(temp, lambda s: s.replace(
        "  offset:", "  shape: 9223372036854775807\n  shape: 9223372036854775807\n  offset:")),
        [temp_name, "bad shape"])
    st = lambda i, fn: _edit_step(text, i, fn)
    case("gemm_buffer_out_of_range", st(gemm_step, lambda s: _sub1(
        r"^    a: \d+$", "    a: 99999", s)), [step_name(gemm_step), "99999"])
    case("gemm_buffer_negative", st(gemm_step, lambda s: _sub1(
        r"^    c: \d+$", "    c: -3", s)), [step_name(gemm_step), "-3"])
    case("kernel_arg_out_of_range", st(kernel_step, lambda s: _sub1(
        r"^    args: \d+$", f"    args: {nbuf}", s)), [step_name(kernel_step), str(nbuf)])
    case("gemm_m_huge", st(gemm_step, lambda s: _sub1(r"^    m: \d+$", "    m: 4294967296", s)),
         [step_name(gemm_step), "32-bit"])
    case("gemm_m_negative", st(gemm_step, lambda s: _sub1(r"^    m: \d+$", "    m: -16", s)),
         [step_name(gemm_step), "-16"])
    case("gemm_k_too_big", st(gemm_step, lambda s: _sub1(r"^    k: \d+$", "    k: 1024", s)),
         [step_name(gemm_step), "lda 16"])
    case("gemm_lda_small", st(gemm_step, lambda s: _sub1(r"^    lda: \d+$", "    lda: 1", s)),
         [step_name(gemm_step), "lda"])
    plain = "not a plain file name"
    case("kernels_absolute", _sub1(r'^kernels_library: ".*"$', 'kernels_library: "/etc/passwd"',
                                   text), ["'/etc/passwd'", plain], where="")
    case("kernels_dotdot", _sub1(r'^kernels_library: ".*"$', 'kernels_library: "../k.so"',
                                 text), ["'../k.so'", plain], where="")
    case("kernels_dot", _sub1(r'^kernels_library: ".*"$', 'kernels_library: ".."', text),
         ["'..'", plain], where="")
    case("kernels_missing", _sub1(r'^kernels_library: ".*"$', 'kernels_library: "nothere.so"',
                                  text), ["nothere.so", "does not exist"], where="")
    d = exe_dir("kernels_not_elf")
    with open(os.path.join(d, "kernels.so"), "wb") as f:
        f.write(b"not a shared library\n" * 100)
    shutil.copy(os.path.join(exe, "program.pb"), d)
    add("kernels_not_elf", ["kernels_not_elf/kernels.so", "ELF"])
    d = exe_dir("kernels_deleted")
    os.remove(os.path.join(d, "kernels.so"))
    shutil.copy(os.path.join(exe, "program.pb"), d)
    add("kernels_deleted", ["kernels_deleted/kernels.so", "does not exist"])
    case("kernel_symbol_missing", st(kernel_step, lambda s: _sub1(
        r'^    symbol: ".*"$', '    symbol: "no_such_kernel"', s)),
        ["'no_such_kernel'", "not exported"], where="/kernels.so")
    case("arena_negative", _sub1(r"^arena_bytes: \d+$", "arena_bytes: -64", text),
         ["arena", "-64"])
    case("arena_too_small", _sub1(r"^arena_bytes: \d+$", "arena_bytes: 64", text),
         ["arena of 64 bytes"])
    case("device_memory_negative", text + "device_memory: -1\n", ["device_memory", "-1"])
    case("temp_offset_outside", buf(temp, lambda s: _sub1(
        r"^  offset: \d+$", "  offset: 9223372036854775800", s)), [temp_name, "9223372036854775800", "arena"])
    c.forbid(", -")
    case("temp_offset_negative", buf(temp, lambda s: _sub1(
        r"^  offset: \d+$", "  offset: -64", s)), [temp_name, "-64", "arena"])
    case("temp_offset_misaligned", buf(temp, lambda s: _sub1(
        r"^  offset: \d+$", "  offset: 3", s)), [temp_name, "offset 3"])
    case("duplicate_names", buf(wte + 1, lambda s: _sub1(
        r'^  name: ".*"$', f'  name: "{WTE}"', s)), [WTE, "also buffer 2"])
    case("empty_name", buf(wte, lambda s: _sub1(r'^  name: ".*"$', '  name: ""', s)),
         ["buffer 2", "no name"])
    case("unknown_dtype", buf(wte, lambda s: s.replace("  shape: 32", "  dtype: 42\n  shape: 32",
                                                       1)), [WTE, "dtype 42"])
    case("unknown_kind", buf(wte, lambda s: _sub1(r"^  kind: STATE$", "  kind: 17", s)),
         [WTE, "kind 17"])
    case("unknown_space", buf(wte, lambda s: _sub1(r"^  kind: STATE$",
                                                   "  kind: STATE\n  space: 9", s)),
         [WTE, "space 9"])
    case("temp_on_host", buf(temp, lambda s: s.replace("  offset:", "  space: HOST\n  offset:")),
         [temp_name, "outside the host arena of 0 bytes"])
    case("alias_out_of_range", buf(temp, lambda s: s.replace(
        "  offset:", "  alias_of: 5000\n  offset:")), [temp_name, "5000"])

    def alias_cycle():
        t = _edit_buffer(text, temp, lambda s: s.replace(
            "  offset:", f"  alias_of: {temp + 1}\n  offset:"))
        return _edit_buffer(t, temp + 1, lambda s: _sub1(
            r"^  (name: .*)$", f"  \\1\n  alias_of: {temp}", s))
    case("alias_cycle", alias_cycle(), [temp_name, "cycle"])
    case("alias_larger", buf(temp, lambda s: s.replace(
        "  offset:", f"  alias_of: 1\n  offset:")), [temp_name, "colo.step", "do not fit"])
    case("init_random_on_int", buf(1, lambda s: s.replace(
        "  init {\n", "  init {\n    distribution: NORMAL\n")), ["colo.step", "i64"])
    case("init_unknown_distribution", buf(wte, lambda s: _sub1(
        r"^    distribution: NORMAL$", "    distribution: 7", s)), [WTE, "distribution 7"])
    no_init = buf(wte, lambda s: re.sub(r"  init \{\n.*?  \}\n", "", s, flags=re.S))
    case("state_without_init", no_init, [f"no tensor '{WTE}'"], where="/state.safetensors")
    d = case("state_garbage", no_init, [("not a safetensors", "header")],
             where="/state.safetensors")
    with open(os.path.join(d, "state.safetensors"), "wb") as f:
        f.write(b"\xff" * 64)
    case("loss_out_of_range", _sub1(r"^loss: \d+$", "loss: 100000", text), ["loss 0", "100000"])
    case("loss_not_scalar", _sub1(r"^loss: \d+$", f"loss: {wte}", text), [WTE, "not a float scalar"])
    case("loss_int", _sub1(r"^loss: \d+$", "loss: 1", text), ["colo.step", "not a float scalar"])
    case("step_counter_not_i64", _sub1(r"^step_counter: \d+$", f"step_counter: {wte}", text),
         ["step_counter", WTE, "i64 scalar"])
    case("step_counter_out_of_range", _sub1(r"^step_counter: \d+$", "step_counter: 77777",
                                            text), ["step_counter", "77777"])
    case("step_counter_input", _sub1(r"^step_counter: \d+$", "step_counter: 0", text),
         ["step_counter", "input_ids", "i64 scalar"])
    case("param_names_missing_buffer", text + 'param_names {\n  key: "ghost"\n  value: "g"\n}\n',
         ["param_names", "'ghost'"])
    case("param_names_same_name", text.replace(
        f'  key: "transformer.wpe.weight"\n  value: "transformer.wpe.weight"',
        f'  key: "transformer.wpe.weight"\n  value: "{WTE}"'), ["param_names", WTE, "both"])
    case("step_without_kind", text + 'steps {\n  name: "nothing"\n}\n',
         ["'nothing'", "no kind"])
    case("copy_size_mismatch", text + f'steps {{\n  copy {{\n    src: {wte}\n    dst: {wte + 1}\n'
         '  }\n  name: "bad.copy"\n}\n', ["'bad.copy'", "2048 bytes", "512"])
    case("copy_into_input", text + 'steps {\n  copy {\n    src: 0\n    dst: 0\n'
         '  }\n  name: "into.input"\n}\n', ["'into.input'", "input_ids", "INPUT"])
    case("wait_not_collective", text + f'steps {{\n  wait {{\n    collective_step: {gemm_step}\n'
         '  }\n  name: "bad.wait"\n}\n', ["'bad.wait'", "not an earlier overlapped collective"])
    case("wait_out_of_range", text + 'steps {\n  wait {\n    collective_step: 100000\n'
         '  }\n  name: "far.wait"\n}\n', ["'far.wait'", "100000"])
    case("transfer_within_a_space", text + f'steps {{\n  transfer {{\n    src: {wte}\n'
         f'    dst: {wte}\n  }}\n  name: "same.space"\n}}\n', ["'same.space'", "both in DEVICE"])
    case("host_arena_negative", text + "host_arena_bytes: -64\n", ["host_arena_bytes is negative"])
    mesh = 'mesh {\n  shape: 1\n  axes: "dp"\n}\n'
    coll = (f'steps {{\n  collective {{\n    mesh_axes: 3\n    input: {wte}\n    output: {wte}\n'
            '  }\n  name: "bad.allreduce"\n}\n')
    case("collective_axis_out_of_range", text + mesh + coll, ["'bad.allreduce'", "mesh axis 3"])
    case("collective_without_mesh", text + coll.replace("mesh_axes: 3", "mesh_axes: 0"),
         ["'bad.allreduce'", "mesh axis 0"])
    case("collective_peer_out_of_range", text + mesh + coll.replace(
        "mesh_axes: 3", "kind: SEND\n    mesh_axes: 0\n    peer: 5").replace(
        f"    output: {wte}\n", ""), ["'bad.allreduce'", "peer 5"])
    case("shard_bad_dim", buf(wte, lambda s: s.replace(
        "  kind: STATE", "  kind: STATE\n  shard {\n    full_shape: 32\n    full_shape: 16\n"
        "    dim: 9\n    mesh_axes: 0\n  }")) + mesh, [WTE, "dim 9"])
    case("shard_wrong_full_shape", buf(wte, lambda s: s.replace(
        "  kind: STATE", "  kind: STATE\n  shard {\n    full_shape: 64\n    full_shape: 16\n"
        "    mesh_axes: 0\n  }")) + mesh, [WTE, "shard", "[64, 16]"])
    case("mesh_negative", text + 'mesh {\n  shape: -2\n  axes: "dp"\n}\n', ["mesh", "size -2"])
    case("mesh_zero", text + 'mesh {\n  shape: 0\n  axes: "dp"\n}\n', ["mesh", "size 0"])
    case("mesh_axes_mismatch", text + 'mesh {\n  shape: 1\n  shape: 1\n  axes: "dp"\n}\n',
         ["mesh", "2 sizes but 1 axis"])
    case("batch_axis_out_of_range", text + "batch_axis: 4\n", ["batch_axis 4"])
    case("pipeline_axis_bad", text + mesh + "pipeline_axis: 6\nstages {\n}\n",
         ["pipeline_axis"])
    case("piece_bytes_too_big", st(kernel_step, lambda s: _sub1(
        r"^  kernel \{\n", "  kernel {\n    pieces: 4\n" + "".join(
            "    piece_bytes: 1000000000\n" for _ in range(
                len(re.findall(r"^    args:", s, re.M)))), s)),
        [step_name(kernel_step), "4 pieces"])

    d = c.path("prog", "no_program")
    os.makedirs(d)
    shutil.copy(os.path.join(exe, "kernels.so"), d)
    add("no_program", ["no_program", "no program.pb"])
    d = c.path("prog", "program_is_dir")
    os.makedirs(os.path.join(d, "program.pb"))
    add("program_is_dir", ["program_is_dir", "program.pb is a directory"])
    c.write("prog/not_a_dir", b"a file, not an executable directory")
    add("not_a_dir", ["not_a_dir", "directory"])


# --------------------------------------------------------------- checkpoint

def _st_file(tensors):
    """A valid safetensors file of {name: array}."""
    from safetensors.numpy import save
    return save(tensors)


def _checkpoint_cases(c):
    src = c.path("ckpt", "step-00000001")
    index = json.load(open(os.path.join(src, "index.json")))
    rank_file = os.path.join(src, "rank-00000.safetensors")
    rank_bytes = open(rank_file, "rb").read()
    FC = "transformer.h.0.mlp.c_fc.weight"

    def copy(name):
        d = c.path("ck", name)
        shutil.copytree(src, d)
        return d

    def add(name, expect, cmd="resume"):
        rel = "ck/" + name
        if cmd == "resume":
            args = ["run", "exe", "--steps", "3", "--threads", "1", "--data", "synthetic",
                    "-o", c.out(rel), "--resume", rel]
        elif cmd == "show":
            args = ["checkpoint", "show", rel]
        else:
            args = ["checkpoint", "export", rel, "-o", "out/export-" + name]
        c.add(rel + ("" if cmd == "resume" else "#" + cmd), "checkpoint", args, [rel] + expect)

    def tamper(name, change, expect, cmds=("resume",)):
        d = copy(name)
        i = json.loads(json.dumps(index))
        change(i)
        with open(os.path.join(d, "index.json"), "w") as f:
            json.dump(i, f)
        for cmd in cmds:
            add(name, expect, cmd)

    def index_text(name, text, expect, cmds=("resume",)):
        d = copy(name)
        with open(os.path.join(d, "index.json"), "w") as f:
            f.write(text)
        for cmd in cmds:
            add(name, expect, cmd)

    t = lambda name: (lambda i: i["tensors"][name])
    p0 = lambda name: (lambda i: i["tensors"][name]["pieces"][0])
    ALL = ("resume", "show", "export")

    d = copy("no_index")
    os.remove(os.path.join(d, "index.json"))
    add("no_index", ["holds no checkpoint"])
    add("no_index", ["holds no checkpoint"], "show")
    index_text("index_not_json", "{not json", ["index.json", "JSON"], ALL)
    index_text("index_empty", "", ["index.json", "JSON"])
    index_text("index_array", "[1, 2, 3]", ["index.json", "not a colo checkpoint index"],
               ("resume", "show"))
    index_text("index_deep", "[" * 100000 + "]" * 100000, ["index.json", "not a colo checkpoint"],
               ("resume", "show"))
    index_text("index_trailing", json.dumps(index) + "}}", ["index.json", "JSON"])
    tamper("format_missing", lambda i: i.pop("format"), ["index.json", "format"], ("resume", "show"))
    tamper("format_wrong", lambda i: i.update(format="pytorch"),
           ["index.json", "not a colo checkpoint index"])
    tamper("format_number", lambda i: i.update(format=1), ["index.json", "format"])
    tamper("version_7", lambda i: i.update(version=7), ["index.json", "version 7"], ALL)
    tamper("version_string", lambda i: i.update(version="1"), ["index.json", "version"])
    tamper("version_missing", lambda i: i.pop("version"), ["index.json", "version"])
    tamper("step_negative", lambda i: i.update(step=-1), ["index.json", "step"], ("resume", "show"))
    tamper("step_string", lambda i: i.update(step="1"), ["index.json", "step"])
    tamper("step_overflow", lambda i: i.update(step=2 ** 70), ["index.json", "step"])
    tamper("step_float", lambda i: i.update(step=1.5), ["index.json", "step"])
    tamper("world_size_zero", lambda i: i.update(world_size=0), ["index.json", "world_size"])
    tamper("world_size_negative", lambda i: i.update(world_size=-4),
           ["index.json", "world_size"], ("resume", "show"))
    tamper("world_size_vs_mesh", lambda i: i.update(world_size=2), ["index.json", "world_size"])
    tamper("world_size_huge", lambda i: i.update(world_size=2 ** 62),
           ["index.json", "world_size"])
    tamper("mesh_missing", lambda i: i.pop("mesh"), ["index.json", "mesh"])
    tamper("mesh_axes_mismatch", lambda i: i.update(mesh={"shape": [1, 1], "axes": ["dp"]}),
           ["index.json", "mesh"])
    tamper("mesh_negative", lambda i: i.update(mesh={"shape": [-1], "axes": ["dp"]}),
           ["index.json", "mesh"])
    tamper("mesh_overflow", lambda i: i.update(
        mesh={"shape": [2 ** 32, 2 ** 32, 2 ** 32], "axes": ["dp", "tp", "pp"]}),
        ["index.json", "mesh"])
    tamper("tensors_missing", lambda i: i.pop("tensors"), ["index.json", "tensors"],
           ("resume", "show"))
    tamper("tensors_list", lambda i: i.update(tensors=[]), ["index.json", "tensors"])
    tamper("tensor_not_object", lambda i: i["tensors"].update({WTE: 5}), [WTE])
    tamper("tensor_missing", lambda i: i["tensors"].pop(WTE), [WTE])
    tamper("tensor_extra", lambda i: i["tensors"].update(
        {"ghost.weight": json.loads(json.dumps(i["tensors"][WTE]))}), ["ghost.weight"])
    tamper("dtype_unknown", lambda i: t(WTE)(i).update(dtype="F7"), [WTE, "F7"], ALL)
    tamper("dtype_other", lambda i: t(WTE)(i).update(dtype="F64"), [WTE, "f64"])
    tamper("dtype_number", lambda i: t(WTE)(i).update(dtype=0), [WTE, "dtype"])
    tamper("shape_huge", lambda i: (t(WTE)(i).update(shape=[2 ** 40, 2 ** 40, 2 ** 40]),
                                    p0(WTE)(i).update(stored=[2 ** 40, 2 ** 40, 2 ** 40])),
           [WTE, "shape"], ALL)
    tamper("shape_negative", lambda i: (t(WTE)(i).update(shape=[-32, 16]),
                                        p0(WTE)(i).update(stored=[-32, 16])), [WTE, "shape"])
    tamper("shape_other", lambda i: (t(WTE)(i).update(shape=[16, 32]),
                                     p0(WTE)(i).update(stored=[16, 32])), [WTE, "[16, 32]"])
    tamper("shape_string", lambda i: t(WTE)(i).update(shape="32x16"), [WTE, "shape"])
    tamper("pieces_empty", lambda i: t(WTE)(i).update(pieces=[]), [WTE, "piece"], ALL)
    tamper("pieces_missing", lambda i: t(WTE)(i).pop("pieces"), [WTE, "pieces"])
    tamper("piece_rank_outside", lambda i: p0(WTE)(i).update(rank=5), [WTE, "rank 5"], ALL)
    tamper("piece_rank_negative", lambda i: p0(WTE)(i).update(rank=-1), [WTE, "rank"])
    tamper("piece_file_dotdot", lambda i: p0(WTE)(i).update(file="../x.safetensors"),
           [WTE, "../x.safetensors"], ALL)
    tamper("piece_file_slash", lambda i: p0(WTE)(i).update(file="/etc/passwd"),
           [WTE, "/etc/passwd"])
    tamper("piece_file_dot", lambda i: p0(WTE)(i).update(file=".."), [WTE, "'..'"])
    tamper("piece_file_empty", lambda i: p0(WTE)(i).update(file=""), [WTE, "file"])
    tamper("piece_file_missing", lambda i: p0(WTE)(i).update(file="rank-00009.safetensors"),
           ["rank-00009.safetensors"], ("resume", "export"))
    tamper("piece_file_number", lambda i: p0(WTE)(i).update(file=0), [WTE, "file"])
    tamper("layout_unknown", lambda i: p0(WTE)(i).update(layout="diagonal"), [WTE, "diagonal"],
           ALL)
    blk = dict(layout="block", dim=0, groups=1, index=0, parts=1)
    tamper("block_dim_out_of_range", lambda i: p0(WTE)(i).update(blk, dim=5), [WTE, "dim"])
    tamper("block_groups_zero", lambda i: p0(WTE)(i).update(blk, groups=0), [WTE, "groups"])
    tamper("block_parts_zero", lambda i: p0(WTE)(i).update(blk, parts=0), [WTE, "parts"],
           ("resume", "export"))
    tamper("block_index_negative", lambda i: p0(WTE)(i).update(blk, index=-1), [WTE, "index"])
    tamper("block_index_past", lambda i: p0(WTE)(i).update(blk, index=3, parts=2),
           [WTE, "block 3 of 2"])
    tamper("block_parts_huge", lambda i: p0(WTE)(i).update(blk, parts=2 ** 62), [WTE, "parts"])
    tamper("blocks_do_not_tile", lambda i: p0(WTE)(i).update(blk, parts=2), [WTE],
           ("resume", "export"))
    tamper("stored_mismatch", lambda i: p0(WTE)(i).update(stored=[32, 17]), [WTE],
           ("resume", "export"))

    d = copy("rank_file_missing")
    os.remove(os.path.join(d, "rank-00000.safetensors"))
    add("rank_file_missing", ["rank-00000.safetensors"])
    add("rank_file_missing", ["rank-00000.safetensors"], "export")
    for n in (0, 7, 100, len(rank_bytes) - 100):
        d = copy(f"rank_file_truncated_{n}")
        with open(os.path.join(d, "rank-00000.safetensors"), "wb") as f:
            f.write(rank_bytes[:n])
        add(f"rank_file_truncated_{n}", ["rank-00000.safetensors"])
    add("rank_file_truncated_100", ["rank-00000.safetensors"], "export")
    hl = struct.unpack("<Q", rank_bytes[:8])[0]
    flips = {"rank_file_flip_length": 5, "rank_file_flip_brace": 8,
             "rank_file_flip_offsets": 8 + rank_bytes[8:8 + hl].index(b"data_offsets") + 15}
    for name, pos in flips.items():
        d = copy(name)
        b = bytearray(rank_bytes)
        b[pos] ^= 0x80 if name != "rank_file_flip_offsets" else 0x0F
        with open(os.path.join(d, "rank-00000.safetensors"), "wb") as f:
            f.write(bytes(b))
        add(name, ["rank-00000.safetensors"])
    from safetensors.numpy import load
    tensors = load(rank_bytes)
    d = copy("rank_file_other_shape")
    other = dict(tensors)
    other[WTE] = np.zeros((16, 32), np.float32)
    with open(os.path.join(d, "rank-00000.safetensors"), "wb") as f:
        f.write(_st_file(other))
    add("rank_file_other_shape", ["rank-00000.safetensors", WTE])
    add("rank_file_other_shape", ["rank-00000.safetensors", WTE], "export")
    d = copy("rank_file_other_dtype")
    other = dict(tensors)
    other[FC] = other[FC].astype(np.float64)
    with open(os.path.join(d, "rank-00000.safetensors"), "wb") as f:
        f.write(_st_file(other))
    add("rank_file_other_dtype", ["rank-00000.safetensors", FC])
    d = copy("rank_file_lacks_tensor")
    other = dict(tensors)
    other.pop(WTE)
    with open(os.path.join(d, "rank-00000.safetensors"), "wb") as f:
        f.write(_st_file(other))
    add("rank_file_lacks_tensor", ["rank-00000.safetensors", WTE])
    add("rank_file_lacks_tensor", ["rank-00000.safetensors", WTE], "export")
    d = copy("rank_file_is_dir")
    os.remove(os.path.join(d, "rank-00000.safetensors"))
    os.makedirs(os.path.join(d, "rank-00000.safetensors"))
    add("rank_file_is_dir", ["rank-00000.safetensors"])
    # A checkpoint directory whose newest checkpoint is broken.
    d = c.path("ck", "dir_newest_broken")
    os.makedirs(d)
    shutil.copytree(src, os.path.join(d, "step-00000001"))
    shutil.copytree(src, os.path.join(d, "step-00000002"))
    with open(os.path.join(d, "step-00000002", "index.json"), "w") as f:
        f.write("[]")
    add("dir_newest_broken", ["step-00000002", "index.json"])


# --------------------------------------------------------------------- plan

def _plan_cases(c):
    def case(name, text, expect, explain=False, compile_expect=None, explain_expect=None):
        """compile --plan FILE; with explain, also plan --explain FILE on a
        cluster with as many devices as the plan has (when it has a number)."""
        rel = "plan/" + name
        c.write(rel, text if isinstance(text, (str, bytes)) else json.dumps(text))
        c.add(rel, "plan", ["compile", "m.mlir", "--train", "loss=lm", "--plan", rel,
                            "-o", "out/plan-" + name],
              compile_expect if compile_expect is not None else [name] + expect)
        if explain:
            mesh = text.get("mesh", {}) if isinstance(text, dict) else {}
            n = 2 if isinstance(mesh, dict) and mesh.get("pp") == 2 else 1
            c.add(rel + "#explain", "plan", ["plan", "m.mlir", "--cluster", f"a100-80g:1x{n}",
                                             "--explain", rel],
                  explain_expect if explain_expect is not None else [name] + expect)

    case("empty.json", "", ["JSON"], explain=True)
    case("not_json.json", "dp=2, tp=2 {", ["JSON"], explain=True)
    case("array.json", [1, 2], ["object"], explain=True)
    case("deep.json", "[" * 100000 + "]" * 100000, [("nested", "depth", "JSON", "object")],
         explain=True)
    case("trailing.json", '{"mesh": {"dp": 1}} ]', ["JSON"])
    case("mesh_not_object.json", {"mesh": 4}, ["mesh"], explain=True)
    case("mesh_dp_negative.json", {"mesh": {"dp": -2}}, ["'dp'", "-2"], explain=True)
    case("mesh_dp_zero.json", {"mesh": {"dp": 0}}, ["'dp'", "'0'"], explain=True)
    case("mesh_dp_huge.json", {"mesh": {"dp": 2 ** 40}}, [], explain=True,
         compile_expect=["too many devices"], explain_expect=["too many devices"])
    case("mesh_dp_overflow.json", {"mesh": {"dp": 2 ** 70}}, ["'dp'", "integer"])
    case("mesh_product_overflow.json", {"mesh": {"dp": 2 ** 31, "tp": 2 ** 31, "pp": 2 ** 31}},
         [], explain=True, compile_expect=[("overflow", "too many", "too large")],
         explain_expect=[("overflow", "too many", "too large")])
    c.forbid("= 0 devices")
    case("mesh_dp_string.json", {"mesh": {"dp": "2"}}, ["'dp'", "integer"])
    case("mesh_tp_float.json", {"mesh": {"tp": 1.5}}, ["'tp'", "integer"], explain=True)
    case("mesh_unknown_axis.json", {"mesh": {"xp": 2}}, ["xp"])
    case("unknown_key.json", {"mesh": {"dp": 1}, "meshh": 1}, ["meshh"], explain=True)
    case("schedule_unknown.json", {"mesh": {"pp": 1}, "schedule": "zigzag"}, ["zigzag"],
         explain=True)
    case("schedule_number.json", {"schedule": 3}, ["schedule", "'3'"])
    case("zero_7.json", {"zero": 7}, ["ZeRO", "7"], explain=True)
    case("zero_string.json", {"zero": "one"}, ["'zero'", "'one'"])
    case("micro_batches_zero.json", {"micro_batches": 0}, ["'micro'", "'0'"], explain=True)
    case("micro_batches_negative.json", {"micro_batches": -3}, ["'micro'", "'-3'"])
    case("micro_batch_negative.json", {"micro_batch": -1}, ["'mbs'", "'-1'"])
    case("virtual_stages_zero.json", {"virtual_stages": 0}, ["'v'", "'0'"])
    case("recompute_unknown.json", {"recompute": "sometimes"}, ["sometimes"], explain=True)
    case("offload_unknown.json", {"offload": "disk"}, ["disk"])
    case("sp_not_bool.json", {"sequence_parallel": "yes"}, ["sequence_parallel", "yes"])
    case("vocab_not_bool.json", {"vocab": 2}, ["'vocab'", "2"])
    case("ulysses_negative.json", {"ulysses": -4}, ["'ulysses'", "'-4'"])
    # The layer ranges are checked against the model after the plan is read:
    # those errors name the plan (inline form) rather than the file.
    cover = "the stages must cover the layers"
    pp2 = "plan dp=1,tp=1,pp=2"
    case("stages_out_of_range.json", {"mesh": {"pp": 2}, "stages": [[0, 1], [1, 99]]},
         [], explain=True, compile_expect=["stage", "99"],
         explain_expect=["stage ranges cover 99 of 2 layers"])
    case("stages_overlap.json", {"mesh": {"pp": 2}, "stages": [[0, 1], [0, 1]]},
         [], explain=True, compile_expect=[pp2, "stage 1 is layers [0, 1)", cover],
         explain_expect=["must cover the layers in order"])
    case("stages_reversed.json", {"mesh": {"pp": 2}, "stages": [[1, 0], [0, 1]]},
         [], compile_expect=[pp2, "stage 0 is layers [1, 0)", cover])
    case("stages_wrong_count.json", {"mesh": {"pp": 2}, "stages": [[0, 1]]},
         [], explain=True, compile_expect=[pp2, "1 stages", "2 pipeline chunks"],
         explain_expect=["1 stages for 2 pipeline chunks"])
    case("stages_not_list.json", {"mesh": {"pp": 2}, "stages": "abc"}, ["'stages'"])
    case("stages_negative.json", {"mesh": {"pp": 2}, "stages": [[-5, 0], [0, 1]]},
         [], compile_expect=[pp2, "stage 0 is layers [-5, 0)"])
    case("binary.json", bytes(range(256)), ["JSON"])


# ------------------------------------------------------------------ cluster

FULL_CLUSTER = {
    "name": "x", "nodes": 1, "devices_per_node": 8,
    "device": {"memory_gb": 80, "peak_tflops_16": 312, "peak_tflops_32": 19.5,
               "memory_bandwidth_gbs": 2039},
    "links": {"intra_node_gbs": 300, "intra_node_latency_us": 2, "inter_node_gbs": 25,
              "inter_node_latency_us": 5, "pcie_gbs": 25},
    "host": {"memory_gb": 1024},
}


def _cluster_cases(c):
    def case(name, text, expect):
        rel = "cluster/" + name
        c.write(rel, text if isinstance(text, (str, bytes)) else json.dumps(text))
        c.add(rel, "cluster", ["cluster", "show", rel], [name] + expect)

    def full(**changes):
        cl = json.loads(json.dumps(FULL_CLUSTER))
        for path, v in changes.items():
            *head, last = path.split("__")
            o = cl
            for h in head:
                o = o[h]
            if v is None:
                o.pop(last)
            else:
                o[last] = v
        return cl

    case("empty.json", "", ["JSON"])
    case("not_json.json", "nodes: 4\n", ["JSON"])
    case("array.json", [FULL_CLUSTER], ["object"])
    case("deep.json", "[" * 50000 + "]" * 50000, [("nested", "depth", "JSON", "object")])
    case("deep_objects.json", "{\"device\":" * 50000 + "1" + "}" * 50000, ["nested"])
    case("trailing.json", json.dumps(FULL_CLUSTER) + "xyz", ["JSON"])
    case("missing_device_field.json", full(device__memory_gb=None), ["device.memory_gb"])
    case("missing_links.json", full(links=None), ["links"])
    case("negative_bandwidth.json", full(links__intra_node_gbs=-1), ["links.intra_node_gbs", "-1"])
    case("zero_bandwidth.json", full(links__pcie_gbs=0), ["links.pcie_gbs"])
    case("zero_devices.json", full(devices_per_node=0), ["devices_per_node"])
    case("negative_nodes.json", full(nodes=-1), ["nodes"])
    case("fraction_nodes.json", full(nodes=1.5), ["nodes"])
    case("string_nodes.json", full(nodes="8"), ["nodes"])
    case("huge_nodes.json", full(nodes=2 ** 63), ["nodes"])
    case("nodes_overflow.json", full(nodes=2 ** 40, devices_per_node=2 ** 40),
         ["nodes x devices_per_node", "overflows"])
    case("infinite_memory.json", json.dumps(FULL_CLUSTER).replace(
        '"memory_gb": 80', '"memory_gb": 1e999'), ["device.memory_gb"])
    case("zero_latency.json", full(links__inter_node_latency_us=0),
         ["links.inter_node_latency_us"])
    case("efficiency_above_one.json", full(device__matmul_efficiency=1.5),
         ["device.matmul_efficiency"])
    case("efficiency_zero.json", full(device__memory_efficiency=0),
         ["device.memory_efficiency"])
    case("negative_workspace.json", full(device__workspace_gb=-1), ["device.workspace_gb"])
    case("staging_two.json", full(device__collective_staging=2), ["device.collective_staging"])
    case("unknown_key.json", full(nodez=2), ["nodez"])
    case("unknown_nested_key.json", full(device__memory=80), ["device.memory"])
    case("device_not_object.json", full(device=80), ["device"])
    case("host_memory_string.json", full(host__memory_gb="1TB"), ["host.memory_gb"])
    case("name_not_string.json", full(name=7), ["name"])
    case("unknown_preset.json", {"preset": "tpu-v9"}, ["tpu-v9"])
    case("preset_not_string.json", {"preset": ["a100-80g"]}, ["preset"])
    case("preset_zero_devices.json", {"preset": "a100-80g", "devices_per_node": 0},
         ["devices_per_node"])
    case("preset_bad_override.json", {"preset": "h100-sxm", "links": {"pcie_gbs": -25}},
         ["links.pcie_gbs"])
    case("binary.json", bytes(range(256)) * 4, ["JSON"])


# -------------------------------------------------------------- torchscript

def _torchscript_cases(c):
    def case(name, data, expect):
        rel = "ts/" + name
        c.write(rel, data)
        c.add(rel, "torchscript", ["import", rel, "--input-shape", "2x4", "--summary"],
              [name] + expect)

    import torch

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 3)

        def forward(self, x):
            return torch.relu(self.fc(x))

    torch.manual_seed(0)
    buf = io.BytesIO()
    torch.jit.save(torch.jit.trace(Tiny(), torch.zeros(2, 4)), buf)
    good = buf.getvalue()
    members = {}
    with zipfile.ZipFile(io.BytesIO(good)) as z:
        for info in z.infolist():
            members[info.filename] = z.read(info)

    def rezip(change):
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
            for n, data in members.items():
                data = change(n, data)
                if data is not None:
                    z.writestr(n, data)
        return out.getvalue()

    reason = "not a readable TorchScript archive"
    case("text.pt", b"def forward(self, x):\n    return x\n", [reason])
    case("empty.pt", b"", [reason])
    case("truncated.pt", good[: len(good) // 2], [reason])
    only = io.BytesIO()
    with zipfile.ZipFile(only, "w") as z:
        z.writestr("archive/hello.txt", "hello")
    case("zip_without_members.pt", only.getvalue(), [reason])
    case("no_data_pkl.pt", rezip(lambda n, d: None if n.endswith("/data.pkl") else d), [reason])
    case("garbage_data_pkl.pt", rezip(lambda n, d: b"\x80\x02garbage" * 10
                                      if n.endswith("/data.pkl") else d), [reason])
    case("garbage_code.pt", rezip(lambda n, d: b"def forward(self, x:\n  ))) !!" * 4
                                  if n.endswith(".py") else d), [reason])
    case("no_code.pt", rezip(lambda n, d: None if "/code/" in n else d), [reason])
    case("version_999.pt", rezip(lambda n, d: b"999\n" if n.endswith("/version") else d),
         [reason])
    case("no_tensor_data.pt", rezip(lambda n, d: None if "/data/" in n else d), [reason])


# -------------------------------------------------------------------------



def problem(case, returncode, stderr, d):
    """None when colo refused the case as it must (exit code 1, one non-empty
    stderr line starting with 'colo: error:' holding every expected word),
    else what went wrong. A word that names the case's file is looked for in
    the whole line, any other in the line without the file's path and the
    corpus directory (so that 'offset' is not found in 'huge_offset.onnx').
    A tuple of words means any one of them."""
    rel = case.name.split("#")[0]
    base = os.path.basename(rel)
    lines = [l for l in stderr.splitlines() if l.strip()]
    if returncode is None:
        return "timed out"
    if returncode < 0:
        return f"killed by signal {-returncode}"
    if returncode != 1:
        return f"exit code {returncode}"
    if len(lines) != 1:
        return f"{len(lines)} stderr lines"
    line = lines[0]
    if not line.startswith("colo: error:"):
        return "the line does not start with 'colo: error:'"
    bare = line.replace(str(d), "").replace(rel, "")
    missing = []
    for word in case.expect:
        alternatives = word if isinstance(word, tuple) else (word,)
        if not any(w in (line if base in w or str(d) in w else bare)
                   for w in alternatives):
            missing.append(" or ".join(repr(w) for w in alternatives))
    if missing:
        return "the line lacks " + ", ".join(missing)
    held = [w for w in case.forbid if w in line]
    if held:
        return "the line holds " + ", ".join(repr(w) for w in held)
    return None


def _setup(c):
    """The tiny model, its executable and a real one-step checkpoint."""
    c.colo("model", "gpt", "--layers", 1, "--hidden", 16, "--heads", 2, "--vocab", VOCAB,
           "--seq", SEQ, "--batch", BATCH, "--dtype", "f32", "-o", c.path("m.mlir"))
    c.colo("compile", c.path("m.mlir"), "--train", "loss=lm,optimizer=sgd", "-o", c.path("exe"))
    c.colo("run", c.path("exe"), "--steps", 1, "--threads", 1, "--data", "synthetic",
           "--checkpoint-dir", c.path("ckpt"), "-o", c.path("w.safetensors"))
    from safetensors.numpy import load_file
    return {k: ("F32" if v.dtype == np.float32 else str(v.dtype), v.shape)
            for k, v in load_file(c.path("w.safetensors")).items()}


def write_corpus(d, colo_run):
    c = Corpus(d, colo_run)
    params = _setup(c)
    _onnx_cases(c)
    _npy_cases(c)
    _npz_cases(c)
    _token_cases(c)
    _safetensors_cases(c, params)
    _program_cases(c)
    _checkpoint_cases(c)
    _plan_cases(c)
    _cluster_cases(c)
    _torchscript_cases(c)
    return c.cases
