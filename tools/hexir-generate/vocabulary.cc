#include "tools/hexir-generate/vocabulary.h"

#include <algorithm>

#include "tools/hexir-generate/unicode.h"

namespace hexir::tools {
namespace {

using compiler::llama::GgufFile;
using compiler::llama::GgufValue;
using compiler::llama::GgufValueType;

// An array-valued key whose elements all have type `elem`; null when absent.
StatusOr<const GgufValue*> ArrayOf(const GgufFile& f, const std::string& key, GgufValueType elem, size_t length) {
  const GgufValue* v = f.Find(key);
  if (!v) return static_cast<const GgufValue*>(nullptr);
  if (v->type != GgufValueType::kArray || v->elem_type != elem)
    return InvalidArgument("GGUF: metadata '", key, "' at offset ", v->offset, " must be an array of ",
                           compiler::llama::GgufValueTypeName(elem));
  if (length && v->array.size() != length)
    return InvalidArgument("GGUF: metadata '", key, "' at offset ", v->offset, " has ", v->array.size(),
                           " entries but tokenizer.ggml.tokens has ", length);
  return v;
}

Status ReadBool(const GgufFile& f, const std::string& key, bool* out) {
  const GgufValue* v = f.Find(key);
  if (!v) return Status::Ok();
  if (v->type != GgufValueType::kBool)
    return InvalidArgument("GGUF: metadata '", key, "' at offset ", v->offset, " must be a bool");
  *out = v->u != 0;
  return Status::Ok();
}

Status ReadId(const GgufFile& f, const std::string& key, int64_t vocab, int64_t* out) {
  const GgufValue* v = f.Find(key);
  if (!v) return Status::Ok();
  if (!v->is_integer() || v->i < 0 || v->i >= vocab)
    return InvalidArgument("GGUF: metadata '", key, "' at offset ", v->offset, " must be a token id in 0..", vocab - 1);
  *out = v->i;
  return Status::Ok();
}

std::string MergeKey(std::string_view left, std::string_view right) {
  std::string key(left);
  key.push_back('\0');
  key.append(right);
  return key;
}

// llama.cpp's clean_up_tokenization_spaces for "gpt-2" vocabularies: " ?", " !", " .", " ,"
// lose the space; a lone apostrophe between spaces loses both; " 's", " 'm", " 're", " 've"
// lose the space.
std::string CleanSpaces(const std::string& in) {
  auto pass = [](const std::string& t, auto keep_space) {
    std::string out;
    for (size_t i = 0; i < t.size(); ++i) {
      if (i > 0 && t[i - 1] == ' ' && !out.empty() && !keep_space(t, i)) out.pop_back();
      out.push_back(t[i]);
    }
    return out;
  };
  std::string a = pass(in, [](const std::string& t, size_t i) {
    char x = t[i];
    return !(x == '?' || x == '!' || x == '.' || x == ',');
  });
  std::string b;
  for (size_t i = 0; i < a.size(); ++i) {
    if (i > 0 && a[i] == '\'' && i + 1 < a.size() && a[i - 1] == ' ' && a[i + 1] == ' ') {
      b.pop_back();
      b.push_back('\'');
      ++i;  // the space after it
      continue;
    }
    b.push_back(a[i]);
  }
  return pass(b, [](const std::string& t, size_t i) {
    if (t[i] != '\'' || i + 1 >= t.size()) return true;
    char x1 = t[i + 1];
    if (x1 == 's' || x1 == 'm') return false;
    if (i + 2 < t.size() && ((x1 == 'r' && t[i + 2] == 'e') || (x1 == 'v' && t[i + 2] == 'e'))) return false;
    return true;
  });
}

}  // namespace

StatusOr<Vocabulary> Vocabulary::FromGguf(const GgufFile& f) {
  Vocabulary v;
  const GgufValue* model = f.Find("tokenizer.ggml.model");
  if (!model) return InvalidArgument("GGUF: metadata 'tokenizer.ggml.model' is missing (the file has no tokenizer)");
  if (model->type != GgufValueType::kString || (model->s != "llama" && model->s != "gpt2"))
    return InvalidArgument("GGUF: metadata 'tokenizer.ggml.model' at offset ", model->offset, " is '",
                           model->type == GgufValueType::kString ? model->s : "not a string",
                           "'; supported: \"llama\" (SentencePiece) and \"gpt2\" (byte-level BPE)");
  v.model_ = model->s == "llama" ? Model::kLlama : Model::kGpt2;

  HEXIR_ASSIGN_OR_RETURN(const GgufValue* tokens, ArrayOf(f, "tokenizer.ggml.tokens", GgufValueType::kString, 0));
  if (!tokens || tokens->array.empty())
    return InvalidArgument("GGUF: metadata 'tokenizer.ggml.tokens' is missing or empty");
  const size_t n = tokens->array.size();
  HEXIR_ASSIGN_OR_RETURN(const GgufValue* scores, ArrayOf(f, "tokenizer.ggml.scores", GgufValueType::kFloat32, n));
  HEXIR_ASSIGN_OR_RETURN(const GgufValue* types, ArrayOf(f, "tokenizer.ggml.token_type", GgufValueType::kInt32, n));
  for (size_t i = 0; i < n; ++i) {
    v.tokens_.push_back(tokens->array[i].s);
    v.scores_.push_back(scores ? float(scores->array[i].f) : 0.0f);
    v.types_.push_back(types ? int32_t(types->array[i].i) : kNormal);
    v.ids_[v.tokens_.back()] = int64_t(i);  // the last of equal texts wins, as in llama.cpp
    if (v.types_.back() == kUserDefined && !v.tokens_.back().empty()) v.user_defined_.push_back(int64_t(i));
  }
  std::stable_sort(v.user_defined_.begin(), v.user_defined_.end(),
                   [&](int64_t a, int64_t b) { return v.tokens_[a].size() > v.tokens_[b].size(); });

  if (v.model_ == Model::kGpt2) {
    const GgufValue* pre = f.Find("tokenizer.ggml.pre");
    if (!pre || pre->type != GgufValueType::kString || pre->s != "gpt-2")
      return InvalidArgument("GGUF: metadata 'tokenizer.ggml.pre' ",
                             pre ? "at offset " + std::to_string(pre->offset) + " is '" +
                                       (pre->type == GgufValueType::kString ? pre->s : "not a string") + "'"
                                 : std::string("is missing"),
                             "; the only supported BPE pre-tokenizer is \"gpt-2\"");
    HEXIR_ASSIGN_OR_RETURN(const GgufValue* merges, ArrayOf(f, "tokenizer.ggml.merges", GgufValueType::kString, 0));
    if (!merges) return InvalidArgument("GGUF: metadata 'tokenizer.ggml.merges' is missing (a \"gpt2\" tokenizer needs it)");
    for (size_t i = 0; i < merges->array.size(); ++i) {
      const std::string& m = merges->array[i].s;
      size_t space = m.find(' ', 1);
      if (space == std::string::npos)
        return InvalidArgument("GGUF: metadata 'tokenizer.ggml.merges'[", i, "] at offset ", merges->array[i].offset,
                               " is '", m, "', not two tokens separated by a space");
      v.merge_ranks_.emplace(MergeKey(std::string_view(m).substr(0, space), std::string_view(m).substr(space + 1)),
                             int(i));
    }
    v.bos_ = v.eos_ = 11;  // llama.cpp's defaults for gpt2 vocabularies
    v.add_bos_ = false;
    v.add_space_prefix_ = false;
    v.clean_spaces_ = true;
  }
  HEXIR_RETURN_IF_ERROR(ReadId(f, "tokenizer.ggml.bos_token_id", int64_t(n), &v.bos_));
  HEXIR_RETURN_IF_ERROR(ReadId(f, "tokenizer.ggml.eos_token_id", int64_t(n), &v.eos_));
  HEXIR_RETURN_IF_ERROR(ReadBool(f, "tokenizer.ggml.add_bos_token", &v.add_bos_));
  HEXIR_RETURN_IF_ERROR(ReadBool(f, "tokenizer.ggml.add_space_prefix", &v.add_space_prefix_));
  if (v.bos_ >= int64_t(n) || v.eos_ >= int64_t(n))
    return InvalidArgument("GGUF: the tokenizer has ", n, " tokens but its default BOS/EOS id ", std::max(v.bos_, v.eos_),
                           " is not one of them; set tokenizer.ggml.bos_token_id and eos_token_id");
  return v;
}

int64_t Vocabulary::Find(std::string_view piece) const {
  auto it = ids_.find(std::string(piece));
  return it == ids_.end() ? -1 : it->second;
}

int Vocabulary::BpeRank(std::string_view left, std::string_view right) const {
  auto it = merge_ranks_.find(MergeKey(left, right));
  return it == merge_ranks_.end() ? -1 : it->second;
}

std::vector<int64_t> Vocabulary::Encode(std::string_view text, bool add_bos) const {
  // Fragments of raw text and user-defined tokens found in it (longest token text first).
  struct Fragment {
    int64_t token;  // -1: raw text [begin, end)
    size_t begin, end;
  };
  std::vector<Fragment> fragments;
  if (!text.empty()) fragments.push_back({-1, 0, text.size()});
  for (int64_t id : user_defined_) {
    const std::string& t = tokens_[id];
    std::vector<Fragment> next;
    for (const Fragment& fr : fragments) {
      if (fr.token >= 0) {
        next.push_back(fr);
        continue;
      }
      size_t at = fr.begin;
      for (size_t hit; (hit = text.substr(0, fr.end).find(t, at)) != std::string_view::npos; at = hit + t.size()) {
        if (hit > at) next.push_back({-1, at, hit});
        next.push_back({id, 0, 0});
      }
      if (at < fr.end) next.push_back({-1, at, fr.end});
    }
    fragments = std::move(next);
  }

  std::vector<int64_t> out;
  if (add_bos && add_bos_) out.push_back(bos_);
  bool after_special = true;  // SentencePiece: a space prefix at the start and after added tokens
  for (const Fragment& fr : fragments) {
    if (fr.token >= 0) {
      out.push_back(fr.token);
      after_special = true;
      continue;
    }
    std::string_view raw = text.substr(fr.begin, fr.end - fr.begin);
    if (model_ == Model::kGpt2) {
      EncodeBpe(raw, &out);
      continue;
    }
    std::string escaped;
    if (add_space_prefix_ && after_special) escaped = "\xE2\x96\x81";
    for (char c : raw) escaped += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
    EncodeSpm(escaped, &out);
    after_special = false;
  }
  return out;
}

std::string Vocabulary::Decode(const std::vector<int64_t>& ids, bool strip_first_space) const {
  std::string text;
  bool strip = add_space_prefix_ && strip_first_space;
  for (int64_t id : ids) {
    bool strip_this = strip;
    strip = false;
    if (id < 0 || id >= size()) continue;
    const std::string& t = tokens_[id];
    std::string piece;
    switch (types_[id]) {
      case kUserDefined:
        piece = t;
        break;
      case kNormal:
        if (model_ == Model::kLlama) {
          for (size_t i = 0; i < t.size(); ++i) {
            if (t.compare(i, 3, "\xE2\x96\x81") == 0) {
              piece += ' ';
              i += 2;
            } else {
              piece += t[i];
            }
          }
        } else {
          for (uint32_t cp : DecodeUtf8(t)) {
            int byte = CodePointToByte(cp);
            if (byte >= 0) piece.push_back(char(byte));
            else AppendUtf8(cp, &piece);
          }
        }
        break;
      case kByte:
        if (model_ == Model::kLlama && t.size() == 6 && t.compare(0, 3, "<0x") == 0) {
          auto hex = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
          piece.push_back(char(hex(t[3]) * 16 + hex(t[4])));
        }
        break;
      default:  // control, unknown, unused: nothing
        break;
    }
    if (strip_this && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    text += piece;
  }
  return clean_spaces_ ? CleanSpaces(text) : text;
}

}  // namespace hexir::tools
