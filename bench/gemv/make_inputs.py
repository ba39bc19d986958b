"""Writes the random inputs of checks.mlir's and column_checks.mlir's functions into DIR and
prints, per check of checks.mlir, `function input...` lines (hexir-run --input=@...
arguments) for run.sh; column_checks.mlir's lines go to DIR/column_checks.txt, with f64
references of their results (plain loops over the inputs as stored) in DIR/ref/<fn>.npy."""
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


def stored(path):
    return npy.read(path[1:])[2]


def gemv_ref(x, w, rows, k, n):
    """y[r][j] = sum_k x[r][k] w[k][j] in f64 (w stored [K][N])."""
    y = [0.0] * (rows * n)
    for r in range(rows):
        for kk in range(k):
            a = x[r * k + kk]
            if a == 0:
                continue
            row = w[kk * n:(kk + 1) * n]
            base = r * n
            for j in range(n):
                y[base + j] += a * row[j]
    return y


os.makedirs(os.path.join(out, "ref"), exist_ok=True)
column = {}
refs = {}
x, w = arr("cx1031", (1, 1031), "f2"), arr("cw1031", (1031, 257), "f2")
column["col_f16_prime"] = [x, w]
refs["col_f16_prime"] = ((1, 257), "f4", gemv_ref(stored(x), stored(w), 1, 1031, 257))
a, w = arr("ca3", (3, 1000), "f4"), arr("cw516", (1000, 516), "f4")
column["col_f32_rows3"] = [a, w]
refs["col_f32_rows3"] = ((3, 516), "f4", gemv_ref(stored(a), stored(w), 3, 1000, 516))
x, w, r = arr("cx2048", (1, 2048), "f2"), arr("cw1000", (2048, 1000), "f2"), arr("cr1000", (1, 1000), "f4")
column["col_residual"] = [x, w, r]
refs["col_residual"] = ((1, 1000), "f4",
                        [p + q for p, q in zip(gemv_ref(stored(x), stored(w), 1, 2048, 1000), stored(r))])
x, w = arr("cxdyn", (1003,), "f4"), arr("cwdyn", (1003, 300), "f4")
column["col_dynamic_k"] = [x, w]
refs["col_dynamic_k"] = ((300,), "f4", gemv_ref(stored(x), stored(w), 1, 1003, 300))
m = arr("cisum", (1000, 77), "i4", -1000, 1000)
column["col_isum"] = [m]
refs["col_isum"] = ((77,), "i4", [int(v) for v in gemv_ref([1.0] * 1000, stored(m), 1, 1000, 77)])
w, x = arr("rw256", (256, 2048), "f2"), arr("rx2048", (2048,), "f4")
column["rows_f16_256"] = [w, x]
wv, xv = stored(w), stored(x)
refs["rows_f16_256"] = ((256,), "f4",
                        [sum(wv[i * 2048 + k] * xv[k] for k in range(2048)) for i in range(256)])
with open(os.path.join(out, "column_checks.txt"), "w") as f:
    for fn, ins in column.items():
        f.write(fn + " " + " ".join(ins) + "\n")
for fn, (shape, dtype, vals) in refs.items():
    npy.write(os.path.join(out, "ref", fn + ".npy"), shape, dtype, vals)
