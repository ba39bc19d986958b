#include "compiler/importers/llama/Sampler.h"

#include <algorithm>
#include <functional>
#include <sstream>
#include <vector>

#include "compiler/importers/llama/MlirTextEmitter.h"

// Kernel bodies define their constants inside the body (a kernel captures only values, and the
// CUDA target outlines each body on its own). Host scalars (prompt length, step) are captured.

namespace hexir::compiler::llama {
namespace {

class SamplerWriter {
 public:
  SamplerWriter(std::ostream& os, int64_t vocab, std::string prefix)
      : e_(os, std::move(prefix)), V_(vocab) {
    C_ = 1;
    for (int64_t c = std::min<int64_t>(V_, 256); c >= 1; --c)
      if (V_ % c == 0) {
        C_ = c;
        break;
      }
    R_ = V_ / C_;
  }

  std::string Run(const SamplerOperands& in) {
    in_ = in;
    const std::string lt = Grid("f32"), kt = Grid("i64");
    std::string l2 = Fresh("logits");
    e_.out() << "    " << l2 << " = tensor.expand_shape " << in.logits << " [[0, 1]] output_shape [" << R_
        << ", " << C_ << "] : tensor<" << V_ << "xf32> into " << lt << "\n";
    std::string penalized = Penalize(l2);
    std::string keys = Map({{penalized, lt}}, "i64", [&](const Args& a) {
      std::string text;
      return text + L("linalg.yield " + Key(a[0], &text) + " : i64");
    });

    // top-k: the largest threshold with at least k keys at or above it.
    std::string need_k = Scalar({}, [&](const Args&) {
      std::string k = Fresh(), v = Fresh(), zero = Fresh(), off = Fresh(), big = Fresh(), all = Fresh(),
                  r = Fresh();
      return Extract(k, in_.ints, kTopK, "i64") + L(v + " = arith.constant " + std::to_string(V_) + " : i64") +
             L(zero + " = arith.constant 0 : i64") + L(off + " = arith.cmpi sle, " + k + ", " + zero + " : i64") +
             L(big + " = arith.cmpi sgt, " + k + ", " + v + " : i64") +
             L(all + " = arith.ori " + off + ", " + big + " : i1") +
             L(r + " = arith.select " + all + ", " + v + ", " + k + " : i64") + L("linalg.yield " + r + " : i64");
    });
    std::string top_k = Search(keys, "", need_k);

    // The maximum penalized logit and the fixed-point weights of the top-k candidates.
    std::string m = Reduce(penalized, "f32", "-3.0e+38", [&](const std::string& acc, const std::string& x) {
      std::string r = Fresh();
      return std::make_pair(L(r + " = arith.maximumf " + acc + ", " + x + " : f32"), r);
    });
    std::string weights = Map({{penalized, lt}, {keys, kt}}, "i64", [&](const Args& a) {
      std::string text, mx = Fresh(), d = Fresh(), e = Fresh(), s = Fresh(), sc = Fresh(), q = Fresh(),
                        zero = Fresh(), r = Fresh();
      std::string keep = KeepAtOrAbove(a[1], top_k, "", m, &text);
      return text + Extract(mx, m, -1, "f32") + L(d + " = arith.subf " + a[0] + ", " + mx + " : f32") +
             L(e + " = math.exp " + d + " : f32") + L(sc + " = arith.constant 4.294967296e+09 : f32") +
             L(s + " = arith.mulf " + e + ", " + sc + " : f32") + L(q + " = arith.fptosi " + s + " : f32 to i64") +
             L(zero + " = arith.constant 0 : i64") + L(r + " = arith.select " + keep + ", " + q + ", " + zero + " : i64") +
             L("linalg.yield " + r + " : i64");
    });
    std::string z = Reduce(weights, "i64", "0", [&](const std::string& acc, const std::string& x) {
      std::string r = Fresh();
      return std::make_pair(L(r + " = arith.addi " + acc + ", " + x + " : i64"), r);
    });

    // top-p: the largest threshold whose keys at or above it hold at least ceil(p * Z) of the mass.
    std::string need_p = Scalar({{z, "tensor<i64>"}}, [&](const Args& a) {
      std::string p = Fresh(), p64 = Fresh(), z64 = Fresh(), pz = Fresh(), fl = Fresh(), back = Fresh(), frac = Fresh(),
                  inc = Fresh(), n = Fresh(), one = Fresh(), all = Fresh(), r = Fresh();
      // ceil(p * Z) without math.ceil: the truncation, plus one when it was below.
      return Extract(p, in_.floats, kTopP, "f32") + L(p64 + " = arith.extf " + p + " : f32 to f64") +
             L(z64 + " = arith.sitofp " + a[0] + " : i64 to f64") + L(pz + " = arith.mulf " + p64 + ", " + z64 + " : f64") +
             L(fl + " = arith.fptosi " + pz + " : f64 to i64") + L(back + " = arith.sitofp " + fl + " : i64 to f64") +
             L(frac + " = arith.cmpf olt, " + back + ", " + pz + " : f64") + L(inc + " = arith.extui " + frac + " : i1 to i64") +
             L(n + " = arith.addi " + fl + ", " + inc + " : i64") +
             L(one + " = arith.constant 1.0 : f32") + L(all + " = arith.cmpf oge, " + p + ", " + one + " : f32") +
             L(r + " = arith.select " + all + ", " + a[0] + ", " + n + " : i64") + L("linalg.yield " + r + " : i64");
    });
    std::string top_p = Search(keys, weights, need_p);

    // min-p, temperature and the Gumbel noise; T <= 0 scores the penalized logits alone.
    std::string scores = Map({{penalized, lt}, {keys, kt}}, "f32", [&](const Args& a) { return Score(a, top_k, top_p, m); });
    return Argmax(scores);
  }

