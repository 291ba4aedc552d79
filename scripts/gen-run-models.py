#!/usr/bin/env python3
"""Generate the model repositories and input files of the `tritonctl run`
tests: testdata/run/ (models that load) and testdata/run-bad/ (models that
must fail with a clear error).

testdata/run/ is a Triton model repository (`tritonctl validate
testdata/run` reports nothing). Its models:

  accumulate           backend "stateful" (the stateful backend's
                       accumulate_fp32 example, docs/spec/stateful-backend.md §9):
                       Input [4,-1,5] stacked on the -1 axis, state pair
                       <<<Accumulate_In, Accumulate_Out>>>, reset input
                       ResetSequence (START), Oldest strategy.
  accumulate_implicit  onnxruntime backend, Triton's implicit state
                       (sequence_batching.state, initial_state zero_data),
                       START (bool) and READY (fp32) controls, Oldest.
  accumulate_direct    the same ONNX model as accumulate_implicit with the
                       Direct strategy and two instances.
  accumulate_initial   onnxruntime backend, implicit state whose initial
                       value comes from initial_state/hundred.bin (100.0),
                       no control inputs: only the initial state resets.
  preprocess           stateless: Output = 2 * Input + 1, dynamic batching.
  pipeline             ensemble preprocess -> accumulate_implicit.
  lookup               loads fine but fails inside ONNX Runtime for some
                       inputs: implicit state, max_batch_size 0 (one
                       request per run), Direct strategy, two instances;
                       Accumulate_Out = Accumulate_In + Table[Index] with
                       Table = [10, 20, 30, 40], Output = Accumulate_Out.
                       An Index outside -4..3 makes the Gather node
                       ("Table_Lookup") fail at run time.

Files at the top of testdata/run/ (a repository ignores files) are inputs
for these models in the two formats `tritonctl run --input` reads:
perf_analyzer's input-data JSON (*.json) and JSON Lines requests (*.jsonl).

testdata/run-bad/ holds models a run must refuse: `broken` (model.onnx is
not an ONNX file) and `input_mismatch` (the config names an input the
ONNX model does not have).

Requires the `onnx` Python package (1.23.2) and numpy; onnxruntime (1.31.1)
is used, when importable, to check every model against its numpy reference.
The output is deterministic. Re-run after changing this script:

    python3 scripts/gen-run-models.py           # rewrite the committed files
    python3 scripts/gen-run-models.py --check   # exit 1 when they are stale
"""

import base64
import filecmp
import json
import os
import shutil
import struct
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTS = ("run", "run-bad")

PRODUCER = "tritonctl-run-tests"


# ---------------------------------------------------------------- ONNX graphs

def save(m, path):
    onnx.checker.check_model(m, full_check=True)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(m.SerializeToString(deterministic=True))


def make(nodes, inputs, outputs, inits, opset, ir, graph_name="g"):
    graph = h.make_graph(nodes, graph_name, inputs, outputs,
                         initializer=inits)
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)],
                     producer_name=PRODUCER)
    m.ir_version = ir
    return m


def accumulate_fp32():
    """The stateful backend's accumulate_fp32 graph
    (docs/spec/stateful-backend.md §9.2): opset 11, IR 7, sequence axis
    first, batch axis second."""
    vi = h.make_tensor_value_info
    inputs = [
        vi("Input", T.FLOAT, ["seq", "batch", 5]),
        vi("Accumulate_In", T.FLOAT, ["batch", 5]),
        vi("ResetSequence", T.BOOL, ["batch", 1]),
    ]
    outputs = [
        vi("Output", T.FLOAT, ["seq", "batch", 5]),
        vi("Accumulate_Out", T.FLOAT, ["batch", 5]),
    ]
    i64 = lambda name, v: numpy_helper.from_array(np.array([v], np.int64), name)
    inits = [
        i64("One_Const", 1), i64("Two_Const", 2), i64("Zero_Const", 0),
        numpy_helper.from_array(np.zeros(5, np.float32),
                                "Accumulate_Initial_Vals"),
    ]
    nodes = [
        h.make_node("Shape", ["Input"], ["Input_Shape"]),
        h.make_node("ReduceSum", ["Input"], ["Input_Reduce"], axes=[0],
                    keepdims=0),
        h.make_node("Slice", ["Input_Shape", "One_Const", "Two_Const",
                              "Zero_Const"], ["Input_Shape_Slice"]),
        h.make_node("Concat", ["Input_Shape_Slice", "One_Const"],
                    ["Input_Shape_Concat"], axis=0),
        h.make_node("Expand", ["Accumulate_Initial_Vals",
                               "Input_Shape_Concat"],
                    ["Accumulate_Init_Expanded"]),
        h.make_node("Where", ["ResetSequence", "Accumulate_Init_Expanded",
                              "Accumulate_In"], ["Accumulate_Val"]),
        h.make_node("Add", ["Input_Reduce", "Accumulate_Val"],
                    ["Accumulate_Out"]),
        h.make_node("Add", ["Input", "Accumulate_Out"], ["Output"]),
    ]
    return make(nodes, inputs, outputs, inits, opset=11, ir=7,
                graph_name="onnx_graphsurgeon_graph")


