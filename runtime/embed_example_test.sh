#!/usr/bin/env bash
# The embedding example, end to end: a module compiled by hexir-compile, the example built by
# Bazel, and the example built by a plain C compiler against an install prefix that holds only
# include/hexir_runtime.h and lib/libhexir_runtime.so.
set -euo pipefail
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
tools/hexir-compile/hexir-compile runtime/examples/add.mlir --target=cpu -o "$tmp/add.vmfb"

echo "== Bazel-built example"
out=$(runtime/embed_example "$tmp/add.vmfb")
echo "$out"
grep -q '^main(a, b) = 11 22 33 44$' <<<"$out"
grep -q '^embed_example: ok$' <<<"$out"

echo "== installed-prefix build"
prefix="$tmp/prefix"
mkdir -p "$prefix/include" "$prefix/lib" "$tmp/build"
cp runtime/hexir_runtime.h "$prefix/include/"
cp runtime/libhexir_runtime.so "$prefix/lib/"
# Only the prefix and the example source: no workspace include path.
cp runtime/examples/embed_example.c "$tmp/build/"
# A sanitizer build of the library (bazel test --config=asan|ubsan) needs its runtime in the
# program too: build the example with the same sanitizer.
# (ldd's output is read whole first: `ldd | grep -q` under pipefail fails when grep exits
# before ldd has written everything, which left the sanitizer out at random.)
sanitize=""
needed=$(ldd runtime/libhexir_runtime.so)
[[ "$needed" == *libasan* ]] && sanitize="$sanitize -fsanitize=address"
[[ "$needed" == *libubsan* ]] && sanitize="$sanitize -fsanitize=undefined"
(cd "$tmp/build" && cc -std=c99 -Wall -Wextra -Werror -pedantic $sanitize -I"$prefix/include" \
   embed_example.c -L"$prefix/lib" -lhexir_runtime -Wl,-rpath,"$prefix/lib" -o embed_example)
out=$("$tmp/build/embed_example" "$tmp/add.vmfb" cpu:inline)
echo "$out"
grep -q '^main(a, b) = 11 22 33 44$' <<<"$out"
grep -q '^embed_example: ok$' <<<"$out"

echo "== error exit for a missing module"
if "$tmp/build/embed_example" "$tmp/missing.vmfb" 2>"$tmp/err"; then
  echo "expected failure"; exit 1
fi
grep -q "not_found" "$tmp/err"
cat "$tmp/err"
echo "PASS"
