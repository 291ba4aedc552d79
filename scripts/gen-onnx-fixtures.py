#!/usr/bin/env python3
"""Generate the small ONNX fixtures under testdata/onnx/ used by the unit
tests of src/onnx/ (the streaming ONNX signature reader).

Requires the `onnx` Python package; `onnxruntime` is optional. When
onnxruntime is importable, every fixture it can load is opened in an
InferenceSession and the session's view (inputs, outputs with ORT's own shape
inference merged in, overridable initializers) is written to
testdata/onnx/expected.json as an independent oracle for the Rust reader.
For every fixture the graph as declared (read back with the `onnx` package)
is written too.

The generated files are committed, so the Rust tests never need Python.
Re-run after changing this script:

    python3 scripts/gen-onnx-fixtures.py
"""

import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

try:
    import onnxruntime as ort
except ImportError:  # the oracle part is optional
    ort = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "testdata", "onnx")

# ORT's element type strings ("tensor(float)") -> TensorProto ids.
ORT_ELEM = {
    "float": T.FLOAT, "uint8": T.UINT8, "int8": T.INT8, "uint16": T.UINT16,
    "int16": T.INT16, "int32": T.INT32, "int64": T.INT64, "string": T.STRING,
    "bool": T.BOOL, "float16": T.FLOAT16, "double": T.DOUBLE,
    "uint32": T.UINT32, "uint64": T.UINT64, "complex64": T.COMPLEX64,
    "complex128": T.COMPLEX128, "bfloat16": T.BFLOAT16,
}

# The 14 element types Triton's ORT backend maps, plus COMPLEX64 (unmapped).
ALL_TYPES = ["BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16",
             "INT32", "INT64", "BFLOAT16", "FLOAT16", "FLOAT", "DOUBLE",
             "STRING"]


def model(nodes, inputs, outputs, inits=(), ir=8, opsets=(("", 13),),
          value_info=()):
    graph = h.make_graph(list(nodes), "g", list(inputs), list(outputs),
                         initializer=list(inits), value_info=list(value_info))
    m = h.make_model(graph, opset_imports=[h.make_opsetid(d, v)
                                           for d, v in opsets],
                     producer_name="tritonctl-fixtures")
    m.ir_version = ir
    return m


def vi(name, elem, shape):
    return h.make_tensor_value_info(name, elem, shape)


def weights(name, shape, seed=0):
    rng = np.random.default_rng(seed)
    return numpy_helper.from_array(
        rng.standard_normal(shape).astype(np.float32), name)


