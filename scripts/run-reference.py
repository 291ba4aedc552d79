#!/usr/bin/env python3
"""Reference for `tritonctl run`: executes the requests of an input file on
a model one at a time with Python's onnxruntime and prints one JSON line per
request in the shape of `tritonctl run --format json` (docs/spec/cli.md):

    {"id": "r1", "sequence_id": 7, "status": "ok",
     "outputs": {"Output": {"datatype": "FP32", "shape": [1, 4], "data": [...]}}}

or `"status": "error", "error": "<message>"`. Lines come in input order.

Usage:

    scripts/run-reference.py MODEL_DIR INPUT [--sequence] [--triton-shapes]

MODEL_DIR holds config.pbtxt and 1/model.onnx (or the highest numbered
version); an ensemble's composing models are looked up next to it. INPUT is
perf_analyzer's input-data JSON ({"data": [...]}; with --sequence, each
array of steps in "data" is one sequence with ids 1, 2, ..., START on its
first and END on its last step) or JSON Lines of requests
({"id", "arrival_us", "sequence_id", "start", "end", "inputs"}).

What it models (docs/spec/stateful-backend.md, docs/spec/schedulers.md §3):

* Stateless models: one ORT run per request.
* Triton's implicit state (`sequence_batching.state`): the first request of
  a sequence gets the initial state (zero_data, or the bytes of
  <model>/initial_state/<data_file>; zeros when no initial_state is given,
  where Triton leaves the memory uninitialized); each later request gets the
  previous request's state output. Control inputs START/END/READY/CORRID are
  filled from `control_input`.
* The stateful backend (`backend: "stateful"`, `state_pairs`): the request's
  data is passed with its leading batch dimension removed (the config's -1
  axis is the stacking axis, size 1 for one request); the reset input (the
  START control's name) is true on the first request; states start at zero
  and are kept per sequence; END frees them. Outputs are reported with the
  leading batch dimension 1 restored, or as the backend reports them with
  --triton-shapes. With `infer_end_requests: "0"` an END request is not run
  and its outputs are one zero per output, shaped [1, ..., 1].
* Ensembles: steps run in data-flow order; the sequence id and flags of the
  request go to every composing model, which keeps its own state.
* Triton's admission checks of the sequence batcher: a non-START request of
  an unknown sequence, a zero/empty correlation id and a batch size above 1
  are errors with Triton's messages. Idle timeouts are not modelled.

Needs numpy, onnxruntime and the protobuf package (all installed with
`pip install onnx==1.23.2 onnxruntime==1.31.1 numpy`) and `protoc`, which
compiles proto/model_config.proto so that config.pbtxt is read by
protobuf's own text parser.
"""

import base64
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Triton data type name (without TYPE_) -> (numpy dtype, KServe name).
TYPES = {
    "BOOL": (np.bool_, "BOOL"), "UINT8": (np.uint8, "UINT8"),
    "UINT16": (np.uint16, "UINT16"), "UINT32": (np.uint32, "UINT32"),
    "UINT64": (np.uint64, "UINT64"), "INT8": (np.int8, "INT8"),
    "INT16": (np.int16, "INT16"), "INT32": (np.int32, "INT32"),
    "INT64": (np.int64, "INT64"), "FP16": (np.float16, "FP16"),
    "FP32": (np.float32, "FP32"), "FP64": (np.float64, "FP64"),
    "STRING": (np.object_, "BYTES"),
}

# ONNX Runtime element type strings -> numpy dtypes.
ORT_TYPES = {
    "tensor(bool)": np.bool_, "tensor(uint8)": np.uint8,
    "tensor(uint16)": np.uint16, "tensor(uint32)": np.uint32,
    "tensor(uint64)": np.uint64, "tensor(int8)": np.int8,
    "tensor(int16)": np.int16, "tensor(int32)": np.int32,
    "tensor(int64)": np.int64, "tensor(float16)": np.float16,
    "tensor(float)": np.float32, "tensor(double)": np.float64,
    "tensor(string)": np.object_,
}


class RequestError(Exception):
    """An error reported for one request (status "error")."""


# ------------------------------------------------------------- the config

_CONFIG_CLASS = None


