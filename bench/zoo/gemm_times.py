#!/usr/bin/env python3
"""Steadier GEMM figures for a loaded machine: Hexir and OpenBLAS in one run, each as
  least time: the least per-dispatch device time over the profiled calls (hexir-bench --trace),
      summed over the call's dispatches; OpenBLAS: the least wall time of one sgemm;
  CPU time: user + sys per call, all threads together (Hexir: hexir-bench at 2 and 2 + X
      iterations, each a timed and a profiled call, the difference over the 2X extra calls, X
      about 0.7 GFLOP of calls; OpenBLAS: time.process_time).
Wall medians swing 2-5x with other processes on the cores; a least time needs one quiet
moment as long as a call, and CPU time counts no waiting (but counts spinning workers).

  gemm_times.py BENCH MODULE.vmfb N THREADS [ROUNDS]
BENCH: hexir-bench; MODULE: bench/gemm.mlir.in at M = N = K = N, f32; THREADS: 1 (the calling
thread, --cpu-threads=0) or the worker count, OpenBLAS on as many (OPENBLAS_NUM_THREADS).
Prints one line: least ms and CPU ms per call of each, Hexir/OpenBLAS ratios of both.
"""
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time


def hexir_run(bench, module, n, threads, iterations, trace=None):
    """CPU seconds (user + sys) of one hexir-bench run."""
    args = [bench, f"--module={module}", "--device=cpu", f"--cpu-threads={0 if threads == 1 else threads}",
            f"--iterations={iterations}", "--no-baselines", "--peak-gbps=1", "--peak-gflops=1",
            f"--input={n}x{n}xf32=0.01",
            f"--input={n}x{n}xf32=0.01"] + ([f"--trace={trace}"] if trace else [])
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit(f"gemm_times.py: {' '.join(args)} failed ({status})")
    return usage.ru_utime + usage.ru_stime


def least_dispatch_ms(trace):
    """Sum over dispatch names of the least duration (ms) in a hexir-bench trace."""
    least = {}
    for e in json.load(open(trace))["traceEvents"]:
        if e.get("ph") == "X" and e.get("pid") == 2:
            least[e["name"]] = min(least.get(e["name"], float("inf")), e["dur"])
    return sum(least.values()) / 1000


def openblas_ms(n, threads, calls=20):
    """(least wall ms, least CPU ms) of cblas_sgemm n^3 (ctypes; threads via the environment)."""
    lib = ctypes.CDLL("libopenblas.so.0")
    f = ctypes.c_float
    lib.cblas_sgemm.argtypes = [ctypes.c_int] * 6 + [f, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                                                     ctypes.c_int, f, ctypes.c_void_p, ctypes.c_int]
    a = (f * (n * n))(*([0.01] * (n * n)))
    b = (f * (n * n))(*([0.01] * (n * n)))
    c = (f * (n * n))()
    wall = cpu = float("inf")
    for _ in range(calls):
        # A short sleep first: the call then starts with a fresh time slice (a process that ran
        # without pause is preempted first on a loaded machine), as hexir-bench's calls do after
        # each wait.
        time.sleep(0.002)
        t0, w0 = time.process_time(), time.perf_counter()
        lib.cblas_sgemm(101, 111, 111, n, n, n, 1.0, a, n, b, n, 0.0, c, n)
        cpu, wall = min(cpu, time.process_time() - t0), min(wall, time.perf_counter() - w0)
    return wall * 1e3, cpu * 1e3


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    bench, module, n, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rounds = int(sys.argv[5]) if len(sys.argv) == 6 else 3
    extra = max(10, round(0.35e9 / n ** 3))  # iterations on top of 2 (each runs 2 calls)
    least, cpu = float("inf"), float("inf")
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.json")
        for _ in range(rounds):
            many = hexir_run(bench, module, n, threads, 2 + extra, trace)
            least = min(least, least_dispatch_ms(trace))
            cpu = min(cpu, (many - hexir_run(bench, module, n, threads, 2)) / (2 * extra) * 1e3)
    # OpenBLAS reads its thread count when it loads: a child process with the environment set.
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    out = subprocess.run([sys.executable, __file__, "--openblas", str(n), str(threads)], env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    blas_wall, blas_cpu = float(out[0]), float(out[1])
    gflop = 2 * n ** 3 / 1e9
    load = " ".join(open("/proc/loadavg").read().split()[:3])
    print(f"matmul f32 {n}^3 {threads}t: Hexir least {least:.2f} ms ({gflop / least * 1e3:.0f} GFLOP/s), "
          f"CPU {cpu:.2f} ms/call; OpenBLAS least {blas_wall:.2f} ms, CPU {blas_cpu:.2f} ms; "
          f"Hexir/OpenBLAS throughput {blas_wall / least:.2f}x (least), {blas_cpu / cpu:.2f}x (CPU); "
          f"load {load}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--openblas":
        print("%.3f %.3f" % openblas_ms(int(sys.argv[2]), int(sys.argv[3])))
    else:
        main()