def accumulate_rows(controls):
    """Batch-first accumulator for Triton's implicit state.

    Accumulate_Out = (START ? 0 : Accumulate_In) + READY * rowsum(Input)
    Output         = Input + Accumulate_Out
    Without controls: Accumulate_Out = Accumulate_In + rowsum(Input).
    """
    vi = h.make_tensor_value_info
    inputs = [vi("Input", T.FLOAT, ["batch", 4]),
              vi("Accumulate_In", T.FLOAT, ["batch", 1])]
    if controls:
        inputs += [vi("START", T.BOOL, ["batch", 1]),
                   vi("READY", T.FLOAT, ["batch", 1])]
    outputs = [vi("Output", T.FLOAT, ["batch", 4]),
               vi("Accumulate_Out", T.FLOAT, ["batch", 1])]
    inits = [numpy_helper.from_array(np.array([1], np.int64), "Row_Axis")]
    nodes = [h.make_node("ReduceSum", ["Input", "Row_Axis"], ["Row_Sum"],
                         keepdims=1)]
    if controls:
        inits.append(numpy_helper.from_array(np.zeros(1, np.float32),
                                             "Zero"))
        nodes += [
            h.make_node("Mul", ["Row_Sum", "READY"], ["Increment"]),
            h.make_node("Where", ["START", "Zero", "Accumulate_In"],
                        ["Previous"]),
            h.make_node("Add", ["Previous", "Increment"],
                        ["Accumulate_Out"]),
        ]
    else:
        nodes.append(h.make_node("Add", ["Accumulate_In", "Row_Sum"],
                                 ["Accumulate_Out"]))
    nodes.append(h.make_node("Add", ["Input", "Accumulate_Out"], ["Output"]))
    return make(nodes, inputs, outputs, inits, opset=17, ir=8)


def scale_shift():
    """Output = 2 * Input + 1."""
    vi = h.make_tensor_value_info
    inits = [numpy_helper.from_array(np.array([2.0], np.float32), "Scale"),
             numpy_helper.from_array(np.array([1.0], np.float32), "Shift")]
    nodes = [h.make_node("Mul", ["Input", "Scale"], ["Scaled"]),
             h.make_node("Add", ["Scaled", "Shift"], ["Output"])]
    return make(nodes, [vi("Input", T.FLOAT, ["batch", 4])],
                [vi("Output", T.FLOAT, ["batch", 4])], inits, opset=17, ir=8)


def double_batch():
    """Output = 2 * Input on a tensor of shape [batch]: the batch dimension
    is the only one. It has no config.pbtxt: auto-complete gives it
    `dims: [ 1 ] reshape { shape: [ ] }` with max_batch_size > 0, so that
    `run` must hand ONNX Runtime [n] for a batch of n requests of [1]."""
    vi = h.make_tensor_value_info
    inits = [numpy_helper.from_array(np.array(2.0, np.float32), "Two")]
    nodes = [h.make_node("Mul", ["Input", "Two"], ["Output"])]
    return make(nodes, [vi("Input", T.FLOAT, ["batch"])],
                [vi("Output", T.FLOAT, ["batch"])], inits, opset=17, ir=8)


LOOKUP_TABLE = [10.0, 20.0, 30.0, 40.0]


