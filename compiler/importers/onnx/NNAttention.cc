// ONNX's attention ops of opset 23 (onnx/defs/nn): RotaryEmbedding (and onnxruntime's
// com.microsoft form of it), and Attention composed
// of the table's own lowerings (Reshape, Transpose, Concat, MatMul, Softmax through LowerAs)
// and index generics for the masks.
#include <cmath>
#include <limits>

#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"
#include "compiler/importers/onnx/OpTable.h"

namespace hexir::importers::onnx {
namespace {

// A 3-D [batch, seq, heads * size] operand as [batch, heads, seq, size]; a 4-D one as is.
StatusOr<Val> AsHeads(Context& c, Val& x, int64_t heads, const char* what) {
  if (x.rank() == 4) return x;
  const Dim& hidden = x.shape[2];
  if (heads <= 0 || hidden.dynamic() || hidden.v % heads != 0)
    return c.Error(std::string("a 3-D ") + what + " needs its hidden size divided by the number of heads (" +
                   std::to_string(heads) + ")");
  HEXIR_ASSIGN_OR_RETURN(Val split, c.ReshapeTo(x, {x.shape[0], x.shape[1], Dim::Static(heads),
                                                    Dim::Static(hidden.v / heads)}));
  return c.Transpose(split, {0, 2, 1, 3});
}

// [B, H, S, D] back to [B, S, H * D] (a 3-D operand's layout).
StatusOr<Val> AsRows(Context& c, Val& y) {
  Val rows = c.Transpose(y, {0, 2, 1, 3});
  return c.ReshapeTo(rows, {y.shape[0], y.shape[2], Dim::Static(y.shape[1].v * y.shape[3].v)});
}

// Scores [B, Hq, S, T] = (scale q) k^T, tanh-capped at +-softcap when softcap > 0: q
// [B, Hq, S, D] viewed as [B, Hkv, (Hq / Hkv) S, D], so that each kv head of k [B, Hkv, T, D]
// serves its group of query heads without being repeated.
StatusOr<Val> GroupedScores(Context& c, Val& q, Val& k, double scale, double softcap) {
  Builder& b = c.b;
  std::string et = q.et;
  const Dim batch = q.shape[0], heads = q.shape[1], len = q.shape[2], kv_heads = k.shape[1];
  HEXIR_ASSIGN_OR_RETURN(Val scaled, c.Elementwise({&q}, et, [&](const Args& a) {
    return b.Bin("arith.mulf", "", a[0], b.ScalarConst(et, scale), et);
  }));
  HEXIR_ASSIGN_OR_RETURN(Val grouped, c.ReshapeTo(scaled, {batch, kv_heads, b.Mul(Dim::Static(heads.v / kv_heads.v), len),
                                                           q.shape[3]}));
  Val k_t = c.Transpose(k, {0, 1, 3, 2});
  HEXIR_ASSIGN_OR_RETURN(Val scores_grouped, c.MatMul(grouped, k_t));
  HEXIR_ASSIGN_OR_RETURN(Val scores, c.ReshapeTo(scores_grouped, {batch, heads, len, k.shape[2]}));
  if (softcap <= 0) return scores;
  return c.Elementwise({&scores}, et, [&](const Args& a) {
    std::string capped = b.Op1("math.tanh", b.Bin("arith.divf", "", a[0], b.ScalarConst(et, softcap), et), et);
    return b.Bin("arith.mulf", "", capped, b.ScalarConst(et, softcap), et);
  });
}

// scores + bias (broadcast).
StatusOr<Val> Biased(Context& c, Val& scores, Val& bias) {
  std::string et = scores.et;
  return c.Elementwise({&scores, &bias}, et, [&](const Args& a) { return c.b.Bin("arith.addf", "", a[0], a[1], et); });
}

// The softmax of the scores along keys (the table's Softmax).
StatusOr<Val> SoftmaxOverKeys(Context& c, Val& scores) {
  HEXIR_ASSIGN_OR_RETURN(std::vector<Val> probs,
                         LowerAs(c, "Softmax", {scores}, 1, [](::onnx::NodeProto& n) { SetInt(n, "axis", -1); }));
  return probs[0];
}

// probs [B, Hq, S, T] times v [B, Hkv, T, Dv] through GroupedScores' grouping: [B, Hq, S, Dv].
StatusOr<Val> GroupedValues(Context& c, Val& probs, Val& v) {
  const Dim batch = probs.shape[0], heads = probs.shape[1], len = probs.shape[2], kv_heads = v.shape[1];
  HEXIR_ASSIGN_OR_RETURN(Val grouped, c.ReshapeTo(probs, {batch, kv_heads, c.b.Mul(Dim::Static(heads.v / kv_heads.v), len),
                                                          probs.shape[3]}));
  HEXIR_ASSIGN_OR_RETURN(Val y, c.MatMul(grouped, v));
  return c.ReshapeTo(y, {batch, heads, len, v.shape[3]});
}

}  // namespace

// softmax(scale * Q K^T [softcapped] + bias) V per head, as ONNX's reference computes it.
// Q [B, Hq, S, D] (or 3-D [B, S, Hq * D] with q_num_heads), K and V [B, Hkv, T, D | Dv]
// appended to past_key / past_value (the present outputs); Hq a multiple of Hkv (grouped
// queries: head h reads kv head h / (Hq / Hkv), done by viewing Q as [B, Hkv, (Hq / Hkv) S, D]
// rather than repeating K and V). The bias: attn_mask (bool: false is -inf; float: added;
// shorter than the total length: padded with -inf) plus, with is_causal, -inf where key j is
// past query i's position (j > i + past length). Output 3 (qk_matmul_output) for modes 0
// (scaled Q K^T) and 3 (the softmax).
Status LowerAttention(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& q_in, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& k_in, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val& v_in, c.In(2));
  if (c.HasIn(6)) return c.Error("nonpad_kv_seqlen (opset 24) is not supported");
  if (q_in.rank() != k_in.rank() || q_in.rank() != v_in.rank() || (q_in.rank() != 3 && q_in.rank() != 4))
    return c.Error("Q, K and V must all be 3-D or all 4-D");
  if (!q_in.IsFloat() || k_in.et != q_in.et || v_in.et != q_in.et)
    return c.Error("Q, K and V must be floats of one element type");
  std::string et = q_in.et;
  HEXIR_ASSIGN_OR_RETURN(Val q, AsHeads(c, q_in, c.AttrI("q_num_heads", 0), "Q"));
  HEXIR_ASSIGN_OR_RETURN(Val k, AsHeads(c, k_in, c.AttrI("kv_num_heads", 0), "K"));
  HEXIR_ASSIGN_OR_RETURN(Val v, AsHeads(c, v_in, c.AttrI("kv_num_heads", 0), "V"));
  const Dim &q_heads = q.shape[1], &kv_heads = k.shape[1], &head_size = q.shape[3];
  if (q_heads.dynamic() || kv_heads.dynamic() || head_size.dynamic() || v.shape[3].dynamic())
    return c.Error("head counts and head sizes must be static");
  if (q_heads.v % kv_heads.v != 0 || v.shape[1].dynamic() || v.shape[1].v != kv_heads.v)
    return c.Error("Q's " + std::to_string(q_heads.v) + " heads are not a multiple of K's and V's " +
                   std::to_string(kv_heads.v));
  const Dim q_len = q.shape[2];