def config_class():
    global _CONFIG_CLASS
    if _CONFIG_CLASS is None:
        from google.protobuf import descriptor_pb2, descriptor_pool
        from google.protobuf import message_factory
        with tempfile.TemporaryDirectory() as tmp:
            desc = os.path.join(tmp, "model_config.desc")
            subprocess.run(["protoc", "-I", os.path.join(ROOT, "proto"),
                            "--include_imports", "--descriptor_set_out=" + desc,
                            "model_config.proto"], check=True)
            with open(desc, "rb") as f:
                files = descriptor_pb2.FileDescriptorSet.FromString(f.read())
        pool = descriptor_pool.DescriptorPool()
        for fd in files.file:
            pool.Add(fd)
        _CONFIG_CLASS = message_factory.GetMessageClass(
            pool.FindMessageTypeByName("inference.ModelConfig"))
    return _CONFIG_CLASS


def read_config(model_dir):
    from google.protobuf import text_format
    cls = config_class()
    cfg = cls()
    with open(os.path.join(model_dir, "config.pbtxt")) as f:
        text_format.Parse(f.read(), cfg)
    return cfg


def enum_name(msg, field):
    fd = msg.DESCRIPTOR.fields_by_name[field]
    return fd.enum_type.values_by_number[getattr(msg, field)].name


def type_name(msg, field="data_type"):
    return enum_name(msg, field)[len("TYPE_"):]


def latest_version(model_dir):
    versions = [int(d) for d in os.listdir(model_dir)
                if d.isdigit() and os.path.isdir(os.path.join(model_dir, d))]
    if not versions:
        raise SystemExit(f"{model_dir}: no version directory")
    return os.path.join(model_dir, str(max(versions)))


# ------------------------------------------------------ reading the input

def b64_elements(text, dtype_name):
    raw = base64.b64decode(text)
    if dtype_name == "STRING":
        out, i = [], 0
        while i < len(raw):
            (n,) = struct.unpack_from("<I", raw, i)
            out.append(raw[i + 4:i + 4 + n])
            i += 4 + n
        return out
    np_type = TYPES[dtype_name][0]
    return list(np.frombuffer(raw, dtype=np.dtype(np_type).newbyteorder("<")))


def to_array(value, spec, max_batch_size):
    """A request's tensor: the config dims with -1 resolved and, for a
    batching model, a leading batch dimension (1 unless the value's shape
    carries one)."""
    dtype_name, dims = spec
    shape = None
    if isinstance(value, dict) and "content" in value:
        shape = [int(d) for d in value["shape"]] if "shape" in value else None
        value = value["content"]
    if isinstance(value, dict) and "b64" in value:
        flat = b64_elements(value["b64"], dtype_name)
    else:
        arr = np.array(value, dtype=object)
        if arr.ndim > 1 and shape is None:
            shape = list(arr.shape)
        flat = list(arr.reshape(-1))
    if dtype_name == "STRING":
        flat = [v if isinstance(v, bytes) else str(v).encode() for v in flat]
    if shape is None:
        shape = list(dims)
        unknown = [i for i, d in enumerate(shape) if d < 0]
        if unknown:
            known = int(np.prod([d for d in shape if d >= 0]))
            shape[unknown[0]] = len(flat) // known
    if max_batch_size > 0 and len(shape) == len(dims):
        shape = [1] + shape
    np_type = TYPES[dtype_name][0]
    if np_type is np.object_:
        return np.array(flat, dtype=object).reshape(shape)
    if np_type is np.bool_:
        return np.array([bool(v) for v in flat], dtype=np.bool_).reshape(shape)
    return np.array([float(v) if isinstance(v, str) else v for v in flat],
                    dtype=np_type).reshape(shape)


