// onnxruntime's contrib ops (domain com.microsoft), as its transformer optimizer and
// onnxruntime-genai write them into the models people download: the fused activations
// (FastGelu, BiasGelu, QuickGelu, Gelu), FusedMatMul, FusedConv, the skip
// normalizations (SkipLayerNormalization, SkipSimplifiedLayerNormalization) and MatMulNBits
// (2-, 4- or 8-bit block-quantized weights, dequantized inside the contraction). Semantics
// are onnxruntime's (docs/ContribOperators.md); each composes the default table's lowerings
// through LowerAs or is one generic.
#include <cmath>

#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"
#include "compiler/importers/onnx/OpTable.h"

namespace hexir::importers::onnx {
namespace {

// x + bias (input 1 when present), one generic.
StatusOr<Val> PlusOptional(Context& c, Val& x, int i) {
  if (!c.HasIn(i)) return x;
  HEXIR_ASSIGN_OR_RETURN(Val& bias, c.In(i));
  std::string et = x.et;
  return c.Elementwise({&x, &bias}, et, [&](const Args& a) { return c.b.Bin("arith.addf", "", a[0], a[1], et); });
}

// The Gelu of x: the erf form, or the tanh approximation.
StatusOr<Val> GeluOf(Context& c, Val& x, bool tanh) {
  std::string et = x.et;
  return c.Elementwise({&x}, et, [&](const Args& a) { return Gelu(c.b, a[0], et, tanh); });
}

// Copies the current node's attributes named in `names` onto n.
std::function<void(::onnx::NodeProto&)> CopyAttributes(Context& c, std::vector<std::string> names) {
  const ::onnx::NodeProto* node = c.node;
  return [node, names](::onnx::NodeProto& n) {
    for (const auto& a : node->attribute())
      for (const std::string& name : names)
        if (a.name() == name) *n.add_attribute() = a;
  };
}

// The normalization of sum = input + skip (+ bias) over its last dim, scaled by gamma (and
// shifted by beta): outputs 0 (y), 2 (1 / std, kept dims 1) and 3 (sum). `rms`: no mean.
Status SkipNormalization(Context& c, bool rms) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& input, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& skip, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val& gamma, c.In(2));
  if (!input.IsFloat()) return c.Error("element type " + input.et + " is not supported");
  std::string et = input.et;
  HEXIR_ASSIGN_OR_RETURN(Val sum, c.Elementwise({&input, &skip}, et, [&](const Args& a) {
    return b.Bin("arith.addf", "", a[0], a[1], et);
  }));
  HEXIR_ASSIGN_OR_RETURN(sum, PlusOptional(c, sum, rms ? 3 : 4));
  const int64_t last = sum.rank() - 1;
  double eps = c.AttrF("epsilon", 1e-12f);
  Val centered = sum;
  if (!rms) {
    HEXIR_ASSIGN_OR_RETURN(Val mean, c.Reduce(sum, {last}, true, "mean"));
    HEXIR_ASSIGN_OR_RETURN(centered, c.Elementwise({&sum, &mean}, et, [&](const Args& a) {
      return b.Bin("arith.subf", "", a[0], a[1], et);
    }));
  }
  HEXIR_ASSIGN_OR_RETURN(Val squares, c.Elementwise({&centered}, et, [&](const Args& a) {
    return b.Bin("arith.mulf", "", a[0], a[0], et);
  }));
  HEXIR_ASSIGN_OR_RETURN(Val variance, c.Reduce(squares, {last}, true, "mean"));
  HEXIR_ASSIGN_OR_RETURN(Val inv_std, c.Elementwise({&variance}, et, [&](const Args& a) {
    std::string d = b.Op1("math.sqrt", b.Bin("arith.addf", "", a[0], b.ScalarConst(et, eps), et), et);
    return b.Bin("arith.divf", "", b.ScalarConst(et, 1), d, et);
  }));
  HEXIR_ASSIGN_OR_RETURN(Val y, c.Elementwise({&centered, &inv_std, &gamma}, et, [&](const Args& a) {
    return b.Bin("arith.mulf", "", b.Bin("arith.mulf", "", a[0], a[1], et), a[2], et);
  }));
  if (!rms) {
    HEXIR_ASSIGN_OR_RETURN(y, PlusOptional(c, y, 3));
  }
  c.SetOut(0, y);
  if (c.node->output_size() > 2 && !c.node->output(2).empty()) c.SetOut(2, inv_std);
  if (c.node->output_size() > 3 && !c.node->output(3).empty()) c.SetOut(3, sum);
  return Status::Ok();
}

}  // namespace

