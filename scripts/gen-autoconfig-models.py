#!/usr/bin/env python3
"""Generate the small ONNX models under testdata/autoconfig/ used by the
`tritonctl autoconfig` tests (tests/cli/autoconfig.rs).

Each model is written as a Triton model directory,
testdata/autoconfig/<case>/1/model.onnx, so that the model's name is the
case name. The cases cover the test vectors of docs/spec/autoconfig.md §13
(A1-A17), every element type of the ONNX -> Triton data type table and some
that have no Triton type, scalar I/O, mixed batching and non-batching
tensors, many inputs, overridable initializers, external data, non-tensor
I/O, a sequence (stateful) model, and a range of opsets and IR versions.

Requires the `onnx` Python package. When `onnxruntime` is importable, every
model it can load is opened in an InferenceSession and the session's view
(input and output names, element types, dims with -1 for symbolic and
unknown dims) is written to testdata/autoconfig/ort_view.json: an oracle
independent of tritonctl's own ONNX reader, compared by the tests.

The generated files are committed, so the tests never need Python. Re-run
after changing this script:

    python3 scripts/gen-autoconfig-models.py
"""

import json
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

try:
    import onnxruntime as ort
except ImportError:  # the oracle is optional
    ort = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "testdata", "autoconfig")

# The 14 element types Triton's ORT backend maps to a config data type.
MAPPED = ["BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16",
          "INT32", "INT64", "BFLOAT16", "FLOAT16", "FLOAT", "DOUBLE",
          "STRING"]

# ORT's element type strings ("tensor(float)") -> TensorProto ids.
ORT_ELEM = {
    "float": T.FLOAT, "uint8": T.UINT8, "int8": T.INT8, "uint16": T.UINT16,
    "int16": T.INT16, "int32": T.INT32, "int64": T.INT64, "string": T.STRING,
    "bool": T.BOOL, "float16": T.FLOAT16, "double": T.DOUBLE,
    "uint32": T.UINT32, "uint64": T.UINT64, "complex64": T.COMPLEX64,
    "complex128": T.COMPLEX128, "bfloat16": T.BFLOAT16,
    "float8e4m3fn": T.FLOAT8E4M3FN, "float8e4m3fnuz": T.FLOAT8E4M3FNUZ,
    "float8e5m2": T.FLOAT8E5M2, "float8e5m2fnuz": T.FLOAT8E5M2FNUZ,
    "int4": T.INT4, "uint4": T.UINT4,
}


def model(nodes, inputs, outputs, inits=(), ir=8, opsets=(("", 13),),
          value_info=()):
    graph = h.make_graph(list(nodes), "g", list(inputs), list(outputs),
                         initializer=list(inits), value_info=list(value_info))
    m = h.make_model(graph, opset_imports=[h.make_opsetid(d, v)
                                           for d, v in opsets],
                     producer_name="tritonctl-autoconfig-tests")
    m.ir_version = ir
    return m


def vi(name, elem, shape):
    return h.make_tensor_value_info(name, elem, shape)


def weights(name, shape, seed=0):
    rng = np.random.default_rng(seed)
    return numpy_helper.from_array(
        rng.standard_normal(shape).astype(np.float32), name)


def identity(elem, in_shape, out_shape=None, ir=8, opsets=(("", 13),)):
    out_shape = in_shape if out_shape is None else out_shape
    return model([h.make_node("Identity", ["X"], ["Y"])],
                 [vi("X", elem, in_shape)], [vi("Y", elem, out_shape)],
                 ir=ir, opsets=opsets)


def linear(x_shape, y_shape):
    """X [.., 3, 8, 8] -> Flatten -> MatMul -> Y [.., 10] (A1, A2)."""
    return model(
        [h.make_node("Flatten", ["X"], ["F"], axis=1),
         h.make_node("MatMul", ["F", "W"], ["Y"])],
        [vi("X", T.FLOAT, x_shape)], [vi("Y", T.FLOAT, y_shape)],
        [weights("W", (192, 10))])


