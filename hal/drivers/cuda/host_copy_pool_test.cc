// HostCopyPool (host-only, runs everywhere): how copies are split, and that split copies from
// several threads at once land byte for byte.
#include <catch2/catch.hpp>

#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "hal/drivers/cuda/host_copy_pool.h"

namespace hexir::hal::cuda {
namespace {

void RequireCover(const std::vector<HostCopyPool::Piece>& pieces, uint64_t bytes) {
  REQUIRE(!pieces.empty());
  REQUIRE(pieces.front().begin == 0);
  REQUIRE(pieces.back().end == bytes);
  for (size_t i = 0; i < pieces.size(); ++i) {
    INFO("piece " << i);
    REQUIRE(pieces[i].begin < pieces[i].end);
    if (i > 0) REQUIRE(pieces[i].begin == pieces[i - 1].end);
    if (i + 1 < pieces.size()) REQUIRE(pieces[i].end % 4096 == 0);
  }
}

TEST_CASE("host copy pool: an 8 MiB chunk is split into one page-aligned piece per thread") {
  const auto pieces = HostCopyPool::Split(8 << 20, 4, HostCopyPool::kMinPiece);
  REQUIRE(pieces.size() == 4);
  RequireCover(pieces, 8 << 20);
  for (const auto& p : pieces) REQUIRE(p.end - p.begin == 2 << 20);
}

TEST_CASE("host copy pool: odd sizes are covered exactly, with no piece below the minimum") {
  for (uint64_t bytes : {uint64_t(1), uint64_t(4095), uint64_t(300000), uint64_t(1000003),
                         uint64_t(8 << 20) + 12, uint64_t(64 << 20) - 1}) {
    for (int threads : {1, 3, 8}) {
      INFO(bytes << " bytes over " << threads << " threads");
      const auto pieces = HostCopyPool::Split(bytes, threads, HostCopyPool::kMinPiece);
      RequireCover(pieces, bytes);
      REQUIRE(pieces.size() <= size_t(threads));
      if (pieces.size() > 1) {
        for (size_t i = 0; i + 1 < pieces.size(); ++i)
          REQUIRE(pieces[i].end - pieces[i].begin >= HostCopyPool::kMinPiece);
      }
    }
  }
  REQUIRE(HostCopyPool::Split(0, 4, HostCopyPool::kMinPiece).empty());
  REQUIRE(HostCopyPool::Split(100 << 10, 8, HostCopyPool::kMinPiece).size() == 1);
}

TEST_CASE("host copy pool: copies at odd offsets and sizes equal memcpy") {
  HostCopyPool pool(4);
  std::vector<uint8_t> src(9 << 20);
  for (size_t i = 0; i < src.size(); ++i) src[i] = uint8_t(i * 2654435761u >> 13);
  for (uint64_t offset : {0, 1, 4093}) {
    for (uint64_t bytes : {uint64_t(0), uint64_t(7), uint64_t(1 << 20) + 3, uint64_t(8 << 20) + 5}) {
      INFO("offset " << offset << ", " << bytes << " bytes");
      std::vector<uint8_t> dst(bytes + 2, 0xee);
      pool.Copy(dst.data() + 1, src.data() + offset, bytes);
      REQUIRE(dst.front() == 0xee);
      REQUIRE(dst.back() == 0xee);
      REQUIRE(std::memcmp(dst.data() + 1, src.data() + offset, bytes) == 0);
    }
  }
}

TEST_CASE("host copy pool: the streaming copy equals memcpy at every target alignment and odd sizes") {
  std::vector<uint8_t> src((256 << 10) + 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = uint8_t(i * 2654435761u >> 11);
  for (uint64_t dst_offset = 0; dst_offset < 16; ++dst_offset) {
    for (uint64_t src_offset : {0, 3, 16}) {
      for (uint64_t bytes : {0, 1, 15, 16, 17, 63, 64, 65, 127, 4099, (256 << 10) + 13}) {
        INFO("target offset " << dst_offset << ", source offset " << src_offset << ", " << bytes
                              << " bytes");
        std::vector<uint8_t> dst(bytes + 48, 0xee);
        HostCopyPool::StreamingCopy(dst.data() + 16 + dst_offset, src.data() + src_offset, bytes);
        for (uint64_t i = 0; i < 16 + dst_offset; ++i) REQUIRE(dst[i] == 0xee);
        for (uint64_t i = 16 + dst_offset + bytes; i < dst.size(); ++i) REQUIRE(dst[i] == 0xee);
        REQUIRE(std::memcmp(dst.data() + 16 + dst_offset, src.data() + src_offset, bytes) == 0);
      }
    }
  }
}

TEST_CASE("host copy pool: callers on several threads at once each get their own bytes") {
  HostCopyPool pool(3);
  constexpr int kCallers = 4;
  constexpr uint64_t kBytes = (3 << 20) + 17;
  std::vector<std::vector<uint8_t>> src(kCallers), dst(kCallers);
  for (int c = 0; c < kCallers; ++c) {
    src[c].assign(kBytes, uint8_t(c + 1));
    std::iota(src[c].begin(), src[c].begin() + 251, uint8_t(c * 50));
    dst[c].assign(kBytes, 0);
  }
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int round = 0; round < 20; ++round) pool.Copy(dst[c].data(), src[c].data(), kBytes);
    });
  }
  for (std::thread& t : callers) t.join();
  for (int c = 0; c < kCallers; ++c) {
    INFO("caller " << c);
    REQUIRE(dst[c] == src[c]);
  }
}

}  // namespace
}  // namespace hexir::hal::cuda
