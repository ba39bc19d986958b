// The symbol list of the merge tokenizers (bpe_encoder.cc, spm_encoder.cc): the text's UTF-8
// code points as a doubly linked list, which merging joins pairwise (MergePair). Header-only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tools/hexir-generate/unicode.h"

namespace hexir::tools {

// Bytes [begin, begin + length) of the text; prev/next index the neighbours (-1 at the ends).
// A merge grows the left symbol and sets the right one's length to 0.
struct MergeSymbol {
  int prev, next;
  size_t begin, length;
};

// One symbol per code point of `text` (Utf8SequenceLength; a truncated sequence at the end
// keeps the bytes that are there).
inline std::vector<MergeSymbol> CodePointSymbols(std::string_view text) {
  std::vector<MergeSymbol> symbols;
  for (size_t at = 0; at < text.size();) {
    size_t n = std::min(Utf8SequenceLength(uint8_t(text[at])), text.size() - at);
    int index = int(symbols.size());
    symbols.push_back({index - 1, at + n == text.size() ? -1 : index + 1, at, n});
    at += n;
  }
  return symbols;
}

// Merges symbol `right` into its left neighbour `left`: `left` covers both, `right` becomes
// empty and leaves the list.
inline void MergePair(std::vector<MergeSymbol>& symbols, int left, int right) {
  MergeSymbol& l = symbols[left];
  MergeSymbol& r = symbols[right];
  l.length += r.length;
  r.length = 0;
  l.next = r.next;
  if (r.next >= 0) symbols[r.next].prev = left;
}

}  // namespace hexir::tools
