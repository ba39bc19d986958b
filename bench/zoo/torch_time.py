"""PyTorch eager side of bench/zoo/run.sh: times one zoo model (tests/onnx/zoo_models.py, the
same construction and seed as its ONNX export) on one input.

    python3 torch_time.py MODEL THREADS ITERATIONS INPUT.npy

prints "median_ms=<t>": the median wall time of ITERATIONS forward calls under
torch.no_grad() after 3 warm-up calls, with THREADS intra-op threads and one inter-op thread
(as ort_reference.js's `time` mode)."""
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "onnx"))
import zoo_models  # noqa: E402


def main(name, threads, iterations, input_path):
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    model = zoo_models.build(name)
    x = torch.from_numpy(np.load(input_path))
    times = []
    with torch.no_grad():
        for i in range(3 + iterations):
            start = time.perf_counter()
            model(x)
            if i >= 3:
                times.append((time.perf_counter() - start) * 1e3)
    print("median_ms=%.3f" % float(np.median(times)))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
