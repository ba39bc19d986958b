#include "hal/drivers/cpu/worker_pool.h"

#include <catch2/catch.hpp>
#include <set>

namespace hexir::hal::cpu {
namespace {

TEST_CASE("worker pool: every index runs exactly once, on a valid thread index") {
  for (int32_t threads : {0, 1, 2, 4}) {
    WorkerPool pool(threads);
    REQUIRE(pool.thread_count() == static_cast<uint32_t>(std::max(threads, 1)));
    for (uint64_t count : {0ull, 1ull, 7ull, 1000ull}) {
      std::vector<std::atomic<int>> hits(count);
      std::atomic<uint32_t> max_thread{0};
      pool.ParallelFor(count, [&](uint64_t i, uint32_t t) {
        hits[i].fetch_add(1);
        uint32_t m = max_thread.load();
        while (t > m && !max_thread.compare_exchange_weak(m, t)) {}
        return true;
      });
      for (uint64_t i = 0; i < count; ++i) REQUIRE(hits[i].load() == 1);
      REQUIRE(max_thread.load() < pool.thread_count());
    }
  }
}

TEST_CASE("worker pool: a body returning false stops the loop") {
  WorkerPool pool(4);
  std::atomic<uint64_t> ran{0};
  pool.ParallelFor(1000000, [&](uint64_t i, uint32_t) {
    ran.fetch_add(1);
    return i < 10;
  });
  REQUIRE(ran.load() < 1000000);
  REQUIRE(ran.load() >= 11);
}

}  // namespace
}  // namespace hexir::hal::cpu
