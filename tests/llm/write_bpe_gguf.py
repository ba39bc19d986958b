#!/usr/bin/python3
"""Writes a small random llama GGUF whose tokenizer is a byte-level BPE ("gpt2", pre-tokenizer
"gpt-2") trained here on a fixed text, for comparing tokenizers with llama.cpp.

  write_bpe_gguf.py OUT.gguf [--merges N=200] [--seed S=7]

Vocabulary: the 256 byte tokens (GPT-2's byte -> code point map, in byte order), one token per
learned merge (most frequent adjacent pair over the training words, ties broken by the pair's
text), then "<|endoftext|>" (control; BOS and EOS, add_bos_token false) and "<|user|>"
(user-defined). Model: dim 32, hidden 64, 2 layers, 4 heads, 2 KV heads, context 128, f32
weights drawn from N(0, 0.2) (norms 1), separate classifier.
"""
import re
import struct
import sys

import numpy as np

from llama2c_to_gguf import ARRAY, FLOAT32, INT32, STRING, UINT32, gguf_string, kv, kv_array

TRAINING_TEXT = """Once upon a time, there was a little girl named Lily. She loved to play outside
in the park with her friends. One day, she saw a big red ball under the tree. "Can I play with
it?" she asked. Her mom said, "Yes, but don't go too far." They'll play again tomorrow at 10:30,
and we're going to count 1, 2, 3, 100, 2024 and 3.14159. Café, naïve, résumé, Straße, Ångström,
日本語のテキスト, 中文字符, Ελληνικά, русский текст, emoji 🙂🚀 and tabs\tand  double  spaces.
"""

BOOL = 7


def byte_map():
    keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    m, extra = {}, 0
    for b in range(256):
        if b in keep:
            m[b] = chr(b)
        else:
            m[b] = chr(256 + extra)
            extra += 1
    return m


def train(n_merges):
    bm = byte_map()
    words = re.findall(r"'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+", TRAINING_TEXT)
    seqs = [[bm[b] for b in w.encode("utf-8")] for w in words]
    merges, known = [], set(bm.values())
    for _ in range(n_merges):
        counts = {}
        for s in seqs:
            for a, b in zip(s, s[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + 1
        if not counts:
            break
        best = min(counts, key=lambda p: (-counts[p], p))
        if counts[best] < 2:
            break
        joined = best[0] + best[1]
        if joined not in known:  # a text made by two different merges gets one token
            merges.append(best)
            known.add(joined)
        for i, s in enumerate(seqs):
            out, j = [], 0
            while j < len(s):
                if j + 1 < len(s) and (s[j], s[j + 1]) == best:
                    out.append(joined)
                    j += 2
                else:
                    out.append(s[j])
                    j += 1
            seqs[i] = out
    return [bm[b] for b in range(256)], merges


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
    out_path = args[0]
    n_merges = int(opts.get("merges", 200))
    rng = np.random.default_rng(int(opts.get("seed", 7)))
    byte_tokens, merges = train(n_merges)
    tokens = byte_tokens + [a + b for a, b in merges]
    types = [1] * len(tokens)
    eot = len(tokens)
    tokens += ["<|endoftext|>", "<|user|>"]
    types += [3, 4]
    V, dim, hidden, L, H, KVH, seq = len(tokens), 32, 64, 2, 4, 2, 128
    kv_dim = dim // H * KVH

    def w(*shape):
        return rng.normal(0, 0.2, shape).astype(np.float32)

    tensors = [("token_embd.weight", w(V, dim))]
    for l in range(L):
        b = "blk.%d." % l
        tensors += [(b + "attn_norm.weight", np.ones(dim, np.float32)), (b + "attn_q.weight", w(dim, dim)),
                    (b + "attn_k.weight", w(kv_dim, dim)), (b + "attn_v.weight", w(kv_dim, dim)),
                    (b + "attn_output.weight", w(dim, dim)), (b + "ffn_norm.weight", np.ones(dim, np.float32)),
                    (b + "ffn_gate.weight", w(hidden, dim)), (b + "ffn_down.weight", w(dim, hidden)),
                    (b + "ffn_up.weight", w(hidden, dim))]
    tensors += [("output_norm.weight", np.ones(dim, np.float32)), ("output.weight", w(V, dim))]

    entries = [
        kv("general.architecture", STRING, "llama"),
        kv("general.name", STRING, "random-bpe"),
        kv("llama.context_length", UINT32, seq),
        kv("llama.embedding_length", UINT32, dim),
        kv("llama.block_count", UINT32, L),
        kv("llama.feed_forward_length", UINT32, hidden),
        kv("llama.rope.dimension_count", UINT32, dim // H),
        kv("llama.attention.head_count", UINT32, H),
        kv("llama.attention.head_count_kv", UINT32, KVH),
        kv("llama.attention.layer_norm_rms_epsilon", FLOAT32, 1e-5),
        kv("llama.rope.freq_base", FLOAT32, 10000.0),
        kv("tokenizer.ggml.model", STRING, "gpt2"),
        kv("tokenizer.ggml.pre", STRING, "gpt-2"),
        kv_array("tokenizer.ggml.tokens", STRING, tokens),
        kv_array("tokenizer.ggml.token_type", INT32, types),
        kv_array("tokenizer.ggml.merges", STRING, [a + " " + b for a, b in merges]),
        kv("tokenizer.ggml.bos_token_id", UINT32, eot),
        kv("tokenizer.ggml.eos_token_id", UINT32, eot),
        gguf_string("tokenizer.ggml.add_bos_token") + struct.pack("<IB", BOOL, 0),
    ]
    infos, blobs, offset = b"", [], 0
    for name, t in tensors:
        ne = list(reversed(t.shape))
        infos += gguf_string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        infos += struct.pack("<IQ", 0, offset)
        blob = t.tobytes()
        pad = (-len(blob)) % 32
        blobs.append(blob + b"\0" * pad)
        offset += len(blob) + pad
    header = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(entries)) + b"".join(entries) + infos
    header += b"\0" * ((-len(header)) % 32)
    with open(out_path, "wb") as f:
        f.write(header)
        for b in blobs:
            f.write(b)


if __name__ == "__main__":
    main()