def table_lookup():
    """Accumulate_Out = Accumulate_In + Table[Index]; Output = Accumulate_Out.

    Unbatched (max_batch_size 0): Index is INT64 [1], the state FP32 [1].
    Gather fails in ONNX Runtime when Index is out of range.
    """
    vi = h.make_tensor_value_info
    inits = [numpy_helper.from_array(np.array(LOOKUP_TABLE, np.float32),
                                     "Table")]
    nodes = [h.make_node("Gather", ["Table", "Index"], ["Looked_Up"],
                         name="Table_Lookup", axis=0),
             h.make_node("Add", ["Accumulate_In", "Looked_Up"],
                         ["Accumulate_Out"]),
             h.make_node("Identity", ["Accumulate_Out"], ["Output"])]
    return make(nodes,
                [vi("Index", T.INT64, [1]), vi("Accumulate_In", T.FLOAT, [1])],
                [vi("Output", T.FLOAT, [1]),
                 vi("Accumulate_Out", T.FLOAT, [1])],
                inits, opset=17, ir=8)


# ------------------------------------------------------- numpy references

def ref_accumulate_fp32(feeds):
    x, state, reset = (feeds["Input"], feeds["Accumulate_In"],
                       feeds["ResetSequence"])
    prev = np.where(reset, np.zeros_like(state), state)
    acc = x.sum(axis=0) + prev
    return {"Output": x + acc, "Accumulate_Out": acc}


def ref_accumulate_rows(feeds):
    x, state = feeds["Input"], feeds["Accumulate_In"]
    rows = x.sum(axis=1, keepdims=True)
    if "START" in feeds:
        prev = np.where(feeds["START"], np.float32(0), state)
        acc = prev + feeds["READY"] * rows
    else:
        acc = state + rows
    return {"Output": x + acc, "Accumulate_Out": acc}


def ref_scale_shift(feeds):
    return {"Output": feeds["Input"] * np.float32(2) + np.float32(1)}


def ref_double_batch(feeds):
    return {"Output": feeds["Input"] * np.float32(2)}


def ref_table_lookup(feeds):
    acc = feeds["Accumulate_In"] + np.array(LOOKUP_TABLE,
                                            np.float32)[feeds["Index"]]
    return {"Output": acc, "Accumulate_Out": acc}


def check_with_ort(path, reference, feeds):
    """Runs `path` in onnxruntime and compares with the numpy reference."""
    try:
        import onnxruntime as ort
    except ImportError:
        return
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = dict(zip([o.name for o in sess.get_outputs()],
                   sess.run(None, feeds)))
    for name, want in reference(feeds).items():
        if not np.array_equal(got[name], want):
            raise SystemExit(f"{path}: output {name} differs from the "
                             f"reference:\n{got[name]}\n{want}")


def check_fails_in_ort(path, feeds):
    """Runs `path` in onnxruntime and expects the run to fail."""
    try:
        import onnxruntime as ort
    except ImportError:
        return
    opts = ort.SessionOptions()
    opts.log_severity_level = 4  # the expected failure is not news
    sess = ort.InferenceSession(path, opts,
                                providers=["CPUExecutionProvider"])
    try:
        sess.run(None, feeds)
    except Exception:  # onnxruntime's own exception types vary by version
        return
    raise SystemExit(f"{path}: expected a run-time failure for {feeds}")


