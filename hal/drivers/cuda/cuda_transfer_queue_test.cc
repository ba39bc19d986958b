// The CUDA transfer queue (cuda_transfer_queue.h) beyond the conformance suite: transfers larger
// than the staging ring, a separate stream that overlaps compute, GPU-side ordering in both
// directions (no host wait between a transfer and the dispatch it feeds), destruction; direct
// DMA of pinned host ranges (and only while and where they are pinned), chunk boundaries, small
// transfers each waited for, concurrent callers, staging returned.
//
// Without a GPU (or without the nvcc-built kernels) every case prints one
// "HEXIR_SKIPPED: <case>: <reason>" line and makes no assertion.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <optional>
#include <thread>

#include "hal/api.h"
#include "hal/device_transfer.h"
#include "hal/drivers/cuda/cuda_api.h"
#include "hal/drivers/cuda/cuda_device.h"
#include "hal/drivers/cuda/cuda_transfer_queue.h"
#include "hal/drivers/cuda/testing/device_helpers.h"
#include "hal/drivers/cuda/testing/open_or_skip.h"
#include "hal/drivers/cuda/testing/test_kernels.h"

namespace hexir::hal::cuda {
namespace {

using namespace std::chrono_literals;
using testing::Alloc;
using testing::CubinView;
using testing::OpenOrSkip;
using testing::RequireOk;

TEST_CASE("cuda/transfers: a write and read larger than the staging ring round trip through a dispatch with no host wait between") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto exe = d.CreateExecutable(CubinView({"affine_i32"}));
  RequireOk(exe.status());
  // 2.5 rings plus an odd tail: every block is reused, the last chunk is partial.
  const uint64_t n = (kStagingBlocks * kStagingBlockBytes * 5 / 2 + 12) / 4;
  std::vector<int32_t> host(n);
  std::iota(host.begin(), host.end(), -1000000);
  auto x = Alloc(d, n * 4);
  auto cb = *d.CreateCommandBuffer();
  RequireOk(cb->Dispatch(*exe, 0, {uint32_t(n), 1, 1}, {BufferRef::Whole(x)}, {uint32_t(n), 3, 7}));
  RequireOk(cb->Finalize());
  auto t = *d.CreateSemaphore(0);
  const uint64_t waits = d.stats().host_waits;
  const DeviceStats before = d.stats();
  RequireOk(d.QueueWrite({}, {{t, 1}}, host.data(), n * 4, x, 0));
  RequireOk(d.QueueExecute({{t, 1}}, cb, {{t, 2}}));
  std::vector<int32_t> back(n, 0);
  RequireOk(d.QueueRead({{t, 2}}, {{t, 3}}, x, 0, back.data(), n * 4));
  RequireOk(t->Wait(3, 60s));
  REQUIRE(d.stats().host_waits == waits + 1);  // only the Wait above
  for (uint64_t i = 0; i < n; i += 4099) {
    INFO("element " << i);
    REQUIRE(back[i] == host[i] * 3 + 7);
  }
  REQUIRE(back[n - 1] == host[n - 1] * 3 + 7);
  REQUIRE(d.stats().transfers_queued == before.transfers_queued + 2);
  REQUIRE(d.stats().transfer_bytes_queued == before.transfer_bytes_queued + 2 * n * 4);
}

TEST_CASE("cuda/transfers: run on their own stream, beside a long dispatch they do not depend on") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto exe = d.CreateExecutable(CubinView({"spin_us"}));
  RequireOk(exe.status());
  auto flag = Alloc(d, 64), data = Alloc(d, 1 << 20);
  auto cb = *d.CreateCommandBuffer();
  RequireOk(cb->Dispatch(*exe, 0, {1, 1, 1}, {BufferRef::Whole(flag)}, {500000}));  // 500 ms
  RequireOk(cb->Finalize());
  auto spin = *d.CreateSemaphore(0), t = *d.CreateSemaphore(0);
  std::vector<uint8_t> host(1 << 20, 0x5a), back(1 << 20, 0);
  // The first transfer after new allocations is ordered after the compute stream (their zero
  // fill runs there); later ones are not.
  RequireOk(d.QueueWrite({}, {{t, 1}}, host.data(), host.size(), data, 0));
  RequireOk(t->Wait(1, 30s));
  RequireOk(d.QueueExecute({}, cb, {{spin, 1}}));
  std::fill(host.begin(), host.end(), 0xa5);
  RequireOk(d.QueueWrite({}, {{t, 2}}, host.data(), host.size(), data, 0));
  RequireOk(d.QueueRead({{t, 2}}, {{t, 3}}, data, 0, back.data(), back.size()));
  RequireOk(t->Wait(3, 30s));
  REQUIRE(*spin->Query() == 0);  // the transfers finished while the dispatch still ran
  REQUIRE(back == host);
  // A read that waits for the dispatch is ordered after it on the GPU and sees its result.
  uint32_t seen = 0;
  RequireOk(d.QueueRead({{spin, 1}}, {{t, 4}}, flag, 0, &seen, 4));
  RequireOk(t->Wait(4, 30s));
  REQUIRE(*spin->Query() == 1);
  REQUIRE(seen == 1);
}