def cases():
    """Yield (case name, ModelProto, save keyword arguments)."""
    # A1: symbolic batch dim everywhere (also A6-A8, A10-A12).
    yield "a1_symbolic", linear(["N", 3, 8, 8], ["N", 10]), {}
    # A2: fixed batch dim (also A9).
    yield "a2_fixed", linear([1, 3, 8, 8], [1, 10]), {}
    # A3: rank-1 tensors whose only dim is the batch dim.
    yield "a3_vector", identity(T.INT64, ["N"]), {}
    # A4: rank-0 input and output.
    yield "a4_scalar", identity(T.FLOAT, []), {}
    # A5: batchable input, output with a fixed first dim.
    yield "a5_mixed", model(
        [h.make_node("ReduceMax", ["X"], ["Y"], axes=[0], keepdims=1)],
        [vi("X", T.FLOAT, ["N", 4])], [vi("Y", T.FLOAT, [1, 4])]), {}
    # A13: an initializer also listed in graph.input, IR 8 (overridable).
    def init_as_input(ir, opset):
        return model(
            [h.make_node("Add", ["X", "W"], ["Y"])],
            [vi("X", T.FLOAT, ["N", 3]), vi("W", T.FLOAT, [3])],
            [vi("Y", T.FLOAT, ["N", 3])],
            [numpy_helper.from_array(np.ones(3, dtype=np.float32), "W")],
            ir=ir, opsets=(("", opset),))
    yield "a13_overridable", init_as_input(8, 13), {}
    # The same with IR 3: the initializer-backed input is in neither list.
    yield "ir3_initializer_input", init_as_input(3, 7), {}
    # A14: output declared without a shape; Relu keeps the input's shape.
    yield "a14_relu_no_shape", model(
        [h.make_node("Relu", ["X"], ["Y"])],
        [vi("X", T.FLOAT, ["N", 4])], [vi("Y", T.FLOAT, None)]), {}
    # A15: strings.
    yield "a15_string", identity(T.STRING, ["N"]), {}
    # A16: a COMPLEX64 output (no Triton type), made by a custom-domain op.
    yield "a16_complex_output", model(
        [h.make_node("ToComplex", ["X"], ["Y"], domain="com.example")],
        [vi("X", T.FLOAT, ["N", 2])], [vi("Y", T.COMPLEX64, ["N"])],
        opsets=(("", 13), ("com.example", 1))), {}
    # A17: a sequence output.
    yield "a17_sequence_output", model(
        [h.make_node("SequenceConstruct", ["X"], ["Y"])],
        [vi("X", T.FLOAT, ["N", 3])],
        [h.make_tensor_sequence_value_info("Y", T.FLOAT, ["N", 3])]), {}
    # Non-tensor inputs: a map, and an optional tensor.
    yield "map_input", model(
        [h.make_node("Identity", ["T"], ["Y"])],
        [h.make_value_info("M", h.make_map_type_proto(
            T.INT64, h.make_tensor_type_proto(T.FLOAT, [2]))),
         vi("T", T.FLOAT, ["N", 4])],
        [vi("Y", T.FLOAT, ["N", 4])], opsets=(("", 18),)), {}
    yield "optional_output", model(
        [h.make_node("Optional", ["X"], ["Y"])],
        [vi("X", T.FLOAT, ["N", 4])],
        [h.make_value_info("Y", h.make_optional_type_proto(
            h.make_tensor_type_proto(T.FLOAT, ["N", 4])))],
        opsets=(("", 18),)), {}

    # Every mapped element type: IN_<T> ['N', 2] -> OUT_<T>.
    nodes, ins, outs = [], [], []
    for t in MAPPED:
        ins.append(vi("IN_" + t, getattr(T, t), ["N", 2]))
        outs.append(vi("OUT_" + t, getattr(T, t), ["N", 2]))
        nodes.append(h.make_node("Identity", ["IN_" + t], ["OUT_" + t]))
    yield "all_types", model(nodes, ins, outs, ir=10,
                             opsets=(("", 21),)), {}
    # Element types without a Triton type, one model each (the input has
    # the type; Identity passes it on).
    for t, ir, opset in [("COMPLEX128", 8, 13), ("FLOAT8E4M3FN", 9, 19),
                         ("FLOAT8E5M2", 9, 19), ("INT4", 10, 21),
                         ("UINT4", 10, 21)]:
        yield "unmapped_" + t.lower(), identity(
            getattr(T, t), ["N", 2], ir=ir, opsets=(("", opset),)), {}

    # An unknown first dim (neither value nor name) counts as variable.
    yield "unknown_first_dim", identity(T.FLOAT, [None, 5]), {}
    # -1 kept past the first dim.
    yield "variable_inner_dims", identity(T.FLOAT, ["N", "seq", 8]), {}
    # A zero dim is reported as 0 (and later refused by Triton).
    yield "zero_dim", identity(T.FLOAT, ["N", 0]), {}
    # Batchable input and output plus a scalar output: nothing batches.
    yield "mixed_scalar_output", model(
        [h.make_node("Identity", ["X"], ["Y"]),
         h.make_node("ReduceSum", ["X"], ["Z"], keepdims=0)],
        [vi("X", T.FLOAT, ["N", 4])],
        [vi("Y", T.FLOAT, ["N", 4]), vi("Z", T.FLOAT, [])]), {}
    # Several inputs and outputs, mixed types, batchable.
    yield "multi_io", model(
        [h.make_node("Identity", ["IDS"], ["IDS_OUT"]),
         h.make_node("Relu", ["FEAT"], ["SCORE"]),
         h.make_node("Not", ["MASK"], ["MASK_OUT"])],
        [vi("IDS", T.INT64, ["batch", 16]),
         vi("FEAT", T.FLOAT, ["batch", 3, 224, 224]),
         vi("MASK", T.BOOL, ["batch", 1])],
        [vi("IDS_OUT", T.INT64, ["batch", 16]),
         vi("SCORE", T.FLOAT, ["batch", 3, 224, 224]),
         vi("MASK_OUT", T.BOOL, ["batch", 1])]), {}
    # 50 inputs summed into one output.
    ins = [vi("X%d" % i, T.FLOAT, ["N", 1]) for i in range(50)]
    yield "many_inputs", model(
        [h.make_node("Sum", ["X%d" % i for i in range(50)], ["Y"])],
        ins, [vi("Y", T.FLOAT, ["N", 1])]), {}
    # Output shape only in value_info (TopK is outside tritonctl's
    # propagation).
    yield "value_info_output", model(
        [h.make_node("TopK", ["X", "K"], ["V", "I"], axis=-1),
         h.make_node("Identity", ["V"], ["Y"])],
        [vi("X", T.FLOAT, ["N", 10])],
        [vi("Y", T.FLOAT, None)],
        [numpy_helper.from_array(np.array([3], dtype=np.int64), "K")],
        value_info=[vi("V", T.FLOAT, ["N", 3])]), {}
    # The graph output has no shape, but a value_info entry of the same
    # name declares it.
    yield "value_info_declared", model(
        [h.make_node("TopK", ["X", "K"], ["Y", "I"], axis=-1)],
        [vi("X", T.FLOAT, ["N", 10])],
        [vi("Y", T.FLOAT, None)],
        [numpy_helper.from_array(np.array([3], dtype=np.int64), "K")],
        value_info=[vi("Y", T.FLOAT, ["N", 3])]), {}
    # Output shape nobody declares and tritonctl cannot infer (custom op).
    yield "unknown_output_shape", model(
        [h.make_node("Mystery", ["X"], ["Y"], domain="com.example")],
        [vi("X", T.FLOAT, ["N", 4])], [vi("Y", T.FLOAT, None)],
        opsets=(("", 13), ("com.example", 1))), {}

    # Opset and IR variety: the same Identity model.
    for ir, opset in [(3, 7), (6, 11), (7, 13), (8, 17), (10, 21)]:
        yield "opset%d" % opset, identity(
            T.FLOAT, ["N", 4], ir=ir, opsets=(("", opset),)), {}
    # Several domains imported.
    yield "opset_domains", identity(
        T.FLOAT, ["N", 4],
        opsets=(("", 13), ("ai.onnx.ml", 3), ("com.microsoft", 1))), {}

    # External data: the weight lives in weights.bin next to model.onnx.
    yield "external_data", model(
        [h.make_node("MatMul", ["X", "W"], ["Y"])],
        [vi("X", T.FLOAT, ["N", 4])], [vi("Y", T.FLOAT, ["N", 4])],
        [weights("W", (4, 4), seed=1)]), {"external": "weights.bin"}

    # A stateful (sequence) model: controls START, READY, CORRID, an implicit
    # state state_in -> state_out, and the real input/output.
    yield "sequence_model", model(
        [h.make_node("Add", ["INPUT", "state_in"], ["OUTPUT"]),
         h.make_node("Identity", ["OUTPUT"], ["state_out"])],
        [vi("INPUT", T.FLOAT, ["N", 4]), vi("START", T.INT32, ["N", 1]),
         vi("READY", T.INT32, ["N", 1]), vi("CORRID", T.UINT64, ["N", 1]),
         vi("state_in", T.FLOAT, ["N", 4])],
        [vi("OUTPUT", T.FLOAT, ["N", 4]), vi("state_out", T.FLOAT, ["N", 4])]), {}

    # The model of Triton's QA case autofill_noplatform_success/onnx/
    # cpu_instance (not committed upstream): an FP16 identity with a batch
    # dim and two variable dims.
    yield "cpu_instance", model(
        [h.make_node("Identity", ["INPUT0"], ["OUTPUT0"])],
        [vi("INPUT0", T.FLOAT16, ["batch", "d0", "d1"])],
        [vi("OUTPUT0", T.FLOAT16, ["batch", "d0", "d1"])]), {}


