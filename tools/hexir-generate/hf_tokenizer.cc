// Vocabulary::FromHfTokenizerJson: a Hugging Face tokenizer.json onto the GGUF models.
#include <algorithm>

#include "compiler/importers/llama/Json.h"
#include "tools/common/tensor_io.h"
#include "tools/hexir-generate/vocabulary.h"

namespace hexir::tools {
namespace {

using compiler::llama::JsonValue;

bool IsType(const JsonValue* v, const char* type) {
  const JsonValue* t = v ? v->Find("type") : nullptr;
  return t && t->kind == JsonValue::Kind::kString && t->string == type;
}

// True when `v` (a normalizer or pre-tokenizer, possibly a Sequence) contains a node of
// `type` for which `match` holds.
template <typename Match>
bool Contains(const JsonValue* v, const char* type, Match match) {
  if (!v || v->kind != JsonValue::Kind::kObject) return false;
  if (IsType(v, type) && match(*v)) return true;
  for (const char* list : {"normalizers", "pretokenizers"})
    if (const JsonValue* items = v->Find(list); items && items->kind == JsonValue::Kind::kArray)
      for (const JsonValue& item : items->items)
        if (Contains(&item, type, match)) return true;
  return false;
}

bool StringIs(const JsonValue& v, const char* key, const std::string& want) {
  const JsonValue* s = v.Find(key);
  if (s && s->kind == JsonValue::Kind::kObject) s = s->Find("String");  // {"pattern": {"String": " "}}
  return s && s->kind == JsonValue::Kind::kString && s->string == want;
}

}  // namespace

StatusOr<Vocabulary> Vocabulary::FromHfTokenizerJson(const std::string& path, int64_t bos, int64_t eos) {
  StatusOr<std::string> read = ReadWholeFile(path);
  if (!read.ok()) return std::move(read).status().WithContext("tokenizer");
  const std::string& text = *read;
  StatusOr<JsonValue> parsed = compiler::llama::ParseJson(text);
  if (!parsed.ok()) return std::move(parsed).status().WithContext(StrCat("tokenizer '", path, "'"));
  const JsonValue& j = *parsed;
  auto error = [&](const std::string& what) { return InvalidArgument("tokenizer '", path, "': ", what); };

  const JsonValue* model = j.Find("model");
  if (!model || !IsType(model, "BPE")) return error("\"model\".\"type\" must be \"BPE\"");
  const JsonValue* vocab = model->Find("vocab");
  const JsonValue* merges = model->Find("merges");
  if (!vocab || vocab->kind != JsonValue::Kind::kObject || vocab->members.empty())
    return error("\"model\".\"vocab\" must be a non-empty object");
  if (!merges || merges->kind != JsonValue::Kind::kArray) return error("\"model\".\"merges\" must be an array");

  Vocabulary v;
  const JsonValue* pre = j.Find("pre_tokenizer");
  const JsonValue* norm = j.Find("normalizer");
  const JsonValue* byte_fallback = model->Find("byte_fallback");
  const bool byte_level = IsType(pre, "ByteLevel");
  const bool metaspace_text = Contains(norm, "Replace", [](const JsonValue& n) {
    return StringIs(n, "pattern", " ") && StringIs(n, "content", "\xE2\x96\x81");
  }) || IsType(pre, "Metaspace");
  if (byte_level) {
    const JsonValue* prefix = pre->Find("add_prefix_space");
    const JsonValue* regex = pre->Find("use_regex");
    if ((prefix && prefix->boolean) || (regex && regex->kind == JsonValue::Kind::kBool && !regex->boolean))
      return error("a \"ByteLevel\" pre-tokenizer is supported only with add_prefix_space false and use_regex true");
    v.model_ = Model::kGpt2;
    v.add_space_prefix_ = false;
  } else if (byte_fallback && byte_fallback->boolean && metaspace_text) {
    v.model_ = Model::kLlama;
    v.add_space_prefix_ = Contains(norm, "Prepend", [](const JsonValue& n) {
      return StringIs(n, "prepend", "\xE2\x96\x81");
    }) || (IsType(pre, "Metaspace") && !StringIs(*pre, "prepend_scheme", "never"));
  } else {
    return error("only byte-level BPE (a \"ByteLevel\" pre-tokenizer) and Llama-style BPE (byte_fallback, spaces as "
                 "U+2581) are supported");
  }

  // Ids may come in any order in the file; every id below the count must be present.
  const size_t n = vocab->members.size();
  std::vector<std::string> tokens(n);
  std::vector<bool> seen(n);
  for (const auto& [piece, id] : vocab->members) {
    if (!id.is_integer || id.integer < 0 || size_t(id.integer) >= n || seen[size_t(id.integer)])
      return error(StrCat("\"model\".\"vocab\"[\"", piece, "\"] must be a distinct id below ", n));
    tokens[size_t(id.integer)] = piece;
    seen[size_t(id.integer)] = true;
  }
  std::vector<int32_t> types(n, kNormal);
  if (const JsonValue* added = j.Find("added_tokens"); added && added->kind == JsonValue::Kind::kArray)
    for (const JsonValue& a : added->items) {
      const JsonValue* id = a.Find("id");
      const JsonValue* content = a.Find("content");
      const JsonValue* special = a.Find("special");
      if (!id || !id->is_integer || id->integer < 0 || !content || content->kind != JsonValue::Kind::kString)
        return error("an \"added_tokens\" entry needs an integer \"id\" and a string \"content\"");
      if (size_t(id->integer) >= tokens.size()) {
        tokens.resize(size_t(id->integer) + 1);
        types.resize(tokens.size(), kUnused);
      }
      tokens[size_t(id->integer)] = content->string;
      types[size_t(id->integer)] = special && special->boolean ? kControl : kUserDefined;
    }
  std::vector<float> scores(tokens.size(), 0.0f);
  for (size_t i = 0; i < merges->items.size(); ++i) {
    const JsonValue& m = merges->items[i];
    std::string left, right;
    if (m.kind == JsonValue::Kind::kString) {
      size_t space = m.string.find(' ', 1);
      if (space == std::string::npos) return error(StrCat("\"model\".\"merges\"[", i, "] is not two tokens"));
      left = m.string.substr(0, space);
      right = m.string.substr(space + 1);
    } else if (m.kind == JsonValue::Kind::kArray && m.items.size() == 2) {
      left = m.items[0].string;
      right = m.items[1].string;
    } else {
      return error(StrCat("\"model\".\"merges\"[", i, "] is not a \"left right\" string or a pair"));
    }
    v.merge_ranks_.emplace(left + std::string(1, '\0') + right, int(i));
    if (const JsonValue* id = vocab->Find(left + right); id && id->is_integer && scores[size_t(id->integer)] == 0.0f)
      scores[size_t(id->integer)] = -float(i + 1);  // the first merge forming a token ranks it
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    if (v.model_ == Model::kLlama && types[i] == kNormal && t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>')
      types[i] = kByte;
    v.ids_[t] = int64_t(i);
    if (types[i] == kUserDefined && !t.empty()) v.user_defined_.push_back(int64_t(i));
  }
  std::stable_sort(v.user_defined_.begin(), v.user_defined_.end(),
                   [&](int64_t a, int64_t b) { return tokens[a].size() > tokens[b].size(); });
  v.tokens_ = std::move(tokens);
  v.types_ = std::move(types);
  v.scores_ = std::move(scores);
  if (bos < 0 || bos >= v.size() || eos < 0 || eos >= v.size())
    return error(StrCat("BOS ", bos, " / EOS ", eos, " from config.json are not ids of its ", v.size(), " tokens"));
  v.bos_ = bos;
  v.eos_ = eos;
  v.clean_spaces_ = false;
  const JsonValue* post = j.Find("post_processor");
  const JsonValue* single = post ? post->Find("single") : nullptr;
  v.add_bos_ = IsType(post, "TemplateProcessing") && single && single->kind == JsonValue::Kind::kArray &&
               !single->items.empty() && single->items[0].Find("SpecialToken") != nullptr;
  return v;
}

}  // namespace hexir::tools