TEST_CASE("cuda/transfers: destroying the device fails a transfer still held back for a host signal") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  auto gate = *(*dev)->CreateSemaphore(0), t = *(*dev)->CreateSemaphore(0);
  auto x = Alloc(**dev, 64);
  uint32_t word = 0;
  RequireOk((*dev)->QueueRead({{gate, 1}}, {{t, 1}}, x, 0, &word, 4));
  x.reset();
  dev->reset();
  Status s = t->Wait(1, 30s);
  REQUIRE(s.code() == StatusCode::kAborted);
  REQUIRE(s.message().find("destroyed while the transfer waited") != std::string::npos);
}

// Bytes that differ at every position (no two chunks alike).
std::vector<uint8_t> Pattern(uint64_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  for (uint64_t i = 0; i < n; ++i) v[i] = uint8_t((i * 2654435761u + seed) >> 11);
  return v;
}

TEST_CASE("cuda/transfers: a pinned host range is copied by DMA with no staging, at odd offsets and sizes") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  const uint64_t n = 3 * kStagingBlockBytes + 1001;  // more than one block: still one direct copy
  auto pinned = d.AllocateBuffer(n + 64, kMemoryHostVisible);  // cuMemHostAlloc: pinned
  RequireOk(pinned.status());
  uint8_t* mapping = static_cast<uint8_t*>((*pinned)->host_data());
  REQUIRE(mapping != nullptr);
  const std::vector<uint8_t> source = Pattern(n, 7);
  std::memcpy(mapping + 3, source.data(), n);
  auto x = Alloc(d, n + 64);
  auto t = *d.CreateSemaphore(0);
  const DeviceStats before = d.stats();
  RequireOk(d.QueueWrite({}, {{t, 1}}, mapping + 3, n, x, 5));
  REQUIRE(d.stats().transfer_staging_bytes_busy == 0);  // no block taken
  std::vector<uint8_t> back(n, 0);
  RequireOk(d.QueueRead({{t, 1}}, {{t, 2}}, x, 5, back.data(), n));  // pageable: staged
  RequireOk(t->Wait(2, 60s));
  REQUIRE(back == source);
  // Back into the pinned range, one byte further on: direct again.
  std::memset(mapping, 0, n + 64);
  RequireOk(d.QueueRead({}, {{t, 3}}, x, 5, mapping + 4, n));
  RequireOk(t->Wait(3, 60s));
  REQUIRE(std::memcmp(mapping + 4, source.data(), n) == 0);
  REQUIRE(mapping[3] == 0);
  REQUIRE(mapping[n + 4] == 0);
  const DeviceStats after = d.stats();
  REQUIRE(after.transfers_direct == before.transfers_direct + 2);
  REQUIRE(after.transfers_queued == before.transfers_queued + 3);
  REQUIRE(after.transfer_staging_bytes_busy == 0);
}

