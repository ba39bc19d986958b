#include "base/checksum.h"

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "catch2/catch.hpp"

namespace hexir {
namespace {

uint64_t Of(const std::string& s) { return Checksum64(s.data(), s.size()); }

TEST_CASE("Checksum64 matches the published XXH64 values of short and long strings") {
  CHECK(Checksum64(nullptr, 0) == 0xEF46DB3751D8E999ull);
  CHECK(Of("a") == 0xD24EC4F1A98C6E5Bull);
  CHECK(Of("abc") == 0x44BC2CF5AD770999ull);
  // 39 bytes: one 32-byte stripe, then a 4-byte word and a 3-byte tail.
  CHECK(Of("Nobody inspects the spammish repetition") == 0xFBCEA83C8A378BF1ull);
}

TEST_CASE("Checksum64 changes when any single bit of a buffer flips, at every length up to 100") {
  std::vector<uint8_t> bytes(100);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 37 + 11);
  for (size_t length = 1; length <= bytes.size(); ++length) {
    uint64_t clean = Checksum64(bytes.data(), length);
    for (size_t bit = 0; bit < length * 8; ++bit) {
      bytes[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      uint64_t flipped = Checksum64(bytes.data(), length);
      bytes[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      if (flipped == clean) FAIL("length " << length << ", bit " << bit << " not detected");
    }
  }
}

TEST_CASE("Checksum64 reads unaligned buffers and distinguishes lengths of zero bytes") {
  std::vector<uint8_t> bytes(80, 0);
  CHECK(Checksum64(bytes.data() + 1, 64) == Checksum64(bytes.data() + 3, 64));
  CHECK(Checksum64(bytes.data(), 64) != Checksum64(bytes.data(), 65));
}

TEST_CASE("Checksum64 hashes at least 0.25 GB per second even under sanitizers") {
  std::vector<uint8_t> bytes(64u << 20, 0x5A);
  Checksum64(bytes.data(), bytes.size());  // fault the pages in
  auto start = std::chrono::steady_clock::now();
  volatile uint64_t sink = Checksum64(bytes.data(), bytes.size());
  (void)sink;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double gb_per_second = bytes.size() / seconds / 1e9;
  INFO("Checksum64: " << gb_per_second << " GB/s");
  CHECK(gb_per_second > 0.25);  // sanitizer builds included; -O2 runs at several GB/s
}

}  // namespace
}  // namespace hexir