def self_check(models_dir):
    rng = np.random.default_rng(7)
    ints = lambda *s: rng.integers(-50, 50, s).astype(np.float32)
    b = 3
    check_with_ort(os.path.join(models_dir, "accumulate", "1", "model.onnx"),
                   ref_accumulate_fp32,
                   {"Input": ints(4, b, 5), "Accumulate_In": ints(b, 5),
                    "ResetSequence": np.array([[True], [False], [True]])})
    check_with_ort(os.path.join(models_dir, "accumulate_implicit", "1",
                                "model.onnx"),
                   ref_accumulate_rows,
                   {"Input": ints(b, 4), "Accumulate_In": ints(b, 1),
                    "START": np.array([[True], [False], [False]]),
                    "READY": np.array([[1], [1], [0]], np.float32)})
    check_with_ort(os.path.join(models_dir, "accumulate_initial", "1",
                                "model.onnx"),
                   ref_accumulate_rows,
                   {"Input": ints(b, 4), "Accumulate_In": ints(b, 1)})
    check_with_ort(os.path.join(models_dir, "preprocess", "1", "model.onnx"),
                   ref_scale_shift, {"Input": ints(b, 4)})
    check_with_ort(os.path.join(models_dir, "double_batch", "1",
                                "model.onnx"),
                   ref_double_batch, {"Input": ints(5)})
    lookup = os.path.join(models_dir, "lookup", "1", "model.onnx")
    for i in (0, 3, -1):
        check_with_ort(lookup, ref_table_lookup,
                       {"Index": np.array([i], np.int64),
                        "Accumulate_In": np.array([0.5], np.float32)})
    check_fails_in_ort(lookup, {"Index": np.array([4], np.int64),
                                "Accumulate_In": np.zeros(1, np.float32)})


# ------------------------------------------------------------ the configs

def io(kind, name, dtype, dims):
    d = ", ".join(str(x) for x in dims)
    return (f"  {{\n    name: \"{name}\"\n    data_type: {dtype}\n"
            f"    dims: [ {d} ]\n  }}")


def control(name, kind, field, values):
    v = ", ".join(values)
    return (f"    {{\n      name: \"{name}\"\n      control [\n        {{\n"
            f"          kind: {kind}\n          {field}: [ {v} ]\n"
            f"        }}\n      ]\n    }}")


def corrid(name, dtype):
    return (f"    {{\n      name: \"{name}\"\n      control [\n        {{\n"
            f"          kind: CONTROL_SEQUENCE_CORRID\n"
            f"          data_type: {dtype}\n        }}\n      ]\n    }}")


def cpu_instances(count):
    return f"instance_group [\n  {{\n    count: {count}\n    kind: KIND_CPU\n  }}\n]\n"


ACCUMULATE = f"""\
# The stateful backend's accumulate example (docs/spec/stateful-backend.md §9):
# requests of a sequence are stacked along the -1 axis of Input; the backend
# keeps Accumulate_In/Accumulate_Out per sequence and sets ResetSequence
# (the model's reset input) on the first request of a sequence.
# max_candidate_sequence_use_ratio 1.0 lets the backend store as many
# sequences as Triton admits (8); with the default 0.9 it stores only 7 and
# the 8th live sequence fails with "Too many simultaneous connections".
name: "accumulate"
backend: "stateful"
max_batch_size: 4
input [
{io("input", "Input", "TYPE_FP32", [4, -1, 5])}
]
output [
{io("output", "Output", "TYPE_FP32", [4, -1, 5])}
]
{cpu_instances(1)}sequence_batching {{
  max_sequence_idle_microseconds: 5000000
  oldest {{
    max_candidate_sequences: 8
    max_queue_delay_microseconds: 1000
  }}
  control_input [
{control("ResetSequence", "CONTROL_SEQUENCE_START", "int32_false_true", ["0", "1"])},
{control("EndSequence", "CONTROL_SEQUENCE_END", "int32_false_true", ["0", "1"])},
{corrid("CORRID", "TYPE_UINT64")}
  ]
}}
parameters [
  {{
    key: "onnx_file_name"
    value {{ string_value: "model.onnx" }}
  }},
  {{
    key: "state_pairs"
    value {{ string_value: "<<<Accumulate_In, Accumulate_Out>>>" }}
  }},
  {{
    key: "max_candidate_sequence_use_ratio"
    value {{ string_value: "1.0" }}
  }}
]
"""


def implicit_config(name, comment, strategy, instances, max_batch_size):
    return f"""\
{comment}name: "{name}"
backend: "onnxruntime"
max_batch_size: {max_batch_size}
input [
{io("input", "Input", "TYPE_FP32", [4])}
]
output [
{io("output", "Output", "TYPE_FP32", [4])}
]
{cpu_instances(instances)}sequence_batching {{
  max_sequence_idle_microseconds: 5000000
{strategy}
  control_input [
{control("START", "CONTROL_SEQUENCE_START", "bool_false_true", ["false", "true"])},
{control("READY", "CONTROL_SEQUENCE_READY", "fp32_false_true", ["0", "1"])}
  ]
  state [
    {{
      input_name: "Accumulate_In"
      output_name: "Accumulate_Out"
      data_type: TYPE_FP32
      dims: [ 1 ]
      initial_state {{
        name: "zero"
        data_type: TYPE_FP32
        dims: [ 1 ]
        zero_data: true
      }}
    }}
  ]
}}
"""