TEST_CASE("cuda/transfers: a kCopyAtCall write of pinned memory is staged, so the source may change at once") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto pinned = d.AllocateBuffer(4096, kMemoryHostVisible);
  RequireOk(pinned.status());
  uint8_t* mapping = static_cast<uint8_t*>((*pinned)->host_data());
  std::memset(mapping, 0x11, 4096);
  auto x = Alloc(d, 4096);
  auto t = *d.CreateSemaphore(0);
  const uint64_t direct = d.stats().transfers_direct;
  RequireOk(d.QueueWrite({}, {{t, 1}}, mapping, 4096, x, 0, Device::HostLifetime::kCopyAtCall));
  std::memset(mapping, 0x22, 4096);
  std::vector<uint8_t> back(4096, 0);
  RequireOk(d.QueueRead({{t, 1}}, {{t, 2}}, x, 0, back.data(), 4096));
  RequireOk(t->Wait(2, 30s));
  REQUIRE(back == std::vector<uint8_t>(4096, 0x11));
  REQUIRE(d.stats().transfers_direct == direct);
}

TEST_CASE("cuda/transfers: staged chunks are a quarter of the transfer, between 1 MiB and a staging block") {
  // No GPU needed: how a staged transfer is cut.
  CHECK(StagingChunkBytes(1) == kMinStagingChunkBytes);
  CHECK(StagingChunkBytes(64 << 10) == kMinStagingChunkBytes);     // one chunk
  CHECK(StagingChunkBytes(1 << 20) == kMinStagingChunkBytes);      // one chunk
  CHECK(StagingChunkBytes(4 << 20) == kMinStagingChunkBytes);      // four
  CHECK(StagingChunkBytes(8 << 20) == 2 << 20);                    // four
  CHECK(StagingChunkBytes((8 << 20) + 1) == (2 << 20) + (64 << 10));  // rounded up to 64 KiB
  CHECK(StagingChunkBytes(32 << 20) == kStagingBlockBytes);
  CHECK(StagingChunkBytes(256 << 20) == kStagingBlockBytes);       // 32 chunks through 8 blocks
}

TEST_CASE("cuda/transfers: staged sizes around a chunk boundary round trip at odd device offsets") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto x = Alloc(d, 2 * kStagingBlockBytes + 8192);
  auto t = *d.CreateSemaphore(0);
  uint64_t value = 0;
  for (uint64_t n : {uint64_t(3 << 20) + 7, kStagingBlockBytes - 1, kStagingBlockBytes,
                     kStagingBlockBytes + 1, 2 * kStagingBlockBytes + 333}) {
    for (uint64_t offset : {uint64_t(0), uint64_t(1), uint64_t(4095)}) {
      INFO(n << " bytes at offset " << offset);
      const std::vector<uint8_t> source = Pattern(n, uint32_t(n + offset));
      std::vector<uint8_t> back(n + 2, 0xee);
      RequireOk(d.QueueWrite({}, {{t, value + 1}}, source.data(), n, x, offset));
      RequireOk(d.QueueRead({{t, value + 1}}, {{t, value + 2}}, x, offset, back.data() + 1, n));
      value += 2;
      RequireOk(t->Wait(value, 60s));
      REQUIRE(back.front() == 0xee);
      REQUIRE(back.back() == 0xee);
      REQUIRE(std::memcmp(back.data() + 1, source.data(), n) == 0);
    }
  }
  REQUIRE(d.stats().transfer_staging_bytes_busy == 0);
}