def fixtures():
    """Yield (file name, ModelProto, save keyword arguments)."""
    # A1: symbolic batch dim; the weight is an initializer, not an input.
    yield "batch_symbolic.onnx", model(
        [h.make_node("Flatten", ["X"], ["F"], axis=1),
         h.make_node("MatMul", ["F", "W"], ["Y"])],
        [vi("X", T.FLOAT, ["N", 3, 8, 8])], [vi("Y", T.FLOAT, ["N", 10])],
        [weights("W", (192, 10))]), {}

    # A2: fixed batch dim.
    yield "batch_fixed.onnx", model(
        [h.make_node("Flatten", ["X"], ["F"], axis=1),
         h.make_node("MatMul", ["F", "W"], ["Y"])],
        [vi("X", T.FLOAT, [1, 3, 8, 8])], [vi("Y", T.FLOAT, [1, 10])],
        [weights("W", (192, 10))]), {}

    # A4: rank-0 input and output.
    yield "scalar_io.onnx", model(
        [h.make_node("Identity", ["X"], ["Y"])],
        [vi("X", T.FLOAT, [])], [vi("Y", T.FLOAT, [])]), {}

    # A3: rank-1 batch-only tensors.
    yield "vector_batch.onnx", model(
        [h.make_node("Identity", ["X"], ["Y"])],
        [vi("X", T.INT64, ["N"])], [vi("Y", T.INT64, ["N"])]), {}

    # A14: output declared without any shape.
    yield "relu_no_shape.onnx", model(
        [h.make_node("Relu", ["X"], ["Y"])],
        [vi("X", T.FLOAT, ["n", 4])], [vi("Y", T.FLOAT, None)]), {}

    # Output declared with rank 2 but both dims unknown.
    yield "relu_unknown_dims.onnx", model(
        [h.make_node("Relu", ["X"], ["Y"])],
        [vi("X", T.FLOAT, ["n", 4])], [vi("Y", T.FLOAT, [None, None])]), {}

    # Cast changes the element type; an output without any type at all;
    # several opset imports.
    z_untyped = onnx.ValueInfoProto()
    z_untyped.name = "Z"
    yield "cast_chain.onnx", model(
        [h.make_node("Cast", ["X"], ["XF"], to=T.FLOAT),
         h.make_node("Sigmoid", ["XF"], ["S"]),
         h.make_node("Tanh", ["S"], ["Y"]),
         h.make_node("Mul", ["XF", "S"], ["Z"])],
        [vi("X", T.INT32, ["batch", 5])],
        [vi("Y", T.FLOAT, None), z_untyped],
        opsets=(("", 13), ("ai.onnx.ml", 3), ("com.microsoft", 1))), {}

    # Output shape only available through value_info; the producing op
    # (TopK) is outside the propagation subset.
    yield "value_info_output.onnx", model(
        [h.make_node("TopK", ["X", "K"], ["V", "I"], axis=-1),
         h.make_node("Identity", ["V"], ["Y"])],
        [vi("X", T.FLOAT, ["N", 10])], [vi("Y", T.FLOAT, None),
                                        vi("I", T.INT64, None)],
        [numpy_helper.from_array(np.array([3], dtype=np.int64), "K")],
        value_info=[vi("V", T.FLOAT, ["N", 3])]), {}

    # Output whose shape needs an op outside the subset (Transpose): the
    # reader must say the shapes are incomplete.
    yield "unsupported_op_output.onnx", model(
        [h.make_node("Transpose", ["X"], ["Y"], perm=[1, 0])],
        [vi("X", T.FLOAT, ["N", 4])], [vi("Y", T.FLOAT, None)]), {}

    # A13: initializer also listed in graph.input, IR 8 (overridable).
    def init_as_input(ir, opset):
        return model(
            [h.make_node("Add", ["X", "W"], ["Y"])],
            [vi("X", T.FLOAT, ["N", 3]), vi("W", T.FLOAT, [3])],
            [vi("Y", T.FLOAT, None)],
            [numpy_helper.from_array(np.ones(3, dtype=np.float32), "W")],
            ir=ir, opsets=(("", opset),))

    yield "init_input_ir8.onnx", init_as_input(8, 13), {}
    # The same with IR 3: the initializer-backed input disappears.
    yield "init_input_ir3.onnx", init_as_input(3, 7), {}

    # Every element type of the Triton mapping table.
    nodes, ins, outs = [], [], []
    for t in ALL_TYPES:
        ins.append(vi("IN_" + t, getattr(T, t), ["N", 2]))
        outs.append(vi("OUT_" + t, getattr(T, t), ["N", 2]))
        nodes.append(h.make_node("Identity", ["IN_" + t], ["OUT_" + t]))
    yield "all_types.onnx", model(nodes, ins, outs, opsets=(("", 21),)), {}

    # A16: COMPLEX64 output (unmapped -> TYPE_INVALID).
    yield "complex64.onnx", model(
        [h.make_node("Identity", ["X"], ["Y"])],
        [vi("X", T.COMPLEX64, ["N", 2])], [vi("Y", T.COMPLEX64, ["N", 2])],
        opsets=(("", 21),)), {}

    # A17: a sequence output.
    yield "sequence_output.onnx", model(
        [h.make_node("SequenceConstruct", ["X"], ["Y"])],
        [vi("X", T.FLOAT, ["N"])],
        [h.make_tensor_sequence_value_info("Y", T.FLOAT, ["N"])]), {}

    # Every non-tensor kind as graph input (no ORT session needed).
    opaque = onnx.TypeProto()
    opaque.opaque_type.domain = "com.example"
    opaque.opaque_type.name = "Blob"
    yield "nontensor_io.onnx", model(
        [h.make_node("Identity", ["T"], ["Y"])],
        [h.make_value_info("M", h.make_map_type_proto(
            T.INT64, h.make_tensor_type_proto(T.FLOAT, [2]))),
         h.make_value_info("O", h.make_optional_type_proto(
             h.make_tensor_type_proto(T.FLOAT, [2]))),
         h.make_value_info("S", h.make_sparse_tensor_type_proto(
             T.FLOAT, ["N", 4])),
         h.make_value_info("Q", opaque),
         h.make_value_info("Seq", h.make_sequence_type_proto(
             h.make_tensor_type_proto(T.INT32, None))),
         vi("T", T.FLOAT, ["N", 4])],
        [vi("Y", T.FLOAT, ["N", 4])], opsets=(("", 18),)), {}

    # Fixed, symbolic and unknown dims, and a zero dim.
    yield "dims_mixed.onnx", model(
        [h.make_node("Identity", ["A"], ["B"]),
         h.make_node("Identity", ["Z"], ["ZO"])],
        [vi("A", T.FLOAT, ["batch", "seq", 16, None]),
         vi("Z", T.INT32, [0, 3])],
        [vi("B", T.FLOAT, ["batch", "seq", 16, None]),
         vi("ZO", T.INT32, [0, 3])]), {}

    # Tensor data in a side file; the reader must never open it.
    ext = model(
        [h.make_node("MatMul", ["X", "W"], ["P"]),
         h.make_node("Add", ["P", "B"], ["Y"])],
        [vi("X", T.FLOAT, ["N", 64])], [vi("Y", T.FLOAT, ["N", 64])],
        [weights("W", (64, 64), 1), weights("B", (64,), 2)])
    yield os.path.join("external_data", "model.onnx"), ext, {
        "save_as_external_data": True, "all_tensors_to_one_file": True,
        "location": "weights.bin", "size_threshold": 0}


