#!/usr/bin/python3
"""Compares hexir-generate --tokenize-only with llama.cpp's output (llama_cpp_tokenize.mjs).

  compare_tokenizers.py NAME GENERATE MODEL.gguf PROMPTS.json LLAMA_CPP.jsonl

For each prompt: Hexir's prompt ids (BOS first when the file adds it) must equal llama.cpp's,
and Hexir's decoding of them must equal llama_detokenize's. Prints one line per prompt and
exits 1 on any difference.
"""
import json
import subprocess
import sys


def main():
    name, generate, model, prompts_path, reference_path = sys.argv[1:6]
    prompts = json.load(open(prompts_path, encoding="utf-8"))
    reference = [json.loads(line) for line in open(reference_path, encoding="utf-8") if line.startswith("{")]
    if len(reference) != len(prompts):
        print("FAIL: %s: llama.cpp gave %d results for %d prompts" % (name, len(reference), len(prompts)))
        return 1
    failures = 0
    for prompt, ref in zip(prompts, reference):
        run = subprocess.run([generate, "--parameters=" + model, "--prompt=" + prompt, "--tokenize-only",
                              "--max-tokens=0"], capture_output=True)
        out = run.stdout.decode("utf-8", "replace")
        lines = out.split("\n", 1)
        ids = [int(t) for t in lines[0].split()[1:]] if lines[0].startswith("ids:") else None
        text = lines[1][:-1] if len(lines) > 1 and lines[1].endswith("\n") else None
        if run.returncode != 0 or ids != ref["ids"] or text != ref["text"]:
            failures += 1
            print("FAIL: %s: %r\n  hexir:     %s %r (exit %d%s)\n  llama.cpp: %s %r" % (
                name, prompt, ids, text, run.returncode,
                ", " + run.stderr.decode("utf-8", "replace").strip() if run.returncode else "",
                ref["ids"], ref["text"]))
        else:
            print("ok: %s: %r -> %d ids" % (name, prompt, len(ids)))
    print("%s: %d of %d prompts match llama.cpp" % (name, len(prompts) - failures, len(prompts)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