  // The caches: past ++ new along the sequence.
  Dim past_len = Dim::Static(0);
  for (int i : {4, 5}) {
    Val& now = i == 4 ? k : v;
    if (!c.HasIn(i)) continue;
    HEXIR_ASSIGN_OR_RETURN(Val& past, c.In(i));
    if (past.rank() != 4) return c.Error(std::string(i == 4 ? "past_key" : "past_value") + " must be 4-D");
    if (i == 4) past_len = past.shape[2];
    HEXIR_ASSIGN_OR_RETURN(std::vector<Val> joined,
                           LowerAs(c, "Concat", {past, now}, 1, [](::onnx::NodeProto& n) { SetInt(n, "axis", 2); }));
    now = joined[0];
  }
  if (c.node->output_size() > 1 && !c.node->output(1).empty()) c.SetOut(1, k);
  if (c.node->output_size() > 2 && !c.node->output(2).empty()) c.SetOut(2, v);
  const Dim total = k.shape[2];

  double scale = c.HasAttr("scale") ? c.AttrF("scale", 1.0f) : 1.0 / std::sqrt(static_cast<double>(head_size.v));
  HEXIR_ASSIGN_OR_RETURN(Val scores, GroupedScores(c, q, k, scale, c.AttrF("softcap", 0.0f)));
  const int64_t mode = c.AttrI("qk_matmul_output_mode", 0);
  const bool qk_output = c.node->output_size() > 3 && !c.node->output(3).empty();
  if (qk_output && mode != 0 && mode != 3)
    return c.Error("qk_matmul_output_mode " + std::to_string(mode) + " is not supported (0 and 3 are)");
  if (qk_output && mode == 0) c.SetOut(3, scores);

  // The bias, added where it exists.
  const double minus_inf = -std::numeric_limits<double>::infinity();
  if (c.HasIn(3)) {
    HEXIR_ASSIGN_OR_RETURN(Val& mask_in, c.In(3));
    Val mask = mask_in;
    if (mask.et == "i1") {
      HEXIR_ASSIGN_OR_RETURN(mask, c.Elementwise({&mask_in}, et, [&](const Args& a) {
        return b.Select(a[0], b.ScalarConst(et, 0), b.ScalarConst(et, minus_inf), et);
      }));
    } else if (mask.et != et) {
      return c.Error("attn_mask must be bool or Q's element type " + et);
    }
    if (mask.rank() < 1 || mask.rank() > 4) return c.Error("attn_mask must have 1 to 4 dims");
    // A mask shorter than the total length masks the rest.
    std::vector<Dim> begin(mask.rank(), Dim::Static(0)), end = begin;
    end.back() = b.Sub(total, mask.shape.back());
    if (end.back().dynamic() || end.back().v != 0) mask = c.Pad(mask, begin, end, "constant", minus_inf);
    HEXIR_ASSIGN_OR_RETURN(scores, Biased(c, scores, mask));
  }
  if (c.AttrI("is_causal", 0) != 0) {
    std::string past = b.DimValue(past_len);
    Val causal = b.Tabulate({q_len, total}, et, [&](std::vector<std::string> idx) {
      std::string reach = b.Fresh();
      b.Line(reach + " = arith.addi " + idx[0] + ", " + past + " : index");
      std::string beyond = b.Cmp("", "ugt", idx[1], reach, "index");
      return b.Select(beyond, b.ScalarConst(et, minus_inf), b.ScalarConst(et, 0), et);
    });
    HEXIR_ASSIGN_OR_RETURN(scores, Biased(c, scores, causal));
  }
  HEXIR_ASSIGN_OR_RETURN(Val probs, SoftmaxOverKeys(c, scores));
  if (qk_output && mode == 3) c.SetOut(3, probs);
  HEXIR_ASSIGN_OR_RETURN(Val y, GroupedValues(c, probs, v));
  return c.SetOut(0, q_in.rank() == 4 ? StatusOr<Val>(y) : AsRows(c, y));
}