def type_view(tp):
    """(onnx_type, elem_type, shape) of a TypeProto, as the graph declares
    it; shape entries are int, str or None; shape None = no shape."""
    which = tp.WhichOneof("value")
    if which == "tensor_type":
        tt = tp.tensor_type
        shape = None
        if tt.HasField("shape"):
            shape = []
            for d in tt.shape.dim:
                if d.HasField("dim_value"):
                    shape.append(d.dim_value)
                elif d.HasField("dim_param"):
                    shape.append(d.dim_param)
                else:
                    shape.append(None)
        return "ONNX_TYPE_TENSOR", tt.elem_type, shape
    # Triton's ORT backend prints OPTIONAL (and anything unset) as UNKNOWN.
    name = {"sequence_type": "ONNX_TYPE_SEQUENCE", "map_type": "ONNX_TYPE_MAP",
            "opaque_type": "ONNX_TYPE_OPAQUE",
            "sparse_tensor_type": "ONNX_TYPE_SPARSETENSOR"}.get(
                which, "ONNX_TYPE_UNKNOWN")
    return name, None, None


def declared(m):
    g = m.graph
    inits = [i.name for i in g.initializer]

    def one(v):
        kind, elem, shape = type_view(v.type) if v.HasField("type") else (
            "MISSING", None, None)
        return {"name": v.name, "onnx_type": kind, "elem_type": elem,
                "shape": shape}

    return {"inputs": [one(v) for v in g.input],
            "outputs": [one(v) for v in g.output],
            "initializers": inits}


def ort_view(path):
    if ort is None:
        return None, "onnxruntime not installed"
    try:
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - record why ORT refused it
        # Keep machine paths out of the committed file.
        return None, str(e).splitlines()[0].replace(OUT + os.sep, "")[:200]

    def one(arg):
        t = arg.type
        if t.startswith("tensor("):
            kind, elem = "ONNX_TYPE_TENSOR", ORT_ELEM[t[len("tensor("):-1]]
        else:
            kind, elem = {"seq": "ONNX_TYPE_SEQUENCE", "map": "ONNX_TYPE_MAP",
                          "sparse_tensor": "ONNX_TYPE_SPARSETENSOR",
                          "opaque": "ONNX_TYPE_OPAQUE"}.get(
                              t.split("(")[0], "ONNX_TYPE_UNKNOWN"), None
        shape = arg.shape if kind == "ONNX_TYPE_TENSOR" else None
        return {"name": arg.name, "onnx_type": kind, "elem_type": elem,
                "shape": shape}

    return {"inputs": [one(a) for a in sess.get_inputs()],
            "outputs": [one(a) for a in sess.get_outputs()],
            "overridable_initializers": [
                one(a) for a in sess.get_overridable_initializers()]}, None


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    expected = {}
    for rel, m, save_kw in fixtures():
        path = os.path.join(OUT, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if save_kw:
            onnx.save_model(m, path, **save_kw)
        else:
            onnx.save_model(m, path)
        back = onnx.load_model(path, load_external_data=False)
        view, why = ort_view(path)
        entry = {"ir_version": back.ir_version,
                 "opsets": [[o.domain, o.version] for o in back.opset_import],
                 "declared": declared(back), "ort": view}
        if why:
            entry["ort_error"] = why
        expected[rel.replace(os.sep, "/")] = entry
        print(f"{rel}: {'ORT ok' if view else 'no ORT view: ' + why}",
              file=sys.stderr)
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump({"generator": "scripts/gen-onnx-fixtures.py",
                   "onnx_version": onnx.__version__,
                   "onnxruntime_version": ort.__version__ if ort else None,
                   "fixtures": expected}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