 private:
  using Args = std::vector<std::string>;
  using Body = Emitter::Body;
  std::string Fresh(const std::string& hint = "v") { return e_.Fresh(hint); }
  static std::string L(const std::string& s) { return Emitter::Line(s); }
  std::string Grid(const std::string& elem) {
    return "tensor<" + std::to_string(R_) + "x" + std::to_string(C_) + "x" + elem + ">";
  }
  std::string Rows(const std::string& elem) { return "tensor<" + std::to_string(R_) + "x" + elem + ">"; }

  // `dst` = t[index] (index -1: a rank-0 tensor).
  std::string Extract(const std::string& dst, const std::string& t, int index, const std::string& elem) {
    if (index < 0) return L(dst + " = tensor.extract " + t + "[] : tensor<" + elem + ">");
    int n = elem == "f32" ? kSamplerFloats : kSamplerInts;
    std::string c = Fresh();
    return L(c + " = arith.constant " + std::to_string(index) + " : index") +
           L(dst + " = tensor.extract " + t + "[" + c + "] : tensor<" + std::to_string(n) + "x" + elem + ">");
  }

  // An elementwise kernel over the [R][C] grid.
  std::string Map(const std::vector<Operand>& ins, const std::string& elem, const Body& body) {
    std::vector<std::string> maps(ins.size() + 1, "(r, c) -> (r, c)"), elems;
    for (const Operand& i : ins) elems.push_back(i.type.find("f32") != std::string::npos ? "f32" : "i64");
    elems.push_back(elem);
    return e_.Generic(maps, {"parallel", "parallel"}, ins, {e_.Empty(Grid(elem)), Grid(elem)}, elems, body);
  }

  // A rank-0 kernel over rank-0 inputs.
  std::string Scalar(const std::vector<Operand>& ins, const Body& body) {
    std::vector<std::string> maps(ins.size() + 1, "() -> ()"), elems(ins.size() + 1, "i64");
    return e_.Generic(maps, {}, ins, {e_.Empty("tensor<i64>"), "tensor<i64>"}, elems, body);
  }

