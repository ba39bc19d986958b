#include "tools/hexir-generate/tokenizer.h"

#include <cstdio>
#include <cstring>

#include "tools/common/tensor_io.h"

namespace hexir::tools {

StatusOr<Tokenizer> Tokenizer::Load(const std::string& path, int64_t vocab_size) {
  StatusOr<std::string> read = ReadWholeFile(path);
  if (!read.ok()) return std::move(read).status().WithContext("tokenizer");
  const std::string& bytes = *read;
  Tokenizer t;
  size_t at = 4;
  if (bytes.size() < 4) return InvalidArgument("tokenizer '", path, "': shorter than its 4-byte header");
  while (at < bytes.size()) {
    if (at + 8 > bytes.size())
      return InvalidArgument("tokenizer '", path, "': token ", t.pieces_.size(), " at offset ", at,
                             " is truncated (needs score and length)");
    float score;
    int32_t len;
    std::memcpy(&score, &bytes[at], 4);
    std::memcpy(&len, &bytes[at + 4], 4);
    if (len < 0 || at + 8 + size_t(len) > bytes.size())
      return InvalidArgument("tokenizer '", path, "': token ", t.pieces_.size(), " at offset ", at,
                             " has byte length ", len, " past the end of the file");
    std::string piece(&bytes[at + 8], size_t(len));
    t.ids_.emplace(piece, int64_t(t.pieces_.size()));
    t.pieces_.push_back(std::move(piece));
    t.scores_.push_back(score);
    at += 8 + size_t(len);
  }
  if (int64_t(t.pieces_.size()) != vocab_size)
    return InvalidArgument("tokenizer '", path, "' has ", t.pieces_.size(),
                           " tokens but the model's vocabulary has ", vocab_size);
  return t;
}

std::vector<int64_t> Tokenizer::Encode(const std::string& text) const {
  std::vector<int64_t> tokens;
  if (text.empty()) return tokens;
  auto space = ids_.find(" ");
  if (space != ids_.end()) tokens.push_back(space->second);
  for (size_t i = 0; i < text.size();) {
    size_t n = 1;  // UTF-8 code point length (continuation bytes are 10xxxxxx)
    while (i + n < text.size() && (static_cast<unsigned char>(text[i + n]) & 0xC0) == 0x80 && n < 4) ++n;
    auto it = ids_.find(text.substr(i, n));
    if (it != ids_.end()) {
      tokens.push_back(it->second);
    } else {
      for (size_t k = 0; k < n; ++k) tokens.push_back(static_cast<unsigned char>(text[i + k]) + 3);
    }
    i += n;
  }
  for (;;) {
    float best = -1e10f;
    int64_t best_id = -1;
    size_t best_at = 0;
    for (size_t i = 0; i + 1 < tokens.size(); ++i) {
      auto it = ids_.find(pieces_[tokens[i]] + pieces_[tokens[i + 1]]);
      if (it != ids_.end() && scores_[it->second] > best) {
        best = scores_[it->second];
        best_id = it->second;
        best_at = i;
      }
    }
    if (best_id < 0) break;
    tokens[best_at] = best_id;
    tokens.erase(tokens.begin() + best_at + 1);
  }
  return tokens;
}

std::string Tokenizer::Decode(int64_t prev, int64_t token) const {
  if (token < 0 || token >= size() || token == 1 || token == 2) return "";
  std::string piece = pieces_[token];
  if (prev == 1 && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
  unsigned byte;
  char tail;
  if (piece.size() == 6 && std::sscanf(piece.c_str(), "<0x%02X>%c", &byte, &tail) == 1)
    return std::string(1, static_cast<char>(byte));
  return piece;
}

}  // namespace hexir::tools
