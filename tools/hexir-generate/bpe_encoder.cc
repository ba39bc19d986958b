// Byte-level BPE encoding, as llama.cpp's BPE tokenizer does it: Gpt2PreTokenize splits the
// text into words (bytes already mapped to code points); within a word the symbols start as
// code points, a queue holds adjacent pairs by merge rank (ties: the leftmost pair), and the
// lowest-ranked pair whose two symbols are still as queued is merged. A final symbol that is
// no token is emitted as the tokens of its single bytes, when those exist.
#include <queue>

#include "tools/hexir-generate/gpt2_pretokenizer.h"
#include "tools/hexir-generate/merge_symbols.h"
#include "tools/hexir-generate/unicode.h"
#include "tools/hexir-generate/vocabulary.h"

namespace hexir::tools {
namespace {

struct Pair {
  int left, right;
  int rank;
  std::string text;  // the concatenation when queued (a stale pair no longer matches)
  bool operator<(const Pair& o) const { return rank > o.rank || (rank == o.rank && left > o.left); }
};

}  // namespace

void Vocabulary::EncodeBpe(std::string_view text, std::vector<int64_t>* out) const {
  for (const std::string& word : Gpt2PreTokenize(text)) {
    std::string_view w = word;
    std::vector<MergeSymbol> symbols = CodePointSymbols(w);
    auto piece = [&](const MergeSymbol& s) { return w.substr(s.begin, s.length); };
    std::priority_queue<Pair> queue;
    auto consider = [&](int left, int right) {
      if (left < 0 || right < 0) return;
      int rank = BpeRank(piece(symbols[left]), piece(symbols[right]));
      if (rank < 0) return;
      queue.push({left, right, rank, std::string(piece(symbols[left])) + std::string(piece(symbols[right]))});
    };
    for (int i = 1; i < int(symbols.size()); ++i) consider(i - 1, i);
    MergeBestPairs(
        symbols, queue,
        [&](const Pair& p, const MergeSymbol& l, const MergeSymbol& r) {
          return std::string(piece(l)) + std::string(piece(r)) != p.text;
        },
        consider);
    for (const MergeSymbol& s : symbols) {
      if (s.length == 0) continue;
      if (int64_t id = Find(piece(s)); id >= 0) {
        out->push_back(id);
        continue;
      }
      for (char byte : piece(s))
        if (int64_t id = Find(std::string(1, byte)); id >= 0) out->push_back(id);
    }
  }
}

}  // namespace hexir::tools
