// TfIdfVectorizer (onnx/defs/nn): counts of the pool's n-grams in each row of an integer
// input, as onnxruntime counts them. The pool (`pool_int64s`, split by `ngram_counts` into
// 1-grams, 2-grams, ...) is constant, so one reduction generic over (row, output index,
// start position) tests, for every pool n-gram of a length in [min_gram_length,
// max_gram_length] and every skip s in [0, max_skip_count] (1-grams: no skip), whether the
// items at start + j (s + 1) equal it; a match adds 1 to the output index `ngram_indexes`
// gives the n-gram. Mode TF keeps the counts, IDF gives weights[o] where the count is
// nonzero, TFIDF counts times weights[o]. O(rows x outputs x length x pool x skips) work.
#include "compiler/importers/onnx/Elementwise.h"
#include "compiler/importers/onnx/Lowerings.h"

namespace hexir::importers::onnx {

Status LowerTfIdfVectorizer(Context& c) {
  Builder& b = c.b;
  HEXIR_ASSIGN_OR_RETURN(Val& x, c.In(0));
  if (x.IsFloat()) return c.Error("the input must be integers (strings are not supported)");
  if (x.rank() < 1 || x.rank() > 2 || x.shape.back().dynamic())
    return c.Error("the input must be 1-D or 2-D with a static last dim");
  int64_t length = x.shape.back().v;
  int64_t min_n = c.AttrI("min_gram_length", 1), max_n = c.AttrI("max_gram_length", 1);
  int64_t max_skip = c.AttrI("max_skip_count", 0);
  std::string mode = c.AttrS("mode", "TF");
  std::vector<int64_t> counts = c.AttrInts("ngram_counts"), indexes = c.AttrInts("ngram_indexes"),
                       pool = c.AttrInts("pool_int64s");
  std::vector<float> weights = c.AttrFloats("weights");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") return c.Error("unknown mode '" + mode + "'");
  if (min_n < 1 || max_n < min_n || max_skip < 0) return c.Error("bad min/max_gram_length or max_skip_count");
  // The pool's n-grams in order: (items, output index).
  struct Gram {
    std::vector<int64_t> items;
    int64_t output;
  };
  std::vector<Gram> grams;
  int64_t outputs = 0;
  for (size_t level = 0; level < counts.size(); ++level) {
    int64_t n = static_cast<int64_t>(level) + 1;
    int64_t begin = counts[level], end = level + 1 < counts.size() ? counts[level + 1] : static_cast<int64_t>(pool.size());
    if (begin < 0 || end < begin || end > static_cast<int64_t>(pool.size()) || (end - begin) % n != 0)
      return c.Error("ngram_counts does not split pool_int64s into n-grams");
    for (int64_t at = begin; at < end; at += n) {
      size_t k = grams.size();
      if (k >= indexes.size()) return c.Error("ngram_indexes has fewer entries than the pool has n-grams");
      if (indexes[k] < 0) return c.Error("ngram_indexes holds a negative index");
      outputs = std::max(outputs, indexes[k] + 1);
      grams.push_back({std::vector<int64_t>(pool.begin() + at, pool.begin() + at + n), indexes[k]});
    }
  }
  if (!weights.empty() && static_cast<int64_t>(weights.size()) != outputs)
    return c.Error("weights has " + std::to_string(weights.size()) + " entries, the output " + std::to_string(outputs));
  c.Mat(x);
  bool batched = x.rank() == 2;
  Shape out = batched ? Shape{x.shape[0], Dim::Static(outputs)} : Shape{Dim::Static(outputs)};
  int loops = static_cast<int>(out.size()) + 1;  // (row?, output, start)
  std::string o_dim = batched ? "d1" : "d0", p_dim = batched ? "d2" : "d1";
  std::vector<std::string> x_map = batched ? std::vector<std::string>{"d0", p_dim} : std::vector<std::string>{p_dim};
  std::vector<std::string> out_map = batched ? std::vector<std::string>{"d0", "d1"} : std::vector<std::string>{"d0"};
  std::vector<std::string> iters(out.size(), "parallel");
  iters.push_back("reduction");
  Val result;
  result.et = "f32";
  result.shape = out;
  std::string zeros = b.Filled(out, "f32", 0);
  result.name = b.Generic(
      {&x}, {Builder::Map(loops, x_map)}, Builder::Map(loops, out_map), out, "f32", loops, iters, zeros,
      [&](const Args& a) {
        std::string row, o = b.Fresh(), p = b.Fresh();
        if (batched) {
          row = b.Fresh();
          b.Line(row + " = linalg.index 0 : index");
        }
        b.Line(o + " = linalg.index " + std::to_string(batched ? 1 : 0) + " : index");
        b.Line(p + " = linalg.index " + std::to_string(batched ? 2 : 1) + " : index");
        std::string last = b.IndexConst(length - 1), count = a[1];
        std::string one = b.ScalarConst("f32", 1), none = b.ScalarConst("f32", 0);
        for (const Gram& g : grams) {
          int64_t n = static_cast<int64_t>(g.items.size());
          if (n < min_n || n > max_n) continue;
          std::string mine = b.Fresh();
          b.Line(mine + " = arith.cmpi eq, " + o + ", " + b.IndexConst(g.output) + " : index");
          for (int64_t skip = 0; skip <= (n == 1 ? 0 : max_skip); ++skip) {
            std::string match = mine;
            for (int64_t j = 0; j < n; ++j) {
              std::string item = a[0];
              if (j > 0) {  // x[row, p + j (skip + 1)], in bounds
                std::string q = b.Fresh(), inside = b.Fresh(), at = b.Fresh();
                b.Line(q + " = arith.addi " + p + ", " + b.IndexConst(j * (skip + 1)) + " : index");
                b.Line(inside + " = arith.cmpi ule, " + q + ", " + last + " : index");
                b.Line(at + " = arith.minui " + q + ", " + last + " : index");
                match = b.AndI1(match, inside);
                item = b.Extract(x, batched ? std::vector<std::string>{row, at} : std::vector<std::string>{at});
              }
              std::string same = b.Fresh();
              b.Line(same + " = arith.cmpi eq, " + item + ", " + b.ScalarConst(x.et, static_cast<double>(g.items[j])) +
                     " : " + x.et);
              match = b.AndI1(match, same);
            }
            count = b.Bin("arith.addf", "", count, b.Select(match, one, none, "f32"), "f32");
          }
        }
        return count;
      });
  if (mode == "TF") {
    c.SetOut(0, result);
    return Status::Ok();
  }
  if (weights.empty()) weights.assign(static_cast<size_t>(outputs), 1.0f);
  Val w;
  w.et = "f32";
  w.shape = {Dim::Static(outputs)};
  w.has_floats = true;
  w.floats.assign(weights.begin(), weights.end());
  c.Mat(w);
  return c.SetOut(0, c.Elementwise({&result, &w}, "f32", [&](const Args& a) {
    if (mode == "TFIDF") return b.Bin("arith.mulf", "", a[0], a[1], "f32");
    std::string seen = b.Cmp("ogt", "", a[0], b.ScalarConst("f32", 0), "f32");
    return b.Select(seen, a[1], b.ScalarConst("f32", 0), "f32");
  }));
}

}  // namespace hexir::importers::onnx
