// Tensor parallelism: which counts are refused, each rank's weight parts (dims, offsets
// recomputed here from the row-major layout, column parts' strides) and the emitted SPMD
// program's collectives.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "compiler/importers/llama/Checkpoint.h"
#include "compiler/importers/llama/EmitModule.h"
#include "compiler/importers/llama/GgmlBlocks.h"
#include "compiler/importers/llama/TensorParallel.h"

namespace hexir::compiler::llama {
namespace {

// dim 8, hidden 12, 1 layer, 4 heads, 2 kv heads (head 2, kv_dim 4), vocab 6, shared classifier.
LlamaConfig Config() {
  LlamaConfig c;
  c.dim = 8;
  c.hidden_dim = 12;
  c.n_layers = 1;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.vocab_size = 6;
  c.seq_len = 16;
  return c;
}

std::map<std::string, WeightTensor> ByName(const std::vector<WeightTensor>& ws) {
  std::map<std::string, WeightTensor> m;
  for (const WeightTensor& w : ws) m[w.name] = w;
  return m;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_CASE("tensor parallelism refuses counts that do not divide, naming each of them") {
  REQUIRE(CheckTensorParallel(Config(), 2).ok());
  Status s = CheckTensorParallel(Config(), 4);
  REQUIRE(s.message() ==
          "tensor parallelism over 4 ranks splits heads, KV heads, hidden units and the vocabulary "
          "evenly, but n_kv_heads = 2, vocab_size = 6 are not divisible by 4");
  s = CheckTensorParallel(Config(), 3);
  REQUIRE(s.message().find("but n_heads = 4, n_kv_heads = 2 are not divisible by 3") != std::string::npos);
  REQUIRE(CheckTensorParallel(Config(), 0).message() == "tensor parallelism needs at least 1 rank, got 0");
}

TEST_CASE("each rank's weights are its rows of q/k/v/w1/w3/classifier and its columns of wo/w2") {
  const LlamaConfig c = Config();
  const std::vector<WeightTensor> full = LlamaWeights(c);
  auto whole = ByName(full);
  auto parts = TensorParallelWeights(c, full, 2, 1);
  REQUIRE(parts.ok());
  // The shared classifier becomes a tensor of its own, last: rows 3..5 of the embedding.
  REQUIRE(parts->size() == full.size() + 1);
  REQUIRE(parts->back().name == "classifier");
  auto p = ByName(*parts);
  const int64_t f32 = 4;
  REQUIRE(p["classifier"].dims == std::vector<int64_t>{3, 8});
  REQUIRE(p["classifier"].offset == whole["token_embedding"].offset + 3 * 8 * f32);
  // Column-parallel (rows): wq by heads (2 of 4 heads = rows 4..7), wk/wv by KV heads, w1/w3.
  REQUIRE(p["layer0.wq"].dims == std::vector<int64_t>{4, 8});
  REQUIRE(p["layer0.wq"].offset == whole["layer0.wq"].offset + 4 * 8 * f32);
  REQUIRE(p["layer0.wk"].dims == std::vector<int64_t>{2, 8});
  REQUIRE(p["layer0.wk"].offset == whole["layer0.wk"].offset + 2 * 8 * f32);
  REQUIRE(p["layer0.w3"].dims == std::vector<int64_t>{6, 8});
  REQUIRE(p["layer0.w3"].offset == whole["layer0.w3"].offset + 6 * 8 * f32);
  REQUIRE(p["layer0.w1"].stored_columns == 0);
  // Row-parallel (columns): wo's columns 4..7 of every row, w2's 6..11.
  REQUIRE(p["layer0.wo"].dims == std::vector<int64_t>{8, 4});
  REQUIRE(p["layer0.wo"].offset == whole["layer0.wo"].offset + 4 * f32);
  REQUIRE(p["layer0.wo"].stored_columns == 8);
  REQUIRE(p["layer0.w2"].dims == std::vector<int64_t>{8, 6});
  REQUIRE(p["layer0.w2"].offset == whole["layer0.w2"].offset + 6 * f32);
  REQUIRE(p["layer0.w2"].stored_columns == 12);
  // Replicated: the embedding and the norms, unchanged.
  for (const char* name : {"token_embedding", "layer0.rms_att", "layer0.rms_ffn", "rms_final"}) {
    REQUIRE(p[name].dims == whole[name].dims);
    REQUIRE(p[name].offset == whole[name].offset);
  }
  // Rank 0 starts at the stored tensors' first elements.
  auto p0 = ByName(*TensorParallelWeights(c, full, 2, 0));
  REQUIRE(p0["layer0.wo"].offset == whole["layer0.wo"].offset);
  REQUIRE(p0["classifier"].offset == whole["token_embedding"].offset);
  REQUIRE(TensorParallelWeights(c, full, 2, 2).status().message() == "rank 2 is outside 0..1");
}

// dim 64, hidden 128 (so wo's and w2's columns halve into whole q8_0/q4_0 blocks of 32).
LlamaConfig BlockConfig() {
  LlamaConfig c = Config();
  c.dim = 64;
  c.hidden_dim = 128;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  return c;
}

// The weights of `c` with every matrix kept as `type` and offsets recomputed for that form.
std::vector<WeightTensor> KeptWeights(const LlamaConfig& c, const char* type) {
  std::vector<WeightTensor> ws = LlamaWeights(c);
  int64_t offset = 0;
  for (WeightTensor& w : ws) {
    if (w.dims.size() == 2) w.kept = FindGgmlBlockTypeByName(type);
    w.offset = offset;
    offset += w.byte_size();
  }
  return ws;
}

TEST_CASE("a kept block-format matrix splits by whole rows, and by columns between its blocks") {
  const LlamaConfig c = BlockConfig();
  for (const char* type : {"q8_0", "q4_0", "bf16"}) {
    const GgmlBlockInfo* info = FindGgmlBlockTypeByName(type);
    const std::vector<WeightTensor> full = KeptWeights(c, type);
    auto whole = ByName(full);
    auto p = ByName(*TensorParallelWeights(c, full, 2, 1));
    // Rows: wq's rows 32..63 of 64 values each, i.e. rank 1 skips 32 rows of 64 / B blocks.
    REQUIRE(p["layer0.wq"].kept == info);
    REQUIRE(p["layer0.wq"].dims == std::vector<int64_t>{32, 64});
    REQUIRE(p["layer0.wq"].offset == whole["layer0.wq"].offset + 32 * (64 / info->block_elements) * info->block_bytes);
    REQUIRE(p["layer0.wq"].ArgumentDims() == info->ArgumentDims(32, 64));
    // The shared classifier: vocabulary rows 3..5 of the kept embedding.
    REQUIRE(p["classifier"].kept == info);
    REQUIRE(p["classifier"].offset == whole["token_embedding"].offset + 3 * info->RowBytes(64));
    // Columns: w2's columns 64..127 of each 128-value row: the row's second half of its blocks.
    REQUIRE(p["layer0.w2"].dims == std::vector<int64_t>{64, 64});
    REQUIRE(p["layer0.w2"].stored_columns == 128);
    REQUIRE(p["layer0.w2"].offset == whole["layer0.w2"].offset + info->RowBytes(64));
    REQUIRE(p["layer0.w2"].RowBytes(p["layer0.w2"].stored_columns) == info->RowBytes(128));
    REQUIRE(p["layer0.w2"].byte_size() == 64 * info->RowBytes(64));
    REQUIRE(p["layer0.wo"].offset == whole["layer0.wo"].offset + info->RowBytes(32));
  }
}

TEST_CASE("a column split that would cut a block is refused, naming the tensor, its type and the sizes") {
  LlamaConfig c = BlockConfig();
  c.n_kv_heads = 4;
  c.vocab_size = 8;
  // q8_0 blocks of 32: wo's 64 columns over 4 ranks are parts of 16.
  Status s = TensorParallelWeights(c, KeptWeights(c, "q8_0"), 4, 0).status();
  REQUIRE(s.message() ==
          "tensor parallelism: tensor 'layer0.wo' (q8_0, 64 columns) splits into 4 parts of 16 columns, not a "
          "multiple of its block size 32 (import with fewer ranks, or from a file with another block type)");
  // K-quants' blocks of 256 hold a whole 256-value row: no column split at all.
  LlamaConfig k = c;
  k.dim = 256;
  k.hidden_dim = 256;
  s = TensorParallelWeights(k, KeptWeights(k, "q4_k"), 2, 0).status();
  REQUIRE(s.message().find("tensor 'layer0.wo' (q4_k, 256 columns) splits into 2 parts of 128 columns, not a "
                           "multiple of its block size 256") != std::string::npos);
  // The same weights split over 2 ranks (parts of 32 columns).
  REQUIRE(TensorParallelWeights(c, KeptWeights(c, "q8_0"), 2, 0).ok());
}

TEST_CASE("the tensor-parallel program takes kept parts in their stored form") {
  const LlamaConfig c = BlockConfig();
  EmitOptions options;
  options.tensor_parallel = 2;
  std::string text = EmitLlamaModule(c, KeptWeights(c, "q8_0"), options);
  // wq part: 32 rows of 64 / 32 blocks of 34 bytes; w2 part: 64 rows of 2 blocks.
  REQUIRE(Count(text, "tensor<32x68xi8>") > 0);
  REQUIRE(Count(text, "tensor<64x68xi8>") > 0);
  REQUIRE(Count(text, "hexir.block_matvec = \"q8_0\"") > 0);
  REQUIRE(Count(text, "hexir.all_reduce \"sum\"") == 2 + 2);
}

TEST_CASE("the tensor-parallel program all-reduces wo and w2 per layer and the argmax keys") {
  LlamaConfig c = Config();
  c.n_layers = 2;
  EmitOptions options;
  options.tensor_parallel = 2;
  std::string text = EmitLlamaModule(c, options);
  // Per layer: wo and w2, in the prefill function and in the decode step's @layer function
  // (one each, called per layer; hexir-compile inlines these calls by default, since a
  // callee holding collectives cannot record into its caller); plus the argmax of the
  // prefill and of each decode step. Written-out decode layers have them once per layer.
  REQUIRE(Count(text, "hexir.all_reduce \"sum\"") == 2 + 2);
  REQUIRE(Count(text, "func.call @layer(") == 2);
  options.layer_calls = false;
  REQUIRE(Count(EmitLlamaModule(c, options), "hexir.all_reduce \"sum\"") == 2 + 2 * 2);
  REQUIRE(Count(text, "hexir.all_reduce \"max\"") == 2);
  REQUIRE(Count(text, "func.func @tensor_parallel() -> (i64, i64, i64)") == 1);
  REQUIRE(Count(text, "tensor-parallel module for 2 ranks runs on a channel of {} ranks") == 1);
  // This rank's shapes: 2 of 4 heads (q dim 4), 1 of 2 KV heads, 6 of 12 hidden units, 3 of 6
  // vocabulary rows; the classifier is an argument of its own.
  REQUIRE(Count(text, "tensor<4x8xf32>") > 0);   // wq
  REQUIRE(Count(text, "tensor<8x6xf32>") > 0);   // w2
  REQUIRE(Count(text, "tensor<3x8xf32>") > 0);   // classifier
  REQUIRE(Count(text, "tensor<16x2xf32>") > 0);  // KV cache: 16 positions x 1 KV head of 2
  // One device: no collective, no channel.
  std::string one = EmitLlamaModule(c);
  REQUIRE(Count(one, "hexir.all_reduce") == 0);
  REQUIRE(Count(one, "hexir.channel") == 0);
}

}  // namespace
}  // namespace hexir::compiler::llama
