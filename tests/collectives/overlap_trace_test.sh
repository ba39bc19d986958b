#!/usr/bin/env bash
# A collective overlaps independent compute (hal/drivers/cpu/collective_lane.h): overlap.mlir
# on two CPU devices of one process (two workers each), with --trace. Asserted from the trace
# events and the device statistics, not from timing: every rank's all_reduce span intersects a
# dispatch span of its rank (the matmul, recorded after a barrier, that does not read the
# all_reduce's buffers), each rank counts its all_reduce in collectives_overlapped, and the
# results are right (the row sums that read the all_reduce's result waited for it).
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

# The trace: per rank (pid), the all_reduce's span intersects a dispatch span of that rank.
python3 - "$TMP/trace.json" <<'PY' && pass "trace: every rank's all_reduce overlaps a dispatch" || fail "trace overlap"
import json, sys
events = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
for pid in (1, 2):
    mine = [e for e in events if e["pid"] == pid]
    collectives = [e for e in mine if e["cat"] == "collective"]
    dispatches = [e for e in mine if e["cat"] == "dispatch"]
    assert [c["name"] for c in collectives] == ["all_reduce"], (pid, collectives)
    c = collectives[0]
    beside = [d["name"] for d in dispatches
              if d["ts"] <= c["ts"] + c["dur"] and c["ts"] <= d["ts"] + d["dur"]]
    print(f"rank {pid - 1}: all_reduce {c['dur']:.0f} us, beside {beside}")
    assert beside, f"rank {pid - 1}: no dispatch span intersects the all_reduce's"
PY
grep -q "2 collectives (2 ran while dispatches of their device ran)" "$TMP/err" \
  && pass "hexir-run counts both ranks' all_reduce as overlapped in the trace" || fail "trace summary line"
grep -q "collectives_overlapped (device statistics): 2$" "$TMP/err" \
  && pass "device statistics: 2 collectives overlapped" || fail "collectives_overlapped is not 2"
echo "$failures failure(s)"
exit "$failures"
