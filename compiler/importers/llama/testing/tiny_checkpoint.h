// Tiny random llama2.c checkpoints for the tests that import, compile and run an LLM (the
// e2e streaming, generate-limits and placed-LLM tests, tools/common's parameter tests).
// Test-only; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/importers/llama/Checkpoint.h"

namespace hexir::compiler::llama::testing {

// dim 8, hidden 16, 2 heads, 2 KV heads, vocabulary 16 (shared classifier), with `layers`
// layers and a cache of `seq_len` positions.
LlamaConfig TinyLlamaConfig(int64_t layers, int64_t seq_len);

// A llama2.c file of `config` (shared classifier): the header, then every array it implies
// (LlamaFileBytes in all), each f32 drawn uniform in [lo, hi) from std::mt19937(seed) in file
// order.
std::vector<uint8_t> RandomLlama2cBytes(const LlamaConfig& config, uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f);

// Zeroes rows [first, last) of the token embedding (the first array) of RandomLlama2cBytes's
// file: with a shared classifier those ids get logit 0, so greedy decoding rarely picks them.
void ZeroEmbeddingRows(const LlamaConfig& config, int64_t first, int64_t last, std::vector<uint8_t>* file);

// Writes `bytes` to `path` (replacing it); an error naming the path when it cannot.
Status WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace hexir::compiler::llama::testing