  // A reduction of the grid to a rank-0 tensor: rows in parallel, then the R row results.
  std::string Reduce(const std::string& grid, const std::string& elem, const std::string& init,
                     const std::function<std::pair<std::string, std::string>(const std::string&, const std::string&)>& op) {
    auto body = [&](const Args& a) {
      auto [text, r] = op(a[1], a[0]);
      return text + L("linalg.yield " + r + " : " + elem);
    };
    std::string rows = e_.Generic({"(r, c) -> (r, c)", "(r, c) -> (r)"}, {"parallel", "reduction"}, {{grid, Grid(elem)}},
                               {e_.Filled(Rows(elem), init, elem), Rows(elem)}, {elem, elem}, body);
    std::string t0 = "tensor<" + elem + ">";
    return e_.Generic({"(r) -> (r)", "(r) -> ()"}, {"reduction"}, {{rows, Rows(elem)}}, {e_.Filled(t0, init, elem), t0},
                   {elem, elem}, body);
  }

  // The order-preserving key of f32 `x` in [0, 2^32) as i64: larger floats, larger keys.
  std::string Key(const std::string& x, std::string* text) {
    std::string bits = Fresh(), u = Fresh(), zero = Fresh(), neg = Fresh(), top = Fresh(), flip = Fresh(),
                half = Fresh(), up = Fresh(), k = Fresh();
    *text += L(bits + " = arith.bitcast " + x + " : f32 to i32") + L(u + " = arith.extui " + bits + " : i32 to i64") +
             L(zero + " = arith.constant 0 : i32") + L(neg + " = arith.cmpi slt, " + bits + ", " + zero + " : i32") +
             L(top + " = arith.constant 4294967295 : i64") + L(flip + " = arith.subi " + top + ", " + u + " : i64") +
             L(half + " = arith.constant 2147483648 : i64") + L(up + " = arith.addi " + u + ", " + half + " : i64") +
             L(k + " = arith.select " + neg + ", " + flip + ", " + up + " : i64");
    return k;
  }

