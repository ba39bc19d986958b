// The JSON reader and the safetensors header parser on bytes built in memory.
#include <catch2/catch.hpp>
#include <cstring>

#include "compiler/importers/llama/Json.h"
#include "compiler/importers/llama/Safetensors.h"

namespace hexir::compiler::llama {
namespace {

std::string JsonError(const std::string& text) {
  StatusOr<JsonValue> v = ParseJson(text);
  REQUIRE(!v.ok());
  return v.status().ToString();
}

TEST_CASE("JSON values: numbers keep exact integers, strings decode escapes and surrogates") {
  StatusOr<JsonValue> v = ParseJson(R"( {"a": [1, -2.5e1, 9007199254740993, true, false, null],
                                         "s": "x\n\"\u00e9\ud83d\ude42", "a": {}} )");
  REQUIRE(v.ok());
  REQUIRE(v->kind == JsonValue::Kind::kObject);
  const JsonValue* a = v->members[0].first == "a" ? &v->members[0].second : nullptr;
  REQUIRE(a);
  REQUIRE(a->items.size() == 6);
  CHECK(a->items[0].is_integer);
  CHECK(a->items[0].integer == 1);
  CHECK(!a->items[1].is_integer);
  CHECK(a->items[1].number == -25.0);
  CHECK(a->items[2].integer == 9007199254740993LL);  // not representable as a double
  CHECK(a->items[3].boolean);
  CHECK(!a->items[4].boolean);
  CHECK(a->items[5].kind == JsonValue::Kind::kNull);
  CHECK(v->Find("s")->string == "x\n\"\xC3\xA9\xF0\x9F\x99\x82");
  CHECK(v->Find("a")->kind == JsonValue::Kind::kObject);  // the last of equal names
}

TEST_CASE("malformed JSON names the offset and what was expected") {
  CHECK_THAT(JsonError("{\"a\": 1,}"), Catch::Contains("expected a member name string at offset 8"));
  CHECK_THAT(JsonError("[1 2]"), Catch::Contains("expected ',' or ']' at offset 3"));
  CHECK_THAT(JsonError("\"abc"), Catch::Contains("closing '\"'") && Catch::Contains("the end of the text"));
  CHECK_THAT(JsonError("{} x"), Catch::Contains("the end of the text after the value at offset 3"));
  CHECK_THAT(JsonError("\"\\ud83d\\u0041\""), Catch::Contains("low surrogate"));
  CHECK_THAT(JsonError(std::string(100, '[') + std::string(100, ']')), Catch::Contains("at most 64 nested"));
  CHECK_THAT(JsonError("1."), Catch::Contains("digits after '.'"));
}

// A safetensors file: header JSON padded to 8, then `data` bytes.
std::string File(const std::string& header, size_t data) {
  std::string h = header + std::string((8 - header.size() % 8) % 8, ' ');
  uint64_t n = h.size();
  std::string s(8, '\0');
  std::memcpy(&s[0], &n, 8);
  return s + h + std::string(data, '\x11');
}

StatusOr<SafetensorsFile> Parse(const std::string& s) {
  return ParseSafetensors(reinterpret_cast<const uint8_t*>(s.data()), s.size(), "m.safetensors");
}

std::string Error(const std::string& s) {
  StatusOr<SafetensorsFile> f = Parse(s);
  REQUIRE(!f.ok());
  return f.status().ToString();
}

const char* kHeader =
    R"({"__metadata__": {"format": "pt"}, "w": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]},)"
    R"( "b": {"dtype": "F32", "shape": [3], "data_offsets": [12, 24]}})";

TEST_CASE("safetensors: dtypes, shapes and absolute offsets") {
  std::string s = File(kHeader, 24);
  StatusOr<SafetensorsFile> f = Parse(s);
  REQUIRE(f.ok());
  REQUIRE(f->tensors.size() == 2);
  const SafetensorsTensor& w = f->tensors.at("w");
  CHECK(w.type == hal::ElementType::kBF16);
  CHECK(w.shape == std::vector<int64_t>{2, 3});
  CHECK(w.file_offset == int64_t(s.size()) - 24);
  CHECK(f->tensors.at("b").file_offset == int64_t(s.size()) - 12);
  CHECK(f->tensors.at("b").byte_size == 12);
}

TEST_CASE("every truncation of a safetensors file is a named error, never a crash") {
  std::string s = File(kHeader, 24);
  for (size_t n = 0; n < s.size(); ++n) {
    StatusOr<SafetensorsFile> f = Parse(s.substr(0, n));
    INFO("length " << n);
    REQUIRE(!f.ok());
    CHECK_THAT(f.status().ToString(), Catch::Contains("m.safetensors"));
  }
}

TEST_CASE("malformed safetensors headers name the tensor and field") {
  CHECK_THAT(Error(std::string("\xff\xff\xff\xff\x00\x00\x00\x00{}", 10)),
             Catch::Contains("header length 4294967295 runs past the end of the file (2 bytes follow"));
  CHECK_THAT(Error(File(R"({"w": {"dtype": "I8", "shape": [1], "data_offsets": [0, 1]}})", 1)),
             Catch::Contains("tensor 'w' has dtype I8; only F32, F16 and BF16"));
  CHECK_THAT(Error(File(R"({"w": {"dtype": "F16", "shape": [2, 2], "data_offsets": [0, 6]}})", 8)),
             Catch::Contains("tensor 'w' has data_offsets [0, 6] (6 bytes) but dtype F16 and its shape need 8 bytes"));
  CHECK_THAT(Error(File(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 8)),
             Catch::Contains("tensor 'w' data ends at") && Catch::Contains("past the end of the file"));
  CHECK_THAT(Error(File(R"({"w": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 16]}})", 16)),
             Catch::Contains("tensor 'w' has a shape whose byte size overflows"));
  CHECK_THAT(Error(File(R"({"w": {"dtype": "F32", "shape": [1]}})", 4)), Catch::Contains("tensor 'w' needs \"dtype\""));
  CHECK_THAT(Error(File("[1]", 0)), Catch::Contains("the header is a JSON array, not an object"));
  CHECK_THAT(Error(File("{\"w\": ", 0)), Catch::Contains("m.safetensors' header") && Catch::Contains("JSON: expected"));
}

}  // namespace
}  // namespace hexir::compiler::llama
