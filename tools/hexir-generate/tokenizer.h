// llama2.c tokenizer (tok512.bin format, ../shared/models/README.md): int32 max_token_length,
// then per token float32 score, int32 byte length, the bytes. Spaces are stored as ' '.
// Encoding follows llama2.c's BPE: a dummy-prefix space, one token per UTF-8 code point
// (byte fallback <0xXX> = id byte + 3), then repeatedly merge the adjacent pair whose
// concatenation is a token with the highest score. Immutable after Load; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace hexir::tools {

class Tokenizer {
 public:
  // `vocab_size`: the model's vocabulary (the file must hold exactly that many tokens).
  static StatusOr<Tokenizer> Load(const std::string& path, int64_t vocab_size);

  // Token ids of `text` (no BOS).
  std::vector<int64_t> Encode(const std::string& text) const;
  // The text of `token` following `prev` (llama2.c rules: a leading space after BOS is
  // dropped, <0xXX> pieces are raw bytes; BOS/EOS decode to "").
  std::string Decode(int64_t prev, int64_t token) const;

  int64_t size() const { return static_cast<int64_t>(pieces_.size()); }

 private:
  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  std::unordered_map<std::string, int64_t> ids_;
};

}  // namespace hexir::tools