  // Penalized logits: the repetition penalty on tokens among the last `last_n` of the history.
  std::string Penalize(const std::string& l2) {
    const int64_t W = kRepetitionWindow;
    const std::string wt = "tensor<" + std::to_string(W) + "xi64>";
    // window[j]: the history token at position history_len - W + j if it is among the last
    // `last_n`, else -1 (never a token).
    std::string window = e_.Generic({"(j) -> (j)"}, {"parallel"}, {}, {e_.Empty(wt), wt}, {"i64"}, [&](const Args&) {
      std::string text, j = Fresh(), j64 = Fresh(), n = Fresh(), lo = Fresh(), hi = Fresh(), wc = Fresh(),
                        start = Fresh(), q = Fresh(), zero = Fresh(), q_ok = Fresh(), w_lo = Fresh(), j_ok = Fresh(),
                        valid = Fresh(), in_prompt = Fresh(), one = Fresh(), plast = Fresh(), pq = Fresh(),
                        pq0 = Fresh(), pi = Fresh(), ptok = Fresh(), tok = Fresh(), none = Fresh(), r = Fresh();
      text += L(j + " = linalg.index 0 : index") + L(j64 + " = arith.index_cast " + j + " : index to i64") +
              Extract(n, in_.ints, kRepetitionLastN, "i64") + L(zero + " = arith.constant 0 : i64") +
              L(wc + " = arith.constant " + std::to_string(W) + " : i64") +
              L(lo + " = arith.maxsi " + n + ", " + zero + " : i64") + L(hi + " = arith.minsi " + lo + ", " + wc + " : i64") +
              L(start + " = arith.subi " + in_.history_len + ", " + wc + " : i64") +
              L(q + " = arith.addi " + start + ", " + j64 + " : i64") +
              L(q_ok + " = arith.cmpi sge, " + q + ", " + zero + " : i64") +
              L(w_lo + " = arith.subi " + wc + ", " + hi + " : i64") +
              L(j_ok + " = arith.cmpi sge, " + j64 + ", " + w_lo + " : i64") +
              L(valid + " = arith.andi " + q_ok + ", " + j_ok + " : i1") +
              L(in_prompt + " = arith.cmpi slt, " + q + ", " + in_.prompt_len + " : i64") +
              L(one + " = arith.constant 1 : i64") + L(plast + " = arith.subi " + in_.prompt_len + ", " + one + " : i64") +
              L(pq0 + " = arith.minsi " + q + ", " + plast + " : i64") + L(pq + " = arith.maxsi " + pq0 + ", " + zero + " : i64") +
              L(pi + " = arith.index_cast " + pq + " : i64 to index") +
              L(ptok + " = tensor.extract " + in_.prompt + "[" + pi + "] : tensor<?xi64>");
      std::string token = ptok;
      if (!in_.ids.empty()) {
        std::string gq0 = Fresh(), gq = Fresh(), gi = Fresh(), gtok = Fresh();
        text += L(gq0 + " = arith.subi " + q + ", " + in_.prompt_len + " : i64") +
                L(gq + " = arith.maxsi " + gq0 + ", " + zero + " : i64") +
                L(gi + " = arith.index_cast " + gq + " : i64 to index") +
                L(gtok + " = tensor.extract " + in_.ids + "[" + gi + "] : tensor<?xi64>") +
                L(tok + " = arith.select " + in_prompt + ", " + ptok + ", " + gtok + " : i64");
        token = tok;
      }
      return text + L(none + " = arith.constant -1 : i64") +
             L(r + " = arith.select " + valid + ", " + token + ", " + none + " : i64") + L("linalg.yield " + r + " : i64");
    });
    std::string seen = e_.Generic({"(r, c, j) -> (j)", "(r, c, j) -> (r, c)"}, {"parallel", "parallel", "reduction"},
                               {{window, wt}}, {e_.Filled(Grid("i64"), "0", "i64"), Grid("i64")}, {"i64", "i64"},
                               [&](const Args& a) {
      std::string r = Fresh(), c = Fresh(), cc = Fresh(), base = Fresh(), v = Fresh(), v64 = Fresh(), eq = Fresh(),
                  h64 = Fresh(), acc = Fresh();
      return L(r + " = linalg.index 0 : index") + L(c + " = linalg.index 1 : index") +
             L(cc + " = arith.constant " + std::to_string(C_) + " : index") +
             L(base + " = arith.muli " + r + ", " + cc + " : index") + L(v + " = arith.addi " + base + ", " + c + " : index") +
             L(v64 + " = arith.index_cast " + v + " : index to i64") +
             L(eq + " = arith.cmpi eq, " + a[0] + ", " + v64 + " : i64") + L(h64 + " = arith.extui " + eq + " : i1 to i64") +
             L(acc + " = arith.ori " + a[1] + ", " + h64 + " : i64") + L("linalg.yield " + acc + " : i64");
    });
    return Map({{l2, Grid("f32")}, {seen, Grid("i64")}}, "f32", [&](const Args& a) {
      std::string pen = Fresh(), zf = Fresh(), le = Fresh(), mul = Fresh(), div = Fresh(), p = Fresh(), zi = Fresh(),
                  s = Fresh(), r = Fresh();
      return Extract(pen, in_.floats, kRepetitionPenalty, "f32") + L(zf + " = arith.constant 0.0 : f32") +
             L(le + " = arith.cmpf ole, " + a[0] + ", " + zf + " : f32") +
             L(mul + " = arith.mulf " + a[0] + ", " + pen + " : f32") +
             L(div + " = arith.divf " + a[0] + ", " + pen + " : f32") +
             L(p + " = arith.select " + le + ", " + mul + ", " + div + " : f32") + L(zi + " = arith.constant 0 : i64") +
             L(s + " = arith.cmpi ne, " + a[1] + ", " + zi + " : i64") +
             L(r + " = arith.select " + s + ", " + p + ", " + a[0] + " : f32") + L("linalg.yield " + r + " : f32");
    });
  }

