#!/usr/bin/env bash
# f16 and bf16 KV caches (hexir-import --kv-cache): each K/V element rounded once when it is
# cached, attention (scores, softmax, sums) in f32. stories260K with a bf16 cache (bf16 rounds
# more coarsely than f16) gives the 100 greedy ids of the f32 cache (the checked-in reference
# ids); with torch, random checkpoints with f16 and bf16 caches give the ids of reference.py
# --kv-cache (K/V rows rounded the same way) from a 3-token prompt, so prefill and decode both
# write the narrow cache. An unknown cache type is refused by name.
source tests/llm/common.sh
CKPT=$SHARED/models/stories260K.bin
if [ ! -f "$CKPT" ]; then
  echo "HEXIR_SKIPPED: KV cache: $CKPT not found"
  exit 0
fi
golden=$(cat tests/llm/stories260K_greedy_ids.txt)
if build_module "$CKPT" stories_kvbf16 --kv-cache=bf16; then
  got=$("$GENERATE" --module="$TMP/stories_kvbf16.vmfb" --device="$DEVICE" --parameters="$CKPT" --max-tokens=100)
  [ "$got" == "$golden" ] && pass "stories260K, bf16 KV cache: 100 greedy ids equal the f32 cache's" \
    || { fail "stories260K bf16 KV cache: ids differ"; echo " hexir:     $got"; echo " reference: $golden"; }
fi
if [ -x "$IMPORT" ]; then
  err=$("$IMPORT" "$CKPT" --kv-cache=f8 -o "$TMP/bad.mlir" 2>&1) && fail "--kv-cache=f8 accepted"
  grep -q "KV-cache type 'f8' is not f32, f16 or bf16" <<<"$err" && pass "--kv-cache=f8 refused: $err" \
    || fail "--kv-cache=f8 message: $err"
fi
if [ "$TORCH" == 1 ]; then
  for spec in "h4_kv2_v-50_s1:f16:4 2 -50 1" "h4_kv1_v50_s3:bf16:4 1 50 3"; do
    IFS=: read -r name kv cfg <<<"$spec"
    # shellcheck disable=SC2086
    write_random "$TMP/$name.bin" $cfg || { fail "write $name"; continue; }
    build_module "$TMP/$name.bin" "${name}_kv$kv" --kv-cache="$kv" || continue
    got=$("$GENERATE" --module="$TMP/${name}_kv$kv.vmfb" --device="$DEVICE" --parameters="$TMP/$name.bin" --prompt-ids=1,5,9 --max-tokens=60)
    want=$("$PYTHON" "$REFERENCE" "$TMP/$name.bin" --steps 60 --kv-cache "$kv" --prompt-ids 1,5,9)
    [ "$got" == "$want" ] && pass "$name, $kv KV cache: $(($(echo "$want" | wc -w) - 1)) ids equal the reference's" \
      || { fail "$name $kv KV cache"; echo " hexir:     $got"; echo " reference: $want"; }
  done
else
  echo "note: $PYTHON has no torch; random checkpoints with narrow caches not checked"
fi
[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
