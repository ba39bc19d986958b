// SentencePiece-style encoding of an already escaped fragment (spaces are U+2581), as
// llama.cpp's SPM tokenizer does it: the symbols start as UTF-8 code points; a queue holds
// every adjacent pair whose concatenation is a token, by that token's score (ties: the
// leftmost pair); the best pair still intact is merged and its new neighbours queued.
// A final symbol that is not a token is split back into the pair that formed it, and a
// single code point that is no token becomes one <0xNN> token per byte.
#include <map>
#include <queue>

#include "tools/hexir-generate/merge_symbols.h"
#include "tools/hexir-generate/unicode.h"
#include "tools/hexir-generate/vocabulary.h"

namespace hexir::tools {
namespace {

struct Pair {
  int left, right;
  float score;
  size_t length;  // bytes of the concatenation when queued (a stale pair no longer matches)
  bool operator<(const Pair& o) const { return score < o.score || (score == o.score && left > o.left); }
};

}  // namespace

void Vocabulary::EncodeSpm(std::string_view text, std::vector<int64_t>* out) const {
  std::vector<MergeSymbol> symbols = CodePointSymbols(text);
  std::priority_queue<Pair> queue;
  std::map<std::string, std::pair<int, int>, std::less<>> formed_by;  // merged text -> its pair
  auto consider = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    std::string_view joined = text.substr(symbols[left].begin, symbols[left].length + symbols[right].length);
    int64_t id = Find(joined);
    if (id < 0) return;
    queue.push({left, right, scores_[id], joined.size()});
    formed_by[std::string(joined)] = {left, right};
  };
  for (int i = 1; i < int(symbols.size()); ++i) consider(i - 1, i);
  MergeBestPairs(
      symbols, queue,
      [](const Pair& p, const MergeSymbol& l, const MergeSymbol& r) { return l.length + r.length != p.length; },
      consider);

  auto emit = [&](auto& self, const MergeSymbol& s) -> void {
    std::string_view piece = text.substr(s.begin, s.length);
    if (int64_t id = Find(piece); id >= 0) {
      out->push_back(id);
      return;
    }
    if (auto it = formed_by.find(piece); it != formed_by.end()) {
      self(self, symbols[it->second.first]);
      self(self, symbols[it->second.second]);
      return;
    }
    static const char kHex[] = "0123456789ABCDEF";
    for (unsigned char byte : piece) {
      const char name[7] = {'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>', 0};
      int64_t id = Find(name);
      if (id < 0) id = Find(std::string(1, char(byte)));
      if (id >= 0) out->push_back(id);
    }
  };
  for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[i].next) emit(emit, symbols[i]);
}

}  // namespace hexir::tools
