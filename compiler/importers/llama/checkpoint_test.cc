// Header parsing, size validation, the weight table (order and offsets recomputed here from
// the README's layout) and the emitted program's structure.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "compiler/importers/llama/Checkpoint.h"
#include "compiler/importers/llama/EmitModule.h"

namespace hexir::compiler::llama {
namespace {

std::vector<uint8_t> Header(std::vector<int32_t> h, size_t total) {
  std::vector<uint8_t> b(std::max(total, size_t(28)));
  std::memcpy(b.data(), h.data(), 28);
  b.resize(total);
  return b;
}

// dim 8, hidden 12, 3 layers, 4 heads, 2 kv heads (head 2, kv_dim 4), vocab 10, seq 6.
size_t Floats(bool shared) {
  size_t D = 8, F = 12, L = 3, KV = 4, V = 10, S = 6, HS = 2;
  return V * D + L * (D + D * D + 2 * KV * D + D * D + D + 3 * F * D) + D + S * HS + (shared ? 0 : V * D);
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_CASE("a valid header: config and weight table in argument order with file offsets") {
  for (bool shared : {true, false}) {
    size_t bytes = 28 + 4 * Floats(shared);
    auto b = Header({8, 12, 3, 4, 2, shared ? 10 : -10, 6}, bytes);
    auto c = ParseLlamaHeader(b.data(), b.size());
    REQUIRE(c.ok());
    CHECK(c->dim == 8);
    CHECK(c->kv_dim() == 4);
    CHECK(c->vocab_size == 10);
    CHECK(c->shared_classifier == shared);
    CHECK(LlamaFileBytes(*c) == int64_t(bytes));
    auto w = LlamaWeights(*c);
    REQUIRE(w.size() == (shared ? 29u : 30u));
    CHECK(w[0].name == "token_embedding");
    CHECK(w[0].offset == 28);
    // Kind-major in the file: all rms_att, then all wq, ...
    CHECK(w[1].name == "layer0.rms_att");
    CHECK(w[1].offset == 28 + 4 * 80);
    CHECK(w[10].name == "layer1.rms_att");
    CHECK(w[10].offset == 28 + 4 * (80 + 8));
    CHECK(w[2].name == "layer0.wq");
    CHECK(w[2].offset == 28 + 4 * (80 + 3 * 8));
    CHECK(w[3].dims == std::vector<int64_t>{4, 8});   // wk [kv_dim][dim]
    CHECK(w[7].name == "layer0.w1");
    CHECK(w[8].dims == std::vector<int64_t>{8, 12});  // w2 [dim][hidden]
    CHECK(w[28].name == "rms_final");
    CHECK(w[28].offset == int64_t(28 + 4 * (Floats(true) - 8 - 12)));
    if (!shared) {
      CHECK(w[29].name == "classifier");
      CHECK(w[29].offset + w[29].byte_size() == int64_t(bytes));
    }
  }
}

TEST_CASE("header errors name the field, its offset, or the array that does not fit") {
  auto short_file = Header({8, 12, 3, 4, 2, 10, 6}, 20);
  auto s = ParseLlamaHeader(short_file.data(), short_file.size());
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.status().message(), Catch::Contains("shorter than the 28-byte header"));

  auto zero = Header({8, 12, 0, 4, 2, 10, 6}, 10000);
  auto z = ParseLlamaHeader(zero.data(), zero.size());
  REQUIRE_FALSE(z.ok());
  CHECK_THAT(z.status().message(), Catch::Contains("'n_layers' at offset 8 is 0"));

  auto odd = Header({8, 12, 3, 3, 1, 10, 6}, 10000);
  CHECK_THAT(ParseLlamaHeader(odd.data(), odd.size()).status().message(),
             Catch::Contains("not divisible by n_heads"));
  auto gqa = Header({8, 12, 3, 4, 3, 10, 6}, 10000);
  CHECK_THAT(ParseLlamaHeader(gqa.data(), gqa.size()).status().message(),
             Catch::Contains("not divisible by n_kv_heads"));

  // Everything but the separate classifier's last float.
  size_t bytes = 28 + 4 * Floats(false) - 4;
  auto cut = Header({8, 12, 3, 4, 2, -10, 6}, bytes);
  auto t = ParseLlamaHeader(cut.data(), cut.size());
  REQUIRE_FALSE(t.ok());
  CHECK_THAT(t.status().message(), Catch::Contains("'classifier' (offset"));
  CHECK_THAT(t.status().message(), Catch::Contains("does not fit"));
}

// The array named is the first in file order (LlamaWeights' lowest offset) that ends past the file, for a
// cut anywhere; and a corrupt n_layers is named without listing its layers (2^31 - 1 layers
// took gigabytes and ended in std::bad_alloc).
TEST_CASE("a truncated checkpoint names the first array past its end, even with 2^31 - 1 layers") {
  const std::vector<int32_t> fields = {8, 12, 3, 4, 2, -10, 6};
  const size_t full = 28 + 4 * Floats(false);
  auto whole = Header(fields, full);
  auto config = ParseLlamaHeader(whole.data(), whole.size());
  REQUIRE(config.ok());
  std::vector<WeightTensor> weights = LlamaWeights(*config);
  for (size_t cut = 28; cut < full; cut += 12) {
    auto file = Header(fields, cut);
    auto r = ParseLlamaHeader(file.data(), file.size());
    REQUIRE_FALSE(r.ok());
    const WeightTensor* first = nullptr;  // lowest offset among those past the cut
    for (const WeightTensor& w : weights)
      if (w.offset + w.byte_size() > int64_t(cut) && (!first || w.offset < first->offset)) first = &w;
    REQUIRE(first);
    std::string expected = "'" + first->name + "' (offset " + std::to_string(first->offset) + ", " +
                           std::to_string(first->byte_size()) + " bytes) does not fit";
    INFO("cut at " << cut);
    CHECK_THAT(r.status().message(), Catch::EndsWith(expected));
  }
  auto layers = Header({8, 12, 0x7fffffff, 2, 2, 10, 6}, 4096);
  auto l = ParseLlamaHeader(layers.data(), layers.size());
  REQUIRE_FALSE(l.ok());
  CHECK_THAT(l.status().message(), Catch::EndsWith("'layer117.rms_att' (offset 4092, 32 bytes) does not fit"));
}

TEST_CASE("a header whose implied size overflows 64 bits is refused, naming the fields") {
  // Every field is a valid int32; dim^2 * n_layers alone is about 2^91.
  const int32_t big = 0x7fffffff;
  auto huge = Header({1 << 30, big, big, 1, 1, big, big}, 4096);
  CHECK(LlamaFileBytes(LlamaConfig{int64_t{1} << 30, big, big, 1, 1, big, big}) == -1);
  auto h = ParseLlamaHeader(huge.data(), huge.size());
  REQUIRE_FALSE(h.ok());
  CHECK(h.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(h.status().message(), Catch::Contains("dim 1073741824, hidden_dim 2147483647, n_layers 2147483647"));
  CHECK_THAT(h.status().message(), Catch::Contains("more than 2^63 bytes of arrays (the size overflows 64 bits)"));
  // Sizes just inside 64 bits but far beyond the file: refused by the file-size check.
  auto large = Header({1 << 14, 1 << 14, 1 << 10, 2, 2, 1 << 14, 1 << 10}, 4096);
  auto l = ParseLlamaHeader(large.data(), large.size());
  REQUIRE_FALSE(l.ok());
  CHECK_THAT(l.status().message(), Catch::Contains("file has 4096 bytes but the header"));
}

TEST_CASE("the emitted program: prefill layer calls, a chunked decode loop calling @layer per layer, the streaming pair") {
  auto b = Header({8, 12, 3, 4, 2, -10, 6}, 28 + 4 * Floats(false));
  auto c = ParseLlamaHeader(b.data(), b.size());
  REQUIRE(c.ok());
  EmitOptions options{5};
  options.decode_chunk = 3;
  const std::string module = EmitLlamaModule(*c, options);
  // @generate (and what precedes it); the streaming pair follows it.
  const size_t streaming = module.find("func.func @generate_begin(");
  REQUIRE(streaming != std::string::npos);
  const std::string text = module.substr(0, streaming), pair = module.substr(streaming);
  // Decode layers are calls of one @layer (hexir-compile inlines them: one segment per step).
  CHECK(Count(text, "func.func private @layer(%x: tensor<8xf32>, %kc: tensor<5x4xf32>, %vc: tensor<5x4xf32>, %pos: i64") == 1);
  CHECK(Count(text, "func.call @layer(") == 3);
  CHECK(Count(text, ", %spos, ") == 3);  // each call at the step position
  CHECK(Count(text, "%chunk = arith.constant 3 : i64") == 1);
  CHECK(Count(text, "scf.for %j = ") == 1);
  // One host read per chunk (+ one after prefill), none per step: of the chunk's snapshot of
  // the stop flag it received (live = 1 - stop), never of the flag the chunk's steps write.
  CHECK(Count(text, "%live1 = tensor.extract ") == 1);
  CHECK(Count(text, "tensor.extract %f#1[%c0] : tensor<1xi64>") == 0);
  CHECK(Count(text, "%stop0_h = tensor.extract") == 1);
  // One rotary body for q and one for k in @layer, at its position argument.
  CHECK(Count(text, "arith.sitofp %pos : i64 to f32") == 2);
  CHECK(Count(text, "arith.sitofp %spos : i64 to f32") == 0);
  CHECK(Count(text, "func.func private @prefill_layer(%x: tensor<?x8xf32>") == 1);
  CHECK(Count(text, "func.call @prefill_layer(") == 3);
  CHECK(Count(text, "func.func @cache_len() -> tensor<1xi64>") == 1);
  CHECK(Count(text, "scf.while") == 1);
  CHECK(Count(text, "func.func @generate(%prompt: tensor<?xi64>, %max_new: i64") == 1);
  CHECK(Count(text, "%w_29: tensor<10x8xf32>") == 1);  // the separate classifier
  CHECK(Count(text, "tensor<5x4xf32>") > 0);           // KV cache: 5 positions x kv_dim 4
  CHECK(Count(text, "%cache_len = arith.constant 5 : i64") == 1);
  CHECK(Count(text, "%sampler_floats") == 0);  // @generate is greedy
  // The streaming pair: prefill + first token, then one chunk per call (no host loop), both
  // sampled, with the same weights after the sampler arguments and the state.
  CHECK(Count(pair, "func.func @generate_begin(%prompt: tensor<?xi64>, %max_new: i64, %sampler_floats: "
                    "tensor<4xf32>, %sampler_ints: tensor<3xi64>, %w_0: tensor<10x8xf32>") == 1);
  CHECK(Count(pair, "func.func @generate_chunk(%prompt: tensor<?xi64>, %max_new: i64, %sampler_floats: "
                    "tensor<4xf32>, %sampler_ints: tensor<3xi64>, %bpos: i64, %bn: i64, %btok: tensor<i64>") == 1);
  CHECK(Count(pair, "func.call @prefill_layer(") == 3);  // in @generate_begin only
  CHECK(Count(pair, "scf.for %j = ") == 1);
  CHECK(Count(pair, "scf.while") == 0);
  CHECK(Count(pair, "%w_29: tensor<10x8xf32>") == 2);
  // The sampler runs once after the prefill and once per step: Philox's first multiplier.
  CHECK(Count(pair, "arith.constant 3528531795 : i64") == 2);
  CHECK(Count(pair, "func.call @layer(") == 3);  // in @generate_chunk

  // Written out (--inline-layers): no layer function, 3 rotary bodies for q and 3 for k at
  // the step position in @generate.
  options.layer_calls = false;
  const std::string inlined_module = EmitLlamaModule(*c, options);
  const std::string inlined = inlined_module.substr(0, inlined_module.find("func.func @generate_begin("));
  CHECK(Count(inlined_module, "func.call @layer(") == 0);
  CHECK(Count(inlined_module, "func.func private @layer(") == 0);
  CHECK(Count(inlined, "arith.sitofp %spos : i64 to f32") == 6);
  CHECK(Count(inlined, "func.call @prefill_layer(") == 3);
}

LlamaConfig Shape(int64_t dim, int64_t hidden, int64_t layers, int64_t heads, int64_t vocab, int64_t seq) {
  LlamaConfig c;
  c.dim = dim;
  c.hidden_dim = hidden;
  c.n_layers = layers;
  c.n_heads = c.n_kv_heads = heads;
  c.vocab_size = vocab;
  c.seq_len = seq;
  return c;
}

TEST_CASE("hexir-import's default: the device loop for a small model that qualifies, @layer calls kept in the streaming pair") {
  // At most 0.5 Mi weights (SmallDecodeModel): stories260K's shape is small; stories15M's, a
  // 2.3 Mi-weight llama and random768's are not (the CPU measured slower with the device loop).
  LlamaConfig stories = Shape(64, 172, 5, 8, 512, 512);
  stories.n_kv_heads = 4;
  CHECK(SmallDecodeModel(stories));
  CHECK_FALSE(SmallDecodeModel(Shape(288, 768, 6, 6, 32000, 256)));
  CHECK_FALSE(SmallDecodeModel(Shape(128, 384, 6, 4, 4096, 512)));
  CHECK_FALSE(SmallDecodeModel(Shape(768, 2048, 12, 12, 32000, 256)));
  auto b = Header({8, 12, 3, 4, 2, -10, 6}, 28 + 4 * Floats(false));
  auto c = ParseLlamaHeader(b.data(), b.size());
  REQUIRE(c.ok());
  EmitOptions options{5};
  options.small_model_device_loop = true;
  const std::string module = EmitLlamaModule(*c, options);
  const size_t streaming = module.find("func.func @generate_begin(");
  REQUIRE(streaming != std::string::npos);
  const std::string text = module.substr(0, streaming), pair = module.substr(streaming);
  // @generate: the device loop (its step limit), its layers written out; the streaming pair's
  // chunks still call @layer.
  CHECK(Count(text, "hexir.max_iterations = 5 : i64") == 1);
  CHECK(Count(text, "scf.for %j = ") == 0);
  CHECK(Count(text, "func.call @layer(") == 0);
  CHECK(Count(module, "func.func private @layer(") == 1);
  CHECK(Count(pair, "func.call @layer(") == 3);
  CHECK(Count(pair, "hexir.max_iterations") == 0);
  // The same with device_loop set (--device-loop), minus nothing: the module is equal.
  EmitOptions forced{5};
  forced.device_loop = true;
  CHECK(EmitLlamaModule(*c, forced) == module);
  // Not qualifying (an f16 cache: the device loop's cache write is f32 only; two ranks): the
  // chunked loop, as without the option.
  for (int variant = 0; variant < 2; ++variant) {
    INFO(variant);
    EmitOptions o = options, reference{5};
    if (variant == 0) o.cache_type = reference.cache_type = "f16";
    if (variant == 1) o.tensor_parallel = reference.tensor_parallel = 2;
    CHECK(EmitLlamaModule(*c, o) == EmitLlamaModule(*c, reference));
  }
  // A model over the limit: the chunked loop.
  const std::string large = EmitLlamaModule(Shape(288, 768, 6, 6, 32000, 256), options);
  CHECK(Count(large, "hexir.max_iterations") == 0);
  CHECK(Count(large, "scf.for %j = ") == 2);  // @generate's chunk and @generate_chunk's
}

TEST_CASE("a narrow KV cache: f16/bf16 cache tensors everywhere, rows rounded once, widened where attention reads") {
  auto b = Header({8, 12, 3, 4, 2, -10, 6}, 28 + 4 * Floats(false));
  auto c = ParseLlamaHeader(b.data(), b.size());
  REQUIRE(c.ok());
  for (const std::string type : {"f16", "bf16"}) {
    INFO(type);
    EmitOptions options{5};
    options.cache_type = type;
    REQUIRE(CheckElementTypes(options).ok());
    const std::string module = EmitLlamaModule(*c, options);
    const std::string cache = "tensor<5x4x" + type + ">";
    CHECK(Count(module, "tensor<5x4xf32>") == 0);  // no f32 cache left
    CHECK(Count(module, "func.func private @layer(%x: tensor<8xf32>, %kc: " + cache + ", %vc: " + cache) == 1);
    // Decode writes its K and V rows rounded (a truncf kernel before each insert_slice),
    // prefill rounds in its select kernel: 2 of each per layer function.
    CHECK(Count(module, "arith.truncf") == 4);
    CHECK(Count(module, "tensor.insert_slice") == 2);
    // Reads widen: the decode attention's K and V gathers, the prompt's K and V operands.
    CHECK(Count(module, "arith.extf") - Count(module, "f32 to f64") == 4);
    CHECK(Count(module, type + " to f32") == 4);
  }
  EmitOptions bad;
  bad.cache_type = "f8";
  Status s = CheckElementTypes(bad);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message() == "KV-cache type 'f8' is not f32, f16 or bf16");
  bad.cache_type = "f32";
  bad.weight_type = "bf16";
  CHECK(CheckElementTypes(bad).message() == "weight type 'bf16' is not f32 or f16");
}

}  // namespace
}  // namespace hexir::compiler::llama
