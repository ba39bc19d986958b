#include "compiler/importers/llama/testing/tiny_checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

namespace hexir::compiler::llama::testing {

LlamaConfig TinyLlamaConfig(int64_t layers, int64_t seq_len) {
  LlamaConfig c;
  c.dim = 8;
  c.hidden_dim = 16;
  c.n_layers = layers;
  c.n_heads = 2;
  c.n_kv_heads = 2;
  c.vocab_size = 16;
  c.seq_len = seq_len;
  return c;
}

std::vector<uint8_t> RandomLlama2cBytes(const LlamaConfig& config, uint32_t seed, float lo, float hi) {
  const int32_t header[7] = {int32_t(config.dim),        int32_t(config.hidden_dim), int32_t(config.n_layers),
                             int32_t(config.n_heads),    int32_t(config.n_kv_heads), int32_t(config.vocab_size),
                             int32_t(config.seq_len)};
  static_assert(sizeof(header) == kHeaderBytes);
  std::vector<uint8_t> file(std::max<int64_t>(LlamaFileBytes(config), kHeaderBytes), 0);
  std::memcpy(file.data(), header, sizeof(header));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(lo, hi);
  for (size_t at = kHeaderBytes; at + 4 <= file.size(); at += 4) {
    const float v = uniform(rng);
    std::memcpy(file.data() + at, &v, 4);
  }
  return file;
}

void ZeroEmbeddingRows(const LlamaConfig& config, int64_t first, int64_t last, std::vector<uint8_t>* file) {
  const size_t row_bytes = size_t(config.dim) * 4;
  std::fill(file->begin() + kHeaderBytes + first * row_bytes, file->begin() + kHeaderBytes + last * row_bytes, 0);
}

Status WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return Internal("cannot create '", path, "': ", std::strerror(errno));
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  if (std::fclose(f) != 0 || !written) return Internal("cannot write ", bytes.size(), " bytes to '", path, "'");
  return Status::Ok();
}

}  // namespace hexir::compiler::llama::testing
