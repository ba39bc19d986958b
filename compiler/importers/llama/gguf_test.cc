// GGUF reader + llama mapping, on GGUF bytes built in memory by a small writer below.
#include <sys/resource.h>

#include <chrono>
#include <catch2/catch.hpp>
#include <cstring>

#include "compiler/importers/llama/Checkpoint.h"
#include "compiler/importers/llama/EmitModule.h"
#include "compiler/importers/llama/GgmlBlocks.h"
#include "compiler/importers/llama/Gguf.h"
#include "compiler/importers/llama/GgufLlama.h"

namespace hexir::compiler::llama {
namespace {

struct Tensor {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type = kGgmlF32;
  int64_t offset_override = -1;  // relative offset to write instead of the computed one
};

// Writes a GGUF file: metadata entries are pre-encoded (key + type + value), tensors get
// consecutive aligned data (filled with a byte pattern) unless offset_override says otherwise.
struct Writer {
  uint32_t version = 3;
  std::vector<std::string> kvs;
  std::vector<Tensor> tensors;
  uint64_t alignment = 32;

  static void Put(std::string& s, const void* p, size_t n) { s.append(static_cast<const char*>(p), n); }
  template <typename T> static std::string Raw(T v) { std::string s; Put(s, &v, sizeof(v)); return s; }
  static std::string Str(const std::string& v) { return Raw<uint64_t>(v.size()) + v; }
  void Kv(const std::string& key, GgufValueType t, const std::string& value) {
    kvs.push_back(Str(key) + Raw<uint32_t>(uint32_t(t)) + value);
  }
  void U32(const std::string& key, uint32_t v) { Kv(key, GgufValueType::kUint32, Raw(v)); }
  void F32(const std::string& key, float v) { Kv(key, GgufValueType::kFloat32, Raw(v)); }
  void S(const std::string& key, const std::string& v) { Kv(key, GgufValueType::kString, Str(v)); }

