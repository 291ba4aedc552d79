"""Turns encoded images into normalized 3x224x224 float tensors."""

import io

import numpy as np
import triton_python_backend_utils as pb_utils
from PIL import Image

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32).reshape(3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32).reshape(3, 1, 1)


def to_pixels(encoded):
    image = Image.open(io.BytesIO(encoded.tobytes())).convert("RGB").resize((224, 224))
    chw = np.asarray(image, dtype=np.float32).transpose(2, 0, 1) / 255.0
    return (chw - MEAN) / STD


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            batch = pb_utils.get_input_tensor_by_name(request, "RAW_IMAGE").as_numpy()
            pixels = np.stack([to_pixels(row) for row in batch]).astype(np.float32)
            out = pb_utils.Tensor("PIXELS", pixels)
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
