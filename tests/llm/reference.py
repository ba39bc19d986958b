#!/usr/bin/python3
"""Independent PyTorch reference for llama2.c checkpoints: greedy decoding.

Reads the checkpoint itself (header + float32 arrays, ../shared/models/README.md) and runs
the Llama forward pass token by token with a KV cache, mirroring llama2.c's run.c:
RMSNorm (eps 1e-5), rotary embeddings on interleaved pairs, grouped-query attention, SwiGLU,
shared or separate classifier, argmax. Shares no code with Hexir.

  reference.py CKPT.bin --steps N [--prompt-ids 1,400,...]   prints "ids: ..." like hexir-generate
  reference.py CKPT.bin --steps N --bench [--threads 1]      also prints tokens/s to stderr
  reference.py CKPT.bin --steps N --kv-cache f16|bf16        K/V rows rounded when cached
  reference.py --write-random OUT.bin --dim 32 --hidden 64 --layers 2 --heads 4 --kv-heads 2
               --vocab -50 --seq-len 64 --seed 1               writes a random checkpoint
Run with Debian's /usr/bin/python3 (python3-torch).
"""
import argparse
import struct
import sys
import time

import torch


def load(path):
    data = open(path, "rb").read()
    dim, hidden, n_layers, n_heads, n_kv, vocab, seq_len = struct.unpack("<7i", data[:28])
    shared = vocab > 0
    vocab = abs(vocab)
    hs = dim // n_heads
    kv_dim = n_kv * hs
    flat = torch.frombuffer(bytearray(data[28:]), dtype=torch.float32)
    at = 0

    def take(*shape):
        nonlocal at
        n = 1
        for s in shape:
            n *= s
        t = flat[at:at + n].reshape(shape)
        at += n
        return t

    w = {}
    w["emb"] = take(vocab, dim)
    w["rms_att"] = take(n_layers, dim)
    w["wq"] = take(n_layers, dim, dim)
    w["wk"] = take(n_layers, kv_dim, dim)
    w["wv"] = take(n_layers, kv_dim, dim)
    w["wo"] = take(n_layers, dim, dim)
    w["rms_ffn"] = take(n_layers, dim)
    w["w1"] = take(n_layers, hidden, dim)
    w["w2"] = take(n_layers, dim, hidden)
    w["w3"] = take(n_layers, hidden, dim)
    w["rms_final"] = take(dim)
    take(seq_len * hs)  # two unused rotary tables
    w["cls"] = w["emb"] if shared else take(vocab, dim)
    cfg = dict(dim=dim, hidden=hidden, layers=n_layers, heads=n_heads, kv_heads=n_kv,
               vocab=vocab, seq_len=seq_len)
    return cfg, w


def rmsnorm(x, weight):
    ss = torch.sum(x * x) / x.shape[0] + 1e-5
    return weight * (x * (1.0 / torch.sqrt(ss)))


