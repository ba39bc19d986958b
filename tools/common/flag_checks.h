// CLI11 validators with the tools' own wording, for flags where CLI11's stock checks fall
// short: `CLI::Range` lets NaN through (every comparison with it is false), and
// `CLI::NonNegativeNumber` / `CLI::PositiveNumber` answer -1 or 0 with "Value -1 not in range
// 0.000000 to 179769313486231570814527423731704356798070567525844996598917476803157...". Every
// numeric flag of the tools uses one of these; CLI11 prefixes the message with the flag
// ("--top-p: 2 is not a number in [0, 1]").
//
//   app.add_option("--timeout", seconds)->check(hexir::tools::FiniteRange(1e-3, 1e9));
//   app.add_option("--repeat", n)->check(hexir::tools::AtLeastOne());
//   app.add_option("--cpu-threads", n)->check(hexir::tools::CpuThreads(hal::kMaxCpuWorkers));
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

// A finite number of at least `min`, or above it when `exclusive`: "inf is not a finite number
// >= 0", "0 is not a finite number > 0".
inline CLI::Validator FiniteAtLeast(double min, bool exclusive = false) {
  std::string bound = (exclusive ? "> " : ">= ") + CLI::detail::to_string(min);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(text, v) || !std::isfinite(v) || v < min ||
            (exclusive && v == min))
          return text + " is not a finite number " + bound;
        return "";
      },
      "NUMBER " + bound);
}

// An integer in [min, max]: "65 is not an integer in [0, 64]" (1e8 and 2.5 are not integers).
inline CLI::Validator IntegerRange(long long min, long long max) {
  std::string range = "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        long long v = 0;
        if (!CLI::detail::lexical_cast(text, v) || v < min || v > max)
          return text + " is not an integer in " + range;
        return "";
      },
      "INTEGER in " + range);
}

// An integer of at least `min`: "-1 is not an integer >= 0".
inline CLI::Validator IntegerAtLeast(long long min) {
  std::string bound = ">= " + std::to_string(min);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        long long v = 0;
        if (!CLI::detail::lexical_cast(text, v) || v < min) return text + " is not an integer " + bound;
        return "";
      },
      "INTEGER " + bound);
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

// CPU driver worker threads, 0 (inline) to `max_workers`. -1, the tools' internal "default",
// is refused like any other negative count: the default is the flag left out.
// "-1 is not a thread count in [0, 1024] (0: inline; leave the flag out for one per hardware
// thread)".
inline CLI::Validator CpuThreads(int max_workers) {
  std::string range = "[0, " + std::to_string(max_workers) + "]";
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        long long v = 0;
        if (!CLI::detail::lexical_cast(text, v) || v < 0 || v > max_workers)
          return text + " is not a thread count in " + range +
                 " (0: inline; leave the flag out for one per hardware thread)";
        return "";
      },
      "THREADS in " + range);
}

}  // namespace hexir::tools
