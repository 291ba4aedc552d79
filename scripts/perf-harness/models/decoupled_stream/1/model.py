# Decoupled model for scripts/perf-harness/run (Triton python backend): a
# known number of responses at known times, for checking what
# `tritonctl perf` measures on a streaming model. Each request runs on its
# own thread (execute returns at once), so that concurrent requests do not
# queue behind each other; the responses follow a fixed schedule from the
# moment the request reached the model (first after first_ms, then every
# gap_ms), so late wake-ups do not add up. A request the client cancels
# (its stream reset, its connection closed) stops at the next response and
# is noted in PERF_HARNESS_CANCEL_LOG when that is set.

import json
import os
import threading
import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        params = json.loads(args["model_config"])["parameters"]
        self.responses = int(params["responses"]["string_value"])
        self.first = float(params["first_ms"]["string_value"]) / 1000
        self.gap = float(params["gap_ms"]["string_value"]) / 1000
        self.cancel_log = os.environ.get("PERF_HARNESS_CANCEL_LOG")
        self.lock = threading.Lock()

    def execute(self, requests):
        for request in requests:
            threading.Thread(
                target=self.stream, args=(request, time.monotonic()), daemon=True
            ).start()
        return None

    def stream(self, request, start):
        sender = request.get_response_sender()
        try:
            data = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy().copy()
            for i in range(self.responses):
                wait = start + self.first + i * self.gap - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                if request.is_cancelled():
                    self.cancelled(i)
                    break
                # the harness runs the stub with numpy 1 (numpy 2 breaks
                # tensors made from arrays, see the reference harness notes;
                # DLPack from a numpy 1 array is refused by this build)
                out = pb_utils.Tensor("OUTPUT0", data)
                sender.send(pb_utils.InferenceResponse(output_tensors=[out]))
        except Exception as e:  # noqa: BLE001 - the client must see it
            sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(e))))
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    def cancelled(self, sent):
        if self.cancel_log:
            with self.lock, open(self.cancel_log, "a") as f:
                f.write(f"cancelled after {sent} responses\n")
