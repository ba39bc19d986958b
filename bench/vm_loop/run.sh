#!/usr/bin/env bash
# Compiled host loops against Lua 5.4 and hand-written bytecode, in one run: s += (i*7)%13 for
# i < N as
#   for         sum_mod.mlir (scf.for) compiled by hexir-compile,
#   while       sum_mod_while.mlir (scf.while) compiled by hexir-compile,
#   for-unopt   sum_mod.mlir compiled with --no-branch-selection (cmp + cond_br, no for.i64:
#               the form before instruction selection),
#   hand        the same loop as hand-written bytecode (bench:vm_loop_modules hand-written),
# each run by hexir-run on the CPU (--cpu-threads=0), and lua (the same loop in lua5.4).
#   bash bench/vm_loop/run.sh [N=30000000]
# Binaries come from $HEXIR_BIN (a folder holding hexir-compile, hexir-run and
# vm_loop_modules) or bazel-bin (bazel build //tools/hexir-compile //tools/hexir-run
# //bench:vm_loop_modules); $LUA names the interpreter (default lua5.4); $MODULES names a folder
# of modules this script wrote before ($OUT of an earlier run: where there is no
# hexir-compile, e.g. the GPU machine); $OUT keeps this run's modules; $BASELINE_MODULE adds a
# module compiled elsewhere (e.g. by an older hexir-compile) to the same comparison. Each
# figure is the best of $REPEATS (default 5) runs: whole-process wall and CPU (user + sys)
# seconds, and the loop alone (the process at N minus the process at N = 0: startup, module
# load, device creation). "instr/iter" is what the VM executes per iteration of each module
# (vm_loop_modules count). Ratios are x / Lua and x / hand (below 1: x is faster). The results
# must agree (exit 1 if not). Without lua5.4 it says SKIPPED loudly and compares the rest.
# Not a test: no limits.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-30000000}
REPEATS=${REPEATS:-5}
LUA=${LUA:-lua5.4}
bin() {
  if [ -n "${HEXIR_BIN:-}" ]; then echo "$HEXIR_BIN/$1"
  elif [ "$1" = vm_loop_modules ]; then echo "bazel-bin/bench/vm_loop_modules"
  else echo "bazel-bin/tools/$1/$1"; fi
}
tools=(hexir-run vm_loop_modules); [ -n "${MODULES:-}" ] || tools+=(hexir-compile)
for t in "${tools[@]}"; do
  [ -x "$(bin $t)" ] || { echo "vm_loop: $(bin $t) is missing (see bench/README.md)" >&2; exit 1; }
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
dir=${MODULES:-${OUT:-$tmp}}
if [ -z "${MODULES:-}" ]; then
  mkdir -p "$dir"
  compile() { "$(bin hexir-compile)" "bench/vm_loop/$1.mlir" --target=cpu -o "$dir/$2.vmfb" "${@:3}"; }
  compile sum_mod sum_mod
  compile sum_mod_while sum_mod_while
  compile sum_mod sum_mod_unoptimised --no-branch-selection
  "$(bin vm_loop_modules)" hand-written "$dir/hand_written.vmfb"
fi
declare -A module=([for]=$dir/sum_mod.vmfb [while]=$dir/sum_mod_while.vmfb
                   [for-unopt]=$dir/sum_mod_unoptimised.vmfb [hand]=$dir/hand_written.vmfb)
names=(for while for-unopt hand)
if [ -n "${BASELINE_MODULE:-}" ]; then names+=(baseline); module[baseline]=$BASELINE_MODULE; fi

calc() { awk "BEGIN { printf \"%.3f\", $1 }"; }
calc_true() { awk "BEGIN { exit !($1) }"; }
ratio() { awk "BEGIN { if ($2 > 0) printf \"%.2f\", $1 / $2; else printf \"n/a\" }"; }

# best_of COMMAND...: runs COMMAND $REPEATS times; prints "wall cpu result" (the best
# wall and the best CPU seconds, and the command's last output line).
best_of() {
  local best_wall="" best_cpu="" out="" t
  for _ in $(seq "$REPEATS"); do
    { t=$( { TIMEFORMAT='%R %U %S'; time "$@" > "$tmp/out" 2> "$tmp/err"; } 2>&1 ); } ||
      { echo "vm_loop: '$*' failed: $(cat "$tmp/err")" >&2; exit 1; }
    read -r wall user sys <<< "$t"
    cpu=$(calc "$user + $sys")
    if [ -z "$best_wall" ] || calc_true "$wall < $best_wall"; then best_wall=$wall; fi
    if [ -z "$best_cpu" ] || calc_true "$cpu < $best_cpu"; then best_cpu=$cpu; fi
    out=$(tail -n 1 "$tmp/out")
  done
  echo "$best_wall $best_cpu ${out#i64=}"
}
hexir() { best_of "$(bin hexir-run)" --module="${module[$1]}" --device=cpu --cpu-threads=0 --input=i64="$2"; }
lua_loop() {
  best_of "$LUA" -e "local n = $2 local s = 0 for i = 0, n - 1 do s = s + (i * 7) % 13 end print(s)"
}

declare -A wall cpu result loop_wall loop_cpu per_iteration
measure() {  # measure NAME RUNNER
  read -r wall[$1] cpu[$1] result[$1] <<< "$("$2" "$1" "$N")"
  read -r w0 c0 _ <<< "$("$2" "$1" 0)"
  loop_wall[$1]=$(calc "${wall[$1]} - $w0")
  loop_cpu[$1]=$(calc "${cpu[$1]} - $c0")
}
for name in "${names[@]}"; do
  measure "$name" hexir
  read -r _ per_iteration[$name] <<< "$("$(bin vm_loop_modules)" count "${module[$name]}")"
done
have_lua=1
if command -v "$LUA" > /dev/null && "$LUA" -v > /dev/null 2>&1; then
  measure lua lua_loop
  per_iteration[lua]=4  # executed: MULK, MODK, ADD, FORLOOP (luac5.4 -l; each MMBIN* after them is skipped)
else
  have_lua=0
  echo "vm_loop: SKIPPED the Lua comparison: $LUA is not installed or does not run (apt-get install -y lua5.4)" >&2
fi

echo "vm_loop: s += (i*7)%13 for i < $N, best of $REPEATS (seconds; loop = run at N minus run at N = 0)"
printf '%-10s %10s %10s %10s %10s %10s %12s\n' "" instr/iter wall cpu "loop wall" "loop cpu" result
for name in "${names[@]}" $( ((have_lua)) && echo lua); do
  printf '%-10s %10s %10s %10s %10s %10s %12s\n' "$name" "${per_iteration[$name]}" "${wall[$name]}" \
    "${cpu[$name]}" "${loop_wall[$name]}" "${loop_cpu[$name]}" "${result[$name]}"
done
status=0
for name in "${names[@]}"; do
  for base in $( ((have_lua)) && echo lua) hand; do
    [ "$name" != "$base" ] || continue
    if [ "${result[$name]}" != "${result[$base]}" ]; then
      echo "vm_loop: MISMATCH: $name computed ${result[$name]}, $base ${result[$base]}" >&2; status=1
    fi
    echo "$name / $base: wall $(ratio "${wall[$name]}" "${wall[$base]}"), cpu $(ratio "${cpu[$name]}" "${cpu[$base]}"), loop wall $(ratio "${loop_wall[$name]}" "${loop_wall[$base]}"), loop cpu $(ratio "${loop_cpu[$name]}" "${loop_cpu[$base]}")"
  done
done
exit $status
