# Identity model behind the sequence batcher, for scripts/perf-harness/run,
# that also checks the sequence protocol (Triton python backend).
#
# Triton hands the model the sequence id (CORRID) and the START and END
# flags of every request. The model keeps the set of live sequences and
# answers with an error when a request breaks the rules a load generator
# must follow:
#   - START for an id that is still live (a sequence restarted without END,
#     or two sequences sharing an id);
#   - a request without START for an id that is not live (a step sent before
#     its START, or after its END: steps out of order);
# so a run with zero errors shows the steps of every sequence arrived in
# order with correct flags. Requests without an id (warmup) are not checked.
#
# The output is handed over through DLPack: with this Triton build, a
# tensor made from a numpy array can come back with the wrong size when
# the stub's python has numpy 2 (see the reference harness notes).

import triton_python_backend_utils as pb_utils


def _flag(request, name):
    t = pb_utils.get_input_tensor_by_name(request, name)
    if t is None:
        return None
    return bool(t.as_numpy().reshape(-1)[0] != 0)


def _corrid(request):
    t = pb_utils.get_input_tensor_by_name(request, "CORRID")
    if t is None:
        return 0
    return int(t.as_numpy().reshape(-1)[0])


class TritonPythonModel:
    def initialize(self, args):
        # sequence id -> steps seen so far
        self.live = {}

    def check(self, request):
        cid = _corrid(request)
        start, end = _flag(request, "START"), _flag(request, "END")
        if cid == 0 or start is None or end is None:
            return None
        if start:
            if cid in self.live:
                return (f"sequence {cid}: START while the sequence is live "
                        f"({self.live[cid]} steps in)")
            self.live[cid] = 0
        elif cid not in self.live:
            return f"sequence {cid}: a step without START for an unknown sequence (out of order?)"
        self.live[cid] += 1
        if end:
            del self.live[cid]
        return None

    def execute(self, requests):
        responses = []
        for request in requests:
            problem = self.check(request)
            if problem is not None:
                responses.append(pb_utils.InferenceResponse(
                    output_tensors=[], error=pb_utils.TritonError(problem)))
                continue
            tensor = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            out = pb_utils.Tensor.from_dlpack("OUTPUT0", tensor.to_dlpack())
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