namespace {

// Where each token's angle comes from.
enum class Positions {
  kPerToken,  // caches [batch, seq, half], no position_ids
  kIds,       // position_ids [batch, seq] into caches [max_position, half]
  kOffset,    // position_ids [1]: token s at position_ids[0] + s (onnxruntime's form)
};

// X as [batch, heads, seq, head_size] or [batch, seq, heads * head_size] (`heads`); the first
// `rotary` (0: head_size) channels of each head rotate in pairs: channels (i, i + half) (or
// (2i, 2i + 1) when interleaved) by the angle whose cos and sin are cache[position][i]; the
// rest pass through. One index generic over X's shape reads each element's partner.
StatusOr<Val> RotaryEmbeddingOf(Context& c, Val& x, Val& cos_cache, Val& sin_cache, Val* positions, Positions form,
                                bool interleaved, int64_t heads, int64_t rotary) {
  Builder& b = c.b;
  if (!x.IsFloat() || (x.rank() != 3 && x.rank() != 4)) return c.Error("X must be a 3-D or 4-D float tensor");
  const Dim& last = x.shape.back();
  if (last.dynamic()) return c.Error("X's last dim must be static");
  int64_t head_size = last.v;
  if (x.rank() == 3) {
    if (heads <= 0 || last.v % heads != 0)
      return c.Error("a 3-D X needs num_heads dividing its hidden size " + std::to_string(last.v));
    head_size = last.v / heads;
  }
  if (rotary == 0) rotary = head_size;
  if (rotary < 0 || rotary > head_size || rotary % 2 != 0)
    return c.Error("rotary_embedding_dim " + std::to_string(rotary) + " must be even and at most the head size " +
                   std::to_string(head_size));
  const int64_t half = rotary / 2;
  const int64_t cache_rank = form == Positions::kPerToken ? 3 : 2;
  for (Val* cache : {&cos_cache, &sin_cache})
    if (cache->rank() != cache_rank || cache->shape.back().dynamic() || cache->shape.back().v < half)
      return c.Error(std::string(form != Positions::kPerToken ? "with position_ids the caches are [max_position, "
                                                                : "without position_ids the caches are [batch, seq, ") +
                     "rotary_embedding_dim / 2 = " + std::to_string(half) + " or more]");
  if (form == Positions::kIds && positions->rank() != 2) return c.Error("position_ids must be [batch, seq]");
  c.Mat(x);
  c.Mat(cos_cache);
  c.Mat(sin_cache);
  if (positions) c.Mat(*positions);
  std::string et = x.et;
  Val r = b.Tabulate(x.shape, et, [&](std::vector<std::string> idx) {
    auto k = [&](int64_t v) { return b.IndexConst(v); };
    auto ibin = [&](const char* op, const std::string& l, const std::string& rr) {
      std::string v = b.Fresh();
      b.Line(v + " = " + op + " " + l + ", " + rr + " : index");
      return v;
    };
    const std::string& batch = idx[0];
    std::string seq = x.rank() == 4 ? idx[2] : idx[1];
    // The channel within its head.
    std::string channel = x.rank() == 4 ? idx[3] : ibin("arith.remui", idx[2], k(head_size));
    std::string head_base = ibin("arith.subi", idx.back(), channel);  // the head's first channel in the last dim
    std::string element = b.Extract(x, idx);
    std::string rotates = b.Cmp("", "ult", channel, k(rotary), "index");
    // Pair slot i, whether this is the pair's first (real) member, and the partner's channel.
    std::string slot, first, partner;
    if (interleaved) {
      slot = ibin("arith.divui", channel, k(2));
      first = b.Cmp("", "eq", ibin("arith.remui", channel, k(2)), k(0), "index");
      partner = b.Select(first, ibin("arith.addi", channel, k(1)), ibin("arith.subi", channel, k(1)), "index");
    } else {
      first = b.Cmp("", "ult", channel, k(half), "index");
      slot = b.Select(first, channel, ibin("arith.subi", channel, k(half)), "index");
      partner = b.Select(first, ibin("arith.addi", channel, k(half)), ibin("arith.subi", channel, k(half)), "index");
    }
    // Channels past the rotary part read their own element as partner (their result is x).
    partner = b.Select(rotates, partner, channel, "index");
    slot = b.Select(rotates, slot, k(0), "index");
    std::vector<std::string> partner_idx = idx;
    partner_idx.back() = ibin("arith.addi", head_base, partner);
    std::string other = b.Extract(x, partner_idx);
    std::vector<std::string> at;
    if (form == Positions::kIds) {
      at = {b.ToIndex(b.Extract(*positions, {batch, seq}), positions->et), slot};
    } else if (form == Positions::kOffset) {
      std::vector<std::string> first(positions->rank(), k(0));
      at = {ibin("arith.addi", b.ToIndex(b.Extract(*positions, first), positions->et), seq), slot};
    } else {
      at = {batch, seq, slot};
    }
    std::string cos = b.Convert(b.Extract(cos_cache, at), cos_cache.et, et);
    std::string sin = b.Convert(b.Extract(sin_cache, at), sin_cache.et, et);
    auto f = [&](const char* op, const std::string& l, const std::string& rr) { return b.Bin(op, "", l, rr, et); };
    // first: cos x - sin partner; second: sin partner + cos x.
    std::string real = f("arith.subf", f("arith.mulf", cos, element), f("arith.mulf", sin, other));
    std::string imag = f("arith.addf", f("arith.mulf", sin, other), f("arith.mulf", cos, element));
    return b.Select(rotates, b.Select(first, real, imag, et), element, et);
  });
  return r;
}

}  // namespace

// Opset 23: X, cos_cache, sin_cache, position_ids (optional); the caches per token without it.
Status LowerRotaryEmbedding(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& cos_cache, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val& sin_cache, c.In(2));
  Val* positions = nullptr;
  if (c.HasIn(3)) {
    HEXIR_ASSIGN_OR_RETURN(Val& p, c.In(3));
    positions = &p;
  }
  return c.SetOut(0, RotaryEmbeddingOf(c, x, cos_cache, sin_cache, positions,
                                       positions ? Positions::kIds : Positions::kPerToken, c.AttrI("interleaved", 0) != 0,
                                       c.AttrI("num_heads", 0), c.AttrI("rotary_embedding_dim", 0)));
}

