// The seeds are what the fuzzer mutates: each must load, link against the fake HAL and run
// its exports successfully through the very harness the fuzzer uses; and the harness must
// survive every single-byte corruption of every seed (a small deterministic fuzz pass that
// runs under the regular toolchain and its sanitizer configs).
#include <catch2/catch.hpp>

#include "tests/fuzz/harness.h"
#include "tests/fuzz/seeds.h"

namespace hexir::fuzz {
namespace {

TEST_CASE("every seed loads, links and runs its exports without error") {
  auto seeds = SeedModules();
  REQUIRE(seeds.size() == 5);
  for (const auto& [name, bytes] : seeds) {
    INFO(name);
    RunResult r = RunModuleBytes(bytes.data(), bytes.size());
    INFO(r.first_error);
    CHECK(r.loaded);
    CHECK(r.linked);
    CHECK(r.invocations >= 1);
    CHECK(r.succeeded == r.invocations);
  }
}

TEST_CASE("the harness survives byte corruptions of every seed") {
  int loaded = 0, total = 0;
  for (const auto& [name, bytes] : SeedModules()) {
    for (size_t at = 0; at < bytes.size(); at += 3) {
      for (uint8_t value : {uint8_t(0x00), uint8_t(0xFF), uint8_t(bytes[at] ^ 0x01)}) {
        std::vector<uint8_t> bad = bytes;
        bad[at] = value;
        RunResult r = RunModuleBytes(bad.data(), bad.size());
        loaded += r.loaded;
        ++total;
      }
    }
  }
  CHECK(total > 1000);
  CHECK(loaded > 0);  // some corruptions are still valid modules, and they ran
}

}  // namespace
}  // namespace hexir::fuzz