Status LowerMicrosoftGelu(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  return c.SetOut(0, GeluOf(c, x, /*tanh=*/false));
}

// Gelu's tanh form of x + bias (bias optional).
Status LowerFastGelu(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val sum, PlusOptional(c, x, 1));
  return c.SetOut(0, GeluOf(c, sum, /*tanh=*/true));
}

// Gelu (erf) of x + bias.
Status LowerBiasGelu(Context& c) {
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val sum, PlusOptional(c, x, 1));
  return c.SetOut(0, GeluOf(c, sum, /*tanh=*/false));
}

// x * sigmoid(alpha x), alpha 1.702 by default.
Status LowerQuickGelu(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  double alpha = c.AttrF("alpha", 1.702f);
  std::string et = x.et;
  return c.SetOut(0, c.Elementwise({&x}, et, [&](const Args& a) {
    return b.Bin("arith.mulf", "", a[0], Sigmoid(b, b.Bin("arith.mulf", "", a[0], b.ScalarConst(et, alpha), et), et), et);
  }));
}

// alpha * op(A) @ op(B), op a transpose of the last two dims (transA / transB).
Status LowerFusedMatMul(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& a_in, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& b_in, c.In(1));
  if (c.AttrI("transBatchA", 0) || c.AttrI("transBatchB", 0))
    return c.Error("transBatchA / transBatchB are not supported");
  auto transposed = [&](Val& v, const char* attr) -> StatusOr<Val> {
    if (!c.AttrI(attr, 0)) return v;
    if (v.rank() < 2) return c.Error(std::string(attr) + " on an operand of rank " + std::to_string(v.rank()));
    std::vector<int64_t> perm;
    for (int64_t i = 0; i < v.rank(); ++i) perm.push_back(i);
    std::swap(perm[v.rank() - 1], perm[v.rank() - 2]);
    return c.Transpose(v, perm);
  };
  HEXIR_ASSIGN_OR_RETURN(Val a, transposed(a_in, "transA"));
  HEXIR_ASSIGN_OR_RETURN(Val bm, transposed(b_in, "transB"));
  HEXIR_ASSIGN_OR_RETURN(Val y, c.MatMul(a, bm));
  double alpha = c.AttrF("alpha", 1.0f);
  if (alpha == 1.0) {
    c.SetOut(0, y);
    return Status::Ok();
  }
  std::string et = y.et;
  return c.SetOut(0, c.Elementwise({&y}, et, [&](const Args& v) {
    return b.Bin("arith.mulf", "", v[0], b.ScalarConst(et, alpha), et);
  }));
}

