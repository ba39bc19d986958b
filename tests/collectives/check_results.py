"""Checks collectives.mlir.in's results on every rank (collectives_mpi_test.sh).

Reads `mpirun --tag-output` lines ("[1,R]<stdout>:RESULT") from stdin; argv: N and the input x
(4 numbers), and --rank0-only when only rank 0 printed (hexir-run driving N devices in one
process). Expected values are computed here from the collectives' definitions."""
import math
import re
import sys

args = [a for a in sys.argv[1:] if not a.startswith("--")]
n = int(args[0])
x = [float(v) for v in args[1:5]]
ranks = [0] if "--rank0-only" in sys.argv else list(range(n))
by_rank = {}
for line in sys.stdin:
    m = re.match(r"\[\d+,(\d+)\]<stdout>:(.*)", line.rstrip("\n"))
    if m:
        by_rank.setdefault(int(m.group(1)), []).append(m.group(2))


def values(text):
    return [float(v) for v in text.split("=", 1)[1].split()]


def mine(r):
    return [v * (r + 1) for v in x]


failures = 0
if sorted(by_rank) != ranks:
    print(f"FAIL: results from ranks {sorted(by_rank)}, expected {ranks}")
    sys.exit(1)
for r in ranks:
    out = by_rank[r]
    expected = [
        [r],
        [n],
        [sum(mine(q)[i] for q in range(n)) for i in range(4)],
        [max(mine(q)[i] for q in range(n)) for i in range(4)],
        [min(mine(q)[i] for q in range(n)) for i in range(4)],
        [math.prod(mine(q)[i] for q in range(n)) for i in range(4)],
        [v for q in range(n) for v in mine(q)],
        [sum(100 * q + 4 * r + j for q in range(n)) for j in range(4)],
        mine(1),
        mine((r - 1) % n),
        [sum(q + i for q in range(n)) for i in range(4)],
        [sum(mine(q)[i] for q in range(n)) for i in range(4)],
        [sum(mine(q)[i] for q in range(n)) for i in range(2)],
    ]
    names = ["rank", "count", "all_reduce sum", "all_reduce max", "all_reduce min",
             "all_reduce prod", "all_gather", "reduce_scatter sum", "broadcast root 1",
             "send/recv ring", "all_reduce sum i32", "dynamic all_reduce (4)",
             "dynamic all_reduce (2)"]
    if len(out) != len(expected):
        print(f"FAIL: rank {r}: {len(out)} results, expected {len(expected)}: {out}")
        failures += 1
        continue
    for name, got, want in zip(names, out, expected):
        if values(got) != [float(w) for w in want]:
            print(f"FAIL: rank {r} of {n}: {name}: got '{got}', expected {want}")
            failures += 1
    if failures == 0:
        print(f"ok: rank {r} of {n}: {len(names)} results equal the expected values")
sys.exit(1 if failures else 0)