// onnxruntime's (com.microsoft): input, position_ids ([batch, seq], or [1]: an offset),
// cos_cache, sin_cache; without num_heads a head is the caches' width times 2.
Status LowerMicrosoftRotaryEmbedding(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& positions, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val& cos_cache, c.In(2));
  HEXIR_ASSIGN_OR_RETURN(Val& sin_cache, c.In(3));
  if (c.AttrI("is_packed_batching", 0)) return c.Error("is_packed_batching is not supported");
  int64_t heads = c.AttrI("num_heads", 0), rotary = c.AttrI("rotary_embedding_dim", 0);
  if (heads == 0 && rotary != 0) return c.Error("rotary_embedding_dim needs num_heads");
  if (heads == 0 && x.rank() == 3) {
    if (cos_cache.rank() != 2 || cos_cache.shape[1].dynamic() || x.shape[2].dynamic() ||
        x.shape[2].v % (2 * cos_cache.shape[1].v) != 0)
      return c.Error("without num_heads the hidden size must be a multiple of twice the caches' width");
    heads = x.shape[2].v / (2 * cos_cache.shape[1].v);
  }
  int64_t count = 1;
  for (const Dim& d : positions.shape) count = d.dynamic() ? -1 : count * d.v;
  Positions form = count == 1 && positions.rank() <= 1 ? Positions::kOffset : Positions::kIds;
  return c.SetOut(0, RotaryEmbeddingOf(c, x, cos_cache, sin_cache, &positions, form, c.AttrI("interleaved", 0) != 0,
                                       heads, rotary));
}