def ort_view(path):
    """The session's inputs/outputs, or None when ORT cannot load it."""
    if ort is None:
        return None
    try:
        s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    except Exception:  # noqa: BLE001 - anything ORT refuses is skipped
        return None

    def conv(args):
        out = []
        for a in args:
            if not a.type.startswith("tensor("):
                return None
            elem = ORT_ELEM.get(a.type[len("tensor("):-1], 0)
            dims = [d if isinstance(d, int) else -1 for d in (a.shape or [])]
            out.append({"name": a.name, "elem_type": elem, "dims": dims})
        return out

    ins, outs = conv(s.get_inputs()), conv(s.get_outputs())
    if ins is None or outs is None:
        return None
    return {"inputs": ins, "outputs": outs}


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    view = {}
    for name, m, opts in cases():
        d = os.path.join(OUT, name, "1")
        os.makedirs(d)
        path = os.path.join(d, "model.onnx")
        if "external" in opts:
            onnx.save_model(m, path, save_as_external_data=True,
                            all_tensors_to_one_file=True,
                            location=opts["external"], size_threshold=0)
        else:
            onnx.save_model(m, path)
        v = ort_view(path)
        if v is not None:
            view[name] = v
    with open(os.path.join(OUT, "ort_view.json"), "w") as f:
        json.dump(view, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote %d models to %s (%d with an ORT view)"
          % (len(list(cases())), OUT, len(view)))


if __name__ == "__main__":
    main()
