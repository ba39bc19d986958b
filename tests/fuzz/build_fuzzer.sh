#!/usr/bin/env bash
# build_fuzzer.sh OUT BINDIR SRCS...: compiles the .cc files among SRCS with clang-22 and
# libFuzzer + ASan + UBSan into OUT. Headers come from the workspace (.) and BINDIR (the
# generated vm/module_generated.h). Without a usable clang-22 libFuzzer runtime, OUT becomes a
# script that prints HEXIR_SKIPPED (the test then counts as skipped, not passed).
set -euo pipefail
out=$1 bindir=$2
shift 2
clang=/usr/lib/llvm-22/bin/clang++
sources=()
for f in "$@"; do
  case "$f" in *.cc) sources+=("$f") ;; esac
done
runtime=$(ls /usr/lib/llvm-22/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a 2>/dev/null | head -1 || true)
if [ ! -x "$clang" ] || [ -z "$runtime" ]; then
  cat >"$out" <<'STUB'
#!/bin/sh
echo "HEXIR_SKIPPED: clang-22 libFuzzer runtime missing (install libclang-rt-22-dev)"
exit 0
STUB
  chmod +x "$out"
  exit 0
fi
objdir=$(mktemp -d)
trap 'rm -rf "$objdir"' EXIT
flags=(-std=c++17 -O1 -g -fno-omit-frame-pointer -I. -I"$bindir"
       -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined)
pids=()
i=0
for src in "${sources[@]}"; do
  "$clang" "${flags[@]}" -c "$src" -o "$objdir/$i.o" &
  pids+=($!)
  i=$((i + 1))
  # Two compilers at a time (the machine has two cores).
  if [ ${#pids[@]} -ge 2 ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p"; done
"$clang" -fsanitize=fuzzer,address,undefined "$objdir"/*.o -o "$out"
