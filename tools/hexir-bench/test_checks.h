// Test-only validators, written independently of the writers they check: a JSON parser
// (RFC 8259 subset that Chrome traces use: objects, arrays, strings with escapes, numbers,
// true/false/null) and an XML well-formedness check (balanced tags, quoted attributes,
// known entities).
#pragma once

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace hexir::tools::bench::testing {

struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  double number = 0;
  bool boolean = false;
  std::string string;
  std::vector<Json> array;
  std::map<std::string, Json> object;
  const Json* get(const std::string& key) const {
    auto it = object.find(key);
    return it == object.end() ? nullptr : &it->second;
  }
};

class JsonParser {
 public:
  explicit JsonParser(std::string text) : s_(std::move(text)) {}
  // False (with error()) unless the whole text is one JSON value.
  bool Parse(Json* out) {
    if (!Value(out)) return false;
    Ws();
    if (i_ != s_.size()) return Fail("trailing characters");
    return true;
  }
  const std::string& error() const { return error_; }

 private:
  bool Fail(const char* what) {
    error_ = std::string(what) + " at offset " + std::to_string(i_);
    return false;
  }
  void Ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool Lit(const char* w) {
    size_t n = std::string(w).size();
    if (s_.compare(i_, n, w) != 0) return Fail("bad literal");
    i_ += n;
    return true;
  }
  bool String(std::string* out) {
    if (s_[i_] != '"') return Fail("expected string");
    ++i_;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) return Fail("control character in string");
      if (c == '\\') {
        if (i_ >= s_.size()) return Fail("bad escape");
        char e = s_[i_++];
        if (e == 'u') {
          if (i_ + 4 > s_.size()) return Fail("bad \\u escape");
          for (int k = 0; k < 4; ++k)
            if (!std::isxdigit(static_cast<unsigned char>(s_[i_ + k]))) return Fail("bad \\u escape");
          i_ += 4;
          c = '?';
        } else if (std::string("\"\\/bfnrt").find(e) == std::string::npos) {
          return Fail("bad escape");
        } else {
          c = e;
        }
      }
      out->push_back(c);
    }
    if (i_ >= s_.size()) return Fail("unterminated string");
    ++i_;
    return true;
  }
  bool Value(Json* v) {
    Ws();
    if (i_ >= s_.size()) return Fail("unexpected end");
    char c = s_[i_];
    if (c == '{') {
      v->kind = Json::kObject;
      ++i_;
      Ws();
      if (s_[i_] == '}') return ++i_, true;
      while (true) {
        Ws();
        std::string key;
        if (!String(&key)) return false;
        Ws();
        if (s_[i_++] != ':') return Fail("expected ':'");
        if (!Value(&v->object[key])) return false;
        Ws();
        if (s_[i_] == ',') { ++i_; continue; }
        if (s_[i_] == '}') return ++i_, true;
        return Fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      v->kind = Json::kArray;
      ++i_;
      Ws();
      if (s_[i_] == ']') return ++i_, true;
      while (true) {
        v->array.emplace_back();
        if (!Value(&v->array.back())) return false;
        Ws();
        if (s_[i_] == ',') { ++i_; continue; }
        if (s_[i_] == ']') return ++i_, true;
        return Fail("expected ',' or ']'");
      }
    }
    if (c == '"') return v->kind = Json::kString, String(&v->string);
    if (c == 't') return v->kind = Json::kBool, v->boolean = true, Lit("true");
    if (c == 'f') return v->kind = Json::kBool, Lit("false");
    if (c == 'n') return Lit("null");
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      size_t start = i_;
      if (s_[i_] == '-') ++i_;
      if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_]))) return Fail("bad number");
      if (s_[i_] == '0' && i_ + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_ + 1])))
        return Fail("leading zero");
      while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) ||
                                std::string(".eE+-").find(s_[i_]) != std::string::npos))
        ++i_;
      char* end = nullptr;
      std::string num = s_.substr(start, i_ - start);
      v->kind = Json::kNumber;
      v->number = std::strtod(num.c_str(), &end);
      if (*end) return Fail("bad number");
      return true;
    }
    return Fail("unexpected character");
  }
  std::string s_;
  size_t i_ = 0;
  std::string error_;
};

// Empty string when `text` is well-formed XML (one root element), else the problem.
inline std::string XmlProblem(const std::string& text) {
  std::vector<std::string> open;
  size_t i = 0, roots = 0;
  auto name_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':' || c == '.'; };
  auto check_text = [&](const std::string& str, size_t from, size_t to) -> std::string {
    for (size_t k = from; k < to; ++k) {
      if (str[k] == '<') return "stray '<' at " + std::to_string(k);
      if (str[k] == '&') {
        size_t semi = str.find(';', k);
        if (semi == std::string::npos || semi > to) return "unterminated entity at " + std::to_string(k);
        std::string ent = str.substr(k + 1, semi - k - 1);
        if (ent != "lt" && ent != "gt" && ent != "amp" && ent != "quot" && ent != "apos" && ent[0] != '#')
          return "unknown entity &" + ent + ";";
      }
    }
    return "";
  };
  if (text.compare(0, 5, "<?xml") == 0) i = text.find("?>") + 2;
  while (i < text.size()) {
    size_t lt = text.find('<', i);
    if (lt == std::string::npos) lt = text.size();
    std::string p = check_text(text, i, lt);
    if (!p.empty()) return p;
    if (lt != i && open.empty() && text.find_first_not_of(" \n\r\t", i) < lt) return "text outside the root";
    if (lt == text.size()) break;
    size_t gt = text.find('>', lt);
    if (gt == std::string::npos) return "unterminated tag at " + std::to_string(lt);
    std::string tag = text.substr(lt + 1, gt - lt - 1);
    if (tag.compare(0, 3, "!--") == 0) { i = text.find("-->", lt) + 3; continue; }
    if (!tag.empty() && tag[0] == '/') {
      std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) return "mismatched </" + name + ">";
      open.pop_back();
    } else {
      bool self = !tag.empty() && tag.back() == '/';
      if (self) tag.pop_back();
      size_t k = 0;
      while (k < tag.size() && name_char(tag[k])) ++k;
      std::string name = tag.substr(0, k);
      if (name.empty()) return "tag without a name at " + std::to_string(lt);
      while (k < tag.size()) {  // attributes: name="value"
        while (k < tag.size() && std::isspace(static_cast<unsigned char>(tag[k]))) ++k;
        if (k == tag.size()) break;
        size_t a = k;
        while (k < tag.size() && name_char(tag[k])) ++k;
        if (a == k || k >= tag.size() || tag[k] != '=') return "bad attribute in <" + name + ">";
        ++k;
        if (k >= tag.size() || (tag[k] != '"' && tag[k] != '\'')) return "unquoted attribute in <" + name + ">";
        size_t close = tag.find(tag[k], k + 1);
        if (close == std::string::npos) return "unterminated attribute in <" + name + ">";
        std::string value = tag.substr(k + 1, close - k - 1);
        if (value.find('<') != std::string::npos) return "'<' in an attribute of <" + name + ">";
        p = check_text(tag, k + 1, close);
        if (!p.empty()) return p;
        k = close + 1;
      }
      if (open.empty()) ++roots;
      if (!self) open.push_back(name);
    }
    i = gt + 1;
  }
  if (!open.empty()) return "unclosed <" + open.back() + ">";
  if (roots != 1) return "expected one root element, found " + std::to_string(roots);
  return "";
}

}  // namespace hexir::tools::bench::testing
