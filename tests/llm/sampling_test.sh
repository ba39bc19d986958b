#!/usr/bin/env bash
# hexir-generate's sampling and streaming on stories260K: a fixed seed gives the same text on
# every run (streamed or not) and another seed another text; temperature 0 is greedy exactly
# (the checked-in reference ids, also when streamed); --stream prints the same text as the
# non-streamed run, then prompt and generation speeds; bad sampler flags are refused by name.
# (The sampled distribution itself: tests/e2e/sampling_test.cc.)
source tests/llm/common.sh
CKPT=$SHARED/models/stories260K.bin
TOK=$SHARED/models/tok512.bin
if [ ! -f "$CKPT" ] || [ ! -f "$TOK" ]; then
  echo "HEXIR_SKIPPED: stories260K: $CKPT or $TOK not found"
  exit 0
fi
build_module "$CKPT" stories || exit 1
golden=$(cat tests/llm/stories260K_greedy_ids.txt)
gen() { "$GENERATE" --module="$TMP/stories.vmfb" --device="$DEVICE" --parameters="$CKPT" --tokenizer="$TOK" "$@"; }

greedy=$(gen --max-tokens=100) || fail "greedy run"
[ "$(echo "$greedy" | sed -n 1p)" == "$golden" ] || fail "greedy ids differ from the reference"
greedy_text=$(echo "$greedy" | sed -n '2,$p')

# Temperature 0 through the sampled, streamed program: the greedy text exactly.
streamed=$(gen --max-tokens=100 --stream --temperature=0 2>"$TMP/stream.err") || fail "--stream: exit $?"
[ "$streamed" == "$greedy_text" ] && pass "--stream at temperature 0 prints the greedy text" \
  || fail "--stream greedy: '$streamed' vs '$greedy_text'"
grep -qE "^hexir-generate: prompt 1 tokens \+ first token in [0-9.]+ ms \([0-9.]+ prompt tokens/s\); generation 99 tokens in [0-9.]+ ms \([0-9.]+ tokens/s\)$" \
  "$TMP/stream.err" && pass "speeds: $(cat "$TMP/stream.err")" || fail "speeds line: '$(cat "$TMP/stream.err")'"
# Penalty 1 and any filters do not change temperature 0 (ids through the non-streamed sampled path).
same=$(gen --max-tokens=100 --temperature=0 --repetition-penalty=1 --top-k=3 --seed=9 --stream 2>/dev/null)
[ "$same" == "$greedy_text" ] && pass "temperature 0 with top-k 3 is greedy" || fail "temperature 0, top-k 3: '$same'"

# A fixed seed: the same text twice (non-streamed), and streamed; another seed: another text.
a=$(gen --max-tokens=60 --temperature=0.9 --seed=1234) || fail "seed 1234: exit $?"
b=$(gen --max-tokens=60 --temperature=0.9 --seed=1234) || fail "seed 1234 again: exit $?"
[ -n "$a" ] && [ "$a" == "$b" ] && pass "seed 1234 twice: the same ids and text" || fail "seed 1234: '$a' vs '$b'"
s=$(gen --max-tokens=60 --temperature=0.9 --seed=1234 --stream 2>/dev/null)
[ "$s" == "$(echo "$a" | sed -n '2,$p')" ] && pass "seed 1234 streamed: the same text" \
  || fail "seed 1234 streamed: '$s' vs '$(echo "$a" | sed -n '2,$p')'"
c=$(gen --max-tokens=60 --temperature=0.9 --seed=1235)
[ "$c" != "$a" ] && pass "seed 1235 gives another text" || fail "seed 1235 gave seed 1234's text"
[ "$(echo "$a" | sed -n 1p)" != "$golden" ] && pass "temperature 0.9 is not greedy" || fail "sampled ids are the greedy ones"
# The penalty alone (temperature 0): a different greedy path through the sampler.
p=$(gen --max-tokens=100 --temperature=0 --repetition-penalty=1.5 | sed -n 1p)
[ -n "$p" ] && [ "$p" != "$golden" ] && pass "repetition penalty 1.5 changes the greedy ids" \
  || fail "repetition penalty 1.5: '$p'"

for bad in "--top-p=1.5|--top-p: 1.5 is not a number in [0, 1]" \
           "--temperature=-1|--temperature: -1 is not a finite number >= 0" \
           "--repeat-last-n=65|--repeat-last-n: 65 is not an integer in [0, 64]" \
           "--repetition-penalty=0|--repetition-penalty: 0 is not a finite number > 0"; do
  flag=${bad%%|*}; want=${bad#*|}
  err=$(gen --max-tokens=5 "$flag" 2>&1); status=$?
  [ "$status" == 1 ] && grep -qF -- "$want" <<<"$err" && pass "$flag refused" || fail "$flag: exit $status: $err"
done
[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
