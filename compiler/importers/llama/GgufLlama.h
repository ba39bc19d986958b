// GGUF (llama architecture, f32/f16 tensors) -> the same LlamaConfig and weight table a
// llama2.c checkpoint gives (Checkpoint.h), so EmitModule generates the same program and a
// runtime uploads each tensor from its GGUF data offset.
//
// Metadata: general.architecture == "llama"; llama.embedding_length (dim),
// llama.feed_forward_length (hidden_dim), llama.block_count (n_layers),
// llama.attention.head_count (n_heads), llama.attention.head_count_kv (n_kv_heads, default
// n_heads), llama.context_length (seq_len), llama.attention.layer_norm_rms_epsilon (default
// 1e-5), llama.rope.freq_base (default 10000); the vocabulary size is the length of
// tokenizer.ggml.tokens (else token_embd.weight's row count) and must match the embedding.
// tokenizer.ggml.bos_token_id / eos_token_id (default 1 / 2) are the ids the program stops
// at; they must lie in the vocabulary. Refused with a named error: llama.rope.dimension_count
// != head size, rope scaling.
//
// Tensors (ggml ne is reversed: a row-major [out][in] matrix has ne = {in, out}):
// token_embd.weight, blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm,
// ffn_gate (w1), ffn_down (w2), ffn_up (w3)}.weight, output_norm.weight, and output.weight
// (optional: absent = the embedding is the classifier). Only f32 and f16; any other type,
// a missing, misshapen or unexpected tensor is an error naming it.
//
// Rotary layout: attn_q/attn_k rows are used as stored. GGUF's "llama" architecture applies
// rope to adjacent pairs (ggml's normal rope mode), the layout of Meta's and llama2.c's
// weights; llama.cpp's converters permute Hugging Face's rotate-half rows back into it and
// tests/llm/llama2c_to_gguf.py copies llama2.c's rows unpermuted. So the generated program's
// interleaved-pair rotary is already right and nothing is permuted. MLIR-free; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/importers/llama/Checkpoint.h"
#include "compiler/importers/llama/EmitModule.h"
#include "compiler/importers/llama/Gguf.h"

namespace hexir::compiler::llama {

struct GgufLlama {
  LlamaConfig config;
  std::vector<WeightTensor> weights;  // LlamaWeights() order and names; offsets are GGUF file offsets
};

StatusOr<GgufLlama> GgufLlamaModel(const GgufFile& file);

// The GGUF tensor name of a LlamaWeights() name ("layer3.wq" -> "blk.3.attn_q.weight",
// "token_embedding" -> "token_embd.weight"); "" for names outside the table.
std::string GgufTensorName(const std::string& weight);

// Parses and maps `data[0, size)`, the whole GGUF file.
StatusOr<GgufLlama> ParseGgufLlama(const uint8_t* data, size_t size);

// hexir-import's GGUF mode: file -> MLIR text (the file is memory-mapped while parsing).
StatusOr<std::string> ImportGgufFile(const std::string& path, const EmitOptions& options = {});

}  // namespace hexir::compiler::llama
