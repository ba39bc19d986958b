#include "compiler/importers/llama/EmitModule.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>
#include <vector>

#include "compiler/importers/llama/BlockDecode.h"
#include "compiler/importers/llama/MlirTextEmitter.h"
#include "compiler/importers/llama/Sampler.h"
#include "compiler/importers/llama/TensorParallel.h"
#include "dialects/hexir/IR/HexirAttributes.h"

// The program is printed as text rather than built with MLIR builders so that the importer
// stays a small MLIR-free library; hexir-compile parses and verifies it.
//
// Float order mirrors llama2.c (run.c) so greedy ids match a straightforward reference:
// rmsnorm w * (x * 1/sqrt(mean(x^2) + eps)), scores dot / sqrt(head_size), softmax
// exp(s - max) / sum, silu x * (1 / (1 + exp(-x))).

namespace hexir::compiler::llama {
namespace {

// An f32 MLIR float literal (always with a '.') that parses back to exactly `v`; the
// llama2.c defaults keep their historical spelling.
std::string F32Literal(float v, const char* default_text, float default_value) {
  if (v == default_value) return default_text;
  char buf[64];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*e", precision, double(v));
    if (std::strtof(buf, nullptr) == v) break;
  }
  return buf;  // "%.Ne" with N >= 1 always has a '.'
}

std::string T(const std::vector<int64_t>& dims, const std::string& elem = "f32") {
  std::string s = "tensor<";
  for (int64_t d : dims) s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return s + elem + ">";
}

// The rows a layer body runs on: decode one token (at the position the caller sets, pos_;
// values are [n] vectors), or the M prompt rows (values [M][n], M dynamic).
struct Rows {
  bool prompt;
};
constexpr Rows kOneRow{false};
constexpr Rows kPromptRows{true};

// The device loop's state (EmitDeviceLoop): one i64 tensor read by the kernels.
constexpr char kStateType[] = "tensor<4xi64>";
constexpr int kStatePos = 0, kStateCount = 1, kStateToken = 2, kStateStop = 3;

// One layer's weights, named as in LlamaWeights ("layerN.<field>").
struct LayerWeights {
  Operand rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3;
};

// The per-layer weight fields in LlamaWeights order (the argument order of @prefill_layer).
struct LayerField {
  const char* name;
  Operand LayerWeights::*member;
};
constexpr LayerField kLayerFields[] = {
    {"rms_att", &LayerWeights::rms_att}, {"wq", &LayerWeights::wq},   {"wk", &LayerWeights::wk},
    {"wv", &LayerWeights::wv},           {"wo", &LayerWeights::wo},   {"rms_ffn", &LayerWeights::rms_ffn},
    {"w1", &LayerWeights::w1},           {"w2", &LayerWeights::w2},   {"w3", &LayerWeights::w3}};

// Every weight argument of @generate by role; `classifier` is the embedding when shared.
struct ModelWeights {
  Operand token_embedding;
  std::vector<LayerWeights> layers;
  Operand rms_final, classifier;
};

class ModuleWriter {
 public:
  // With `ranks` > 1 (tensor parallelism, TensorParallel.h) the program is one rank's: its
  // heads, KV heads, hidden units and vocabulary are 1/ranks of the model's.
  ModuleWriter(const LlamaConfig& c, std::vector<WeightTensor> tensors, int64_t cache_len,
               const std::string& weight_type, const std::string& cache_type, int64_t decode_chunk,
               bool layer_calls, int64_t ranks, ResolvedPlacement placement, bool device_loop)
      : c_(c), tensors_(std::move(tensors)), placement_(std::move(placement)), S_(cache_len), D_(c.dim), Q_(c.dim / ranks),
        KV_(c.kv_dim() / ranks), F_(c.hidden_dim / ranks), V_(c.vocab_size / ranks),
        HD_(c.head_size()), KVH_(c.n_kv_heads / ranks), G_(c.n_heads / c.n_kv_heads), N_(ranks), WT_(weight_type), CT_(cache_type),
        eps_(F32Literal(c.rms_eps, "1.0e-05", 1e-5f)),
        theta_(F32Literal(c.rope_theta, "10000.0", 10000.0f)),
        inv_scale_(F32Literal(1.0f / c.rope_scale, "1.0", 1.0f)), chunk_(decode_chunk),
        // Placed layers are written out (each generic annotated with its layer's device): a
        // call of a device-annotated function neither records into its caller nor is inlined.
        layer_calls_(layer_calls && placement_.layer_devices.empty()), e_(os_) {
    // The device loop needs one device and no collectives (passes/loops/DeviceLoops.h); its
    // body reads the position from the device, so the layers are written out (@layer takes an
    // i64 position).
    device_loop_ = device_loop && ranks == 1 && placement_.layer_devices.empty() && placement_.head_device < 0;
    if (device_loop_) layer_calls_ = false;
    // A tensor-parallel layer holds collectives: a call of it cannot record into the decode
    // step's command buffer (passes/README.md "Recorded calls") and would submit its own, so
    // the layers are written out (one command buffer per step, as inlined calls were).
    if (ranks > 1) layer_calls_ = false;
  }

  std::string Run() {
    os_ << "// Llama decode program generated by hexir-import (llama2.c/GGUF checkpoint): dim " << D_
        << ", hidden " << F_ << ", layers " << c_.n_layers << ", heads " << c_.n_heads
        << ", kv heads " << c_.n_kv_heads << ", vocab " << c_.vocab_size << ", "
        << (c_.shared_classifier ? "shared" : "separate") << " classifier, KV cache " << S_
        << " positions" << (N_ > 1 ? ", tensor-parallel over " + std::to_string(N_) + " ranks" : std::string())
        << ".\n";
    const std::vector<WeightTensor>& tensors = tensors_;
    ModelWeights weights = NameWeights(tensors);
    // One @prefill_layer per distinct list of weight types: layers of a GGUF file may store
    // their matrices in different formats (llama.cpp's Q4_K_M mixes q4_k and q6_k).
    // Placed layers: one per device as well (a function runs on one device).
    std::map<std::string, std::string> by_types;
    for (size_t l = 0; l < weights.layers.size(); ++l) {
      const LayerWeights& layer = weights.layers[l];
      std::string types = "device " + std::to_string(LayerDevice(l)) + ";";
      for (const LayerField& f : kLayerFields) types += (layer.*f.member).type + ";";
      auto [it, added] = by_types.emplace(types, by_types.empty() ? "@prefill_layer"
                                                                  : "@prefill_layer_" + std::to_string(by_types.size()));
      if (added) {
        e_.SetDevice(LayerDevice(l));
        EmitPrefillLayer(layer, it->second, LayerDevice(l));
        e_.SetDevice(-1);
      }
      prefill_functions_.push_back(it->second);
      std::string decode = "@layer" + it->second.substr(std::string("@prefill_layer").size());
      if (added && layer_calls_) EmitDecodeLayer(layer, decode);
      decode_functions_.push_back(decode);
      for (const LayerField& f : kLayerFields) argument_devices_[(layer.*f.member).name] = LayerDevice(l);
    }
    EmitGenerate(tensors, weights);
    // The sampler reads the whole vocabulary's logits: a tensor-parallel program (each rank
    // holding a part of the vocabulary) has @generate (greedy, distributed argmax) only.
    // A placed program (hexir.device annotations) has @generate only as well: the streaming
    // pair's state crosses calls, which placement does not follow yet.
    if (N_ == 1 && placement_.layer_devices.empty()) EmitStreaming(tensors, weights);
    return os_.str();
  }

 private:
  static std::string L(const std::string& s) { return Emitter::Line(s); }

  // -1 when unplaced.
  int64_t LayerDevice(size_t layer) const {
    return placement_.layer_devices.empty() ? -1 : placement_.layer_devices[layer];
  }
  // ` {hexir.device = N : i64}` for an argument or ` attributes {...}` for a function; "".
  static std::string DeviceAttr(int64_t device, const char* prefix = " ") {
    return device < 0 ? "" : StrCat(prefix, "{", kDeviceAttr, " = ", device, " : i64}");
  }

  // @generate's weight arguments (%w_<i>, LlamaWeights order) by role.
  ModelWeights NameWeights(const std::vector<WeightTensor>& tensors) {
    ModelWeights m;
    m.layers.resize(c_.n_layers);
    for (size_t i = 0; i < tensors.size(); ++i) {
      const std::string& name = tensors[i].name;
      Operand arg{"%w_" + std::to_string(i), ArgumentType(tensors[i]), tensors[i].kept};
      if (name == "token_embedding") m.token_embedding = arg;
      if (name == "rms_final") m.rms_final = arg;
      if (name == "classifier") m.classifier = arg;
      size_t dot = name.find('.');
      if (name.compare(0, 5, "layer") != 0 || dot == std::string::npos) continue;
      LayerWeights& layer = m.layers[std::strtoll(name.c_str() + 5, nullptr, 10)];
      for (const LayerField& f : kLayerFields)
        if (name.compare(dot + 1, std::string::npos, f.name) == 0) layer.*f.member = arg;
    }
    if (m.classifier.name.empty()) m.classifier = m.token_embedding;  // shared
    return m;
  }

  // A weight tensor type.
  std::string W(const std::vector<int64_t>& dims) { return T(dims, WT_); }
  // The type of one layer's K or V cache.
  std::string CacheType() const { return T({S_, KV_}, CT_); }
  // `v` (f32) rounded to the cache's element type, appended to *text.
  std::string ToCache(const std::string& v, std::string* text) {
    if (CT_ == "f32") return v;
    std::string r = e_.Fresh();
    *text += L(r + " = arith.truncf " + v + " : f32 to " + CT_);
    return r;
  }
  // The type of @generate's argument for `w`: its kept form, or the module's weight type.
  std::string ArgumentType(const WeightTensor& w) {
    return w.kept ? T(w.ArgumentDims(), w.kept->ArgumentElement()) : W(w.dims);
  }
  // The element type of a dense or bf16 weight operand.
  std::string Elem(const Operand& w) { return w.kept ? w.kept->ArgumentElement() : WT_; }
  // `v` (a weight element) as f32: an arith.extf line appended to *text when weights are f16.
  std::string Ext(const std::string& v, std::string* text, const std::string& elem = "") {
    const std::string& from = elem.empty() ? WT_ : elem;
    if (from == "f32") return v;
    std::string r = e_.Fresh();
    *text += L(r + " = arith.extf " + v + " : " + from + " to f32");
    return r;
  }
  // Element [row, col] (index values) of the embedding `w` as f32, appended to *text: a block
  // format is decoded from its stored bytes (block col / block size, element col % size).
  std::string WeightElement(const Operand& w, const std::string& row, const std::string& col, std::string* text) {
    if (w.kept && !w.kept->is_bf16()) {
      std::string size = e_.Fresh(), block = e_.Fresh(), in_block = e_.Fresh();
      *text += L(size + " = arith.constant " + std::to_string(w.kept->block_elements) + " : index") +
               L(block + " = arith.divui " + col + ", " + size + " : index") +
               L(in_block + " = arith.remui " + col + ", " + size + " : index");
      return DecodeBlockElement(*w.kept, w.name, w.type, row, block, in_block, [&] { return e_.Fresh(); },
                                "      ", text);
    }
    std::string v = e_.Fresh();
    *text += L(v + " = tensor.extract " + w.name + "[" + row + ", " + col + "] : " + w.type);
    return Ext(v, text, Elem(w));
  }

  // ---- one layer body for both row counts ----
  // Rows: decode runs one row (the token at pos_) on [n] vectors; prefill runs the M prompt
  // rows (M = %m, dynamic; row m at position m) on [M][n] values. The helpers below add the
  // row dim (a leading `?` in types, a leading parallel loop `m` in generics) for prompts.