// onnxruntime's GroupQueryAttention (com.microsoft), as its CPU kernel computes it: query
// [B, S, Hq * D] with key and value [B, S, Hkv * D] (or all three packed in query), the caches
// past_key / past_value [B, Hkv, P, D], seqlens_k [B] (each batch's total length - 1) and
// total_sequence_length. Batch b's new tokens sit at past_b = total_b - S (0 for the first
// prompt, S == total_sequence_length); the present caches [B, Hkv, max(total, P), D] hold the
// past before past_b, the new keys after it and zeros beyond. Rotary (do_rotary; caches
// [positions, rotary_dim / 2]) turns Q and the new K at positions past_b + s. Query i attends
// keys up to its own position past_b + i, the last local_window_size of them when that is
// positive (onnxruntime 1.30's window, itself included); scores softcapped, scaled by `scale`
// or 1 / sqrt(D); heads share kv heads in groups of Hq / Hkv.
Status LowerGroupQueryAttention(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& query, c.In(0));
  for (int i = 9; i < c.NumIn(); ++i)
    if (c.HasIn(i)) return c.Error("input " + std::to_string(i) + " (position_ids, attention_bias, head_sink) is not supported");
  if (c.AttrI("smooth_softmax", 0) != 0) return c.Error("smooth_softmax is not supported");
  if (c.node->output_size() > 3 && !c.node->output(3).empty()) return c.Error("output_qk is not supported");
  const int64_t q_heads = c.AttrI("num_heads", 0), kv_heads = c.AttrI("kv_num_heads", 0);
  if (q_heads <= 0 || kv_heads <= 0 || q_heads % kv_heads != 0)
    return c.Error("num_heads must be a positive multiple of kv_num_heads");
  if (query.rank() != 3 || query.shape[2].dynamic() || !query.IsFloat())
    return c.Error("query must be a float [batch, seq, hidden] of static hidden size");
  const bool packed = !c.HasIn(1);
  const int64_t heads_in_query = packed ? q_heads + 2 * kv_heads : q_heads;
  if (query.shape[2].v % heads_in_query != 0) return c.Error("the query's hidden size is not a multiple of its heads");
  const int64_t head = query.shape[2].v / heads_in_query;
  const Dim batch = query.shape[0], seq = query.shape[1];
  std::string et = query.et;
  // [B, heads, S, D] views of the projections.
  HEXIR_ASSIGN_OR_RETURN(Val q_all, AsHeads(c, query, heads_in_query, "query"));
  auto heads_of = [&](Val& all, int64_t first, int64_t count) {
    c.Mat(all);
    return b.Tabulate({batch, Dim::Static(count), seq, Dim::Static(head)}, et, [&](std::vector<std::string> idx) {
      std::string h = b.Fresh();
      b.Line(h + " = arith.addi " + idx[1] + ", " + b.IndexConst(first) + " : index");
      return b.Extract(all, {idx[0], h, idx[2], idx[3]});
    });
  };
  Val q = packed ? heads_of(q_all, 0, q_heads) : q_all, k, v;
  if (packed) {
    k = heads_of(q_all, q_heads, kv_heads);
    v = heads_of(q_all, q_heads + kv_heads, kv_heads);
  } else {
    HEXIR_ASSIGN_OR_RETURN(Val& key, c.In(1));
    HEXIR_ASSIGN_OR_RETURN(Val& value, c.In(2));
    if (key.rank() != 3 || value.rank() != 3) return c.Error("key and value must be [batch, seq, kv hidden]");
    HEXIR_ASSIGN_OR_RETURN(k, AsHeads(c, key, kv_heads, "key"));
    HEXIR_ASSIGN_OR_RETURN(v, AsHeads(c, value, kv_heads, "value"));
    if (k.shape[3].dynamic() || k.shape[3].v != head || v.shape[3].dynamic() || v.shape[3].v != head)
      return c.Error("key and value heads must be query's head size " + std::to_string(head));
  }
  // Lengths: seqlens_k on the device, total_sequence_length on the host.
  HEXIR_ASSIGN_OR_RETURN(Val& seqlens, c.In(5));
  HEXIR_ASSIGN_OR_RETURN(Val& total_in, c.In(6));
  HEXIR_ASSIGN_OR_RETURN(Val total_val, c.ShapeOperand(total_in, "total_sequence_length"));
  if (total_val.ints.size() != 1) return c.Error("total_sequence_length must have one element");
  const Dim total = total_val.ints[0];
  Val* past_k = nullptr;
  Val* past_v = nullptr;
  if (c.HasIn(3) != c.HasIn(4)) return c.Error("past_key and past_value must be given together");
  if (c.HasIn(3)) {
    HEXIR_ASSIGN_OR_RETURN(Val& pk, c.In(3));
    HEXIR_ASSIGN_OR_RETURN(Val& pv, c.In(4));
    if (pk.rank() != 4 || pv.rank() != 4) return c.Error("past_key and past_value must be [batch, kv heads, length, head]");
    past_k = &pk;
    past_v = &pv;
  }
  const Dim past_len = past_k ? past_k->shape[2] : Dim::Static(0);
  const Dim present_len = b.Max(total, past_len);
  std::string first_prompt = b.Fresh();  // S == total_sequence_length: nothing before the new tokens
  b.Line(first_prompt + " = arith.cmpi eq, " + b.DimValue(seq) + ", " + b.DimValue(total) + " : index");
  c.Mat(seqlens);
  // past_b inside a generic at batch index `bi`.
  auto past_of = [&](const std::string& bi) {
    std::string len = b.ToIndex(b.Extract(seqlens, {bi}), seqlens.et), total_b = b.Fresh(), past = b.Fresh();
    b.Line(total_b + " = arith.addi " + len + ", " + b.IndexConst(1) + " : index");
    b.Line(past + " = arith.subi " + total_b + ", " + b.DimValue(seq) + " : index");
    return b.Select(first_prompt, b.IndexConst(0), past, "index");
  };
  if (c.AttrI("do_rotary", 0) != 0) {
    HEXIR_ASSIGN_OR_RETURN(Val& cos_cache, c.In(7));
    HEXIR_ASSIGN_OR_RETURN(Val& sin_cache, c.In(8));
    if (cos_cache.rank() != 2 || cos_cache.shape[1].dynamic()) return c.Error("cos_cache must be [positions, rotary_dim / 2]");
    Val positions = b.Tabulate({batch, seq}, "i64", [&](std::vector<std::string> idx) {
      std::string p = b.Fresh();
      b.Line(p + " = arith.addi " + past_of(idx[0]) + ", " + idx[1] + " : index");
      return b.ToI64(p);
    });
    const bool interleaved = c.AttrI("rotary_interleaved", 0) != 0;
    const int64_t rotary = 2 * cos_cache.shape[1].v;
    HEXIR_ASSIGN_OR_RETURN(q, RotaryEmbeddingOf(c, q, cos_cache, sin_cache, &positions, Positions::kIds, interleaved,
                                                q_heads, rotary));
    HEXIR_ASSIGN_OR_RETURN(k, RotaryEmbeddingOf(c, k, cos_cache, sin_cache, &positions, Positions::kIds, interleaved,
                                                kv_heads, rotary));
  }
  // The present caches: past before past_b, the new rows, zeros.
  auto present_of = [&](Val* past, Val& now) {
    if (past) c.Mat(*past);
    c.Mat(now);
    return b.Tabulate({batch, Dim::Static(kv_heads), present_len, Dim::Static(head)}, et, [&](std::vector<std::string> idx) {
      std::string start = past_of(idx[0]), t = idx[2];
      std::string end = b.Fresh(), rel = b.Fresh(), last = b.Fresh();
      b.Line(end + " = arith.addi " + start + ", " + b.DimValue(seq) + " : index");
      b.Line(rel + " = arith.subi " + t + ", " + start + " : index");
      b.Line(last + " = arith.subi " + b.DimValue(seq) + ", " + b.IndexConst(1) + " : index");
      std::string in_new = b.Bin("", "arith.andi", b.Cmp("", "sge", t, start, "index"), b.Cmp("", "slt", t, end, "index"), "i1");
      std::string row = b.Select(in_new, rel, b.IndexConst(0), "index");
      std::string fresh = b.Extract(now, {idx[0], idx[1], b.Select(b.Cmp("", "sgt", row, last, "index"), last, row, "index"), idx[3]});
      std::string zero = b.ScalarConst(et, 0), value = b.Select(in_new, fresh, zero, et);
      if (!past) return value;
      std::string past_last = b.Fresh();
      b.Line(past_last + " = arith.subi " + b.DimValue(past_len) + ", " + b.IndexConst(1) + " : index");
      std::string before = b.Bin("", "arith.andi", b.Cmp("", "slt", t, start, "index"), b.Cmp("", "sle", t, past_last, "index"), "i1");
      std::string clamped = b.Select(b.Cmp("", "sgt", t, past_last, "index"), past_last, t, "index");
      std::string old = b.Extract(*past, {idx[0], idx[1], b.Select(b.Cmp("", "slt", clamped, b.IndexConst(0), "index"), b.IndexConst(0), clamped, "index"), idx[3]});
      return b.Select(before, old, value, et);
    });
  };
  Val present_k = present_of(past_k, k), present_v = present_of(past_v, v);
  if (c.node->output_size() > 1 && !c.node->output(1).empty()) c.SetOut(1, present_k);
  if (c.node->output_size() > 2 && !c.node->output(2).empty()) c.SetOut(2, present_v);
  double scale = c.AttrF("scale", 0.0f);
  if (scale == 0) scale = 1.0 / std::sqrt(static_cast<double>(head));
  HEXIR_ASSIGN_OR_RETURN(Val scores, GroupedScores(c, q, present_k, scale, c.AttrF("softcap", 0.0f)));
  const int64_t window = c.AttrI("local_window_size", -1);
  Val bias = b.Tabulate({batch, Dim::Static(1), seq, present_len}, et, [&](std::vector<std::string> idx) {
    std::string newest = b.Fresh();  // the query's own position
    b.Line(newest + " = arith.addi " + past_of(idx[0]) + ", " + idx[2] + " : index");
    std::string allowed = b.Cmp("", "sle", idx[3], newest, "index");
    if (window > 0) {
      std::string oldest = b.Fresh();  // window keys ending at the query's own
      b.Line(oldest + " = arith.subi " + newest + ", " + b.IndexConst(window - 1) + " : index");
      allowed = b.Bin("", "arith.andi", allowed, b.Cmp("", "sge", idx[3], oldest, "index"), "i1");
    }
    return b.Select(allowed, b.ScalarConst(et, 0), b.ScalarConst(et, -std::numeric_limits<double>::infinity()), et);
  });
  HEXIR_ASSIGN_OR_RETURN(scores, Biased(c, scores, bias));
  HEXIR_ASSIGN_OR_RETURN(Val probs, SoftmaxOverKeys(c, scores));
  HEXIR_ASSIGN_OR_RETURN(Val y, GroupedValues(c, probs, present_v));
  return c.SetOut(0, AsRows(c, y));
}


