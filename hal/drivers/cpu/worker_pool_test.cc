#include "hal/drivers/cpu/worker_pool.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

namespace hexir::hal::cpu {
namespace {

// Runs a loop of `count` indices on `pool` (at most `max_threads`), recording how often each
// index ran and the highest thread index seen.
struct RecordedLoop {
  std::vector<std::atomic<int>> hits;
  std::atomic<uint32_t> max_thread{0};

  RecordedLoop(WorkerPool& pool, uint64_t count, uint32_t max_threads = UINT32_MAX) : hits(count) {
    pool.ParallelFor(count, [&](uint64_t i, uint32_t t) {
      hits[i].fetch_add(1);
      uint32_t m = max_thread.load();
      while (t > m && !max_thread.compare_exchange_weak(m, t)) {}
      return true;
    }, max_threads);
  }
};

TEST_CASE("worker pool: every index runs exactly once, on a valid thread index") {
  for (int32_t threads : {0, 1, 2, 4}) {
    WorkerPool pool(threads);
    REQUIRE(pool.thread_count() == static_cast<uint32_t>(std::max(threads, 1)));
    for (uint64_t count : {0ull, 1ull, 7ull, 1000ull}) {
      RecordedLoop loop(pool, count);
      for (uint64_t i = 0; i < count; ++i) REQUIRE(loop.hits[i].load() == 1);
      REQUIRE(loop.max_thread.load() < pool.thread_count());
    }
  }
}

TEST_CASE("worker pool: max_threads bounds the threads a loop runs on") {
  WorkerPool pool(4);
  for (uint32_t max_threads : {0u, 1u, 2u, 3u}) {
    for (int round = 0; round < 200; ++round) {
      const uint64_t count = 64;
      RecordedLoop loop(pool, count, max_threads);
      for (uint64_t i = 0; i < count; ++i) REQUIRE(loop.hits[i].load() == 1);
      INFO("max_threads " << max_threads);
      REQUIRE(loop.max_thread.load() < std::max(max_threads, 1u));
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

TEST_CASE("worker pool: many back-to-back small loops (spin/sleep hand-off) lose no index") {
  for (int32_t threads : {2, 4}) {
    WorkerPool pool(threads);
    for (int round = 0; round < 20000; ++round) {
      const uint64_t count = 1 + round % 9;
      std::atomic<uint64_t> sum{0};
      pool.ParallelFor(count, [&](uint64_t i, uint32_t) {
        sum.fetch_add(i + 1);
        return true;
      });
      REQUIRE(sum.load() == count * (count + 1) / 2);
      if (round % 5000 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // workers sleep
    }
  }
}

TEST_CASE("worker pool: a stalled index holds back no other index of a dispatch-sized loop") {
  // 64 indices (a compiled dispatch's most workgroups) on 2 threads: index 0 stalls until
  // every other index ran, which only the other thread can do, one index at a time (a chunk
  // claimed with index 0 would wait for index 0). Bounded wait: a failure is a REQUIRE, not a
  // hang.
  WorkerPool pool(2);
  for (int round = 0; round < 20; ++round) {
    constexpr uint64_t kCount = 64;
    std::atomic<uint64_t> others{0};
    bool all_others_ran = false;
    pool.ParallelFor(kCount, [&](uint64_t i, uint32_t) {
      if (i != 0) {
        others.fetch_add(1);
        return true;
      }
      auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (others.load() < kCount - 1 && std::chrono::steady_clock::now() < end)
        std::this_thread::yield();
      all_others_ran = others.load() == kCount - 1;
      return true;
    });
    REQUIRE(all_others_ran);
  }
}

// Loops of 2 indices `gap` apart; returns how often a worker went to sleep meanwhile.
uint64_t SleepsBetweenLoops(WorkerPool& pool, int loops, std::chrono::microseconds gap) {
  const uint64_t before = pool.sleeps();
  for (int n = 0; n < loops; ++n) {
    std::atomic<int> ran{0};
    pool.ParallelFor(2, [&](uint64_t, uint32_t) {
      ran.fetch_add(1);
      return true;
    });
    REQUIRE(ran.load() == 2);
    std::this_thread::sleep_for(gap);
  }
  return pool.sleeps() - before;
}

TEST_CASE("worker pool: inside a burst idle workers stay awake between loops; outside they sleep") {
  WorkerPool pool(2);
  // Outside a burst a worker spins 2000 pauses (well under 2 ms on any x86) and then sleeps:
  // every gap of 3 ms puts it to sleep (again: a loop's wake-up that comes after the caller
  // ran both indices finds nothing to do). Bounds leave room for a loaded machine (a worker
  // that gets no core for a while blocks fewer times; a gap can stretch past the limit).
  const uint64_t outside = SleepsBetweenLoops(pool, 30, std::chrono::microseconds(3000));
  INFO("sleeps outside a burst: " << outside);
  CHECK(outside >= 5);
  // Inside one, gaps of 0.3 ms (below the 2 ms spin limit) leave it awake.
  pool.BeginBurst();
  const uint64_t inside = SleepsBetweenLoops(pool, 30, std::chrono::microseconds(300));
  INFO("sleeps inside a burst: " << inside);
  CHECK(inside <= 15);
  // A burst's spin is bounded: with no loop for 50 ms the worker sleeps (it has by then, in
  // this burst; once more at most, unless a spurious wake-up re-blocks it).
  const uint64_t before = pool.sleeps();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(pool.sleeps() - before + inside >= 1);
  CHECK(pool.sleeps() - before <= 2);
  pool.EndBurst();
  // A new burst wakes it; every index still runs once.
  pool.BeginBurst();
  RecordedLoop loop(pool, 100);
  for (uint64_t i = 0; i < 100; ++i) REQUIRE(loop.hits[i].load() == 1);
  pool.EndBurst();
}

TEST_CASE("worker pool: a burst spin of 0 (HEXIR_CPU_BURST_SPIN_NS=0) keeps the sleep after the usual spin") {
  WorkerPool pool(2, /*burst_spin_ns=*/0);
  pool.BeginBurst();
  const uint64_t inside = SleepsBetweenLoops(pool, 30, std::chrono::microseconds(3000));
  INFO("sleeps inside a burst without its spin: " << inside);
  CHECK(inside >= 5);
  pool.EndBurst();
}

}  // namespace
}  // namespace hexir::hal::cpu