  // The type of a [rows x dims] f32 value.
  static std::string RT(const Rows& r, std::vector<int64_t> dims) {
    if (r.prompt) dims.insert(dims.begin(), -1);
    return T(dims);
  }
  // The dynamic sizes of a [rows x static dims] tensor.empty.
  static std::string RDyn(const Rows& r) { return r.prompt ? "%m" : ""; }
  // affine_map `(dims) -> (results)`; for prompts the row loop m leads the dims and, when
  // `row`, the results.
  static std::string RMap(const Rows& r, const std::string& dims, const std::string& results,
                          bool row = true) {
    if (!r.prompt) return "(" + dims + ") -> (" + results + ")";
    std::string res = !row ? results : results.empty() ? "m" : "m, " + results;
    return "(m, " + dims + ") -> (" + res + ")";
  }
  static std::vector<std::string> RIters(const Rows& r, std::vector<std::string> iters) {
    if (r.prompt) iters.insert(iters.begin(), "parallel");
    return iters;
  }

  // w * x / sqrt(mean(x^2) + eps) per row.
  std::string RmsNorm(const Rows& rows, const std::string& x, const std::string& w) {
    std::string t = RT(rows, {D_}), st = RT(rows, {});
    std::string zero = e_.Filled(st, "0.0", "f32", RDyn(rows));
    std::string ss = e_.Generic({RMap(rows, "d", "d"), RMap(rows, "d", "")}, RIters(rows, {"reduction"}),
                                {{x, t}}, {zero, st}, {"f32", "f32"}, [&](auto a) {
                                  std::string m = e_.Fresh(), s = e_.Fresh();
                                  return L(m + " = arith.mulf " + a[0] + ", " + a[0] + " : f32") +
                                         L(s + " = arith.addf " + a[1] + ", " + m + " : f32") +
                                         L("linalg.yield " + s + " : f32");
                                });
    std::string e = e_.Filled(t, "", "f32", RDyn(rows));
    return e_.Generic({RMap(rows, "d", "d"), RMap(rows, "d", ""), RMap(rows, "d", "d", false), RMap(rows, "d", "d")},
                      RIters(rows, {"parallel"}), {{x, t}, {ss, st}, {w, W({D_})}}, {e, t},
                      {"f32", "f32", WT_, "f32"}, [&](const std::vector<std::string>& a) { return RmsScaleBody(a); });
  }

  // Body of the RMSNorm scaling generic: (x, sum of squares, weight) -> w * x / sqrt(ss/D + eps).
  std::string RmsScaleBody(const std::vector<std::string>& a) {
    std::string n = e_.Fresh(), ms = e_.Fresh(), eps = e_.Fresh(), r = e_.Fresh(), sq = e_.Fresh(),
                one = e_.Fresh(), inv = e_.Fresh(), xs = e_.Fresh(), y = e_.Fresh();
    std::string ext;
    std::string wf = Ext(a[2], &ext);
    return ext + L(n + " = arith.constant " + std::to_string(D_) + ".0 : f32") +
           L(ms + " = arith.divf " + a[1] + ", " + n + " : f32") +
           L(eps + " = arith.constant " + eps_ + " : f32") +
           L(r + " = arith.addf " + ms + ", " + eps + " : f32") + L(sq + " = math.sqrt " + r + " : f32") +
           L(one + " = arith.constant 1.0 : f32") +
           L(inv + " = arith.divf " + one + ", " + sq + " : f32") +
           L(xs + " = arith.mulf " + inv + ", " + a[0] + " : f32") +
           L(y + " = arith.mulf " + wf + ", " + xs + " : f32") + L("linalg.yield " + y + " : f32");
  }

  // y[.., n] = sum_k x[.., k] * W[n, k] (W is [out][in]). One f32 row is a linalg.matvec.
  std::string MatMul(const Rows& rows, const Operand& w, const std::string& x, int64_t n, int64_t k) {
    std::string ot = RT(rows, {n});
    std::string zero = e_.Filled(ot, "0.0", "f32", RDyn(rows));
    if (w.kept && !w.kept->is_bf16()) return BlockMatMul(rows, w, x, n, k, zero);
    if (!rows.prompt && Elem(w) == "f32") {
      std::string r = e_.Fresh("mv");
      os_ << "    " << r << " = linalg.matvec ins(" << w.name << ", " << x << " : " << w.type << ", "
          << RT(rows, {k}) << ") outs(" << zero << " : " << ot << ") -> " << ot << "\n";
      return r;
    }
    return e_.Generic({RMap(rows, "n, k", "k"), RMap(rows, "n, k", "n, k", false), RMap(rows, "n, k", "n")},
                      RIters(rows, {"parallel", "reduction"}), {{x, RT(rows, {k})}, {w.name, w.type}},
                      {zero, ot}, {"f32", Elem(w), "f32"}, [&](auto a) {
                        std::string text;
                        std::string wf = Ext(a[1], &text, Elem(w));
                        std::string p = e_.Fresh(), s = e_.Fresh();
                        return text + L(p + " = arith.mulf " + a[0] + ", " + wf + " : f32") +
                               L(s + " = arith.addf " + a[2] + ", " + p + " : f32") +
                               L("linalg.yield " + s + " : f32");
                      });
  }

  // MatMul of a block-format weight W [n][row bytes] (i8): x viewed as [k / B][B] (B values
  // per block), loops (n, block, element) with both reductions in k order; each iteration
  // decodes W's element from its stored bytes (BlockDecode.h) in registers. Decode (n, b, j)
  // and prompt (m, n, b, j) generics alike carry the block-matvec mark (the CPU kernel takes
  // a prompt as M matvecs).
  std::string BlockMatMul(const Rows& rows, const Operand& w, const std::string& x, int64_t n, int64_t k,
                          const std::string& zero) {
    const int64_t bs = w.kept->block_elements, nb = k / bs;
    std::string xb = e_.Fresh("xb"), xbt = RT(rows, {nb, bs});
    os_ << "    " << xb << " = tensor.expand_shape " << x << (rows.prompt ? " [[0], [1, 2]]" : " [[0, 1]]")
        << " output_shape [" << (rows.prompt ? "%m, " : "") << nb << ", " << bs << "] : " << RT(rows, {k})
        << " into " << xbt << "\n";
    const int row_dim = rows.prompt ? 1 : 0;
    e_.block_matvec = w.kept->name;
    std::string r = e_.Generic({RMap(rows, "n, b, j", "b, j"), RMap(rows, "n, b, j", "n")},
                      RIters(rows, {"parallel", "reduction", "reduction"}), {{xb, xbt}}, {zero, RT(rows, {n})},
                      {"f32", "f32"}, [&](auto a) {
                        std::string text;
                        std::string idx[3];
                        for (int d = 0; d < 3; ++d) {
                          idx[d] = e_.Fresh();
                          text += L(idx[d] + " = linalg.index " + std::to_string(row_dim + d) + " : index");
                        }
                        std::string wf = DecodeBlockElement(*w.kept, w.name, w.type, idx[0], idx[1], idx[2],
                                                            [&] { return e_.Fresh(); }, "      ", &text);
                        std::string p = e_.Fresh(), s = e_.Fresh();
                        return text + L(p + " = arith.mulf " + a[0] + ", " + wf + " : f32") +
                               L(s + " = arith.addf " + a[1] + ", " + p + " : f32") +
                               L("linalg.yield " + s + " : f32");
                      });
    e_.block_matvec.clear();
    return r;
  }

  // An elementwise generic of two [rows x n] values; `body` gets (a, b) and yields.
  std::string Elementwise2(const Rows& rows, const std::string& a, const std::string& b, int64_t n,
                           const std::function<std::string(const std::vector<std::string>&)>& body) {
    std::string t = RT(rows, {n});
    std::string e = e_.Filled(t, "", "f32", RDyn(rows));
    return e_.Generic({RMap(rows, "i", "i"), RMap(rows, "i", "i"), RMap(rows, "i", "i")},
                      RIters(rows, {"parallel"}), {{a, t}, {b, t}}, {e, t}, {"f32", "f32", "f32"}, body);
  }

  std::string Add(const Rows& rows, const std::string& a, const std::string& b, int64_t n) {
    return Elementwise2(rows, a, b, n, [&](const std::vector<std::string>& x) {
      std::string r = e_.Fresh();
      return L(r + " = arith.addf " + x[0] + ", " + x[1] + " : f32") + L("linalg.yield " + r + " : f32");
    });
  }

  // Rotary embedding on interleaved pairs (2i, 2i+1): decode at position pos_, prompt row m
  // at position m.
  std::string Rope(const Rows& rows, const std::string& v, int64_t n) {
    std::string t = RT(rows, {n});
    std::string e = e_.Filled(t, "", "f32", RDyn(rows));
    return e_.Generic({RMap(rows, "i", "i"), RMap(rows, "i", "i")}, RIters(rows, {"parallel"}), {{v, t}},
                      {e, t}, {"f32", "f32"}, [&](auto a) {
                        if (!rows.prompt) {
                          std::string i = e_.Fresh();
                          std::string text = L(i + " = linalg.index 0 : index");
                          std::string pos = PosIn(&text);
                          return text + RopeBody(a[0], i, pos, [&](const std::string& pi) {
                                   return v + "[" + pi + "] : " + t;
                                 });
                        }
                        std::string row = e_.Fresh(), rowi = e_.Fresh(), i = e_.Fresh();
                        return L(row + " = linalg.index 0 : index") +
                               L(rowi + " = arith.index_cast " + row + " : index to i64") +
                               L(i + " = linalg.index 1 : index") +
                               RopeBody(a[0], i, rowi, [&](const std::string& pi) {
                                 return v + "[" + row + ", " + pi + "] : " + t;
                               });
                      });
  }

  // Decode rotary embedding at pos_ of `v`, a static view whose last dim runs over a row of
  // heads (q as [KVH][G][HD], a K row as [1][KV]): Rope's body on that view, so that the
  // consumer takes it in (decode attention's kernel; the K row's in-place cache write).
  std::string DecodeRope(const std::string& v, const std::vector<int64_t>& dims) {
    const std::string t = T(dims);
    std::string names;
    for (size_t i = 0; i < dims.size(); ++i) names += (i ? ", d" : "d") + std::to_string(i);
    const std::string map = "(" + names + ") -> (" + names + ")";
    return e_.Generic({map, map}, std::vector<std::string>(dims.size(), "parallel"), {{v, t}},
                      {e_.Filled(t, "", "f32"), t}, {"f32", "f32"}, [&](auto a) {
                        std::string text;
                        std::vector<std::string> at;
                        for (size_t i = 0; i < dims.size(); ++i) {
                          at.push_back(e_.Fresh());
                          text += L(at[i] + " = linalg.index " + std::to_string(i) + " : index");
                        }
                        std::string pos = PosIn(&text);
                        return text + RopeBody(a[0], at.back(), pos, [&](const std::string& pi) {
                                 std::string ix;
                                 for (size_t i = 0; i + 1 < at.size(); ++i) ix += at[i] + ", ";
                                 return v + "[" + ix + pi + "] : " + t;
                               });
                      });
  }