ACCUMULATE_IMPLICIT = implicit_config(
    "accumulate_implicit",
    "# Triton's implicit state: Triton feeds Accumulate_Out of one request\n"
    "# back as Accumulate_In of the next request of the same sequence and\n"
    "# starts every sequence from the zero initial state. The model also\n"
    "# ignores Accumulate_In when START is set and scales its increment by\n"
    "# READY. Accumulate_Out = prev + READY * rowsum(Input);\n"
    "# Output = Input + Accumulate_Out.\n",
    "  oldest {\n    max_candidate_sequences: 4\n"
    "    max_queue_delay_microseconds: 1000\n  }",
    1, 4)

ACCUMULATE_DIRECT = implicit_config(
    "accumulate_direct",
    "# The accumulate_implicit model with the Direct strategy: each of the\n"
    "# two instances has max_batch_size (2) slots, a sequence keeps its slot\n"
    "# until END and batches are padded up to the highest busy slot\n"
    "# (READY = 0 on padding rows).\n",
    "  direct { }", 2, 2)

ACCUMULATE_INITIAL = f"""\
# Implicit state without control inputs: a sequence's first request gets
# the initial state read from initial_state/hundred.bin (one FP32 100.0),
# later requests the Accumulate_Out of the previous one.
# Accumulate_Out = Accumulate_In + rowsum(Input); Output = Input + Accumulate_Out.
name: "accumulate_initial"
backend: "onnxruntime"
max_batch_size: 4
input [
{io("input", "Input", "TYPE_FP32", [4])}
]
output [
{io("output", "Output", "TYPE_FP32", [4])}
]
{cpu_instances(1)}sequence_batching {{
  max_sequence_idle_microseconds: 5000000
  oldest {{
    max_candidate_sequences: 4
  }}
  state [
    {{
      input_name: "Accumulate_In"
      output_name: "Accumulate_Out"
      data_type: TYPE_FP32
      dims: [ 1 ]
      initial_state {{
        name: "hundred"
        data_type: TYPE_FP32
        dims: [ 1 ]
        data_file: "hundred.bin"
      }}
    }}
  ]
}}
"""

PREPROCESS = f"""\
# Stateless: Output = 2 * Input + 1, with the dynamic batcher.
name: "preprocess"
backend: "onnxruntime"
max_batch_size: 8
input [
{io("input", "Input", "TYPE_FP32", [4])}
]
output [
{io("output", "Output", "TYPE_FP32", [4])}
]
{cpu_instances(1)}dynamic_batching {{
  max_queue_delay_microseconds: 100
}}
"""

PIPELINE = f"""\
# preprocess then accumulate_implicit. The ensemble has no scheduler of its
# own: the sequence id and START/END flags of a request to the ensemble are
# passed on to accumulate_implicit, which keeps the state per sequence.
name: "pipeline"
platform: "ensemble"
max_batch_size: 4
input [
{io("input", "Input", "TYPE_FP32", [4])}
]
output [
{io("output", "Output", "TYPE_FP32", [4])}
]
ensemble_scheduling {{
  step [
    {{
      model_name: "preprocess"
      model_version: -1
      input_map {{ key: "Input" value: "Input" }}
      output_map {{ key: "Output" value: "scaled" }}
    }},
    {{
      model_name: "accumulate_implicit"
      model_version: -1
      input_map {{ key: "Input" value: "scaled" }}
      output_map {{ key: "Output" value: "Output" }}
    }}
  ]
}}
"""