def read_requests(path, sequence):
    with open(path) as f:
        text = f.read()
    doc = None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        pass
    reqs = []
    if isinstance(doc, dict) and "data" in doc:
        data = doc["data"]
        streams = all(isinstance(e, list) for e in data)
        if streams and not sequence:
            raise SystemExit(f"{path}: the data holds sequences (arrays of "
                             "steps); run with --sequence")
        if streams:
            for s, steps in enumerate(data):
                for k, step in enumerate(steps):
                    reqs.append({"sequence_id": s + 1, "start": k == 0,
                                 "end": k == len(steps) - 1,
                                 "inputs": step})
        elif sequence:
            for k, step in enumerate(data):
                reqs.append({"sequence_id": 1, "start": k == 0,
                             "end": k == len(data) - 1, "inputs": step})
        else:
            reqs = [{"inputs": step} for step in data]
    else:
        for line in text.splitlines():
            if line.strip():
                reqs.append(json.loads(line))
    for i, r in enumerate(reqs):
        r.setdefault("id", str(i))
        r["id"] = str(r["id"])
    return reqs


# ------------------------------------------------------------ the models

def control_values(cfg, start, end, ready, corrid, batched):
    """Control tensors for one request (docs/spec/schedulers.md §3.6)."""
    feeds = {}
    if not cfg.HasField("sequence_batching"):
        return feeds
    for ci in cfg.sequence_batching.control_input:
        for c in ci.control:
            kind = enum_name(c, "kind")
            if kind == "CONTROL_SEQUENCE_CORRID":
                dt = type_name(c)
                if dt == "STRING":
                    v = np.array([str(corrid).encode()], dtype=object)
                else:
                    v = np.array([corrid if isinstance(corrid, int) else 0],
                                 dtype=np.uint64).astype(TYPES[dt][0])
            else:
                flag = {"CONTROL_SEQUENCE_START": start,
                        "CONTROL_SEQUENCE_END": end,
                        "CONTROL_SEQUENCE_READY": ready}[kind]
                if len(c.int32_false_true):
                    v = np.array([c.int32_false_true[int(flag)]], np.int32)
                elif len(c.fp32_false_true):
                    v = np.array([c.fp32_false_true[int(flag)]], np.float32)
                else:
                    v = np.array([c.bool_false_true[int(flag)]], np.bool_)
            feeds[ci.name] = v.reshape([1, 1] if batched else [1])
    return feeds