  // The body of a rotary generic: element `x` at pair index `i` (index) of a vector `v` at
  // position `pos` (i64), whose partner element is `tensor.extract` of partner(pi) (the
  // "v[...] : type" text for partner index pi); ends with linalg.yield.
  std::string RopeBody(const std::string& x, const std::string& i, const std::string& pos,
                       const std::function<std::string(const std::string&)>& partner) {
    auto f = [&]() { return e_.Fresh(); };
    std::string c0 = f(), c1 = f(), c2 = f(), chd = f(), hdim = f(), par = f(), hev = f(),
                hevi = f(), hevf = f(), hdf = f(), ratio = f(), base = f(), pw = f(), one = f(),
                freq = f(), posf = f(), val = f(), cs = f(), sn = f(), pi = f(), p = f(),
                even = f(), t1 = f(), t2 = f(), ev = f(), od = f(), r = f();
    return L(c0 + " = arith.constant 0 : index") + L(c1 + " = arith.constant 1 : index") +
           L(c2 + " = arith.constant 2 : index") +
           L(chd + " = arith.constant " + std::to_string(HD_) + " : index") +
           L(hdim + " = arith.remui " + i + ", " + chd + " : index") +
           L(par + " = arith.remui " + i + ", " + c2 + " : index") +
           L(hev + " = arith.subi " + hdim + ", " + par + " : index") +
           L(hevi + " = arith.index_cast " + hev + " : index to i64") +
           L(hevf + " = arith.sitofp " + hevi + " : i64 to f32") +
           L(hdf + " = arith.constant " + std::to_string(HD_) + ".0 : f32") +
           L(ratio + " = arith.divf " + hevf + ", " + hdf + " : f32") +
           L(base + " = arith.constant " + theta_ + " : f32") +
           L(pw + " = math.powf " + base + ", " + ratio + " : f32") +
           L(one + " = arith.constant " + inv_scale_ + " : f32") +  // 1 / linear rope scaling
           L(freq + " = arith.divf " + one + ", " + pw + " : f32") +
           L(posf + " = arith.sitofp " + pos + " : i64 to f32") +
           L(val + " = arith.mulf " + posf + ", " + freq + " : f32") +
           L(cs + " = math.cos " + val + " : f32") + L(sn + " = math.sin " + val + " : f32") +
           L(pi + " = arith.xori " + i + ", " + c1 + " : index") +
           L(p + " = tensor.extract " + partner(pi)) +
           L(even + " = arith.cmpi eq, " + par + ", " + c0 + " : index") +
           L(t1 + " = arith.mulf " + x + ", " + cs + " : f32") +
           L(t2 + " = arith.mulf " + p + ", " + sn + " : f32") +
           L(ev + " = arith.subf " + t1 + ", " + t2 + " : f32") +
           L(od + " = arith.addf " + t2 + ", " + t1 + " : f32") +
           L(r + " = arith.select " + even + ", " + ev + ", " + od + " : f32") +
           L("linalg.yield " + r + " : f32");
  }

  // The K or V cache with this layer's rows written: decode row pos_, prompt rows 0..M-1.
  std::string WriteCache(const Rows& rows, const std::string& cache, const std::string& new_rows) {
    return rows.prompt ? PromptCacheWrite(cache, new_rows) : DecodeCacheWrite(cache, new_rows);
  }

  // The K cache with the decode row `k` (before the rotary embedding) written at pos_. The
  // chunked loop ropes (and rounds) the row as a [1][KV] view that only the cache write
  // reads, so its in-place update computes it (one kernel: passes/dispatch/
  // FormDispatchRegions.cpp); the device loop's select over the cache ropes it first.
  std::string DecodeKeyWrite(const std::string& cache, const std::string& k) {
    if (!state_.empty()) return DeviceCacheWrite(cache, Rope(kOneRow, k, KV_));
    std::string k2 = e_.Fresh("krow");
    os_ << "    " << k2 << " = tensor.expand_shape " << k << " [[0, 1]] output_shape [1, " << KV_
        << "] : " << T({KV_}) << " into " << T({1, KV_}) << "\n";
    return InsertRow(cache, DecodeRope(k2, {1, KV_}));
  }

  // cache' = cache with row `pos` replaced by `row`: a tensor.insert_slice, which the compiler
  // lowers as an in-place update of the cache's buffer (one row written per step, not a copy
  // of the cache; passes/dispatch/InPlaceUpdates.h) since the decode loop owns the caches.
  // A narrower cache gets the row rounded first (an elementwise kernel the row's producer absorbs).
  std::string DecodeCacheWrite(const std::string& cache, const std::string& row) {
    if (!state_.empty()) return DeviceCacheWrite(cache, row);  // f32 caches only (ImportModel)
    std::string narrow = Narrow(row, {KV_}), r2 = e_.Fresh("row");
    os_ << "    " << r2 << " = tensor.expand_shape " << narrow << " [[0, 1]] output_shape [1, "
        << KV_ << "] : " << T({KV_}, CT_) << " into " << T({1, KV_}, CT_) << "\n";
    return InsertCacheRow(cache, r2);
  }

  // `v` (f32, static `dims`) rounded to the cache's element type (an elementwise generic its
  // producer or consumer absorbs); `v` itself for an f32 cache.
  std::string Narrow(const std::string& v, const std::vector<int64_t>& dims) {
    if (CT_ == "f32") return v;
    std::string names;
    for (size_t i = 0; i < dims.size(); ++i) names += (i ? ", d" : "d") + std::to_string(i);
    const std::string map = "(" + names + ") -> (" + names + ")";
    return e_.Generic({map, map}, std::vector<std::string>(dims.size(), "parallel"), {{v, T(dims)}},
                      {e_.Filled(T(dims, CT_), "", CT_), T(dims, CT_)}, {"f32", CT_}, [&](auto a) {
                        std::string text;
                        std::string r = ToCache(a[0], &text);
                        return text + L("linalg.yield " + r + " : " + CT_);
                      });
  }

  // cache with row pos_ replaced by `row2` (f32 [1][KV]), rounded to the cache's type.
  std::string InsertRow(const std::string& cache, const std::string& row2) {
    return InsertCacheRow(cache, Narrow(row2, {1, KV_}));
  }

  // cache with row pos_ replaced by `row2` ([1][KV] of the cache's type): tensor.insert_slice.
  std::string InsertCacheRow(const std::string& cache, const std::string& row2) {
    std::string p = e_.Fresh("p"), r = e_.Fresh("cache");
    os_ << "    " << p << " = arith.index_cast " << pos_ << " : i64 to index\n"
        << "    " << r << " = tensor.insert_slice " << row2 << " into " << cache << "[" << p
        << ", 0] [1, " << KV_ << "] [1, 1] : " << T({1, KV_}, CT_) << " into " << CacheType() << "\n";
    return r;
  }

  // The device loop's form (the position is on the device, no host offset):
  // cache'[s, j] = s == pos ? row[j] : cache[s, j], a generic whose init is the cache itself
  // (it reads its own element only), which the compiler updates in place (one kernel, no copy:
  // passes/dispatch/InPlaceUpdates.h). O(S x kv_dim) per step instead of O(kv_dim).
  std::string DeviceCacheWrite(const std::string& cache, const std::string& row) {
    std::string t = T({S_, KV_});
    return e_.Generic({"(s, j) -> (j)", "(s, j) -> (s, j)"}, {"parallel", "parallel"}, {{row, T({KV_})}},
                      {cache, t}, {"f32", "f32"}, [&](auto a) {
                        std::string s = e_.Fresh(), si = e_.Fresh(), hit = e_.Fresh(), r = e_.Fresh();
                        std::string text = L(s + " = linalg.index 0 : index") +
                                           L(si + " = arith.index_cast " + s + " : index to i64");
                        std::string pos = PosIn(&text);
                        return text + L(hit + " = arith.cmpi eq, " + si + ", " + pos + " : i64") +
                               L(r + " = arith.select " + hit + ", " + a[0] + ", " + a[1] + " : f32") +
                               L("linalg.yield " + r + " : f32");
                      });
  }

  // The i64 position of the decode row inside a kernel body, appended to *text: pos_ (a host
  // value), or in the device loop the state tensor's element kStatePos read in the kernel.
  std::string PosIn(std::string* text) {
    if (state_.empty()) return pos_;
    return StateIn(kStatePos, state_, text);
  }
  // Element `field` of the decode state tensor `state` (tensor<4xi64>), read in a kernel body.
  std::string StateIn(int field, const std::string& state, std::string* text) {
    std::string c = e_.Fresh(), v = e_.Fresh();
    *text += L(c + " = arith.constant " + std::to_string(field) + " : index") +
             L(v + " = tensor.extract " + state + "[" + c + "] : " + kStateType);
    return v;
  }

  // cache'[s, j] = s < M ? rows[s, j] : cache[s, j]
  std::string PromptCacheWrite(const std::string& cache, const std::string& rows) {
    std::string t = CacheType();
    std::string e = e_.Filled(t, "", CT_);
    return e_.Generic({"(s, j) -> (s, j)", "(s, j) -> (s, j)"}, {"parallel", "parallel"},
                      {{cache, t}}, {e, t}, {CT_, CT_}, [&](auto a) {
                        auto f = [&]() { return e_.Fresh(); };
                        std::string s = f(), j = f(), si = f(), in = f(), one = f(), last = f(),
                                    ci = f(), c = f(), v = f(), r = f();
                        std::string body = L(s + " = linalg.index 0 : index") + L(j + " = linalg.index 1 : index") +
                               L(si + " = arith.index_cast " + s + " : index to i64") +
                               L(in + " = arith.cmpi slt, " + si + ", %m64 : i64") +
                               L(one + " = arith.constant 1 : i64") +
                               L(last + " = arith.subi %m64, " + one + " : i64") +
                               L(ci + " = arith.minsi " + si + ", " + last + " : i64") +
                               L(c + " = arith.index_cast " + ci + " : i64 to index") +
                               L(v + " = tensor.extract " + rows + "[" + c + ", " + j + "] : " + T({-1, KV_}));
                        std::string text;
                        std::string nv = ToCache(v, &text);
                        return body + text + L(r + " = arith.select " + in + ", " + nv + ", " + a[0] + " : " + CT_) +
                               L("linalg.yield " + r + " : " + CT_);
                      });
  }

  std::string Attention(const Rows& rows, const std::string& q, const std::string& kc, const std::string& vc) {
    return rows.prompt ? PromptAttention(q, kc, vc) : DecodeAttention(q, kc, vc);
  }

  // x / sqrt(head_size), appended to *text.
  std::string Scaled(const std::string& x, std::string* text) {
    std::string c = e_.Fresh(), r = e_.Fresh();
    *text += L(c + " = arith.constant " + FloatLit(std::sqrt(float(HD_))) + " : f32") +
             L(r + " = arith.divf " + x + ", " + c + " : f32");
    return r;
  }

  // The causal test s <= m of a prompt's score loops (m, a, g, s), appended to *text.
  std::string Causal(std::string* text) {
    std::string m = e_.Fresh(), s = e_.Fresh(), v = e_.Fresh();
    *text += L(m + " = linalg.index 0 : index") + L(s + " = linalg.index 3 : index") +
             L(v + " = arith.cmpi ule, " + s + ", " + m + " : index");
    return v;
  }

  // The device loop's decode mask s <= pos of the score loops (a, g, s), appended to *text:
  // the cache rows filled so far.
  std::string FilledRows(std::string* text) {
    std::string s = e_.Fresh(), si = e_.Fresh(), v = e_.Fresh();
    *text += L(s + " = linalg.index 2 : index") + L(si + " = arith.index_cast " + s + " : index to i64");
    std::string pos = PosIn(text);
    *text += L(v + " = arith.cmpi sle, " + si + ", " + pos + " : i64");
    return v;
  }

