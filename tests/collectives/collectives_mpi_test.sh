#!/usr/bin/env bash
# Collective ops end to end: collectives.mlir.in compiled for 2 and 4 ranks and run by
# hexir-run under mpirun -n 2 / -n 4 (one CPU device per rank, the MPI channel); every rank's
# results must equal check_results.py's independent values. Also: a module for 2 ranks run on
# 4, and run without mpirun (a channel of one rank), fails naming both counts. And in one
# process: hexir-run with N CPU devices (one rank each, an in-process Gloo group) gives rank 0
# the same values, and its --trace holds every rank's collectives on their own track.
set -uo pipefail
COMPILE=tools/hexir-compile/hexir-compile
RUN=tools/hexir-run/hexir-run
here=tests/collectives
TMP=${TEST_TMPDIR:-$(mktemp -d)}
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export HEXIR_COLLECTIVE_TIMEOUT=60
x="1 -2 3 0.5"

for n in 2 4; do
  sed "s/@N4@/$((4 * n))/g; s/@N@/$n/g" "$here/collectives.mlir.in" >"$TMP/c$n.mlir"
  "$COMPILE" "$TMP/c$n.mlir" --target=cpu -o "$TMP/c$n.vmfb" || { fail "hexir-compile for $n ranks"; continue; }
done

# Without mpirun: one rank. The 2-rank module's all_gather refuses the channel.
err=$("$RUN" --module="$TMP/c2.vmfb" --device=cpu "--input=4xf32=$x" 2>&1) && fail "2-rank module ran on one rank"
grep -q "hexir.all_gather: the program was written for 2 ranks, the channel has 1" <<<"$err" \
  && pass "one rank: $err" || fail "one-rank message: $err"

# One process driving N devices (two worker threads each, so collectives overlap their wave).
for n in 2 4; do
  [ -f "$TMP/c$n.vmfb" ] || continue
  devices=()
  for ((i = 0; i < n; i++)); do devices+=(--device=cpu:threads=2); done
  out=$(timeout 300 "$RUN" --module="$TMP/c$n.vmfb" "${devices[@]}" "--input=4xf32=$x" --trace="$TMP/trace$n.json" \
        2>"$TMP/stderr$n")
  rc=$?
  if [ "$rc" -ne 0 ]; then fail "$n devices of one process: exit $rc"; cat "$TMP/stderr$n"; continue; fi
  sed 's/^/[1,0]<stdout>:/' <<<"$out" | python3 "$here/check_results.py" "$n" $x --rank0-only \
    || { fail "$n devices of one process"; echo "$out"; }
  # 12 collectives per rank (4 all_reduce, all_gather, reduce_scatter, broadcast, send, recv,
  # the i32 all_reduce, the dynamic all_reduce twice), each on its rank's collectives track.
  counted=$(python3 -c "
import collections, json, sys
events = json.load(open(sys.argv[1]))['traceEvents']
per_rank = collections.Counter(e['pid'] for e in events if e.get('cat') == 'collective' and e['tid'] == 2)
print(' '.join(str(per_rank[p]) for p in range(1, $n + 1)))" "$TMP/trace$n.json")
  want=$(for ((i = 0; i < n; i++)); do printf '12 '; done)
  [ "$counted" == "${want% }" ] && grep -q "collectives ([0-9]* ran while dispatches of their device ran)" "$TMP/stderr$n" \
    && pass "trace of $n ranks: collectives per rank $counted; $(tail -1 "$TMP/stderr$n")" \
    || { fail "trace of $n ranks: collectives per rank '$counted'"; cat "$TMP/stderr$n"; }
done
# The 2-rank module on 4 devices of one process: every rank refuses the count, exit 1.
if [ -f "$TMP/c2.vmfb" ]; then
  err=$(timeout 300 "$RUN" --module="$TMP/c2.vmfb" --device=cpu --device=cpu --device=cpu --device=cpu \
        "--input=4xf32=$x" 2>&1); rc=$?
  [ "$rc" -eq 1 ] && grep -q "error: [a-z_]*: rank [0-3] of 4 ('cpu'): .*hexir.all_gather: the program was written for 2 ranks, the channel has 4" <<<"$err" \
    && pass "2-rank module on 4 devices of one process: $err" || fail "2-rank module on 4 devices: exit $rc: $err"
fi

if ! command -v mpirun >/dev/null; then
  echo "HEXIR_SKIPPED: collectives_mpi_test: no mpirun (apt-get install openmpi-bin)"
  exit "$failures"
fi
for n in 2 4; do
  [ -f "$TMP/c$n.vmfb" ] || continue
  out=$(timeout 300 mpirun -n "$n" --oversubscribe --tag-output "$RUN" --module="$TMP/c$n.vmfb" --device=cpu \
        "--input=4xf32=$x" 2>&1)
  rc=$?
  if [ "$rc" -ne 0 ]; then fail "mpirun -n $n: exit $rc"; echo "$out"; continue; fi
  echo "$out" | python3 "$here/check_results.py" "$n" $x || { fail "$n ranks"; echo "$out"; }
done

# The 2-rank module on 4 ranks: the job fails naming the counts before any collective runs,
# nothing hangs.
if [ -f "$TMP/c2.vmfb" ]; then
  out=$(timeout 300 mpirun -n 4 --oversubscribe "$RUN" --module="$TMP/c2.vmfb" --device=cpu "--input=4xf32=$x" 2>&1)
  rc=$?
  count=$(echo "$out" | grep -c "hexir.all_gather: the program was written for 2 ranks, the channel has 4")
  # (mpirun may stop the other ranks once one has failed: at least one must have said why.)
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$count" -ge 1 ] && pass "2-rank module on 4 ranks: refused ($count ranks named the counts)" \
    || { fail "2-rank module on 4 ranks: exit $rc, $count ranks named the counts"; echo "$out"; }
fi
echo "$failures failure(s)"
exit "$failures"
