"""onnxruntime (Python) side of bench/small_onnx/run.sh, for machines without node (the GPU
machine's image has onnxruntime 1.30 for Python):

    python3 ort_time.py MODEL.onnx INPUT.npy THREADS ITERATIONS PROVIDER

PROVIDER is `cpu` or `cuda`. Prints "median_ms=<t>": the median wall time of one
`InferenceSession.run` over ITERATIONS calls after 10 warm-up calls (the output copied back to
the host, as Hexir's call ends with its result on the host), THREADS intra-op threads and one
inter-op thread. Exits 3 with a line on stderr when the provider is not available here."""
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort

_PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}


def main(model, input_path, threads, iterations, provider):
    name = _PROVIDERS[provider]
    if name not in ort.get_available_providers():
        print(f"ort_time: {name} not available (have {ort.get_available_providers()})", file=sys.stderr)
        return 3
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model, options, providers=[name])
    if session.get_providers()[0] != name:
        print(f"ort_time: session fell back to {session.get_providers()}", file=sys.stderr)
        return 3
    feed = {session.get_inputs()[0].name: np.load(input_path)}
    times = []
    for i in range(10 + iterations):
        start = time.perf_counter()
        session.run(None, feed)
        if i >= 10:
            times.append(time.perf_counter() - start)
    print(f"median_ms={statistics.median(times) * 1e3:.4f}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 6 or sys.argv[5] not in _PROVIDERS:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]))