  // softmax(scores / sqrt(head_size)) over the last dim s of `sc` ([rows x] kv_heads x group x
  // s, type st, `st_dyn` its dynamic sizes): max, exp(x - max), sum, divide (llama2.c's
  // order). Prompt rows are causal: positions s > m are out of the max and count 0 in the sum.
  std::string Softmax(const Rows& rows, const std::string& sc, const std::string& st,
                      const std::string& mt, const std::string& st_dyn) {
    const std::string id = RMap(rows, "a, g, s", "a, g, s"), row = RMap(rows, "a, g, s", "a, g");
    const std::vector<std::string> red = RIters(rows, {"parallel", "parallel", "reduction"}),
                                   par = RIters(rows, {"parallel", "parallel", "parallel"});
    // Masked: prompt rows (causal) or the device loop's decode row (s <= pos, S positions).
    const bool masked = rows.prompt || !state_.empty();
    auto mask = [&](std::string* text) { return rows.prompt ? Causal(text) : FilledRows(text); };
    std::string m0 = e_.Filled(mt, "-3.0e+38", "f32", RDyn(rows));
    std::string mx = e_.Generic({id, row}, red, {{sc, st}}, {m0, mt}, {"f32", "f32"}, [&](auto a) {
      std::string text;
      std::string v = masked ? mask(&text) : "";
      std::string x = Scaled(a[0], &text);
      std::string m = e_.Fresh();
      text += L(m + " = arith.maximumf " + a[1] + ", " + x + " : f32");
      if (!masked) return text + L("linalg.yield " + m + " : f32");
      std::string r = e_.Fresh();
      return text + L(r + " = arith.select " + v + ", " + m + ", " + a[1] + " : f32") +
             L("linalg.yield " + r + " : f32");
    });
    std::string ee = e_.Filled(st, "", "f32", st_dyn);
    std::string ex = e_.Generic({id, row, id}, par, {{sc, st}, {mx, mt}}, {ee, st},
                                {"f32", "f32", "f32"}, [&](auto a) {
                                  std::string text;
                                  std::string v = masked ? mask(&text) : "";
                                  std::string x = Scaled(a[0], &text);
                                  std::string d = e_.Fresh(), e = e_.Fresh();
                                  text += L(d + " = arith.subf " + x + ", " + a[1] + " : f32") +
                                          L(e + " = math.exp " + d + " : f32");
                                  if (!masked) return text + L("linalg.yield " + e + " : f32");
                                  std::string z = e_.Fresh(), r = e_.Fresh();
                                  return text + L(z + " = arith.constant 0.0 : f32") +
                                         L(r + " = arith.select " + v + ", " + e + ", " + z + " : f32") +
                                         L("linalg.yield " + r + " : f32");
                                });
    std::string s0 = e_.Filled(mt, "0.0", "f32", RDyn(rows));
    std::string sm = e_.Generic({id, row}, red, {{ex, st}}, {s0, mt}, {"f32", "f32"}, [&](auto a) {
      std::string r = e_.Fresh();
      return L(r + " = arith.addf " + a[1] + ", " + a[0] + " : f32") + L("linalg.yield " + r + " : f32");
    });
    std::string pe = e_.Filled(st, "", "f32", st_dyn);
    return e_.Generic({id, row, id}, par, {{ex, st}, {sm, mt}}, {pe, st}, {"f32", "f32", "f32"},
                      [&](auto a) {
                        std::string r = e_.Fresh();
                        return L(r + " = arith.divf " + a[0] + ", " + a[1] + " : f32") +
                               L("linalg.yield " + r + " : f32");
                      });
  }

  // Decode attention over the n = pos + 1 filled positions only (a dynamic extent): the
  // cached K/V rows are gathered in the kernels (tensor.extract), so the work grows with the
  // position, not with the cache length. `q` is before the rotary embedding, which is the
  // group's first generic (on CUDA computed as the kernel loads q).
  std::string DecodeAttention(const std::string& q, const std::string& kc, const std::string& vc) {
    std::string q3t = T({KVH_, G_, HD_}), st = T({KVH_, G_, -1}), mt = T({KVH_, G_}),
                ct = CacheType();
    std::string qr = e_.Fresh("q");
    os_ << "    " << qr << " = tensor.expand_shape " << q << " [[0, 1, 2]] output_shape ["
        << KVH_ << ", " << G_ << ", " << HD_ << "] : " << T({Q_}) << " into " << q3t << "\n";
    // The device loop covers all S positions, masked to s <= pos (the position is on the
    // device; scores past it are out of the softmax and weigh 0, so the sums are the same).
    std::string n = e_.Fresh("n");
    if (state_.empty()) {
      std::string one = e_.Fresh("one"), n64 = e_.Fresh("n");
      os_ << "    " << one << " = arith.constant 1 : i64\n"
          << "    " << n64 << " = arith.addi " << pos_ << ", " << one << " : i64\n"
          << "    " << n << " = arith.index_cast " << n64 << " : i64 to index\n";
    } else {
      st = T({KVH_, G_, S_});
    }
    const std::string st_dyn = state_.empty() ? n : "";
    // cache[s, a * head_size + d] inside a body whose loop dims are named a and d.
    auto gather = [&](const std::string& cache, int a_dim, int d_dim, int s_dim, std::string* text) {
      auto f = [&]() { return e_.Fresh(); };
      std::string a = f(), d = f(), s = f(), hd = f(), ah = f(), col = f(), v = f();
      *text += L(a + " = linalg.index " + std::to_string(a_dim) + " : index") +
               L(d + " = linalg.index " + std::to_string(d_dim) + " : index") +
               L(s + " = linalg.index " + std::to_string(s_dim) + " : index") +
               L(hd + " = arith.constant " + std::to_string(HD_) + " : index") +
               L(ah + " = arith.muli " + a + ", " + hd + " : index") +
               L(col + " = arith.addi " + ah + ", " + d + " : index") +
               L(v + " = tensor.extract " + cache + "[" + s + ", " + col + "] : " + ct);
      return Ext(v, text, CT_);
    };
    // Body: acc + in * cache[s, a * head_size + d] (loop a is dim 0).
    auto gathered_dot = [&](const std::string& cache, int d_dim, int s_dim) {
      return [&, cache, d_dim, s_dim](const std::vector<std::string>& a) {
        std::string text;
        std::string c = gather(cache, 0, d_dim, s_dim, &text);
        std::string m = e_.Fresh(), r = e_.Fresh();
        return text + L(m + " = arith.mulf " + a[0] + ", " + c + " : f32") +
               L(r + " = arith.addf " + a[1] + ", " + m + " : f32") + L("linalg.yield " + r + " : f32");
      };
    };
    e_.group = "decode_attention." + n.substr(1);  // one kernel per layer
    std::string q3 = DecodeRope(qr, {KVH_, G_, HD_});
    std::string z = e_.Filled(st, "0.0", "f32", st_dyn);
    std::string sc = e_.Generic({"(a, g, s, d) -> (a, g, d)", "(a, g, s, d) -> (a, g, s)"},
                                {"parallel", "parallel", "parallel", "reduction"}, {{q3, q3t}}, {z, st},
                                {"f32", "f32"}, gathered_dot(kc, 3, 2));
    std::string p = Softmax(kOneRow, sc, st, mt, st_dyn);
    std::string oz = e_.Filled(q3t, "0.0", "f32");
    std::string o3 = e_.Generic({"(a, g, d, s) -> (a, g, s)", "(a, g, d, s) -> (a, g, d)"},
                                {"parallel", "parallel", "parallel", "reduction"}, {{p, st}}, {oz, q3t},
                                {"f32", "f32"}, gathered_dot(vc, 2, 3));
    e_.group.clear();
    std::string att = e_.Fresh("att");
    os_ << "    " << att << " = tensor.collapse_shape " << o3 << " [[0, 1, 2]] : " << q3t << " into "
        << T({Q_}) << "\n";
    return att;
  }

  // Prompt attention: every row m over all S cache positions, causal (s <= m).
  std::string PromptAttention(const std::string& q, const std::string& kc, const std::string& vc) {
    std::string q4t = T({-1, KVH_, G_, HD_}), c3t = T({S_, KVH_, HD_}, CT_), st = T({-1, KVH_, G_, S_}),
                mt = T({-1, KVH_, G_});
    std::string q4 = e_.Fresh("q"), k3 = e_.Fresh("k"), v3 = e_.Fresh("vv");
    os_ << "    " << q4 << " = tensor.expand_shape " << q << " [[0], [1, 2, 3]] output_shape [%m, "
        << KVH_ << ", " << G_ << ", " << HD_ << "] : " << T({-1, Q_}) << " into " << q4t << "\n";
    for (auto [dst, src] : {std::pair{k3, kc}, std::pair{v3, vc}})
      os_ << "    " << dst << " = tensor.expand_shape " << src << " [[0], [1, 2]] output_shape ["
          << S_ << ", " << KVH_ << ", " << HD_ << "] : " << CacheType() << " into " << c3t << "\n";
    std::string z = e_.Filled(st, "0.0", "f32", "%m");
    std::string sc = e_.Generic(
        {"(m, a, g, s, d) -> (m, a, g, d)", "(m, a, g, s, d) -> (s, a, d)", "(m, a, g, s, d) -> (m, a, g, s)"},
        {"parallel", "parallel", "parallel", "parallel", "reduction"}, {{q4, q4t}, {k3, c3t}}, {z, st},
        {"f32", CT_, "f32"}, [&](auto a) {
          std::string text;
          std::string kv = Ext(a[1], &text, CT_);
          std::string p = e_.Fresh(), r = e_.Fresh();
          return text + L(p + " = arith.mulf " + a[0] + ", " + kv + " : f32") +
                 L(r + " = arith.addf " + a[2] + ", " + p + " : f32") + L("linalg.yield " + r + " : f32");
        });
    std::string p = Softmax(kPromptRows, sc, st, mt, "%m");
    std::string oz = e_.Filled(q4t, "0.0", "f32", "%m");
    std::string o4 = e_.Generic(
        {"(m, a, g, d, s) -> (m, a, g, s)", "(m, a, g, d, s) -> (s, a, d)", "(m, a, g, d, s) -> (m, a, g, d)"},
        {"parallel", "parallel", "parallel", "parallel", "reduction"}, {{p, st}, {v3, c3t}}, {oz, q4t},
        {"f32", CT_, "f32"}, [&](auto a) {
          std::string text;
          std::string kv = Ext(a[1], &text, CT_);
          std::string q = e_.Fresh(), r = e_.Fresh();
          return text + L(q + " = arith.mulf " + a[0] + ", " + kv + " : f32") +
                 L(r + " = arith.addf " + a[2] + ", " + q + " : f32") + L("linalg.yield " + r + " : f32");
        });
    std::string att = e_.Fresh("att");
    os_ << "    " << att << " = tensor.collapse_shape " << o4 << " [[0], [1, 2, 3]] : " << q4t
        << " into " << T({-1, Q_}) << "\n";
    return att;
  }

  static std::string FloatLit(float f) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.9e", double(f));
    return buf;
  }

  std::string SwiGluBody(const std::vector<std::string>& a) {
    auto f = [&]() { return e_.Fresh(); };
    std::string n = f(), ex = f(), one = f(), d = f(), sg = f(), s = f(), r = f();
    return L(n + " = arith.negf " + a[0] + " : f32") + L(ex + " = math.exp " + n + " : f32") +
           L(one + " = arith.constant 1.0 : f32") + L(d + " = arith.addf " + one + ", " + ex + " : f32") +
           L(sg + " = arith.divf " + one + ", " + d + " : f32") +
           L(s + " = arith.mulf " + a[0] + ", " + sg + " : f32") +
           L(r + " = arith.mulf " + s + ", " + a[1] + " : f32") + L("linalg.yield " + r + " : f32");
  }

  // Tensor parallelism: the row-parallel wo/w2 products are partial sums over this rank's heads
  // or hidden units; every rank gets their sum (an all_reduce). One device: `v` itself.
  std::string SumOverRanks(const Rows& rows, const std::string& v, int64_t n) {
    if (N_ == 1) return v;
    std::string r = e_.Fresh("sum");
    os_ << "    " << r << " = hexir.all_reduce \"sum\" " << v << " : " << RT(rows, {n}) << "\n";
    return r;
  }