namespace {

// What masks a key position in onnxruntime's attention ops (mask_filter_value added to its
// score): `padding` int32 [B] (keys at or past the batch's length), [B, T] or [B, S, T] (0);
// with `causal`, keys past the query's own position past_len + s.
struct KeyMask {
  Val* padding = nullptr;
  bool causal = false;
  Dim past_len = Dim::Static(0);
  double filter = -10000.0;
};

// softmax(scale Q K^T + attention_bias + the KeyMask's filter) V for q [B, N, S, H], k and v
// [B, N, T, H | Hv] (past already joined): [B, S, N Hv] rows, as onnxruntime's CPU kernels of
// MultiHeadAttention and Attention compute it.
StatusOr<Val> MaskedAttention(Context& c, Val& q, Val& k, Val& v, double scale, Val* attention_bias,
                              const KeyMask& mask) {
  Builder& b = c.b;
  std::string et = q.et;
  const Dim batch = q.shape[0], seq = q.shape[2], total = k.shape[2];
  HEXIR_ASSIGN_OR_RETURN(Val scores, GroupedScores(c, q, k, scale, 0));
  if (attention_bias) {
    if (attention_bias->rank() != 4 || attention_bias->et != et)
      return c.Error("attention_bias must be [batch or 1, heads or 1, seq, total] of the query's type");
    HEXIR_ASSIGN_OR_RETURN(scores, Biased(c, scores, *attention_bias));
  }
  if (Val* padding = mask.padding) {
    const int rank = padding->rank();
    if (padding->et != "i32" || rank < 1 || rank > 3 ||
        (rank == 1 && !padding->shape[0].dynamic() && !batch.dynamic() && padding->shape[0].v != batch.v))
      return c.Error("the key padding mask must be int32 [batch] (key lengths), [batch, total] or [batch, seq, "
                     "total] (the 2 batch, 3 batch + 2 and 4-D forms are not supported)");
    // Its extents against the scores' (static ones; a run-time mismatch is a bounds error).
    auto differ = [](const Dim& a, const Dim& b) { return !a.dynamic() && !b.dynamic() && a.v != b.v; };
    if ((rank == 2 && differ(padding->shape[1], total)) ||
        (rank == 3 && (differ(padding->shape[1], seq) || differ(padding->shape[2], total))))
      return c.Error("the key padding mask's extents do not match [batch, " + std::string(rank == 3 ? "seq, " : "") +
                     "total length]");
    c.Mat(*padding);
  }
  if (mask.padding || mask.causal) {
    std::string past = b.DimValue(mask.past_len);
    Val masked = b.Tabulate({batch, Dim::Static(1), seq, total}, et, [&](std::vector<std::string> idx) {
      std::string keep;
      if (Val* padding = mask.padding) {
        if (padding->rank() == 1) {
          keep = b.Cmp("", "slt", idx[3], b.ToIndex(b.Extract(*padding, {idx[0]}), "i32"), "index");
        } else {
          std::vector<std::string> at = {idx[0], idx[3]};
          if (padding->rank() == 3) at = {idx[0], idx[2], idx[3]};
          keep = b.Cmp("", "ne", b.Extract(*padding, at), b.ScalarConst("i32", 0), "i32");
        }
      }
      if (mask.causal) {
        std::string own = b.Fresh();
        b.Line(own + " = arith.addi " + idx[2] + ", " + past + " : index");
        keep = b.AndI1(keep, b.Cmp("", "sle", idx[3], own, "index"));
      }
      return b.Select(keep, b.ScalarConst(et, 0), b.ScalarConst(et, mask.filter), et);
    });
    HEXIR_ASSIGN_OR_RETURN(scores, Biased(c, scores, masked));
  }
  HEXIR_ASSIGN_OR_RETURN(Val probs, SoftmaxOverKeys(c, scores));
  HEXIR_ASSIGN_OR_RETURN(Val y, GroupedValues(c, probs, v));
  return AsRows(c, y);
}

// x [B, S, W] plus bias[first : first + W] (bias 1-D).
StatusOr<Val> PlusBiasSlice(Context& c, Val& x, Val& bias, int64_t first) {
  Builder& b = c.b;
  std::string et = x.et;
  c.Mat(bias);
  Val slice = b.Tabulate({x.shape[2]}, et, [&](std::vector<std::string> idx) {
    std::string at = b.Fresh();
    b.Line(at + " = arith.addi " + idx[0] + ", " + b.IndexConst(first) + " : index");
    return b.Extract(bias, {at});
  });
  return c.Elementwise({&x, &slice}, et, [&](const Args& a) { return b.Bin("arith.addf", "", a[0], a[1], et); });
}

// The attention scale: the `scale` attribute, or 1 / sqrt(head size) where it is absent or 0.
double AttentionScale(Context& c, int64_t head) {
  double scale = c.AttrF("scale", 0.0f);
  return scale != 0 ? scale : 1.0 / std::sqrt(static_cast<double>(head));
}

}  // namespace

