// The integrity fuzzer's oracle as a bounded, deterministic test (gcc build, so it also runs
// under --config=asan / --config=ubsan): 20000 random mutations of the seeds, a module compiled
// by hexir-compile with an embedded CPU shared object among them. Every mutant that changed
// checksummed bytes must be refused; the others load and run through the fake-HAL harness.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <random>

#include "tests/fuzz/harness.h"
#include "tests/fuzz/integrity.h"
#include "tests/fuzz/seeds.h"
#include "vm/module.h"

namespace hexir::fuzz {
namespace {

std::vector<SealedSeed> LoadSeeds() {
  std::vector<SealedSeed> seeds;
  std::ifstream in("tests/fuzz/cpu_seed.vmfb", std::ios::binary);
  std::vector<uint8_t> compiled((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  SealedSeed seed;
  REQUIRE(SealSeed(compiled, &seed));
  REQUIRE(vm::Module::LoadFromMemory(compiled.data(), compiled.size()).value()->executable_count() > 0);
  seeds.push_back(std::move(seed));
  for (const auto& [name, bytes] : SeedModules()) {
    SealedSeed s;
    INFO(name);
    REQUIRE(SealSeed(bytes, &s));
    seeds.push_back(std::move(s));
  }
  return seeds;
}

// One random edit of the kinds libFuzzer makes: set, flip, insert, erase, copy, truncate,
// splice with another seed.
std::vector<uint8_t> Mutate(const std::vector<SealedSeed>& seeds, std::mt19937_64& rng) {
  const SealedSeed& base = seeds[rng() % seeds.size()];
  std::vector<uint8_t> m = base.bytes;
  int edits = 1 + int(rng() % 4);
  for (int e = 0; e < edits && !m.empty(); ++e) {
    size_t at = rng() % m.size();
    switch (rng() % 7) {
      case 0: m[at] = uint8_t(rng()); break;
      case 1: m[at] ^= uint8_t(1u << (rng() % 8)); break;
      case 2: m.insert(m.begin() + at, 1 + rng() % 8, uint8_t(rng())); break;
      case 3: m.erase(m.begin() + at, m.begin() + std::min(m.size(), at + 1 + rng() % 8)); break;
      case 4: {
        size_t from = rng() % m.size(), n = std::min<size_t>({1 + rng() % 16, m.size() - from, m.size() - at});
        std::copy(m.begin() + from, m.begin() + from + n, m.begin() + at);
        break;
      }
      case 5: m.resize(at); break;
      case 6: {
        const std::vector<uint8_t>& other = seeds[rng() % seeds.size()].bytes;
        size_t n = std::min(other.size(), m.size()) - at % std::min(other.size(), m.size());
        size_t start = at % std::min(other.size(), m.size());
        std::copy(other.begin() + start, other.begin() + start + std::min<size_t>(n, 64), m.begin() + start);
        break;
      }
    }
  }
  return m;
}

TEST_CASE("every mutant that changes checksummed bytes of the seeds is refused at load") {
  const std::vector<SealedSeed> seeds = LoadSeeds();
  std::mt19937_64 rng(20261201);
  size_t refused = 0, loaded = 0;
  for (int round = 0; round < 20000; ++round) {
    std::vector<uint8_t> m = Mutate(seeds, rng);
    auto module = vm::Module::LoadFromMemory(m.data(), m.size());
    if (!module.ok()) {
      ++refused;
      continue;
    }
    ++loaded;
    std::string violation = CheckLoadedMutant(seeds, m.data(), m.size());
    INFO("round " << round);
    REQUIRE(violation.empty());
    RunModuleBytes(m.data(), m.size());
  }
  WARN("mutants: " << refused << " refused, " << loaded << " loaded (padding, tails, identical)");
  CHECK(refused > 15000);
  CHECK(loaded > 0);
}

}  // namespace
}  // namespace hexir::fuzz
