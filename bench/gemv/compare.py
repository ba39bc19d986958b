"""compare.py A.npy B.npy [rtol]: exits 1 unless A and B (same shape and type) agree:
integers exactly, floats within rtol (default 1e-4) of the largest magnitude in B."""
import sys

import npy

sa, ta, a = npy.read(sys.argv[1])
sb, tb, b = npy.read(sys.argv[2])
rtol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-4
if sa != sb or ta != tb:
    print("MISMATCH shape/type", sa, ta, sb, tb)
    sys.exit(1)
scale = max([abs(v) for v in b] + [1e-30])
err = max([abs(x - y) for x, y in zip(a, b)] + [0.0])
ok = err == 0 if ta.startswith("i") else err <= rtol * scale
print("%s max|diff| %.3g (scale %.3g, %d values)" % ("ok" if ok else "MISMATCH", err, scale, len(a)))
sys.exit(0 if ok else 1)
