#!/usr/bin/env bash
# hexir-dump over a module compiled by the real hexir-compile: key lines only (the exact
# bytecode belongs to the compiler and changes with it).
set -euo pipefail
compile=tools/hexir-compile/hexir-compile
dump=tools/hexir-dump/hexir-dump
out="${TEST_TMPDIR:-/tmp}/add.vmfb"
"$compile" tools/hexir-dump/testdata/add.mlir --target=cpu -o "$out"
text=$("$dump" "$out")
fail=0
expect() {  # expect REGEX: some line of the dump matches
  if ! grep -Eq -- "$1" <<<"$text"; then
    echo "FAIL: no line matches /$1/"
    fail=1
  fi
}
expect '^module "'
expect '^  format 2\.[0-9]+, [0-9]+ bytes$'
expect '^imports \([1-9][0-9]*\)$'
expect '^  #[0-9]+ hal\.buffer_view\.assert : r'
expect '^exports \(1\)$'
expect '^  "main" -> function #[0-9]+$'
expect '^  #[0-9]+ "main" : rr_r  registers v=[0-9]+ r=[0-9]+  code [0-9]+ words$'
expect '^    attr abi\.args = "tensor<4xf32>;tensor<4xf32>"$'
expect '^    @0: '
expect "call\.import 'hal\.[a-z_.]+dispatch"
expect '^    @[0-9]+: return \(r[0-9]+!?\)$'
expect '^executables \(1\)$'
expect '^  #0 format "cpu-elf-x86_64" offset [0-9]+ size [0-9]+: 7f 45 4c 46'
expect '^    entry 0: main_dispatch_0$'
# a + b: bindings 0 and 1 (the operands) are read, 2 (the result) written.
expect '^      writes bindings: 2$'
if [ "$fail" -ne 0 ]; then
  echo "--- dump ---"
  echo "$text"
  exit 1
fi
# A flipped byte in the embedded shared object: refused, naming the executable, exit 1.
exe_offset=$(sed -nE 's/^  #0 format "cpu-elf-x86_64" offset ([0-9]+) size.*/\1/p' <<<"$text")
corrupt="${TEST_TMPDIR:-/tmp}/corrupt.vmfb"
cp "$out" "$corrupt"
python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(int(sys.argv[2])); b = f.read(1)
f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0xFF]))' "$corrupt" $((exe_offset + 200))
status=0
err=$("$dump" "$corrupt" 2>&1 >/dev/null) || status=$?
if [ "$status" -ne 1 ] || ! grep -q "executable 0 ('main_dispatch_0'): checksum mismatch" <<<"$err"; then
  echo "FAIL: corrupted module: exit $status, stderr: $err"
  exit 1
fi
echo "ok: $(wc -l <<<"$text") lines checked"
