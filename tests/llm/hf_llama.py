#!/usr/bin/python3
"""Random Hugging Face LlamaForCausalLM folders and an independent NumPy reference of the HF
Llama forward pass (rotate_half rotary, linear rope scaling, GQA, tied or untied embeddings).

  hf_llama.py write DIR [--dtype f32|f16|bf16] [--heads 4] [--kv-heads 2] [--tied]
                        [--shards N] [--theta 10000] [--linear-scaling F] [--seed S]
                        [--break missing-config|architecture|missing-tensor|shape|truncated|header-length]
  hf_llama.py generate DIR --prompt-ids 1,2,3 --steps N

`write`: dim 32, hidden 64, 2 layers, context 128; the vocabulary is write_bpe_gguf.py's
byte-level BPE (also written as tokenizer.json, ByteLevel pre-tokenizer), BOS = EOS =
<|endoftext|>. Weights ~ N(0, 0.3) (norms 1 + N(0, 0.1)), stored in the HF layout (q/k rows
in rotate-half order, as HF checkpoints are) in model.safetensors, or in N shards with
model.safetensors.index.json. `--break` writes one malformed folder for the error tests.
`generate`: reads config.json and the safetensors itself (numpy, float64 math on the stored
values), runs the whole sequence each step and prints "ids: ..." (greedy, stopping after a
BOS/EOS id), the model's own reference, independent of Hexir's importer.
"""
import json
import os
import struct
import sys

import numpy as np

from write_bpe_gguf import train

DTYPES = {"f32": ("F32", 4), "f16": ("F16", 2), "bf16": ("BF16", 2)}


def to_bytes(a, dtype):
    a = np.ascontiguousarray(a, dtype=np.float32)
    if dtype == "f32":
        return a.tobytes()
    if dtype == "f16":
        return a.astype(np.float16).tobytes()
    bits = a.view(np.uint32).astype(np.uint64)  # bf16: round to nearest even
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return rounded.tobytes()


def from_bytes(raw, dtype, shape):
    if dtype == "F32":
        return np.frombuffer(raw, np.float32).reshape(shape).astype(np.float64)
    if dtype == "F16":
        return np.frombuffer(raw, np.float16).reshape(shape).astype(np.float64)
    bits = np.frombuffer(raw, np.uint16).astype(np.uint32) << 16
    return bits.view(np.float32).reshape(shape).astype(np.float64)


