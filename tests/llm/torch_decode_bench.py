#!/usr/bin/env python3
"""PyTorch decode-step benchmark for llama2.c checkpoints (the GPU peer of hexir-generate).

Same architecture as compiler/importers/llama and reference.py (RMSNorm eps 1e-5, rotary
embeddings on interleaved pairs, grouped-query attention, SwiGLU, shared or separate
classifier, greedy argmax), written for speed rather than for mirroring run.c: batch 1, one
token per step, a *static* KV cache per layer ([kv_heads][S][head_size]) and attention over all
S positions with a mask (pos <= current), so one decode step has fixed shapes and can be
captured once in a CUDA graph. The step reads the current token and position from device
tensors, writes K/V row `pos`, computes the argmax on the device, stores it into an ids
buffer and advances token and position itself: the timed loop launches (eager) or replays
(graph) N steps with no host synchronisation until the end.

  torch_decode_bench.py CKPT.bin [--device cuda|cpu] [--dtype f32|f16] [--tokens N]
                        [--repeat R] [--print-ids K] [--no-graph]
     prints   ids: <first K greedy ids from BOS>
              eager_ms_per_token: X        (fastest of R runs of N steps, after a warm-up)
              graph_ms_per_token: X        (CUDA only: one captured step, replayed N times)
              graph_sync_ms_per_token: X   (the same, reading each id to the host, like
                                            hexir-generate's loop condition does)
  torch_decode_bench.py CKPT.bin --prefill IDS [--device ...] [--dtype ...] [--repeat R]
     prints   prefill_ms: X                (fastest of R runs, after a warm-up: one batched
                                            forward over the prompt IDS (comma-separated, BOS not
                                            added) writing positions 0..T-1 of the KV caches,
                                            causal attention, then the last position's greedy id)
              prefill_next_id: N
  torch_decode_bench.py --write-random OUT.bin --dim 768 --hidden 2048 --layers 12 --heads 12
                        --kv-heads 12 --vocab 32000 --seq-len 256 --seed 768 [--header-only]
     writes a random llama2.c checkpoint (float32, as the format requires); --header-only
     writes the same header and a sparse file of the same size (all zeros, no disk blocks):
     enough for hexir-import, whose module depends only on the header (needs no torch).

--dtype f16: weights, activations and KV cache in float16 (cuBLAS accumulates in f32);
RMSNorm, rotary and softmax computed in float32. f32 disables TF32. The random checkpoint's
matrices have unit-scale outputs (N(0, 1/fan_in)); its embedding rows 1 and 2 (BOS/EOS; the
classifier is shared) are scaled by 0.05, so their logits stay near 0, far below the
maximum over the vocabulary, and greedy decoding never stops early (hexir-generate stops at 1/2).
"""
import argparse
import math
import struct
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # --write-random --header-only needs no torch
    torch = F = None


def layout(dim, hidden, L, H, KVH, V, seq):
    """[(name, shape)] of the float32 arrays after the header, in file order."""
    hs = dim // H
    kv = KVH * hs
    arrays = [("emb", (abs(V), dim)), ("rms_att", (L, dim)), ("wq", (L, dim, dim)),
              ("wk", (L, kv, dim)), ("wv", (L, kv, dim)), ("wo", (L, dim, dim)),
              ("rms_ffn", (L, dim)), ("w1", (L, hidden, dim)), ("w2", (L, dim, hidden)),
              ("w3", (L, hidden, dim)), ("rms_final", (dim,)), ("rotary", (seq * hs,))]
    if V < 0:
        arrays.append(("cls", (abs(V), dim)))
    return arrays


def write_random(args):
    header = (args.dim, args.hidden, args.layers, args.heads, args.kv_heads, args.vocab,
              args.seq_len)
    if min(header[:5]) <= 0 or args.vocab == 0 or args.seq_len <= 0 or args.dim % args.heads:
        sys.exit("torch_decode_bench: --write-random needs positive --dim --hidden --layers "
                 "--heads --kv-heads --seq-len, a nonzero --vocab, dim divisible by heads")
    arrays = layout(*header)
    total = 28 + 4 * sum(math.prod(s) for _, s in arrays)
    with open(args.write_random, "wb") as f:
        f.write(struct.pack("<7i", *header))
        if args.header_only:
            f.truncate(total)
            return
        g = torch.Generator().manual_seed(args.seed)
        for name, shape in arrays:
            if name in ("rms_att", "rms_ffn", "rms_final"):
                t = 1.0 + 0.1 * torch.randn(shape, generator=g)
            elif name == "rotary":
                t = torch.zeros(shape)
            else:  # [out][in] matrices and the embedding: unit-scale outputs
                t = torch.randn(shape, generator=g) / math.sqrt(shape[-1])
                if name == "emb":
                    t[1:3] *= 0.05  # BOS/EOS logits near 0: never the argmax (see the docstring)
            buf = bytearray(4 * t.numel())  # numpy-free: torch writes into the bytes
            torch.frombuffer(buf, dtype=torch.float32).copy_(t.reshape(-1))
            f.write(buf)
        assert f.tell() == total