  // The threshold a search state stands for. state = [candidate, count]: the candidate is
  // accepted when count >= need, else its bit (`bit`) is cleared. No state: 0.
  std::string Threshold(const std::string& state, int64_t bit, const std::string& need, std::string* text) {
    std::string t = Fresh();
    if (state.empty()) {
      *text += L(t + " = arith.constant 0 : i64");
      return t;
    }
    std::string c0 = Fresh(), c1 = Fresh(), cand = Fresh(), cnt = Fresh(), nd = Fresh(), ok = Fresh(), b = Fresh(),
                off = Fresh();
    *text += L(c0 + " = arith.constant 0 : index") + L(c1 + " = arith.constant 1 : index") +
             L(cand + " = tensor.extract " + state + "[" + c0 + "] : tensor<2xi64>") +
             L(cnt + " = tensor.extract " + state + "[" + c1 + "] : tensor<2xi64>") +
             L(nd + " = tensor.extract " + need + "[] : tensor<i64>") +
             L(ok + " = arith.cmpi sge, " + cnt + ", " + nd + " : i64") +
             L(b + " = arith.constant " + std::to_string(bit) + " : i64") +
             L(off + " = arith.subi " + cand + ", " + b + " : i64") +
             L(t + " = arith.select " + ok + ", " + cand + ", " + off + " : i64");
    return t;
  }

  // The largest key threshold t with sum(weight of keys >= t) >= need (weight 1 without
  // `weights`), decided one bit per round from bit 31 down; a rank-0 i64 tensor.
  std::string Search(const std::string& keys, const std::string& weights, const std::string& need) {
    std::string state;
    int64_t prev_bit = 0;
    for (int b = 31; b >= 0; --b) {
      const int64_t bit = int64_t(1) << b;
      std::vector<Operand> ins = {{keys, Grid("i64")}};
      std::vector<std::string> maps = {"(r, c) -> (r, c)"}, elems = {"i64"};
      if (!weights.empty()) {
        ins.push_back({weights, Grid("i64")});
        maps.push_back("(r, c) -> (r, c)");
        elems.push_back("i64");
      }
      maps.push_back("(r, c) -> (r)");
      elems.push_back("i64");
      auto candidate = [&](std::string* text) {
        std::string t = Threshold(state, prev_bit, need, text), bc = Fresh(), cand = Fresh();
        *text += L(bc + " = arith.constant " + std::to_string(bit) + " : i64") +
                 L(cand + " = arith.ori " + t + ", " + bc + " : i64");
        return cand;
      };
      std::string rows = e_.Generic(maps, {"parallel", "reduction"}, ins, {e_.Filled(Rows("i64"), "0", "i64"), Rows("i64")},
                                 elems, [&](const Args& a) {
        std::string text, ge = Fresh(), w = Fresh(), zero = Fresh(), add = Fresh(), r = Fresh();
        std::string cand = candidate(&text);
        text += L(ge + " = arith.cmpi sge, " + a[0] + ", " + cand + " : i64");
        if (weights.empty()) {
          text += L(add + " = arith.extui " + ge + " : i1 to i64");
        } else {
          text += L(zero + " = arith.constant 0 : i64") + L(add + " = arith.select " + ge + ", " + a[1] + ", " + zero + " : i64");
        }
        return text + L(r + " = arith.addi " + a.back() + ", " + add + " : i64") + L("linalg.yield " + r + " : i64");
      });
      state = e_.Generic({"(j, r) -> (r)", "(j, r) -> (j)"}, {"parallel", "reduction"}, {{rows, Rows("i64")}},
                      {e_.Filled("tensor<2xi64>", "0", "i64"), "tensor<2xi64>"}, {"i64", "i64"}, [&](const Args& a) {
        std::string text, j = Fresh(), c0 = Fresh(), first = Fresh(), sum = Fresh(), r = Fresh();
        std::string cand = candidate(&text);
        return text + L(j + " = linalg.index 0 : index") + L(c0 + " = arith.constant 0 : index") +
               L(first + " = arith.cmpi eq, " + j + ", " + c0 + " : index") +
               L(sum + " = arith.addi " + a[1] + ", " + a[0] + " : i64") +
               L(r + " = arith.select " + first + ", " + cand + ", " + sum + " : i64") + L("linalg.yield " + r + " : i64");
      });
      prev_bit = bit;
    }
    return Scalar({}, [&](const Args&) {
      std::string text;
      std::string t = Threshold(state, prev_bit, need, &text);
      return text + L("linalg.yield " + t + " : i64");
    });
  }

