#!/usr/bin/env python3
"""The CUDA DLPack checks, shared by test_dlpack.py (pytest, compiling cuda_checks.mlir) and
the GPU machine, whose Python 3.12 runs them as a script on a precompiled module (it has no
libMLIR for hexir.compile; python/README.md "On the GPU machine"):

    PYTHONPATH=<package_py312> python3 python/tests/cuda_checks.py cuda_checks.cuda.vmfb

Prints "HEXIR_SKIPPED: ..." and exits 0 without torch or a CUDA device; exits 1 on a failed
check.
"""
import os
import sys

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda_checks.mlir")


def cuda_usable(hexir, torch):
    return torch.cuda.is_available() and any(d["driver"] == "cuda" for d in hexir.devices())


def check_torch_cuda_tensors_pass_both_ways_without_a_copy(hexir, torch, vmfb):
    m = hexir.load(vmfb, devices=["cuda:0"])
    x = torch.arange(8, dtype=torch.float32, device="cuda:0")
    y = m.same(x)  # the result is the argument's buffer: torch's memory, used in place
    assert y.__dlpack_device__() == (2, 0)
    assert y.data_ptr() == x.data_ptr()
    t = torch.from_dlpack(y)
    assert t.device == x.device and t.data_ptr() == x.data_ptr()
    assert torch.equal(t, x)
    z = hexir.from_dlpack(x)
    assert z.device.uri == "cuda:0" and z.data_ptr() == x.data_ptr()
    # Pending torch work on its stream is ordered before the call (DLPack's stream handshake);
    # the result, in memory Hexir allocated on the GPU, goes back to torch without a copy.
    w = torch.arange(8, dtype=torch.float32, device="cuda:0").mul_(3.0)
    d = m.double(w)
    assert d.__dlpack_device__() == (2, 0)
    r = torch.from_dlpack(d)
    assert r.device == w.device and r.data_ptr() == d.data_ptr()
    assert torch.equal(r, w * 2)


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    import hexir
    try:
        import torch
    except ImportError:
        print("HEXIR_SKIPPED: python3 has no torch")
        return 0
    if not cuda_usable(hexir, torch):
        print("HEXIR_SKIPPED: no CUDA device for torch and hexir")
        return 0
    with open(argv[1], "rb") as f:
        check_torch_cuda_tensors_pass_both_ways_without_a_copy(hexir, torch, f.read())
    print("cuda_checks: torch CUDA tensors pass both ways without a copy: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