TEST_CASE("cuda/transfers: small staged transfers round trip at odd offsets, each waited for on its own") {
  // Below kCachedCopyMaxBytes a staged chunk is one memcpy; a waiter completes it on its own
  // thread (RetireReachedForWaiter) and the next transfer reuses its block at once.
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto x = Alloc(d, kCachedCopyMaxBytes + 8192);
  auto t = *d.CreateSemaphore(0);
  uint64_t value = 0;
  for (uint64_t n : {uint64_t(1), uint64_t(4), uint64_t(4095), uint64_t(65536 + 3),
                     kCachedCopyMaxBytes - 1, kCachedCopyMaxBytes, kCachedCopyMaxBytes + 1}) {
    for (uint64_t offset : {uint64_t(0), uint64_t(1), uint64_t(4095)}) {
      INFO(n << " bytes at offset " << offset);
      const std::vector<uint8_t> source = Pattern(n, uint32_t(3 * n + offset));
      std::vector<uint8_t> back(n + 2, 0xee);
      RequireOk(d.QueueWrite({}, {{t, ++value}}, source.data(), n, x, offset));
      RequireOk(t->Wait(value, 60s));
      RequireOk(d.QueueRead({}, {{t, ++value}}, x, offset, back.data() + 1, n));
      RequireOk(t->Wait(value, 60s));
      REQUIRE(back.front() == 0xee);
      REQUIRE(back.back() == 0xee);
      REQUIRE(std::memcmp(back.data() + 1, source.data(), n) == 0);
    }
  }
  RequireOk(d.WaitIdle());
  REQUIRE(d.stats().transfer_staging_bytes_busy == 0);
}

// The small-transfer path (the benchmark's rows up to 1 MiB): a transfer's first chunk records
// the event its acceptance took, the last chunk's push ends the acceptance, and the completion
// thread keeps off while the caller may still wait (kHostRetiringNs). Each transfer is still
// counted once, staged or direct as its memory says, held back nowhere, ordered on no other
// stream; and one nobody waits for is signalled by the queue all the same.
TEST_CASE("cuda/transfers: small transfers are counted once each, and one nobody waits for is still signalled") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  const uint64_t max = (1 << 20) + 7;
  auto x = Alloc(d, max + 64);
  auto pinned = d.AllocateBuffer(max + 64, kMemoryHostVisible);  // cuMemHostAlloc: direct
  RequireOk(pinned.status());
  uint8_t* mapping = static_cast<uint8_t*>((*pinned)->host_data());
  auto t = *d.CreateSemaphore(0);
  uint64_t value = 0;
  RequireOk(d.QueueWrite({}, {{t, ++value}}, mapping, 1, x, 0));  // after the allocations
  RequireOk(t->Wait(value, 60s));
  const DeviceStats before = d.stats();
  const CudaStats cuda_before = testing::Stats(d);
  uint64_t transfers = 0, direct = 0;
  for (uint64_t n : {uint64_t(1), uint64_t(4), uint64_t(4097), uint64_t(65536), uint64_t(65537),
                     uint64_t(262144 + 5), max}) {
    for (bool use_pinned : {false, true}) {
      INFO(n << " bytes, " << (use_pinned ? "pinned" : "pageable"));
      const std::vector<uint8_t> source = Pattern(n, uint32_t(n) * 5 + use_pinned);
      std::vector<uint8_t> pageable(n + 2, 0xee);
      uint8_t* host = use_pinned ? mapping + 3 : pageable.data() + 1;
      std::memcpy(host, source.data(), n);
      RequireOk(d.QueueWrite({}, {{t, ++value}}, host, n, x, 17));
      RequireOk(t->Wait(value, 60s));
      std::memset(host, 0, n);
      RequireOk(d.QueueRead({}, {{t, ++value}}, x, 17, host, n));
      RequireOk(t->Wait(value, 60s));
      REQUIRE(std::memcmp(host, source.data(), n) == 0);
      if (!use_pinned) REQUIRE((pageable.front() == 0xee && pageable.back() == 0xee));
      transfers += 2;
      direct += use_pinned ? 2 : 0;
    }
  }
  // A read nobody waits for: the completion thread signals it (Query does not make progress).
  std::vector<uint8_t> unwaited(4, 0);
  RequireOk(d.QueueRead({}, {{t, ++value}}, x, 17, unwaited.data(), 4));
  transfers += 1;
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (*t->Query() < value && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(50us);
  REQUIRE(*t->Query() == value);
  const std::vector<uint8_t> first = Pattern(max, uint32_t(max) * 5 + 1);
  REQUIRE(std::memcmp(unwaited.data(), first.data(), 4) == 0);
  const DeviceStats after = d.stats();
  const CudaStats cuda_after = testing::Stats(d);
  CHECK(after.transfers_queued - before.transfers_queued == transfers);
  CHECK(after.transfers_direct - before.transfers_direct == direct);
  CHECK(after.host_waits - before.host_waits == transfers - 1);
  CHECK(after.transfer_staging_bytes_busy == 0);
  CHECK(cuda_after.submissions_held_back == cuda_before.submissions_held_back);
  CHECK(cuda_after.waits_on_device == cuda_before.waits_on_device);
  RequireOk(d.WaitIdle());
}

