#!/usr/bin/env bash
# A collective overlaps independent compute (hal/drivers/cpu/collective_lane.h): overlap.mlir
# on two CPU devices of one process (two workers each), with --trace. Asserted from the trace
# events and the device statistics, not from timing: the row sums that read the all_reduce's
# result begin after it ends, each rank counts its all_reduce in collectives_overlapped (its
# queue started the matmul recorded after the all_reduce, behind a barrier and not reading its
# buffers, without waiting for the collective), and the results are right. When each rank's
# matmul began against its all_reduce, and whether the spans intersect, is printed, not
# asserted: under load the lane thread may start the collective after the matmul finished (CI
# once saw a 75.8 ms all_reduce begin after it), and the queue thread may not get a core until
# the collective is over (CI once saw a rank's matmul begin 6 ms after its 138 ms all_reduce).
set -uo pipefail
COMPILE=tools/hexir-compile/hexir-compile
RUN=tools/hexir-run/hexir-run
here=tests/collectives
TMP=${TEST_TMPDIR:-$(mktemp -d)}
export HEXIR_COLLECTIVE_TIMEOUT=60
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

"$COMPILE" "$here/overlap.mlir" --target=cpu -o "$TMP/overlap.vmfb" || { echo "FAIL: hexir-compile"; exit 1; }
timeout 300 "$RUN" --module="$TMP/overlap.vmfb" --device=cpu:threads=2 --device=cpu:threads=2 \
  --trace="$TMP/trace.json" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" -eq 0 ] || { cat "$TMP/err"; echo "FAIL: hexir-run exit $rc"; exit 1; }
cat "$TMP/err"

# Rank 0's results: sums[i] = 1024 * (1 + 2), products[i] = 1024 * 1024 (exact in f32).
python3 - "$TMP/out" <<'PY' && pass "results of rank 0" || fail "results of rank 0"
import sys
lines = [l for l in open(sys.argv[1]).read().splitlines() if "=" in l]
want = [("4096xf32", 3072.0), ("1024xf32", 1048576.0)]
assert len(lines) == len(want), lines
for line, (shape, value) in zip(lines, want):
    head, values = line.split("=", 1)
    got = [float(v) for v in values.split()]
    assert head == shape and len(got) == int(shape.split("x")[0]), head
    bad = [v for v in got if v != value]
    assert not bad, f"{shape}: {len(bad)} values differ from {value}, e.g. {bad[:3]}"
PY

# The trace: per rank (pid), the order of the all_reduce and the dispatches around it.
# main_dispatch_2 is the matmul, main_dispatch_3 the row sums of the all_reduce's result.
python3 - "$TMP/trace.json" <<'PY' && pass "trace: every rank's sums of the all_reduce's result began after it ended" || fail "trace order"
import json, sys
events = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
for pid in (1, 2):
    mine = [e for e in events if e["pid"] == pid]
    collectives = [e for e in mine if e["cat"] == "collective"]
    dispatches = {e["name"]: e for e in mine if e["cat"] == "dispatch"}
    assert [c["name"] for c in collectives] == ["all_reduce"], (pid, collectives)
    c = collectives[0]
    end = c["ts"] + c["dur"]
    beside = [n for n, d in dispatches.items() if d["ts"] <= end and c["ts"] <= d["ts"] + d["dur"]]
    print(f"rank {pid - 1}: all_reduce {c['dur']:.0f} us, intersecting {beside}")
    matmul, sums = dispatches["main_dispatch_2"], dispatches["main_dispatch_3"]
    print(f"rank {pid - 1}: the matmul began {end - matmul['ts']:.0f} us before the all_reduce ended")
    assert sums["ts"] >= end, f"rank {pid - 1}: the sums of the all_reduce's result began {end - sums['ts']:.0f} us before it ended"
PY
grep -Eq "10 dispatches, 2 collectives \([0-2] ran while dispatches of their device ran\)" "$TMP/err" \
  && pass "hexir-run's trace summary line counts 10 dispatches and 2 collectives" || fail "trace summary line"
grep -q "collectives_overlapped (device statistics): 2$" "$TMP/err" \
  && pass "device statistics: 2 collectives overlapped" || fail "collectives_overlapped is not 2"
echo "$failures failure(s)"
exit "$failures"