  // One transformer layer on `rows` of x with this layer's caches and weights (llama2.c's
  // order): RMSNorm, q/k/v, rotary q and k, the K/V rows into the caches, attention, wo +
  // residual, RMSNorm, SwiGLU (w2(silu(w1 x) * w3 x)) + residual. Returns {x', k', v'}.
  std::array<std::string, 3> Layer(const Rows& rows, const std::string& x, const std::string& kc0,
                                   const std::string& vc0, const LayerWeights& w) {
    std::string xn = RmsNorm(rows, x, w.rms_att.name);
    // Decode ropes q inside attention's kernel and the K row inside its cache write.
    std::string q = MatMul(rows, w.wq, xn, Q_, D_);
    if (rows.prompt) q = Rope(rows, q, Q_);
    std::string k = MatMul(rows, w.wk, xn, KV_, D_);
    std::string v = MatMul(rows, w.wv, xn, KV_, D_);
    std::string kc = rows.prompt ? WriteCache(rows, kc0, Rope(rows, k, KV_)) : DecodeKeyWrite(kc0, k);
    std::string vc = WriteCache(rows, vc0, v);
    std::string att = Attention(rows, q, kc, vc);
    std::string x2 = Add(rows, x, SumOverRanks(rows, MatMul(rows, w.wo, att, D_, Q_), D_), D_);
    std::string xn2 = RmsNorm(rows, x2, w.rms_ffn.name);
    std::string h1 = MatMul(rows, w.w1, xn2, F_, D_), h3 = MatMul(rows, w.w3, xn2, F_, D_);
    std::string g = Elementwise2(rows, h1, h3, F_, [&](const std::vector<std::string>& a) { return SwiGluBody(a); });
    return {Add(rows, x2, SumOverRanks(rows, MatMul(rows, w.w2, g, D_, F_), D_), D_), kc, vc};
  }

  // @prefill_layer: Layer over the M prompt rows, one function called once per layer.
  void EmitPrefillLayer(const LayerWeights& types, const std::string& function, int64_t device) {
    LayerWeights params;
    std::string ct = CacheType(), xt = T({-1, D_});
    os_ << "func.func private " << function << "(%x: " << xt << ", %kc: " << ct << ", %vc: " << ct;
    for (const LayerField& f : kLayerFields) {
      params.*f.member = {std::string("%") + f.name, (types.*f.member).type, (types.*f.member).kept};
      os_ << ", " << (params.*f.member).name << ": " << (params.*f.member).type;
    }
    os_ << ") -> (" << xt << ", " << ct << ", " << ct << ")" << DeviceAttr(device, " attributes ")
        << " {\n"
        << "    %c0 = arith.constant 0 : index\n"
        << "    %m = tensor.dim %x, %c0 : " << xt << "\n"
        << "    %m64 = arith.index_cast %m : index to i64\n";
    auto [x, kc, vc] = Layer(kPromptRows, "%x", "%kc", "%vc", params);
    os_ << "    return " << x << ", " << kc << ", " << vc << " : " << xt << ", " << ct << ", " << ct
        << "\n}\n\n";
  }

  // @layer: Layer on the one decode row at position %pos, called once per layer per step.
  void EmitDecodeLayer(const LayerWeights& types, const std::string& function) {
    LayerWeights params;
    std::string ct = CacheType(), xt = T({D_});
    os_ << "func.func private " << function << "(%x: " << xt << ", %kc: " << ct << ", %vc: " << ct
        << ", %pos: i64";
    for (const LayerField& f : kLayerFields) {
      params.*f.member = {std::string("%") + f.name, (types.*f.member).type, (types.*f.member).kept};
      os_ << ", " << (params.*f.member).name << ": " << (params.*f.member).type;
    }
    os_ << ") -> (" << xt << ", " << ct << ", " << ct << ") {\n";
    pos_ = "%pos";
    auto [x, kc, vc] = Layer(kOneRow, "%x", "%kc", "%vc", params);
    os_ << "    return " << x << ", " << kc << ", " << vc << " : " << xt << ", " << ct << ", " << ct
        << "\n}\n\n";
  }

  // Final RMSNorm, classifier and the greedy argmax of one [D] vector -> tensor<i64>.
  std::string Argmax(const std::string& x, const ModelWeights& w) {
    std::string xf = RmsNorm(kOneRow, x, w.rms_final.name);
    std::string logits = MatMul(kOneRow, w.classifier, xf, V_, D_);
    return ArgmaxOf(logits);
  }

  // The first index of the maximum of logits [V] (torch.argmax's tie rule) -> tensor<i64>.
  // Each element becomes one i64 key, (order-preserving f32 bits << 32) | (2^32 - 1 - v), so
  // that the maximum key holds the maximum value and, among equal values, the smallest v.
  // Keys are max-reduced in two stages over logits viewed as [R][C] (C the largest divisor
  // of V up to 256): R row maxima (R parallel points), then their maximum, then decoded. The
  // reduction so has parallelism on any device instead of one thread walking the vocabulary.
  // Tensor parallelism: this rank's logits are the vocabulary rows [rank * V, (rank + 1) * V)
  // (%tp_vocab_base = rank * V), keys carry those global indices, and an all_reduce "max" of
  // the ranks' keys picks the model's argmax before decoding.
  std::string ArgmaxOf(const std::string& logits) {
    int64_t C = 1;
    for (int64_t c = std::min<int64_t>(V_, 256); c >= 1; --c)
      if (V_ % c == 0) {
        C = c;
        break;
      }
    const int64_t R = V_ / C;
    const std::string kMin = "-9223372036854775808";
    std::string vt = T({V_}), rt = T({R}, "i64"), lt = T({R, C});
    std::string l2 = e_.Fresh("logits");
    os_ << "    " << l2 << " = tensor.expand_shape " << logits << " [[0, 1]] output_shape [" << R << ", "
        << C << "] : " << vt << " into " << lt << "\n";
    std::string k0 = e_.Filled(rt, kMin, "i64");
    std::string chunks = e_.Generic({"(r, c) -> (r, c)", "(r, c) -> (r)"}, {"parallel", "reduction"},
                                    {{l2, lt}}, {k0, rt}, {"f32", "i64"}, [&](auto a) {
      auto f = [&]() { return e_.Fresh(); };
      std::string r = f(), c = f(), cc = f(), base = f(), v = f(), bits = f(), zero = f(), neg = f(),
                  mask = f(), flip = f(), ord = f(), ord64 = f(), sh = f(), hi = f(), vi = f(),
                  top = f(), lo = f(), key = f(), m = f(), vg = f();
      return L(r + " = linalg.index 0 : index") + L(c + " = linalg.index 1 : index") +
             L(cc + " = arith.constant " + std::to_string(C) + " : index") +
             L(base + " = arith.muli " + r + ", " + cc + " : index") +
             L(v + " = arith.addi " + base + ", " + c + " : index") +
             (N_ > 1 ? L(vg + " = arith.addi " + v + ", %tp_vocab_base : index") : "") +
             L(bits + " = arith.bitcast " + a[0] + " : f32 to i32") +
             L(zero + " = arith.constant 0 : i32") +
             L(neg + " = arith.cmpi slt, " + bits + ", " + zero + " : i32") +
             L(mask + " = arith.constant 2147483647 : i32") +
             L(flip + " = arith.xori " + bits + ", " + mask + " : i32") +
             L(ord + " = arith.select " + neg + ", " + flip + ", " + bits + " : i32") +
             L(ord64 + " = arith.extsi " + ord + " : i32 to i64") +
             L(sh + " = arith.constant 32 : i64") + L(hi + " = arith.shli " + ord64 + ", " + sh + " : i64") +
             L(vi + " = arith.index_cast " + (N_ > 1 ? vg : v) + " : index to i64") +
             L(top + " = arith.constant 4294967295 : i64") + L(lo + " = arith.subi " + top + ", " + vi + " : i64") +
             L(key + " = arith.ori " + hi + ", " + lo + " : i64") +
             L(m + " = arith.maxsi " + a[1] + ", " + key + " : i64") + L("linalg.yield " + m + " : i64");
    });
    std::string m0 = e_.Filled("tensor<i64>", kMin, "i64");
    std::string best = e_.Generic({"(r) -> (r)", "(r) -> ()"}, {"reduction"}, {{chunks, rt}}, {m0, "tensor<i64>"},
                                  {"i64", "i64"}, [&](auto a) {
                                    std::string m = e_.Fresh();
                                    return L(m + " = arith.maxsi " + a[1] + ", " + a[0] + " : i64") +
                                           L("linalg.yield " + m + " : i64");
                                  });
    if (N_ > 1) {
      // Tensor parallelism: the keys hold global vocabulary indices, so the maximum over the
      // ranks' keys is the single-device maximum with its tie rule.
      std::string all = e_.Fresh("best");
      os_ << "    " << all << " = hexir.all_reduce \"max\" " << best << " : tensor<i64>\n";
      best = all;
    }
    std::string de = e_.Filled("tensor<i64>", "", "i64");
    return e_.Generic({"() -> ()", "() -> ()"}, {}, {{best, "tensor<i64>"}}, {de, "tensor<i64>"},
                      {"i64", "i64"}, [&](auto a) {
                        std::string top = e_.Fresh(), lo = e_.Fresh(), v = e_.Fresh();
                        return L(top + " = arith.constant 4294967295 : i64") +
                               L(lo + " = arith.andi " + a[0] + ", " + top + " : i64") +
                               L(v + " = arith.subi " + top + ", " + lo + " : i64") +
                               L("linalg.yield " + v + " : i64");
                      });
  }

  // ids'[i] = i == widx && !stopped ? am : ids[i]; without `ids` (the first id):
  // i == widx ? am : -1. `stopped` (a tensor<1xi64> flag, or "" for none): a stop token was
  // produced before, so this id is not written.
  // (Not a -1 fill as an input: that fill would be cloned into the kernel as a temporary
  // of dynamic size, which the CUDA target does not allocate.)
  std::string UpdateIds(const std::string& ids, const std::string& am, const std::string& widx,
                        const std::string& stopped) {
    std::string idt = "tensor<?xi64>";
    std::string e = e_.Filled(idt, "", "i64", "%n_ids");
    std::vector<std::string> maps = {"(i) -> (i)", "(i) -> ()", "(i) -> (i)"};
    std::vector<Operand> ins = {{ids, idt}, {am, "tensor<i64>"}};
    std::vector<std::string> elems = {"i64", "i64", "i64"};
    if (ids.empty()) {
      maps.erase(maps.begin());
      ins.erase(ins.begin());
      elems.pop_back();
    }
    return e_.Generic(maps, {"parallel"}, ins, {e, idt}, elems, [&](auto a) {
      auto f = [&]() { return e_.Fresh(); };
      std::string i = f(), ii = f(), eq = f(), old = f(), r = f(), c0 = f(), sv = f(), go = f(), w = f();
      std::string prev = ids.empty() ? old : a[0], id = ids.empty() ? a[0] : a[1];
      std::string text = L(i + " = linalg.index 0 : index") +
                         L(ii + " = arith.index_cast " + i + " : index to i64") +
                         (ids.empty() ? L(old + " = arith.constant -1 : i64") : "") +
                         L(eq + " = arith.cmpi eq, " + ii + ", " + widx + " : i64");
      std::string cond = eq;
      if (!stopped.empty()) {
        text += L(c0 + " = arith.constant 0 : index") +
                L(sv + " = tensor.extract " + stopped + "[" + c0 + "] : tensor<1xi64>") +
                L(go + " = arith.cmpi eq, " + sv + ", %zero64 : i64") +
                L(w + " = arith.andi " + eq + ", " + go + " : i1");
        cond = w;
      }
      return text + L(r + " = arith.select " + cond + ", " + id + ", " + prev + " : i64") +
             L("linalg.yield " + r + " : i64");
    });
  }