TEST_CASE("cuda/transfers: registered host memory is direct while registered and only for ranges wholly inside it") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  const CudaApi& api = **LoadCudaApi();
  constexpr uint64_t kPage = 4096, kPages = 64;
  auto x = Alloc(d, 2 * kPage);  // also makes the device's context current here
  uint8_t* host = static_cast<uint8_t*>(std::aligned_alloc(kPage, kPages * kPage));
  REQUIRE(host != nullptr);
  std::memset(host, 0, kPages * kPage);
  uint8_t* registered = host + 16 * kPage;  // pages [16, 48) pinned
  const uint64_t registered_bytes = 32 * kPage;
  RequireOk(CudaStatus(api, api.cuMemHostRegister(registered, registered_bytes, CU_MEMHOSTREGISTER_PORTABLE),
                       "cuMemHostRegister"));
  auto t = *d.CreateSemaphore(0);
  uint64_t value = 0;
  // Writes `n` bytes from `from` and reads them back into `to`; how many of the two were direct.
  auto round_trip = [&](uint8_t* from, uint8_t* to, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) from[i] = uint8_t(i * 7 + value);
    const uint64_t direct = d.stats().transfers_direct;
    RequireOk(d.QueueWrite({}, {{t, ++value}}, from, n, x, 0));
    RequireOk(d.QueueRead({{t, value}}, {{t, value + 1}}, x, 0, to, n));
    RequireOk(t->Wait(++value, 60s));
    REQUIRE(std::memcmp(from, to, n) == 0);
    return d.stats().transfers_direct - direct;
  };
  CHECK(round_trip(registered + 100, registered + 8 * kPage, kPage) == 2);
  CHECK(round_trip(registered + 200, registered + 8 * kPage + 3, 2 * kPage) == 2);  // a wider span
  CHECK(round_trip(registered + 300, registered + 8 * kPage, 100) == 2);  // inside one seen before
  // Past either end of the registration: staged.
  CHECK(round_trip(registered + registered_bytes - 10, registered + 8 * kPage, 100) == 1);
  CHECK(round_trip(registered - 10, registered + 8 * kPage, 100) == 1);
  RequireOk(CudaStatus(api, api.cuMemHostUnregister(registered), "cuMemHostUnregister"));
  // The same ranges once unregistered: staged (nothing remembered outlives the registration).
  CHECK(round_trip(registered + 100, registered + 8 * kPage, kPage) == 0);
  CHECK(round_trip(registered + 300, registered + 8 * kPage, 100) == 0);
  std::free(host);
}