  static uint64_t Bytes(const Tensor& t) {
    uint64_t n = t.type == kGgmlF16 ? 2 : t.type == kGgmlF32 ? 4 : 1;
    for (uint64_t d : t.ne) n *= d;
    const GgmlBlockInfo* block = FindGgmlBlockType(t.type);
    return block ? n / uint64_t(block->block_elements) * uint64_t(block->block_bytes) : n;
  }
  std::string Build(std::vector<int64_t>* offsets = nullptr) const {
    std::string s = "GGUF" + Raw(version) + Raw<uint64_t>(tensors.size()) + Raw<uint64_t>(kvs.size());
    for (const std::string& kv : kvs) s += kv;
    uint64_t rel = 0;
    std::vector<uint64_t> rels;
    for (const Tensor& t : tensors) {
      s += Str(t.name) + Raw<uint32_t>(t.ne.size());
      for (uint64_t d : t.ne) s += Raw(d);
      uint64_t at = t.offset_override >= 0 ? uint64_t(t.offset_override) : rel;
      s += Raw(t.type) + Raw(at);
      rels.push_back(at);
      rel += (Bytes(t) + alignment - 1) / alignment * alignment;
    }
    s.resize((s.size() + alignment - 1) / alignment * alignment, '\0');
    size_t data = s.size();
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (offsets) offsets->push_back(int64_t(data + rels[i]));
    }
    s.resize(data + rel, '\x3c');
    return s;
  }
};

// dim 8, hidden 12, 2 layers, 2 heads, 1 kv head, vocab 10, context 16.
Writer TinyLlama(bool separate_classifier = false) {
  Writer w;
  w.S("general.architecture", "llama");
  w.U32("llama.embedding_length", 8);
  w.U32("llama.feed_forward_length", 12);
  w.U32("llama.block_count", 2);
  w.U32("llama.attention.head_count", 2);
  w.U32("llama.attention.head_count_kv", 1);
  w.U32("llama.context_length", 16);
  w.U32("llama.rope.dimension_count", 4);
  w.F32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.F32("llama.rope.freq_base", 10000.0f);
  std::string tokens = Writer::Raw<uint32_t>(uint32_t(GgufValueType::kString)) + Writer::Raw<uint64_t>(10);
  for (int i = 0; i < 10; ++i) tokens += Writer::Str("t" + std::to_string(i));
  w.Kv("tokenizer.ggml.tokens", GgufValueType::kArray, tokens);
  w.U32("tokenizer.ggml.bos_token_id", 1);
  w.U32("tokenizer.ggml.eos_token_id", 2);
  w.tensors.push_back({"token_embd.weight", {8, 10}, kGgmlF16});
  for (int l = 0; l < 2; ++l) {
    std::string b = "blk." + std::to_string(l) + ".";
    w.tensors.push_back({b + "attn_norm.weight", {8}});
    w.tensors.push_back({b + "attn_q.weight", {8, 8}, kGgmlF16});
    w.tensors.push_back({b + "attn_k.weight", {8, 4}});
    w.tensors.push_back({b + "attn_v.weight", {8, 4}});
    w.tensors.push_back({b + "attn_output.weight", {8, 8}});
    w.tensors.push_back({b + "ffn_norm.weight", {8}});
    w.tensors.push_back({b + "ffn_gate.weight", {8, 12}});
    w.tensors.push_back({b + "ffn_down.weight", {12, 8}});
    w.tensors.push_back({b + "ffn_up.weight", {8, 12}, kGgmlF16});
  }
  w.tensors.push_back({"output_norm.weight", {8}});
  if (separate_classifier) w.tensors.push_back({"output.weight", {8, 10}});
  return w;
}

StatusOr<GgufFile> Parse(const std::string& s) {
  return ParseGguf(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}
StatusOr<GgufLlama> Map(const std::string& s) {
  return ParseGgufLlama(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}
std::string Error(const std::string& s) {
  StatusOr<GgufLlama> m = Map(s);
  REQUIRE_FALSE(m.ok());
  return m.status().message();
}

TEST_CASE("every metadata value type, nested arrays, version 2 and 3") {
  for (uint32_t version : {2u, 3u}) {
    Writer w;
    w.version = version;
    w.Kv("u8", GgufValueType::kUint8, Writer::Raw<uint8_t>(200));
    w.Kv("i8", GgufValueType::kInt8, Writer::Raw<int8_t>(-5));
    w.Kv("u16", GgufValueType::kUint16, Writer::Raw<uint16_t>(60000));
    w.Kv("i16", GgufValueType::kInt16, Writer::Raw<int16_t>(-300));
    w.U32("u32", 4000000000u);
    w.Kv("i32", GgufValueType::kInt32, Writer::Raw<int32_t>(-70000));
    w.F32("f32", 0.25f);
    w.Kv("bool", GgufValueType::kBool, Writer::Raw<uint8_t>(1));
    w.S("str", "h\xc3\xa9llo");
    w.Kv("u64", GgufValueType::kUint64, Writer::Raw<uint64_t>(1ull << 40));
    w.Kv("i64", GgufValueType::kInt64, Writer::Raw<int64_t>(-(1ll << 40)));
    w.Kv("f64", GgufValueType::kFloat64, Writer::Raw<double>(-2.5));
    // [[1, 2], []] of int32
    std::string inner1 = Writer::Raw<uint32_t>(5) + Writer::Raw<uint64_t>(2) + Writer::Raw<int32_t>(1) + Writer::Raw<int32_t>(2);
    std::string inner2 = Writer::Raw<uint32_t>(5) + Writer::Raw<uint64_t>(0);
    w.Kv("nested", GgufValueType::kArray, Writer::Raw<uint32_t>(9) + Writer::Raw<uint64_t>(2) + inner1 + inner2);
    w.U32("general.alignment", 64);
    w.alignment = 64;
    w.tensors.push_back({"a", {3, 2}});
    w.tensors.push_back({"b", {5}, kGgmlF16});
    std::vector<int64_t> offsets;
    std::string bytes = w.Build(&offsets);
    StatusOr<GgufFile> f = Parse(bytes);
    REQUIRE(f.ok());
    CHECK(f->version == version);
    CHECK(f->alignment == 64);
    CHECK(f->data_offset % 64 == 0);
    CHECK(f->Find("u8")->u == 200);
    CHECK(f->Find("i8")->i == -5);
    CHECK(f->Find("u16")->u == 60000);
    CHECK(f->Find("i16")->i == -300);
    CHECK(f->Find("u32")->u == 4000000000u);
    CHECK(f->Find("i32")->i == -70000);
    CHECK(f->Find("f32")->f == 0.25);
    CHECK(f->Find("bool")->u == 1);
    CHECK(f->Find("str")->s == "h\xc3\xa9llo");
    CHECK(f->Find("u64")->u == (1ull << 40));
    CHECK(f->Find("i64")->i == -(1ll << 40));
    CHECK(f->Find("f64")->f == -2.5);
    const GgufValue* n = f->Find("nested");
    REQUIRE(n->array.size() == 2);
    CHECK(n->elem_type == GgufValueType::kArray);
    REQUIRE(n->array[0].array.size() == 2);
    CHECK(n->array[0].array[1].i == 2);
    CHECK(n->array[1].array.empty());
    CHECK(f->Find("missing") == nullptr);
    REQUIRE(f->tensors.size() == 2);
    CHECK(f->FindTensor("a")->ne == std::vector<uint64_t>{3, 2});
    CHECK(f->FindTensor("a")->byte_size == 24);
    CHECK(f->FindTensor("a")->file_offset == offsets[0]);
    CHECK(f->FindTensor("b")->byte_size == 10);
    CHECK(f->FindTensor("b")->file_offset == offsets[1]);
    CHECK(f->FindTensor("b")->file_offset - f->data_offset == 64);
  }
}

TEST_CASE("llama mapping: config, LlamaWeights order, GGUF offsets and types") {
  for (bool separate : {false, true}) {
    Writer w = TinyLlama(separate);
    std::vector<int64_t> offsets;
    std::string bytes = w.Build(&offsets);
    StatusOr<GgufLlama> m = Map(bytes);
    REQUIRE(m.ok());
    const LlamaConfig& c = m->config;
    CHECK(c.dim == 8);
    CHECK(c.hidden_dim == 12);
    CHECK(c.n_layers == 2);
    CHECK(c.n_heads == 2);
    CHECK(c.n_kv_heads == 1);
    CHECK(c.vocab_size == 10);
    CHECK(c.seq_len == 16);
    CHECK(c.shared_classifier == !separate);
    // Same names/shapes as the llama2.c table; offsets and types from the GGUF infos (the
    // writer's tensor order is the per-layer argument order).
    std::vector<WeightTensor> ref = LlamaWeights(c);
    REQUIRE(m->weights.size() == ref.size());
    REQUIRE(m->weights.size() == w.tensors.size());
    for (size_t i = 0; i < ref.size(); ++i) {
      CHECK(m->weights[i].name == ref[i].name);
      CHECK(m->weights[i].dims == ref[i].dims);
      CHECK(m->weights[i].offset == offsets[i]);
      CHECK((m->weights[i].type == hal::ElementType::kF16) == (w.tensors[i].type == kGgmlF16));
    }
    CHECK(m->weights[0].byte_size() == 2 * 80);
    CHECK(m->weights[2].name == "layer0.wq");
    CHECK(m->weights.back().name == (separate ? "classifier" : "rms_final"));
  }
}

TEST_CASE("metadata eps/theta reach the program; defaults keep the llama2.c text") {
  Writer w = TinyLlama();
  StatusOr<GgufLlama> m = Map(w.Build());
  REQUIRE(m.ok());
  LlamaConfig plain = m->config;
  plain.rms_eps = 1e-5f;
  plain.rope_theta = 10000.0f;
  CHECK(EmitLlamaModule(m->config) == EmitLlamaModule(plain));
  CHECK(EmitLlamaModule(plain).find("arith.constant 1.0e-05 : f32") != std::string::npos);

  Writer w2 = TinyLlama();
  w2.kvs.erase(w2.kvs.begin() + 8, w2.kvs.begin() + 10);  // eps, theta
  w2.F32("llama.attention.layer_norm_rms_epsilon", 1e-6f);
  w2.F32("llama.rope.freq_base", 500000.0f);
  m = Map(w2.Build());
  REQUIRE(m.ok());
  CHECK(m->config.rms_eps == 1e-6f);
  CHECK(m->config.rope_theta == 500000.0f);
  std::string text = EmitLlamaModule(m->config);
  CHECK(text.find("arith.constant 1.0e-06 : f32") != std::string::npos);
  CHECK(text.find("arith.constant 5.0e+05 : f32") != std::string::npos);
  CHECK(text.find("1.0e-05") == std::string::npos);
}

TEST_CASE("the program stops at the file's BOS and EOS ids, not fixed 1 and 2") {
  Writer w = TinyLlama();
  w.kvs.erase(w.kvs.end() - 2, w.kvs.end());
  w.U32("tokenizer.ggml.bos_token_id", 8);
  w.U32("tokenizer.ggml.eos_token_id", 9);
  StatusOr<GgufLlama> m = Map(w.Build());
  REQUIRE(m.ok());
  CHECK(m->config.bos_id == 8);
  CHECK(m->config.eos_id == 9);
  std::string text = EmitLlamaModule(m->config);
  CHECK(text.find("arith.constant 8 : i64") != std::string::npos);
  CHECK(text.find("arith.constant 9 : i64") != std::string::npos);
  LlamaConfig fixed = m->config;
  fixed.bos_id = 1;
  fixed.eos_id = 2;
  CHECK(EmitLlamaModule(fixed) != text);
}

TEST_CASE("every truncation of a valid file is a named error, never a crash") {
  std::string bytes = TinyLlama(true).Build();
  REQUIRE(Map(bytes).ok());
  for (size_t n = 0; n < bytes.size(); ++n) {
    StatusOr<GgufLlama> m = Map(bytes.substr(0, n));
    REQUIRE_FALSE(m.ok());
    CHECK(m.status().message().rfind("GGUF: ", 0) == 0);
  }
  // Cut inside the last tensor's data: names the tensor and its offset.
  std::string msg = Error(bytes.substr(0, bytes.size() - 1));
  CHECK_THAT(msg, Catch::Contains("tensor 'output.weight'") && Catch::Contains("runs past the end of the file"));
  // Cut inside the metadata: names the key.
  msg = Error(bytes.substr(0, 60));
  CHECK_THAT(msg, Catch::Contains("metadata") && Catch::Contains("offset"));
}

TEST_CASE("malformed headers") {
  std::string bytes = TinyLlama().Build();
  std::string bad = bytes;
  bad[0] = 'X';
  CHECK_THAT(Error(bad), Catch::Contains("bad magic at offset 0: expected 'GGUF' (47 47 55 46), got 58 47 55 46"));
  CHECK_THAT(Error("GG"), Catch::Contains("shorter than the 4-byte magic"));
  Writer v1 = TinyLlama();
  v1.version = 1;
  CHECK_THAT(Error(v1.Build()), Catch::Contains("version 1 at offset 4 is not supported"));
  Writer be = TinyLlama();
  be.version = 0x03000000;
  CHECK_THAT(Error(be.Build()), Catch::Contains("big-endian"));

  // Counts that cannot fit are refused before allocating.
  std::string huge = bytes;
  uint64_t n = 1ull << 60;
  std::memcpy(&huge[16], &n, 8);
  CHECK_THAT(Error(huge), Catch::Contains("metadata count 1152921504606846976 at offset 16"));
  huge = bytes;
  std::memcpy(&huge[8], &n, 8);
  CHECK_THAT(Error(huge), Catch::Contains("tensor count"));
  // A string length beyond the file (the first key's length at offset 24).
  huge = bytes;
  uint64_t len = ~0ull;
  std::memcpy(&huge[24], &len, 8);
  CHECK_THAT(Error(huge), Catch::Contains("metadata key #0 at offset 24: string length 18446744073709551615"));

  Writer arr = TinyLlama();
  arr.Kv("big", GgufValueType::kArray, Writer::Raw<uint32_t>(10) + Writer::Raw<uint64_t>(1ull << 62));
  CHECK_THAT(Error(arr.Build()), Catch::Contains("metadata 'big'") && Catch::Contains("array of 4611686018427387904 uint64"));
  Writer type = TinyLlama();
  type.Kv("odd", GgufValueType(13), "");
  CHECK_THAT(Error(type.Build()), Catch::Contains("metadata 'odd'") && Catch::Contains("unknown value type 13"));
  Writer dup = TinyLlama();
  dup.U32("llama.block_count", 2);
  CHECK_THAT(Error(dup.Build()), Catch::Contains("'llama.block_count'") && Catch::Contains("duplicate key"));
  Writer align = TinyLlama();
  align.U32("general.alignment", 24);
  CHECK_THAT(Error(align.Build()), Catch::Contains("'general.alignment'") && Catch::Contains("power of two"));
  Writer b = TinyLlama();
  b.Kv("flag", GgufValueType::kBool, Writer::Raw<uint8_t>(7));
  CHECK_THAT(Error(b.Build()), Catch::Contains("metadata 'flag'") && Catch::Contains("bool value is 7"));
  // Nesting deeper than 8 levels.
  std::string deep = Writer::Raw<uint32_t>(5) + Writer::Raw<uint64_t>(0);
  for (int i = 0; i < 9; ++i) deep = Writer::Raw<uint32_t>(9) + Writer::Raw<uint64_t>(1) + deep;
  Writer d = TinyLlama();
  d.Kv("deep", GgufValueType::kArray, deep);
  CHECK_THAT(Error(d.Build()), Catch::Contains("nested deeper than 8"));
}

TEST_CASE("malformed tensors: out of range, misaligned, dims, unsupported type") {
  Writer out = TinyLlama();
  out.tensors[3].offset_override = 1 << 20;
  CHECK_THAT(Error(out.Build()), Catch::Contains("tensor 'blk.0.attn_k.weight' (f32") &&
                                     Catch::Contains("data at file offset") && Catch::Contains("runs past the end"));
  Writer mis = TinyLlama();
  mis.tensors[1].offset_override = 4;
  CHECK_THAT(Error(mis.Build()), Catch::Contains("tensor 'blk.0.attn_norm.weight'") &&
                                     Catch::Contains("data offset 4 is not a multiple of the alignment 32"));
  Writer over = TinyLlama();
  over.tensors[0].ne = {1ull << 40, 1ull << 40};
  CHECK_THAT(Error(over.Build()), Catch::Contains("tensor 'token_embd.weight'") && Catch::Contains("overflows"));
  Writer zero = TinyLlama();
  zero.tensors[0].ne = {8, 0};
  CHECK_THAT(Error(zero.Build()), Catch::Contains("dimension 1 is 0"));
  Writer five = TinyLlama();
  five.tensors[0].ne = {1, 1, 1, 1, 1};
  CHECK_THAT(Error(five.Build()), Catch::Contains("has 5 dimensions"));
  Writer q = TinyLlama();
  q.tensors[7].type = 7;  // q5_1: not read
  q.tensors[7].ne = {32, 12};
  CHECK_THAT(Error(q.Build()), Catch::Contains("tensor 'blk.0.ffn_gate.weight'") &&
                                   Catch::Contains("has type q5_1 (7); only f32, f16, q4_0, q4_1, q5_0, q8_0, q4_k, "
                                                   "q5_k, q6_k, bf16 are supported"));
}

TEST_CASE("a K-quant row that is not a multiple of 256 values is refused by the reader, naming the tensor") {
  Writer k = TinyLlama();
  k.tensors[7].type = uint32_t(GgmlBlockType::kQ4_K);  // ffn_gate: rows of 8 values
  CHECK_THAT(Error(k.Build()), Catch::Contains("tensor 'blk.0.ffn_gate.weight'") &&
                                   Catch::Contains("(q4_k) has ne[0] = 8, not a multiple of its block size 256"));
  Writer legacy = TinyLlama();
  legacy.tensors[8].type = uint32_t(GgmlBlockType::kQ8_0);  // ffn_down: rows of 12 values
  CHECK_THAT(Error(legacy.Build()), Catch::Contains("tensor 'blk.0.ffn_down.weight'") &&
                                        Catch::Contains("(q8_0) has ne[0] = 12, not a multiple of its block size 32"));
}

TEST_CASE("block-quantized and bf16 matrices are kept as stored; the program decodes them in its kernels") {
  // dim 64, hidden 256, 1 layer, 2 heads, vocab 10: rows of 64 take the legacy types, rows of
  // 256 (ffn_down) a K-quant.
  Writer w;
  w.S("general.architecture", "llama");
  w.U32("llama.embedding_length", 64);
  w.U32("llama.feed_forward_length", 256);
  w.U32("llama.block_count", 1);
  w.U32("llama.attention.head_count", 2);
  w.U32("llama.context_length", 16);
  const uint32_t q8 = uint32_t(GgmlBlockType::kQ8_0), bf16 = uint32_t(GgmlBlockType::kBF16);
  w.tensors = {{"token_embd.weight", {64, 10}, q8},
               {"blk.0.attn_norm.weight", {64}, bf16},
               {"blk.0.attn_q.weight", {64, 64}, uint32_t(GgmlBlockType::kQ4_0)},
               {"blk.0.attn_k.weight", {64, 64}, uint32_t(GgmlBlockType::kQ4_1)},
               {"blk.0.attn_v.weight", {64, 64}, uint32_t(GgmlBlockType::kQ5_0)},
               {"blk.0.attn_output.weight", {64, 64}, bf16},
               {"blk.0.ffn_norm.weight", {64}},
               {"blk.0.ffn_gate.weight", {64, 256}, kGgmlF16},
               {"blk.0.ffn_down.weight", {256, 64}, uint32_t(GgmlBlockType::kQ6_K)},
               {"blk.0.ffn_up.weight", {64, 256}, q8},
               {"output_norm.weight", {64}}};
  std::string bytes = w.Build();
  StatusOr<GgufLlama> m = Map(bytes);
  REQUIRE(m.ok());
  const std::vector<WeightTensor>& t = m->weights;
  const char* kept[] = {"q8_0", nullptr, "q4_0", "q4_1", "q5_0", "bf16", nullptr, nullptr, "q6_k", "q8_0", nullptr};
  REQUIRE(t.size() == 11);
  for (size_t i = 0; i < t.size(); ++i) {
    INFO(t[i].name);
    CHECK((t[i].kept ? std::string(t[i].kept->name) : "") == (kept[i] ? kept[i] : ""));
  }
  CHECK(t[0].ArgumentDims() == std::vector<int64_t>{10, 2 * 34});
  CHECK(t[0].byte_size() == 10 * 2 * 34);
  CHECK(t[1].type == hal::ElementType::kBF16);  // a 1-D bf16 norm is converted at upload
  CHECK(t[5].ArgumentDims() == std::vector<int64_t>{64, 64});
  CHECK(t[8].ArgumentDims() == std::vector<int64_t>{64, 210});
  std::string text = EmitLlamaModule(m->config, t);
  CHECK_THAT(text, Catch::Contains("%w_0: tensor<10x68xi8>") && Catch::Contains("%w_2: tensor<64x36xi8>") &&
                       Catch::Contains("%w_5: tensor<64x64xbf16>") && Catch::Contains("%w_7: tensor<256x64xf32>") &&
                       Catch::Contains("%w_8: tensor<64x210xi8>") && Catch::Contains("%w_1: tensor<64xf32>"));
  // The matmuls view x as [blocks][block size] and decode in the loop body; nothing widens a
  // whole matrix (no kernel's output has a weight matrix's shape).
  CHECK_THAT(text, Catch::Contains("tensor<256xf32> into tensor<1x256xf32>") &&
                       Catch::Contains("tensor<64xf32> into tensor<2x32xf32>") &&
                       Catch::Contains("arith.bitcast") && Catch::Contains("arith.extf") &&
                       !Catch::Contains("-> tensor<64x64xf32>") && !Catch::Contains("-> tensor<10x64xf32>"));
  CHECK_THAT(text, !Catch::Contains("@prefill_layer_1"));

  // A second layer whose attn_q is q8_0 (layer 0's is q4_0) gets its own prefill function.
  Writer two = w;
  two.U32("llama.block_count", 2);
  two.kvs.erase(two.kvs.begin() + 3);  // the first block_count
  for (size_t i = 1; i <= 9; ++i) {
    Tensor t = w.tensors[i];
    t.name.replace(4, 1, "1");
    if (t.name == "blk.1.attn_q.weight") t.type = q8;
    two.tensors.push_back(t);
  }
  bytes = two.Build();
  StatusOr<GgufLlama> m2 = Map(bytes);
  REQUIRE(m2.ok());
  text = EmitLlamaModule(m2->config, m2->weights);
  CHECK_THAT(text, Catch::Contains("func.func private @prefill_layer(") &&
                       Catch::Contains("func.func private @prefill_layer_1(") &&
                       Catch::Contains("func.call @prefill_layer_1("));
}

TEST_CASE("llama mapping errors name the key or tensor") {
  Writer arch = TinyLlama();
  arch.kvs[0] = "";
  arch.kvs.erase(arch.kvs.begin());
  arch.S("general.architecture", "gpt2");
  CHECK_THAT(Error(arch.Build()), Catch::Contains("'gpt2'; only \"llama\""));
  Writer miss = TinyLlama();
  miss.kvs.erase(miss.kvs.begin() + 3);  // block_count
  CHECK_THAT(Error(miss.Build()), Catch::Contains("required metadata 'llama.block_count' is missing"));
  Writer neg = TinyLlama();
  neg.kvs.erase(neg.kvs.begin() + 1);
  neg.Kv("llama.embedding_length", GgufValueType::kInt32, Writer::Raw<int32_t>(-8));
  CHECK_THAT(Error(neg.Build()), Catch::Contains("'llama.embedding_length'") && Catch::Contains("int32 -8"));
  Writer gqa = TinyLlama();
  gqa.kvs.erase(gqa.kvs.begin() + 5);
  gqa.U32("llama.attention.head_count_kv", 3);
  CHECK_THAT(Error(gqa.Build()), Catch::Contains("not divisible by llama.attention.head_count_kv 3"));
  Writer rope = TinyLlama();
  rope.kvs.erase(rope.kvs.begin() + 7);
  rope.U32("llama.rope.dimension_count", 2);
  CHECK_THAT(Error(rope.Build()), Catch::Contains("'llama.rope.dimension_count'") && Catch::Contains("whole head (4)"));
  Writer eos = TinyLlama();
  eos.kvs.pop_back();
  eos.U32("tokenizer.ggml.eos_token_id", 10);
  CHECK_THAT(Error(eos.Build()), Catch::Contains("'tokenizer.ggml.eos_token_id'") &&
                                     Catch::Contains("is 10; it must be a token id in 0..9"));
  Writer missing = TinyLlama();
  missing.tensors.erase(missing.tensors.begin() + 5);
  CHECK_THAT(Error(missing.Build()), Catch::Contains("tensor 'blk.0.attn_output.weight' is missing"));
  Writer shape = TinyLlama();
  shape.tensors[3].ne = {4, 8};  // transposed attn_k
  CHECK_THAT(Error(shape.Build()), Catch::Contains("tensor 'blk.0.attn_k.weight'") &&
                                       Catch::Contains("has ne [4, 8], expected [8, 4]"));
  Writer extra = TinyLlama();
  extra.tensors.push_back({"rope_freqs.weight", {2}});
  CHECK_THAT(Error(extra.Build()), Catch::Contains("tensor 'rope_freqs.weight'") && Catch::Contains("not part of"));
  Writer vocab = TinyLlama();
  vocab.tensors[0].ne = {8, 11};
  CHECK_THAT(Error(vocab.Build()), Catch::Contains("'token_embd.weight'") && Catch::Contains("expected [8, 10]"));
}

// A TinyLlama whose llama.block_count says `blocks`, padded to `file_bytes`.
std::string ClaimingBlocks(uint32_t blocks, size_t file_bytes) {
  Writer w = TinyLlama();
  w.kvs.erase(w.kvs.begin() + 3);  // block_count
  w.U32("llama.block_count", blocks);
  std::string s = w.Build();
  s.resize(std::max(s.size(), file_bytes), '\0');
  return s;
}

long MaxRssKiB() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

TEST_CASE("a block count the file cannot hold fails fast, naming llama.block_count, without allocating") {
  for (uint32_t blocks : {1000000u, 0x7fffffffu}) {
    INFO("blocks " << blocks);
    std::string file = ClaimingBlocks(blocks, 1 << 20);
    long before = MaxRssKiB();
    auto start = std::chrono::steady_clock::now();
    std::string error = Error(file);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK_THAT(error, Catch::Contains("metadata 'llama.block_count' at offset"));
    CHECK_THAT(error, Catch::Contains(StrCat("is ", blocks, ", which needs at least ", 9 * uint64_t(blocks),
                                             " weight tensors, but the file has 20")));
    CHECK(seconds < 1.0);
    CHECK(MaxRssKiB() - before < 64 * 1024);  // no table of millions of tensors was built
  }
}

TEST_CASE("metadata counts larger than the file are refused before anything is allocated") {
  Writer w = TinyLlama();
  std::string file = w.Build();
  // The tensor count (offset 8) and metadata count (offset 16) claim 2^40 entries.
  std::string tensors = file, kvs = file;
  uint64_t huge = uint64_t{1} << 40;
  std::memcpy(&tensors[8], &huge, 8);
  std::memcpy(&kvs[16], &huge, 8);
  CHECK_THAT(Parse(tensors).status().message(), Catch::Contains("tensor count 1099511627776 at offset 8 cannot fit"));
  CHECK_THAT(Parse(kvs).status().message(), Catch::Contains("metadata count 1099511627776 at offset 16 cannot fit"));
  // An array length claiming more elements than bytes left.
  Writer arr = TinyLlama();
  arr.Kv("x.big", GgufValueType::kArray,
         Writer::Raw<uint32_t>(uint32_t(GgufValueType::kUint8)) + Writer::Raw<uint64_t>(uint64_t{1} << 50));
  CHECK_THAT(Parse(arr.Build()).status().message(), Catch::Contains("array of 1125899906842624"));
}

}  // namespace
}  // namespace hexir::compiler::llama
