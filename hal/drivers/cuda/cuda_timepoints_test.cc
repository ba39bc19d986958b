// Waits between two CUDA devices (two logical devices of one GPU: each its own stream and
// transfer stream, one context) are ordered on the GPU through cuda_timepoints.h: the
// dependent work is not held back on the host, it runs after its producer, and a failed
// producer still fails its signals.
//
// Without a GPU (or without the nvcc-built kernels) every device case prints one
// "HEXIR_SKIPPED: <case>: <reason>" line and makes no assertion. The registry's own case (a
// gated launch's host wait for a write's issue: HighestCovered, AwaitAdd) runs anywhere: it
// calls no CUDA function.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "hal/api.h"
#include "hal/drivers/cuda/cuda_device.h"
#include "hal/drivers/cuda/cuda_timepoints.h"
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
using testing::Stats;

TEST_CASE("cuda/timepoints: the registry wakes a waiter when a timepoint is added and reports the highest value") {
  CudaTimepoints& registry = CudaTimepoints::Process();
  vm::Ref<Semaphore> timeline = vm::Ref<Semaphore>::Adopt(new Semaphore(0, nullptr));
  // Stand-ins: Add / Remove / Covers / HighestCovered never call CUDA with them.
  CUevent e1 = reinterpret_cast<CUevent>(uintptr_t(0x1000)), e2 = reinterpret_cast<CUevent>(uintptr_t(0x2000));
  CUstream stream = reinterpret_cast<CUstream>(uintptr_t(0x3000));
  CHECK(registry.HighestCovered(timeline.get()) == 0);
  uint64_t seen = 0;
  registry.AwaitAdd(&seen, 0ms);  // catches up with timepoints added by earlier cases
  std::atomic<bool> added{false};
  std::thread adder([&] {
    std::this_thread::sleep_for(50ms);
    added = true;
    registry.Add(timeline.get(), 2, e1, stream);
  });
  const uint64_t before = seen;
  while (!registry.Covers({timeline, 2})) registry.AwaitAdd(&seen, 60s);  // woken by the Add
  adder.join();
  CHECK(added);
  CHECK(seen > before);
  registry.Add(timeline.get(), 5, e2, stream);
  CHECK(registry.HighestCovered(timeline.get()) == 5);
  CHECK(registry.Covers({timeline, 4}));
  registry.Remove(timeline.get(), e2);
  CHECK(registry.HighestCovered(timeline.get()) == 2);
  CHECK(!registry.Covers({timeline, 3}));
  registry.Remove(timeline.get(), e1);
  CHECK(registry.HighestCovered(timeline.get()) == 0);
  // Caught up and no Add: the wait returns at its timeout with the same count.
  registry.AwaitAdd(&seen, 0ms);
  const uint64_t settled = seen;
  registry.AwaitAdd(&seen, 20ms);
  CHECK(seen == settled);
}

TEST_CASE("cuda/timepoints: work on a second device that waits for the first device's running dispatch is ordered on the GPU") {
  auto first = OpenOrSkip(), second = OpenOrSkip();
  if (!first || !second) return;
  Device &a = **first, &b = **second;
  auto exe = a.CreateExecutable(CubinView({"spin_us"}));
  RequireOk(exe.status());
  auto flag = Alloc(a, 64), copy = Alloc(b, 64);
  RequireOk(a.WaitIdle(30s));  // the zero fills are done
  RequireOk(b.WaitIdle(30s));
  auto cb = *a.CreateCommandBuffer();
  RequireOk(cb->Dispatch(*exe, 0, {1, 1, 1}, {BufferRef::Whole(flag)}, {200000}));  // 200 ms, then flag = 1
  RequireOk(cb->Finalize());
  auto spun = *a.CreateSemaphore(0), copied = *b.CreateSemaphore(0), read = *b.CreateSemaphore(0);
  const CudaStats before = Stats(b);
  RequireOk(a.QueueExecute({}, cb, {{spun, 1}}));
  // b's compute stream copies a's flag after the dispatch; b's transfer stream reads it too.
  RequireOk(b.QueueCopy({{spun, 1}}, {{copied, 1}}, flag, 0, copy, 0, 4));
  uint32_t seen = 0;
  RequireOk(b.QueueRead({{spun, 1}}, {{read, 1}}, flag, 0, &seen, 4));
  const CudaStats queued = Stats(b);
  CHECK(queued.submissions_held_back == before.submissions_held_back);  // no host thread waits
  CHECK(queued.waits_on_device >= before.waits_on_device + 1);          // the copy's wait
  CHECK(*spun->Query() == 0);  // both were accepted while the dispatch still ran
  RequireOk(copied->Wait(1, 30s));
  RequireOk(read->Wait(1, 30s));
  uint32_t copied_flag = 0;
  RequireOk(b.ReadBuffer(*copy, 0, &copied_flag, 4));
  CHECK(copied_flag == 1);
  CHECK(seen == 1);
}

TEST_CASE("cuda/timepoints: a failed producer on one device fails the signal of work ordered after it on the other") {
  auto first = OpenOrSkip(), second = OpenOrSkip();
  if (!first || !second) return;
  Device &a = **first, &b = **second;
  auto exe = a.CreateExecutable(CubinView({"fail_at"}));
  RequireOk(exe.status());
  auto target = Alloc(b, 64);
  auto cb = *a.CreateCommandBuffer();
  RequireOk(cb->Dispatch(*exe, 0, {2, 1, 1}, {}, {1}));
  RequireOk(cb->Finalize());
  auto failed = *a.CreateSemaphore(0), after = *b.CreateSemaphore(0);
  RequireOk(a.QueueExecute({}, cb, {{failed, 1}}));
  RequireOk(b.QueueFill({{failed, 1}}, {{after, 1}}, target, 0, 4, 9, 4));
  Status w = after->Wait(1, 30s);
  CHECK(w.code() == StatusCode::kAborted);
  CHECK(w.message().find("'fail_at'") != std::string::npos);
}

}  // namespace
}  // namespace hexir::hal::cuda