// Conv (+ Z, input 3) then `activation` with `activation_params`.
Status LowerFusedConv(Context& c) {
  Builder& b = c.b;
  std::vector<Val> ins;
  for (int i = 0; i < std::min(c.NumIn(), 3); ++i) {
    if (!c.HasIn(i)) break;
    HEXIR_ASSIGN_OR_RETURN(Val& v, c.In(i));
    ins.push_back(v);
  }
  HEXIR_ASSIGN_OR_RETURN(std::vector<Val> conv,
                         LowerAs(c, "Conv", ins, 1,
                                 CopyAttributes(c, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})));
  Val y = conv[0];
  HEXIR_ASSIGN_OR_RETURN(y, PlusOptional(c, y, 3));
  std::string activation = c.AttrS("activation", "");
  std::vector<float> params = c.AttrFloats("activation_params");
  if (activation.empty()) {
    c.SetOut(0, y);
    return Status::Ok();
  }
  std::string et = y.et;
  auto param = [&](size_t i, float def) { return i < params.size() ? params[i] : def; };
  if (activation != "Relu" && activation != "Sigmoid" && activation != "Tanh" && activation != "LeakyRelu" &&
      activation != "Clip" && activation != "HardSigmoid")
    return c.Error("activation '" + activation + "' is not supported");
  return c.SetOut(0, c.Elementwise({&y}, et, [&](const Args& a) {
    auto k = [&](double v) { return b.ScalarConst(et, v); };
    if (activation == "Relu") return b.Bin("arith.maximumf", "", a[0], k(0), et);
    if (activation == "Sigmoid") return Sigmoid(b, a[0], et);
    if (activation == "Tanh") return b.Op1("math.tanh", a[0], et);
    if (activation == "LeakyRelu")
      return b.Select(b.Cmp("olt", "", a[0], k(0), et), b.Bin("arith.mulf", "", a[0], k(param(0, 0.01f)), et), a[0], et);
    if (activation == "Clip") return Clamp(b, a[0], k(param(0, -INFINITY)), k(param(1, INFINITY)), et);
    std::string lin = b.Bin("arith.addf", "", b.Bin("arith.mulf", "", a[0], k(param(0, 0.2f)), et), k(param(1, 0.5f)), et);
    return Clamp(b, lin, k(0), k(1), et);  // HardSigmoid
  }));
}

