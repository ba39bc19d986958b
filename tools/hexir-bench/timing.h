// Repeated timing with a time budget: the median of per-call seconds. Small calls are timed
// in groups so that clock resolution does not dominate.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace hexir::tools::bench {

inline double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Calls fn once to warm up and calibrate, then measures until `budget_s` is spent (at least
// `min_samples` samples). Returns the median seconds per call, or with `best` the fastest
// sample (for peaks: a ceiling is what the device can do when nothing else runs).
inline double MedianSeconds(const std::function<void()>& fn, double budget_s = 0.3,
                            int min_samples = 5, bool best = false) {
  double t0 = NowSeconds();
  fn();
  double once = std::max(NowSeconds() - t0, 1e-9);
  int group = once < 1e-3 ? static_cast<int>(std::min(1000.0, 1e-3 / once)) : 1;
  std::vector<double> samples;
  double start = NowSeconds();
  while (static_cast<int>(samples.size()) < min_samples || NowSeconds() - start < budget_s) {
    double s = NowSeconds();
    for (int i = 0; i < group; ++i) fn();
    samples.push_back((NowSeconds() - s) / group);
    if (samples.size() >= 10000) break;
  }
  std::sort(samples.begin(), samples.end());
  return best ? samples.front() : samples[samples.size() / 2];
}

}  // namespace hexir::tools::bench