  // live[0] = 1 - stop[0]: a new tensor (the chunked loop's snapshot of a stop flag).
  std::string LiveFlag(const std::string& stop) {
    std::string ft = "tensor<1xi64>";
    std::string e = e_.Filled(ft, "", "i64");
    return e_.Generic({"(i) -> (i)", "(i) -> (i)"}, {"parallel"}, {{stop, ft}}, {e, ft}, {"i64", "i64"},
                      [&](auto a) {
                        std::string one = e_.Fresh(), r = e_.Fresh();
                        return L(one + " = arith.constant 1 : i64") +
                               L(r + " = arith.subi " + one + ", " + a[0] + " : i64") +
                               L("linalg.yield " + r + " : i64");
                      });
  }

  // stop'[0] = stop[0] | (am == bos) | (am == eos) as 0/1 (without `stop`: from am alone).
  std::string StopFlag(const std::string& stop, const std::string& am) {
    std::string ft = "tensor<1xi64>";
    std::string e = e_.Filled(ft, "", "i64");
    std::vector<std::string> maps = {"(i) -> (i)", "(i) -> ()", "(i) -> (i)"};
    std::vector<Operand> ins = {{stop, ft}, {am, "tensor<i64>"}};
    if (stop.empty()) {
      maps.erase(maps.begin());
      ins.erase(ins.begin());
    }
    std::vector<std::string> elems(maps.size(), "i64");
    return e_.Generic(maps, {"parallel"}, ins, {e, ft}, elems, [&](auto a) {
      auto f = [&]() { return e_.Fresh(); };
      std::string one = f(), two = f(), b = f(), eos = f(), hit = f(), hi = f(), r = f();
      std::string tok = stop.empty() ? a[0] : a[1];
      std::string text = L(one + " = arith.constant " + std::to_string(c_.bos_id) + " : i64") +
                         L(two + " = arith.constant " + std::to_string(c_.eos_id) + " : i64") +
                         L(b + " = arith.cmpi eq, " + tok + ", " + one + " : i64") +
                         L(eos + " = arith.cmpi eq, " + tok + ", " + two + " : i64") +
                         L(hit + " = arith.ori " + b + ", " + eos + " : i1") +
                         L(hi + " = arith.extui " + hit + " : i1 to i64");
      if (stop.empty()) return text + L("linalg.yield " + hi + " : i64");
      return text + L(r + " = arith.ori " + a[0] + ", " + hi + " : i64") + L("linalg.yield " + r + " : i64");
    });
  }

  // The next token from the final hidden state `x`: the greedy argmax, or in the streaming
  // functions the device sampler (Sampler.h) over the history prompt + ids[0, step).
  std::string NextToken(const std::string& x, const ModelWeights& w, const std::string& ids, const std::string& step) {
    if (!sampled_) return Argmax(x, w);
    std::string xf = RmsNorm(kOneRow, x, w.rms_final.name);
    std::string logits = MatMul(kOneRow, w.classifier, xf, V_, D_);
    std::string history = e_.Fresh("history");
    os_ << "    " << history << " = arith.addi %n_prompt64, " << step << " : i64\n";
    SamplerOperands in{logits, "%sampler_floats", "%sampler_ints", "%prompt", "%n_prompt64", ids, history, step};
    return EmitSampler(os_, V_, in, e_.Fresh("smp").substr(1) + "_");
  }