  // keep = key >= min(max(thresholds), key of the maximum logit `m`): the top token always stays.
  std::string KeepAtOrAbove(const std::string& key, const std::string& t1, const std::string& t2, const std::string& m,
                            std::string* text) {
    std::string a = Fresh(), mx = Fresh(), lim = Fresh(), keep = Fresh();
    *text += L(a + " = tensor.extract " + t1 + "[] : tensor<i64>");
    std::string th = a;
    if (!t2.empty()) {
      std::string b = Fresh(), both = Fresh();
      *text += L(b + " = tensor.extract " + t2 + "[] : tensor<i64>") + L(both + " = arith.maxsi " + a + ", " + b + " : i64");
      th = both;
    }
    *text += Extract(mx, m, -1, "f32");
    std::string top = Key(mx, text);
    *text += L(lim + " = arith.minsi " + th + ", " + top + " : i64") +
             L(keep + " = arith.cmpi sge, " + key + ", " + lim + " : i64");
    return keep;
  }

  // Philox4x32-10 word 0 of counter (i, step, 0, 0) under key (seed low, seed high) -> i64 < 2^32.
  std::string Philox(const std::string& i64_index, std::string* text) {
    std::string seed = Fresh(), mask = Fresh(), sh = Fresh(), k0 = Fresh(), kh = Fresh(), k1 = Fresh(),
                zero = Fresh(), m0 = Fresh(), m1 = Fresh(), w0 = Fresh(), w1 = Fresh(), st = Fresh();
    *text += Extract(seed, in_.ints, kSeed, "i64") + L(mask + " = arith.constant 4294967295 : i64") +
             L(sh + " = arith.constant 32 : i64") + L(k0 + " = arith.andi " + seed + ", " + mask + " : i64") +
             L(kh + " = arith.shrui " + seed + ", " + sh + " : i64") + L(k1 + " = arith.andi " + kh + ", " + mask + " : i64") +
             L(zero + " = arith.constant 0 : i64") + L(m0 + " = arith.constant 3528531795 : i64") +  // 0xD2511F53
             L(m1 + " = arith.constant 3449720151 : i64") +                                           // 0xCD9E8D57
             L(w0 + " = arith.constant 2654435769 : i64") +                                           // 0x9E3779B9
             L(w1 + " = arith.constant 3144134277 : i64") +                                           // 0xBB67AE85
             L(st + " = arith.andi " + in_.step + ", " + mask + " : i64");
    std::string c[4] = {i64_index, st, zero, zero}, key0 = k0, key1 = k1;
    for (int round = 0; round < 10; ++round) {
      if (round > 0) {
        std::string a = Fresh(), b = Fresh(), a2 = Fresh(), b2 = Fresh();
        *text += L(a + " = arith.addi " + key0 + ", " + w0 + " : i64") + L(a2 + " = arith.andi " + a + ", " + mask + " : i64") +
                 L(b + " = arith.addi " + key1 + ", " + w1 + " : i64") + L(b2 + " = arith.andi " + b + ", " + mask + " : i64");
        key0 = a2;
        key1 = b2;
      }
      // (hi, lo) of M0 * c0 and M1 * c2: both factors < 2^32, so the i64 product's bits are exact.
      std::string p0 = Fresh(), p1 = Fresh(), hi0 = Fresh(), lo0 = Fresh(), hi1 = Fresh(), lo1 = Fresh(), x0 = Fresh(),
                  n0 = Fresh(), x2 = Fresh(), n2 = Fresh();
      *text += L(p0 + " = arith.muli " + m0 + ", " + c[0] + " : i64") + L(p1 + " = arith.muli " + m1 + ", " + c[2] + " : i64") +
               L(hi0 + " = arith.shrui " + p0 + ", " + sh + " : i64") + L(lo0 + " = arith.andi " + p0 + ", " + mask + " : i64") +
               L(hi1 + " = arith.shrui " + p1 + ", " + sh + " : i64") + L(lo1 + " = arith.andi " + p1 + ", " + mask + " : i64") +
               L(x0 + " = arith.xori " + hi1 + ", " + c[1] + " : i64") + L(n0 + " = arith.xori " + x0 + ", " + key0 + " : i64") +
               L(x2 + " = arith.xori " + hi0 + ", " + c[3] + " : i64") + L(n2 + " = arith.xori " + x2 + ", " + key1 + " : i64");
      c[0] = n0;
      c[1] = lo1;
      c[2] = n2;
      c[3] = lo0;
    }
    return c[0];
  }

