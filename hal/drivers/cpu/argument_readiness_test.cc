// Argument readiness on the CPU driver (hal/argument_readiness.h): a chain of dispatches
// whose arguments are written by a host thread after the submission, each buffer marked
// ready at its own timeline value (Buffer::SetReadyAfter). The first dispatch must start
// before the last argument is ready (the writer waits for it before writing the last one: a
// driver that awaited every argument at the submission would never start it), the results
// equal a plain loop, and a replay after everything landed waits for nothing.
#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "hal/api.h"
#include "hal/drivers/cpu/testing/test_device.h"
#include "hal/drivers/cpu/testing/test_kernels.h"
#include "hal/profiling.h"

namespace hexir::hal {
namespace {

using cpu::testing::TestKernelView;
using testing::CpuDevice;
using testing::DeviceBuffer;

// Counts dispatches as the driver reports them.
class CountingProfiler : public Profiler {
 public:
  void OnDispatch(const DispatchTiming&) override { dispatches.fetch_add(1); }
  std::atomic<int> dispatches{0};
};

// y = x + w[0] + ... + w[k-1], one add_f32 dispatch per weight, barriers between them;
// n = 1003 elements (tile 16: a partial last workgroup).
void RunChain(int32_t workers, bool inline_execution) {
  INFO("workers " << workers << " inline " << inline_execution);
  auto dev = CpuDevice(workers, inline_execution);
  auto exe = dev->CreateExecutable(TestKernelView({"add_f32"}));
  REQUIRE(exe.ok());
  constexpr uint32_t n = 1003, tile = 16, kWeights = 4;
  std::vector<float> hx(n), expect(n);
  std::vector<std::vector<float>> hw(kWeights, std::vector<float>(n));
  for (uint32_t i = 0; i < n; ++i) {
    hx[i] = 0.25f * float(i % 97) - 3;
    expect[i] = hx[i];
    for (uint32_t k = 0; k < kWeights; ++k) {
      hw[k][i] = float((i * (k + 3)) % 11) - 5.5f;
      expect[i] += hw[k][i];
    }
  }
  auto x = DeviceBuffer(*dev, hx);
  auto timeline = *dev->CreateSemaphore(0);
  std::vector<vm::Ref<Buffer>> w, y;
  for (uint32_t k = 0; k < kWeights; ++k) {
    w.push_back(DeviceBuffer(*dev, n * 4));
    w.back()->SetReadyAfter({timeline, k + 1});
    y.push_back(DeviceBuffer(*dev, n * 4));
  }
  auto cb = *dev->CreateCommandBuffer();
  for (uint32_t k = 0; k < kWeights; ++k) {
    auto in = k == 0 ? x : y[k - 1];
    REQUIRE(cb->Dispatch(*exe, 0, {(n + tile - 1) / tile, 1, 1},
                         {BufferRef::Whole(in), BufferRef::Whole(w[k]), BufferRef::Whole(y[k])},
                         {n, tile})
                .ok());
    if (k + 1 < kWeights) REQUIRE(cb->Barrier().ok());
  }
  REQUIRE(cb->Finalize().ok());
  CountingProfiler profiler;
  dev->SetProfiler(&profiler);

  // The "upload": every weight but the last at once, the last only after the first
  // dispatch ran.
  std::atomic<bool> first_ran_before_last{false};
  std::thread writer([&] {
    for (uint32_t k = 0; k < kWeights; ++k) {
      if (k + 1 == kWeights) {
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (profiler.dispatches.load() == 0 && std::chrono::steady_clock::now() < give_up)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        first_ran_before_last = profiler.dispatches.load() > 0;
      }
      std::memcpy(w[k]->host_data(), hw[k].data(), n * 4);
      REQUIRE(timeline->Signal(k + 1).ok());
    }
  });
  const uint64_t waits_before = dev->stats().argument_waits;
  auto done = *dev->CreateSemaphore(0);
  REQUIRE(dev->QueueExecute({}, cb, {{done, 1}}).ok());
  REQUIRE(done->Wait(1).ok());
  writer.join();
  CHECK(first_ran_before_last);
  // At least the last weight was pending when its dispatch came (its writer waited).
  CHECK(dev->stats().argument_waits > waits_before);
  std::vector<float> got(n);
  REQUIRE(dev->ReadBuffer(*y.back(), 0, got.data(), n * 4).ok());
  CHECK(got == expect);

  // A replay: every readiness is reached and cleared, nothing is awaited.
  const uint64_t waits_after = dev->stats().argument_waits;
  REQUIRE(dev->QueueExecute({}, cb, {{done, 2}}).ok());
  REQUIRE(done->Wait(2).ok());
  CHECK(dev->stats().argument_waits == waits_after);
  REQUIRE(dev->ReadBuffer(*y.back(), 0, got.data(), n * 4).ok());
  CHECK(got == expect);
  dev->SetProfiler(nullptr);
}

TEST_CASE("argument readiness: the first dispatch runs before the last argument is ready") {
  RunChain(2, false);
  RunChain(0, false);
  RunChain(1, true);
}

TEST_CASE("argument readiness: a failed readiness fails the submission, naming the wait") {
  auto dev = CpuDevice(1);
  auto exe = dev->CreateExecutable(TestKernelView({"add_f32"}));
  REQUIRE(exe.ok());
  auto a = DeviceBuffer(*dev, 64), b = DeviceBuffer(*dev, 64), out = DeviceBuffer(*dev, 64);
  auto timeline = *dev->CreateSemaphore(0);
  b->SetReadyAfter({timeline, 1});
  auto cb = *dev->CreateCommandBuffer();
  REQUIRE(cb->Dispatch(*exe, 0, {1, 1, 1},
                       {BufferRef::Whole(a), BufferRef::Whole(b), BufferRef::Whole(out)}, {16, 16})
              .ok());
  REQUIRE(cb->Finalize().ok());
  auto done = *dev->CreateSemaphore(0);
  REQUIRE(dev->QueueExecute({}, cb, {{done, 1}}).ok());
  timeline->Fail(DataLoss("the upload of tensor 'w' failed"));
  Status st = done->Wait(1);
  REQUIRE(!st.ok());
  CHECK(st.message().find("the upload of tensor 'w' failed") != std::string::npos);
  CHECK(st.message().find("argument's readiness") != std::string::npos);
}

}  // namespace
}  // namespace hexir::hal