class Model:
    def __init__(self, model_dir, triton_shapes=False):
        self.dir = model_dir
        self.cfg = read_config(model_dir)
        self.name = self.cfg.name or os.path.basename(
            os.path.normpath(model_dir))
        self.mbs = self.cfg.max_batch_size
        self.inputs = {i.name: (type_name(i), list(i.dims))
                       for i in self.cfg.input}
        self.outputs = [(o.name, type_name(o)) for o in self.cfg.output]
        self.triton_shapes = triton_shapes
        self.sequence = self.cfg.HasField("sequence_batching")
        self.live = set()        # sequences Triton's batcher knows
        self.states = {}         # sequence id -> {state input: array}
        if self.cfg.platform == "ensemble":
            self.kind = "ensemble"
            repo = os.path.dirname(os.path.normpath(model_dir))
            self.steps = [(Model(os.path.join(repo, s.model_name),
                                 triton_shapes), dict(s.input_map),
                           dict(s.output_map))
                          for s in self.cfg.ensemble_scheduling.step]
            return
        import onnxruntime as ort
        version = latest_version(model_dir)
        self.kind = "stateful" if self.cfg.backend == "stateful" else "onnx"
        file = "model.onnx"
        if self.kind == "stateful":
            file = self.cfg.parameters["onnx_file_name"].string_value
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(
            os.path.join(version, file), opts,
            providers=["CPUExecutionProvider"])
        self.onnx_inputs = {i.name: i for i in self.session.get_inputs()}
        if self.kind == "stateful":
            self.init_stateful()
        else:
            self.init_implicit()

    # -- Triton's implicit state -------------------------------------------

    def init_implicit(self):
        self.state_specs = []
        if not self.sequence:
            return
        for s in self.cfg.sequence_batching.state:
            dtype = type_name(s)
            dims = [1 if d < 0 else d for d in s.dims]
            value = np.zeros(dims, dtype=TYPES[dtype][0])
            if len(s.initial_state):
                init = s.initial_state[0]
                dims = list(init.dims)
                which = init.WhichOneof("state_data")
                if which == "data_file":
                    path = os.path.join(self.dir, "initial_state",
                                        init.data_file)
                    with open(path, "rb") as f:
                        raw = f.read()
                    n = int(np.prod(dims))
                    if dtype == "STRING":
                        items = b64_elements(base64.b64encode(raw), dtype)
                        value = np.array(items[:n], dtype=object)
                    else:
                        value = np.frombuffer(
                            raw, dtype=np.dtype(TYPES[dtype][0])
                            .newbyteorder("<"), count=n).astype(
                                TYPES[dtype][0])
                    value = value.reshape(dims)
                else:
                    value = np.zeros(dims, dtype=TYPES[dtype][0])
            if self.mbs > 0:
                value = value.reshape([1] + list(value.shape))
            self.state_specs.append((s.input_name, s.output_name, value))

    # -- the stateful backend ------------------------------------------------

    def init_stateful(self):
        text = self.cfg.parameters["state_pairs"].string_value
        pairs = []
        pos = text.find("<<<")
        while pos >= 0:
            comma = text.find(",", pos)
            close = text.find(">>>", comma)
            pairs.append((text[pos + 3:comma].strip(),
                          text[comma + 1:close].strip()))
            pos = text.find("<<<", close)
        self.pairs = pairs
        start_names = [ci.name for ci in self.cfg.sequence_batching.control_input
                       for c in ci.control[:1]
                       if enum_name(c, "kind") == "CONTROL_SEQUENCE_START"]
        lower = {n.lower(): n for n in self.onnx_inputs}
        self.reset_name = lower[start_names[0].lower()]
        self.state_shapes = {}
        for si, _ in pairs:
            shape = self.onnx_inputs[si].shape
            dyn = [i for i, d in enumerate(shape) if not isinstance(d, int)]
            self.state_shapes[si] = [1 if i == dyn[-1] else d
                                     for i, d in enumerate(shape)]
        param = self.cfg.parameters.get("infer_end_requests")
        self.infer_end = param is None or param.string_value != "0"

    # -- running one request -------------------------------------------------

    def admit(self, req):
        """Triton's sequence batcher admission (docs/spec/schedulers.md
        §3.2)."""
        if not self.sequence:
            return
        batch = 1
        for v in req["tensors"].values():
            if self.mbs > 0:
                batch = max(batch, v.shape[0])
        if batch > 1:
            raise RequestError(
                f"inference request to model '{self.name}' must specify "
                "batch-size 1 due to requirements of sequence batcher")
        sid = req.get("sequence_id")
        if sid is None or sid == 0 or sid == "":
            raise RequestError(
                f"inference request to model '{self.name}' must specify a "
                "non-zero or non-empty correlation ID")
        key = (type(sid).__name__, sid)
        if not req.get("start") and key not in self.live:
            raise RequestError(
                f"inference request for sequence {sid} to model "
                f"'{self.name}' must specify the START flag on the first "
                "request of the sequence")
        self.live.add(key)

    def infer(self, req):
        """Outputs {name: array} of one request, in config order."""
        tensors = req["tensors"]
        if self.mbs > 0:
            for v in tensors.values():
                if v.shape[0] > self.mbs:
                    raise RequestError(
                        "inference request batch-size must be <= "
                        f"{self.mbs} for '{self.name}'")
        self.admit(req)
        sid = req.get("sequence_id")
        key = (type(sid).__name__, sid)
        try:
            if self.kind == "ensemble":
                return self.infer_ensemble(req)
            if self.kind == "stateful":
                return self.infer_stateful(req, key)
            return self.infer_onnx(req, key)
        finally:
            if self.sequence and req.get("end"):
                self.live.discard(key)
                self.states.pop(key, None)

    def outputs_of(self, results):
        return {name: results[name] for name, _ in self.outputs}

    def infer_onnx(self, req, key):
        feeds = dict(req["tensors"])
        if self.sequence:
            sid = req.get("sequence_id")
            feeds.update(control_values(self.cfg, bool(req.get("start")),
                                        bool(req.get("end")), True, sid,
                                        self.mbs > 0))
            if req.get("start") or key not in self.states:
                self.states[key] = {si: v for si, _, v in self.state_specs}
            feeds.update(self.states[key])
        for name in list(feeds):
            want = ORT_TYPES.get(self.onnx_inputs[name].type) \
                if name in self.onnx_inputs else None
            if want is not None and want is not np.object_:
                feeds[name] = feeds[name].astype(want)
        names = [o.name for o in self.session.get_outputs()]
        results = dict(zip(names, self.session.run(None, feeds)))
        if self.sequence:
            self.states[key] = {si: results[so]
                                for si, so, _ in self.state_specs}
        return self.outputs_of(results)

    def infer_stateful(self, req, key):
        if req.get("end") and not self.infer_end:
            out = {}
            for name, dtype in self.outputs:
                rank = len(self.output_dims(name))
                shape = [1] * rank if self.triton_shapes else [1] * (rank + 1)
                out[name] = np.zeros(shape, dtype=TYPES[dtype][0])
            return out
        lower = {n.lower(): n for n in self.onnx_inputs}
        feeds = {}
        for name, v in req["tensors"].items():
            feeds[lower[name.lower()]] = v.reshape(v.shape[1:])
        feeds[self.reset_name] = np.full(
            [1] + list(self.onnx_inputs[self.reset_name].shape[1:]),
            bool(req.get("start")), dtype=np.bool_)
        if req.get("start") or key not in self.states:
            self.states[key] = {
                si: np.zeros(self.state_shapes[si],
                             ORT_TYPES[self.onnx_inputs[si].type])
                for si, _ in self.pairs}
        feeds.update(self.states[key])
        names = [o.name for o in self.session.get_outputs()]
        results = dict(zip(names, self.session.run(None, feeds)))
        self.states[key] = {si: results[so] for si, so in self.pairs}
        by_lower = {n.lower(): v for n, v in results.items()}
        out = {}
        for name, _ in self.outputs:
            v = by_lower[name.lower()]
            out[name] = v if self.triton_shapes else v.reshape(
                [1] + list(v.shape))
        return out

    def output_dims(self, output_name):
        for o in self.cfg.output:
            if o.name == output_name:
                return list(o.dims)
        return []

    def infer_ensemble(self, req):
        tensors = dict(req["tensors"])
        pending = list(self.steps)
        while pending:
            for i, (model, imap, omap) in enumerate(pending):
                if all(t in tensors for t in imap.values()):
                    sub = dict(req)
                    sub["tensors"] = {k: tensors[v] for k, v in imap.items()}
                    results = model.infer(sub)
                    for k, v in omap.items():
                        tensors[v] = results[k]
                    del pending[i]
                    break
            else:
                raise RequestError("ensemble steps cannot run: missing "
                                   "tensors")
        return self.outputs_of(tensors)