// onnxruntime's MultiHeadAttention (com.microsoft), as its CPU kernel computes it: query
// [B, S, N * H]; key and value [B, L, N * H | N * Hv] (with `bias` [N H + N H + N Hv] added to
// the three projections, and past_key / past_value [B, N, P, H] before them: the present
// outputs), or key and value already [B, N, L, H] (cross attention's cached projections).
// Scores and masks: MaskedAttention (attention_bias input 5, key_padding_mask input 4 [B] or
// [B, T], unidirectional).
Status LowerMultiHeadAttention(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& query, c.In(0));
  for (int i = 8; i < c.NumIn(); ++i)
    if (c.HasIn(i)) return c.Error("input " + std::to_string(i) + " (past_sequence_length, cache_indirection) is not supported");
  if (c.node->output_size() > 3 && !c.node->output(3).empty()) return c.Error("output_qk is not supported");
  const int64_t heads = c.AttrI("num_heads", 0);
  if (heads <= 0) return c.Error("num_heads must be positive");
  if (query.rank() != 3 || !query.IsFloat())
    return c.Error("query must be a float [batch, seq, hidden] (packed QKV is not supported)");
  if (!c.HasIn(1) || !c.HasIn(2)) return c.Error("key and value must be given (packed QKV / KV are not supported)");
  HEXIR_ASSIGN_OR_RETURN(Val& key_in, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val& value_in, c.In(2));
  std::string et = query.et;
  if (key_in.et != et || value_in.et != et) return c.Error("query, key and value must have one element type");
  if (key_in.rank() != value_in.rank() || (key_in.rank() != 3 && key_in.rank() != 4))
    return c.Error("key and value must both be [batch, length, hidden] or both [batch, heads, length, head] "
                   "(packed KV is not supported)");
  const bool projected = key_in.rank() == 3;
  if (query.shape[2].dynamic() || query.shape[2].v % heads != 0)
    return c.Error("the query's hidden size must be static and a multiple of num_heads");
  const int64_t head = query.shape[2].v / heads;
  Val q3 = query, k3 = key_in, v3 = value_in;
  if (c.HasIn(3)) {  // bias: the q, k and v parts
    if (!projected) return c.Error("bias needs 3-D key and value");
    HEXIR_ASSIGN_OR_RETURN(Val& bias, c.In(3));
    const Dim& dv = value_in.shape[2];
    if (bias.rank() != 1 || dv.dynamic() || bias.shape[0].dynamic() || bias.shape[0].v != 2 * query.shape[2].v + dv.v)
      return c.Error("bias must be [hidden + hidden + value hidden]");
    HEXIR_ASSIGN_OR_RETURN(q3, PlusBiasSlice(c, q3, bias, 0));
    HEXIR_ASSIGN_OR_RETURN(k3, PlusBiasSlice(c, k3, bias, query.shape[2].v));
    HEXIR_ASSIGN_OR_RETURN(v3, PlusBiasSlice(c, v3, bias, 2 * query.shape[2].v));
  }
  HEXIR_ASSIGN_OR_RETURN(Val q, AsHeads(c, q3, heads, "query"));
  HEXIR_ASSIGN_OR_RETURN(Val k, AsHeads(c, k3, heads, "key"));
  HEXIR_ASSIGN_OR_RETURN(Val v, AsHeads(c, v3, heads, "value"));
  if (k.shape[1].dynamic() || k.shape[1].v != heads || k.shape[3].dynamic() || k.shape[3].v != head ||
      v.shape[1].dynamic() || v.shape[1].v != heads || v.shape[3].dynamic())
    return c.Error("key and value must have num_heads heads, key of the query's head size " + std::to_string(head));
  KeyMask mask;
  mask.causal = c.AttrI("unidirectional", 0) != 0;
  mask.filter = c.AttrF("mask_filter_value", -10000.0f);
  // The caches: past ++ new along the sequence.
  if (c.HasIn(6) != c.HasIn(7)) return c.Error("past_key and past_value must be given together");
  if (c.HasIn(6)) {
    if (!projected) return c.Error("past_key and past_value need 3-D key and value");
    for (int i : {6, 7}) {
      HEXIR_ASSIGN_OR_RETURN(Val& past, c.In(i));
      if (past.rank() != 4) return c.Error(std::string(i == 6 ? "past_key" : "past_value") + " must be [batch, heads, length, head]");
      if (i == 6) mask.past_len = past.shape[2];
      Val& now = i == 6 ? k : v;
      HEXIR_ASSIGN_OR_RETURN(std::vector<Val> joined,
                             LowerAs(c, "Concat", {past, now}, 1, [](::onnx::NodeProto& n) { SetInt(n, "axis", 2); }));
      now = joined[0];
    }
  }
  if (c.node->output_size() > 1 && !c.node->output(1).empty()) c.SetOut(1, k);
  if (c.node->output_size() > 2 && !c.node->output(2).empty()) c.SetOut(2, v);
  Val* attention_bias = nullptr;
  if (c.HasIn(5)) {
    HEXIR_ASSIGN_OR_RETURN(Val& ab, c.In(5));
    attention_bias = &ab;
  }
  if (c.HasIn(4)) {
    HEXIR_ASSIGN_OR_RETURN(Val& padding, c.In(4));
    if (padding.rank() == 3) return c.Error("key_padding_mask must be [batch] or [batch, total]");
    mask.padding = &padding;
  }
  return c.SetOut(0, MaskedAttention(c, q, k, v, AttentionScale(c, head), attention_bias, mask));
}

