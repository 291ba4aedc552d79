# Identity model for scripts/perf-harness/run (Triton python backend).
# The output is handed over through DLPack: with this Triton build, a
# tensor made from a numpy array can come back with the wrong size when
# the stub's python has numpy 2 (see the reference harness notes).

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            tensor = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            out = pb_utils.Tensor.from_dlpack("OUTPUT0", tensor.to_dlpack())
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
