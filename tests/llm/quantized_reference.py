#!/usr/bin/python3
"""An independent reference for Hexir's quantized GGUF import: pure Python (no numpy), f64.

  quantized_reference.py check-blocks
      dequantizes hand-built blocks of every format and checks them against values worked
      out by hand from the format's definition (exit 1 naming the first mismatch).
  quantized_reference.py write-random OUT.bin DIM HIDDEN LAYERS HEADS KV_HEADS VOCAB SEQ SEED
      writes a random llama2.c checkpoint with a separate classifier (whose rows for ids 0-2
      are scaled by 0.01, so that greedy decoding runs its full length).
  quantized_reference.py generate MODEL.gguf STEPS [IDS...]
      reads the GGUF itself, dequantizes every tensor (loops written from ggml's
      dequantize_row_* definitions, not from Hexir's kernels), runs llama2.c's forward pass
      in f64 from BOS (or teacher-forced through IDS) and prints "ID GAP" per step: the
      greedy id and the gap between the two largest logits.
  quantized_reference.py compare NAME MODEL.gguf HEXIR_IDS LLAMA_CPP_STEPS MAX_GAP
      HEXIR_IDS: hexir-generate's "ids: ..." line; LLAMA_CPP_STEPS: llama_cpp_greedy.mjs's
      "ID GAP" lines. Equal ids pass. At the first differing step s, the reference is run
      teacher-forced on Hexir's first s ids: it passes when llama.cpp's top-2 gap at s is
      below MAX_GAP and the reference picks Hexir's id or its own top-2 gap is below MAX_GAP
      (a near tie, not a wrong kernel); it prints both gaps either way.

Layouts (little-endian, d/dmin/m f16): q8_0 {d, i8 qs[32]}; q4_0 {d, qs[16]} (low nibbles are
elements 0..15, high 16..31, value d*(q-8)); q4_1 {d, m, qs[16]} (d*q + m); q5_0 {d, qh[4],
qs[16]} (bit e of qh is element e's fifth bit, d*(q-16)); q4_k {d, dmin, scales[12], qs[128]}
and q5_k {d, dmin, scales[12], qh[32], qs[128]} (8 sub-blocks of 32, 6-bit scales/mins,
d*sc*q - dmin*m); q6_k {ql[128], qh[64], i8 scales[16], d}; bf16 (the f32's high half).
"""
import math
import random
import struct
import sys

BLOCKS = {  # ggml type id: (name, elements per block, bytes per block)
    0: ("f32", 1, 4), 1: ("f16", 1, 2), 2: ("q4_0", 32, 18), 3: ("q4_1", 32, 20), 6: ("q5_0", 32, 22),
    8: ("q8_0", 32, 34), 12: ("q4_k", 256, 144), 13: ("q5_k", 256, 176), 14: ("q6_k", 256, 210),
    30: ("bf16", 1, 2),
}


def f16(b, o):
    return struct.unpack_from("<e", b, o)[0]


def scale_min_k4(j, q):
    if j < 4:
        return q[j] & 63, q[j + 4] & 63
    return (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j] >> 6) << 4)