def generate(cfg, w, prompt, steps, kv_cache=None):
    dim, L, H, KVH = cfg["dim"], cfg["layers"], cfg["heads"], cfg["kv_heads"]
    hs = dim // H
    kv_dim = KVH * hs
    group = H // KVH
    seq = cfg["seq_len"]
    kcache = torch.zeros(L, seq, kv_dim)
    vcache = torch.zeros(L, seq, kv_dim)
    # Rotary frequencies per pair (llama2.c: 1 / 10000^(head_dim / head_size)).
    head_dim = (torch.arange(0, dim, 2) % hs).to(torch.float32)
    freq = 1.0 / torch.pow(torch.tensor(10000.0), head_dim / hs)

    def rope(v, pos):
        n = v.shape[0]
        val = pos * freq[: n // 2]
        c, s = torch.cos(val), torch.sin(val)
        pairs = v.reshape(-1, 2)
        v0, v1 = pairs[:, 0], pairs[:, 1]
        return torch.stack([v0 * c - v1 * s, v0 * s + v1 * c], dim=1).reshape(-1)

    out = []
    token = prompt[0]
    pos = 0
    while pos < seq:
        x = w["emb"][token].clone()
        for l in range(L):
            xb = rmsnorm(x, w["rms_att"][l])
            q = rope(w["wq"][l] @ xb, pos)
            k = rope(w["wk"][l] @ xb, pos)
            v = w["wv"][l] @ xb
            if kv_cache is not None:  # rounded once when stored, like hexir-import --kv-cache
                k, v = k.to(kv_cache).float(), v.to(kv_cache).float()
            kcache[l, pos] = k
            vcache[l, pos] = v
            att_out = torch.empty(dim)
            for h in range(H):
                qh = q[h * hs:(h + 1) * hs]
                kvh = h // group
                keys = kcache[l, : pos + 1, kvh * hs:(kvh + 1) * hs]
                vals = vcache[l, : pos + 1, kvh * hs:(kvh + 1) * hs]
                scores = (keys @ qh) / torch.sqrt(torch.tensor(float(hs)))
                p = torch.softmax(scores, dim=0)
                att_out[h * hs:(h + 1) * hs] = p @ vals
            x = x + w["wo"][l] @ att_out
            xb = rmsnorm(x, w["rms_ffn"][l])
            h1 = w["w1"][l] @ xb
            h3 = w["w3"][l] @ xb
            x = x + w["w2"][l] @ (h1 * torch.sigmoid(h1) * h3)
        x = rmsnorm(x, w["rms_final"])
        logits = w["cls"] @ x
        pos += 1
        if pos < len(prompt):
            token = prompt[pos]
            continue
        token = int(torch.argmax(logits))
        out.append(token)
        if token in (1, 2) or len(out) >= steps:
            break
    return out


def write_random(args):
    g = torch.Generator().manual_seed(args.seed)
    dim, hidden, L, H, KVH, V, seq = (args.dim, args.hidden, args.layers, args.heads,
                                      args.kv_heads, args.vocab, args.seq_len)
    hs = dim // H
    kv_dim = KVH * hs
    sizes = [abs(V) * dim, L * dim, L * dim * dim, L * kv_dim * dim, L * kv_dim * dim,
             L * dim * dim, L * dim, L * hidden * dim, L * dim * hidden, L * hidden * dim, dim,
             seq * hs]
    if V < 0:
        sizes.append(abs(V) * dim)
    with open(args.write_random, "wb") as f:
        f.write(struct.pack("<7i", dim, hidden, L, H, KVH, V, seq))
        for i, n in enumerate(sizes):
            scale = 1.0 if i in (1, 6, 10) else 0.5  # norms around 1, matrices larger
            t = torch.randn(n, generator=g) * scale
            if i in (1, 6, 10):
                t = 1.0 + 0.1 * t
            f.write(t.to(torch.float32).numpy().tobytes())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint", nargs="?")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--prompt-ids", default="1")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--write-random")
    ap.add_argument("--f16-weights", action="store_true",
                    help="round every weight to float16 (computing in float32), like hexir-import --weights=f16")
    ap.add_argument("--kv-cache", choices=("f32", "f16", "bf16"), default="f32",
                    help="round each K/V row to this type when stored, like hexir-import --kv-cache")
    for name in ("dim", "hidden", "layers", "heads", "kv-heads", "vocab", "seq-len", "seed"):
        ap.add_argument("--" + name, type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.write_random:
        write_random(args)
        return
    cfg, w = load(args.checkpoint)
    if args.f16_weights:
        w = {k: v.half().float() for k, v in w.items()}
    prompt = [int(t) for t in args.prompt_ids.split(",")]
    with torch.no_grad():
        start = time.perf_counter()
        kv = {"f32": None, "f16": torch.float16, "bf16": torch.bfloat16}[args.kv_cache]
        ids = generate(cfg, w, prompt, args.steps, kv)
        seconds = time.perf_counter() - start
    print("ids: " + " ".join(str(i) for i in ids))
    if args.bench:
        print("reference: %d prompt + %d generated tokens in %.3f ms: %.1f tokens/s" %
              (len(prompt), len(ids), seconds * 1e3, len(ids) / seconds), file=sys.stderr)


if __name__ == "__main__":
    main()
