#!/usr/bin/env bash
# The CTS channel cases on the CPU driver's Gloo channel as separate processes, started the way
# torchrun starts them (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; no torch needed): 2 and 4
# processes of cpu_cts_test rendezvousing through a Gloo FileStore (HEXIR_RENDEZVOUS=file:DIR,
# and once through the default store of a local MASTER_ADDR). Every rank must pass every case;
# the failure case (a rank that never joins an all_reduce) must end on every rank with the
# errors it asserts, within the time limit; in the dead-rank case the last process ends itself
# (exit 3) and every other rank must pass (its all_reduce failed at once, naming it).
set -uo pipefail
cts="$1"
fail=0
run() {  # ranks, cases, rendezvous ("" = the MASTER_ADDR default), dead rank ("" = none)
  local n="$1" cases="$2" rendezvous="$3" dead="${4:-}" dir logs=() pids=() rc passed=0 port want
  dir=$(mktemp -d)
  port=$((20000 + RANDOM % 20000))
  for ((r = 0; r < n; r++)); do
    logs+=("$dir/rank$r.log")
    RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      HEXIR_RENDEZVOUS="$rendezvous" timeout 300 "$cts" "$cases" >"$dir/rank$r.log" 2>&1 &
    pids+=($!)
  done
  rc=0 want=$n
  for ((r = 0; r < n; r++)); do
    local status=0
    wait "${pids[$r]}" || status=$?
    if [ "$r" == "$dead" ]; then [ "$status" -eq 3 ] || rc=$status; else [ "$status" -eq 0 ] || rc=$status; fi
  done
  [ -n "$dead" ] && want=$((n - 1))
  for log in "${logs[@]}"; do grep -a -q "All tests passed" "$log" && passed=$((passed + 1)); done
  if [ "$rc" -ne 0 ] || [ "$passed" -ne "$want" ]; then
    echo "FAIL: $n ranks, '$cases' (rendezvous '${rendezvous:-MASTER_ADDR}'): exit $rc, $passed of $n ranks passed"
    for log in "${logs[@]}"; do echo "--- $log"; cat "$log"; done
    fail=1
  else
    echo "ok: $n ranks, '$cases' (rendezvous '${rendezvous:-MASTER_ADDR}')${dead:+, rank $dead died}"
    [ -n "$dead" ] && grep -a -h "^rank .* of $n:" "${logs[@]}"
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
  store=$(mktemp -d)
  run "$n" "cts/cpu/channel_dead_rank" "file:$store" $((n - 1))
  rm -rf "$store"
done
run 2 "cts/cpu/channel_all_reduce" ""
exit "$fail"