LOOKUP = f"""\
# Loads fine but fails in ONNX Runtime for an Index outside -4..3 (the
# Gather node "Table_Lookup" of Table = [10, 20, 30, 40]). Unbatched: every
# request runs alone, so a failing request fails alone and the other
# sequences keep running. Implicit state starting from zero:
# Accumulate_Out = Accumulate_In + Table[Index]; Output = Accumulate_Out.
name: "lookup"
backend: "onnxruntime"
max_batch_size: 0
input [
{io("input", "Index", "TYPE_INT64", [1])}
]
output [
{io("output", "Output", "TYPE_FP32", [1])}
]
{cpu_instances(2)}sequence_batching {{
  max_sequence_idle_microseconds: 5000000
  direct {{ }}
  state [
    {{
      input_name: "Accumulate_In"
      output_name: "Accumulate_Out"
      data_type: TYPE_FP32
      dims: [ 1 ]
      initial_state {{
        name: "zero"
        data_type: TYPE_FP32
        dims: [ 1 ]
        zero_data: true
      }}
    }}
  ]
}}
"""

BROKEN = f"""\
# model.onnx is not an ONNX model: loading must fail with a clear error.
name: "broken"
backend: "onnxruntime"
max_batch_size: 4
input [
{io("input", "Input", "TYPE_FP32", [4])}
]
output [
{io("output", "Output", "TYPE_FP32", [4])}
]
"""

INPUT_MISMATCH = f"""\
# The config names an input ("Inptu") the ONNX model does not have.
name: "input_mismatch"
backend: "onnxruntime"
max_batch_size: 4
input [
{io("input", "Inptu", "TYPE_FP32", [4])}
]
output [
{io("output", "Output", "TYPE_FP32", [4])}
]
"""


# ------------------------------------------------------------- input files

def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def accumulate_streams():
    """The stateful backend client's data (docs/spec/stateful-backend.md §9.3):
    sequence q, segment seg holds j + 100*seg + 1000*q for j = 0..19."""
    return {"data": [[{"Input": [j + 100 * seg + 1000 * q
                                 for j in range(20)]}
                      for seg in range(3)] for q in range(2)]}


def implicit_requests():
    """Two interleaved sequences (an integer and a string id) and a third
    that starts after the first ended, reusing its id."""
    rows = []
    t = 0

    def req(rid, seq, start, end, values):
        nonlocal t
        rows.append({"id": rid, "arrival_us": t, "sequence_id": seq,
                     "start": start, "end": end,
                     "inputs": {"Input": values}})
        t += 500

    req("a1", 7, True, False, [1, 2, 3, 4])
    req("b1", "user-b", True, False, [10, 20, 30, 40])
    req("a2", 7, False, False, [0.5, 0.5, 0.5, 0.5])
    req("b2", "user-b", False, False, [-1, -2, -3, -4])
    req("a3", 7, False, True, [100, 0, 0, 0])
    req("b3", "user-b", False, True, [[1, 1, 1, 1]])
    req("c1", 7, True, False, [5, 5, 5, 5])
    req("c2", 7, False, True, [1, 2, 3, 4])
    return rows


def direct_requests():
    """Five sequences of three steps for two instances of two slots: one
    sequence waits in the backlog until a slot frees."""
    rows = []
    for step in range(3):
        for s in range(5):
            rows.append({"id": f"s{s + 1}.{step + 1}",
                         "arrival_us": 200 * (step * 5 + s),
                         "sequence_id": s + 1,
                         "start": step == 0, "end": step == 2,
                         "inputs": {"Input": [s + 1, step, -step, 0.25]}})
    return rows


def f32_b64(values):
    return base64.b64encode(struct.pack("<%df" % len(values),
                                        *values)).decode()


def preprocess_data():
    return {"data": [
        {"Input": [0, 1, 2, 3]},
        {"Input": {"content": [-1.5, 0.25, 1e3, 7], "shape": [4]}},
        {"Input": {"content": [1, 2, 3, 4, 5, 6, 7, 8], "shape": [2, 4]}},
        {"Input": {"b64": f32_b64([0.5, -0.5, 8, 16])}},
        {"Input": {"content": {"b64": f32_b64([3, 2, 1, 0])},
                   "shape": [4]}},
    ]}


def pipeline_data():
    return {"data": [
        [{"Input": [1, 1, 1, 1]}, {"Input": [0, 0, 0, 0]},
         {"Input": [2, 0, 0, 0]}],
        [{"Input": [-1, -1, -1, -1]}, {"Input": [3, 3, 3, 3]}],
    ]}


