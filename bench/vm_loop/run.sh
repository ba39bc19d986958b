#!/usr/bin/env bash
# A compiled host loop against Lua 5.4, in one run: sum_mod.mlir (s += (i*7)%13 for i < N)
# compiled by hexir-compile and run by hexir-run on the CPU, and the same loop in lua5.4.
#   bash bench/vm_loop/run.sh [N=30000000]
# Binaries come from $HEXIR_BIN (a folder holding hexir-compile and hexir-run) or bazel-bin;
# $LUA names the interpreter (default lua5.4); $MODULE takes sum_mod.mlir already compiled
# (where there is no hexir-compile, e.g. the GPU machine); $BASELINE_MODULE adds a module
# compiled elsewhere (e.g. by an older hexir-compile) to the same comparison. Each figure is the best
# of $REPEATS (default 5) runs: whole-process wall and CPU (user + sys) seconds, and the loop
# alone (the process at N minus the process at N = 0: startup, module load, device creation).
# Ratios are hexir / Lua (below 1: hexir is faster). The results must agree (exit 1 if not).
# Without lua5.4 it says SKIPPED loudly and times hexir-run alone. Not a test: no limits.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-30000000}
REPEATS=${REPEATS:-5}
LUA=${LUA:-lua5.4}
bin() {
  if [ -n "${HEXIR_BIN:-}" ]; then echo "$HEXIR_BIN/$1"; else echo "bazel-bin/tools/$1/$1"; fi
}
tools=(hexir-run); [ -n "${MODULE:-}" ] || tools+=(hexir-compile)
for t in "${tools[@]}"; do
  [ -x "$(bin $t)" ] || { echo "vm_loop: $(bin $t) is missing (bazel build //tools/$t)" >&2; exit 1; }
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
module=${MODULE:-$tmp/sum_mod.vmfb}
[ -n "${MODULE:-}" ] || "$(bin hexir-compile)" bench/vm_loop/sum_mod.mlir --target=cpu -o "$module"

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
hexir() { best_of "$(bin hexir-run)" --module="$1" --device=cpu --cpu-threads=0 --input=i64="$2"; }
lua_loop() {
  best_of "$LUA" -e "local n = $1 local s = 0 for i = 0, n - 1 do s = s + (i * 7) % 13 end print(s)"
}

declare -A wall cpu result loop_wall loop_cpu
measure() {  # measure NAME RUNNER [MODULE]
  local name=$1; shift
  read -r wall[$name] cpu[$name] result[$name] <<< "$("$@" "$N")"
  read -r w0 c0 _ <<< "$("$@" 0)"
  loop_wall[$name]=$(calc "${wall[$name]} - $w0")
  loop_cpu[$name]=$(calc "${cpu[$name]} - $c0")
}
names=(hexir)
measure hexir hexir "$module"
if [ -n "${BASELINE_MODULE:-}" ]; then names+=(baseline); measure baseline hexir "$BASELINE_MODULE"; fi
have_lua=1
if command -v "$LUA" > /dev/null; then
  measure lua lua_loop
else
  have_lua=0
  echo "vm_loop: SKIPPED the Lua comparison: $LUA is not installed (apt-get install -y lua5.4)" >&2
fi

echo "vm_loop: s += (i*7)%13 for i < $N, best of $REPEATS (seconds; loop = run at N minus run at N = 0)"
printf '%-10s %10s %10s %10s %10s %12s\n' "" wall cpu "loop wall" "loop cpu" result
for name in "${names[@]}" $( ((have_lua)) && echo lua); do
  printf '%-10s %10s %10s %10s %10s %12s\n' "$name" "${wall[$name]}" "${cpu[$name]}" \
    "${loop_wall[$name]}" "${loop_cpu[$name]}" "${result[$name]}"
done
status=0
for name in "${names[@]}"; do
  if ((have_lua)); then
    if [ "${result[$name]}" != "${result[lua]}" ]; then
      echo "vm_loop: MISMATCH: $name computed ${result[$name]}, Lua ${result[lua]}" >&2; status=1
    fi
    echo "$name / lua: wall $(ratio "${wall[$name]}" "${wall[lua]}"), cpu $(ratio "${cpu[$name]}" "${cpu[lua]}"), loop wall $(ratio "${loop_wall[$name]}" "${loop_wall[lua]}"), loop cpu $(ratio "${loop_cpu[$name]}" "${loop_cpu[lua]}")"
  fi
done
exit $status
