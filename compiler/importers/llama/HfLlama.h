// Hugging Face folders (LlamaForCausalLM) -> the same LlamaConfig and weight table a llama2.c
// checkpoint gives (Checkpoint.h), so EmitModule generates the same kind of program and a
// runtime uploads each tensor from its safetensors file.
//
// DIR/config.json: "architectures" must list "LlamaForCausalLM"; hidden_size (dim),
// intermediate_size, num_hidden_layers, num_attention_heads, num_key_value_heads (default:
// the heads), max_position_embeddings (seq_len), vocab_size, rms_norm_eps (default 1e-6),
// rope_theta (default 10000), rope_scaling (null, or {"rope_type"|"type": "linear"|"default",
// "factor"}: linear scaling divides every angle by the factor; other kinds, e.g. "llama3",
// are refused by name), tie_word_embeddings (default false), head_dim (if given, must be
// hidden_size / num_attention_heads), bos_token_id / eos_token_id (default 1 / 2; a list of
// EOS ids gives its first).
//
// Weights: DIR/model.safetensors, or DIR/model.safetensors.index.json {"weight_map": {tensor:
// shard file}} with the shards beside it. Tensors (F32, F16 or BF16): model.embed_tokens,
// model.layers.N.{input_layernorm, self_attn.{q,k,v,o}_proj, post_attention_layernorm,
// mlp.{gate,down,up}_proj}, model.norm, lm_head (absent or ignored when tied); each ".weight".
// Rotary: HF stores q_proj/k_proj rows in the rotate-half layout (per head: the pairs' first
// elements, then their second elements); the table marks them (rotate_half_heads) and the
// runtime permutes them into the interleaved pairs the program rotates at upload.
// Errors name the file and the key or tensor: missing config, unknown architecture, missing
// or misshapen tensors, truncated files, header lengths past the end. MLIR-free; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/importers/llama/Checkpoint.h"
#include "compiler/importers/llama/EmitModule.h"

namespace hexir::compiler::llama {

struct HfLlama {
  LlamaConfig config;
  std::vector<WeightTensor> weights;  // LlamaWeights() order; `file` is the shard's path
  std::string tokenizer_json;         // DIR/tokenizer.json, empty when absent
};

bool IsDirectory(const std::string& path);

StatusOr<HfLlama> LoadHfLlama(const std::string& dir);

// hexir-import's Hugging Face mode: folder -> MLIR text.
StatusOr<std::string> ImportHfFolder(const std::string& dir, const EmitOptions& options = {});

}  // namespace hexir::compiler::llama