def dequant_block(name, b):
    """One block's values, following ggml's dequantize_row_<name> loops."""
    if name == "f32":
        return [struct.unpack_from("<f", b, 0)[0]]
    if name == "f16":
        return [f16(b, 0)]
    if name == "bf16":
        return [struct.unpack("<f", b"\0\0" + bytes(b[0:2]))[0]]
    if name == "q8_0":
        d = f16(b, 0)
        return [d * struct.unpack_from("<b", b, 2 + j)[0] for j in range(32)]
    if name in ("q4_0", "q4_1", "q5_0"):
        d = f16(b, 0)
        m = f16(b, 2) if name == "q4_1" else 0.0
        qh = struct.unpack_from("<I", b, 2)[0] if name == "q5_0" else 0
        qs = b[{"q4_0": 2, "q4_1": 4, "q5_0": 6}[name]:][:16]
        y = [0.0] * 32
        for j in range(16):
            x0, x1 = qs[j] & 0xF, qs[j] >> 4
            if name == "q5_0":
                x0 |= ((qh >> j) << 4) & 0x10
                x1 |= (qh >> (j + 12)) & 0x10
                y[j], y[j + 16] = (x0 - 16) * d, (x1 - 16) * d
            elif name == "q4_0":
                y[j], y[j + 16] = (x0 - 8) * d, (x1 - 8) * d
            else:
                y[j], y[j + 16] = x0 * d + m, x1 * d + m
        return y
    if name in ("q4_k", "q5_k"):
        d, dmin = f16(b, 0), f16(b, 2)
        scales = b[4:16]
        qh = b[16:48] if name == "q5_k" else None
        ql = b[48:176] if name == "q5_k" else b[16:144]
        y = []
        is_, u1, u2 = 0, 1, 2
        for j in range(0, 256, 64):
            sc, m = scale_min_k4(is_, scales)
            d1, m1 = d * sc, dmin * m
            sc, m = scale_min_k4(is_ + 1, scales)
            d2, m2 = d * sc, dmin * m
            q = ql[j // 2:j // 2 + 32]
            for l in range(32):
                h = (16 if qh[l] & u1 else 0) if qh is not None else 0
                y.append(d1 * ((q[l] & 0xF) + h) - m1)
            for l in range(32):
                h = (16 if qh[l] & u2 else 0) if qh is not None else 0
                y.append(d2 * ((q[l] >> 4) + h) - m2)
            is_ += 2
            u1 <<= 2
            u2 <<= 2
        return y
    if name == "q6_k":
        ql, qh = b[0:128], b[128:192]
        sc = struct.unpack_from("<16b", b, 192)
        d = f16(b, 208)
        y = [0.0] * 256
        for n in range(2):
            o, lo, ho, so = 128 * n, 64 * n, 32 * n, 8 * n
            for l in range(32):
                is_ = l // 16
                q1 = ((ql[lo + l] & 0xF) | (((qh[ho + l] >> 0) & 3) << 4)) - 32
                q2 = ((ql[lo + l + 32] & 0xF) | (((qh[ho + l] >> 2) & 3) << 4)) - 32
                q3 = ((ql[lo + l] >> 4) | (((qh[ho + l] >> 4) & 3) << 4)) - 32
                q4 = ((ql[lo + l + 32] >> 4) | (((qh[ho + l] >> 6) & 3) << 4)) - 32
                y[o + l] = d * sc[so + is_] * q1
                y[o + l + 32] = d * sc[so + is_ + 2] * q2
                y[o + l + 64] = d * sc[so + is_ + 4] * q3
                y[o + l + 96] = d * sc[so + is_ + 6] * q4
        return y
    raise ValueError("unsupported type " + name)


def dequant(type_id, data, count):
    name, be, bb = BLOCKS[type_id]
    out = []
    for k in range(count // be):
        out += dequant_block(name, data[k * bb:(k + 1) * bb])
    return out


def read_gguf(path):
    b = open(path, "rb").read()
    assert b[:4] == b"GGUF", path
    version, n_t, n_kv = struct.unpack_from("<IQQ", b, 4)
    o = 24
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    fmt = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<B", 10: "<Q", 11: "<q", 12: "<d"}

    def string(o):
        n = struct.unpack_from("<Q", b, o)[0]
        return b[o + 8:o + 8 + n].decode("utf-8", "replace"), o + 8 + n

    def value(t, o):
        if t == 8:
            return string(o)
        if t == 9:
            et, n = struct.unpack_from("<IQ", b, o)
            o += 12
            vals = []
            for _ in range(n):
                v, o = value(et, o)
                vals.append(v)
            return vals, o
        return struct.unpack_from(fmt[t], b, o)[0], o + sizes[t]

    meta = {}
    for _ in range(n_kv):
        key, o = string(o)
        t = struct.unpack_from("<I", b, o)[0]
        meta[key], o = value(t, o + 4)
    infos = []
    for _ in range(n_t):
        name, o = string(o)
        nd = struct.unpack_from("<I", b, o)[0]
        ne = list(struct.unpack_from("<%dQ" % nd, b, o + 4))
        t, off = struct.unpack_from("<IQ", b, o + 4 + 8 * nd)
        o += 4 + 8 * nd + 12
        infos.append((name, ne, t, off))
    align = meta.get("general.alignment", 32)
    base = (o + align - 1) // align * align
    tensors = {}
    for name, ne, t, off in infos:
        count = 1
        for d in ne:
            count *= d
        _, be, bb = BLOCKS[t]
        flat = dequant(t, b[base + off:base + off + count // be * bb], count)
        tensors[name] = [flat[r * ne[0]:(r + 1) * ne[0]] for r in range(count // ne[0])] if len(ne) == 2 else flat
    return meta, tensors


def generate(path, steps, forced):
    meta, w = read_gguf(path)
    dim, hidden = meta["llama.embedding_length"], meta["llama.feed_forward_length"]
    L, H = meta["llama.block_count"], meta["llama.attention.head_count"]
    KVH = meta.get("llama.attention.head_count_kv", H)
    eps = meta.get("llama.attention.layer_norm_rms_epsilon", 1e-5)
    theta = meta.get("llama.rope.freq_base", 10000.0)
    hs = dim // H
    emb = w["token_embd.weight"]
    cls = w.get("output.weight", emb)

    def rms(x, g):
        s = 1.0 / math.sqrt(sum(v * v for v in x) / len(x) + eps)
        return [g[i] * x[i] * s for i in range(len(x))]

    def mv(m, x):
        return [sum(a * b for a, b in zip(row, x)) for row in m]

    kc = [[] for _ in range(L)]
    vc = [[] for _ in range(L)]
    tok, pos = 1, 0
    out = []
    while len(out) < steps:
        x = list(emb[tok])
        for l in range(L):
            p = "blk.%d." % l
            xn = rms(x, w[p + "attn_norm.weight"])
            q, k, v = mv(w[p + "attn_q.weight"], xn), mv(w[p + "attn_k.weight"], xn), mv(w[p + "attn_v.weight"], xn)
            for vec in (q, k):
                for i in range(0, len(vec), 2):
                    ang = pos * theta ** (-(i % hs) / hs)
                    c, s = math.cos(ang), math.sin(ang)
                    a, b2 = vec[i], vec[i + 1]
                    vec[i], vec[i + 1] = a * c - b2 * s, a * s + b2 * c
            kc[l].append(k)
            vc[l].append(v)
            att = []
            for h in range(H):
                kvh = h // (H // KVH)
                qh = q[h * hs:(h + 1) * hs]
                sc = [sum(qh[i] * kk[kvh * hs + i] for i in range(hs)) / math.sqrt(hs) for kk in kc[l]]
                mx = max(sc)
                e = [math.exp(s - mx) for s in sc]
                tot = sum(e)
                att += [sum(e[t] / tot * vc[l][t][kvh * hs + i] for t in range(len(e))) for i in range(hs)]
            o = mv(w[p + "attn_output.weight"], att)
            x = [a + b for a, b in zip(x, o)]
            xn = rms(x, w[p + "ffn_norm.weight"])
            g, u = mv(w[p + "ffn_gate.weight"], xn), mv(w[p + "ffn_up.weight"], xn)
            hsw = [a / (1 + math.exp(-a)) * b for a, b in zip(g, u)]
            d = mv(w[p + "ffn_down.weight"], hsw)
            x = [a + b for a, b in zip(x, d)]
        logits = mv(cls, rms(x, w["output_norm.weight"]))
        order = sorted(range(len(logits)), key=lambda i: (-logits[i], i))
        best = order[0]
        print(best, "%.6g" % (logits[order[0]] - logits[order[1]]), flush=True)
        out.append(best)
        if best in (1, 2) and len(out) > len(forced):
            break
        tok = forced[len(out) - 1] if len(out) <= len(forced) else best
        pos += 1


def run_generate(path, steps, forced):
    """generate()'s lines as (id, gap) pairs."""
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        generate(path, steps, forced)
    return [(int(a), float(b)) for a, b in (line.split() for line in buf.getvalue().splitlines())]


def compare(name, path, hexir_line, llama_path, max_gap):
    hexir = [int(t) for t in hexir_line.split(":", 1)[1].split()]
    llama = [(int(a), float(b)) for a, b in (line.split() for line in open(llama_path) if line.strip())]
    n = min(len(hexir), len(llama))
    first = next((s for s in range(n) if hexir[s] != llama[s][0]), None)
    if first is None:
        if len(hexir) != len(llama):
            print("%s: FAIL: %d Hexir ids, %d llama.cpp ids (equal up to there)" % (name, len(hexir), len(llama)))
            return False
        print("%s: %d greedy ids equal llama.cpp's" % (name, n))
        return True
    ref_id, ref_gap = run_generate(path, first + 1, hexir[:first])[-1]
    llama_gap = llama[first][1]
    ok = llama_gap < max_gap and (ref_id == hexir[first] or ref_gap < max_gap)
    print("%s: %s: %d ids equal, then at step %d Hexir %d, llama.cpp %d (its top-2 logit gap %.4g); the f64 "
          "reference picks %d (top-2 gap %.4g)" % (name, "divergence at a near tie" if ok else "FAIL", first, first,
                                                   hexir[first], llama[first][0], llama_gap, ref_id, ref_gap))
    return ok


def write_random(path, dim, hidden, layers, heads, kv_heads, vocab, seq, seed):
    rng = random.Random(seed)
    hs = dim // heads
    kv = kv_heads * hs
    vals = []

    def mat(rows, cols, scale):
        vals.extend(rng.uniform(-scale, scale) for _ in range(rows * cols))

    mat(vocab, dim, 1.0)
    shapes = [(dim, 1), (dim, dim), (kv, dim), (kv, dim), (dim, dim), (dim, 1), (hidden, dim), (dim, hidden), (hidden, dim)]
    for r, c in shapes:  # llama2.c stores each kind for every layer in turn
        for _ in range(layers):
            if c == 1:
                vals.extend(1.0 + rng.uniform(-0.2, 0.2) for _ in range(r))
            else:
                mat(r, c, 1.7 / math.sqrt(c))
    vals.extend(1.0 for _ in range(dim))
    vals.extend(0.0 for _ in range(seq * hs))  # llama2.c's unused rotary tables
    start = len(vals)
    mat(vocab, dim, 1.0)  # the classifier (negative vocab in the header)
    for i in range(start, start + 3 * dim):  # <unk>, BOS, EOS near 0: generation runs its full length
        vals[i] *= 0.01
    with open(path, "wb") as f:
        f.write(struct.pack("<7i", dim, hidden, layers, heads, kv_heads, -vocab, seq))
        f.write(struct.pack("<%df" % len(vals), *vals))


def check_blocks():
    h = lambda v: struct.pack("<e", v)
    cases = []
    # q8_0: d = 0.5, qs[j] = j - 16
    cases.append(("q8_0", h(0.5) + struct.pack("<32b", *[j - 16 for j in range(32)]), [0.5 * (j - 16) for j in range(32)]))
    # q4_0: d = 2, byte j holds j (low) and 15 - j (high)
    qs = bytes((j & 15) | ((15 - j) << 4) for j in range(16))
    cases.append(("q4_0", h(2.0) + qs, [2.0 * (j - 8) for j in range(16)] + [2.0 * (15 - j - 8) for j in range(16)]))
    # q4_1: d = 0.5, m = -1, same nibbles
    cases.append(("q4_1", h(0.5) + h(-1.0) + qs, [0.5 * j - 1 for j in range(16)] + [0.5 * (15 - j) - 1 for j in range(16)]))
    # q5_0: d = 1, qh = odd elements have the fifth bit
    cases.append(("q5_0", h(1.0) + struct.pack("<I", 0xAAAAAAAA) + qs,
                  [(j | (16 * (j & 1))) - 16 for j in range(16)] + [((15 - j) | (16 * (j & 1))) - 16 for j in range(16)]))
    # q4_k: d = 1, dmin = 0.5; sub-block s has scale s + 1 and min 2s (packed by hand below:
    # bytes 0-3 scales 0-3 with the high bits of scales 4-7 in bits 6-7, 4-7 mins likewise,
    # 8-11 low nibbles of scales/mins 4-7); qs = 0x21: low nibble 1, high 2.
    sc, mn = [s + 1 for s in range(8)], [2 * s for s in range(8)]
    packed = bytes([(sc[j] & 63) | ((sc[j + 4] >> 4) << 6) for j in range(4)] +
                   [(mn[j] & 63) | ((mn[j + 4] >> 4) << 6) for j in range(4)] +
                   [(sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4) for j in range(4)])
    expect = [sc[s] * (1 if s % 2 == 0 else 2) - 0.5 * mn[s] for s in range(8) for _ in range(32)]
    cases.append(("q4_k", h(1.0) + h(0.5) + packed + bytes([0x21] * 128), expect))
    # q5_k: as q4_k plus qh[l] = 0xFF for l < 16: elements with l < 16 get +16
    qh5 = bytes([0xFF] * 16 + [0] * 16)
    expect5 = [sc[s] * ((1 if s % 2 == 0 else 2) + (16 if l < 16 else 0)) - 0.5 * mn[s] for s in range(8) for l in range(32)]
    cases.append(("q5_k", h(1.0) + h(0.5) + packed + qh5 + bytes([0x21] * 128), expect5))
    # q6_k: d = 0.25, scales[g] = g - 8 (group g = 16 elements in ql/qh order below), ql = 0x53
    # (low 3, high 5), qh = 0b11100100 (quarters 0..3 get high bits 0, 1, 2, 3)
    scales6 = [g - 8 for g in range(16)]
    expect6 = []
    for e in range(256):
        hh, t, l = e // 128, (e // 32) % 4, e % 32
        low = 3 if t < 2 else 5
        q = (low | (t << 4)) - 32
        expect6.append(0.25 * scales6[8 * hh + 2 * t + l // 16] * q)
    cases.append(("q6_k", bytes([0x53] * 128) + bytes([0b11100100] * 64) + struct.pack("<16b", *scales6) + h(0.25), expect6))
    cases.append(("bf16", struct.pack("<H", 0x3FC0), [1.5]))
    for name, block, want in cases:
        got = dequant_block(name, block)
        bad = [i for i in range(len(want)) if got[i] != want[i]]
        if len(got) != len(want) or bad:
            print("%s: element %s is %s, expected %s" % (name, bad[:1], [got[i] for i in bad[:1]], [want[i] for i in bad[:1]]))
            sys.exit(1)
        print("%s: %d values as expected" % (name, len(want)))


def main():
    cmd = sys.argv[1]
    if cmd == "check-blocks":
        check_blocks()
    elif cmd == "write-random":
        write_random(sys.argv[2], *[int(a) for a in sys.argv[3:11]])
    elif cmd == "compare":
        sys.exit(0 if compare(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], float(sys.argv[6])) else 1)
    elif cmd == "generate":
        generate(sys.argv[2], int(sys.argv[3]), [int(a) for a in sys.argv[4:]])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