  // `func.func @name(%prompt, %max_new[, sampler args][, extra]` + the weights.
  void EmitSignature(const std::string& name, const std::vector<WeightTensor>& tensors, const std::string& extra) {
    os_ << "func.func @" << name << "(%prompt: tensor<?xi64>, %max_new: i64";
    if (sampled_)
      os_ << ", %sampler_floats: tensor<" << kSamplerFloats << "xf32>, %sampler_ints: tensor<" << kSamplerInts << "xi64>";
    os_ << extra;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const std::string name = "%w_" + std::to_string(i);
      auto layer = argument_devices_.find(name);
      os_ << ", " << name << ": " << ArgumentType(tensors[i])
          << DeviceAttr(layer != argument_devices_.end() ? layer->second : placement_.head_device);
    }
  }

  // The decode state: pos, n (ids generated), the last token, the stop flag, ids, K/V caches.
  std::string StateTypes(bool with_counts) {
    std::string types = with_counts ? "i64, i64, " : "";
    types += "tensor<i64>, tensor<1xi64>, tensor<?xi64>";
    for (int64_t i = 0; i < 2 * c_.n_layers; ++i) types += ", " + CacheType();
    return types;
  }

  void EmitPreamble() {
    os_ << "    %c0 = arith.constant 0 : index\n"
        << "    %n_prompt = tensor.dim %prompt, %c0 : tensor<?xi64>\n"
        << "    %n_prompt64 = arith.index_cast %n_prompt : index to i64\n"
        << "    %max_ids = arith.constant " << S_ << " : i64\n"
        << "    %no_ids = arith.constant 0 : i64\n"
        // max_new clamped to [0, S]: no id can be generated past the cache, and a caller's
        // huge or negative count must not size the ids tensor (C API, hexir-run).
        << "    %max_new_upper = arith.minsi %max_new, %max_ids : i64\n"
        << "    %n_max = arith.maxsi %max_new_upper, %no_ids : i64\n"
        << "    %n_ids = arith.index_cast %n_max : i64 to index\n"
        << "    %zero64 = arith.constant 0 : i64\n"
        << "    %one64 = arith.constant 1 : i64\n";
    if (N_ > 1) {
      // The module is for N_ ranks; the channel (rank, count) is read at run time.
      os_ << "    %tp_count = hexir.channel.count : index\n"
          << "    %tp_want = arith.constant " << N_ << " : index\n"
          << "    %tp_ok = arith.cmpi eq, %tp_count, %tp_want : index\n"
          << "    hexir.check %tp_ok, \"tensor-parallel module for " << N_
          << " ranks runs on a channel of {} ranks (start it with mpirun -n " << N_
          << ")\"(%tp_count) : index\n"
          << "    %tp_rank = hexir.channel.rank : index\n"
          << "    %tp_vocab = arith.constant " << V_ << " : index\n"
          << "    %tp_vocab_base = arith.muli %tp_rank, %tp_vocab : index\n";
    }
  }

  // Prefill (every prompt token in one pass through @prefill_layer) and the first token:
  // returns {first token, stop flag, ids, caches...}; defines %n0 (ids so far) and %live0.
  std::vector<std::string> EmitPrefill(const ModelWeights& w) {
    std::string ct = CacheType();
    int64_t nl = c_.n_layers;
    auto layer_args = [&](int64_t l) { return LayerArgs(w, l); };
    auto layer_types = [&](int64_t l) { return LayerTypes(w, l); };
    std::vector<std::string> caches;
    for (int64_t i = 0; i < 2 * nl; ++i) caches.push_back(e_.Filled(ct, "0.0", CT_));

    std::string pt = T({-1, D_});
    std::string pe = e_.Filled(pt, "", "f32", "%n_prompt");
    std::string x = e_.Generic({"(m, d) -> (m, d)"}, {"parallel", "parallel"}, {}, {pe, pt}, {"f32"},
                               [&](auto) {
                                 auto f = [&]() { return e_.Fresh(); };
                                 std::string m = f(), d = f(), t = f(), ti = f();
                                 std::string text = L(m + " = linalg.index 0 : index") +
                                                    L(d + " = linalg.index 1 : index") +
                                                    L(t + " = tensor.extract %prompt[" + m + "] : tensor<?xi64>") +
                                                    L(ti + " = arith.index_cast " + t + " : i64 to index");
                                 std::string vf = WeightElement(w.token_embedding, ti, d, &text);
                                 return text + L("linalg.yield " + vf + " : f32");
                               });
    for (int64_t l = 0; l < nl; ++l) {
      std::string r = e_.Fresh("prefill");
      os_ << "    " << r << ":3 = func.call " << prefill_functions_[l] << "(" << x << ", " << caches[2 * l] << ", "
          << caches[2 * l + 1] << layer_args(l) << ") : (" << pt << ", " << ct << ", " << ct
          << layer_types(l) << ") -> (" << pt << ", " << ct << ", " << ct << ")\n";
      x = r + "#0";
      caches[2 * l] = r + "#1";
      caches[2 * l + 1] = r + "#2";
    }
    os_ << "    %c1_idx = arith.constant 1 : index\n"
        << "    %last_row = arith.subi %n_prompt, %c1_idx : index\n";
    std::string xt = T({D_});
    std::string le = e_.Filled(xt, "", "f32");
    std::string xl = e_.Generic({"(d) -> (d)"}, {"parallel"}, {}, {le, xt}, {"f32"}, [&](auto) {
      std::string d = e_.Fresh(), v = e_.Fresh();
      return L(d + " = linalg.index 0 : index") +
             L(v + " = tensor.extract " + x + "[%last_row, " + d + "] : " + pt) +
             L("linalg.yield " + v + " : f32");
    });
    std::string am0 = NextToken(xl, w, "", "%zero64");
    std::string stop0 = StopFlag("", am0);
    if (device_loop_ && !sampled_) {  // @generate's device loop: its state starts on the device
      std::vector<std::string> state = {am0, stop0, ""};
      state.insert(state.end(), caches.begin(), caches.end());
      return state;
    }
    std::string ids1 = UpdateIds("", am0, "%zero64", "");
    os_ << "    %stop0_h = tensor.extract " << stop0 << "[%c0] : tensor<1xi64>\n"
        << "    %live0 = arith.subi %one64, %stop0_h : i64\n"
        << "    %n0 = arith.minsi %one64, %n_max : i64\n";
    std::vector<std::string> state = {am0, stop0, ids1};
    state.insert(state.end(), caches.begin(), caches.end());
    return state;
  }

  // ", %name..." and ", type..." of layer l's weight arguments (the @layer / prefill calls).
  std::string LayerArgs(const ModelWeights& w, int64_t l) const {
    std::string s;
    for (const LayerField& f : kLayerFields) s += ", " + (w.layers[l].*f.member).name;
    return s;
  }
  std::string LayerTypes(const ModelWeights& w, int64_t l) const {
    std::string s;
    for (const LayerField& f : kLayerFields) s += ", " + (w.layers[l].*f.member).type;
    return s;
  }

  // One chunk: up to chunk_ decode steps (M = 1 each) from the state %bpos, %bn, %btok,
  // %bstop, %bids and `caches`, through @layer (recorded into the step by the compiler) or the layers written
  // out, so that one step is one recorded segment;
  // the token travels on the device (argmax -> embedding). Ids produced after a stop token
  // are not written (the flag guards the ids update), so the result does not depend on
  // chunk_. Results: %f#0.. (token, stop, ids, caches); %steps the steps run.
  void EmitChunk(const ModelWeights& w, const std::vector<std::string>& caches) {
    int64_t nl = c_.n_layers;
    std::string xt = T({D_}), ct = CacheType();
    os_ << "    %left = arith.subi %n_max, %bn : i64\n"
        << "    %room_left = arith.subi %cache_len, %bpos : i64\n"
        << "    %steps0 = arith.minsi %chunk, %left : i64\n"
        << "    %steps = arith.minsi %steps0, %room_left : i64\n"
        << "    %steps_idx = arith.index_cast %steps : i64 to index\n"
        << "    %c1_step = arith.constant 1 : index\n"
        << "    %f:" << 3 + 2 * nl << " = scf.for %j = %c0 to %steps_idx step %c1_step iter_args(%t = %btok, "
        << "%st = %bstop, %id = %bids";
    for (int64_t i = 0; i < 2 * nl; ++i) os_ << ", %fc" << i << " = " << caches[i];
    os_ << ") -> (" << StateTypes(false) << ") {\n"
        << "    %j64 = arith.index_cast %j : index to i64\n"
        << "    %spos = arith.addi %bpos, %j64 : i64\n"
        << "    %sn = arith.addi %bn, %j64 : i64\n";
    std::string xe = e_.Filled(xt, "", "f32");
    std::string xd = e_.Generic({"(d) -> (d)"}, {"parallel"}, {}, {xe, xt}, {"f32"}, [&](auto) {
      std::string d = e_.Fresh(), t = e_.Fresh(), ti = e_.Fresh();
      std::string text = L(d + " = linalg.index 0 : index") + L(t + " = tensor.extract %t[] : tensor<i64>") +
                         L(ti + " = arith.index_cast " + t + " : i64 to index");
      std::string vf = WeightElement(w.token_embedding, ti, d, &text);
      return text + L("linalg.yield " + vf + " : f32");
    });
    pos_ = "%spos";
    std::vector<std::string> new_caches;
    for (int64_t l = 0; l < nl; ++l) {
      e_.SetDevice(LayerDevice(l));
      if (layer_calls_) {
        std::string r = e_.Fresh("layer");
        os_ << "    " << r << ":3 = func.call " << decode_functions_[l] << "(" << xd << ", %fc" << 2 * l
            << ", %fc" << 2 * l + 1 << ", %spos" << LayerArgs(w, l) << ") : (" << xt << ", " << ct << ", "
            << ct << ", i64" << LayerTypes(w, l) << ") -> (" << xt << ", " << ct << ", " << ct << ")\n";
        xd = r + "#0";
        new_caches.push_back(r + "#1");
        new_caches.push_back(r + "#2");
        continue;
      }
      auto out = Layer(kOneRow, xd, "%fc" + std::to_string(2 * l), "%fc" + std::to_string(2 * l + 1),
                       w.layers[l]);
      xd = out[0];
      new_caches.push_back(out[1]);
      new_caches.push_back(out[2]);
    }
    pos_ = "%pos";
    e_.SetDevice(placement_.head_device);
    std::string am = NextToken(xd, w, "%id", "%sn");
    std::string ids = UpdateIds("%id", am, "%sn", "%st");
    std::string stop = StopFlag("%st", am);
    os_ << "    scf.yield " << am << ", " << stop << ", " << ids;
    for (auto& c : new_caches) os_ << ", " << c;
    os_ << " : " << StateTypes(false) << "\n    }\n";
  }

  // @generate: prefill, then a scf.while of chunks (the host reads a stop flag once per
  // chunk, the previous chunk's, while this one runs) running the whole greedy decode loop
  // in one call.
  void EmitGenerate(const std::vector<WeightTensor>& tensors, const ModelWeights& w) {
    sampled_ = false;
    os_ << "// The KV-cache length, for runtimes to check prompts against.\n"
        << "func.func @cache_len() -> tensor<1xi64> {\n";
    std::string cl = e_.Filled("tensor<1xi64>", std::to_string(S_), "i64");
    os_ << "    return " << cl << " : tensor<1xi64>\n}\n\n";
    if (N_ > 1) {
      os_ << "// Tensor parallelism: (the ranks this module is for, this process's rank, the channel's\n"
          << "// ranks), for runtimes to pick each rank's weight shards and check the world size.\n"
          << "func.func @tensor_parallel() -> (i64, i64, i64) {\n"
          << "    %n = arith.constant " << N_ << " : i64\n"
          << "    %rank = hexir.channel.rank : index\n"
          << "    %count = hexir.channel.count : index\n"
          << "    %rank64 = arith.index_cast %rank : index to i64\n"
          << "    %count64 = arith.index_cast %count : index to i64\n"
          << "    return %n, %rank64, %count64 : i64, i64, i64\n}\n\n";
    }

    EmitSignature("generate", tensors, "");
    os_ << ") -> tensor<?xi64> {\n";
    e_.SetDevice(placement_.head_device);
    int64_t nl = c_.n_layers;
    EmitPreamble();
    std::vector<std::string> s = EmitPrefill(w);
    os_ << "    %cache_len = arith.constant " << S_ << " : i64\n";
    if (device_loop_) {
      EmitDeviceLoop(w, s);
      e_.SetDevice(-1);
      return;
    }
    os_ << "    %chunk = arith.constant " << chunk_ << " : i64\n";
    std::string types = "i64, i64, i64, " + StateTypes(false);
    os_ << "    %r:" << 6 + 2 * nl << " = scf.while (%pos = %n_prompt64, %n = %n0, %live = %live0, "
        << "%tok = " << s[0] << ", %stop = " << s[1] << ", %ids = " << s[2];
    for (int64_t i = 0; i < 2 * nl; ++i) os_ << ", %cache" << i << " = " << s[3 + i];
    os_ << ") : (" << types << ") -> (" << types << ") {\n"
        << "    %below = arith.cmpi slt, %n, %n_max : i64\n"
        << "    %room = arith.cmpi slt, %pos, %cache_len : i64\n"
        << "    %alive = arith.cmpi ne, %live, %zero64 : i64\n"
        << "    %cond0 = arith.andi %below, %room : i1\n"
        << "    %cond = arith.andi %cond0, %alive : i1\n"
        << "    scf.condition(%cond) %pos, %n, %live, %tok, %stop, %ids";
    for (int64_t i = 0; i < 2 * nl; ++i) os_ << ", %cache" << i;
    os_ << " : " << types << "\n  } do {\n  ^bb0(%bpos: i64, %bn: i64, %blive: i64, %btok: tensor<i64>, "
        << "%bstop: tensor<1xi64>, %bids: tensor<?xi64>";
    for (int64_t i = 0; i < 2 * nl; ++i) os_ << ", %bc" << i << ": " << CacheType();
    os_ << "):\n";
    std::vector<std::string> caches;
    for (int64_t i = 0; i < 2 * nl; ++i) caches.push_back("%bc" + std::to_string(i));
    // The host reads the flag of the chunk before this one, from a snapshot taken before this
    // chunk is queued: the read waits for the snapshot only (hal/queue_use.h), so the device
    // runs this chunk meanwhile and never idles on the read. A stop is thus seen one chunk
    // late: that chunk writes no ids (the flag guards them), so the ids do not change.
    std::string live = LiveFlag("%bstop");
    EmitChunk(w, caches);
    os_ << "    %live1 = tensor.extract " << live << "[%c0] : tensor<1xi64>\n"
        << "    %pos1 = arith.addi %bpos, %steps : i64\n"
        << "    %n1 = arith.addi %bn, %steps : i64\n"
        << "    scf.yield %pos1, %n1, %live1, %f#0, %f#1, %f#2";
    for (int64_t i = 0; i < 2 * nl; ++i) os_ << ", %f#" << 3 + i;
    os_ << " : " << types << "\n  }\n    return %r#5 : tensor<?xi64>\n}\n";
    e_.SetDevice(-1);
  }

  // @generate's decode loop on the device (EmitOptions::device_loop): an scf.while whose
  // condition is a device flag and whose body is device work only (passes/loops/DeviceLoops.h),
  // one step per iteration; hexir-compile makes it one command buffer repeated on the device
  // (a CUDA conditional WHILE node), so the host waits once, for the ids. Carried:
  //   %flag tensor<1xi32>  n < n_max && pos < S && stop == 0 (computed by the body for the next test)
  //   %st   tensor<4xi64>  [pos, n, token, stop] (kStatePos..: read in the kernels)
  //   %ids  tensor<Sxi64>  id n written at step n, -1 elsewhere; the result is its first n_max
  //   the K/V caches, row pos written in place (DeviceCacheWrite).
  // `prefill` = {first token, stop flag, "", caches...} (EmitPrefill). The ids equal the
  // chunked loop's: a step runs exactly when that loop's would write an id.
  void EmitDeviceLoop(const ModelWeights& w, const std::vector<std::string>& prefill) {
    const int64_t nl = c_.n_layers;
    const std::string ct = T({S_, KV_}), xt = T({D_}), idt = T({S_}, "i64");
    const std::string st0 = EmitInitialState(prefill[0], prefill[1]);
    const std::string flag0 = EmitFlag(st0);
    std::string ids0 = e_.Generic({"(i) -> ()", "(i) -> (i)"}, {"parallel"}, {{prefill[0], "tensor<i64>"}},
                                  {e_.Filled(idt, "", "i64"), idt}, {"i64", "i64"}, [&](auto a) {
      std::string i = e_.Fresh(), c0 = e_.Fresh(), first = e_.Fresh(), none = e_.Fresh(), r = e_.Fresh();
      return L(i + " = linalg.index 0 : index") + L(c0 + " = arith.constant 0 : index") +
             L(first + " = arith.cmpi eq, " + i + ", " + c0 + " : index") +
             L(none + " = arith.constant -1 : i64") +
             L(r + " = arith.select " + first + ", " + a[0] + ", " + none + " : i64") +
             L("linalg.yield " + r + " : i64");
    });
    std::string types = "tensor<1xi32>, " + std::string(kStateType) + ", " + idt;
    for (int64_t i = 0; i < 2 * nl; ++i) types += ", " + ct;
    os_ << "    %r:" << 3 + 2 * nl << " = scf.while (%flag = " << flag0 << ", %st = " << st0 << ", %ids = " << ids0;
    for (int64_t i = 0; i < 2 * nl; ++i) os_ << ", %cache" << i << " = " << prefill[3 + i];
    os_ << ") : (" << types << ") -> (" << types << ") {\n"
        << "    %go_flag = tensor.extract %flag[%c0] : tensor<1xi32>\n"
        << "    %zero32 = arith.constant 0 : i32\n"
        << "    %go = arith.cmpi ne, %go_flag, %zero32 : i32\n"
        << "    scf.condition(%go) %flag, %st, %ids";
    for (int64_t i = 0; i < 2 * nl; ++i) os_ << ", %cache" << i;
    os_ << " : " << types << "\n  } do {\n  ^bb0(%bflag: tensor<1xi32>, %bst: " << kStateType << ", %bids: " << idt;
    for (int64_t i = 0; i < 2 * nl; ++i) os_ << ", %bc" << i << ": " << ct;
    os_ << "):\n";
    state_ = "%bst";
    std::string x = e_.Generic({"(d) -> (d)"}, {"parallel"}, {}, {e_.Filled(xt, "", "f32"), xt}, {"f32"}, [&](auto) {
      std::string d = e_.Fresh(), ti = e_.Fresh();
      std::string text = L(d + " = linalg.index 0 : index");
      std::string t = StateIn(kStateToken, state_, &text);
      text += L(ti + " = arith.index_cast " + t + " : i64 to index");
      std::string vf = WeightElement(w.token_embedding, ti, d, &text);
      return text + L("linalg.yield " + vf + " : f32");
    });
    std::vector<std::string> caches;
    for (int64_t l = 0; l < nl; ++l) {
      auto out = Layer(kOneRow, x, "%bc" + std::to_string(2 * l), "%bc" + std::to_string(2 * l + 1), w.layers[l]);
      x = out[0];
      caches.push_back(out[1]);
      caches.push_back(out[2]);
    }
    std::string am = NextToken(x, w, "", "");
    // ids'[i] = i == n ? token : ids[i] (the body runs only while n < n_max and no stop came),
    // updating %bids in place (its init, read only as each point's own element).
    std::string ids = e_.Generic({"(i) -> ()", "(i) -> (i)"}, {"parallel"}, {{am, "tensor<i64>"}},
                                 {"%bids", idt}, {"i64", "i64"}, [&](auto a) {
      std::string i = e_.Fresh(), ii = e_.Fresh(), hit = e_.Fresh(), r = e_.Fresh();
      std::string text = L(i + " = linalg.index 0 : index") + L(ii + " = arith.index_cast " + i + " : index to i64");
      std::string n = StateIn(kStateCount, state_, &text);
      return text + L(hit + " = arith.cmpi eq, " + ii + ", " + n + " : i64") +
             L(r + " = arith.select " + hit + ", " + a[0] + ", " + a[1] + " : i64") +
             L("linalg.yield " + r + " : i64");
    });
    state_.clear();
    std::string st = EmitNextState(am);
    std::string flag = EmitFlag(st, "%bflag");
    os_ << "    scf.yield " << flag << ", " << st << ", " << ids;
    for (const std::string& c : caches) os_ << ", " << c;
    // The step limit (passes/loops/DeviceLoops.h kMaxIterationsAttr): no more steps than ids,
    // so the limit is never what ends the loop.
    os_ << " : " << types << "\n  } attributes {hexir.max_iterations = " << S_ << " : i64}\n"
        << "    %ids_out = tensor.extract_slice %r#2[0] [%n_ids] [1] : " << idt << " to tensor<?xi64>\n"
        << "    return %ids_out : tensor<?xi64>\n}\n";
  }

  // The device loop's first state [n_prompt, min(1, n_max), first token, its stop flag].
  std::string EmitInitialState(const std::string& token, const std::string& stop) {
    return e_.Generic({"(i) -> ()", "(i) -> (i)"}, {"parallel"}, {{token, "tensor<i64>"}},
                      {e_.Filled(kStateType, "", "i64"), kStateType}, {"i64", "i64"}, [&](auto a) {
      auto f = [&]() { return e_.Fresh(); };
      std::string i = f(), c0 = f(), sv = f(), n = f();
      std::string text = L(i + " = linalg.index 0 : index") + L(c0 + " = arith.constant 0 : index") +
                         L(sv + " = tensor.extract " + stop + "[" + c0 + "] : tensor<1xi64>") +
                         L(n + " = arith.minsi %one64, %n_max : i64");
      return text + SelectState(i, {"%n_prompt64", n, a[0], sv});
    });
  }

  // The state after a step that chose `token`: [pos + 1, n + 1, token, stop | token is BOS/EOS],
  // updating %bst in place: each point reads only its own element (its init), so that the
  // update is one kernel (no copy back into the carried buffer).
  std::string EmitNextState(const std::string& token) {
    return e_.Generic({"(i) -> ()", "(i) -> (i)"}, {"parallel"}, {{token, "tensor<i64>"}},
                      {"%bst", kStateType}, {"i64", "i64"}, [&](auto a) {
      auto f = [&]() { return e_.Fresh(); };
      std::string i = f(), one = f(), next = f(), bos = f(), eos = f(), b = f(), e = f(), hit = f(),
                  hi = f(), stop1 = f();
      std::string text = L(i + " = linalg.index 0 : index") + L(one + " = arith.constant 1 : i64");
      // a[1] is this point's element: pos, n (each + 1), the old token, or the stop flag.
      text += L(next + " = arith.addi " + a[1] + ", " + one + " : i64") +
              L(bos + " = arith.constant " + std::to_string(c_.bos_id) + " : i64") +
              L(eos + " = arith.constant " + std::to_string(c_.eos_id) + " : i64") +
              L(b + " = arith.cmpi eq, " + a[0] + ", " + bos + " : i64") +
              L(e + " = arith.cmpi eq, " + a[0] + ", " + eos + " : i64") +
              L(hit + " = arith.ori " + b + ", " + e + " : i1") + L(hi + " = arith.extui " + hit + " : i1 to i64") +
              L(stop1 + " = arith.ori " + a[1] + ", " + hi + " : i64");
      return text + SelectState(i, {next, next, a[0], stop1});
    });
  }

  // Body tail yielding values[i] for state element i (index value `i`).
  std::string SelectState(const std::string& i, const std::array<std::string, 4>& values) {
    std::string text, r = values[3];
    for (int field = 2; field >= 0; --field) {
      std::string c = e_.Fresh(), is = e_.Fresh(), sel = e_.Fresh();
      text += L(c + " = arith.constant " + std::to_string(field) + " : index") +
              L(is + " = arith.cmpi eq, " + i + ", " + c + " : index") +
              L(sel + " = arith.select " + is + ", " + values[field] + ", " + r + " : i64");
      r = sel;
    }
    return text + L("linalg.yield " + r + " : i64");
  }

  // The loop's flag for state `st`: n < n_max && pos < S && stop == 0, as i32 0/1, into
  // `into` (the carried flag, updated in place) or a new tensor.
  std::string EmitFlag(const std::string& st, const std::string& into = "") {
    const std::string ft = "tensor<1xi32>";
    const std::string init = into.empty() ? e_.Filled(ft, "", "i32") : into;
    return e_.Generic({"(i) -> (i)"}, {"parallel"}, {}, {init, ft}, {"i32"}, [&](auto) {
      auto f = [&]() { return e_.Fresh(); };
      std::string below = f(), room = f(), len = f(), live = f(), go0 = f(), go = f(), r = f();
      std::string text;
      std::string pos = StateIn(kStatePos, st, &text), n = StateIn(kStateCount, st, &text),
                  stop = StateIn(kStateStop, st, &text);
      return text + L(below + " = arith.cmpi slt, " + n + ", %n_max : i64") +
             L(len + " = arith.constant " + std::to_string(S_) + " : i64") +
             L(room + " = arith.cmpi slt, " + pos + ", " + len + " : i64") +
             L(live + " = arith.cmpi eq, " + stop + ", %zero64 : i64") +
             L(go0 + " = arith.andi " + below + ", " + room + " : i1") +
             L(go + " = arith.andi " + go0 + ", " + live + " : i1") +
             L(r + " = arith.extui " + go + " : i1 to i32") + L("linalg.yield " + r + " : i32");
    });
  }

  // The streaming pair, sampled (Sampler.h; temperature 0 is the greedy argmax): the host
  // drives the chunks and reads the ids after each one.
  //   @generate_begin(prompt, max_new, sampler_floats, sampler_ints, weights) -> state
  //   @generate_chunk(prompt, max_new, sampler_floats, sampler_ints, state, weights) -> state
  // state = (pos, n, token, stop flag, ids [max_new clamped, -1 where not generated], K/V
  // caches); the host calls @generate_chunk while n < max_new, pos < cache length and the stop
  // flag is 0. The ids equal @generate's for the same settings at temperature 0.
  void EmitStreaming(const std::vector<WeightTensor>& tensors, const ModelWeights& w) {
    sampled_ = true;
    const std::string result = ") -> (" + StateTypes(true) + ") {\n";
    os_ << "\n";
    EmitSignature("generate_begin", tensors, "");
    os_ << result;
    EmitPreamble();
    std::vector<std::string> s = EmitPrefill(w);
    os_ << "    return %n_prompt64, %n0";
    for (const std::string& v : s) os_ << ", " << v;
    os_ << " : " << StateTypes(true) << "\n}\n\n";

    std::string state = ", %bpos: i64, %bn: i64, %btok: tensor<i64>, %bstop: tensor<1xi64>, %bids: tensor<?xi64>";
    for (int64_t i = 0; i < 2 * c_.n_layers; ++i) state += ", %ac" + std::to_string(i) + ": " + CacheType();
    EmitSignature("generate_chunk", tensors, state);
    os_ << result;
    EmitPreamble();
    // The caller's caches are copied (a gather kernel, not an identity generic that would be
    // folded away) so that the steps update a buffer of this call in place: updating the
    // argument's own buffer in place made hexir-compile fail intermittently ("unsupported op
    // 'linalg.generic' in a host function").
    const std::string ct = CacheType();
    std::vector<std::string> caches;
    for (int64_t i = 0; i < 2 * c_.n_layers; ++i) {
      caches.push_back(e_.Generic({"(s, k) -> (s, k)"}, {"parallel", "parallel"}, {}, {e_.Filled(ct, "", CT_), ct},
                                    {CT_}, [&](auto) {
        std::string r = e_.Fresh(), k = e_.Fresh(), v = e_.Fresh();
        return L(r + " = linalg.index 0 : index") + L(k + " = linalg.index 1 : index") +
               L(v + " = tensor.extract %ac" + std::to_string(i) + "[" + r + ", " + k + "] : " + ct) +
               L("linalg.yield " + v + " : " + CT_);
      }));
    }
    os_ << "    %cache_len = arith.constant " << S_ << " : i64\n"
        << "    %chunk = arith.constant " << chunk_ << " : i64\n";
    EmitChunk(w, caches);
    os_ << "    %pos1 = arith.addi %bpos, %steps : i64\n"
        << "    %n1 = arith.addi %bn, %steps : i64\n"
        << "    return %pos1, %n1";
    for (int64_t i = 0; i < 3 + 2 * c_.n_layers; ++i) os_ << ", %f#" << i;
    os_ << " : " << StateTypes(true) << "\n}\n";
    sampled_ = false;
  }

  const LlamaConfig& c_;
  std::vector<WeightTensor> tensors_;  // @generate's weight arguments (LlamaWeights order)
  ResolvedPlacement placement_;        // empty layer list: no hexir.device annotations
  std::map<std::string, int64_t> argument_devices_;  // layer weight argument -> its layer's device
  std::vector<std::string> prefill_functions_;  // per layer: the prefill function of its weight types
  std::vector<std::string> decode_functions_;   // per layer: its @layer function (layer_calls_)
  // D_: model dim; Q_, KV_, F_, V_, KVH_: this rank's query dim, KV dim, hidden units,
  // vocabulary and KV heads (the model's / N_); N_: ranks (1: one device).
  int64_t S_, D_, Q_, KV_, F_, V_, HD_, KVH_, G_, N_;
  std::string WT_;  // weight element type: f32, or f16 (widened to f32 where read)
  std::string CT_;  // KV-cache element type: f32, f16 or bf16 (widened to f32 where read)
  std::string eps_, theta_;  // RMSNorm epsilon and rotary base as f32 literals
  std::string inv_scale_;    // 1 / linear rope scaling factor as an f32 literal
  std::string pos_ = "%pos";  // the i64 position the decode bodies (rope, cache, attention) use
  // In the device loop's body: the state tensor (kStateType) the kernels read the position
  // from (PosIn); empty elsewhere.
  std::string state_;
  bool device_loop_;          // @generate's decode loop on the device (EmitOptions::device_loop)
  int64_t chunk_;             // decode steps per host check of the stop flag (>= 1)
  bool sampled_ = false;      // emitting the streaming functions (NextToken samples)
  bool layer_calls_;          // decode layers as calls of @layer (EmitOptions::layer_calls)
  std::ostringstream os_;
  Emitter e_;
};

}  // namespace

