#!/usr/bin/python3
"""Converts a llama2.c checkpoint + tokenizer to GGUF (v3) for llama.cpp and Hexir's GGUF import.

  llama2c_to_gguf.py CKPT.bin TOK.bin|- OUT.gguf [--f16]

All tensors f32; --f16 stores the 2-D weights (embedding, projections, classifier) as f16
(round to nearest even, numpy) and keeps the 1-D norms f32, llama.cpp's own f16 convention.
TOK '-' writes no tokenizer metadata (random test checkpoints have no tokenizer). Used by the
benchmark (tests/llm/benchmark.sh: llama.cpp via npm node-llama-cpp) and gguf_test.sh. llama2.c
weights are in Meta's interleaved rotary layout, which is llama.cpp's "llama" rope type, so
q/k are copied unpermuted. Tokens: ' ' becomes U+2581, the BOS/EOS pieces become <s>/</s>,
<0xXX> pieces are byte tokens.
"""
import struct
import sys

import numpy as np


def gguf_string(s):
    b = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


UINT32, INT32, FLOAT32, STRING, ARRAY = 4, 5, 6, 8, 9


def kv(key, vtype, value):
    out = gguf_string(key) + struct.pack("<I", vtype)
    if vtype == UINT32:
        out += struct.pack("<I", value)
    elif vtype == INT32:
        out += struct.pack("<i", value)
    elif vtype == FLOAT32:
        out += struct.pack("<f", value)
    elif vtype == STRING:
        out += gguf_string(value)
    return out


def kv_array(key, etype, values):
    out = gguf_string(key) + struct.pack("<IIQ", ARRAY, etype, len(values))
    for v in values:
        if etype == STRING:
            out += gguf_string(v)
        elif etype == FLOAT32:
            out += struct.pack("<f", v)
        elif etype == INT32:
            out += struct.pack("<i", v)
    return out


def main():
    args = [a for a in sys.argv[1:] if a != "--f16"]
    f16 = "--f16" in sys.argv[1:]
    ckpt, tok, out_path = args[0:3]
    data = open(ckpt, "rb").read()
    dim, hidden, L, H, KVH, vocab, seq = struct.unpack("<7i", data[:28])
    shared = vocab > 0
    V = abs(vocab)
    hs = dim // H
    kv_dim = KVH * hs
    flat = np.frombuffer(data[28:], dtype=np.float32)
    at = 0

    def take(*shape):
        nonlocal at
        n = int(np.prod(shape))
        t = flat[at:at + n].reshape(shape)
        at += n
        return t

    emb = take(V, dim)
    per = {k: take(L, *s) for k, s in [("attn_norm", (dim,)), ("attn_q", (dim, dim)),
                                        ("attn_k", (kv_dim, dim)), ("attn_v", (kv_dim, dim)),
                                        ("attn_output", (dim, dim)), ("ffn_norm", (dim,)),
                                        ("ffn_gate", (hidden, dim)), ("ffn_down", (dim, hidden)),
                                        ("ffn_up", (hidden, dim))]}
    out_norm = take(dim)
    take(seq * hs)
    cls = None if shared else take(V, dim)

    tb = open(tok, "rb").read() if tok != "-" else b""
    o = 4
    tokens, scores, types = [], [], []
    while o < len(tb):
        score, n = struct.unpack("<fi", tb[o:o + 8])
        piece = tb[o + 8:o + 8 + n]
        o += 8 + n
        i = len(tokens)
        if i == 0:
            text, t = b"<unk>", 2
        elif i == 1:
            text, t = b"<s>", 3
        elif i == 2:
            text, t = b"</s>", 3
        elif piece.startswith(b"<0x") and len(piece) == 6:
            text, t = piece, 6
        else:
            text, t = piece.replace(b" ", "\u2581".encode("utf-8")), 1
        tokens.append(text)
        scores.append(score)
        types.append(t)

    tensors = [("token_embd.weight", emb)]
    for l in range(L):
        for k in per:
            tensors.append(("blk.%d.%s.weight" % (l, k), per[k][l]))
    tensors.append(("output_norm.weight", out_norm))
    if cls is not None:
        tensors.append(("output.weight", cls))

    entries = [
        kv("general.architecture", STRING, "llama"),
        kv("general.name", STRING, "stories"),
        kv("general.file_type", UINT32, 1 if f16 else 0),
        kv("llama.context_length", UINT32, seq),
        kv("llama.embedding_length", UINT32, dim),
        kv("llama.block_count", UINT32, L),
        kv("llama.feed_forward_length", UINT32, hidden),
        kv("llama.rope.dimension_count", UINT32, hs),
        kv("llama.attention.head_count", UINT32, H),
        kv("llama.attention.head_count_kv", UINT32, KVH),
        kv("llama.attention.layer_norm_rms_epsilon", FLOAT32, 1e-5),
        kv("llama.rope.freq_base", FLOAT32, 10000.0),
    ]
    if tokens:
        entries += [
        kv("tokenizer.ggml.model", STRING, "llama"),
        kv_array("tokenizer.ggml.tokens", STRING, tokens),
        kv_array("tokenizer.ggml.scores", FLOAT32, scores),
        kv_array("tokenizer.ggml.token_type", INT32, types),
        kv("tokenizer.ggml.bos_token_id", UINT32, 1),
        kv("tokenizer.ggml.eos_token_id", UINT32, 2),
        kv("tokenizer.ggml.unknown_token_id", UINT32, 0),
        gguf_string("tokenizer.ggml.add_bos_token") + struct.pack("<IB", 7, 1),  # bool
        ]
    meta = b"".join(entries)
    n_kv = len(entries)
    infos = b""
    offset = 0
    blobs = []
    for name, t in tensors:
        half = f16 and t.ndim == 2
        t = np.ascontiguousarray(t, dtype=np.float16 if half else np.float32)
        ne = list(reversed(t.shape))
        infos += gguf_string(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        infos += struct.pack("<IQ", 1 if half else 0, offset)
        blob = t.tobytes()
        pad = (-len(blob)) % 32
        blobs.append(blob + b"\0" * pad)
        offset += len(blob) + pad
    header = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), n_kv) + meta + infos
    header += b"\0" * ((-len(header)) % 32)
    with open(out_path, "wb") as f:
        f.write(header)
        for b in blobs:
            f.write(b)


if __name__ == "__main__":
    main()