  // score = T > 0 ? (kept ? l / T + gumbel : -inf) : l.
  std::string Score(const Args& a, const std::string& top_k, const std::string& top_p, const std::string& m) {
    std::string text;
    std::string keep = KeepAtOrAbove(a[1], top_k, top_p, m, &text);
    std::string mp = Fresh(), zf = Fresh(), off = Fresh(), lg = Fresh(), mx = Fresh(), lim = Fresh(), ge = Fresh(),
                minp_ok0 = Fresh(), is_top = Fresh(), minp_ok = Fresh(), kept = Fresh();
    text += Extract(mp, in_.floats, kMinP, "f32") + L(zf + " = arith.constant 0.0 : f32") +
            L(off + " = arith.cmpf ole, " + mp + ", " + zf + " : f32") + L(lg + " = math.log " + mp + " : f32") +
            Extract(mx, m, -1, "f32") + L(lim + " = arith.addf " + mx + ", " + lg + " : f32") +
            L(ge + " = arith.cmpf oge, " + a[0] + ", " + lim + " : f32") +
            L(minp_ok0 + " = arith.ori " + off + ", " + ge + " : i1") +
            L(is_top + " = arith.cmpf oeq, " + a[0] + ", " + mx + " : f32") +
            L(minp_ok + " = arith.ori " + minp_ok0 + ", " + is_top + " : i1") +
            L(kept + " = arith.andi " + keep + ", " + minp_ok + " : i1");
    std::string r = Fresh(), c = Fresh(), cc = Fresh(), base = Fresh(), v = Fresh(), v64 = Fresh();
    text += L(r + " = linalg.index 0 : index") + L(c + " = linalg.index 1 : index") +
            L(cc + " = arith.constant " + std::to_string(C_) + " : index") +
            L(base + " = arith.muli " + r + ", " + cc + " : index") + L(v + " = arith.addi " + base + ", " + c + " : index") +
            L(v64 + " = arith.index_cast " + v + " : index to i64");
    std::string bits = Philox(v64, &text);
    std::string e8 = Fresh(), hi = Fresh(), h32 = Fresh(), hf = Fresh(), half = Fresh(), hs = Fresh(), scale = Fresh(),
                u = Fresh(), lu = Fresh(), nlu = Fresh(), llu = Fresh(), g = Fresh(), t = Fresh(), scaled = Fresh(),
                noisy = Fresh(), ninf = Fresh(), masked = Fresh(), hot = Fresh(), out = Fresh();
    text += L(e8 + " = arith.constant 8 : i64") + L(hi + " = arith.shrui " + bits + ", " + e8 + " : i64") +
            L(h32 + " = arith.trunci " + hi + " : i64 to i32") + L(hf + " = arith.sitofp " + h32 + " : i32 to f32") +
            L(half + " = arith.constant 0.5 : f32") + L(hs + " = arith.addf " + hf + ", " + half + " : f32") +
            L(scale + " = arith.constant 5.96046448e-08 : f32") +  // 2^-24: u in (0, 1)
            L(u + " = arith.mulf " + hs + ", " + scale + " : f32") + L(lu + " = math.log " + u + " : f32") +
            L(nlu + " = arith.negf " + lu + " : f32") + L(llu + " = math.log " + nlu + " : f32") +
            L(g + " = arith.negf " + llu + " : f32") + Extract(t, in_.floats, kTemperature, "f32") +
            L(scaled + " = arith.divf " + a[0] + ", " + t + " : f32") +
            L(noisy + " = arith.addf " + scaled + ", " + g + " : f32") +
            L(ninf + " = arith.constant 0xFF800000 : f32") +
            L(masked + " = arith.select " + kept + ", " + noisy + ", " + ninf + " : f32") +
            L(hot + " = arith.cmpf ogt, " + t + ", " + zf + " : f32") +
            L(out + " = arith.select " + hot + ", " + masked + ", " + a[0] + " : f32");
    return text + L("linalg.yield " + out + " : f32");
  }