// BERT's embedding (onnxruntime's CPU semantics): word_embedding[input_ids] +
// position_embedding[position] (position_ids [B | 1, S], else s) + segment_embedding[segment_ids]
// (both optional), layer-normalized with gamma, beta and epsilon (default 1e-12); mask_index
// (output 1, mask_index_type 1): each batch's count of nonzero mask entries (0 without mask);
// embedding_sum (output 2): the sum before the norm.
Status LowerEmbedLayerNormalization(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& ids, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& words, c.In(2));
  HEXIR_ASSIGN_OR_RETURN(Val& positions, c.In(3));
  HEXIR_ASSIGN_OR_RETURN(Val& gamma, c.In(5));
  HEXIR_ASSIGN_OR_RETURN(Val& beta, c.In(6));
  if (ids.rank() != 2 || (ids.et != "i32" && ids.et != "i64")) return c.Error("input_ids must be int32 [batch, seq]");
  if (words.rank() != 2 || positions.rank() != 2 || !words.IsFloat() || positions.et != words.et)
    return c.Error("word_embedding and position_embedding must be float [rows, hidden] of one type");
  if (c.HasIn(1) != c.HasIn(4)) return c.Error("segment_ids and segment_embedding must be given together");
  std::string et = words.et;
  const Dim batch = ids.shape[0], seq = ids.shape[1], hidden = words.shape[1];
  Val* segments = nullptr;
  Val* segment_table = nullptr;
  if (c.HasIn(1)) {
    HEXIR_ASSIGN_OR_RETURN(Val& sids, c.In(1));
    HEXIR_ASSIGN_OR_RETURN(Val& stable, c.In(4));
    if (sids.rank() != 2 || stable.rank() != 2 || stable.et != et)
      return c.Error("segment_ids must be [batch, seq] and segment_embedding [segments, hidden]");
    segments = &sids;
    segment_table = &stable;
  }
  Val* position_ids = nullptr;
  if (c.HasIn(8)) {
    HEXIR_ASSIGN_OR_RETURN(Val& p, c.In(8));
    if (p.rank() != 2) return c.Error("position_ids must be [batch or 1, seq]");
    position_ids = &p;
  }
  for (Val* v : {&ids, &words, &positions, segments, segment_table, position_ids})
    if (v) c.Mat(*v);
  // Rows clamped into their tables (onnxruntime refuses an id out of range; the clamp keeps
  // every read inside the table).
  auto row = [&](Val& table, const std::string& id, const std::string& id_et) {
    std::string i = b.ToIndex(id, id_et), last = b.DimValue(b.Sub(table.shape[0], Dim::Static(1)));
    i = b.Select(b.Cmp("", "slt", i, b.IndexConst(0), "index"), b.IndexConst(0), i, "index");
    return b.Select(b.Cmp("", "sgt", i, last, "index"), last, i, "index");
  };
  Val sum = b.Tabulate({batch, seq, hidden}, et, [&](std::vector<std::string> idx) {
    std::string total = b.Extract(words, {row(words, b.Extract(ids, {idx[0], idx[1]}), ids.et), idx[2]});
    std::string at = idx[1];
    if (position_ids) {
      std::string pb = position_ids->shape[0].dynamic() || position_ids->shape[0].v != 1 ? idx[0] : b.IndexConst(0);
      at = row(positions, b.Extract(*position_ids, {pb, idx[1]}), position_ids->et);
    }
    total = b.Bin("arith.addf", "", total, b.Extract(positions, {at, idx[2]}), et);
    if (segments)
      total = b.Bin("arith.addf", "", total,
                    b.Extract(*segment_table, {row(*segment_table, b.Extract(*segments, {idx[0], idx[1]}), segments->et), idx[2]}),
                    et);
    return total;
  });
  const double epsilon = c.AttrF("epsilon", 1e-12f);
  HEXIR_ASSIGN_OR_RETURN(std::vector<Val> normed, LowerAs(c, "LayerNormalization", {sum, gamma, beta}, 1, [&](::onnx::NodeProto& n) {
    SetInt(n, "axis", -1);
    auto* a = n.add_attribute();
    a->set_name("epsilon");
    a->set_type(::onnx::AttributeProto::FLOAT);
    a->set_f(static_cast<float>(epsilon));
  }));
  c.SetOut(0, normed[0]);
  if (c.node->output_size() > 2 && !c.node->output(2).empty()) c.SetOut(2, sum);
  if (c.node->output_size() > 1 && !c.node->output(1).empty()) {
    if (c.AttrI("mask_index_type", 1) != 1) return c.Error("mask_index_type other than 1 is not supported");
    Val count = b.Tabulate({batch}, "i32", [&](std::vector<std::string>) { return b.ScalarConst("i32", 0); });
    if (c.HasIn(7)) {
      HEXIR_ASSIGN_OR_RETURN(Val& mask, c.In(7));
      if (mask.rank() != 2 || (mask.et != "i32" && mask.et != "i64")) return c.Error("mask must be int32 [batch, seq]");
      // Each batch's nonzero entries: the i32 sum of a 0/1 row.
      HEXIR_ASSIGN_OR_RETURN(Val ones01, c.Elementwise({&mask}, "i32", [&](const Args& a) {
        std::string nonzero = b.Cmp("", "ne", a[0], b.ScalarConst(mask.et, 0), mask.et);
        return b.Select(nonzero, b.ScalarConst("i32", 1), b.ScalarConst("i32", 0), "i32");
      }));
      HEXIR_ASSIGN_OR_RETURN(count, c.Reduce(ones01, {1}, false, "sum"));
    }
    c.SetOut(1, count);
  }
  return Status::Ok();
}

Status LowerSkipLayerNormalization(Context& c) { return SkipNormalization(c, /*rms=*/false); }
Status LowerSkipSimplifiedLayerNormalization(Context& c) { return SkipNormalization(c, /*rms=*/true); }

