"""Writes the random inputs of checks.mlir's functions into DIR and prints, per check,
`function input...` lines (hexir-run --input=@... arguments) for check.sh."""
import os
import random
import sys

import npy

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = random.Random(7)


def arr(name, shape, dtype, lo=-1.0, hi=1.0):
    n = 1
    for d in shape:
        n *= d
    if dtype in ("i4", "i8"):
        vals = [rng.randint(int(lo), int(hi)) for _ in range(n)]
    else:
        vals = [rng.uniform(lo, hi) for _ in range(n)]
    path = os.path.join(out, name + ".npy")
    npy.write(path, shape, dtype, vals)
    return "@" + path


checks = {
    "mv_f16_k1004": [arr("w1004", (300, 1004), "f2"), arr("x1004", (1004,), "f4")],
    "mv_f32_k770": [arr("w770", (129, 770), "f4"), arr("x770", (770,), "f4")],
    "mv_f32_k773": [arr("w773", (64, 773), "f4"), arr("x773", (773,), "f4")],
    "mv_f32_768": [arr("w768", (768, 768), "f4"), arr("x768", (768,), "f4")],
    "mv_residual": [arr("wres", (768, 2048), "f2"), arr("x2048", (2048,), "f4"), arr("r768", (768,), "f4")],
    "rmsnorm": [arr("xn", (768,), "f4"), arr("gn", (768,), "f2", 0.5, 1.5)],
    "dynmax": [arr("m1001", (1001,), "f4", -100, 100)],
    "dynmax ": [arr("m77", (77,), "f4", -100, 100)],
    "mv_dynamic_k": [arr("wdyn", (100, 1003), "f4"), arr("xdyn", (1003,), "f4")],
    "isum": [arr("isum", (40, 1000), "i4", -1000, 1000)],
    "expsum": [arr("exps", (16, 512), "f4")],
    "argmax": [arr("logits", (32000,), "f4", -10, 10)],
    "argmax ": [arr("ties", (32000,), "i4", -3, 3)],  # rewritten as f32 below: many tied maxima
    "softmax_num": [arr("s300", (12, 1, 300), "f4", -20, 20)],
    "softmax_num ": [arr("s77", (12, 1, 77), "f4", -20, 20)],
    "scores": [arr("cache", (256, 768), "f4"), arr("q", (12, 1, 64), "f4")],
    "norm_matvec": [arr("xnm", (768,), "f4"), arr("gnm", (768,), "f2", 0.5, 1.5), arr("wnm", (1000, 768), "f2")],
}
shape, _, vals = npy.read(os.path.join(out, "ties.npy"))
npy.write(os.path.join(out, "ties.npy"), shape, "f4", [float(v) for v in vals])
for fn, ins in checks.items():
    print(fn.strip(), " ".join(ins))
