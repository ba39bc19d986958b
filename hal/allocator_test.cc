#include "hal/allocator.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <set>

#include "hal/api.h"

namespace hexir::hal {
namespace {

struct Counting {
  int allocs = 0, frees = 0;
  bool fail = false;
  BlockPool::AllocFn alloc() {
    return [this](uint64_t n) -> void* {
      if (fail) return nullptr;
      ++allocs;
      return std::malloc(n);
    };
  }
  BlockPool::FreeFn free() {
    return [this](void* p, uint64_t) {
      ++frees;
      std::free(p);
    };
  }
};

TEST_CASE("BlockPool: size classes") {
  REQUIRE(BlockPool::SizeClass(0) == 64);
  REQUIRE(BlockPool::SizeClass(64) == 64);
  REQUIRE(BlockPool::SizeClass(65) == 128);
  REQUIRE(BlockPool::SizeClass(1000) == 1024);
  REQUIRE(BlockPool::SizeClass((1 << 20) - 1) == (1 << 20));
  REQUIRE(BlockPool::SizeClass((1 << 20) + 1) == (2 << 20));
  REQUIRE(BlockPool::SizeClass(uint64_t{256} << 20) == (uint64_t{256} << 20));
}

TEST_CASE("BlockPool: reuses freed blocks of the same class, counts hits and cached bytes") {
  Counting c;
  auto counters = std::make_shared<DeviceCounters>();
  {
    BlockPool pool(c.alloc(), c.free(), 4096, counters);
    bool reused = true;
    auto a = pool.Acquire(1000, &reused);
    REQUIRE(a.ok());
    REQUIRE(!reused);
    REQUIRE(a->capacity == 1024);
    void* p = a->ptr;
    pool.Release(*a);
    REQUIRE(pool.cached_bytes() == 1024);
    REQUIRE(counters->Snapshot().pool_bytes_cached == 1024);
    auto b = pool.Acquire(600, &reused);  // same class
    REQUIRE(reused);
    REQUIRE(b->ptr == p);
    auto d = pool.Acquire(100, &reused);  // other class: new memory
    REQUIRE(!reused);
    DeviceStats s = counters->Snapshot();
    REQUIRE(s.pool_hits == 1);
    REQUIRE(s.pool_misses == 2);
    REQUIRE(s.pool_bytes_cached == 0);
    REQUIRE(c.allocs == 2);
    // The cache is capped: 4096 bytes hold the 1024 block but not a 4096 one on top.
    auto big = pool.Acquire(4096);
    pool.Release(*b);
    pool.Release(*big);
    REQUIRE(pool.cached_bytes() == 1024);
    REQUIRE(c.frees == 1);
    pool.Release(*d);
    REQUIRE(pool.cached_bytes() == 1024 + 128);
  }
  REQUIRE(c.frees == c.allocs);  // destruction frees the cache
  REQUIRE(counters->Snapshot().pool_bytes_cached == 0);
}

TEST_CASE("BlockPool: zero cache disables pooling; failure trims and names the size") {
  Counting c;
  BlockPool pool(c.alloc(), c.free(), 0, nullptr);
  auto a = pool.Acquire(10);
  pool.Release(*a);
  REQUIRE(c.frees == 1);
  REQUIRE(pool.cached_bytes() == 0);
  c.fail = true;
  auto b = pool.Acquire(5000);
  REQUIRE(b.status().code() == StatusCode::kResourceExhausted);
  REQUIRE(b.status().message() == "out of memory allocating 5000 bytes (size class 8192)");
}

TEST_CASE("cpu device: buffers come from the pool; stats track live, peak and hits") {
  DeviceOptions o;
  o.cpu_worker_count = 1;
  auto dev = *CreateDevice("cpu", o);
  {
    auto a = *dev->AllocateBuffer(3000);
    auto b = *dev->AllocateBuffer(5000);
    std::memset(a->host_data(), 0x5A, 3000);
    DeviceStats s = dev->stats();
    REQUIRE(s.buffer_bytes_live == 8000);
    REQUIRE(s.buffer_bytes_peak == 8000);
    REQUIRE(s.pool_misses == 2);
  }
  DeviceStats s = dev->stats();
  REQUIRE(s.buffer_bytes_live == 0);
  REQUIRE(s.buffer_bytes_peak == 8000);
  REQUIRE(s.pool_bytes_cached == 4096 + 8192);
  auto c = *dev->AllocateBuffer(2500);  // reuses a's block, zero-filled again
  REQUIRE(dev->stats().pool_hits == 1);
  for (int i = 0; i < 2500; ++i) REQUIRE(c->host_data()[i] == 0);
  REQUIRE(reinterpret_cast<uintptr_t>(c->host_data()) % 64 == 0);
  REQUIRE(dev->stats().buffer_bytes_peak == 8000);
  {
    // Stream-ordered allocations reuse pooled memory too (contents undefined: not checked).
    void* p = nullptr;
    { auto t = *dev->AllocateBuffer(100000); p = t->host_data(); }
    uint64_t hits = dev->stats().pool_hits;
    auto sem = *dev->CreateSemaphore(0);
    auto q = dev->QueueAlloca({}, {{sem, 1}}, 70000);
    REQUIRE(q.ok());
    REQUIRE((*q)->host_data() == p);
    REQUIRE(dev->stats().pool_hits == hits + 1);
    REQUIRE(sem->Wait(1).ok());
    REQUIRE(dev->QueueAlloca({{nullptr, 0}}, {}, 4).status().message() == "queue alloca: wait semaphore 0 is null");
    REQUIRE(dev->QueueAlloca({}, {{sem, 2}, {nullptr, 0}}, 4).status().message() ==
            "queue alloca: signal semaphore 1 is null");
  }
  dev->TrimPool();
  REQUIRE(dev->stats().pool_bytes_cached == 0);

  // Pooling off: nothing is cached.
  o.pool_max_cached_bytes = 0;
  auto dev2 = *CreateDevice("cpu", o);
  { auto t = *dev2->AllocateBuffer(100); }
  REQUIRE(dev2->stats().pool_bytes_cached == 0);
  { auto t = *dev2->AllocateBuffer(100); }
  REQUIRE(dev2->stats().pool_hits == 0);
}

}  // namespace
}  // namespace hexir::hal
