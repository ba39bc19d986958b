#include "tools/hexir-bench/costs.h"

#include <cstdlib>

#include "hal/cost_formula.h"

namespace hexir::tools::bench {

std::string MatmulShape::ToString() const {
  auto e = [](int64_t v) { return v > 0 ? std::to_string(v) : std::string("?"); };
  std::string s = (batch > 1 ? e(batch) + "x" : "") + e(m) + "x" + e(n) + "x" + e(k) + " " + lhs;
  if (rhs != lhs) s += "*" + rhs;
  if (out != lhs) s += "->" + out;
  return s;
}

StatusOr<MatmulShape> ParseMatmul(const std::string& text) {
  MatmulShape s;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(start, comma - start);
    size_t eq = item.find('=');
    if (eq == std::string::npos) return InvalidArgument("matmul metadata '", text, "': item '", item, "'");
    std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    auto num = [&] { return value == "?" ? int64_t{0} : std::strtoll(value.c_str(), nullptr, 10); };
    if (key == "M") s.m = num();
    else if (key == "N") s.n = num();
    else if (key == "K") s.k = num();
    else if (key == "B") s.batch = num();
    else if (key == "lhs") s.lhs = value;
    else if (key == "rhs") s.rhs = value;
    else if (key == "out") s.out = value;
    start = comma + 1;
  }
  return s;
}

void EvaluateRunTimeCosts(const std::vector<const DispatchEvent*>& events, DispatchCost* cost) {
  for (auto [value, text] : {std::pair{&cost->bytes_read, &cost->bytes_read_words},
                             std::pair{&cost->bytes_written, &cost->bytes_written_words},
                             std::pair{&cost->flops, &cost->flops_words}}) {
    if (*value >= 0 || text->empty()) continue;
    hal::WordPolynomial formula;
    if (!formula.Add(*text, 1)) continue;
    double sum = 0;
    size_t count = 0;
    bool all = true;
    for (const DispatchEvent* e : events) {
      const double v = formula.Evaluate(e->words.data(), e->words.size());
      if (v < 0) {
        all = false;
        break;
      }
      sum += v;
      ++count;
    }
    if (all && count > 0) *value = sum / static_cast<double>(count);
  }
}

std::map<std::string, DispatchCost> ReadDispatchCosts(const vm::Module& module) {
  std::map<std::string, DispatchCost> costs;
  static const char* kFields[] = {".bytes_read.formula", ".bytes_written.formula", ".flops.formula",
                                  ".bytes_read.words", ".bytes_written.words", ".flops.words",
                                  ".bytes_read", ".bytes_written", ".flops", ".ops", ".matmul"};
  for (size_t i = 0; i < module.executable_count(); ++i) {
    auto view = module.executable(i);
    if (!view.ok()) continue;
    for (const auto& [key_view, value_view] : view->attrs) {
      std::string key(key_view), value(value_view);
      if (key.rfind("cost.", 0) != 0) continue;
      for (const char* field : kFields) {
        std::string f = field;
        if (key.size() <= 5 + f.size() || key.compare(key.size() - f.size(), f.size(), f) != 0) continue;
        std::string entry = key.substr(5, key.size() - 5 - f.size());
        DispatchCost& c = costs[entry];
        auto num = [&] { return value == "?" ? -1.0 : std::strtod(value.c_str(), nullptr); };
        if (f == ".bytes_read") c.bytes_read = num();
        else if (f == ".bytes_written") c.bytes_written = num();
        else if (f == ".flops") c.flops = num();
        else if (f == ".ops") c.ops = value;
        else if (f == ".bytes_read.words") c.bytes_read_words = value;
        else if (f == ".bytes_written.words") c.bytes_written_words = value;
        else if (f == ".flops.words") c.flops_words = value;
        else if (f == ".matmul") {
          auto shape = ParseMatmul(value);
          if (shape.ok()) {
            c.has_matmul = true;
            c.matmul = *shape;
          }
        } else {
          c.formula += (c.formula.empty() ? "" : "; ") + f.substr(1, f.find('.', 1) - 1) + "=" + value;
        }
        break;
      }
    }
  }
  return costs;
}

}  // namespace hexir::tools::bench
