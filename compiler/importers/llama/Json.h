// A small JSON reader for the Hugging Face files (config.json, the safetensors header,
// model.safetensors.index.json, tokenizer.json): RFC 8259 values into a tree. Integers without
// fraction or exponent keep their exact int64 value; strings are UTF-8 (\uXXXX escapes and
// surrogate pairs decoded). Nesting is limited to 64 levels. Errors name the byte offset and
// what was expected. MLIR-free; no state; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace hexir::compiler::llama {

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  bool is_integer = false;  // a number written without fraction or exponent that fits int64
  int64_t integer = 0;
  std::string string;
  std::vector<JsonValue> items;                            // arrays
  std::vector<std::pair<std::string, JsonValue>> members;  // objects, in file order

  const JsonValue* Find(std::string_view key) const;  // objects: the last member named `key`
  const char* KindName() const;                       // "null", "bool", "number", ...
};

// Parses the whole of `text` (one value, surrounding whitespace allowed).
StatusOr<JsonValue> ParseJson(std::string_view text);

}  // namespace hexir::compiler::llama