def load(path, device, dtype):
    data = open(path, "rb").read()
    header = struct.unpack("<7i", data[:28])
    dim, hidden, L, H, KVH, V, seq = header
    arrays = layout(*header)
    need = 28 + 4 * sum(math.prod(s) for _, s in arrays)
    if len(data) < need:
        sys.exit("torch_decode_bench: %s has %d bytes, its header needs %d" % (path, len(data), need))
    flat = torch.frombuffer(bytearray(data[28:need]), dtype=torch.float32)
    w, at = {}, 0
    for name, shape in arrays:
        n = math.prod(shape)
        if name != "rotary":
            w[name] = flat[at:at + n].reshape(shape).to(device=device, dtype=dtype)
        at += n
    if V > 0:
        w["cls"] = w["emb"]
    cfg = dict(dim=dim, hidden=hidden, layers=L, heads=H, kv_heads=KVH, vocab=abs(V), seq_len=seq)
    return cfg, w


class Decoder:
    """Static state + one decode step. All state lives in device tensors whose storage never
    changes (reset() writes in place), so a CUDA graph captured over step() stays valid."""

    def __init__(self, cfg, w, device, dtype, cache_len, max_tokens):
        self.cfg, self.w, self.dtype = cfg, w, dtype
        D, H, KVH, L = cfg["dim"], cfg["heads"], cfg["kv_heads"], cfg["layers"]
        self.hs = D // H
        self.group = H // KVH
        S = cache_len
        self.kc = torch.zeros(L, KVH, S, self.hs, device=device, dtype=dtype)
        self.vc = torch.zeros(L, KVH, S, self.hs, device=device, dtype=dtype)
        self.tok = torch.ones(1, dtype=torch.long, device=device)
        self.pos = torch.zeros(1, dtype=torch.long, device=device)
        self.ids = torch.full((max_tokens,), -1, dtype=torch.long, device=device)
        self.positions = torch.arange(S, device=device)
        # Rotary tables [S][hs/2], float32, as run.c: val = pos * 10000^(-2j/hs).
        j = torch.arange(0, self.hs, 2, dtype=torch.float32)
        freq = 1.0 / torch.pow(torch.tensor(10000.0), j / self.hs)
        val = torch.arange(S, dtype=torch.float32)[:, None] * freq[None, :]
        self.cos = torch.cos(val).to(device)
        self.sin = torch.sin(val).to(device)
        self.scale = 1.0 / math.sqrt(self.hs)

    def reset(self):
        self.kc.zero_()
        self.vc.zero_()
        self.tok.fill_(1)
        self.pos.zero_()
        self.ids.fill_(-1)

    def rmsnorm(self, x, weight):
        xf = x.float()
        xf = xf * torch.rsqrt(torch.mean(xf * xf, dim=-1, keepdim=True) + 1e-5)
        return (xf * weight.float()).to(self.dtype)

    def rope(self, v, heads, cos, sin):
        p = v.float().view(heads, self.hs // 2, 2)
        v0, v1 = p[..., 0], p[..., 1]
        return torch.stack([v0 * cos - v1 * sin, v0 * sin + v1 * cos], dim=-1).view(heads, self.hs)

    def step(self):
        w, H, KVH, hs = self.w, self.cfg["heads"], self.cfg["kv_heads"], self.hs
        x = w["emb"].index_select(0, self.tok)                      # [1][D]
        cos = self.cos.index_select(0, self.pos)                     # [1][hs/2]
        sin = self.sin.index_select(0, self.pos)
        masked = (self.positions > self.pos).view(1, 1, -1)          # future positions
        for l in range(self.cfg["layers"]):
            xb = self.rmsnorm(x, w["rms_att"][l])
            q = self.rope(F.linear(xb, w["wq"][l]), H, cos, sin).to(self.dtype)
            k = self.rope(F.linear(xb, w["wk"][l]), KVH, cos, sin).to(self.dtype)
            v = F.linear(xb, w["wv"][l]).view(KVH, hs)
            self.kc[l].index_copy_(1, self.pos, k.view(KVH, 1, hs))
            self.vc[l].index_copy_(1, self.pos, v.view(KVH, 1, hs))
            qg = q.view(KVH, self.group, hs)
            scores = torch.matmul(qg, self.kc[l].transpose(1, 2)).float() * self.scale
            p = torch.softmax(scores.masked_fill(masked, float("-inf")), dim=-1).to(self.dtype)
            att = torch.matmul(p, self.vc[l]).reshape(1, -1)          # [1][D]
            x = x + F.linear(att, w["wo"][l])
            xb = self.rmsnorm(x, w["rms_ffn"][l])
            x = x + F.linear(F.silu(F.linear(xb, w["w1"][l])) * F.linear(xb, w["w3"][l]), w["w2"][l])
        x = self.rmsnorm(x, w["rms_final"])
        nxt = torch.argmax(F.linear(x, w["cls"]).float(), dim=-1)    # [1]
        self.ids.index_copy_(0, self.pos, nxt)
        self.tok.copy_(nxt)
        self.pos.add_(1)


    def prefill(self, ids):
        """One forward over the prompt `ids` ([T] on the device) from position 0: the whole
        prompt batched (one matmul a projection, causal attention over the prompt), caches
        written at 0..T-1; returns the greedy id after the last prompt token ([1])."""
        w, H, KVH, hs, T = self.w, self.cfg["heads"], self.cfg["kv_heads"], self.hs, ids.numel()
        x = w["emb"].index_select(0, ids)                              # [T][D]
        cos, sin = self.cos[:T].view(T, 1, -1), self.sin[:T].view(T, 1, -1)

        def rope(v, heads):                                            # [T][heads][hs]
            p = v.float().view(T, heads, hs // 2, 2)
            v0, v1 = p[..., 0], p[..., 1]
            return torch.stack([v0 * cos - v1 * sin, v0 * sin + v1 * cos], dim=-1).view(T, heads, hs)

        for l in range(self.cfg["layers"]):
            xb = self.rmsnorm(x, w["rms_att"][l])
            q = rope(F.linear(xb, w["wq"][l]), H).to(self.dtype).transpose(0, 1)    # [H][T][hs]
            k = rope(F.linear(xb, w["wk"][l]), KVH).to(self.dtype).transpose(0, 1)  # [KVH][T][hs]
            v = F.linear(xb, w["wv"][l]).view(T, KVH, hs).transpose(0, 1)
            self.kc[l][:, :T].copy_(k)
            self.vc[l][:, :T].copy_(v)
            att = causal_attention(q, k.repeat_interleave(self.group, dim=0),
                                   v.repeat_interleave(self.group, dim=0), self.scale)
            x = x + F.linear(att.transpose(0, 1).reshape(T, -1), w["wo"][l])
            xb = self.rmsnorm(x, w["rms_ffn"][l])
            x = x + F.linear(F.silu(F.linear(xb, w["w1"][l])) * F.linear(xb, w["w3"][l]), w["w2"][l])
        x = self.rmsnorm(x[-1:], w["rms_final"])
        return torch.argmax(F.linear(x, w["cls"]).float(), dim=-1)


def causal_attention(q, k, v, scale):
    """softmax(q k^T scale, causal) v over [heads][T][hs]: PyTorch's fused kernel where it has
    one (2.0+), else the three steps (softmax in float32)."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
    T = q.shape[1]
    scores = torch.matmul(q, k.transpose(1, 2)).float() * scale
    future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    return torch.matmul(torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1).to(v.dtype), v)


def sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(run, device, tokens, repeat, reset):
    best = float("inf")
    for _ in range(repeat):
        reset()
        sync(device)
        start = time.perf_counter()
        run(tokens)
        sync(device)
        best = min(best, time.perf_counter() - start)
    return best * 1e3 / tokens


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoint", nargs="?")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", choices=("f32", "f16"), default="f32")
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--cache-len", type=int, default=0, help="KV cache positions (default: seq_len)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--print-ids", type=int, default=20)
    ap.add_argument("--no-graph", action="store_true")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--prefill", help="time a batched forward over these comma-separated prompt ids")
    ap.add_argument("--write-random")
    ap.add_argument("--header-only", action="store_true")
    for name in ("dim", "hidden", "layers", "heads", "kv-heads", "vocab", "seq-len", "seed"):
        ap.add_argument("--" + name, type=int, default=0)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.write_random:
        write_random(args)
        return
    if not args.checkpoint:
        ap.error("a checkpoint (or --write-random) is required")
    dev = args.device
    if dev.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("torch_decode_bench: CUDA is not available to this torch " + torch.__version__)
    torch.set_float32_matmul_precision("highest")  # no TF32 in the f32 runs
    dtype = torch.float16 if args.dtype == "f16" else torch.float32
    cfg, w = load(args.checkpoint, dev, dtype)
    S = args.cache_len or cfg["seq_len"]
    if args.prefill:
        prompt = [int(t) for t in args.prefill.split(",")]
        if not 0 < len(prompt) <= S:
            sys.exit("torch_decode_bench: --prefill of %d ids must fit the KV cache (%d)" % (len(prompt), S))
        dec = Decoder(cfg, w, dev, dtype, S, 1)
        ids = torch.tensor(prompt, dtype=torch.long, device=dev)
        with torch.no_grad():
            nxt = dec.prefill(ids)  # warm-up (cuBLAS handles, kernels)
            best = float("inf")
            for _ in range(args.repeat):
                dec.reset()
                sync(dev)
                start = time.perf_counter()
                nxt = dec.prefill(ids)
                next_id = int(nxt.item())  # the host has the id, as hexir-generate's call ends
                best = min(best, time.perf_counter() - start)
        print("prefill_next_id: %d" % next_id)
        print("prefill_ms: %.4f" % (best * 1e3))
        print("config: prefill of %d ids, %s, torch %s on %s" %
              (len(prompt), args.dtype, torch.__version__,
               torch.cuda.get_device_name() if dev.startswith("cuda") else "cpu"), file=sys.stderr)
        return
    n = args.tokens
    if not 0 < n <= S:
        sys.exit("torch_decode_bench: --tokens %d must be in 1..%d (the KV cache)" % (n, S))
    dec = Decoder(cfg, w, dev, dtype, S, n)

    def eager(count):
        for _ in range(count):
            dec.step()

    with torch.no_grad():
        # Warm-up (on a side stream: CUDA graph capture wants the allocator warmed there).
        side = torch.cuda.Stream() if dev.startswith("cuda") else None
        if side is not None:
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                dec.reset()
                eager(min(n, 8))
            torch.cuda.current_stream().wait_stream(side)
        dec.reset()
        eager(min(n, 8))
        eager_ms = timed(eager, dev, n, args.repeat, dec.reset)
        ids = dec.ids.tolist()
        print("ids: " + " ".join(str(i) for i in ids[:args.print_ids]))
        print("eager_ms_per_token: %.4f" % eager_ms)
        if side is not None and not args.no_graph:
            dec.reset()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                dec.step()

            def replay(count):
                for _ in range(count):
                    graph.replay()

            def replay_sync(count):
                for _ in range(count):
                    graph.replay()
                    dec.tok.item()

            graph_ms = timed(replay, dev, n, args.repeat, dec.reset)
            graph_ids = dec.ids.tolist()
            graph_sync_ms = timed(replay_sync, dev, n, args.repeat, dec.reset)
            print("graph_ms_per_token: %.4f" % graph_ms)
            print("graph_sync_ms_per_token: %.4f" % graph_sync_ms)
            if graph_ids != ids:
                print("graph-ids differ from eager: " + " ".join(str(i) for i in graph_ids[:args.print_ids]))
    print("config: dim %d hidden %d layers %d heads %d kv_heads %d vocab %d, %s, cache %d, "
          "%d tokens from BOS, torch %s on %s" %
          (cfg["dim"], cfg["hidden"], cfg["layers"], cfg["heads"], cfg["kv_heads"], cfg["vocab"],
           args.dtype, S, n, torch.__version__,
           torch.cuda.get_device_name() if dev.startswith("cuda") else "cpu"), file=sys.stderr)


if __name__ == "__main__":
    main()
