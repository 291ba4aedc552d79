# Calls the stateful tracker the right way: no finding.
import triton_python_backend_utils as pb_utils

TRACKER = "tracker"


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for i, request in enumerate(requests):
            x = pb_utils.get_input_tensor_by_name(request, "X")
            flags = pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START if i == 0 else 0
            if i == len(requests) - 1:
                flags |= pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END
            out = pb_utils.InferenceRequest(
                model_name=TRACKER,
                inputs=[x],
                requested_output_names=["STATE"],
                correlation_id=42,
                flags=flags,
            ).exec()
            responses.append(pb_utils.InferenceResponse(output_tensors=out.output_tensors()))
        return responses
