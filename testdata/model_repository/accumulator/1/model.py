"""Keeps a running sum per sequence (identified by its correlation id)."""

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.sums = {}

    def execute(self, requests):
        responses = []
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "INPUT").as_numpy()
            start = pb_utils.get_input_tensor_by_name(request, "START").as_numpy()
            corrid = int(pb_utils.get_input_tensor_by_name(request, "CORRID").as_numpy().flat[0])
            if start.flat[0]:
                self.sums[corrid] = 0
            self.sums[corrid] = self.sums.get(corrid, 0) + int(value.flat[0])
            out = np.full(value.shape, self.sums[corrid], dtype=np.int32)
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUTPUT", out)]))
        return responses
