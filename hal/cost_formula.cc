#include "hal/cost_formula.h"

#include <algorithm>
#include <charconv>

namespace hexir::hal {

double ParseCostValue(std::string_view text) {
  double v = -1;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || !(v >= 0)) return -1;
  return v;
}

bool WordPolynomial::Add(std::string_view text, double scale) {
  while (!text.empty()) {
    const size_t plus = text.find(" + ");
    std::string_view term = text.substr(0, plus);
    text = plus == std::string_view::npos ? std::string_view() : text.substr(plus + 3);
    Term t;
    const size_t star = term.find('*');
    const double coefficient = ParseCostValue(term.substr(0, star));
    if (coefficient < 0) return false;
    t.coefficient = coefficient * scale;
    std::string_view rest = star == std::string_view::npos ? std::string_view() : term.substr(star + 1);
    while (!rest.empty()) {
      const size_t next = rest.find('*');
      std::string_view symbol = rest.substr(0, next);
      rest = next == std::string_view::npos ? std::string_view() : rest.substr(next + 1);
      uint32_t word = 0;
      if (symbol.size() < 2 || symbol[0] != 'w') return false;
      auto [ptr, ec] = std::from_chars(symbol.data() + 1, symbol.data() + symbol.size(), word);
      if (ec != std::errc() || ptr != symbol.data() + symbol.size() || word >= kMaxWords) return false;
      t.words.push_back(word);
      words_read = std::max(words_read, word + 1);
    }
    if (t.words.empty()) constant += t.coefficient;
    else terms.push_back(std::move(t));
  }
  return true;
}

double WordPolynomial::Evaluate(const int64_t* words, size_t count) const {
  if (count < words_read) return -1;
  double value = constant;
  for (const Term& t : terms) {
    double term = t.coefficient;
    for (uint32_t w : t.words) {
      if (words[w] < 0) return -1;
      term *= static_cast<double>(words[w]);
    }
    value += term;
  }
  return value;
}

}  // namespace hexir::hal