def initial_data():
    return {"data": [
        [{"Input": [1, 2, 3, 4]}, {"Input": [0, 0, 0, 1]}],
        [{"Input": [-10, 0, 0, 0]}],
    ]}


# ---------------------------------------------------------------- writing

def write_model(repo, name, config, onnx_model=None, raw=None):
    d = os.path.join(repo, name)
    os.makedirs(os.path.join(d, "1"))
    with open(os.path.join(d, "config.pbtxt"), "w") as f:
        f.write(config)
    path = os.path.join(d, "1", "model.onnx")
    if onnx_model is not None:
        save(onnx_model, path)
    else:
        with open(path, "wb") as f:
            f.write(raw)


def generate(root):
    run = os.path.join(root, "run")
    bad = os.path.join(root, "run-bad")
    os.makedirs(run)
    os.makedirs(bad)
    rows = accumulate_rows(controls=True)
    write_model(run, "accumulate", ACCUMULATE, accumulate_fp32())
    write_model(run, "accumulate_implicit", ACCUMULATE_IMPLICIT, rows)
    write_model(run, "accumulate_direct", ACCUMULATE_DIRECT, rows)
    write_model(run, "accumulate_initial", ACCUMULATE_INITIAL,
                accumulate_rows(controls=False))
    init = os.path.join(run, "accumulate_initial", "initial_state")
    os.makedirs(init)
    with open(os.path.join(init, "hundred.bin"), "wb") as f:
        f.write(struct.pack("<f", 100.0))
    write_model(run, "preprocess", PREPROCESS, scale_shift())
    write_model(run, "lookup", LOOKUP, table_lookup())
    # No config.pbtxt: the tests auto-complete it (autoconfig --write).
    save(double_batch(), os.path.join(run, "double_batch", "1", "model.onnx"))
    os.makedirs(os.path.join(run, "pipeline", "1"))
    with open(os.path.join(run, "pipeline", "config.pbtxt"), "w") as f:
        f.write(PIPELINE)
    # Ensemble version directories are empty; git keeps no empty
    # directories, so the version holds a placeholder.
    with open(os.path.join(run, "pipeline", "1", ".gitkeep"), "w"):
        pass

    write_json(os.path.join(run, "accumulate.json"), accumulate_streams())
    write_jsonl(os.path.join(run, "accumulate_implicit.jsonl"),
                implicit_requests())
    write_jsonl(os.path.join(run, "accumulate_direct.jsonl"),
                direct_requests())
    write_json(os.path.join(run, "accumulate_initial.json"), initial_data())
    write_json(os.path.join(run, "preprocess.json"), preprocess_data())
    write_json(os.path.join(run, "pipeline.json"), pipeline_data())

    write_model(bad, "broken", BROKEN,
                raw=b"this is not an ONNX model\n\x00\x01\x02\xff")
    write_model(bad, "input_mismatch", INPUT_MISMATCH, scale_shift())
    self_check(run)


def tree(root):
    out = []
    for d in OUTS:
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for f in files:
                out.append(os.path.relpath(os.path.join(dirpath, f), root))
    return sorted(out)


def check():
    testdata = os.path.join(ROOT, "testdata")
    with tempfile.TemporaryDirectory() as tmp:
        generate(tmp)
        want, have = tree(tmp), tree(testdata)
        stale = sorted(set(want) ^ set(have))
        stale += [f for f in want if f in have and not filecmp.cmp(
            os.path.join(tmp, f), os.path.join(testdata, f), shallow=False)]
    for f in sorted(stale):
        print(f"stale: testdata/{f}", file=sys.stderr)
    if stale:
        print("scripts/gen-run-models.py: the committed run models are out "
              "of date; re-run python3 scripts/gen-run-models.py",
              file=sys.stderr)
        return 1
    return 0


def main():
    if sys.argv[1:] == ["--check"]:
        return check()
    if sys.argv[1:]:
        print("usage: gen-run-models.py [--check]", file=sys.stderr)
        return 2
    testdata = os.path.join(ROOT, "testdata")
    for d in OUTS:
        shutil.rmtree(os.path.join(testdata, d), ignore_errors=True)
    generate(testdata)
    print("wrote " + ", ".join(f"testdata/{d}/" for d in OUTS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
