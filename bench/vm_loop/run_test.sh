#!/usr/bin/env bash
# bench/vm_loop/run.sh at a small N: every module computes Lua's (and the hand-written
# bytecode's) sum, the compiled scf.for and scf.while loops execute the hand-written 4
# instructions per iteration and the unoptimised form 7.
set -euo pipefail
# (the output is matched as a here-string: `echo "$out" | grep -q` under pipefail fails when
# grep exits on its match before echo has written every line, which failed this test in CI.)
bin=$(mktemp -d); trap 'rm -rf "$bin"' EXIT
for t in tools/hexir-compile/hexir-compile tools/hexir-run/hexir-run bench/vm_loop_modules; do
  ln -s "$PWD/$t" "$bin/"
done
out=$(HEXIR_BIN=$bin REPEATS=1 bash bench/vm_loop/run.sh 2000 2>&1) || { echo "$out"; echo "FAIL: run.sh exited non-zero"; exit 1; }
echo "$out"
expect() {  # expect NAME INSTRUCTIONS
  grep -Eq "^$1 +$2 .* 11994 *$" <<<"$out" || { echo "FAIL: the row of $1 does not show $2 instructions per iteration and the sum 11994"; exit 1; }
}
expect for 4.00
expect while 4.00
expect for-unopt 7.00
expect hand 4.00
if command -v lua5.4 > /dev/null; then
  expect lua 4
  grep -q "^for / lua: " <<<"$out" || { echo "FAIL: no for / lua ratio"; exit 1; }
fi
echo "PASS"