// Y = A @ W^T (+ bias), W [N, K] stored as `bits`-bit unsigned integers in blocks of
// block_size along K: B [N, blocks, block_size * bits / 8] (element k of a byte's group in
// its bits k * bits.. from the least significant), W[n][k] = (q - zero) * scale[n][k / block],
// zero from zero_points (packed like B, or of the scales' type) or 2^(bits - 1). One
// contraction generic over (rows..., N, K) decoding each weight as it reads it, accumulating
// in f32 (f16 models too).
Status LowerMatMulNBits(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& a, c.In(0));
  HEXIR_ASSIGN_OR_RETURN(Val& packed, c.In(1));
  HEXIR_ASSIGN_OR_RETURN(Val& scales, c.In(2));
  const int64_t k_size = c.AttrI("K", 0), n_size = c.AttrI("N", 0), bits = c.AttrI("bits", 4),
                block = c.AttrI("block_size", 0);
  if (bits != 2 && bits != 4 && bits != 8) return c.Error("bits " + std::to_string(bits) + " is not supported (2, 4, 8 are)");
  if (k_size <= 0 || n_size <= 0 || block < 16 || (block & (block - 1)) != 0)
    return c.Error("K, N and a power-of-two block_size >= 16 are required");
  if (c.HasIn(4)) return c.Error("g_idx is not supported");
  if (!a.IsFloat() || a.rank() < 1 || a.shape.back().dynamic() || a.shape.back().v != k_size)
    return c.Error("A must be a float tensor whose last dim is K = " + std::to_string(k_size));
  const int64_t blocks = (k_size + block - 1) / block, per_byte = 8 / bits, blob = block / per_byte;
  if (packed.rank() != 3 || packed.shape[0].v != n_size || packed.shape[1].v != blocks || packed.shape[2].v != blob ||
      packed.et != "i8")
    return c.Error("B must be uint8 [" + std::to_string(n_size) + ", " + std::to_string(blocks) + ", " +
                   std::to_string(blob) + "]");
  int64_t scale_count = 1;
  for (const Dim& d : scales.shape) scale_count *= d.dynamic() ? -1 : d.v;
  if (scale_count != n_size * blocks) return c.Error("scales must hold N * blocks = " + std::to_string(n_size * blocks) + " values");
  Val* zeros = nullptr;
  if (c.HasIn(3)) {
    HEXIR_ASSIGN_OR_RETURN(Val& z, c.In(3));
    zeros = &z;
  }
  const bool packed_zeros = zeros && zeros->et == "i8";
  if (zeros && !packed_zeros && zeros->et != scales.et)
    return c.Error("zero_points must be uint8 or of the scales' type");
  HEXIR_ASSIGN_OR_RETURN(Val flat_scales, c.ReshapeTo(scales, {Dim::Static(n_size * blocks)}));
  Val flat_zeros;
  const int64_t zero_row = (blocks + per_byte - 1) / per_byte;  // packed zero points' bytes per row
  if (zeros) {
    int64_t count = 1;
    for (const Dim& d : zeros->shape) count *= d.dynamic() ? -1 : d.v;
    int64_t want = packed_zeros ? n_size * zero_row : n_size * blocks;
    if (count != want) return c.Error("zero_points must hold " + std::to_string(want) + " values");
    HEXIR_ASSIGN_OR_RETURN(flat_zeros, c.ReshapeTo(*zeros, {Dim::Static(want)}));
    c.Mat(flat_zeros);
  }
  c.Mat(a);
  c.Mat(packed);
  c.Mat(flat_scales);
  std::string et = a.et;
  // Loops: A's leading dims, n, then k (reduction).
  const int rows = static_cast<int>(a.rank()) - 1, loops = rows + 2;
  Shape out(a.shape.begin(), a.shape.end() - 1);
  out.push_back(Dim::Static(n_size));
  std::vector<std::string> a_map, out_map;
  for (int i = 0; i < rows; ++i) a_map.push_back("d" + std::to_string(i));
  a_map.push_back("d" + std::to_string(rows + 1));
  for (int i = 0; i <= rows; ++i) out_map.push_back("d" + std::to_string(i));
  std::vector<std::string> iterators(rows + 1, "parallel");
  iterators.push_back("reduction");
  // Accumulated in f32 whatever A's type (f16 models), as onnxruntime does.
  std::string init = b.Filled(out, "f32", 0);
  Val y;
  y.et = "f32";
  y.shape = out;
  y.name = b.Generic({&a}, {Builder::Map(loops, a_map)}, Builder::Map(loops, out_map), out, "f32", loops, iterators, init,
                     [&](const Args& args) {
                       auto index = [&](int64_t v) { return b.IndexConst(v); };
                       auto ibin = [&](const char* op, const std::string& l, const std::string& r) {
                         std::string v = b.Fresh();
                         b.Line(v + " = " + op + " " + l + ", " + r + " : index");
                         return v;
                       };
                       std::string n = b.Fresh(), k = b.Fresh();
                       b.Line(n + " = linalg.index " + std::to_string(rows) + " : index");
                       b.Line(k + " = linalg.index " + std::to_string(rows + 1) + " : index");
                       std::string blk = ibin("arith.divui", k, index(block));
                       std::string within = ibin("arith.remui", k, index(block));
                       // Field `position % per_byte` of a byte as i32: (byte >> shift) & mask.
                       auto field = [&](const std::string& byte, const std::string& position) {
                         std::string shift = ibin("arith.muli", ibin("arith.remui", position, index(per_byte)), index(bits));
                         std::string wide = b.Fresh(), sh = b.Fresh(), moved = b.Fresh(), q = b.Fresh();
                         b.Line(wide + " = arith.extui " + byte + " : i8 to i32");
                         b.Line(sh + " = arith.index_cast " + shift + " : index to i32");
                         b.Line(moved + " = arith.shrui " + wide + ", " + sh + " : i32");
                         b.Line(q + " = arith.andi " + moved + ", " + b.ScalarConst("i32", (1 << bits) - 1) + " : i32");
                         return q;
                       };
                       std::string q = field(b.Extract(packed, {n, blk, ibin("arith.divui", within, index(per_byte))}), within);
                       std::string slot = ibin("arith.addi", ibin("arith.muli", n, index(blocks)), blk);
                       std::string scale = b.Convert(b.Extract(flat_scales, {slot}), flat_scales.et, "f32");
                       std::string zero;
                       if (!zeros) {
                         zero = b.ScalarConst("f32", static_cast<double>(1 << (bits - 1)));
                       } else if (packed_zeros) {
                         std::string zbyte = b.Extract(flat_zeros, {ibin("arith.addi", ibin("arith.muli", n, index(zero_row)),
                                                                         ibin("arith.divui", blk, index(per_byte)))});
                         zero = b.Convert(field(zbyte, blk), "i32", "f32");
                       } else {
                         zero = b.Convert(b.Extract(flat_zeros, {slot}), flat_zeros.et, "f32");
                       }
                       auto f = [&](const char* op, const std::string& l, const std::string& r) { return b.Bin(op, "", l, r, "f32"); };
                       std::string w = f("arith.mulf", f("arith.subf", b.Convert(q, "i32", "f32"), zero), scale);
                       return f("arith.addf", args[1], f("arith.mulf", b.Convert(args[0], et, "f32"), w));
                     });
  if (et != "f32") {
    HEXIR_ASSIGN_OR_RETURN(y, c.Elementwise({&y}, et, [&](const Args& v) { return b.Convert(v[0], "f32", et); }));
  }
  HEXIR_ASSIGN_OR_RETURN(y, PlusOptional(c, y, 5));
  c.SetOut(0, y);
  return Status::Ok();
}

}  // namespace hexir::importers::onnx
