# A BLS model with one correct call and three wrong ones.
import triton_python_backend_utils as pb_utils

ENCODER = "encoder"
NOTE = "pb_utils.InferenceRequest(model_name='not_a_call')"


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            text = pb_utils.get_input_tensor_by_name(request, "TEXT")
            # Correct: the encoder exists and is stateless.
            encoded = pb_utils.InferenceRequest(
                model_name=ENCODER,
                requested_output_names=["EMBEDDING"],
                inputs=[text],
            ).exec()
            # Wrong: there is no model "tokenizer" (a typo, or not deployed).
            tokens = pb_utils.InferenceRequest(model_name="tokenizer", requested_output_names=["IDS"], inputs=[text]).exec()
            # Wrong: "tracker" uses sequence_batching, but the request
            # carries neither a correlation ID nor sequence flags.
            state = pb_utils.InferenceRequest(
                model_name="tracker",
                inputs=[pb_utils.Tensor("X", f(")", "("))],  # parentheses in strings
                requested_output_names=["STATE"],
            ).exec()
            # Wrong: the model calls itself.
            again = pb_utils.InferenceRequest(
                model_name='pipeline', requested_output_names=["EMBEDDING"], inputs=[text]
            )
            responses.append(pb_utils.InferenceResponse(output_tensors=encoded.output_tensors()))
        return responses
