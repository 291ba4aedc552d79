# Reference model for scripts/triton-fidelity (Triton python backend).
#
# Every execute() call appends one JSON line to a log, then sleeps a fixed
# time and answers every request with its own RID input (so the client can
# check that the model really ran on its data). The log line tells how
# Triton's scheduler formed the batch:
#   {"instance": "<model>_0_1", "t0": <wall time at the start, s>,
#    "rows": [{"rid": [<RID of each batch row>], "start": 0|1|null,
#              "end": .., "ready": .., "corrid": ..}, ...]}
# with one entry in "rows" per request, in the order Triton passed them (for
# Direct sequence batching: slot order, padding slots included with READY
# 0); control inputs the request does not carry are null (warm-up calls).
# The line is written before the sleep, so it is in the log before any
# response of the batch reaches a client.
#
# Environment (inherited from the server):
#   FIDELITY_LOG_DIR   directory of the logs, one <model name>.jsonl per model
#   FIDELITY_SLEEP_MS  sleep per batch (default 300, as in cases.json)

import json
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils

CONTROLS = ("START", "END", "READY", "CORRID")


def scalar(request, name):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    if tensor is None:
        return None
    values = tensor.as_numpy().reshape(-1)
    if values.size == 0:
        return None
    return int(values[0])


class TritonPythonModel:
    def initialize(self, args):
        self.instance = args["model_instance_name"]
        self.model = args["model_name"]
        log_dir = os.environ.get("FIDELITY_LOG_DIR") or "."
        self.log_path = os.path.join(log_dir, self.model + ".jsonl")
        self.sleep_s = float(os.environ.get("FIDELITY_SLEEP_MS", "300")) / 1e3

    def execute(self, requests):
        t0 = time.time()
        rows = []
        outputs = []
        for request in requests:
            rid = pb_utils.get_input_tensor_by_name(request, "RID")
            rid = rid.as_numpy() if rid is not None else np.zeros((1, 1))
            row = {"rid": [int(v) for v in rid.reshape(-1)]}
            for name in CONTROLS:
                row[name.lower()] = scalar(request, name)
            rows.append(row)
            outputs.append(rid.astype(np.int64))
        line = {"instance": self.instance, "t0": t0, "rows": rows}
        with open(self.log_path, "a") as fh:
            fh.write(json.dumps(line) + "\n")
        time.sleep(self.sleep_s)
        responses = []
        for out in outputs:
            responses.append(pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor("OUT", out)]))
        return responses

    def finalize(self):
        pass