def write_safetensors(path, tensors, dtype, header_length=None, truncate=0):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, a in tensors:
        blob = to_bytes(a, dtype)
        header[name] = {"dtype": DTYPES[dtype][0], "shape": list(a.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * ((-len(text)) % 8)
    data = struct.pack("<Q", header_length if header_length is not None else len(text)) + text + b"".join(blobs)
    with open(path, "wb") as f:
        f.write(data[:len(data) - truncate])


def tokenizer_json(byte_tokens, merges, specials):
    vocab = {t: i for i, t in enumerate(byte_tokens + [a + b for a, b in merges])}
    first_special = len(vocab)
    return {
        "version": "1.0",
        "added_tokens": [{"id": first_special + i, "content": s, "special": True, "single_word": False,
                          "lstrip": False, "rstrip": False, "normalized": False} for i, s in enumerate(specials)],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": [a + " " + b for a, b in merges]},
    }


def write(out, opts):
    rng = np.random.default_rng(int(opts.get("seed", 1)))
    dtype = opts.get("dtype", "f32")
    H, KVH = int(opts.get("heads", 4)), int(opts.get("kv-heads", 2))
    tied = "tied" in opts
    byte_tokens, merges = train(200)
    V = len(byte_tokens) + len(merges) + 1
    eot = V - 1
    D, F, L, S = 32, 64, 2, 128
    hd = D // H
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": D,
              "intermediate_size": F, "num_hidden_layers": L, "num_attention_heads": H,
              "num_key_value_heads": KVH, "max_position_embeddings": S, "vocab_size": V,
              "rms_norm_eps": 1e-5, "rope_theta": float(opts.get("theta", 10000.0)),
              "tie_word_embeddings": tied, "bos_token_id": eot, "eos_token_id": eot,
              "hidden_act": "silu", "torch_dtype": {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}[dtype]}
    if "linear-scaling" in opts:
        config["rope_scaling"] = {"rope_type": "linear", "factor": float(opts["linear-scaling"])}
    brk = opts.get("break", "")
    if brk == "architecture":
        config["architectures"] = ["GPT2LMHeadModel"]

    def w(*shape, scale=0.3):
        return rng.normal(0, scale, shape)

    tensors = [("model.embed_tokens.weight", w(V, D))]
    for l in range(L):
        p = "model.layers.%d." % l
        tensors += [(p + "input_layernorm.weight", 1 + w(D, scale=0.1)),
                    (p + "self_attn.q_proj.weight", w(H * hd, D)), (p + "self_attn.k_proj.weight", w(KVH * hd, D)),
                    (p + "self_attn.v_proj.weight", w(KVH * hd, D)), (p + "self_attn.o_proj.weight", w(D, H * hd)),
                    (p + "post_attention_layernorm.weight", 1 + w(D, scale=0.1)),
                    (p + "mlp.gate_proj.weight", w(F, D)), (p + "mlp.up_proj.weight", w(F, D)),
                    (p + "mlp.down_proj.weight", w(D, F))]
    tensors.append(("model.norm.weight", 1 + w(D, scale=0.1)))
    if not tied:
        tensors.append(("lm_head.weight", w(V, D)))
    if brk == "missing-tensor":
        tensors = [t for t in tensors if t[0] != "model.layers.1.mlp.up_proj.weight"]
    if brk == "shape":
        tensors = [(n, w(KVH * hd + 2, D) if n == "model.layers.0.self_attn.k_proj.weight" else a) for n, a in tensors]

    os.makedirs(out, exist_ok=True)
    if brk != "missing-config":
        json.dump(config, open(os.path.join(out, "config.json"), "w"), indent=1)
    json.dump(tokenizer_json(byte_tokens, merges, ["<|endoftext|>"]), open(os.path.join(out, "tokenizer.json"), "w"))
    shards = int(opts.get("shards", 1))
    if shards == 1:
        write_safetensors(os.path.join(out, "model.safetensors"), tensors, dtype,
                          header_length=1 << 40 if brk == "header-length" else None,
                          truncate=1000 if brk == "truncated" else 0)
    else:
        weight_map = {}
        per = (len(tensors) + shards - 1) // shards
        for s in range(shards):
            name = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
            part = tensors[s * per:(s + 1) * per]
            write_safetensors(os.path.join(out, name), part, dtype)
            weight_map.update({n: name for n, _ in part})
        json.dump({"metadata": {}, "weight_map": weight_map},
                  open(os.path.join(out, "model.safetensors.index.json"), "w"), indent=1)


def load(folder):
    config = json.load(open(os.path.join(folder, "config.json")))
    files = ["model.safetensors"]
    index = os.path.join(folder, "model.safetensors.index.json")
    if not os.path.exists(os.path.join(folder, files[0])):
        files = sorted(set(json.load(open(index))["weight_map"].values()))
    weights = {}
    for name in files:
        data = open(os.path.join(folder, name), "rb").read()
        n = struct.unpack("<Q", data[:8])[0]
        header = json.loads(data[8:8 + n])
        for t, info in header.items():
            if t == "__metadata__":
                continue
            b, e = info["data_offsets"]
            weights[t] = from_bytes(data[8 + n + b:8 + n + e], info["dtype"], info["shape"])
    return config, weights


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def forward(config, W, ids):
    D, H = config["hidden_size"], config["num_attention_heads"]
    KVH = config.get("num_key_value_heads", H)
    hd, eps = D // H, config["rms_norm_eps"]
    scaling = (config.get("rope_scaling") or {}).get("factor", 1.0)
    inv_freq = 1.0 / (config["rope_theta"] ** (np.arange(0, hd, 2) / hd))
    T = len(ids)
    t = np.arange(T) / scaling
    freqs = np.outer(t, inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1)
    cos, sin = np.cos(emb)[:, None, :], np.sin(emb)[:, None, :]

    def norm(x, w):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w

    x = W["model.embed_tokens.weight"][ids]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for l in range(config["num_hidden_layers"]):
        p = "model.layers.%d." % l
        h = norm(x, W[p + "input_layernorm.weight"])
        q = (h @ W[p + "self_attn.q_proj.weight"].T).reshape(T, H, hd)
        k = (h @ W[p + "self_attn.k_proj.weight"].T).reshape(T, KVH, hd)
        v = (h @ W[p + "self_attn.v_proj.weight"].T).reshape(T, KVH, hd)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = np.repeat(k, H // KVH, axis=1)
        v = np.repeat(v, H // KVH, axis=1)
        scores = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(hd) + mask
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        o = np.einsum("hqk,khd->qhd", scores, v).reshape(T, D)
        x = x + o @ W[p + "self_attn.o_proj.weight"].T
        h = norm(x, W[p + "post_attention_layernorm.weight"])
        g = h @ W[p + "mlp.gate_proj.weight"].T
        x = x + ((g / (1 + np.exp(-g))) * (h @ W[p + "mlp.up_proj.weight"].T)) @ W[p + "mlp.down_proj.weight"].T
    x = norm(x[-1], W["model.norm.weight"])
    head = W.get("lm_head.weight", W["model.embed_tokens.weight"])
    if config.get("tie_word_embeddings"):
        head = W["model.embed_tokens.weight"]
    return head @ x


def generate(folder, prompt, steps):
    config, W = load(folder)
    stops = {config["bos_token_id"], config["eos_token_id"]}
    ids, out = list(prompt), []
    for _ in range(steps):
        nxt = int(np.argmax(forward(config, W, ids)))
        out.append(nxt)
        ids.append(nxt)
        if nxt in stops:
            break
    print("ids: " + " ".join(map(str, out)))


def main():
    cmd, folder = sys.argv[1], sys.argv[2]
    opts = {}
    rest = sys.argv[3:]
    i = 0
    while i < len(rest):
        key = rest[i][2:]
        if i + 1 < len(rest) and not rest[i + 1].startswith("--"):
            opts[key] = rest[i + 1]
            i += 2
        else:
            opts[key] = True
            i += 1
    if cmd == "write":
        write(folder, opts)
    else:
        generate(folder, [int(t) for t in opts["prompt-ids"].split(",")], int(opts["steps"]))


if __name__ == "__main__":
    main()
