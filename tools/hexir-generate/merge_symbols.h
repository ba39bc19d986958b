// The symbol list of the merge tokenizers (bpe_encoder.cc, spm_encoder.cc): the text's UTF-8
// code points as a doubly linked list, which merging joins pairwise (MergePair). Header-only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <queue>
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

// The merge loop both tokenizers share: pops the best pair (a `Pair` has `left`, `right`)
// until none is left, skips a pair that an earlier merge emptied or that `stale(pair, l, r)`
// says no longer stands for what it was queued as, merges the rest and offers the merged
// symbol's two new neighbour pairs to `consider(left, right)` (which queues them).
template <typename Pair, typename Stale, typename Consider>
void MergeBestPairs(std::vector<MergeSymbol>& symbols, std::priority_queue<Pair>& queue, Stale stale,
                    Consider consider) {
  while (!queue.empty()) {
    Pair p = queue.top();
    queue.pop();
    MergeSymbol& l = symbols[p.left];
    MergeSymbol& r = symbols[p.right];
    if (l.length == 0 || r.length == 0 || stale(p, l, r)) continue;
    MergePair(symbols, p.left, p.right);
    consider(l.prev, p.left);
    consider(p.left, l.next);
  }
}

}  // namespace hexir::tools