Status CheckElementTypes(const EmitOptions& options) {
  if (options.weight_type != "f32" && options.weight_type != "f16")
    return InvalidArgument("weight type '", options.weight_type, "' is not f32 or f16");
  if (options.cache_type != "f32" && options.cache_type != "f16" && options.cache_type != "bf16")
    return InvalidArgument("KV-cache type '", options.cache_type, "' is not f32, f16 or bf16");
  return Status::Ok();
}

std::string EmitLlamaModule(const LlamaConfig& config, const EmitOptions& options) {
  return EmitLlamaModule(config, LlamaWeights(config), options);
}

std::string EmitLlamaModule(const LlamaConfig& config, const std::vector<WeightTensor>& weights,
                            const EmitOptions& options) {
  int64_t cache_len = options.cache_len > 0 ? options.cache_len : config.seq_len;
  const int64_t ranks = std::max<int64_t>(options.tensor_parallel, 1);
  // The program's arguments are one rank's parts (every rank's have the same shapes). The
  // importers refuse what TensorParallelWeights refuses before emitting.
  StatusOr<std::vector<WeightTensor>> parts = TensorParallelWeights(config, weights, ranks, 0);
  StatusOr<ResolvedPlacement> placement = ResolvePlacement(options.placement, config.n_layers);
  ModuleWriter w(config, ranks > 1 && parts.ok() ? *parts : weights, cache_len, options.weight_type,
                 options.cache_type, options.decode_chunk, options.layer_calls, ranks,
                 placement.ok() ? *placement : ResolvedPlacement{}, options.device_loop);
  return w.Run();
}

}  // namespace hexir::compiler::llama
