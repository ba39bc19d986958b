// The llama decode program's device sampler (compiler/importers/llama/Sampler.h), compiled
// alone (@sample) and run on each device: its noise is Philox4x32-10 keyed by seed and step
// (checked against a reference implementation here, itself checked against Random123's
// known answer), and the ids it draws follow softmax(logits / T) restricted as the repetition
// penalty, top-k, top-p and min-p say (llama.cpp's order), by a chi-square test over many
// draws with a fixed seed on a small vocabulary whose expected distribution is computed here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "compiler/importers/llama/Sampler.h"
#include "hal/element_type.h"
#include "tests/e2e/harness.h"

namespace hexir::e2e {
namespace {

namespace llama = compiler::llama;

struct Settings {
  float temperature = 1.0f, top_p = 1.0f, min_p = 0.0f, penalty = 1.0f;
  int64_t seed = 42, top_k = 0, last_n = 64;
  std::vector<int64_t> history = {0};
};

tools::HostTensor F32Tensor(const std::vector<float>& v) {
  tools::HostTensor t;
  t.element_type = static_cast<int32_t>(hal::ElementType::kF32);
  t.dims = {int64_t(v.size())};
  t.bytes.resize(v.size() * 4);
  std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

tools::HostTensor I64Tensor(const std::vector<int64_t>& v) {
  tools::HostTensor t;
  t.element_type = static_cast<int32_t>(hal::ElementType::kI64);
  t.dims = {int64_t(v.size())};
  t.bytes.resize(v.size() * 8);
  std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

class Sampler {
 public:
  Sampler(const std::string& device, int64_t vocab) {
    // Compiled before the device is required: code generation runs where no GPU is too.
    const std::string module =
        CompileOrDie(llama::EmitSamplerModule(vocab), "sampler_" + std::to_string(vocab), device);
    RequireDevice(device);
    session_ = OpenOrDie(module, device);
  }

  // The ids drawn at steps 0..draws-1.
  std::vector<int64_t> Draw(const std::vector<float>& logits, const Settings& s, int draws) {
    std::vector<float> floats(llama::kSamplerFloats);
    floats[llama::kTemperature] = s.temperature;
    floats[llama::kTopP] = s.top_p;
    floats[llama::kMinP] = s.min_p;
    floats[llama::kRepetitionPenalty] = s.penalty;
    std::vector<int64_t> ints(llama::kSamplerInts);
    ints[llama::kSeed] = s.seed;
    ints[llama::kTopK] = s.top_k;
    ints[llama::kRepetitionLastN] = s.last_n;
    std::vector<int64_t> ids;
    for (int step = 0; step < draws; ++step) {
      std::vector<tools::HostValue> out =
          CallOrDie(*session_, "sample",
                    {Tensor(F32Tensor(logits)), Tensor(F32Tensor(floats)), Tensor(I64Tensor(ints)),
                     Tensor(I64Tensor(s.history)), I64Scalar(step)});
      REQUIRE(out.size() == 1);
      REQUIRE(out[0].tensor.bytes.size() == 8);
      int64_t id;
      std::memcpy(&id, out[0].tensor.bytes.data(), 8);
      ids.push_back(id);
    }
    return ids;
  }

 private:
  std::unique_ptr<tools::Session> session_;
};

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011).
std::array<uint32_t, 4> Philox(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += 0x9E3779B9u;
      k[1] += 0xBB67AE85u;
    }
    uint64_t p0 = uint64_t(0xD2511F53u) * c[0], p1 = uint64_t(0xCD9E8D57u) * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k[1], uint32_t(p0)};
  }
  return c;
}

// llama.cpp's repetition penalty on the last `last_n` history tokens (each token once).
std::vector<double> Penalized(const std::vector<float>& logits, const Settings& s) {
  std::vector<double> l(logits.begin(), logits.end());
  std::vector<bool> seen(l.size());
  int64_t n = std::min<int64_t>(s.last_n, s.history.size());
  for (int64_t i = int64_t(s.history.size()) - n; i < int64_t(s.history.size()); ++i) seen[s.history[i]] = true;
  for (size_t v = 0; v < l.size(); ++v)
    if (seen[v]) l[v] = l[v] <= 0 ? l[v] * s.penalty : l[v] / s.penalty;
  return l;
}