// onnxruntime's Attention (com.microsoft; BERT's, written by its transformer optimizer), as its
// CPU kernel computes it: input [B, S, D_in] times weights [D_in, Dq + Dk + Dv] (qkv_hidden_sizes,
// else three equal parts) plus bias [Dq + Dk + Dv] gives Q, K and V of num_heads heads; past
// [2, B, N, P, H] (keys, values) before K and V, present [2, B, N, P + S, H]; mask_index int32
// [B] (key lengths), [B, T] or [B, S, T] (0 masks), attention_bias (input 5), unidirectional:
// MaskedAttention.
Status LowerMicrosoftAttention(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& input, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& weights, c.In(1));
  for (int i = 6; i < c.NumIn(); ++i)
    if (c.HasIn(i)) return c.Error("input " + std::to_string(i) + " (past_sequence_length and later) is not supported");
  if (c.AttrI("do_rotary", 0) != 0) return c.Error("do_rotary is not supported");
  if (c.node->output_size() > 2) return c.Error("output_qk is not supported");
  const int64_t heads = c.AttrI("num_heads", 0);
  if (heads <= 0) return c.Error("num_heads must be positive");
  if (input.rank() != 3 || !input.IsFloat() || weights.rank() != 2 || weights.et != input.et)
    return c.Error("input must be a float [batch, seq, hidden] and weights [hidden, q + k + v hidden] of its type");
  std::string et = input.et;
  if (weights.shape[1].dynamic()) return c.Error("the weights' width must be static");
  std::vector<int64_t> sizes = c.AttrInts("qkv_hidden_sizes");
  if (sizes.empty()) sizes.assign(3, weights.shape[1].v / 3);
  if (sizes.size() != 3 || sizes[0] != sizes[1] || sizes[0] + sizes[1] + sizes[2] != weights.shape[1].v ||
      sizes[0] % heads != 0 || sizes[2] % heads != 0)
    return c.Error("qkv_hidden_sizes must be three widths summing to the weights' " + std::to_string(weights.shape[1].v) +
                   ", q and k equal, each a multiple of num_heads");
  HEXIR_ASSIGN_OR_RETURN(Val qkv, c.MatMul(input, weights));
  if (c.HasIn(2)) {
    HEXIR_ASSIGN_OR_RETURN(Val& bias, c.In(2));
    if (bias.rank() != 1 || bias.shape[0].dynamic() || bias.shape[0].v != weights.shape[1].v)
      return c.Error("bias must be [" + std::to_string(weights.shape[1].v) + "]");
    HEXIR_ASSIGN_OR_RETURN(qkv, PlusBiasSlice(c, qkv, bias, 0));
  }
  c.Mat(qkv);
  const Dim batch = input.shape[0], seq = input.shape[1];
  // Part p of qkv as [B, S, width].
  auto part = [&](int64_t first, int64_t width) {
    return b.Tabulate({batch, seq, Dim::Static(width)}, et, [&](std::vector<std::string> idx) {
      std::string at = b.Fresh();
      b.Line(at + " = arith.addi " + idx[2] + ", " + b.IndexConst(first) + " : index");
      return b.Extract(qkv, {idx[0], idx[1], at});
    });
  };
  Val q3 = part(0, sizes[0]), k3 = part(sizes[0], sizes[1]), v3 = part(sizes[0] + sizes[1], sizes[2]);
  HEXIR_ASSIGN_OR_RETURN(Val q, AsHeads(c, q3, heads, "query"));
  HEXIR_ASSIGN_OR_RETURN(Val k, AsHeads(c, k3, heads, "key"));
  HEXIR_ASSIGN_OR_RETURN(Val v, AsHeads(c, v3, heads, "value"));
  KeyMask mask;
  mask.causal = c.AttrI("unidirectional", 0) != 0;
  mask.filter = c.AttrF("mask_filter_value", -10000.0f);
  const int64_t head = sizes[0] / heads;
  if (c.HasIn(4)) {
    HEXIR_ASSIGN_OR_RETURN(Val& past, c.In(4));
    if (sizes[1] != sizes[2]) return c.Error("past needs keys and values of one width");
    if (past.rank() != 5 || past.shape[0].dynamic() || past.shape[0].v != 2 || past.et != et)
      return c.Error("past must be [2, batch, heads, past length, head] of the input's type");
    mask.past_len = past.shape[3];
    c.Mat(past);
    for (int64_t which : {0, 1}) {
      Val old = b.Tabulate({past.shape[1], past.shape[2], past.shape[3], past.shape[4]}, et, [&](std::vector<std::string> idx) {
        return b.Extract(past, {b.IndexConst(which), idx[0], idx[1], idx[2], idx[3]});
      });
      Val& now = which == 0 ? k : v;
      HEXIR_ASSIGN_OR_RETURN(std::vector<Val> joined,
                             LowerAs(c, "Concat", {old, now}, 1, [](::onnx::NodeProto& n) { SetInt(n, "axis", 2); }));
      now = joined[0];
    }
  }
  if (c.node->output_size() > 1 && !c.node->output(1).empty()) {
    c.Mat(k);
    c.Mat(v);
    Val present = b.Tabulate({Dim::Static(2), k.shape[0], k.shape[1], k.shape[2], k.shape[3]}, et,
                             [&](std::vector<std::string> idx) {
                               std::string first = b.Cmp("", "eq", idx[0], b.IndexConst(0), "index");
                               std::vector<std::string> at = {idx[1], idx[2], idx[3], idx[4]};
                               return b.Select(first, b.Extract(k, at), b.Extract(v, at), et);
                             });
    c.SetOut(1, present);
  }
  Val* attention_bias = nullptr;
  if (c.HasIn(5)) {
    HEXIR_ASSIGN_OR_RETURN(Val& ab, c.In(5));
    attention_bias = &ab;
  }
  if (c.HasIn(3)) {
    HEXIR_ASSIGN_OR_RETURN(Val& padding, c.In(3));
    mask.padding = &padding;
  }
  return c.SetOut(0, MaskedAttention(c, q, k, v, AttentionScale(c, head), attention_bias, mask));
}

}  // namespace hexir::importers::onnx
