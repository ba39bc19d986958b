#include "tools/hexir-generate/unicode.h"

#include <algorithm>
#include <array>

namespace hexir::tools {
namespace {

struct ClassRange {
  uint32_t first, last;
  UnicodeClass cls;
};
constexpr ClassRange kClassRanges[] = {
#include "tools/hexir-generate/unicode_classes.inc"
};

// The 256 images of GPT-2's byte map, built once.
const std::array<uint32_t, 256>& ByteImages() {
  static const std::array<uint32_t, 256> images = [] {
    std::array<uint32_t, 256> m{};
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
      m[b] = printable ? b : next++;
    }
    return m;
  }();
  return images;
}

}  // namespace

UnicodeClass ClassOf(uint32_t cp) {
  auto it = std::upper_bound(std::begin(kClassRanges), std::end(kClassRanges), cp,
                             [](uint32_t v, const ClassRange& r) { return v < r.first; });
  if (it == std::begin(kClassRanges)) return UnicodeClass::kUnassigned;
  --it;
  return cp <= it->last ? it->cls : UnicodeClass::kUnassigned;
}

bool IsWhitespace(uint32_t cp) {
  return (cp >= 0x9 && cp <= 0xD) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

size_t Utf8SequenceLength(uint8_t lead) {
  static constexpr uint8_t kByHighNibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kByHighNibble[lead >> 4];
}

std::vector<uint32_t> DecodeUtf8(std::string_view text) {
  std::vector<uint32_t> cps;
  cps.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint8_t lead = uint8_t(text[i]);
    size_t n = Utf8SequenceLength(lead);
    bool ok = n == 1 ? lead < 0x80 : lead < 0xF8 && i + n <= text.size();
    uint32_t cp = n == 1 ? lead : lead & (0x7F >> n);
    for (size_t k = 1; ok && k < n; ++k) {
      uint8_t c = uint8_t(text[i + k]);
      ok = (c & 0xC0) == 0x80;
      cp = (cp << 6) | (c & 0x3F);
    }
    cps.push_back(ok ? cp : 0xFFFD);
    i += ok ? n : 1;
  }
  return cps;
}

void AppendUtf8(uint32_t cp, std::string* out) {
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

uint32_t ByteToCodePoint(uint8_t byte) { return ByteImages()[byte]; }

int CodePointToByte(uint32_t cp) {
  if (cp < 256 && ByteImages()[cp] == cp) return int(cp);
  if (cp >= 256 && cp < 256 + 68) {
    for (int b = 0; b < 256; ++b)
      if (ByteImages()[b] == cp) return b;
  }
  return -1;
}

}  // namespace hexir::tools
