#!/usr/bin/env bash
# hexir-quantize's bad inputs: each is refused with exit 1 and a message naming the file, flag
# or tensor (a missing or empty input, an unknown --type, a truncated llama2.c file, a
# truncated GGUF, a GGUF whose block tensor's rows are not whole blocks, an already quantized
# input, an unwritable output), and a row length the requested blocks do not divide is kept
# as q8_0/f16 and listed by tensor name.
source tests/llm/common.sh
QUANTIZE=tools/hexir-quantize/hexir-quantize
CKPT=$SHARED/models/stories260K.bin
if [ ! -f "$CKPT" ]; then
  echo "HEXIR_SKIPPED: stories260K: $CKPT not found"
  exit 0
fi
# refused "WANT" ARGS...: exit 1 and stderr containing WANT (a fixed string).
refused() {
  local want=$1; shift
  local err status
  err=$("$QUANTIZE" "$@" 2>&1 >/dev/null); status=$?
  [ "$status" == 1 ] && grep -qF -- "$want" <<<"$err" && pass "refused: $err" || fail "$*: exit $status: $err"
}

refused "hexir-quantize: error: not_found: cannot open parameters '$TMP/missing.bin': No such file or directory" \
  "$TMP/missing.bin" -o "$TMP/o.gguf" --type=q8_0
: > "$TMP/empty.bin"
refused "'$TMP/empty.bin'" "$TMP/empty.bin" -o "$TMP/o.gguf" --type=q8_0
refused "--type=q3_k is not one of q8_0, q4_0, q4_1, q5_0, q4_k, q5_k, q6_k, bf16, f16" \
  "$CKPT" -o "$TMP/o.gguf" --type=q3_k
head -c 100000 "$CKPT" > "$TMP/trunc.bin"
refused "'$TMP/trunc.bin': llama2.c checkpoint: file has 100000 bytes but the header (dim 64, hidden_dim 172, n_layers 5, n_kv_heads 4, vocab_size 512, seq_len 512) implies 1056540; 'token_embedding' (offset 28, 131072 bytes) does not fit" \
  "$TMP/trunc.bin" -o "$TMP/o.gguf" --type=q8_0

# A q4_0 file: stories260K's ffn_down rows (172 values) are not whole q4_0 blocks (32): kept as f16.
out=$("$QUANTIZE" "$CKPT" -o "$TMP/q4.gguf" --type=q4_0) || fail "q4_0: exit $?"
grep -qF "rows not a multiple of q4_0's block size kept as q8_0 or f16: blk.0.ffn_down.weight (k = 172)" <<<"$out" \
  && grep -qF "47 tensors (5 f16, 11 f32, 31 q4_0)" <<<"$out" && pass "ffn_down (k = 172) listed and kept as f16" \
  || fail "q4_0 fallback: $out"
refused "tensor 'token_embedding' of '$TMP/q4.gguf' is already q4_0; quantize from an f32, f16 or bf16 checkpoint" \
  "$TMP/q4.gguf" -o "$TMP/o.gguf" --type=q8_0
head -c 50000 "$TMP/q4.gguf" > "$TMP/trunc.gguf"
refused "'$TMP/trunc.gguf': GGUF: tensor 'blk.0.ffn_down.weight' (f16, info at offset 1067) data at file offset 35424 (22016 bytes) runs past the end of the file (50000 bytes)" \
  "$TMP/trunc.gguf" -o "$TMP/o.gguf" --type=q8_0
# blk.0.attn_q.weight's ne[0] patched from 64 to 40: rows of 40 values are not whole q4_0 blocks.
python3 - "$TMP/q4.gguf" "$TMP/badrow.gguf" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
name = b"blk.0.attn_q.weight"
at = data.index(struct.pack("<Q", len(name)) + name) + 8 + len(name)
n_dims, = struct.unpack_from("<I", data, at)
assert n_dims == 2 and struct.unpack_from("<Q", data, at + 4)[0] == 64
struct.pack_into("<Q", data, at + 4, 40)
open(sys.argv[2], "wb").write(data)
PY
refused "'$TMP/badrow.gguf': GGUF: tensor 'blk.0.attn_q.weight' (info at offset 712) (q4_0) has ne[0] = 40, not a multiple of its block size 32" \
  "$TMP/badrow.gguf" -o "$TMP/o.gguf" --type=q8_0
refused "cannot create '$TMP/no/such/dir/o.gguf'" "$CKPT" -o "$TMP/no/such/dir/o.gguf" --type=q8_0
[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