// The distribution llama.cpp's chain (penalties, top-k, top-p, min-p, temperature, dist) draws from.
std::vector<double> Expected(const std::vector<float>& logits, const Settings& s) {
  std::vector<double> l = Penalized(logits, s);
  const size_t V = l.size();
  std::vector<size_t> order(V);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return l[a] > l[b]; });
  size_t kept = s.top_k > 0 ? std::min<size_t>(s.top_k, V) : V;
  double z = 0, mass = 0;
  for (size_t i = 0; i < kept; ++i) z += std::exp(l[order[i]] - l[order[0]]);
  if (s.top_p < 1.0f) {
    size_t n = 0;
    while (n < kept) {
      mass += std::exp(l[order[n]] - l[order[0]]) / z;
      ++n;
      if (mass >= s.top_p) break;
    }
    kept = std::max<size_t>(n, 1);
  }
  if (s.min_p > 0) {
    size_t n = 0;
    while (n < kept && l[order[n]] >= l[order[0]] + std::log(double(s.min_p))) ++n;
    kept = std::max<size_t>(n, 1);
  }
  std::vector<double> p(V, 0.0);
  double sum = 0;
  for (size_t i = 0; i < kept; ++i) sum += p[order[i]] = std::exp((l[order[i]] - l[order[0]]) / s.temperature);
  for (double& x : p) x /= sum;
  return p;
}

// Chi-square of the observed counts against `p`; categories with p = 0 must never be drawn.
// REQUIREs the statistic below the 0.001 critical value for its degrees of freedom.
void RequireDistribution(const std::vector<int64_t>& ids, const std::vector<double>& p) {
  std::vector<int64_t> counts(p.size());
  for (int64_t id : ids) {
    REQUIRE(id >= 0);
    REQUIRE(id < int64_t(p.size()));
    ++counts[id];
  }
  double chi2 = 0;
  int categories = 0;
  for (size_t v = 0; v < p.size(); ++v) {
    INFO("id " << v << ": drawn " << counts[v] << " times, expected " << p[v] * ids.size());
    if (p[v] == 0) {
      CHECK(counts[v] == 0);
      continue;
    }
    double e = p[v] * ids.size();
    chi2 += (counts[v] - e) * (counts[v] - e) / e;
    ++categories;
  }
  static const double kCritical001[] = {0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32, 26.12, 27.88};
  REQUIRE(categories >= 2);
  REQUIRE(categories - 1 < 10);
  INFO("chi-square " << chi2 << " with " << categories - 1 << " degrees of freedom");
  CHECK(chi2 < kCritical001[categories - 1]);
}

const std::vector<float> kLogits = {1.0f, 2.0f, -0.5f, 1.5f, 0.0f, -2.0f, 0.5f, -1.0f};
constexpr int kDraws = 2000;

