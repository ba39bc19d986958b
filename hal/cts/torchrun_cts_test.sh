#!/usr/bin/env bash
# The CTS channel cases on the CPU driver's Gloo channel as separate processes, started the way
# torchrun starts them (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; no torch needed): 2 and 4
# processes of cpu_cts_test rendezvousing through a Gloo FileStore (HEXIR_RENDEZVOUS=file:DIR,
# and once through the default store of a local MASTER_ADDR). Every rank must pass every case;
# the failure case (a rank that never joins an all_reduce) must end on every rank with the
# errors it asserts, within the time limit.
set -uo pipefail
cts="$1"
fail=0
run() {  # ranks, cases, rendezvous ("" = the MASTER_ADDR default)
  local n="$1" cases="$2" rendezvous="$3" dir logs=() pids=() rc passed=0 port
  dir=$(mktemp -d)
  port=$((20000 + RANDOM % 20000))
  for ((r = 0; r < n; r++)); do
    logs+=("$dir/rank$r.log")
    RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      HEXIR_RENDEZVOUS="$rendezvous" timeout 300 "$cts" "$cases" >"$dir/rank$r.log" 2>&1 &
    pids+=($!)
  done
  rc=0
  for pid in "${pids[@]}"; do wait "$pid" || rc=$?; done
  for log in "${logs[@]}"; do grep -a -q "All tests passed" "$log" && passed=$((passed + 1)); done
  if [ "$rc" -ne 0 ] || [ "$passed" -ne "$n" ]; then
    echo "FAIL: $n ranks, '$cases' (rendezvous '${rendezvous:-MASTER_ADDR}'): exit $rc, $passed of $n ranks passed"
    for log in "${logs[@]}"; do echo "--- $log"; cat "$log"; done
    fail=1
  else
    echo "ok: $n ranks, '$cases' (rendezvous '${rendezvous:-MASTER_ADDR}')"
  fi
  rm -rf "$dir" "/tmp/hexir-rendezvous-$port"
}
cases="cts/cpu/channel_all_reduce,cts/cpu/channel_reduce_scatter,cts/cpu/channel_data_movement,cts/cpu/channel_replay,cts/cpu/channel_misuse,cts/cpu/channel_overlap"
for n in 2 4; do
  store=$(mktemp -d)
  run "$n" "$cases" "file:$store"
  rm -rf "$store"
  store=$(mktemp -d)
  run "$n" "cts/cpu/channel_failure" "file:$store"
  rm -rf "$store"
done
run 2 "cts/cpu/channel_all_reduce" ""
exit "$fail"
