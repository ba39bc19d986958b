// A model's own tokenizer, read from its GGUF metadata (tokenizer.ggml.*), encoding and
// decoding as llama.cpp does (llama_tokenize with add_special/parse_special = false and
// llama_detokenize with remove_special/unparse_special = false):
//
// - model "llama" (SentencePiece): spaces become U+2581, one U+2581 is prepended at the start
//   of the text and after each added token (unless tokenizer.ggml.add_space_prefix is false);
//   symbols start as single code points and the adjacent pair whose concatenation is the
//   highest-scoring token is merged (ties: leftmost) until none is a token; a symbol that is
//   no token falls back to its bytes as <0xNN> tokens. BOS is added by default.
// - model "gpt2" (byte-level BPE), tokenizer.ggml.pre "gpt-2": Gpt2PreTokenize splits the
//   text into words (bytes mapped to code points); within a word the pair with the lowest
//   merge rank (tokenizer.ggml.merges order) is merged until no pair has a rank. BOS is not
//   added by default.
// - Tokens of type user-defined (4) found in the text are matched first (longest first) and
//   kept whole; control tokens (3) are never matched from text and decode to "".
// - tokenizer.ggml.bos_token_id / eos_token_id / add_bos_token override the defaults (1 / 2 /
//   true for llama; bos and eos required for gpt2).
//
// Immutable after FromGguf; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "compiler/importers/llama/Gguf.h"

namespace hexir::tools {

class Vocabulary {
 public:
  enum class Model { kLlama, kGpt2 };
  // GGUF tokenizer.ggml.token_type values.
  enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

  // Errors name the key (and array index) that is missing or malformed.
  static StatusOr<Vocabulary> FromGguf(const compiler::llama::GgufFile& file);
  // A Hugging Face tokenizer.json (hf_tokenizer.cc) whose model is "BPE", mapped onto the two
  // models above: a "ByteLevel" pre-tokenizer (GPT-2's regex, no prefix space) is "gpt2";
  // byte_fallback with spaces replaced by U+2581 (Llama 2's files) is "llama", each token's
  // score the negated rank of the merge that forms it. added_tokens: "special" ones are
  // control tokens, the others user-defined; BOS is added when the post-processor's template
  // starts with a special token. `bos`/`eos`: config.json's ids.
  static StatusOr<Vocabulary> FromHfTokenizerJson(const std::string& path, int64_t bos, int64_t eos);

  // Token ids of `text`; with `add_bos` and the vocabulary's add_bos, BOS first.
  std::vector<int64_t> Encode(std::string_view text, bool add_bos) const;
  // The text of `ids` (ids outside the vocabulary are skipped). llama.cpp drops one leading
  // space of the first piece for SentencePiece vocabularies; `strip_first_space` = false
  // keeps it (a continuation of a prompt).
  std::string Decode(const std::vector<int64_t>& ids, bool strip_first_space = true) const;

  Model model() const { return model_; }
  int64_t size() const { return int64_t(tokens_.size()); }
  int64_t bos() const { return bos_; }
  int64_t eos() const { return eos_; }
  bool add_bos() const { return add_bos_; }
  const std::string& token(int64_t id) const { return tokens_[size_t(id)]; }

 private:
  void EncodeSpm(std::string_view text, std::vector<int64_t>* out) const;   // spm_encoder.cc
  void EncodeBpe(std::string_view text, std::vector<int64_t>* out) const;   // bpe_encoder.cc
  int64_t Find(std::string_view piece) const;  // -1 when no token has this text
  int BpeRank(std::string_view left, std::string_view right) const;  // -1 when not a merge

  Model model_ = Model::kLlama;
  std::vector<std::string> tokens_;
  std::vector<float> scores_;
  std::vector<int32_t> types_;
  std::unordered_map<std::string, int64_t> ids_;
  std::unordered_map<std::string, int> merge_ranks_;  // "left right" -> rank
  std::vector<int64_t> user_defined_;                 // longest text first
  int64_t bos_ = 1, eos_ = 2;
  bool add_bos_ = true;
  bool add_space_prefix_ = true;
  bool clean_spaces_ = false;
};

}  // namespace hexir::tools
