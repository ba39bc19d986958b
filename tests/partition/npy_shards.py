"""Inputs and checks for partition_mpi_test.sh, in plain Python (no NumPy on CI).

  npy_shards.py make DIR SEED N NAME:SHAPE[:SPLITDIM] ...
      writes DIR/NAME.npy (the whole tensor, f32, values from a seeded generator) and, for
      ranks 0..N-1, DIR/NAME.rR.npy (rank R's shard along SPLITDIM; the whole tensor when
      the argument is replicated)
  npy_shards.py compare REFERENCE.npy RESULT.npy...
      every result equals the reference within 1e-5 relative (|a - r| <= 1e-5 |r| + 1e-7)
  npy_shards.py compare-shards REFERENCE.npy DIM RESULT.npy...
      result R (of N given) equals rank R's shard of the reference along DIM, within 1e-5
"""
import random
import struct
import sys


def write_npy(path, shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % "".join(
        f"{d}, " for d in shape)
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack(f"<{len(values)}f", *values))


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    length = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + length].decode()
    if "'<f4'" not in header:
        raise SystemExit(f"{path}: expected f32, header {header}")
    shape = tuple(int(d) for d in header.split("(")[1].split(")")[0].split(",") if d.strip())
    count = 1
    for d in shape:
        count *= d
    return shape, list(struct.unpack(f"<{count}f", data[10 + length:10 + length + 4 * count]))


def shard(shape, values, dim, ranks, rank):
    """Rank `rank`'s part of dimension `dim` (row-major)."""
    outer = 1
    for d in shape[:dim]:
        outer *= d
    inner = 1
    for d in shape[dim + 1:]:
        inner *= d
    part = shape[dim] // ranks
    out = []
    for o in range(outer):
        base = o * shape[dim] * inner + rank * part * inner
        out.extend(values[base:base + part * inner])
    return tuple(part if i == dim else d for i, d in enumerate(shape)), out


def make(directory, seed, ranks, specs):
    rng = random.Random(int(seed))
    for spec in specs:
        fields = spec.split(":")
        name, shape = fields[0], tuple(int(d) for d in fields[1].split("x"))
        count = 1
        for d in shape:
            count *= d
        values = [rng.uniform(-1.0, 1.0) for _ in range(count)]
        write_npy(f"{directory}/{name}.npy", shape, values)
        for r in range(int(ranks)):
            if len(fields) > 2:
                write_npy(f"{directory}/{name}.r{r}.npy",
                          *shard(shape, values, int(fields[2]), int(ranks), r))
            else:
                write_npy(f"{directory}/{name}.r{r}.npy", shape, values)


def compare_one(path, ref_shape, ref):
    """1 when the result at `path` differs from (ref_shape, ref), after saying so."""
    shape, got = read_npy(path)
    if shape != ref_shape:
        print(f"FAIL: {path}: shape {shape}, reference {ref_shape}")
        return 1
    worst = max(abs(a - r) / (abs(r) + 1e-2) for a, r in zip(got, ref))
    bad = [i for i, (a, r) in enumerate(zip(got, ref)) if abs(a - r) > 1e-5 * abs(r) + 1e-7]
    if bad:
        i = bad[0]
        print(f"FAIL: {path}: {len(bad)} elements differ, first [{i}] {got[i]} vs {ref[i]}")
        return 1
    print(f"ok: {path} equals the reference (largest relative difference {worst:.2e})")
    return 0


def compare(reference, results):
    ref_shape, ref = read_npy(reference)
    return sum(compare_one(path, ref_shape, ref) for path in results)


def compare_shards(reference, dim, results):
    shape, values = read_npy(reference)
    return sum(compare_one(path, *shard(shape, values, int(dim), len(results), r))
               for r, path in enumerate(results))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    elif sys.argv[1] == "compare":
        sys.exit(1 if compare(sys.argv[2], sys.argv[3:]) else 0)
    elif sys.argv[1] == "compare-shards":
        sys.exit(1 if compare_shards(sys.argv[2], sys.argv[3], sys.argv[4:]) else 0)
    else:
        raise SystemExit(f"unknown command {sys.argv[1]}")
