// The GGUF tokenizer on small vocabularies whose ids were worked out by hand (the agreement
// with llama.cpp on real vocabularies is tests/llm/tokenizer_test.sh).
#include "tools/hexir-generate/vocabulary.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>

#include "tools/hexir-generate/gpt2_pretokenizer.h"

namespace hexir::tools {
namespace {

using compiler::llama::GgufFile;
using compiler::llama::GgufValue;
using compiler::llama::GgufValueType;

const std::string kSp = "\xE2\x96\x81";  // U+2581, SentencePiece's space
const std::string kG = "\xC4\xA0";       // U+0120, GPT-2's image of the space byte

struct Metadata {
  GgufFile f;
  void Put(const std::string& key, GgufValue v) {
    f.key_index[key] = f.metadata.size();
    f.metadata.emplace_back(key, std::move(v));
  }
  void Str(const std::string& key, const std::string& s) {
    GgufValue v;
    v.type = GgufValueType::kString;
    v.s = s;
    Put(key, v);
  }
  void Id(const std::string& key, int64_t id) {
    GgufValue v;
    v.type = GgufValueType::kUint32;
    v.u = uint64_t(id);
    v.i = id;
    Put(key, v);
  }
  void Bool(const std::string& key, bool b) {
    GgufValue v;
    v.type = GgufValueType::kBool;
    v.u = b;
    Put(key, v);
  }
  template <typename T>
  void Array(const std::string& key, GgufValueType elem, const std::vector<T>& items) {
    GgufValue v;
    v.type = GgufValueType::kArray;
    v.elem_type = elem;
    for (const T& item : items) {
      GgufValue e;
      e.type = elem;
      if constexpr (std::is_same_v<T, std::string>) e.s = item;
      else if constexpr (std::is_same_v<T, float>) e.f = item;
      else e.i = item;
      v.array.push_back(e);
    }
    Put(key, v);
  }
};

// ids: 0 <unk>, 1 <s>, 2 </s>, 3 <0x0A>, 4 <0xC3>, 5 <0xA9>, 6 ▁, 7 a, 8 b, 9 ▁a, 10 ab, 11 <|x|>
Metadata SpmVocabulary(float score_sp_a, float score_ab) {
  Metadata m;
  m.Str("tokenizer.ggml.model", "llama");
  m.Array<std::string>("tokenizer.ggml.tokens", GgufValueType::kString,
                       {"<unk>", "<s>", "</s>", "<0x0A>", "<0xC3>", "<0xA9>", kSp, "a", "b", kSp + "a", "ab", "<|x|>"});
  m.Array<float>("tokenizer.ggml.scores", GgufValueType::kFloat32,
                 {0, 0, 0, 0, 0, 0, -5, -6, -7, score_sp_a, score_ab, 0});
  m.Array<int32_t>("tokenizer.ggml.token_type", GgufValueType::kInt32, {2, 3, 3, 6, 6, 6, 1, 1, 1, 1, 1, 4});
  return m;
}

Vocabulary Load(const Metadata& m) {
  StatusOr<Vocabulary> v = Vocabulary::FromGguf(m.f);
  REQUIRE(v.ok());
  return std::move(*v);
}

using Ids = std::vector<int64_t>;

TEST_CASE("llama vocabulary: space prefix, highest-score merges first, byte fallback") {
  Vocabulary sp_a_first = Load(SpmVocabulary(-1, -2));
  CHECK(sp_a_first.Encode("ab", true) == Ids{1, 9, 8});  // ▁a beats ab
  CHECK(sp_a_first.Encode("ab", false) == Ids{9, 8});
  Vocabulary ab_first = Load(SpmVocabulary(-2, -1));
  CHECK(ab_first.Encode("ab", false) == Ids{6, 10});  // ab beats ▁a
  CHECK(sp_a_first.Encode("\xC3\xA9\n", false) == Ids{6, 4, 5, 3});  // é and \n as <0xNN>
  CHECK(sp_a_first.Encode("a  b", false) == Ids{9, 6, 6, 8});
  CHECK(sp_a_first.Encode("", true) == Ids{1});
  CHECK(sp_a_first.bos() == 1);
  CHECK(sp_a_first.eos() == 2);
}

TEST_CASE("llama vocabulary: added tokens are kept whole and a space prefix follows them") {
  Vocabulary v = Load(SpmVocabulary(-1, -2));
  CHECK(v.Encode("a<|x|>a", false) == Ids{9, 11, 9});
  // Control tokens' text is not special in the input: "<s>" is plain text, and its bytes
  // have no tokens here (no <0x3C>...), so only the prefix ▁ remains.
  CHECK(v.Encode("<s>", false) == Ids{6});
}

TEST_CASE("llama vocabulary: decoding drops one leading space, control tokens print nothing") {
  Vocabulary v = Load(SpmVocabulary(-1, -2));
  CHECK(v.Decode({9, 8}) == "ab");
  CHECK(v.Decode({9, 8}, false) == " ab");
  CHECK(v.Decode({1, 9, 8}) == " ab");  // the strip applies to the first token, BOS here
  CHECK(v.Decode({6, 4, 5, 3, 2}) == "\xC3\xA9\n");
  CHECK(v.Decode({11, 0}) == "<|x|>");
}

TEST_CASE("the file's BOS, EOS and add_bos_token replace the defaults") {
  Metadata m = SpmVocabulary(-1, -2);
  m.Id("tokenizer.ggml.bos_token_id", 2);
  m.Id("tokenizer.ggml.eos_token_id", 1);
  m.Bool("tokenizer.ggml.add_bos_token", false);
  Vocabulary v = Load(m);
  CHECK(v.bos() == 2);
  CHECK(v.eos() == 1);
  CHECK(v.Encode("a", true) == Ids{9});
}

TEST_CASE("the GPT-2 pre-tokenizer splits like llama.cpp's gpt-2 regex") {
  auto words = [](const std::string& s) { return Gpt2PreTokenize(s); };
  using W = std::vector<std::string>;
  CHECK(words("Hello world!") == W{"Hello", kG + "world", "!"});
  CHECK(words("a  b") == W{"a", kG, kG + "b"});
  CHECK(words("x   \n") == W{"x", kG + kG + kG + "\xC4\x8A"});  // \n is U+010A
  CHECK(words("don't 123abc") == W{"don", "'t", kG + "123", "abc"});
  CHECK(words("h\xC3\xA9llo") == W{"h\xC3\x83\xC2\xA9llo"});  // é's bytes C3 A9 map to U+00C3 U+00A9
  CHECK(words(" ...?!") == W{kG + "...?!"});
}

// Byte-level BPE: tokens 0-9 single characters, then merged tokens; merges by rank.
Metadata BpeVocabulary() {
  Metadata m;
  m.Str("tokenizer.ggml.model", "gpt2");
  m.Str("tokenizer.ggml.pre", "gpt-2");
  m.Array<std::string>("tokenizer.ggml.tokens", GgufValueType::kString,
                       {"H", "e", "l", "o", kG, "w", "r", "d", "!", "<|endoftext|>", "ll", "He", "Hell", "Hello",
                        kG + "w", "or"});
  m.Array<int32_t>("tokenizer.ggml.token_type", GgufValueType::kInt32, {1, 1, 1, 1, 1, 1, 1, 1, 1, 3, 1, 1, 1, 1, 1, 1});
  m.Array<std::string>("tokenizer.ggml.merges", GgufValueType::kString,
                       {"l l", "H e", "He ll", "Hell o", kG + " w", "o r"});
  m.Id("tokenizer.ggml.bos_token_id", 9);
  m.Id("tokenizer.ggml.eos_token_id", 9);
  return m;
}

TEST_CASE("gpt2 vocabulary: lowest merge rank first within each word; no BOS by default") {
  Vocabulary v = Load(BpeVocabulary());
  CHECK(v.Encode("Hello world!", true) == Ids{13, 14, 15, 2, 7, 8});
  CHECK(v.Encode("Hello", false) == Ids{13});
  CHECK(v.Decode({13, 14, 15, 2, 7, 8}) == "Hello world!");
  CHECK(v.Decode({13, 4, 8, 9}) == "Hello!");  // " !" loses its space (clean_up_tokenization_spaces)
  CHECK(v.bos() == 9);
}

TEST_CASE("malformed tokenizer metadata is a named error") {
  auto error = [](const Metadata& m) {
    StatusOr<Vocabulary> v = Vocabulary::FromGguf(m.f);
    REQUIRE(!v.ok());
    return v.status().ToString();
  };
  Metadata none;
  CHECK_THAT(error(none), Catch::Contains("'tokenizer.ggml.model' is missing"));
  Metadata bert;
  bert.Str("tokenizer.ggml.model", "bert");
  CHECK_THAT(error(bert), Catch::Contains("'tokenizer.ggml.model'") && Catch::Contains("is 'bert'"));
  Metadata scores = SpmVocabulary(-1, -2);
  scores.Array<float>("tokenizer.ggml.scores", GgufValueType::kFloat32, {0, 1});
  CHECK_THAT(error(scores), Catch::Contains("'tokenizer.ggml.scores'") && Catch::Contains("has 2 entries") &&
                                Catch::Contains("has 12"));
  Metadata bos = SpmVocabulary(-1, -2);
  bos.Id("tokenizer.ggml.bos_token_id", 12);
  CHECK_THAT(error(bos), Catch::Contains("'tokenizer.ggml.bos_token_id'") && Catch::Contains("0..11"));
  Metadata pre = BpeVocabulary();
  pre.Str("tokenizer.ggml.pre", "llama-bpe");
  CHECK_THAT(error(pre), Catch::Contains("'tokenizer.ggml.pre'") && Catch::Contains("'llama-bpe'"));
  Metadata merge = BpeVocabulary();
  merge.Array<std::string>("tokenizer.ggml.merges", GgufValueType::kString, {"l l", "Hello"});
  CHECK_THAT(error(merge), Catch::Contains("'tokenizer.ggml.merges'[1]") && Catch::Contains("'Hello'"));
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const char* dir = std::getenv("TEST_TMPDIR");
  std::string path = std::string(dir ? dir : "/tmp") + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Llama 2's tokenizer.json shape: BPE with byte_fallback, spaces normalized to U+2581.
const char* kLlamaTokenizerJson = R"({
  "added_tokens": [{"id": 0, "content": "<unk>", "special": true}, {"id": 1, "content": "<s>", "special": true},
                   {"id": 2, "content": "</s>", "special": true}],
  "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                 {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
  "pre_tokenizer": null,
  "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}}]},
  "model": {"type": "BPE", "byte_fallback": true,
            "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "<0x0A>": 3, "▁": 4, "a": 5, "b": 6, "▁a": 7, "ab": 8},
            "merges": ["▁ a", "a b"]}})";

TEST_CASE("a Llama-style tokenizer.json encodes by merge rank with byte fallback and BOS from its template") {
  StatusOr<Vocabulary> v = Vocabulary::FromHfTokenizerJson(WriteTemp("llama_tokenizer.json", kLlamaTokenizerJson), 1, 2);
  REQUIRE(v.ok());
  CHECK(v->model() == Vocabulary::Model::kLlama);
  CHECK(v->add_bos());
  CHECK(v->Encode("ab", true) == Ids{1, 7, 6});  // "▁ a" (rank 0) before "a b" (rank 1)
  CHECK(v->Encode("a\n", false) == Ids{7, 3});  // \n has no token: <0x0A>
  CHECK(v->Decode({1, 7, 6, 3, 2}) == " ab\n");
  CHECK(v->Decode({7, 6}) == "ab");
}

TEST_CASE("a byte-level tokenizer.json is the gpt2 model; other tokenizers are named errors") {
  std::string bpe = R"({"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "added_tokens": [{"id": 3, "content": "<|endoftext|>", "special": true}],
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]]}})";
  StatusOr<Vocabulary> v = Vocabulary::FromHfTokenizerJson(WriteTemp("bpe_tokenizer.json", bpe), 3, 3);
  REQUIRE(v.ok());
  CHECK(v->model() == Vocabulary::Model::kGpt2);
  CHECK(!v->add_bos());
  CHECK(v->Encode("abba", true) == Ids{2, 1, 0});
  CHECK(v->Decode({2, 3}) == "ab");

  auto error = [](const std::string& name, const std::string& text, int64_t bos = 0) {
    StatusOr<Vocabulary> r = Vocabulary::FromHfTokenizerJson(WriteTemp(name, text), bos, bos);
    REQUIRE(!r.ok());
    return r.status().ToString();
  };
  CHECK_THAT(error("wp.json", R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})"),
             Catch::Contains("wp.json") && Catch::Contains("\"model\".\"type\" must be \"BPE\""));
  CHECK_THAT(error("prefix.json", R"({"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": true},
             "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})"), Catch::Contains("add_prefix_space false"));
  CHECK_THAT(error("ids.json", R"({"pre_tokenizer": {"type": "ByteLevel"},
             "model": {"type": "BPE", "vocab": {"a": 0, "b": 0}, "merges": []}})"),
             Catch::Contains("\"model\".\"vocab\"[\"b\"] must be a distinct id below 2"));
  CHECK_THAT(error("bos.json", R"({"pre_tokenizer": {"type": "ByteLevel"},
             "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})", 5),
             Catch::Contains("BOS 5 / EOS 5 from config.json are not ids of its 1 tokens"));
  CHECK_THAT(error("bad.json", "{\"model\": "), Catch::Contains("bad.json") && Catch::Contains("JSON: expected"));
}

}  // namespace
}  // namespace hexir::tools
