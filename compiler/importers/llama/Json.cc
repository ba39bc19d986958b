#include "compiler/importers/llama/Json.h"

#include <cerrno>
#include <cstdlib>

namespace hexir::compiler::llama {
namespace {

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  StatusOr<JsonValue> Document() {
    JsonValue v;
    HEXIR_RETURN_IF_ERROR(Value(&v, 0));
    SkipSpace();
    if (at_ != s_.size()) return Error("the end of the text after the value");
    return v;
  }

 private:
  Status Error(const std::string& expected) const {
    return InvalidArgument("JSON: expected ", expected, " at offset ", at_,
                           at_ < s_.size() ? "" : " (the end of the text)");
  }
  void SkipSpace() {
    while (at_ < s_.size() && (s_[at_] == ' ' || s_[at_] == '\t' || s_[at_] == '\n' || s_[at_] == '\r')) ++at_;
  }
  bool Literal(std::string_view word) {
    if (s_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }

  Status Value(JsonValue* v, int depth) {
    if (depth > 64) return Error("at most 64 nested arrays/objects");
    SkipSpace();
    if (at_ >= s_.size()) return Error("a value");
    char c = s_[at_];
    if (c == '{') return Object(v, depth);
    if (c == '[') return Array(v, depth);
    if (c == '"') {
      v->kind = JsonValue::Kind::kString;
      return String(&v->string);
    }
    if (Literal("null")) return Status::Ok();
    if (Literal("true") || Literal("false")) {
      v->kind = JsonValue::Kind::kBool;
      v->boolean = s_[at_ - 1] == 'e' && s_[at_ - 2] == 'u';
      return Status::Ok();
    }
    return Number(v);
  }

  Status Number(JsonValue* v) {
    size_t start = at_;
    if (at_ < s_.size() && s_[at_] == '-') ++at_;
    size_t digits = at_;
    while (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9') ++at_;
    if (at_ == digits) {
      at_ = start;
      return Error("a value");
    }
    bool integer = true;
    if (at_ < s_.size() && s_[at_] == '.') {
      integer = false;
      ++at_;
      size_t frac = at_;
      while (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9') ++at_;
      if (at_ == frac) return Error("digits after '.'");
    }
    if (at_ < s_.size() && (s_[at_] == 'e' || s_[at_] == 'E')) {
      integer = false;
      ++at_;
      if (at_ < s_.size() && (s_[at_] == '+' || s_[at_] == '-')) ++at_;
      size_t exp = at_;
      while (at_ < s_.size() && s_[at_] >= '0' && s_[at_] <= '9') ++at_;
      if (at_ == exp) return Error("exponent digits");
    }
    std::string text(s_.substr(start, at_ - start));
    v->kind = JsonValue::Kind::kNumber;
    v->number = std::strtod(text.c_str(), nullptr);
    if (integer) {
      errno = 0;
      long long i = std::strtoll(text.c_str(), nullptr, 10);
      v->is_integer = errno == 0;
      v->integer = i;
    }
    return Status::Ok();
  }

  Status Hex4(uint32_t* out) {
    if (at_ + 4 > s_.size()) return Error("4 hex digits after \\u");
    uint32_t cp = 0;
    for (int k = 0; k < 4; ++k) {
      char h = s_[at_++];
      int d = h >= '0' && h <= '9' ? h - '0' : (h | 0x20) >= 'a' && (h | 0x20) <= 'f' ? (h | 0x20) - 'a' + 10 : -1;
      if (d < 0) return Error("a hex digit");
      cp = cp * 16 + uint32_t(d);
    }
    *out = cp;
    return Status::Ok();
  }

  Status String(std::string* out) {
    ++at_;  // opening quote
    while (true) {
      if (at_ >= s_.size()) return Error("a closing '\"'");
      char c = s_[at_++];
      if (c == '"') return Status::Ok();
      if (static_cast<unsigned char>(c) < 0x20) {
        --at_;
        return Error("no control character inside a string");
      }
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (at_ >= s_.size()) return Error("an escape character");
      char e = s_[at_++];
      switch (e) {
        case '"': case '\\': case '/': out->push_back(e); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          uint32_t cp;
          HEXIR_RETURN_IF_ERROR(Hex4(&cp));
          if (cp >= 0xD800 && cp < 0xDC00 && s_.substr(at_, 2) == "\\u") {
            at_ += 2;
            uint32_t low;
            HEXIR_RETURN_IF_ERROR(Hex4(&low));
            if (low < 0xDC00 || low > 0xDFFF) return Error("a low surrogate after a high surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          AppendUtf8(cp, out);
          break;
        }
        default:
          --at_;
          return Error("one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u");
      }
    }
  }

  static void AppendUtf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(char(cp));
    } else if (cp < 0x800) {
      out->push_back(char(0xC0 | (cp >> 6)));
      out->push_back(char(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(char(0xE0 | (cp >> 12)));
      out->push_back(char(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(char(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(char(0xF0 | (cp >> 18)));
      out->push_back(char(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(char(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(char(0x80 | (cp & 0x3F)));
    }
  }

  Status Array(JsonValue* v, int depth) {
    v->kind = JsonValue::Kind::kArray;
    ++at_;
    SkipSpace();
    if (at_ < s_.size() && s_[at_] == ']') {
      ++at_;
      return Status::Ok();
    }
    while (true) {
      v->items.emplace_back();
      HEXIR_RETURN_IF_ERROR(Value(&v->items.back(), depth + 1));
      SkipSpace();
      if (at_ < s_.size() && s_[at_] == ',') {
        ++at_;
        continue;
      }
      if (at_ < s_.size() && s_[at_] == ']') {
        ++at_;
        return Status::Ok();
      }
      return Error("',' or ']'");
    }
  }

  Status Object(JsonValue* v, int depth) {
    v->kind = JsonValue::Kind::kObject;
    ++at_;
    SkipSpace();
    if (at_ < s_.size() && s_[at_] == '}') {
      ++at_;
      return Status::Ok();
    }
    while (true) {
      SkipSpace();
      if (at_ >= s_.size() || s_[at_] != '"') return Error("a member name string");
      std::string key;
      HEXIR_RETURN_IF_ERROR(String(&key));
      SkipSpace();
      if (at_ >= s_.size() || s_[at_] != ':') return Error("':'");
      ++at_;
      v->members.emplace_back(std::move(key), JsonValue());
      HEXIR_RETURN_IF_ERROR(Value(&v->members.back().second, depth + 1));
      SkipSpace();
      if (at_ < s_.size() && s_[at_] == ',') {
        ++at_;
        continue;
      }
      if (at_ < s_.size() && s_[at_] == '}') {
        ++at_;
        return Status::Ok();
      }
      return Error("',' or '}'");
    }
  }

  std::string_view s_;
  size_t at_ = 0;
};

}  // namespace

const JsonValue* JsonValue::Find(std::string_view key) const {
  for (auto it = members.rbegin(); it != members.rend(); ++it)
    if (it->first == key) return &it->second;
  return nullptr;
}

const char* JsonValue::KindName() const {
  switch (kind) {
    case Kind::kNull: return "null";
    case Kind::kBool: return "bool";
    case Kind::kNumber: return "number";
    case Kind::kString: return "string";
    case Kind::kArray: return "array";
    case Kind::kObject: return "object";
  }
  return "?";
}

StatusOr<JsonValue> ParseJson(std::string_view text) { return Parser(text).Document(); }

}  // namespace hexir::compiler::llama
