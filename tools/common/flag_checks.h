// CLI11 validators with the tools' own wording, for flags where CLI11's stock checks fall
// short: `CLI::Range` lets NaN through (every comparison with it is false) and
// `CLI::PositiveNumber` answers 0 with "Value 0 not in range 0.000000 to 1797693...".
//
//   app.add_option("--timeout", seconds)->check(hexir::tools::FiniteRange(1e-3, 1e9));
//   app.add_option("--repeat", n)->check(hexir::tools::AtLeastOne());
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <string>

namespace hexir::tools {

// A finite number in [min, max]: "nan is not a number in [0.001, 1e+09]".
inline CLI::Validator FiniteRange(double min, double max) {
  std::string range = "[" + CLI::detail::to_string(min) + ", " + CLI::detail::to_string(max) + "]";
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v) || !std::isfinite(v) || v < min || v > max)
          return text + " is not a number in " + range;
        return "";
      },
      "NUMBER in " + range);
}

// A count of at least 1: "0 is not a count of at least 1".
inline CLI::Validator AtLeastOne() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        long long v = 0;
        if (!CLI::detail::lexical_cast(text, v) || v < 1) return text + " is not a count of at least 1";
        return "";
      },
      "COUNT >= 1");
}

}  // namespace hexir::tools
