// llama2.c checkpoints: header parsing, size validation and the table of weight tensors.
//
// Layout (see ../shared/models/README.md): seven little-endian int32 (dim, hidden_dim,
// n_layers, n_heads, n_kv_heads, vocab_size, seq_len; vocab_size < 0 means the classifier is
// stored separately at the end), then float32 arrays, each weight matrix [out][in].
//
// The weight table lists the tensors in the order the generated entry function takes them
// (LlamaWeights), each with its byte offset in the file, so a runtime can create device
// tensors straight from a memory-mapped file. MLIR-free; no state; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/importers/llama/GgmlBlocks.h"
#include "hal/element_type.h"

namespace hexir::compiler::llama {

struct LlamaConfig {
  int64_t dim = 0;
  int64_t hidden_dim = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t vocab_size = 0;  // always positive here
  int64_t seq_len = 0;
  bool shared_classifier = true;  // header vocab_size > 0
  // Not in the llama2.c header (which implies these values); GGUF metadata sets them.
  float rms_eps = 1e-5f;        // RMSNorm epsilon
  float rope_theta = 10000.0f;  // rotary base: freq_i = theta^(-2i/head_size)
  float rope_scale = 1.0f;      // linear rope scaling: angles are pos * freq_i / rope_scale
  // Token ids that end generation (the program stops after emitting either); llama2.c's
  // are fixed, GGUF's tokenizer.ggml.bos_token_id / eos_token_id set them.
  int64_t bos_id = 1;
  int64_t eos_id = 2;

  int64_t head_size() const { return dim / n_heads; }
  int64_t kv_dim() const { return n_kv_heads * head_size(); }
};

inline constexpr size_t kHeaderBytes = 7 * 4;

struct WeightTensor {
  std::string name;            // "token_embedding", "layer3.wq", "rms_final", "classifier"
  std::vector<int64_t> dims;   // row-major
  int64_t offset = 0;          // byte offset in the checkpoint file
  hal::ElementType type = hal::ElementType::kF32;  // as stored
  // The file holding the tensor when a checkpoint has several (sharded safetensors); empty:
  // the checkpoint file itself.
  std::string file;
  // > 0: the rows are in Hugging Face's rotate-half order for this many heads (per head, the
  // first half of the rows holds the pairs' first elements, the second half the second);
  // a runtime permutes them into the interleaved pairs the program rotates.
  int64_t rotate_half_heads = 0;
  // Non-null: a GGUF matrix kept in its stored form (block-quantized or bf16, GgmlBlocks.h):
  // the program takes it as ArgumentDims() of kept->ArgumentElement() and decodes it in its
  // kernels; a runtime uploads the file's bytes unchanged. Null: converted to the module's
  // weight type (f32 or f16) at upload.
  const GgmlBlockInfo* kept = nullptr;
  // > 0: a column part (tensor parallelism, TensorParallel.h): row r of the dims[0] x dims[1]
  // part starts at offset + r * RowBytes(stored_columns) of the stored [rows][stored_columns]
  // matrix. 0: the part is contiguous.
  int64_t stored_columns = 0;
  int64_t byte_size() const;   // bytes of the tensor: elements * the type's size, or the kept form's rows
  int64_t RowBytes(int64_t columns) const;  // bytes of `columns` values of a row, as stored (kept: whole blocks)
  std::vector<int64_t> ArgumentDims() const;  // kept: kept->ArgumentDims(rows, k); else dims
};

// Parses and validates the header against the file length `file_size`: every field positive,
// dim divisible by n_heads, n_heads divisible by n_kv_heads, head_size even, the implied size
// within 64 bits (overflow-checked), and the file at least as long as the arrays the header
// implies. Errors name the field and its file offset.
StatusOr<LlamaConfig> ParseLlamaHeader(const uint8_t* data, size_t file_size);

// The entry function's weight arguments, in order: token_embedding[vocab][dim]; per layer
// l = 0..L-1: layer<l>.rms_att[dim], .wq[dim][dim], .wk[kv_dim][dim], .wv[kv_dim][dim],
// .wo[dim][dim], .rms_ffn[dim], .w1[hidden][dim], .w2[dim][hidden], .w3[hidden][dim];
// rms_final[dim]; classifier[vocab][dim] only when the classifier is not shared.
std::vector<WeightTensor> LlamaWeights(const LlamaConfig& config);

// Bytes of the file the header implies (header + every array, rotary tables included), or -1
// when that size does not fit in 64 bits (a corrupt header; ParseLlamaHeader refuses it).
int64_t LlamaFileBytes(const LlamaConfig& config);

}  // namespace hexir::compiler::llama