  // The first index of the maximum of the grid (as the program's greedy argmax): keys
  // (order-preserving bits << 32) | (2^32 - 1 - index), max-reduced, decoded.
  std::string Argmax(const std::string& scores) {
    std::string rows = e_.Generic({"(r, c) -> (r, c)", "(r, c) -> (r)"}, {"parallel", "reduction"}, {{scores, Grid("f32")}},
                               {e_.Filled(Rows("i64"), "0", "i64"), Rows("i64")}, {"f32", "i64"}, [&](const Args& a) {
      std::string text, r = Fresh(), c = Fresh(), cc = Fresh(), base = Fresh(), v = Fresh(), vi = Fresh(),
                        hi = Fresh(), sh = Fresh(), top = Fresh(), lo = Fresh(), key = Fresh(), m = Fresh();
      std::string k = Key(a[0], &text);
      return text + L(r + " = linalg.index 0 : index") + L(c + " = linalg.index 1 : index") +
             L(cc + " = arith.constant " + std::to_string(C_) + " : index") +
             L(base + " = arith.muli " + r + ", " + cc + " : index") + L(v + " = arith.addi " + base + ", " + c + " : index") +
             L(vi + " = arith.index_cast " + v + " : index to i64") + L(sh + " = arith.constant 32 : i64") +
             L(hi + " = arith.shli " + k + ", " + sh + " : i64") +  // unsigned order from here on
             L(top + " = arith.constant 4294967295 : i64") + L(lo + " = arith.subi " + top + ", " + vi + " : i64") +
             L(key + " = arith.ori " + hi + ", " + lo + " : i64") +
             L(m + " = arith.maxui " + a[1] + ", " + key + " : i64") + L("linalg.yield " + m + " : i64");
    });
    std::string best = e_.Generic({"(r) -> (r)", "(r) -> ()"}, {"reduction"}, {{rows, Rows("i64")}},
                               {e_.Filled("tensor<i64>", "0", "i64"), "tensor<i64>"}, {"i64", "i64"}, [&](const Args& a) {
      std::string m = Fresh();
      return L(m + " = arith.maxui " + a[1] + ", " + a[0] + " : i64") + L("linalg.yield " + m + " : i64");
    });
    return Scalar({{best, "tensor<i64>"}}, [&](const Args& a) {
      std::string top = Fresh(), lo = Fresh(), v = Fresh();
      return L(top + " = arith.constant 4294967295 : i64") + L(lo + " = arith.andi " + a[0] + ", " + top + " : i64") +
             L(v + " = arith.subi " + top + ", " + lo + " : i64") + L("linalg.yield " + v + " : i64");
    });
  }

  Emitter e_;
  int64_t V_, R_ = 1, C_ = 1;
  SamplerOperands in_;
};

}  // namespace

std::string EmitSampler(std::ostream& os, int64_t vocab, const SamplerOperands& in, const std::string& prefix) {
  return SamplerWriter(os, vocab, prefix).Run(in);
}

std::string EmitSamplerModule(int64_t vocab) {
  std::ostringstream os;
  os << "// The llama decode program's sampler alone (compiler/importers/llama/Sampler.h).\n"
     << "func.func @sample(%logits: tensor<" << vocab << "xf32>, %floats: tensor<" << kSamplerFloats
     << "xf32>, %ints: tensor<" << kSamplerInts << "xi64>, %history: tensor<?xi64>, %step: i64) -> tensor<i64> {\n"
     << "    %c0 = arith.constant 0 : index\n"
     << "    %n = tensor.dim %history, %c0 : tensor<?xi64>\n"
     << "    %n64 = arith.index_cast %n : index to i64\n";
  SamplerOperands in{"%logits", "%floats", "%ints", "%history", "%n64", "", "%n64", "%step"};
  std::string id = EmitSampler(os, vocab, in, "s");
  os << "    return " << id << " : tensor<i64>\n}\n";
  return os.str();
}

}  // namespace hexir::compiler::llama
