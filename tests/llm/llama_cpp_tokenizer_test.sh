#!/usr/bin/env bash
# The GGUF's own tokenizer against llama.cpp (npm node-llama-cpp, as benchmark.sh installs it)
# on the 20 prompts of tokenizer_prompts.json (Unicode, digits, whitespace runs, contractions,
# added tokens): for stories260K converted with its tok512 vocabulary (SentencePiece "llama")
# and a random llama with a byte-level BPE "gpt2" vocabulary (write_bpe_gguf.py), Hexir's
# prompt ids and decoded text equal llama_tokenize's and llama_detokenize's
# (compare_tokenizers.py). node-llama-cpp lives in $LLAMA_CPP_DIR (default
# ~/.cache/hexir-llama-cpp); when absent, one npm install is tried (5 min at most); without
# node or the package the test prints HEXIR_SKIPPED.
source tests/llm/common.sh
CKPT=$SHARED/models/stories260K.bin
TOK=$SHARED/models/tok512.bin
if [ ! -f "$CKPT" ] || [ ! -f "$TOK" ]; then
  echo "HEXIR_SKIPPED: stories260K: $CKPT or $TOK not found"
  exit 0
fi
command -v node >/dev/null || { echo "HEXIR_SKIPPED: no node to run llama.cpp (node-llama-cpp)"; exit 0; }
LLAMA_CPP_DIR=${LLAMA_CPP_DIR:-${HOME:-/root}/.cache/hexir-llama-cpp}
if [ ! -d "$LLAMA_CPP_DIR/node_modules/node-llama-cpp" ]; then
  mkdir -p "$LLAMA_CPP_DIR" && (cd "$LLAMA_CPP_DIR" && timeout 300 npm install --no-audit --no-fund \
    node-llama-cpp@3.21.1 @node-llama-cpp/linux-x64@3.21.1 >/dev/null 2>&1)
fi
if [ ! -d "$LLAMA_CPP_DIR/node_modules/node-llama-cpp" ]; then
  echo "HEXIR_SKIPPED: node-llama-cpp is not in $LLAMA_CPP_DIR and npm install failed (offline?)"
  exit 0
fi
# ESM imports resolve from the script's folder: run it beside a link to the packages.
mkdir -p "$TMP/lc" && ln -sfn "$LLAMA_CPP_DIR/node_modules" "$TMP/lc/node_modules"
cp tests/llm/llama_cpp_tokenize.mjs "$TMP/lc/"
/usr/bin/python3 tests/llm/llama2c_to_gguf.py "$CKPT" "$TOK" "$TMP/stories.gguf" || fail "llama2c_to_gguf.py"
/usr/bin/python3 tests/llm/write_bpe_gguf.py "$TMP/bpe.gguf" || fail "write_bpe_gguf.py"
PROMPTS=$(pwd)/tests/llm/tokenizer_prompts.json
# name, file, the BOS id llama.cpp adds for a prompt (stories: add_bos_token; the BPE file: none)
for spec in "llama-spm stories.gguf 1" "gpt2-bpe bpe.gguf"; do
  set -- $spec
  (cd "$TMP/lc" && node llama_cpp_tokenize.mjs "$TMP/$2" "$PROMPTS" ${3:-} >"$TMP/$1.jsonl" 2>"$TMP/$1.err") \
    || { fail "llama.cpp on $2: $(tail -3 "$TMP/$1.err")"; continue; }
  /usr/bin/python3 tests/llm/compare_tokenizers.py "$1" "$GENERATE" "$TMP/$2" "$PROMPTS" "$TMP/$1.jsonl" \
    || fail "$1: Hexir's tokenizer differs from llama.cpp's"
done
[ "$failures" -eq 0 ] && echo "PASSED" || { echo "$failures failure(s)"; exit 1; }