# ------------------------------------------------------------ the output

def json_value(v, dtype_name):
    if dtype_name == "STRING":
        b = v.encode() if isinstance(v, str) else bytes(v)
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError:
            return {"b64": base64.b64encode(b).decode()}
    if dtype_name == "BOOL":
        return bool(v)
    if dtype_name in ("FP16", "FP32", "FP64"):
        f = float(v)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        if dtype_name == "FP64":
            return f
        # The shortest decimal that reads back as the same float32.
        return float(str(np.float32(f)))
    return int(v)


def response(req, model, outputs):
    out = {}
    for name, dtype in model.outputs:
        v = np.asarray(outputs[name])
        out[name] = {"datatype": TYPES[dtype][1],
                     "shape": [int(d) for d in v.shape],
                     "data": [json_value(x, dtype) for x in v.reshape(-1)]}
    return out


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    flags = {a for a in argv if a.startswith("--")}
    unknown = flags - {"--sequence", "--triton-shapes"}
    if len(args) != 2 or unknown:
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        return 2
    model = Model(args[0], triton_shapes="--triton-shapes" in flags)
    for req in read_requests(args[1], "--sequence" in flags):
        line = {"id": req["id"], "sequence_id": req.get("sequence_id")}
        try:
            req["tensors"] = {name: to_array(value, model.inputs[name],
                                             model.mbs)
                              for name, value in
                              (req.get("inputs") or {}).items()}
            outputs = model.infer(req)
            line["status"] = "ok"
            line["outputs"] = response(req, model, outputs)
        except RequestError as e:
            line["status"] = "error"
            line["error"] = str(e)
        print(json.dumps(line))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
