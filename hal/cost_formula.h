// A dispatch cost of run-time shape as the compiler writes it into an executable's attrs,
// "cost.<entry>.<field>.words" (passes/codegen/CPUWorkWords.h): a constant plus products of
// the dispatch's i64 parameter words, "6144 + 12*w0*w1*w2" (wK = word K of the binding that
// "cost.<entry>.params" names). Read by the CPU driver's work estimate
// (hal/drivers/cpu/work_estimate.h) and by hexir-bench, which evaluates bytes and FLOPs of
// each dispatch from the words the driver reports (hal/profiling.h).
//
// Header and one source, no dependencies; a value type, thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace hexir::hal {

struct WordPolynomial {
  // Most parameter words a formula may read (a reader copies them to the stack).
  static constexpr uint32_t kMaxWords = 64;
  struct Term {
    double coefficient = 0;
    std::vector<uint32_t> words;  // the words multiplied (at least one)
  };
  double constant = 0;
  std::vector<Term> terms;
  uint32_t words_read = 0;  // 1 + the largest word index (0: a constant)

  // Adds the terms of `text` ("c + c*wK*wJ + ..."), each coefficient multiplied by `scale`;
  // false when malformed (a negative or unparsable coefficient, a symbol other than wK, K at
  // least kMaxWords), leaving what was added so far.
  bool Add(std::string_view text, double scale);
  // The value at `words` (`count` of them), or -1: fewer than words_read, or a negative word
  // read (a run-time extent is never negative).
  double Evaluate(const int64_t* words, size_t count) const;
};

// A cost attr's plain value: a non-negative number, else -1 ("?" or anything unparsable).
double ParseCostValue(std::string_view text);

}  // namespace hexir::hal