TEST_CASE("cuda/transfers: concurrent writers and readers on four threads each get their own bytes") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  constexpr int kThreads = 4;
  const uint64_t n = 2 * kStagingBlockBytes + 12345;  // several chunks each: the ring is shared
  auto x = Alloc(d, kThreads * (n + 4096));
  std::vector<std::vector<uint8_t>> source(kThreads), back(kThreads);
  std::vector<Status> status(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    source[i] = Pattern(n, uint32_t(i * 977));
    back[i].assign(n, 0);
    threads.emplace_back([&, i] {
      auto t = d.CreateSemaphore(0);
      if (!t.ok()) {
        status[i] = t.status();
        return;
      }
      const uint64_t at = uint64_t(i) * (n + 4096) + uint64_t(i);  // odd offsets from i = 1
      for (int round = 0; round < 3 && status[i].ok(); ++round) {
        status[i] = d.QueueWrite({}, {{*t, uint64_t(2 * round + 1)}}, source[i].data(), n, x, at);
        if (status[i].ok())
          status[i] = d.QueueRead({{*t, uint64_t(2 * round + 1)}}, {{*t, uint64_t(2 * round + 2)}},
                                  x, at, back[i].data(), n);
        if (status[i].ok()) status[i] = (*t)->Wait(uint64_t(2 * round + 2), std::chrono::seconds(60));
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int i = 0; i < kThreads; ++i) {
    INFO("thread " << i);
    RequireOk(status[i]);
    REQUIRE(back[i] == source[i]);
  }
  REQUIRE(d.stats().transfer_staging_bytes_busy == 0);
}

TEST_CASE("cuda/transfers: staging is held only while chunks are in flight and is returned after") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& d = **dev;
  auto exe = d.CreateExecutable(CubinView({"spin_us"}));
  RequireOk(exe.status());
  auto flag = Alloc(d, 64);
  const uint64_t n = 2 * kStagingBlockBytes + 1;  // four chunks of 4 MiB + 64 KiB (the last shorter)
  REQUIRE(StagingChunkBytes(n) == (4 << 20) + (64 << 10));
  auto data = Alloc(d, n);
  auto cb = *d.CreateCommandBuffer();
  RequireOk(cb->Dispatch(*exe, 0, {1, 1, 1}, {BufferRef::Whole(flag)}, {400000}));  // 400 ms
  RequireOk(cb->Finalize());
  auto spin = *d.CreateSemaphore(0), t = *d.CreateSemaphore(0);
  RequireOk(d.QueueExecute({}, cb, {{spin, 1}}));
  std::vector<uint8_t> back(n, 1);
  // Ordered after the dispatch on the GPU: its chunks are issued now and wait there.
  RequireOk(d.QueueRead({{spin, 1}}, {{t, 1}}, data, 0, back.data(), n));
  REQUIRE(*spin->Query() == 0);
  REQUIRE(d.stats().transfer_staging_bytes_busy == 4 * kStagingBlockBytes);  // one block per chunk
  RequireOk(t->Wait(1, 30s));
  REQUIRE(back == std::vector<uint8_t>(n, 0));  // new buffers are zero-filled
  RequireOk(d.WaitIdle());
  REQUIRE(d.stats().transfer_staging_bytes_busy == 0);
}

TEST_CASE("cuda/transfers: a CPU device's large buffers are pinned once a CUDA device is open, so transfers with them go direct") {
  auto dev = OpenOrSkip();
  if (!dev) return;
  Device& gpu = **dev;
  auto cpu = CreateDevice("cpu", {});
  RequireOk(cpu.status());
  const uint64_t n = (4 << 20) + 12;
  auto host = (*cpu)->AllocateBuffer(n, kMemoryHostVisible);
  RequireOk(host.status());
  const std::vector<uint8_t> source = Pattern(n, 99);
  std::memcpy((*host)->host_data(), source.data(), n);
  auto x = Alloc(gpu, n);
  auto t = *gpu.CreateSemaphore(0);
  const DeviceStats before = gpu.stats();
  bool by_pointer = false;
  RequireOk(QueueDeviceTransfer(**cpu, gpu, {}, {{t, 1}}, *host, x, n, &by_pointer));
  RequireOk(t->Wait(1, 30s));
  std::memset((*host)->host_data(), 0, n);
  RequireOk(QueueDeviceTransfer(gpu, **cpu, {}, {{t, 2}}, x, *host, n, &by_pointer));
  RequireOk(t->Wait(2, 30s));
  RequireOk((*cpu)->WaitIdle());
  REQUIRE(std::memcmp((*host)->host_data(), source.data(), n) == 0);
  REQUIRE(gpu.stats().transfers_direct == before.transfers_direct + 2);
  REQUIRE(gpu.stats().transfer_staging_bytes_busy == 0);
}

}  // namespace
}  // namespace hexir::hal::cuda
