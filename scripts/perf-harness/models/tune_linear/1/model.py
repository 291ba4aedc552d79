# A python-backend model whose execution takes a + b * batch milliseconds,
# batch being the rows of all the requests Triton hands it at once; a and
# b are its config's parameters a_ms and b_ms. It sleeps until that time
# after the start of execute, so its own work is inside the time. The
# output is the input (handed over through DLPack, as the identity model
# does).

import json
import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        params = json.loads(args["model_config"]).get("parameters", {})
        self.a = float(params["a_ms"]["string_value"]) / 1000.0
        self.b = float(params["b_ms"]["string_value"]) / 1000.0

    def execute(self, requests):
        start = time.monotonic()
        tensors = [pb_utils.get_input_tensor_by_name(r, "INPUT0") for r in requests]
        batch = sum(t.shape()[0] for t in tensors)
        rest = start + self.a + self.b * batch - time.monotonic()
        if rest > 0:
            time.sleep(rest)
        return [
            pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor.from_dlpack("OUTPUT0", t.to_dlpack())]
            )
            for t in tensors
        ]