void NoiseIsPhiloxOfSeedAndStep(const std::string& device) {
  // Random123's known answer for Philox4x32-10, counter 0 and key 0.
  REQUIRE(Philox({0, 0, 0, 0}, {0, 0}) == std::array<uint32_t, 4>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
  const int64_t V = 16;
  Sampler sampler(device, V);
  Settings s;
  s.seed = 0x123456789abLL;
  std::vector<int64_t> ids = sampler.Draw(std::vector<float>(V, 0.0f), s, 12);
  for (int step = 0; step < 12; ++step) {
    int64_t best = 0;
    uint32_t best_u = 0;
    for (int64_t i = 0; i < V; ++i) {
      uint32_t u = Philox({uint32_t(i), uint32_t(step), 0, 0}, {uint32_t(s.seed), uint32_t(s.seed >> 32)})[0] >> 8;
      if (i == 0 || u > best_u) best = i, best_u = u;
    }
    INFO("step " << step);
    CHECK(ids[step] == best);
  }
}
HEXIR_E2E_TEST_ON_DEVICES("equal logits draw the id of the largest Philox4x32-10 word of (seed, step)",
                          NoiseIsPhiloxOfSeedAndStep)

void SameSeedSameIds(const std::string& device) {
  Sampler sampler(device, 8);
  Settings s;
  s.temperature = 0.9f;
  std::vector<int64_t> a = sampler.Draw(kLogits, s, 40), b = sampler.Draw(kLogits, s, 40);
  CHECK(a == b);
  s.seed = 43;
  CHECK(sampler.Draw(kLogits, s, 40) != a);
}
HEXIR_E2E_TEST_ON_DEVICES("a fixed seed draws the same ids every time and another seed other ids", SameSeedSameIds)

void TemperatureZeroIsGreedy(const std::string& device) {
  Sampler sampler(device, 8);
  Settings s;
  s.temperature = 0.0f;
  s.top_k = 2;  // filters do not change a greedy pick
  for (int64_t id : sampler.Draw(kLogits, s, 5)) CHECK(id == 1);
  std::vector<float> tied = {0.0f, 3.0f, 1.0f, 3.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t id : sampler.Draw(tied, s, 3)) CHECK(id == 1);  // the first index among ties
}
HEXIR_E2E_TEST_ON_DEVICES("temperature 0 picks the first index of the maximum logit", TemperatureZeroIsGreedy)

void DistributionMatchesSoftmax(const std::string& device) {
  Sampler sampler(device, 8);
  struct Case {
    const char* name;
    Settings s;
  };
  std::vector<Case> cases(6);
  cases[0].name = "temperature 0.7";
  cases[0].s.temperature = 0.7f;
  cases[1].name = "top-k 3, temperature 1.5";
  cases[1].s.top_k = 3;
  cases[1].s.temperature = 1.5f;
  cases[2].name = "top-p 0.8";
  cases[2].s.top_p = 0.8f;
  cases[3].name = "min-p 0.2, temperature 2";
  cases[3].s.min_p = 0.2f;
  cases[3].s.temperature = 2.0f;
  cases[4].name = "top-k 6, top-p 0.9, min-p 0.05, temperature 1.3";
  cases[4].s.top_k = 6;
  cases[4].s.top_p = 0.9f;
  cases[4].s.min_p = 0.05f;
  cases[4].s.temperature = 1.3f;
  cases[5].name = "repetition penalty 1.8 on tokens 1, 5, 3 (last 2: 5 and 3)";
  cases[5].s.penalty = 1.8f;
  cases[5].s.history = {1, 5, 3};
  cases[5].s.last_n = 2;
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO(cases[i].name);
    cases[i].s.seed = 1000 + int64_t(i);
    RequireDistribution(sampler.Draw(kLogits, cases[i].s, kDraws), Expected(kLogits, cases[i].s));
  }
}
HEXIR_E2E_TEST_ON_DEVICES("drawn ids follow softmax(logits / T) restricted by top-k, top-p and min-p (chi-square)",
                          DistributionMatchesSoftmax)

void RepetitionPenaltyMatchesReference(const std::string& device) {
  Sampler sampler(device, 8);
  Settings s;
  s.temperature = 0.0f;
  s.penalty = 1.5f;
  // Token 1 (logit 2.0) was just produced: 2.0 / 1.5 < 1.5, so greedy moves to token 3.
  s.history = {0, 1};
  std::vector<double> l = Penalized(kLogits, s);
  int64_t expected = std::max_element(l.begin(), l.end()) - l.begin();
  REQUIRE(expected == 3);
  CHECK(sampler.Draw(kLogits, s, 1)[0] == expected);
  // 3, 2 and 1 penalized: token 1's 2/1.5 stays above token 3's 1.5/1.5 and token 0's 1.0.
  s.history = {3, 2, 1};
  l = Penalized(kLogits, s);
  expected = std::max_element(l.begin(), l.end()) - l.begin();
  REQUIRE(expected == 1);
  CHECK(sampler.Draw(kLogits, s, 1)[0] == expected);
  // Outside the window: last_n 1 sees only token 1.
  s.history = {1, 3, 2};
  s.last_n = 1;
  CHECK(sampler.Draw(kLogits, s, 1)[0] == 1);
  // A large penalty makes the penalized token 1's logit 2/3, below tokens 3 (1.5) and 0 (1.0).
  s.history = {1};
  s.last_n = 64;
  s.penalty = 3.0f;
  CHECK(sampler.Draw(kLogits, s, 1)[0] == 3);
}
HEXIR_E2E_TEST_ON_DEVICES("the repetition penalty divides positive and multiplies negative logits of recent tokens",
                          RepetitionPenaltyMatchesReference)

}  // namespace
}  // namespace hexir::e2e
