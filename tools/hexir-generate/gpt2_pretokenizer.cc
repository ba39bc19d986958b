#include "tools/hexir-generate/gpt2_pretokenizer.h"

#include "tools/hexir-generate/unicode.h"

namespace hexir::tools {
namespace {

// Scans the code points as the regex's alternatives, in order; returns word end offsets.
std::vector<size_t> WordEnds(const std::vector<uint32_t>& cp) {
  const size_t n = cp.size();
  auto cls = [&](size_t i) { return i < n ? ClassOf(cp[i]) : UnicodeClass::kUnassigned; };
  auto space = [&](size_t i) { return i < n && IsWhitespace(cp[i]); };
  auto letter = [&](size_t i) { return cls(i) == UnicodeClass::kLetter; };
  auto number = [&](size_t i) { return cls(i) == UnicodeClass::kNumber; };
  // [^\s\p{L}\p{N}] among assigned code points (llama.cpp's flags are empty for unassigned).
  auto other = [&](size_t i) { return i < n && !space(i) && cls(i) == UnicodeClass::kOther; };
  auto is = [&](size_t i, char c) { return i < n && cp[i] == uint32_t(c); };

  std::vector<size_t> ends;
  for (size_t pos = 0; pos < n;) {
    if (is(pos, '\'')) {  // 's|'t|'re|'ve|'m|'ll|'d
      if (is(pos + 1, 's') || is(pos + 1, 't') || is(pos + 1, 'm') || is(pos + 1, 'd')) {
        ends.push_back(pos += 2);
        continue;
      }
      if ((is(pos + 1, 'r') && is(pos + 2, 'e')) || (is(pos + 1, 'v') && is(pos + 2, 'e')) ||
          (is(pos + 1, 'l') && is(pos + 2, 'l'))) {
        ends.push_back(pos += 3);
        continue;
      }
    }
    // ` ?X+` for the three classes: an optional leading ASCII space joins the run.
    size_t start = is(pos, ' ') ? pos + 1 : pos;
    bool matched = false;
    for (auto in_run : {+[](bool l, bool, bool) { return l; }, +[](bool, bool d, bool) { return d; },
                        +[](bool, bool, bool o) { return o; }}) {
      auto member = [&](size_t i) { return in_run(letter(i), number(i), other(i)); };
      if (!member(start)) continue;
      size_t end = start;
      while (member(end)) ++end;
      ends.push_back(pos = end);
      matched = true;
      break;
    }
    if (matched) continue;
    size_t spaces = 0;
    while (space(pos + spaces)) ++spaces;
    if (spaces > 1 && pos + spaces < n) {  // \s+(?!\S): leave the last space to the next word
      ends.push_back(pos += spaces - 1);
      continue;
    }
    if (spaces > 0) {  // \s+
      ends.push_back(pos += spaces);
      continue;
    }
    ends.push_back(++pos);  // nothing matches: one code point
  }
  return ends;
}

}  // namespace

std::vector<std::string> Gpt2PreTokenize(std::string_view text) {
  std::vector<uint32_t> cps = DecodeUtf8(text);
  std::vector<std::string> words;
  size_t begin = 0;
  for (size_t end : WordEnds(cps)) {
    std::string utf8, mapped;
    for (size_t i = begin; i < end; ++i) AppendUtf8(cps[i], &utf8);
    for (unsigned char byte : utf8) AppendUtf8(ByteToCodePoint(byte), &mapped);
    words.push_back(std::move(mapped));
    begin = end;
  }
  return words;
}

}  // namespace hexir::tools
