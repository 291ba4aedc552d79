"""An MLServer custom runtime that answers every request with its inputs,
renamed to the outputs declared in model-settings.json (INPUT<i> comes back
as the i-th declared output). For scripts/mlserver/run."""

from mlserver import MLModel
from mlserver.types import InferenceRequest, InferenceResponse, ResponseOutput


class EchoRuntime(MLModel):
    async def load(self) -> bool:
        self._outputs = [o.name for o in (self.settings.outputs or [])]
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        outputs = []
        for i, inp in enumerate(payload.inputs):
            name = self._outputs[i] if i < len(self._outputs) else inp.name
            outputs.append(
                ResponseOutput(name=name, shape=inp.shape, datatype=inp.datatype, data=inp.data)
            )
        return InferenceResponse(model_name=self.name, id=payload.id, outputs=outputs)
