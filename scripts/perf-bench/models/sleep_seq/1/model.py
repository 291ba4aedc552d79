# Identity model with a fixed cost per batch (scripts/perf-bench): every
# execute call sleeps `sleep_ms` (a config parameter) once, whatever the
# number of requests it got, then returns each input as OUTPUT0. The output
# goes through DLPack (a numpy-built tensor can come back with the wrong
# size in this Triton build with numpy 2, see the reference harness notes).

import json
import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        ms = config.get("parameters", {}).get("sleep_ms", {}).get("string_value", "5")
        self.sleep_s = float(ms) / 1000.0

    def execute(self, requests):
        time.sleep(self.sleep_s)
        responses = []
        for request in requests:
            tensor = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            out = pb_utils.Tensor.from_dlpack("OUTPUT0", tensor.to_dlpack())
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
