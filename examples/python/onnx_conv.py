#!/usr/bin/env python3
"""Import an ONNX model, compile it, run it and check it against PyTorch (or NumPy).

    PYTHONPATH=bazel-bin/python/package python3 examples/python/onnx_conv.py [MODEL.onnx]

The default model is the ONNX backend test `test_conv_with_strides_padding` from Debian's
libonnx-testdata: one Conv (1x1x7x5 input, 1x1x3x3 kernel, strides 2, pads 1) whose input and
weight are graph inputs. Prints each step and the largest difference; exit 1 if it is > 1e-5.
"""
import sys

import numpy as np

import hexir

MODEL = "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/model.onnx"


def reference(x, w):
    """Conv2d with strides 2 and padding 1: torch.nn.functional.conv2d, else NumPy loops."""
    try:
        import torch
        return torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=2, padding=1).numpy()
    except ImportError:
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        kh, kw = w.shape[2:]
        oh, ow = (xp.shape[2] - kh) // 2 + 1, (xp.shape[3] - kw) // 2 + 1
        y = np.zeros((x.shape[0], w.shape[0], oh, ow), np.float32)
        for i in range(oh):
            for j in range(ow):
                patch = xp[:, :, 2 * i:2 * i + kh, 2 * j:2 * j + kw]
                y[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
        return y


def main(path):
    # 1. ONNX -> MLIR text (the importer hexir-import uses)
    mlir = hexir.import_model(path)
    print(f"imported {path}: {len(mlir.splitlines())} lines of MLIR")

    # 2. MLIR -> .vmfb bytes (the pipeline hexir-compile uses)
    vmfb = hexir.compile(mlir, targets=["cpu"])
    print(f"compiled: {len(vmfb)} bytes")

    # 3. load on the CPU and call with NumPy arrays
    module = hexir.load(vmfb, devices=["cpu"])
    print(f"loaded: {module.main.signature}")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 1, 7, 5)).astype(np.float32)
    w = rng.standard_normal((1, 1, 3, 3)).astype(np.float32)
    y = module.main(x, w)  # a hexir.Tensor; numpy() waits for the device and copies
    print(f"result: {y}")

    # 4. compare with the reference
    error = float(np.max(np.abs(y.numpy() - reference(x, w))))
    print(f"max |hexir - reference| = {error:.3g}")
    return 0 if error <= 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else MODEL))
